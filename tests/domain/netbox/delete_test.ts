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
import type { ObjectWrite } from "../../../storage/ports.ts";
import { etagOf } from "../../../domain/netbox/etag.ts";

const VM = "virtualization.virtualmachine";

/**
 * `now`: a clock (ETags are made of `last_updated`, in milliseconds); `beforeCommit`: the store's
 * test hook, to land another write right before one of the delete's commits.
 */
async function world(options: {
  now?: () => number;
  beforeCommit?: (writes: readonly ObjectWrite[]) => Promise<void>;
} = {}) {
  const now = options.now ?? Date.now;
  const kv = await Deno.openKv(":memory:");
  const store = new KvModelStore(kv, { beforeCommit: options.beforeCommit });
  const logger = new MemoryLogger();
  const engine = new ModelEngine({ store, logger, now }).register(...CORE_MODELS);
  const registry = new ModelRegistry();
  registry.register(...CORE_MODELS);
  const core: EngineCore = {
    registry,
    store,
    logger,
    now,
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
  return { kv, engine, core, logger, ok, tag, cluster, vm, iface, ip };
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

/** A clock that moves a second at each reading: every write gets its own ETag. */
function ticking(): () => number {
  let t = Date.parse("2026-08-11T10:00:00.000Z");
  return () => (t += 1000);
}

const PRECONDITION_FAILED = {
  ok: false,
  reason: "precondition_failed",
  detail: "Precondition failed.",
};

Deno.test("a guarded delete whose If-Match no longer matches is refused before anything is written: the tag's VM keeps it", async () => {
  const w = await world({ now: ticking() });
  try {
    const stale = etagOf(w.tag)!;
    w.ok(await w.engine.update("extras.tag", w.tag.id, { description: "edited" }));
    const refused = await w.engine.deleteMany("extras.tag", [w.tag.id], null, {
      ifMatch: [stale],
    });
    assert.deepEqual(refused, PRECONDITION_FAILED);
    assert.deepEqual((await w.engine.get(VM, w.vm.id))?.tags, [w.tag.id]);
    assert.equal((await w.engine.get("extras.tag", w.tag.id))?.description, "edited");
  } finally {
    w.kv.close();
  }
});

Deno.test("a guarded delete of a VM whose primary IP goes with it is not refused by clearing the VM's own reference", async () => {
  const w = await world({ now: ticking() });
  try {
    const vm = w.ok(await w.engine.update(VM, w.vm.id, { primary_ip4: w.ip.id }));
    assert.equal(vm.primary_ip4, w.ip.id);
    const done = await w.engine.deleteMany(VM, [w.vm.id], null, { ifMatch: [etagOf(vm)!] });
    assert.deepEqual(done, { ok: true, value: null });
    assert.equal(await w.engine.get(VM, w.vm.id), null);
    assert.equal(await w.engine.get("virtualization.vminterface", w.iface.id), null);
    assert.equal(await w.engine.get("ipam.ipaddress", w.ip.id), null);
  } finally {
    w.kv.close();
  }
});

Deno.test("a guarded delete whose object is edited while it detaches references is refused at its commit, and the object stays", async () => {
  let edit: (() => Promise<void>) | null = null;
  const w = await world({
    now: ticking(),
    // Held at the detach's commit (the VM losing the tag): an admin edits the tag meanwhile.
    beforeCommit: async (writes) => {
      if (!edit || writes[0]?.model !== VM) return;
      const run = edit;
      edit = null;
      await run();
    },
  });
  try {
    edit = async () => {
      w.ok(await w.engine.update("extras.tag", w.tag.id, { description: "meanwhile" }));
    };
    const refused = await w.engine.deleteMany("extras.tag", [w.tag.id], null, {
      ifMatch: [etagOf(w.tag)!],
    });
    assert.equal(edit, null, "the edit ran");
    assert.deepEqual(refused, PRECONDITION_FAILED);
    assert.equal((await w.engine.get("extras.tag", w.tag.id))?.description, "meanwhile");
  } finally {
    w.kv.close();
  }
});

Deno.test("a delete whose commit meets a concurrent edit answers a conflict, and nothing is deleted", async () => {
  let edit: (() => Promise<void>) | null = null;
  const w = await world({
    now: ticking(),
    // Held at the delete's commit: another client edits the VM meanwhile.
    beforeCommit: async (writes) => {
      if (!edit || !writes.some((x) => x.next === null)) return;
      const run = edit;
      edit = null;
      await run();
    },
  });
  try {
    edit = async () => {
      w.ok(await w.engine.update(VM, w.vm.id, { comments: "meanwhile" }));
    };
    const refused = await w.engine.deleteMany(VM, [w.vm.id], null);
    assert.equal(edit, null, "the edit ran");
    assert.deepEqual(refused, {
      ok: false,
      reason: "conflict",
      detail: "The object was changed concurrently; please retry.",
    });
    assert.equal((await w.engine.get(VM, w.vm.id))?.comments, "meanwhile");
    assert.ok(await w.engine.get("virtualization.vminterface", w.iface.id));
    assert.ok(await w.engine.get("ipam.ipaddress", w.ip.id));
  } finally {
    w.kv.close();
  }
});

Deno.test("a delete clears what refers to it before its commit, so its clean-up pass finds nothing, and no hook fails", async () => {
  const w = await world();
  try {
    assert.deepEqual(await w.engine.deleteMany("extras.tag", [w.tag.id], null), {
      ok: true,
      value: null,
    });
    assert.deepEqual((await w.engine.get(VM, w.vm.id))?.tags, []);
    // A cascade through models with and without after-delete hooks (an interface has one).
    assert.deepEqual(await w.engine.deleteMany(VM, [w.vm.id], null), { ok: true, value: null });
    assert.equal(await w.engine.get("ipam.ipaddress", w.ip.id), null);
    assert.deepEqual(
      w.logger.lines.filter((l) => l.level === "warning" || l.level === "error"),
      [],
    );
  } finally {
    w.kv.close();
  }
});
