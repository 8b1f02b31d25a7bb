/**
 * The diff-then-write core every stage writes through (domain/sync/reconcile.ts, docs/sync.md):
 * what it creates, patches, marks, deletes and leaves alone, how it counts each, how it splits
 * big writes, how one refused object is reported while the rest of its batch is written, and how
 * an object edited between the stage's read and its write is re-read and written with If-Match.
 * Over the in-memory inventory fake; every effect is read back from it.
 */
import assert from "node:assert/strict";
import { DEFAULT_SYNC_OPTIONS } from "../../../domain/sync/options.ts";
import {
  deleteOrphans,
  type Desired,
  indexBy,
  reconcile,
  type ReconcileOptions,
  refId,
} from "../../../domain/sync/reconcile.ts";
import type { InventoryApi, InventoryBody, InventoryObject } from "../../../domain/sync/ports.ts";
import { FakeInventory, stageContext } from "./_fakes.ts";

const VMS = "virtualization/virtual-machines/";

interface Heard {
  failed: { object: string; message: string; bodyExcerpt?: string; status?: number }[];
  conflicts: { object: string; detail: string }[];
  edited: { object: string; detail: string }[];
}

function context(inv: FakeInventory, dryRun = false) {
  const heard: Heard = { failed: [], conflicts: [], edited: [] };
  const ctx = stageContext(inv, {
    options: { ...DEFAULT_SYNC_OPTIONS, dryRun },
    itemFailed: (object, error) => {
      const e = error as Error & { bodyExcerpt?: string; status?: number };
      heard.failed.push({
        object,
        message: e.message,
        bodyExcerpt: e.bodyExcerpt,
        status: e.status,
      });
    },
    itemConflict: (object, detail) => heard.conflicts.push({ object, detail }),
    itemEdited: (object, detail) => heard.edited.push({ object, detail }),
  });
  return { ctx, heard };
}

/** Objects already in the inventory, made without going through `writes`. */
function seed(inv: FakeInventory, path: string, bodies: InventoryBody[]): InventoryObject[] {
  return bodies.map((b, i) => {
    const o = { id: 1000 + i, ...structuredClone(b) } as InventoryObject;
    inv.table(path).set(o.id, o);
    return structuredClone(o);
  });
}

const byName = (objects: InventoryObject[]) =>
  new Map(objects.map((o) => [String(o.name), o] as const));

const want = (name: string, body: InventoryBody): Desired => ({
  key: name,
  body: { name, ...body },
  label: `virtual machine ${name}`,
});

Deno.test("reconcile: creates what is missing, patches only changed fields, leaves matches alone; counts each", async () => {
  const inv = new FakeInventory();
  const existing = seed(inv, VMS, [
    { name: "a", memory: 1024, vcpus: 2, status: { value: "active", label: "Active" } },
    { name: "b", memory: 1024, vcpus: 2, status: { value: "active", label: "Active" } },
  ]);
  const { ctx } = context(inv);
  const { objects } = await reconcile(ctx, {
    path: VMS,
    existing: byName(existing),
    desired: [
      want("a", { memory: 1024, vcpus: 2, status: "active" }),
      want("b", { memory: 4096, vcpus: 2, status: "active" }),
      want("c", { memory: 512, vcpus: 1, status: "active" }),
    ],
    touch: { custom_fields: { last_synced: "2026-01-01T00:00:00Z" } },
  });
  assert.deepEqual(ctx.result, { created: 1, updated: 1, unchanged: 1, deleted: 0, failed: 0 });
  // The unchanged object is not written at all; the changed one gets its one field and the
  // touch fields, the new one its whole body and the touch fields.
  assert.deepEqual(inv.writes, [`POST ${VMS}`, `PATCH ${VMS}1001`]);
  const rows = byName(inv.all(VMS));
  assert.equal(rows.get("b")!.memory, 4096);
  assert.deepEqual(rows.get("b")!.custom_fields, { last_synced: "2026-01-01T00:00:00Z" });
  assert.equal(rows.get("a")!.custom_fields, undefined, "an unchanged object is not touched");
  assert.deepEqual(
    { ...rows.get("c"), id: 0 },
    {
      id: 0,
      name: "c",
      memory: 512,
      vcpus: 1,
      status: "active",
      custom_fields: { last_synced: "2026-01-01T00:00:00Z" },
    },
  );
  // Every wanted object comes back by key, as written (or as it was, when unchanged).
  assert.deepEqual([...objects.keys()].sort(), ["a", "b", "c"]);
  assert.equal(objects.get("a")!.id, 1000);
  assert.equal(objects.get("b")!.memory, 4096);
  assert.equal(objects.get("c")!.id, rows.get("c")!.id);
});

