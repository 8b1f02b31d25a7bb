/**
 * Creates and updates through the engine's API when a write spans several atomics and the store
 * refuses or fails one of them (domain/netbox/engine/write.ts): a storage failure reaches the
 * caller (never a false success) and a create leaves nothing behind; an update whose id names no
 * object is refused at that item; one that keeps meeting concurrent writes gives up with a
 * conflict. Faults are planted at the real KV store's commit, counted per write of the model.
 */
import assert from "node:assert/strict";
import { ModelEngine, TAG_MODEL } from "../../../domain/netbox/engine.ts";
import { CORE_MODELS } from "../../../domain/netbox/models/core.ts";
import type { ModelDef } from "../../../domain/netbox/types.ts";
import { MemoryLogger } from "../../../infra/logger.ts";
import { KvModelStore } from "../../../storage/kv/models.ts";
import type { IndexValue } from "../../../storage/ports.ts";
import { type Fault, FaultyStore, ITEM, MODEL } from "./_faulty_store.ts";

async function engine(...more: ModelDef[]) {
  const kv = await Deno.openKv(":memory:");
  const store = new FaultyStore(kv);
  const logger = new MemoryLogger();
  const e = new ModelEngine({ store, logger, now: Date.now }).register(ITEM, ...more);
  return { kv, store, logger, e };
}

/** More items than one atomic takes (an update checks each record's version: 100 checks). */
const MANY = 150;
const items = (prefix: string) =>
  Array.from({ length: MANY }, (_, i) => ({ name: `${prefix}-${i}` }));

async function names(e: ModelEngine): Promise<string[]> {
  return (await e.find(MODEL)).map((r) => String(r.name)).sort();
}

/** Every item's note, by id. */
async function notes(e: ModelEngine): Promise<unknown[]> {
  return (await e.find(MODEL)).sort((a, b) => a.id - b.id).map((r) => r.note);
}

async function made(e: ModelEngine, prefix: string) {
  const r = await e.createMany(MODEL, items(prefix));
  assert.ok(r.ok, JSON.stringify(r).slice(0, 300));
  return r.value;
}

Deno.test("write: a create whose second atomic fails in storage rejects with that error and leaves no object of it", async () => {
  const { kv, store, e } = await engine();
  try {
    store.faults = [null, "throw"];
    await assert.rejects(() => e.createMany(MODEL, items("a")), /storage unavailable/);
    assert.ok(store.commits >= 2, `${store.commits} commits`);
    assert.deepEqual(await names(e), [], "the group that committed was undone");
    // The names are free again: the same create passes.
    await made(e, "a");
    assert.equal((await names(e)).length, MANY);
  } finally {
    kv.close();
  }
});

Deno.test("write: a create whose name a concurrent writer took before its second atomic is refused at that item, as validation would, and leaves nothing", async () => {
  const { kv, store, e } = await engine();
  try {
    const last = `a-${MANY - 1}`;
    store.faults = [null, () => e.insert(MODEL, { name: last })];
    const r = await e.createMany(MODEL, items("a"));
    assert.ok(!r.ok && r.reason === "invalid", JSON.stringify(r).slice(0, 300));
    const errors = r.errors as Array<Record<string, string[]>>;
    assert.equal(errors.length, MANY);
    assert.deepEqual(errors[MANY - 1], { name: ["item with this name already exists."] });
    assert.deepEqual(errors.slice(0, MANY - 1).filter((x) => Object.keys(x).length), []);
    assert.deepEqual(await names(e), [last], "the concurrent writer's object alone");
  } finally {
    kv.close();
  }
});

Deno.test("write: an update whose second atomic fails in storage rejects with that error, never answers success", async () => {
  const { kv, store, e } = await engine();
  try {
    const all = await made(e, "a");
    store.faults = [null, "throw"];
    await assert.rejects(
      () => e.updateMany(MODEL, all.map((r) => ({ id: r.id, data: { note: "x" } })), true),
      /storage unavailable/,
    );
    // The first group had committed: it is put back, so nothing of the update stays.
    assert.deepEqual(await notes(e), all.map((r) => r.note));
  } finally {
    kv.close();
  }
});

