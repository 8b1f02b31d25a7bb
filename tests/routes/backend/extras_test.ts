/**
 * The backend's extras over a real socket: bootstrap-status reads what the sync needs from the
 * inventory (this app's own, through the inventory copy and its stored token); reconcile
 * creates and updates it; every real problem is ok:false with a reason, never a 500.
 */
import assert from "node:assert/strict";
import { addInventoryCopy, syncWorld } from "../../e2e/_sync_harness.ts";
import { CUSTOM_FIELDS } from "../../../domain/extras/bootstrap.ts";

Deno.test("extras: no inventory copy → bootstrap-status skipped with a reason; reconcile 400", async () => {
  const world = await syncWorld();
  try {
    const status = await world.backend("GET", "/extras/bootstrap-status");
    assert.equal(status.status, 200);
    assert.equal(status.body.ok, false);
    assert.equal(status.body.skipped, true);
    assert.equal(status.body.reason, "no_inventory_endpoint");
    const reconcile = await world.backend("POST", "/extras/custom-fields/reconcile");
    assert.equal(reconcile.status, 400);
    assert.equal(reconcile.body.reason, "no_inventory_endpoint");
  } finally {
    await world.close();
  }
});

Deno.test("extras: missing objects are named; reconcile creates them, then updates drift only", async () => {
  const world = await syncWorld();
  try {
    await addInventoryCopy(world);
    const before = await world.backend("GET", "/extras/bootstrap-status");
    assert.equal(before.status, 200);
    assert.equal(before.body.ok, false);
    assert.equal(before.body.skipped, false);
    assert.equal(before.body.reason, "missing_bootstrap_objects");
    const named = before.body.warnings.map((w: { object: string }) => w.object);
    assert.ok(named.includes("tag bridgebox-synced"));
    assert.ok(named.includes("device role container"));
    assert.ok(named.includes("custom field hypervisor_vmid"));
    assert.deepEqual(
      Object.keys(before.body).sort(),
      ["created", "ok", "patched", "reason", "skipped", "unchanged", "warnings"],
    );

    const first = await world.backend("POST", "/extras/custom-fields/reconcile");
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(first.body, {
      ok: true,
      created: 8 + CUSTOM_FIELDS.length,
      updated: 0,
      unchanged: 0,
    });
    const after = await world.backend("GET", "/extras/bootstrap-status");
    assert.equal(after.body.ok, true, JSON.stringify(after.body));
    assert.equal(after.body.reason, null);
    assert.equal(after.body.unchanged, 8 + CUSTOM_FIELDS.length);

    // Someone edits a definition: the check names it, reconcile puts it back, nothing else.
    const [field] = await world.inventory("extras/custom-fields/?name=hypervisor_vmid");
    const edited = await world.inventoryCall("PATCH", `extras/custom-fields/${field.id}/`, {
      label: "edited",
    });
    assert.equal(edited.status, 200);
    const drifted = await world.backend("GET", "/extras/bootstrap-status");
    assert.deepEqual(drifted.body.warnings, [{
      object: "custom field hypervisor_vmid",
      error: "differs in label (run repair)",
    }]);
    const second = await world.backend("POST", "/extras/custom-fields/reconcile");
    assert.deepEqual(second.body, {
      ok: true,
      created: 0,
      updated: 1,
      unchanged: 8 + CUSTOM_FIELDS.length - 1,
    });
    const [fixed] = await world.inventory("extras/custom-fields/?name=hypervisor_vmid");
    assert.equal(fixed.label, "VMID");
  } finally {
    await world.close();
  }
});

Deno.test("extras: a rejected token is inventory_auth_failed (bootstrap-status ok:false, reconcile 502)", async () => {
  const world = await syncWorld();
  try {
    await addInventoryCopy(world, "stale0123456789abcdef0123456789abcdef012");
    const status = await world.backend("GET", "/extras/bootstrap-status");
    assert.equal(status.status, 200);
    assert.equal(status.body.ok, false);
    assert.equal(status.body.reason, "inventory_auth_failed");
    assert.match(status.body.detail, /HTTP 403/);
    const reconcile = await world.backend("POST", "/extras/custom-fields/reconcile");
    assert.equal(reconcile.status, 502);
    assert.equal(reconcile.body.ok, false);
    assert.equal(reconcile.body.reason, "inventory_auth_failed");
    assert.ok(!JSON.stringify(reconcile.body).includes("stale0123456789abcdef"), "no token echoed");
  } finally {
    await world.close();
  }
});

Deno.test("extras: an unreachable inventory is inventory_unreachable", async () => {
  const world = await syncWorld();
  try {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const closed = (listener.addr as Deno.NetAddr).port;
    listener.close();
    const r = await world.backend("POST", "/inventory/endpoint", {
      name: "gone",
      ip: "127.0.0.1",
      port: closed,
      use_https: false,
      token_version: "v1",
      token: "x".repeat(40),
    });
    assert.equal(r.status, 201);
    const status = await world.backend("GET", "/extras/bootstrap-status");
    assert.equal(status.body.ok, false);
    assert.equal(status.body.reason, "inventory_unreachable");
    const reconcile = await world.backend("POST", "/extras/custom-fields/reconcile");
    assert.equal(reconcile.status, 502);
    assert.equal(reconcile.body.reason, "inventory_unreachable");
  } finally {
    await world.close();
  }
});