Deno.test("reconcile: custom fields are compared and written key by key; the admin's other keys stay", async () => {
  const inv = new FakeInventory();
  const existing = seed(inv, VMS, [
    { name: "a", custom_fields: { vmid: 101, owner_team: "web", node: "n1" } },
    { name: "b", custom_fields: { vmid: 102, owner_team: "db", node: "n1" } },
  ]);
  const { ctx } = context(inv);
  await reconcile(ctx, {
    path: VMS,
    existing: byName(existing),
    desired: [
      want("a", { custom_fields: { vmid: 101, node: "n1" } }),
      want("b", { custom_fields: { vmid: 102, node: "n2" } }),
    ],
    touch: { custom_fields: { last_synced: "2026-01-01T00:00:00Z" } },
  });
  assert.deepEqual(ctx.result, { created: 0, updated: 1, unchanged: 1, deleted: 0, failed: 0 });
  assert.deepEqual(inv.writes, [`PATCH ${VMS}1001`]);
  // The PATCH carries only the changed key and the touch key (NetBox merges custom_fields).
  const b = inv.table(VMS).get(1001)!;
  assert.deepEqual(b.custom_fields, { node: "n2", last_synced: "2026-01-01T00:00:00Z" });
});

Deno.test("reconcile: tags the sync manages follow upstream; hand-set tags stay; on NetBox 4.6 only add_tags/remove_tags are sent", async () => {
  for (const version of ["4.2", "4.6"]) {
    const inv = new FakeInventory();
    (inv as InventoryApi).apiVersion = () => version;
    // Tags 1 and 2 are the sync's, 9 an admin's.
    const existing = seed(inv, VMS, [
      { name: "a", tags: [{ id: 1, url: "/t/1", display: "prod" }, { id: 9, display: "mine" }] },
      { name: "b", tags: [{ id: 2, display: "web" }, { id: 9, display: "mine" }] },
    ]);
    const updates: InventoryBody[] = [];
    const update = inv.update.bind(inv);
    inv.update = (path, bodies) => {
      updates.push(...structuredClone(bodies));
      return update(path, bodies);
    };
    const { ctx } = context(inv);
    await reconcile(ctx, {
      path: VMS,
      existing: byName(existing),
      desired: [want("a", { tags: [2] }), want("b", { tags: [2] })],
      managedTags: new Set([1, 2]),
    });
    assert.deepEqual(ctx.result, { created: 0, updated: 1, unchanged: 1, deleted: 0, failed: 0 });
    assert.deepEqual(
      updates,
      version === "4.6"
        ? [{ id: 1000, add_tags: [2], remove_tags: [1] }]
        : [{ id: 1000, tags: [9, 2] }],
      version,
    );
  }
});

Deno.test("reconcile: fields the admin owns are written on create only", async () => {
  const inv = new FakeInventory();
  const existing = seed(inv, VMS, [{ name: "a", comments: "hand", memory: 1024 }]);
  const { ctx } = context(inv);
  await reconcile(ctx, {
    path: VMS,
    existing: byName(existing),
    desired: [
      want("a", { comments: "from upstream", memory: 2048 }),
      want("b", { comments: "from upstream", memory: 512 }),
    ],
    createOnly: new Set(["comments"]),
  });
  const rows = byName(inv.all(VMS));
  assert.equal(rows.get("a")!.comments, "hand");
  assert.equal(rows.get("a")!.memory, 2048);
  assert.equal(rows.get("b")!.comments, "from upstream");
  assert.deepEqual(ctx.result, { created: 1, updated: 1, unchanged: 0, deleted: 0, failed: 0 });

  // Only a create-only field differs: nothing to write.
  const again = context(inv);
  await reconcile(again.ctx, {
    path: VMS,
    existing: byName(inv.all(VMS)),
    desired: [want("a", { comments: "newer", memory: 2048 })],
    createOnly: new Set(["comments"]),
  });
  assert.deepEqual(again.ctx.result, {
    created: 0,
    updated: 0,
    unchanged: 1,
    deleted: 0,
    failed: 0,
  });
});