Deno.test("write: an update naming an id no object has is refused at that item, and nothing is written", async () => {
  const { kv, e } = await engine();
  try {
    const a = await e.insert(MODEL, { name: "a" });
    assert.ok(a.ok);
    const r = await e.updateMany(MODEL, [
      { id: a.value.id, data: { note: "changed" } },
      { id: a.value.id + 1000, data: { note: "changed" } },
    ], true);
    assert.deepEqual(r, {
      ok: false,
      reason: "invalid",
      errors: [{}, { id: [`Object with id ${a.value.id + 1000} does not exist.`] }],
    });
    assert.equal((await e.get(MODEL, a.value.id))?.note, a.value.note);
  } finally {
    kv.close();
  }
});

Deno.test("write: an update retried after a concurrent write, whose object was deleted meanwhile, answers a conflict", async () => {
  const { kv, store, e } = await engine();
  try {
    const all = await made(e, "a");
    const gone = all[MANY - 1];
    // The first group commits; the second meets a concurrent delete of one of its objects.
    store.faults = [null, () => e.deleteMany(MODEL, [gone.id])];
    const r = await e.updateMany(
      MODEL,
      all.map((x) => ({ id: x.id, data: { note: "x" } })),
      true,
    );
    assert.deepEqual(r, {
      ok: false,
      reason: "conflict",
      detail: "The objects were changed concurrently; please retry.",
    });
    assert.equal(await e.get(MODEL, gone.id), null);
    // The first group's objects are put back as they were: a refused update leaves nothing.
    assert.deepEqual(await notes(e), all.slice(0, -1).map((r) => r.note));
  } finally {
    kv.close();
  }
});

Deno.test("write: a bulk update refused on its retry puts back the group it had committed, except objects another writer changed or deleted since", async () => {
  const { kv, store, e } = await engine();
  try {
    const all = await made(e, "a");
    const last = all[MANY - 1];
    const edited = all[0];
    const deleted = all[1];
    // The first group commits; before the second, another writer takes the name the update
    // gives its last object, edits the first object (already updated) again and deletes the
    // second.
    store.faults = [null, async () => {
      assert.ok((await e.insert(MODEL, { name: "taken" })).ok);
      assert.ok(
        (await e.updateMany(MODEL, [{ id: edited.id, data: { note: "theirs" } }], true)).ok,
      );
      await e.deleteMany(MODEL, [deleted.id]);
    }];
    const r = await e.updateMany(
      MODEL,
      all.map((x) => ({ id: x.id, data: x.id === last.id ? { name: "taken" } : { note: "x" } })),
      true,
    );
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.reason, "invalid");
    const after = await e.find(MODEL);
    const byId = new Map(after.map((x) => [x.id, x]));
    assert.equal(byId.get(edited.id)?.note, "theirs", "the other writer's edit stands");
    assert.equal(byId.has(deleted.id), false, "the other writer's delete stands");
    for (const x of all.slice(2)) assert.equal(byId.get(x.id)?.note, x.note, `item ${x.id}`);
    assert.equal(byId.get(last.id)?.name, last.name);
    assert.equal(after.filter((x) => x.name === "taken").length, 1);
  } finally {
    kv.close();
  }
});

Deno.test("write: an update whose every commit meets a concurrent write gives up with a conflict, unchanged", async () => {
  const { kv, store, e } = await engine();
  try {
    const a = await e.insert(MODEL, { name: "a", note: "before" });
    assert.ok(a.ok);
    store.refuseAll = true;
    store.commits = 0;
    const r = await e.updateMany(MODEL, [{ id: a.value.id, data: { note: "after" } }], true);
    assert.deepEqual(r, {
      ok: false,
      reason: "conflict",
      detail: "The object was changed concurrently; please retry.",
    });
    assert.equal(store.commits, 8, "eight attempts, then the answer");
    store.refuseAll = false;
    assert.equal((await e.get(MODEL, a.value.id))?.note, "before");
  } finally {
    kv.close();
  }
});

