/**
 * createWithFreshIds: new objects whose ids are reserved by the atomic writing them (the change
 * log's entries, one atomic fewer per request), never shared with another writer of the model,
 * in this process or another one on the same KV.
 */
import assert from "node:assert/strict";
import { KvModelStore } from "../../storage/kv/models.ts";
import { keys } from "../../storage/kv/keys.ts";
import type { ObjectWrite } from "../../storage/ports.ts";

const M = "core.objectchange";

const entries = (first: number, count: number, tag = "x"): ObjectWrite[] =>
  Array.from({ length: count }, (_, i) => ({
    model: M,
    id: first + i,
    prev: null,
    next: {
      record: { id: first + i, tag, request_id: `r-${tag}` },
      indexes: [["request_id", `r-${tag}`], ["changed_object_id", i, false]],
      uniques: [],
    },
  }));

Deno.test("fresh ids are reserved by the atomic writing the objects, disjoint from allocateIds and from concurrent calls", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvModelStore(kv);
    const results = await Promise.all([
      store.createWithFreshIds(M, 400, (first) => entries(first, 400, "a")),
      store.allocateIds(M, 5),
      store.createWithFreshIds(M, 3, (first) => entries(first, 3, "b")),
    ]);
    const [a, allocated, b] = results;
    assert.ok(a.ok && b.ok);
    const taken = [
      ...Array.from({ length: 400 }, (_, i) => a.first + i),
      ...Array.from({ length: 5 }, (_, i) => allocated + i),
      ...Array.from({ length: 3 }, (_, i) => b.first + i),
    ];
    assert.equal(new Set(taken).size, 408);
    assert.equal(Math.max(...taken), 408);
    assert.equal((await kv.get<number>(keys.inventorySequence(M))).value, 408);
    // What was written reads back, under the ids given, with the model's count and counters.
    assert.equal(await store.count(M), 403);
    const a400 = await store.getMany(M, [a.first, a.first + 399]);
    assert.deepEqual(a400.map((r) => r.tag), ["a", "a"]);
    assert.equal(await store.countByIndex(M, "request_id", "r-a"), 400);
    assert.equal(await store.countByIndex(M, "changed_object_id", 0), 0, "kept uncounted");
    assert.deepEqual(
      await store.idsByIndex(M, "changed_object_id", 0),
      [a.first, b.first].sort(
        (x, y) => x - y,
      ),
    );
  } finally {
    kv.close();
  }
});

Deno.test("another process taking ids between the read and the commit makes the writes again from the next free id", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const other = new KvModelStore(kv);
    let raced = false;
    const store = new KvModelStore(kv, {
      // Held before its first commit until the other process has reserved ids of the model.
      beforeCommit: async () => {
        if (raced) return;
        raced = true;
        assert.equal(await other.allocateIds(M, 10), 1);
      },
    });
    const made: number[] = [];
    const result = await store.createWithFreshIds(M, 2, (first) => {
      made.push(first);
      return entries(first, 2);
    });
    assert.deepEqual(made, [1, 11]);
    assert.deepEqual(result, { ok: true, first: 11 });
    assert.equal(await store.count(M), 2);
    assert.deepEqual((await store.getMany(M, [1, 2, 11, 12])).map((r) => r.id), [11, 12]);
    assert.equal((await kv.get<number>(keys.inventorySequence(M))).value, 12);
  } finally {
    kv.close();
  }
});

Deno.test("a write whose own check fails answers ok false at once and reserves nothing", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvModelStore(kv);
    const claim = (first: number): ObjectWrite[] => [{
      model: M,
      id: first,
      prev: null,
      next: { record: { id: first }, indexes: [], uniques: [["slug", ["taken"]]] },
    }];
    assert.deepEqual(await store.createWithFreshIds(M, 1, claim), { ok: true, first: 1 });
    let calls = 0;
    const again = await store.createWithFreshIds(M, 1, (first) => (calls++, claim(first)));
    assert.deepEqual(again, { ok: false, first: 2 });
    assert.equal(calls, 1);
    assert.equal((await kv.get<number>(keys.inventorySequence(M))).value, 1);
    assert.equal(await store.count(M), 1);
  } finally {
    kv.close();
  }
});

Deno.test("writes filling whole atomics leave room in the first for the sequence", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvModelStore(kv);
    // One mutation each: the first atomic holds as many as KV allows, less the sequence's.
    const bare = (first: number): ObjectWrite[] =>
      Array.from({ length: 2_500 }, (_, i) => ({
        model: M,
        id: first + i,
        prev: null,
        next: { record: { id: first + i }, indexes: [], uniques: [] },
      }));
    assert.deepEqual(await store.createWithFreshIds(M, 2_500, bare), { ok: true, first: 1 });
    assert.equal(await store.count(M), 2_500);
    assert.equal((await kv.get<number>(keys.inventorySequence(M))).value, 2_500);
  } finally {
    kv.close();
  }
});