Deno.test("reconcile: objects nobody wants are kept, deleted, or marked (once; a marked one is not marked again)", async () => {
  const make = () => {
    const inv = new FakeInventory();
    const existing = seed(inv, VMS, [
      { name: "keep", status: "active" },
      { name: "gone1", status: "active" },
      { name: "gone2", status: "offline" },
    ]);
    return { inv, existing: byName(existing) };
  };
  const desired = [want("keep", { status: "active" })];

  const kept = make();
  const k = context(kept.inv);
  await reconcile(k.ctx, { path: VMS, existing: kept.existing, desired, orphan: "keep" });
  assert.deepEqual(kept.inv.writes, []);
  assert.equal(kept.inv.all(VMS).length, 3);
  assert.deepEqual(k.ctx.result, { created: 0, updated: 0, unchanged: 1, deleted: 0, failed: 0 });

  // Exactly 500 orphans are one delete request of 500, no empty one after it.
  const many = new FakeInventory();
  const calls: number[] = [];
  const del = many.delete.bind(many);
  many.delete = (path, ids) => {
    calls.push(ids.length);
    return del(path, ids);
  };
  const manyRead = seed(many, VMS, Array.from({ length: 500 }, (_, i) => ({ name: `o${i}` })));
  await reconcile(context(many).ctx, {
    path: VMS,
    existing: byName(manyRead),
    desired: [],
    orphan: "delete",
  });
  assert.deepEqual(calls, [500]);
  assert.equal(many.all(VMS).length, 0);

  const deleted = make();
  const d = context(deleted.inv);
  await reconcile(d.ctx, { path: VMS, existing: deleted.existing, desired, orphan: "delete" });
  assert.deepEqual(deleted.inv.all(VMS).map((o) => o.name), ["keep"]);
  assert.deepEqual(d.ctx.result, { created: 0, updated: 0, unchanged: 1, deleted: 2, failed: 0 });

  const marked = make();
  const m = context(marked.inv);
  await reconcile(m.ctx, {
    path: VMS,
    existing: marked.existing,
    desired,
    orphan: () => ({ status: "offline" }),
  });
  // gone2 already says offline: only gone1 is written.
  assert.deepEqual(marked.inv.writes, [`PATCH ${VMS}1001`]);
  assert.deepEqual(marked.inv.all(VMS).map((o) => [o.name, o.status]), [
    ["keep", "active"],
    ["gone1", "offline"],
    ["gone2", "offline"],
  ]);
  assert.deepEqual(m.ctx.result, { created: 0, updated: 1, unchanged: 1, deleted: 0, failed: 0 });

  // A policy that leaves an orphan alone (null) writes nothing for it.
  const spared = make();
  const s = context(spared.inv);
  await reconcile(s.ctx, {
    path: VMS,
    existing: spared.existing,
    desired,
    orphan: () => null,
  });
  assert.deepEqual(spared.inv.writes, []);
});

Deno.test("reconcile: deleteOrphans removes exactly the unclaimed objects, 500 ids a request", async () => {
  const inv = new FakeInventory();
  const existing = seed(
    inv,
    VMS,
    Array.from({ length: 1002 }, (_, i) => ({ name: `vm${i}` })),
  );
  const calls: number[] = [];
  const del = inv.delete.bind(inv);
  inv.delete = (path, ids) => {
    calls.push(ids.length);
    return del(path, ids);
  };
  const { ctx } = context(inv);
  await deleteOrphans(ctx, VMS, byName(existing), [want("vm0", {}), want("vm1001", {})]);
  assert.deepEqual(calls, [500, 500]);
  assert.deepEqual(inv.all(VMS).map((o) => o.name).sort(), ["vm0", "vm1001"]);
  assert.equal(ctx.result.deleted, 1000);
});