Deno.test("write: a model without save hooks is created and updated, one and many, with nothing logged", async () => {
  const { kv, logger, e } = await engine();
  try {
    const one = await e.insert(MODEL, { name: "one" });
    assert.ok(one.ok);
    const many = await e.createMany(MODEL, [{ name: "a" }, { name: "b" }]);
    assert.ok(many.ok);
    const updated = await e.updateMany(
      MODEL,
      [one.value, ...many.value].map((r) => ({ id: r.id, data: { note: "n" } })),
      true,
    );
    assert.ok(updated.ok);
    assert.deepEqual(updated.value.map((r) => r.note), ["n", "n", "n"]);
    assert.deepEqual(logger.lines, []);
  } finally {
    kv.close();
  }
});

Deno.test("write: an after-save batch hook that throws is logged once per request, and the objects stand", async () => {
  const batches: Array<[string, string[]]> = [];
  const { kv, logger, e } = await engine({
    ...ITEM,
    model: "hooked",
    path: "test/hooked/",
    afterSaveBatch: (records, _engine, op) => {
      batches.push([op, records.map((r) => String(r.name))]);
      throw new Error("push failed");
    },
  });
  try {
    const made = await e.createMany("test.hooked", [{ name: "a" }, { name: "b" }]);
    assert.ok(made.ok, JSON.stringify(made));
    const updated = await e.updateMany(
      "test.hooked",
      made.value.map((r) => ({ id: r.id, data: { note: "n" } })),
      true,
    );
    assert.ok(updated.ok, JSON.stringify(updated));
    assert.deepEqual(batches, [["create", ["a", "b"]], ["update", ["a", "b"]]]);
    assert.deepEqual(logger.at("error"), [
      {
        level: "error",
        message: "after-save batch hook failed",
        model: "test.hooked",
        error: "push failed",
      },
      {
        level: "error",
        message: "after-save batch hook failed",
        model: "test.hooked",
        error: "push failed",
      },
    ]);
    assert.deepEqual((await e.find("test.hooked")).map((r) => r.note), ["n", "n"]);
  } finally {
    kv.close();
  }
});

/** The real KV store, counting its read calls (get, getMany) of one model's records. */
class ReadCountingStore extends KvModelStore {
  constructor(kv: Deno.Kv, readonly counted: string) {
    super(kv);
  }
  reads = 0;
  override get(model: string, id: number) {
    if (model === this.counted) this.reads++;
    return super.get(model, id);
  }
  override getMany(model: string, ids: readonly number[]) {
    if (model === this.counted) this.reads++;
    return super.getMany(model, ids);
  }
  /**
   * One value's index read (what a rule's ctx.byIndex makes when the batch did not read it), not
   * counting those the store makes for a batch read of many values.
   */
  override idsByIndex(model: string, field: string, value: IndexValue, limit?: number) {
    if (model === this.counted && this.batches === 0) this.reads++;
    return super.idsByIndex(model, field, value, limit);
  }
  batches = 0;
  override async idsByIndexMany(model: string, field: string, values: readonly IndexValue[]) {
    if (model === this.counted) this.reads++;
    this.batches++;
    try {
      return await super.idsByIndexMany(model, field, values);
    } finally {
      this.batches--;
    }
  }
}

Deno.test("write: a bulk create or update reads the tags its items name in one batch: two items cost the tag reads three do", async () => {
  const kv = await Deno.openKv(":memory:");
  const store = new ReadCountingStore(kv, TAG_MODEL);
  const e = new ModelEngine({ store, logger: new MemoryLogger(), now: Date.now }).register(
    ...CORE_MODELS,
  );
  try {
    const tags: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t = await e.insert(TAG_MODEL, { name: `t${i}`, slug: `t${i}` });
      assert.ok(t.ok);
      tags.push(t.value.id);
    }
    const measure = async (of: number[], prefix: string) => {
      store.reads = 0;
      const made = await e.createMany(
        "tenancy.tenant",
        of.map((tag, i) => ({ name: `${prefix}${i}`, slug: `${prefix}${i}`, tags: [{ id: tag }] })),
      );
      assert.ok(made.ok, JSON.stringify(made).slice(0, 300));
      assert.deepEqual(made.value.map((t) => t.tags), of.map((tag) => [tag]));
      return store.reads;
    };
    assert.equal(await measure(tags.slice(0, 2), "two"), await measure(tags.slice(2, 5), "three"));
    // The same tenants given each other's tags in one bulk update each (new tags: read again).
    const tenants = await e.find("tenancy.tenant");
    const two = tenants.filter((t) => String(t.name).startsWith("two"));
    const three = tenants.filter((t) => String(t.name).startsWith("three"));
    const update = async (of: typeof tenants, give: number[]) => {
      store.reads = 0;
      const r = await e.updateMany(
        "tenancy.tenant",
        of.map((t, i) => ({ id: t.id, data: { tags: [{ id: give[i] }] } })),
        true,
      );
      assert.ok(r.ok, JSON.stringify(r).slice(0, 300));
      assert.deepEqual(r.value.map((t) => t.tags), give.map((tag) => [tag]));
      return store.reads;
    };
    assert.equal(await update(two, tags.slice(3, 5)), await update(three, tags.slice(0, 3)));
  } finally {
    kv.close();
  }
});

