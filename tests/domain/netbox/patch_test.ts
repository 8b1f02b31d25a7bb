/**
 * The engine's direct changes to stored fields (domain/netbox/engine/patch.ts), as plugin code and
 * the models' rules call them through the engine's API: an object that is not there is passed
 * over (no record made, no throw), and an object the change would leave as it is keeps its
 * last_updated (no write); one that keeps losing to concurrent writes is given up, bounded.
 */
import assert from "node:assert/strict";
import { ModelEngine } from "../../../domain/netbox/engine.ts";
import { MemoryLogger } from "../../../infra/logger.ts";
import { FaultyStore, ITEM, MODEL } from "./_faulty_store.ts";

async function engine() {
  const kv = await Deno.openKv(":memory:");
  const clock = { now: Date.parse("2026-01-01T00:00:00Z") };
  // patchStored gives up after fifty lost commits: a loop past sixty has no end.
  const store = new FaultyStore(kv);
  store.runaway = 60;
  const e = new ModelEngine({ store, logger: new MemoryLogger(), now: () => clock.now })
    .register(ITEM);
  return { kv, store, clock, e };
}

Deno.test("patch: patchStored of an id no object has answers null and makes no record", async () => {
  const { kv, e } = await engine();
  try {
    assert.equal(await e.patchStored(MODEL, 41, { note: "x" }), null);
    assert.equal(await e.get(MODEL, 41), null);
    assert.deepEqual(await e.find(MODEL), []);
  } finally {
    kv.close();
  }
});

Deno.test("patch: patchStoredMany writes the records it changes, leaves unchanged ones untouched and passes over absent ids", async () => {
  const { kv, clock, e } = await engine();
  try {
    const a = await e.insert(MODEL, { name: "a", note: "old" });
    const b = await e.insert(MODEL, { name: "b", note: "same" });
    assert.ok(a.ok && b.ok);
    const before = b.value.last_updated;
    clock.now += 60_000;
    await e.patchStoredMany(
      MODEL,
      new Map([
        [a.value.id, { note: "new" }],
        [b.value.id, { note: "same" }],
        [b.value.id + 100, { note: "ghost" }],
      ]),
    );
    const a2 = await e.get(MODEL, a.value.id);
    assert.equal(a2?.note, "new");
    assert.equal(a2?.last_updated, new Date(clock.now).toISOString());
    const b2 = await e.get(MODEL, b.value.id);
    assert.equal(b2?.note, "same");
    assert.equal(b2?.last_updated, before, "an unchanged record is not written");
    assert.equal(await e.get(MODEL, b.value.id + 100), null);
    assert.deepEqual((await e.find(MODEL)).map((r) => r.name).sort(), ["a", "b"]);
  } finally {
    kv.close();
  }
});

Deno.test("patch: patchStored against a record every commit of which loses to a concurrent write gives up after fifty attempts, the record unchanged", async () => {
  const { kv, store, e } = await engine();
  try {
    const a = await e.insert(MODEL, { name: "a", note: "old" });
    assert.ok(a.ok);
    store.refuseAll = true;
    store.commits = 0;
    await assert.rejects(
      () => e.patchStored(MODEL, a.value.id, { note: "new" }),
      /could not update test\.item \d+: storage contention/,
    );
    assert.equal(store.commits, 50);
    store.refuseAll = false;
    assert.equal((await e.get(MODEL, a.value.id))?.note, "old");
  } finally {
    kv.close();
  }
});