Deno.test("reconcile: big writes go in chunks of at most 500 objects and about 512 KiB; every object is written once", async () => {
  const inv = new FakeInventory();
  const sizes: number[] = [];
  const create = inv.create.bind(inv);
  inv.create = (path, bodies) => {
    sizes.push(bodies.length);
    return create(path, bodies);
  };
  const { ctx } = context(inv);
  // 1,001 small objects: 500 + 500 + 1.
  const desired = Array.from({ length: 1001 }, (_, i) => want(`vm${i}`, {}));
  const { objects } = await reconcile(ctx, { path: VMS, existing: new Map(), desired });
  assert.deepEqual(sizes, [500, 500, 1]);
  assert.equal(inv.all(VMS).length, 1001);
  assert.equal(ctx.result.created, 1001);
  assert.equal(objects.size, 1001);
  // Each key maps to the object made for it, not a neighbour's.
  for (const [key, o] of objects) assert.equal(o.name, key);

  // Three objects of 300 KiB: no chunk may pass 512 KiB, so one each.
  const big = new FakeInventory();
  const bigSizes: number[] = [];
  const bigCreate = big.create.bind(big);
  big.create = (path, bodies) => {
    bigSizes.push(bodies.length);
    return bigCreate(path, bodies);
  };
  const b = context(big);
  const pad = "x".repeat(300 * 1024);
  await reconcile(b.ctx, {
    path: VMS,
    existing: new Map(),
    desired: [want("p", { comments: pad }), want("q", { comments: pad }), want("r", {})],
  });
  assert.deepEqual(bigSizes, [1, 2]);
  assert.equal(big.all(VMS).length, 3);

  // One object past 512 KiB alone is one write of it, never an empty write before it.
  bigSizes.length = 0;
  const huge = context(big);
  await reconcile(huge.ctx, {
    path: VMS,
    existing: new Map(),
    desired: [want("h", { comments: "y".repeat(600 * 1024) })],
  });
  assert.deepEqual(bigSizes, [1]);
  assert.equal(huge.ctx.result.created, 1);
});

Deno.test("reconcile: a refused object is reported in the inventory's words; the rest of its batch is written and counted", async () => {
  const inv = new FakeInventory();
  const existing = seed(inv, VMS, [{ name: "a", memory: 1 }, { name: "b", memory: 1 }]);
  inv.refuse = (_path, body) =>
    body.memory === -1 ? { memory: ["Ensure this value is greater than or equal to 0."] } : null;
  const { ctx, heard } = context(inv);
  const { objects } = await reconcile(ctx, {
    path: VMS,
    existing: byName(existing),
    desired: [
      want("a", { memory: -1 }),
      want("b", { memory: 2 }),
      want("c", { memory: -1 }),
      want("d", { memory: 3 }),
    ],
  });
  assert.deepEqual(heard.failed.map((f) => f.object).sort(), [
    "virtual machine a",
    "virtual machine c",
  ]);
  const c = heard.failed.find((f) => f.object === "virtual machine c")!;
  assert.equal(
    c.message,
    `bulk write on ${VMS}: HTTP 400, the inventory answered ` +
      `{"memory":["Ensure this value is greater than or equal to 0."]}`,
  );
  assert.equal(c.bodyExcerpt, `{"memory":["Ensure this value is greater than or equal to 0."]}`);
  assert.equal(c.status, 400);
  const rows = byName(inv.all(VMS));
  assert.deepEqual([...rows.keys()].sort(), ["a", "b", "d"]);
  assert.equal(rows.get("a")!.memory, 1, "the refused update left it as it was");
  assert.equal(rows.get("b")!.memory, 2);
  assert.deepEqual(ctx.result, { created: 1, updated: 1, unchanged: 0, deleted: 0, failed: 0 });
  // The refused update still anchors later stages on the object as it was; the refused create
  // has none.
  assert.equal(objects.get("a")!.id, 1000);
  assert.equal(objects.has("c"), false);
  assert.equal(objects.get("d")!.name, "d");
});