Deno.test("write: an update whose new optional reference's target is deleted just before its commit keeps the object and drops that reference, as the delete's SET_NULL would", async () => {
  const { kv, store, logger, e } = await engine(
    {
      app: "test",
      model: "owner",
      verbose: "owner",
      path: "test/owners/",
      fields: { name: { type: "string", required: true } },
      brief: ["name"],
    },
    {
      app: "test",
      model: "link",
      verbose: "link",
      path: "test/links/",
      fields: {
        name: { type: "string", required: true },
        owner: { type: "fk", model: "test.owner", nullable: true, onDelete: "set_null" },
      },
      brief: ["name"],
    },
  );
  try {
    const owner = await e.insert("test.owner", { name: "o" });
    const link = await e.insert("test.link", { name: "l" });
    assert.ok(owner.ok && link.ok);
    store.watched = "test.link";
    store.faults = [{ before: () => e.deleteMany("test.owner", [owner.value.id]) }];
    const r = await e.updateMany(
      "test.link",
      [{ id: link.value.id, data: { owner: owner.value.id } }],
      true,
    );
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(r.value[0].owner, null);
    assert.equal(await e.get("test.owner", owner.value.id), null);
    const stored = await e.get("test.link", link.value.id);
    assert.equal(stored?.owner, null, "the object stays, its reference dropped");
    assert.equal(logger.at("warning").length, 1);
  } finally {
    kv.close();
  }
});

Deno.test("write: a generic reference whose rule is SET_NULL loses both its fields to its target's delete, also when made or moved to it while the delete commits", async () => {
  // No inventory model keeps such a rule now (NetBox's scopes cascade: docs/netbox-rules.md
  // "Deletes"); the engine's generic SET_NULL paths are kept, and guarded here.
  const { kv, store, logger, e } = await engine(
    {
      app: "test",
      model: "place",
      verbose: "place",
      path: "test/places/",
      fields: { name: { type: "string", required: true } },
      brief: ["name"],
    },
    {
      app: "test",
      model: "thing",
      verbose: "thing",
      path: "test/things/",
      fields: {
        name: { type: "string", required: true },
        at_type: { type: "string", nullable: true },
        at_id: { type: "int", nullable: true },
        at: {
          type: "gfk",
          models: ["test.place"],
          typeField: "at_type",
          idField: "at_id",
          onDelete: "set_null",
        },
      },
      brief: ["name"],
    },
  );
  try {
    const place = async (name: string) => {
      const r = await e.insert("test.place", { name });
      assert.ok(r.ok, JSON.stringify(r));
      return r.value.id;
    };
    const thing = async (name: string, at: number | null) => {
      const r = await e.insert("test.thing", { name, at_type: "test.place", at_id: at });
      assert.ok(r.ok, JSON.stringify(r));
      return r.value.id;
    };
    const at = async (id: number) => {
      const r = await e.get("test.thing", id);
      return [r?.name, r?.at_type, r?.at_id];
    };
    // A plain delete: the referrer stays, without its reference.
    const p1 = await place("p1");
    const t1 = await thing("t1", p1);
    assert.deepEqual(await e.deleteMany("test.place", [p1]), { ok: true, value: null });
    assert.deepEqual(await at(t1), ["t1", null, null]);
    assert.deepEqual(logger.at("warning"), []);

    // A reference made while the delete is held at its commit: its clean-up pass drops it.
    const p2 = await place("p2");
    let late = 0;
    store.watched = "test.place";
    store.faults = [{ before: async () => late = await thing("t2", p2) }];
    assert.deepEqual(await e.deleteMany("test.place", [p2]), { ok: true, value: null });
    assert.deepEqual(await at(late), ["t2", null, null]);
    assert.deepEqual(logger.at("warning").map((l) => l.message), [
      "references created during a delete were cleaned up",
    ]);

    // An update moving the reference to a place deleted just before its commit drops it.
    const p3 = await place("p3");
    const p4 = await place("p4");
    const t3 = await thing("t3", p3);
    store.watched = "test.thing";
    store.faults = [{ before: () => e.deleteMany("test.place", [p4]) }];
    const moved = await e.updateMany("test.thing", [{ id: t3, data: { at_id: p4 } }], true);
    assert.ok(moved.ok, JSON.stringify(moved));
    assert.deepEqual(await at(t3), ["t3", null, null]);
    assert.deepEqual(logger.at("warning").map((l) => l.message).slice(1), [
      "dropped references to objects deleted concurrently",
    ]);
    assert.deepEqual(logger.at("error"), []);
  } finally {
    kv.close();
  }
});

