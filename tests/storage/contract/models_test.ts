import assert from "node:assert/strict";
import type { ObjectState, ObjectWrite, StoredObject } from "../../../storage/ports.ts";
import type { Storage } from "../../../storage/ports.ts";
import { contract } from "./_backends.ts";

const M = "dcim.site";

/** A site's state: indexed by status, unique by slug. */
function site(id: number, slug: string, status = "active"): ObjectState {
  const record: StoredObject = { id, slug, status };
  return { record, indexes: [["status", status]], uniques: [["slug", [slug]]] };
}

async function insert(storage: Storage, state: ObjectState) {
  const write: ObjectWrite = { model: M, id: state.record.id, prev: null, next: state };
  return await storage.models.commit([write]);
}

async function current(storage: Storage, id: number) {
  const got = (await storage.models.get(M, id))!;
  const s = site(id, String(got.record.slug), String(got.record.status));
  return { ...s, version: got.version };
}

contract("model store", {
  "ids are reserved in disjoint consecutive runs, even concurrently": async ({ storage }) => {
    const firsts = await Promise.all(
      Array.from({ length: 6 }, () => storage.models.allocateIds(M, 5)),
    );
    const taken = firsts.flatMap((f) => [0, 1, 2, 3, 4].map((i) => f + i));
    assert.equal(new Set(taken).size, 30);
    assert.equal(Math.min(...firsts), 1);
    assert.equal(await storage.models.allocateIds("other.model", 1), 1, "sequences per model");
  },

  "a unique value is taken by one writer only": async ({ storage }) => {
    const raced = await Promise.all([insert(storage, site(1, "x")), insert(storage, site(2, "x"))]);
    assert.deepEqual(raced.map((r) => r.ok).sort(), [false, true]);
    assert.equal(await storage.models.count(M), 1);
    const winner = await storage.models.idByUnique(M, "slug", ["x"]);
    assert.ok(winner === 1 || winner === 2);
    assert.equal(await storage.models.idByUnique(M, "slug", ["y"]), null);
  },

  "a write over a stale version fails and changes nothing": async ({ storage }) => {
    await insert(storage, site(1, "a"));
    const read = await current(storage, 1);
    const first = await storage.models.commit([
      { model: M, id: 1, prev: read, next: site(1, "b") },
    ]);
    assert.deepEqual(first, { ok: true });
    const stale = await storage.models.commit([
      { model: M, id: 1, prev: read, next: site(1, "c") },
    ]);
    assert.deepEqual(stale, { ok: false });
    assert.equal((await storage.models.get(M, 1))!.record.slug, "b");
    // The renamed-away value is free again; the new one is held.
    assert.equal(await storage.models.idByUnique(M, "slug", ["a"]), null);
    assert.equal(await storage.models.idByUnique(M, "slug", ["b"]), 1);
    assert.deepEqual(await insert(storage, site(2, "b")), { ok: false });
    assert.deepEqual(await insert(storage, site(2, "a")), { ok: true });
  },

  "one commit is all or nothing": async ({ storage }) => {
    await insert(storage, site(1, "held"));
    const result = await storage.models.commit([
      { model: M, id: 2, prev: null, next: site(2, "free") },
      { model: M, id: 3, prev: null, next: site(3, "held") },
    ]);
    assert.deepEqual(result, { ok: false });
    assert.equal(await storage.models.get(M, 2), null);
    assert.equal(await storage.models.count(M), 1);
  },

  "indexes follow every change, and a delete removes all of it": async ({ storage }) => {
    for (let id = 1; id <= 5; id++) {
      await insert(storage, site(id, `s${id}`, id % 2 ? "active" : "planned"));
    }
    const models = storage.models;
    assert.deepEqual(await models.idsByIndex(M, "status", "active"), [1, 3, 5]);
    assert.equal(await models.countByIndex(M, "status", "active"), 3);
    assert.deepEqual(
      await models.pageByIndex(M, "status", "active", {
        offset: 1,
        limit: 5,
        reverse: false,
        ordered: false,
      }),
      [3, 5],
    );
    const three = await current(storage, 3);
    await models.commit([{ model: M, id: 3, prev: three, next: site(3, "s3", "planned") }]);
    assert.deepEqual(await models.idsByIndex(M, "status", "active"), [1, 5]);
    assert.deepEqual(await models.idsByIndex(M, "status", "planned"), [2, 3, 4]);
    const five = await current(storage, 5);
    assert.deepEqual(await models.commit([{ model: M, id: 5, prev: five, next: null }]), {
      ok: true,
    });
    assert.equal(await models.get(M, 5), null);
    assert.equal(await models.count(M), 4);
    assert.equal(await models.countByIndex(M, "status", "active"), 1);
    assert.equal(await models.idByUnique(M, "slug", ["s5"]), null);
  },

  "reads: getMany keeps the asked order, scan and page go by id": async ({ storage }) => {
    for (let id = 1; id <= 4; id++) await insert(storage, site(id, `s${id}`));
    const models = storage.models;
    assert.deepEqual((await models.getMany(M, [3, 9, 1])).map((r) => r.id), [3, 1]);
    assert.deepEqual((await models.scan(M)).map((r) => r.id), [1, 2, 3, 4]);
    assert.deepEqual((await models.page(M, 1, 2, false)).map((r) => r.id), [2, 3]);
    assert.deepEqual((await models.page(M, 0, 2, true)).map((r) => r.id), [4, 3]);
  },

  "the local secret is generated once, whoever asks first": async (opened) => {
    const [a, b] = await Promise.all([
      opened.storage.models.localSecret(() => "from-a"),
      opened.storage.models.localSecret(() => "from-b"),
    ]);
    assert.equal(a, b);
    const other = await opened.reopen();
    assert.equal(await other.models.localSecret(() => "later"), a);
  },

  "plan splits writes into groups that each commit": async ({ storage }) => {
    const writes: ObjectWrite[] = Array.from({ length: 400 }, (_, i) => ({
      model: M,
      id: i + 1,
      prev: null,
      next: site(i + 1, `bulk-${i}`),
    }));
    const groups = storage.models.plan(writes);
    assert.equal(groups.flat().length, 400);
    for (const group of groups) assert.deepEqual(await storage.models.commit(group), { ok: true });
    assert.equal(await storage.models.count(M), 400);
  },

  "sort keys order strings naturally and case-insensitively": ({ storage }) => {
    const m = storage.models;
    const sorted = ["vm10", "VM2", "vm1"].sort((a, b) =>
      m.compareSortKeys(m.sortKey(a), m.sortKey(b))
    );
    assert.deepEqual(sorted, ["vm1", "VM2", "vm10"]);
    return Promise.resolve();
  },
});