Deno.test("reconcile: a refused create is adopted (counted updated) or left with its owner as a conflict (not counted, not failed)", async () => {
  const inv = new FakeInventory();
  const held = seed(inv, "ipam/ip-addresses/", [{ address: "10.0.0.9/24" }])[0];
  inv.refuse = (_path, body) =>
    String(body.address).startsWith("10.0.0.") ? { address: ["Duplicate IP address"] } : null;
  const { ctx, heard } = context(inv);
  const seen: string[] = [];
  const options: ReconcileOptions = {
    path: "ipam/ip-addresses/",
    existing: new Map(),
    desired: ["10.0.0.9/24", "10.0.0.7/24", "10.1.0.1/24"].map((address) => ({
      key: address,
      body: { address },
      label: `IP address ${address}`,
    })),
    resolveRefused: (desired, answer) => {
      seen.push(`${desired.key} ${JSON.stringify(answer)}`);
      return Promise.resolve(desired.key === "10.0.0.9/24" ? held : "conflict");
    },
  };
  const { objects } = await reconcile(ctx, options);
  assert.deepEqual(seen, [
    `10.0.0.9/24 {"address":["Duplicate IP address"]}`,
    `10.0.0.7/24 {"address":["Duplicate IP address"]}`,
  ]);
  assert.deepEqual(ctx.result, { created: 1, updated: 1, unchanged: 0, deleted: 0, failed: 0 });
  assert.deepEqual(heard.failed, []);
  assert.equal(objects.get("10.0.0.9/24")!.id, held.id);
  assert.equal(objects.has("10.0.0.7/24"), false);
  assert.equal(objects.get("10.1.0.1/24")!.address, "10.1.0.1/24");
});

Deno.test("reconcile: a whole-batch failure (no per-item answer) names the one object; nothing is counted", async () => {
  const inv = new FakeInventory();
  inv.create = () =>
    Promise.reject(
      Object.assign(new Error(`bulk write on ${VMS}: HTTP 500`), { status: 500 }),
    );
  const { ctx } = context(inv);
  await assert.rejects(
    reconcile(ctx, { path: VMS, existing: new Map(), desired: [want("a", {})] }),
    (e: Error & { object?: string }) => e.object === "virtual machine a",
  );
  assert.equal(ctx.result.created, 0);
  // Of two objects, neither is named: the failure was not about the first one.
  const two = context(inv);
  await assert.rejects(
    reconcile(two.ctx, { path: VMS, existing: new Map(), desired: [want("a", {}), want("b", {})] }),
    (e: Error & { object?: string }) => e.object === undefined,
  );
});

/** The fake with NetBox 4.6's detail read (ETag = last_updated) and If-Match PATCH. */
class GuardedInventory extends FakeInventory {
  readonly guarded: { body: InventoryBody; etag: string | null }[] = [];
  /** Edits applied by "someone else" just before each guarded write (a 412 follows). */
  interfere: ((id: number) => void)[] = [];
  #clock = 100;
  stamp(path: string, id: number, fields: InventoryBody) {
    const o = this.table(path).get(id)!;
    Object.assign(o, fields, { last_updated: `2026-01-01T00:00:${this.#clock++}Z` });
  }
  readOne(path: string, id: number) {
    const o = this.table(path).get(id);
    return Promise.resolve(
      o ? { object: structuredClone(o), etag: String(o.last_updated) } : null,
    );
  }
  updateGuarded(
    path: string,
    body: InventoryBody & { id: number },
    etag: string | null,
  ): Promise<InventoryObject | "changed" | "gone"> {
    this.guarded.push({ body: structuredClone(body), etag });
    this.interfere.shift()?.(body.id);
    const o = this.table(path).get(body.id);
    if (!o) return Promise.resolve("gone" as const);
    if (etag !== String(o.last_updated)) return Promise.resolve("changed" as const);
    const { id: _id, ...fields } = body;
    this.stamp(path, body.id, fields);
    this.writes.push(`PATCH ${path}${body.id} (If-Match)`);
    return Promise.resolve(structuredClone(this.table(path).get(body.id)!));
  }
}