Deno.test("write: a bulk create or update of addresses reads their hosts' index entries in one batch: two items cost the index reads three do", async () => {
  const IP = "ipam.ipaddress";
  const kv = await Deno.openKv(":memory:");
  const store = new ReadCountingStore(kv, IP);
  const e = new ModelEngine({ store, logger: new MemoryLogger(), now: Date.now }).register(
    ...CORE_MODELS,
  );
  try {
    const create = async (hosts: number[]) => {
      store.reads = 0;
      const r = await e.createMany(IP, hosts.map((h) => ({ address: `10.0.0.${h}/24` })));
      assert.ok(r.ok, JSON.stringify(r).slice(0, 300));
      return { reads: store.reads, ids: r.value.map((ip) => ip.id) };
    };
    const two = await create([1, 2]);
    const three = await create([3, 4, 5]);
    assert.equal(two.reads, three.reads);
    const update = async (ids: number[], hosts: number[]) => {
      store.reads = 0;
      const r = await e.updateMany(
        IP,
        ids.map((id, i) => ({ id, data: { address: `10.0.1.${hosts[i]}/24` } })),
        true,
      );
      assert.ok(r.ok, JSON.stringify(r).slice(0, 300));
      assert.deepEqual(r.value.map((ip) => ip.address), hosts.map((h) => `10.0.1.${h}/24`));
      return store.reads;
    };
    assert.equal(await update(two.ids, [1, 2]), await update(three.ids, [3, 4, 5]));
  } finally {
    kv.close();
  }
});

Deno.test("write: a bulk-view update passes over an id no object has: the next object's refusal is its own, and the others are answered from what was written", async () => {
  const kv = await Deno.openKv(":memory:");
  const store = new ReadCountingStore(kv, MODEL);
  const e = new ModelEngine({ store, logger: new MemoryLogger(), now: Date.now }).register(ITEM);
  try {
    const made = await e.createMany(MODEL, [{ name: "a" }, { name: "b" }]);
    assert.ok(made.ok);
    const [a, b] = made.value.map((r) => r.id);
    const ghost = b + 100;
    const refused = await e.updateMany(
      MODEL,
      [{ id: ghost, data: { note: "x" } }, { id: a, data: { note: "x" } }, {
        id: b,
        data: { name: "" },
      }],
      true,
      null,
      { bulkView: true },
    );
    assert.deepEqual(refused, {
      ok: false,
      reason: "invalid",
      errors: { name: ["This field may not be blank."] },
    });
    const measure = async (ids: number[], note: string) => {
      store.reads = 0;
      const r = await e.updateMany(
        MODEL,
        ids.map((id) => ({ id, data: { note } })),
        true,
        null,
        { bulkView: true },
      );
      assert.ok(r.ok, JSON.stringify(r));
      assert.deepEqual(r.value.map((x) => [x.id, x.note]), [[a, note], [b, note]]);
      return store.reads;
    };
    assert.equal(await measure([ghost, a, b], "y"), await measure([a, b], "z"));
  } finally {
    kv.close();
  }
});

