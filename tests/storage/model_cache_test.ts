/**
 * The model store's read cache: records and index pages are read from KV once per model
 * generation, and any commit (through any store, any process) that writes the model makes
 * every cache of it stale at once.
 */
import assert from "node:assert/strict";
import { KvModelStore, utf8Length } from "../../storage/kv/models.ts";
import type { ObjectWrite, StoredObject } from "../../storage/ports.ts";

const MODEL = "test.widget";

function created(record: StoredObject): ObjectWrite {
  return {
    model: MODEL,
    id: record.id,
    prev: null,
    next: { record, indexes: [["colour", String(record.colour)]], uniques: [], ordered: [] },
  };
}

async function rename(store: KvModelStore, id: number, name: string): Promise<void> {
  const current = (await store.get(MODEL, id))!;
  const indexes = [["colour", String(current.record.colour)] as const];
  const result = await store.commit([{
    model: MODEL,
    id,
    prev: { record: current.record, indexes, uniques: [], ordered: [], version: current.version },
    next: { record: { ...current.record, name }, indexes, uniques: [], ordered: [] },
  }]);
  assert.ok(result.ok);
}

/** A Deno.Kv whose record reads (getMany and list) are counted. */
function counting(kv: Deno.Kv) {
  const counts = { getMany: 0, list: 0 };
  const proxy = new Proxy(kv, {
    get(target, prop) {
      if (prop === "getMany" || prop === "list") counts[prop]++;
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { kv: proxy, counts };
}

Deno.test("model cache: a second read of the same records and page reads no record", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const { kv: watched, counts } = counting(kv);
    const store = new KvModelStore(watched);
    const records = Array.from(
      { length: 30 },
      (_, i) => ({ id: i + 1, name: `w${i}`, colour: "red" }),
    );
    assert.ok((await store.commit(records.map(created))).ok);
    const ids = records.map((r) => r.id);
    const page = { offset: 0, limit: 20, reverse: false, ordered: false };

    const first = await store.getMany(MODEL, ids);
    const firstPage = await store.pageByIndex(MODEL, "colour", "red", page);
    const before = { ...counts };
    const second = await store.getMany(MODEL, ids);
    const secondPage = await store.pageByIndex(MODEL, "colour", "red", page);
    assert.deepEqual(second, first);
    assert.deepEqual(secondPage, firstPage);
    assert.deepEqual(secondPage, ids.slice(0, 20));
    assert.deepEqual(counts, before, "cached reads touched no record or index entry");
    // Missing ids are skipped, duplicates kept, order followed, as uncached.
    assert.deepEqual((await store.getMany(MODEL, [3, 999, 1, 3])).map((r) => r.id), [3, 1, 3]);
    // Shared records are frozen: a reader cannot change what the next one sees.
    assert.throws(() => {
      second[0].name = "changed";
    }, TypeError);
  } finally {
    kv.close();
  }
});

Deno.test("model cache: a write through another store (another process) is seen at once", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/models.kv`;
  // Two handles on one file, as two processes sharing a database.
  const kvA = await Deno.openKv(path);
  const kvB = await Deno.openKv(path);
  try {
    const a = new KvModelStore(kvA);
    const b = new KvModelStore(kvB);
    assert.ok((await a.commit([created({ id: 1, name: "before", colour: "red" })])).ok);
    const page = { offset: 0, limit: 10, reverse: false, ordered: false };
    assert.equal((await a.getMany(MODEL, [1]))[0].name, "before");
    assert.deepEqual(await a.pageByIndex(MODEL, "colour", "red", page), [1]);
    assert.deepEqual(await a.idsByIndex(MODEL, "colour", "red"), [1]);

    await rename(b, 1, "after");
    assert.ok((await b.commit([created({ id: 2, name: "new", colour: "red" })])).ok);

    assert.equal((await a.getMany(MODEL, [1]))[0].name, "after");
    assert.deepEqual(await a.pageByIndex(MODEL, "colour", "red", page), [1, 2]);
    assert.deepEqual(await a.idsByIndex(MODEL, "colour", "red"), [1, 2]);
    // And a write through the same store, too.
    await rename(a, 2, "renamed");
    assert.equal((await a.getMany(MODEL, [2]))[0].name, "renamed");
  } finally {
    kvA.close();
    kvB.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("utf8Length agrees with TextEncoder (ASCII, 2-, 3- and 4-byte, lone surrogates)", () => {
  const samples = [
    "",
    "abc",
    "é",
    "ü-node",
    "€",
    "日本語",
    "😀",
    "a😀b",
    "\ud83d",
    "x\udc00y",
    "\ud83d\ud83d",
  ];
  const random = Array.from(
    { length: 200 },
    () =>
      String.fromCharCode(...Array.from({ length: 8 }, () => Math.floor(Math.random() * 0x10000))),
  );
  for (const text of [...samples, ...random]) {
    assert.equal(utf8Length(text), new TextEncoder().encode(text).length, JSON.stringify(text));
  }
});

Deno.test("model cache: pages of 1,000 past the cache's 20,000 records all come back whole", async () => {
  // 25,000 records read in 1,000-id pages, twice, the second walk mixing cached ids with ids the
  // cache dropped: every page crossing the 20,000-record bound used to lose its cached part.
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvModelStore(kv, { maxCachedRecords: 20_000 });
    const total = 25_000;
    const writes = Array.from(
      { length: total },
      (_, i) => created({ id: i + 1, name: `w${i}`, colour: "red" }),
    );
    for (const group of store.plan(writes)) assert.ok((await store.commit(group)).ok);
    for (const stride of [1, 7]) {
      for (let first = 0; first < total; first += 1000) {
        const ids = Array.from({ length: 1000 }, (_, k) => ((first + k * stride) % total) + 1);
        const got = await store.getMany(MODEL, ids);
        assert.deepEqual(got.map((r) => r.id), ids, `page at ${first}, stride ${stride}`);
      }
    }
  } finally {
    kv.close();
  }
});

Deno.test("model cache: a read whose cache another read empties meanwhile keeps its hits", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    // The first read's KV reads are held until the second read (which empties the cache) is done.
    let release!: () => void;
    const held = new Promise<void>((resolve) => release = resolve);
    let holding = false;
    const gated = new Proxy(kv, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (prop !== "getMany") return typeof value === "function" ? value.bind(target) : value;
        return async (keys: Deno.KvKey[]) => {
          if (holding && keys.some((k) => (k[k.length - 1] as number) <= 100)) await held;
          return target.getMany(keys);
        };
      },
    });
    const store = new KvModelStore(gated, { maxCachedRecords: 100 });
    const writes = Array.from(
      { length: 300 },
      (_, i) => created({ id: i + 1, name: `w${i}`, colour: "red" }),
    );
    assert.ok((await store.commit(writes)).ok);
    await store.getMany(MODEL, Array.from({ length: 50 }, (_, i) => i + 1));
    holding = true;
    const mixed = Array.from({ length: 100 }, (_, i) => i + 1); // 50 cached, 50 held reads
    const first = store.getMany(MODEL, mixed);
    const other = Array.from({ length: 150 }, (_, i) => i + 151); // empties the cache
    assert.deepEqual((await store.getMany(MODEL, other)).map((r) => r.id), other);
    release();
    assert.deepEqual((await first).map((r) => r.id), mixed);
  } finally {
    kv.close();
  }
});

Deno.test("model cache: past its bound the oldest records go, and those read last stay cached", async () => {
  // A request reads a filter's parents, then the same parents nested in its answer; with other
  // reads between them past the bound, the cache used to start afresh and both reads went to KV.
  const kv = await Deno.openKv(":memory:");
  try {
    let keysRead = 0;
    const counted = new Proxy(kv, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (prop !== "getMany") return typeof value === "function" ? value.bind(target) : value;
        return (keys: Deno.KvKey[]) => {
          keysRead += keys.filter((k) => k[1] === "obj").length;
          return target.getMany(keys);
        };
      },
    });
    const models = ["test.a", "test.b"];
    const store = new KvModelStore(counted, { maxCachedRecords: 100, maxCachedRecordsTotal: 150 });
    for (const model of models) {
      const writes = Array.from({ length: 300 }, (_, i): ObjectWrite => ({
        ...created({ id: i + 1, name: `w${i}`, colour: "red" }),
        model,
      }));
      assert.ok((await store.commit(writes)).ok);
    }
    const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
    // One model past its own bound: 60 + 60 records, 100 kept, the 20 read first dropped.
    await store.getMany("test.a", range(1, 60));
    await store.getMany("test.a", range(61, 60));
    keysRead = 0;
    assert.deepEqual(
      (await store.getMany("test.a", range(21, 100))).map((r) => r.id),
      range(21, 100),
    );
    assert.equal(keysRead, 0, "the 100 records read last are all cached");
    assert.deepEqual((await store.getMany("test.a", range(1, 20))).map((r) => r.id), range(1, 20));
    assert.equal(keysRead, 20, "the 20 read first were dropped");
    // test.a now holds 41..120 and 1..20. Over all models: those 100 and 80 of test.b make
    // 180 > 150: the oldest 30 of test.a (the largest model: 41..70) go, the rest stays.
    await store.getMany("test.b", range(1, 80));
    assert.equal(store.cacheSize().records, 150);
    keysRead = 0;
    await store.getMany("test.b", range(1, 80));
    await store.getMany("test.a", [...range(71, 50), ...range(1, 20)]);
    assert.equal(keysRead, 0, "the newest records of each model stay");
    await store.getMany("test.a", range(41, 30));
    assert.equal(keysRead, 30, "the oldest of the largest model went");
    // A bound of 0 (INVENTORY_CACHE_RECORDS=0) keeps nothing.
    const none = new KvModelStore(counted, { maxCachedRecordsTotal: 0 });
    await none.getMany("test.a", range(1, 10));
    assert.equal(none.cacheSize().records, 0);
  } finally {
    kv.close();
  }
});

Deno.test("model cache: what it holds is bounded over all models, and reads stay whole", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvModelStore(kv, { maxCachedRecords: 1000, maxCachedRecordsTotal: 500 });
    const models = ["test.a", "test.b", "test.c"];
    for (const model of models) {
      const writes = Array.from({ length: 300 }, (_, i): ObjectWrite => ({
        ...created({ id: i + 1, name: `w${i}`, colour: "red" }),
        model,
      }));
      assert.ok((await store.commit(writes)).ok);
    }
    const ids = Array.from({ length: 300 }, (_, i) => i + 1);
    for (let round = 0; round < 2; round++) {
      for (const model of models) {
        assert.deepEqual((await store.getMany(model, ids)).map((r) => r.id), ids);
        assert.ok(store.cacheSize().records <= 500, `cached: ${store.cacheSize().records}`);
      }
    }
    // Lists too: one model's cached id lists stay under their bound however many are read.
    for (let offset = 0; offset < 300; offset += 10) {
      await store.pageByIndex("test.a", "colour", "red", {
        offset,
        limit: 10,
        reverse: false,
        ordered: false,
      });
    }
    assert.ok(store.cacheSize().listIds <= 300);
  } finally {
    kv.close();
  }
});

Deno.test("model cache: a list read by every request stays cached while one-off lists pass the bound", async () => {
  // The sliced sync asks each slice's children with the same tag filter: the tag's ids are one
  // list read on every request, among 100 one-off lists (one per parent). Past the bound of
  // lists per model the least recently used go, never the one in use (docs/sync.md, Re-runs).
  const kv = await Deno.openKv(":memory:");
  try {
    const { kv: watched, counts } = counting(kv);
    const store = new KvModelStore(watched);
    const records = Array.from(
      { length: 30 },
      (_, i) => ({ id: i + 1, name: `w${i}`, colour: "red" }),
    );
    assert.ok((await store.commit(records.map(created))).ok);
    const red = records.map((r) => r.id);
    const oneOffs = 3_000;
    counts.list = 0;
    for (let i = 0; i < oneOffs; i++) {
      if (i % 100 === 0) assert.deepEqual(await store.idsByIndex(MODEL, "colour", "red"), red);
      assert.deepEqual(await store.idsByIndex(MODEL, "colour", `other-${i}`), []);
    }
    assert.equal(counts.list, oneOffs + 1, "the red list was read once, each one-off once");
    // Still bounded: the one-off lists past the bound are gone, so the first is read again.
    counts.list = 0;
    await store.idsByIndex(MODEL, "colour", "other-0");
    assert.equal(counts.list, 1);
  } finally {
    kv.close();
  }
});

Deno.test("model cache: the keys of a model's cached lists hold at most 1,000,000 characters", async () => {
  // A list's key holds the filters a client sent (SECURITY.md, "Limits"); the store keeps its
  // arguments as JSON: ["derived","<key>",[]].
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvModelStore(kv);
    const keyOf = (chars: number, fill: string) =>
      fill.repeat(chars - JSON.stringify(["derived", "", []]).length);
    let made = 0;
    const list = (key: string) =>
      store.derivedIds(MODEL, key, () => {
        made++;
        return Promise.resolve([1]);
      });
    const [a, b, c] = [keyOf(500_000, "a"), keyOf(500_000, "b"), keyOf(100, "c")];
    await list(a);
    await list(b);
    assert.equal(store.cacheSize().listKeyChars, 1_000_000);
    made = 0;
    await list(a);
    await list(b);
    assert.equal(made, 0, "both kept, exactly at the bound");
    // Past the bound: the list used least recently goes (a), the others stay.
    await list(c);
    assert.equal(store.cacheSize().listKeyChars, 500_100);
    made = 0;
    await list(b);
    await list(c);
    assert.equal(made, 0);
    // A key over the bound on its own is not kept, and takes nothing from the others.
    await list(keyOf(1_000_001, "d"));
    assert.equal(store.cacheSize().listKeyChars, 500_100);
    // One exactly at the bound is kept (the others make room).
    await list(keyOf(1_000_000, "e"));
    assert.equal(store.cacheSize().listKeyChars, 1_000_000);
  } finally {
    kv.close();
  }
});
