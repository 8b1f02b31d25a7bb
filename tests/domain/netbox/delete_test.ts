/**
 * Deletes are collected first (everything CASCADE, SET_NULL, m2m and PROTECT rules touch)
 * and executed after: collecting writes nothing, a PROTECT dependent refuses before anything
 * changed, and executing the plan does exactly what was collected.
 */
import assert from "node:assert/strict";
import { ModelEngine } from "../../../domain/netbox/engine.ts";
import { collectDeletion, executeDeletion } from "../../../domain/netbox/engine/delete.ts";
import type { EngineCore } from "../../../domain/netbox/engine/core.ts";
import { ModelRegistry } from "../../../domain/netbox/engine/registry.ts";
import { CORE_MODELS } from "../../../domain/netbox/models/core.ts";
import { DEFAULT_INVENTORY_SETTINGS } from "../../../domain/netbox/types.ts";
import { MemoryLogger } from "../../../infra/logger.ts";
import { KvModelStore } from "../../../storage/kv/models.ts";

const VM = "virtualization.virtualmachine";

async function world() {
  const kv = await Deno.openKv(":memory:");
  const store = new KvModelStore(kv);
  const logger = new MemoryLogger();
  const engine = new ModelEngine({ store, logger, now: Date.now }).register(...CORE_MODELS);
  const registry = new ModelRegistry();
  registry.register(...CORE_MODELS);
  const core: EngineCore = {
    registry,
    store,
    logger,
    now: Date.now,
    settings: DEFAULT_INVENTORY_SETTINGS,
    api: engine,
  };
  const ok = <T>(r: { ok: true; value: T } | { ok: false }): T => {
    assert.ok(r.ok, JSON.stringify(r));
    return r.value;
  };
  const tag = ok(await engine.insert("extras.tag", { name: "prod", slug: "prod" }));
  const type = ok(await engine.insert("virtualization.clustertype", { name: "PVE", slug: "pve" }));
  const cluster = ok(await engine.insert("virtualization.cluster", { name: "c1", type: type.id }));
  const vm = ok(await engine.insert(VM, { name: "vm1", cluster: cluster.id, tags: [tag.id] }));
  const iface = ok(
    await engine.insert("virtualization.vminterface", { virtual_machine: vm.id, name: "eth0" }),
  );
  const ip = ok(
    await engine.insert("ipam.ipaddress", {
      address: "10.0.0.1/24",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: iface.id,
    }),
  );
  return { kv, engine, core, tag, cluster, vm, iface, ip };
}

Deno.test("delete collect: the CASCADE chain is gathered and nothing is written yet", async () => {
  const w = await world();
  try {
    const collected = await collectDeletion(w.core, VM, [w.vm.id], null);
    assert.ok(collected.ok);
    const ids = (model: string) => [...(collected.plan.toDelete.get(model)?.keys() ?? [])];
    assert.deepEqual(ids(VM), [w.vm.id]);
    assert.deepEqual(ids("virtualization.vminterface"), [w.iface.id]);
    assert.deepEqual(ids("ipam.ipaddress"), [w.ip.id]);
    // Collecting changed nothing.
    assert.ok(await w.engine.get(VM, w.vm.id));
    assert.ok(await w.engine.get("ipam.ipaddress", w.ip.id));

    assert.deepEqual(await executeDeletion(w.core, collected.plan), { ok: true, value: null });
    assert.equal(await w.engine.get(VM, w.vm.id), null);
    assert.equal(await w.engine.get("virtualization.vminterface", w.iface.id), null);
    assert.equal(await w.engine.get("ipam.ipaddress", w.ip.id), null);
  } finally {
    w.kv.close();
  }
});

Deno.test("delete collect: m2m members are detached on execute, not before", async () => {
  const w = await world();
  try {
    const collected = await collectDeletion(w.core, "extras.tag", [w.tag.id], null);
    assert.ok(collected.ok);
    assert.deepEqual(collected.plan.detach, [
      { model: VM, id: w.vm.id, field: "tags", remove: w.tag.id },
    ]);
    assert.deepEqual((await w.engine.get(VM, w.vm.id))?.tags, [w.tag.id]);
    assert.ok((await executeDeletion(w.core, collected.plan)).ok);
    assert.deepEqual((await w.engine.get(VM, w.vm.id))?.tags, []);
    assert.equal(await w.engine.get("extras.tag", w.tag.id), null);
  } finally {
    w.kv.close();
  }
});

Deno.test("delete collect: a PROTECT dependent refuses the delete before anything changes", async () => {
  const w = await world();
  try {
    const collected = await collectDeletion(w.core, "virtualization.cluster", [w.cluster.id], null);
    assert.deepEqual(collected, {
      ok: false,
      reason: "conflict",
      detail: `Unable to delete object. 1 dependent objects were found: vm1 (${w.vm.id})`,
    });
    assert.ok(await w.engine.get("virtualization.cluster", w.cluster.id));
  } finally {
    w.kv.close();
  }
});