Deno.test("write: an empty create or update answers an empty list and writes nothing", async () => {
  const { kv, store, e } = await engine();
  try {
    const made = await e.createMany(MODEL, []);
    assert.ok(made.ok, JSON.stringify(made));
    assert.deepEqual(made.value, []);
    const r = await e.updateMany(MODEL, [], true);
    assert.ok(r.ok, JSON.stringify(r));
    assert.deepEqual(r.value, []);
    assert.equal(store.commits, 0);
    assert.deepEqual(await e.find(MODEL), []);
  } finally {
    kv.close();
  }
});

/** Owners, and items that may name one (PROTECT: an owner named by an item is not deleted). */
const OWNER: ModelDef = {
  app: "test",
  model: "owner",
  verbose: "owner",
  path: "test/owners/",
  fields: { name: { type: "string", required: true } },
  brief: ["name"],
  // A claim per created name: a create of MANY owners takes two atomics.
  unique: [{ fields: ["name"] }],
};
const OWNED_ITEM: ModelDef = {
  ...ITEM,
  fields: {
    ...ITEM.fields,
    owner: { type: "fk", model: "test.owner", nullable: true, onDelete: "protect" },
  },
};

/**
 * MANY items, the first owned by `from`; an update moving it to `to` and noting the others,
 * whose first group commits, whose second is refused once (`between` runs then, after the first
 * committed) and whose retry fails in storage: the committed group is then put back.
 */
async function movedThenUndone(lastFault: Fault | null) {
  const kv = await Deno.openKv(":memory:");
  const store = new FaultyStore(kv);
  const logger = new MemoryLogger();
  const e = new ModelEngine({ store, logger, now: Date.now }).register(OWNER, OWNED_ITEM);
  const from = await e.insert("test.owner", { name: "from" });
  const to = await e.insert("test.owner", { name: "to" });
  assert.ok(from.ok && to.ok);
  const made = await e.createMany(
    MODEL,
    Array.from({ length: MANY }, (_, i) => ({ name: `a-${i}`, owner: i ? null : from.value.id })),
  );
  assert.ok(made.ok, JSON.stringify(made).slice(0, 300));
  const first = made.value[0].id;
  return {
    kv,
    logger,
    e,
    first,
    from: from.value.id,
    to: to.value.id,
    async update(between: () => Promise<unknown>) {
      const committed = Promise.withResolvers<void>();
      store.faults = [
        { after: () => committed.resolve() },
        async () => {
          await committed.promise;
          assert.equal((await e.get(MODEL, first))?.owner, to.value.id, "moved in group one");
          await between();
        },
        "throw",
        ...(lastFault ? [lastFault] : []),
      ];
      const inputs = made.value.map((r, i) => ({
        id: r.id,
        data: i ? { note: "n" } : { owner: to.value.id },
      }));
      await assert.rejects(() => e.updateMany(MODEL, inputs, true), /storage unavailable/);
    },
  };
}

/** Every item's owner names an owner that exists (or none). */
async function noDanglingOwner(e: ModelEngine): Promise<void> {
  const owners = new Set((await e.find("test.owner")).map((o) => o.id));
  for (const item of await e.find(MODEL)) {
    assert.ok(item.owner === null || owners.has(item.owner as number), `item ${item.id}`);
  }
}

Deno.test("write: an update undone after its first group committed does not put back a reference to an object deleted since: that object stays as the update made it", async () => {
  const w = await movedThenUndone(null);
  try {
    // Once the item left `from`, nothing names it: its delete is allowed.
    let deleted: unknown;
    await w.update(async () => deleted = await w.e.remove("test.owner", w.from));
    assert.deepEqual(deleted, { ok: true, value: null });
    assert.equal(await w.e.get("test.owner", w.from), null);
    const items = (await w.e.find(MODEL)).sort((a, b) => a.id - b.id);
    assert.equal(items[0].owner, w.to, "kept as the update made it, not put back to `from`");
    assert.deepEqual(items.slice(1).filter((r) => r.note !== ""), [], "the others put back");
    await noDanglingOwner(w.e);
  } finally {
    w.kv.close();
  }
});

