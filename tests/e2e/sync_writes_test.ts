/**
 * Writes per object on a first run (docs/sync.md, "Writes per object", issue 21 item 10): on an
 * empty inventory every object is created once and counted once as created; the links that can
 * only follow their target (a VM's primary IPs) are one bulk PATCH per 500 VMs, visible in the
 * change log as one update per VM that has an address, and never counted as `updated`.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { addInventoryCopy, syncWorld } from "./_sync_harness.ts";
import { PATHS } from "../../domain/sync/base.ts";

const FAST_TASKS = { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" };
/** Singletons and definitions, not objects a run counts. */
const NOT_COUNTED = new Set<string>([PATHS.pluginSettings, PATHS.customFields]);

Deno.test("e2e sync writes: a first run on an empty inventory creates each object once, counts exactly what it made, and completes VMs' primary IPs in one bulk write", async () => {
  const world = await syncWorld("nodes=2,vms=8,cts=4,storages=2", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const count = async (path: string) => {
      const r = await world.inventoryCall("GET", `${path}?limit=1`);
      assert.equal(r.status, 200, `${path} ${JSON.stringify(r.body)}`);
      return r.body.count as number;
    };
    const paths = [...new Set(Object.values(PATHS))].filter((p) => !NOT_COUNTED.has(p));
    const empty = await Promise.all(paths.map(count));
    assert.deepEqual(empty, paths.map(() => 0), "an empty inventory");

    const seen = world.seen.length;
    const run = await world.backend("GET", "/full-update");
    assert.equal(run.status, 200, JSON.stringify(run.body));
    const { result, stages } = run.body;
    for (const { step, result: r } of stages) {
      assert.equal(r.updated, 0, `${step} counts an object it just made as updated too`);
      assert.equal(r.failed + r.deleted, 0, step);
    }
    // What the run says it made is what the inventory holds, model by model summed.
    const held = (await Promise.all(paths.map(count))).reduce((a, b) => a + b, 0);
    assert.equal(result.created, held, JSON.stringify(result));

    // Each VM created once; the ones with an address updated once more, for their primary IP
    // (NetBox's model: the address must be on the VM's interface first), all in one request.
    const vms = await world.inventory("virtualization/virtual-machines/");
    const withPrimary = vms.filter((v: any) => v.primary_ip4 || v.primary_ip6);
    assert.ok(withPrimary.length > 0 && withPrimary.length <= vms.length);
    const changes = await world.inventory(
      "core/object-changes/?changed_object_type=virtualization.virtualmachine",
    );
    const actions = (what: string) =>
      changes.filter((c: any) => (c.action?.value ?? c.action) === what)
        .map((c: any) => c.changed_object_id).sort((a: number, b: number) => a - b);
    assert.deepEqual(actions("create"), vms.map((v: any) => v.id).sort((a, b) => a - b));
    assert.deepEqual(
      actions("update"),
      withPrimary.map((v: any) => v.id).sort((a: number, b: number) => a - b),
      "one primary-IP update per VM with an address, nothing else",
    );
    const vmWrites = world.seen.slice(seen).filter((s) =>
      /^(POST|PATCH|PUT) \/api\/virtualization\/virtual-machines\/$/.test(s)
    );
    assert.deepEqual(vmWrites, [
      "POST /api/virtualization/virtual-machines/",
      "PATCH /api/virtualization/virtual-machines/",
    ]);

    // And a rerun writes nothing.
    const again = await world.backend("GET", "/full-update");
    assert.equal(again.body.result.created + again.body.result.updated, 0);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync writes: a first run's bulk writes ask the inventory to answer only the fields the sync reads back", async () => {
  const world = await syncWorld("nodes=2,vms=8,cts=4,storages=2", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const run = await world.backend("GET", "/full-update");
    assert.equal(run.status, 200, JSON.stringify(run.body));
    // The models a first run writes most: every bulk write of them names `fields` (what the
    // stage reads back and what it sent, which NetBox's `fields` would otherwise drop from the
    // body), so counts, config context, primary IPs and the rest are not rendered to be dropped
    // (docs/sync.md, "Writes: round 6").
    const bulky = [
      PATHS.vms,
      PATHS.syncState,
      PATHS.vmInterfaces,
      PATHS.macs,
      PATHS.ips,
      PATHS.disks,
      PATHS.snapshots,
      PATHS.backups,
    ].map((p) => `/api/${p}`);
    const pathOf = (w: { request: string }) => w.request.split(" ")[1].split("?")[0];
    const writes = world.writeAnswers.filter((w) => bulky.includes(pathOf(w)));
    const named = writes.filter((w) => /\?fields=id,last_updated(,|$)/.test(w.request));
    // Every write of these models names its fields, but the node addresses' (the
    // network-interfaces stage reads and answers whole objects: a few per node).
    const whole = writes.filter((w) => !named.includes(w));
    for (const w of whole) assert.equal(pathOf(w), `/api/${PATHS.ips}`, w.request);
    const count = async (query: string) =>
      (await world.inventoryCall("GET", `${PATHS.ips}?limit=1&${query}`)).body.count as number;
    assert.equal(
      whole.reduce((n, w) => n + w.objects, 0),
      await count("assigned_object_type=dcim.interface"),
      "only the node addresses answered whole",
    );
    const guestAddresses = await count("assigned_object_type=virtualization.vminterface");
    assert.ok(guestAddresses > 0);
    assert.equal(
      named.filter((w) => w.request.startsWith("POST") && pathOf(w) === `/api/${PATHS.ips}`)
        .reduce((n, w) => n + w.objects, 0),
      guestAddresses,
    );
    for (
      const [method, p] of [
        ["POST", PATHS.vms],
        ["PATCH", PATHS.vms],
        ["POST", PATHS.syncState],
        ["POST", PATHS.vmInterfaces],
        ["PATCH", PATHS.vmInterfaces],
        ["POST", PATHS.macs],
        ["POST", PATHS.disks],
        ["POST", PATHS.snapshots],
        ["POST", PATHS.backups],
      ]
    ) {
      assert.ok(named.some((w) => w.request.startsWith(`${method} /api/${p}?`)), `${method} ${p}`);
    }
    // What the answers held: whole objects 750 to 2,300 bytes (a VM's most), 1,229 on average
    // here; the fields the sync reads and those it sent, 440 to 1,280, 704 on average.
    const objects = named.reduce((n, w) => n + w.objects, 0);
    const bytes = named.reduce((n, w) => n + w.bytes, 0);
    assert.ok(bytes / objects < 900, `${bytes} bytes answered for ${objects} objects`);
    // What the writes sent was read whole: each change carries the run's changelog message,
    // which `fields` not naming it would have dropped (as NetBox would).
    for (const type of ["virtualization.virtualmachine", "virtualization.vminterface"]) {
      const changes = await world.inventory(`core/object-changes/?changed_object_type=${type}`);
      assert.ok(changes.length > 0, type);
      for (const c of changes) assert.match(String(c.message), /^Bridgebox sync run /, type);
    }
  } finally {
    await world.close();
  }
});