Deno.test("reconcile: an object edited since the stage read it is re-read and written alone with If-Match; the admin's edit of other fields stays", async () => {
  const inv = new GuardedInventory();
  const read = seed(inv, VMS, [
    { name: "a", memory: 1024, comments: "", last_updated: "2026-01-01T00:00:00Z" },
    { name: "b", memory: 1024, comments: "", last_updated: "2026-01-01T00:00:00Z" },
    { name: "c", memory: 1024, comments: "", last_updated: "2026-01-01T00:00:00Z" },
  ]);
  // After the stage's read: someone edits a's comments, and deletes c.
  inv.stamp(VMS, 1000, { comments: "hand edit" });
  inv.table(VMS).delete(1002);
  const { ctx, heard } = context(inv);
  const { objects } = await reconcile(ctx, {
    path: VMS,
    existing: byName(read),
    desired: [
      want("a", { memory: 2048 }),
      want("b", { memory: 2048 }),
      want("c", { memory: 2048 }),
    ],
  });
  assert.deepEqual(inv.guarded, [{
    body: { id: 1000, memory: 2048 },
    etag: "2026-01-01T00:00:100Z",
  }]);
  assert.deepEqual(inv.writes, [`PATCH ${VMS}1000 (If-Match)`, `PATCH ${VMS}1001`]);
  const a = inv.table(VMS).get(1000)!;
  assert.equal(a.memory, 2048);
  assert.equal(a.comments, "hand edit");
  assert.equal(inv.table(VMS).has(1002), false, "a deleted object is not made again");
  assert.deepEqual(heard.edited, [
    {
      object: "virtual machine a",
      detail: "edited in the inventory while the sync ran (comments); re-read and " +
        "the owner policy applied again: wrote memory; kept the edit of comments",
    },
    {
      object: "virtual machine c",
      detail: "deleted from the inventory while the sync ran: not written in this run",
    },
  ]);
  assert.deepEqual(ctx.result, { created: 0, updated: 2, unchanged: 0, deleted: 0, failed: 0 });
  assert.equal(objects.get("a")!.memory, 2048);
  // The one deleted meanwhile anchors on what the stage read.
  assert.equal(objects.get("c")!.id, 1002);
});

Deno.test("reconcile: an edit that already holds what the sync writes is not written; one edited at every attempt is reported failed after three", async () => {
  const inv = new GuardedInventory();
  const read = seed(inv, VMS, [
    { name: "a", memory: 1024, last_updated: "2026-01-01T00:00:00Z" },
    { name: "b", memory: 1024, last_updated: "2026-01-01T00:00:00Z" },
  ]);
  inv.stamp(VMS, 1000, { memory: 2048 });
  inv.stamp(VMS, 1001, { comments: "x" });
  // b is edited again just before each of its guarded writes.
  inv.interfere = [1, 2, 3].map((n) => (id: number) => inv.stamp(VMS, id, { comments: `x${n}` }));
  const { ctx, heard } = context(inv);
  await reconcile(ctx, {
    path: VMS,
    existing: byName(read),
    desired: [want("a", { memory: 2048 }), want("b", { memory: 2048 })],
  });
  assert.equal(inv.guarded.length, 3, "three attempts at b, none at a");
  assert.ok(inv.guarded.every((g) => g.body.id === 1001));
  assert.equal(inv.table(VMS).get(1001)!.memory, 1024);
  assert.deepEqual(heard.edited, [{
    object: "virtual machine a",
    detail: "edited in the inventory while the sync ran (memory); " +
      "re-read: it already holds what the sync writes, nothing written",
  }]);
  assert.deepEqual(heard.failed.map((f) => [f.object, f.message]), [[
    "virtual machine b",
    "virtual machine b was edited again at each of 3 attempts",
  ]]);
  assert.deepEqual(ctx.result, { created: 0, updated: 0, unchanged: 1, deleted: 0, failed: 0 });
});

Deno.test("reconcile: the run's own earlier write is no edit, a dry run never re-checks, and an object without last_updated is not watched", async () => {
  const inv = new GuardedInventory();
  const read = seed(inv, VMS, [
    { name: "a", memory: 1024, last_updated: "2026-01-01T00:00:00Z" },
    { name: "b", memory: 1024 },
  ]);
  inv.stamp(VMS, 1000, { vcpus: 1 });
  const own = inv.table(VMS).get(1000)!.last_updated;
  (inv as InventoryApi).isOwnWrite = (_path, id, lastUpdated) => id === 1000 && lastUpdated === own;
  const lists: string[] = [];
  const list = inv.list.bind(inv);
  inv.list = (path, query) => {
    lists.push(JSON.stringify(query));
    return list(path, query);
  };
  const { ctx, heard } = context(inv);
  await reconcile(ctx, {
    path: VMS,
    existing: byName(read),
    desired: [want("a", { memory: 2048 }), want("b", { memory: 2048 })],
  });
  assert.deepEqual(lists, [JSON.stringify({ id: ["1000"], fields: "id,last_updated" })]);
  assert.deepEqual(inv.guarded, []);
  assert.deepEqual(heard.edited, []);
  assert.deepEqual(inv.writes, [`PATCH ${VMS}1000`, `PATCH ${VMS}1001`]);

  const dry = new GuardedInventory();
  const dryRead = seed(dry, VMS, [{ name: "a", memory: 1, last_updated: "2026-01-01T00:00:00Z" }]);
  dry.stamp(VMS, 1000, { comments: "edit" });
  const d = context(dry, true);
  await reconcile(d.ctx, {
    path: VMS,
    existing: byName(dryRead),
    desired: [want("a", { memory: 2 })],
  });
  assert.deepEqual(dry.guarded, []);
  assert.deepEqual(d.heard.edited, []);
});

