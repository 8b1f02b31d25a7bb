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

Deno.test("model store: many string values read as one range answer each value's ids, with values between them and a crowded range read value by value", async () => {
  const { kv, engine } = await setup();
  try {
    const made = new Map<string, number[]>();
    // g00…g39, two objects each but every fourth value empty; "g05x" sorts between g05 and g06.
    for (let i = 0; i < 40; i++) {
      if (i % 4 === 3) continue;
      const group = `g${String(i).padStart(2, "0")}`;
      for (const name of ["a", "b"]) {
        const r = await engine.insert("t.thing", { name, group });
        assert.ok(r.ok);
        made.set(group, [...(made.get(group) ?? []), r.value.id]);
      }
    }
    const between = await engine.insert("t.thing", { name: "x", group: "g05x" });
    assert.ok(between.ok);
    const expect = (values: string[]) => values.map((v) => made.get(v) ?? []);
    // A few values among few others: one range.
    for (const asked of [["g05", "g03", "g06", "g04"], ["g09", "g07", "zz", "g08"]]) {
      assert.deepEqual(
        await engine.store.idsByIndexMany("t.thing", "group", asked),
        expect(asked),
      );
    }
    // Values far apart (the range holds every value between): the same answers.
    const wide = ["g00", "g39", "g20", "g38"];
    assert.deepEqual(await engine.store.idsByIndexMany("t.thing", "group", wide), expect(wide));
    // Text KV might order otherwise than JS (not plain ASCII): the same answers, value by value.
    const odd = ["g01", "g02", "ü", "g10", "g11\u0000"];
    assert.deepEqual(await engine.store.idsByIndexMany("t.thing", "group", odd), expect(odd));
  } finally {
    kv.close();
  }
});
