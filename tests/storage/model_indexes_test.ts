/**
 * Index entries and their counts follow every change of an indexed value: filters and their
 * counts read them, so a stale entry would list an object under a value it no longer has.
 */
import assert from "node:assert/strict";
import { ModelEngine } from "../../domain/netbox/engine.ts";
import { MemoryLogger } from "../../infra/logger.ts";
import { KvModelStore } from "../../storage/kv/models.ts";

async function setup() {
  const kv = await Deno.openKv(":memory:");
  const engine = new ModelEngine({
    store: new KvModelStore(kv),
    logger: new MemoryLogger(),
    now: Date.now,
  }).register({
    app: "t",
    model: "thing",
    verbose: "thing",
    path: "t/things/",
    fields: {
      name: { type: "string", required: true },
      group: { type: "string", index: true },
      note: { type: "string" },
    },
    brief: ["name"],
  });
  return { kv, engine };
}

Deno.test("model store: editing other fields never changes an index count", async () => {
  const { kv, engine } = await setup();
  try {
    const a = await engine.insert("t.thing", { name: "a", group: "g1" });
    assert.ok(a.ok);
    for (let i = 0; i < 3; i++) {
      assert.ok((await engine.update("t.thing", a.value.id, { note: `edit ${i}` })).ok);
    }
    assert.equal(await engine.store.countByIndex("t.thing", "group", "g1"), 1);
    assert.deepEqual(await engine.store.idsByIndex("t.thing", "group", "g1"), [a.value.id]);
  } finally {
    kv.close();
  }
});

Deno.test("model store: a changed indexed value leaves no entry (or count) under the old one", async () => {
  const { kv, engine } = await setup();
  try {
    const a = await engine.insert("t.thing", { name: "a", group: "g1" });
    assert.ok(a.ok);
    assert.ok((await engine.update("t.thing", a.value.id, { group: "g2" })).ok);
    assert.deepEqual(await engine.store.idsByIndex("t.thing", "group", "g1"), []);
    assert.equal(await engine.store.countByIndex("t.thing", "group", "g1"), 0);
    assert.deepEqual(await engine.store.idsByIndex("t.thing", "group", "g2"), [a.value.id]);
    assert.deepEqual((await engine.find("t.thing", { group: ["g1"] })).map((r) => r.id), []);
  } finally {
    kv.close();
  }
});