Deno.test("reconcile: on NetBox 4.6 an edited object's tags go as add_tags and are not reported kept; a refused guarded write is that object's failure", async () => {
  const inv = new GuardedInventory();
  (inv as InventoryApi).apiVersion = () => "4.6";
  const read = seed(inv, VMS, [
    { name: "a", memory: 1, comments: "", tags: [{ id: 1, display: "prod" }], last_updated: "x" },
    { name: "b", memory: 1, last_updated: "x" },
    { name: "c", memory: 1, last_updated: "x" },
  ]);
  // After the read: an admin adds their own tag 9 and a comment to a; b and c are touched too.
  inv.stamp(VMS, 1000, { tags: [{ id: 1, display: "prod" }, { id: 9, display: "mine" }] });
  inv.stamp(VMS, 1000, { comments: "hand" });
  inv.stamp(VMS, 1001, { comments: "hand" });
  inv.stamp(VMS, 1002, { comments: "hand" });
  const guarded = inv.updateGuarded.bind(inv);
  inv.updateGuarded = (path, body, etag) =>
    body.id === 1001
      ? Promise.reject(
        Object.assign(new Error(`update ${path}${body.id}: HTTP 400`), {
          status: 400,
          refused: true,
        }),
      )
      : guarded(path, body, etag);
  const { ctx, heard } = context(inv);
  await reconcile(ctx, {
    path: VMS,
    existing: byName(read),
    desired: [
      want("a", { memory: 2, tags: [1, 2] }),
      want("b", { memory: 2 }),
      want("c", { memory: 2 }),
    ],
    managedTags: new Set([1, 2]),
  });
  assert.deepEqual(inv.guarded.map((g) => g.body), [
    { id: 1000, memory: 2, add_tags: [2] },
    { id: 1002, memory: 2 },
  ]);
  assert.deepEqual(heard.edited[0], {
    object: "virtual machine a",
    detail: "edited in the inventory while the sync ran (comments, tags); re-read and the owner " +
      "policy applied again: wrote add_tags, memory; kept the edit of comments",
  });
  assert.deepEqual(heard.failed.map((f) => [f.object, f.message]), [[
    "virtual machine b",
    `update ${VMS}1001: HTTP 400`,
  ]]);
  // The refusal of b stops neither c nor the stage.
  assert.equal(inv.table(VMS).get(1002)!.memory, 2);
  assert.equal(inv.table(VMS).get(1001)!.memory, 1);
  assert.deepEqual(ctx.result, { created: 0, updated: 2, unchanged: 0, deleted: 0, failed: 0 });
});

Deno.test("reconcile: a field holding a JSON object is compared and written whole, beside custom fields", async () => {
  const inv = new FakeInventory();
  const existing = seed(inv, VMS, [
    { name: "a", local_context_data: { schedule: "daily", keep: 3 }, custom_fields: { x: 1 } },
  ]);
  const { ctx } = context(inv);
  await reconcile(ctx, {
    path: VMS,
    existing: byName(existing),
    desired: [want("a", { local_context_data: { schedule: "weekly" }, custom_fields: { x: 1 } })],
  });
  const a = inv.table(VMS).get(1000)!;
  assert.deepEqual(a.local_context_data, { schedule: "weekly" });
  assert.deepEqual(a.custom_fields, { x: 1 });
  assert.equal(ctx.result.updated, 1);
});

