/**
 * Planning bulk writes into atomics: as few as KV's limits allow, and never one KV refuses
 * (keys near 400 characters of NULs and astral characters included).
 */
import assert from "node:assert/strict";
import { KvModelStore } from "../../storage/kv/models.ts";
import type { IndexEntry, ObjectWrite, OrderedEntry } from "../../storage/ports.ts";

type Versioned = { record: Record<string, unknown> & { id: number }; version: string };

const MODEL = "virtualization.virtualmachine";

function vm(id: number, name: string, shared: number): ObjectWrite {
  const indexes: IndexEntry[] = [["cluster", shared], ["tags", shared], ["name", name]];
  const ordered: OrderedEntry[] = [["*", 0, name], ["cluster", shared, name]];
  return {
    model: MODEL,
    id,
    prev: null,
    next: { record: { id, name }, indexes, uniques: [["cluster+name", [shared, name]]], ordered },
  };
}

Deno.test("plan: every group commits, whatever the keys hold; shared counters cost once", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvModelStore(kv);
    const hostile = ["\0".repeat(390), "😀".repeat(195), "é".repeat(390), "x".repeat(399)];
    const writes = Array.from(
      { length: 400 },
      (_, i) => vm(i + 1, `${hostile[i % 4].slice(0, 380)}${i}`, 1),
    );
    const groups = store.plan(writes);
    for (const group of groups) assert.ok((await store.commit(group)).ok);
    assert.equal(await store.count(MODEL), 400);
    assert.equal(await store.countByIndex(MODEL, "cluster", 1), 400);

    // Small keys: the 100-check limit binds (one unique check each), not the counters.
    const small = Array.from({ length: 500 }, (_, i) => vm(1000 + i, `vm${i}`, 2));
    assert.equal(store.plan(small).length, 5);
    // Twenty indexed values shared by every object: twenty counter sums per atomic, so about
    // 47 objects of 21 mutations fit one (counting a sum per object made it 24).
    const shared = Array.from({ length: 470 }, (_, i): ObjectWrite => ({
      model: MODEL,
      id: 5000 + i,
      prev: null,
      next: {
        record: { id: 5000 + i },
        indexes: Array.from({ length: 20 }, (_, k): IndexEntry => [`f${k}`, 1]),
        uniques: [],
        ordered: [],
      },
    }));
    const planned = store.plan(shared);
    assert.ok(planned.length <= 11, `atomics for 470 objects: ${planned.length}`);
    for (const group of planned) assert.ok((await store.commit(group)).ok);
    assert.equal(await store.countByIndex(MODEL, "f7", 1), 470);
  } finally {
    kv.close();
  }
});

Deno.test("plan: large records split the atomics, measured by recordSize before their write or not", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvModelStore(kv);
    // 40 records of 50,000 characters: 2 MB, where one atomic takes 800 KiB. A few small index
    // entries each, so the mutation and check limits would put all 40 in one atomic.
    const big = (id: number): ObjectWrite => {
      const record = { id, name: `vm${id}`, comments: "x".repeat(50_000) };
      return {
        model: MODEL,
        id,
        prev: null,
        next: { record, indexes: [["name", `vm${id}`]], uniques: [], ordered: [] },
      };
    };
    // The engine's size check measures each record first (write.ts, sizeError) and the plan
    // takes that measure; a write nothing measured is measured by the plan.
    const measured = Array.from({ length: 40 }, (_, i) => big(i + 1));
    for (const w of measured) assert.ok(store.recordSize(w.next!.record) < store.maxRecordBytes);
    const unmeasured = Array.from({ length: 40 }, (_, i) => big(100 + i));
    for (const writes of [measured, unmeasured]) {
      const groups = store.plan(writes);
      assert.ok(groups.length >= 3, `atomics for 2 MB of records: ${groups.length}`);
      for (const group of groups) assert.ok((await store.commit(group)).ok);
    }
    assert.equal(await store.count(MODEL), 80);
    const back = await store.getMany(MODEL, [1, 139]);
    assert.deepEqual(back.map((r) => [r.id, String(r.comments).length]), [[1, 50_000], [
      139,
      50_000,
    ]]);
  } finally {
    kv.close();
  }
});

Deno.test("plan: a record measured and written, then made larger, is measured again for its next write", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvModelStore(kv);
    const records = Array.from({ length: 40 }, (_, i) => ({ id: i + 1, name: `vm${i + 1}` }));
    const write = (record: { id: number; name: string }, prev: Versioned | null): ObjectWrite => ({
      model: MODEL,
      id: record.id,
      prev: prev &&
        { record: prev.record, indexes: [], uniques: [], ordered: [], version: prev.version },
      next: { record, indexes: [], uniques: [], ordered: [] },
    });
    // Small when measured and created: one atomic.
    for (const r of records) store.recordSize(r);
    const created = store.plan(records.map((r) => write(r, null)));
    assert.equal(created.length, 1);
    assert.ok((await store.commit(created[0])).ok);
    // The same objects, 50,000 characters larger each: 2 MB, more than one atomic takes.
    const stored = await Promise.all(records.map((r) => store.get(MODEL, r.id)));
    for (const r of records) Object.assign(r, { comments: "y".repeat(50_000) });
    const updated = store.plan(records.map((r, i) => write(r, stored[i])));
    assert.ok(updated.length >= 3, `atomics for 2 MB of records: ${updated.length}`);
    for (const group of updated) assert.ok((await store.commit(group)).ok);
    const back = await store.getMany(MODEL, [1, 40]);
    assert.deepEqual(back.map((r) => String(r.comments).length), [50_000, 50_000]);
  } finally {
    kv.close();
  }
});