Deno.test("write: an update undone while its old reference's object is deleted drops that reference, as an update's commit meeting a delete does", async () => {
  // The delete comes after the undo read `from` (still there) and before the undo commits.
  let deleted: unknown;
  const w: Awaited<ReturnType<typeof movedThenUndone>> = await movedThenUndone({
    before: async () => deleted = await w.e.remove("test.owner", w.from),
  });
  try {
    await w.update(() => Promise.resolve());
    assert.deepEqual(deleted, { ok: true, value: null });
    const items = (await w.e.find(MODEL)).sort((a, b) => a.id - b.id);
    assert.equal(items[0].owner, null, "put back, then its reference to the deleted owner dropped");
    assert.deepEqual(items.slice(1).filter((r) => r.note !== ""), []);
    await noDanglingOwner(w.e);
    assert.equal(w.logger.at("warning").length, 1);
  } finally {
    w.kv.close();
  }
});

Deno.test("write: a create undone after other writers referred to its objects deletes them as a delete would: PROTECT keeps one, SET_NULL and CASCADE follow", async () => {
  const kv = await Deno.openKv(":memory:");
  const store = new FaultyStore(kv);
  const logger = new MemoryLogger();
  const referrer = (model: string, onDelete: "set_null" | "cascade"): ModelDef => ({
    app: "test",
    model,
    verbose: model,
    path: `test/${model}s/`,
    fields: {
      name: { type: "string", required: true },
      owner: { type: "fk", model: "test.owner", nullable: true, onDelete },
    },
    brief: ["name"],
  });
  const e = new ModelEngine({ store, logger, now: Date.now }).register(
    OWNER,
    OWNED_ITEM,
    referrer("link", "set_null"),
    referrer("part", "cascade"),
  );
  try {
    store.watched = "test.owner";
    const committed = Promise.withResolvers<void>();
    const made: unknown[] = [];
    let followed = 0;
    store.faults = [
      { after: () => committed.resolve() },
      async () => {
        // The create's first group is in: other writers refer to three of its owners.
        await committed.promise;
        const [a, b, c, d] = (await e.find("test.owner")).sort((x, y) => x.id - y.id);
        made.push(
          await e.insert(MODEL, { name: "protects", owner: a.id }),
          await e.insert("test.link", { name: "nulls", owner: b.id }),
          await e.insert("test.part", { name: "follows", owner: c.id }),
          // and one deletes a fourth (its commit, the fault list's null), which the undo then finds
          // gone.
          await e.remove("test.owner", d.id),
        );
        followed = c.id;
      },
      null,
      {
        // As the undo's first delete commits, another writer deletes the third (its part along):
        // the undo passes over it.
        before: async () => made.push(await e.remove("test.owner", followed)),
      },
    ];
    const r = await e.createMany(
      "test.owner",
      Array.from({ length: MANY }, (_, i) => ({ name: `o-${i}` })),
    );
    assert.ok(!r.ok && r.reason === "conflict", JSON.stringify(r).slice(0, 300));
    // The owners nothing refers to go in the undo's own atomics (two groups, two refused or
    // deleted by others, two of the undo's, one delete of a referred owner), not one by one.
    assert.ok(store.commits <= 8, `${store.commits} commits of owners`);
    assert.ok(made.every((m) => (m as { ok: boolean }).ok), JSON.stringify(made).slice(0, 300));
    // Only the owner a PROTECT reference holds is left of the create.
    const owners = await e.find("test.owner");
    assert.deepEqual(owners.map((o) => o.name), ["o-0"]);
    const [item] = await e.find(MODEL);
    assert.equal(item.owner, owners[0].id);
    const [link] = await e.find("test.link");
    assert.equal(link.owner, null, "SET_NULL: the reference dropped");
    assert.deepEqual(await e.find("test.part"), [], "CASCADE: taken along");
    assert.deepEqual(
      logger.at("warning").map((l) => l.message),
      ["kept an object of a failed create that another object protects"],
    );
  } finally {
    kv.close();
  }
});