Deno.test("reconcile: a failure the client pins on one item of a batch names that item", async () => {
  const inv = new FakeInventory();
  inv.create = () =>
    Promise.reject(
      Object.assign(new Error(`bulk write on ${VMS}: HTTP 400`), { status: 400, itemIndex: 1 }),
    );
  const { ctx } = context(inv);
  await assert.rejects(
    reconcile(ctx, {
      path: VMS,
      existing: new Map(),
      desired: [want("a", {}), want("b", {}), want("c", {})],
    }),
    (e: Error & { object?: string }) => e.object === "virtual machine b",
  );
  // A failure that already names its object keeps that name.
  inv.create = () =>
    Promise.reject(
      Object.assign(new Error(`bulk write on ${VMS}: HTTP 400`), {
        status: 400,
        itemIndex: 0,
        object: "tag prod",
      }),
    );
  await assert.rejects(
    reconcile(context(inv).ctx, {
      path: VMS,
      existing: new Map(),
      desired: [want("a", {}), want("b", {})],
    }),
    (e: Error & { object?: string }) => e.object === "tag prod",
  );
});

Deno.test("reconcile: refId reads the id of a rendered reference, a bare id, or null for anything else", () => {
  assert.equal(refId({ id: 3, url: "x", display: "lab" }), 3);
  assert.equal(refId(7), 7);
  for (const none of [null, undefined, "7", { name: "x" }, { id: "3" }]) {
    assert.strictEqual(refId(none), null, JSON.stringify(none));
  }
});

Deno.test("reconcile: indexBy keeps the lowest id of objects sharing a key and skips those without one", () => {
  const index = indexBy(
    [
      { id: 9, name: "a" },
      { id: 3, name: "a" },
      { id: 5, name: "b" },
      { id: 1, name: null },
    ],
    (o) => typeof o.name === "string" ? o.name : null,
  );
  assert.deepEqual([...index].map(([k, o]) => [k, o.id]), [["a", 3], ["b", 5]]);
});

Deno.test("reconcile: a bulk update's answer is paired with its objects by id, not by position (NetBox answers in the model's ordering)", async () => {
  const inv = new FakeInventory();
  const existing = seed(inv, VMS, [
    { name: "c", memory: 1 },
    { name: "a", memory: 1 },
    { name: "b", memory: 1 },
  ]);
  const { ctx } = context(inv);
  const { objects } = await reconcile(ctx, {
    path: VMS,
    existing: byName(existing),
    // The request names c, a, b; the inventory answers a, b, c.
    desired: [want("c", { memory: 30 }), want("a", { memory: 10 }), want("b", { memory: 20 })],
  });
  assert.deepEqual(
    ["a", "b", "c"].map((k) => [k, objects.get(k)?.name, objects.get(k)?.memory]),
    [["a", "a", 10], ["b", "b", 20], ["c", "c", 30]],
  );
  assert.deepEqual(ctx.result, { created: 0, updated: 3, unchanged: 0, deleted: 0, failed: 0 });
});

Deno.test("reconcile: a bulk update refused without a position is split until each refused object stands alone; the rest is written once", async () => {
  const inv = new FakeInventory();
  const existing = seed(
    inv,
    VMS,
    ["a", "b", "c", "d", "e", "f", "g"].map((name) => ({ name, memory: 1 })),
  );
  inv.refuse = (_path, body) => body.memory === -1 ? { memory: ["Too small."] } : null;
  const { ctx, heard } = context(inv);
  const memory: Record<string, number> = { a: 2, b: -1, c: 3, d: 4, e: 5, f: -1, g: 6 };
  await reconcile(ctx, {
    path: VMS,
    existing: byName(existing),
    desired: Object.entries(memory).map(([name, m]) => want(name, { memory: m })),
  });
  assert.deepEqual(heard.failed.map((f) => [f.object, f.bodyExcerpt]), [
    ["virtual machine b", `{"memory":["Too small."]}`],
    ["virtual machine f", `{"memory":["Too small."]}`],
  ]);
  const rows = byName(inv.all(VMS));
  assert.deepEqual(
    [...rows.values()].map((o) => [o.name, o.memory]).sort(),
    [["a", 2], ["b", 1], ["c", 3], ["d", 4], ["e", 5], ["f", 1], ["g", 6]],
  );
  // Each good object is written once: refused requests wrote nothing.
  const patched = inv.writes.filter((w) => w.startsWith("PATCH"));
  assert.deepEqual([patched.length, new Set(patched).size], [5, 5]);
  assert.deepEqual(ctx.result, { created: 0, updated: 5, unchanged: 0, deleted: 0, failed: 0 });
});
