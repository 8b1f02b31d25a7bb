/**
 * The change log's `request_id` filter over its index of one entry per request's batch (index
 * layout 5: each entry names its batch's ids, the batch's last entry alone is indexed), against
 * what it must answer: every entry of the requests named, across atomics and pages, without the
 * entries a prune took, and entries an earlier build indexed one by one (docs/sync.md, "Writes:
 * round 5").
 */
import assert from "node:assert/strict";
import { keys } from "../../../storage/kv/keys.ts";
import { INDEX_LAYOUT } from "../../../domain/netbox/engine.ts";
import type { StoredObject } from "../../../storage/ports.ts";
import { type Inv, setup } from "./_setup.ts";

const CHANGES = "/api/core/object-changes/";
const MODEL = "core.objectchange";

/** Ids of every entry `query` lists, read in pages of `size`, and the count each page gave. */
async function walk(inv: Inv, query: string, size: number) {
  const ids: number[] = [];
  const counts = new Set<number>();
  for (let offset = 0;; offset += size) {
    const r = await inv.call("GET", `${CHANGES}?${query}&limit=${size}&offset=${offset}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    counts.add(r.body.count);
    ids.push(...r.body.results.map((e: { id: number }) => e.id));
    if (r.body.results.length < size) break;
  }
  assert.equal(counts.size, 1, `${query}: one count on every page (${[...counts]})`);
  return { ids, count: [...counts][0] };
}

/** The request_id index keys (one per batch) and the counters an earlier layout kept. */
async function requestKeys(kv: Deno.Kv, requestId?: string) {
  let index = 0;
  let counters = 0;
  const tail = requestId === undefined ? [] : [requestId];
  for await (const _ of kv.list({ prefix: ["inventory", "idx", MODEL, "request_id", ...tail] })) {
    index++;
  }
  if (requestId === undefined) {
    for await (const _ of kv.list({ prefix: ["inventory", "idx_count", MODEL, "request_id"] })) {
      counters++;
    }
  } else {
    const counter = await kv.get(keys.inventoryIndexCount(MODEL, "request_id", requestId));
    counters = counter.versionstamp === null ? 0 : 1;
  }
  return { index, counters };
}

/** Every stored entry, id → request id. */
async function stored(kv: Deno.Kv): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  for await (const e of kv.list<StoredObject>({ prefix: keys.inventoryObjectPrefix(MODEL) })) {
    out.set(e.value.id, String(e.value.request_id));
  }
  return out;
}

const sites = (from: number, n: number, text = "") =>
  Array.from({ length: n }, (_, i) => ({
    name: `s${from + i}`,
    slug: `s${from + i}`,
    // Some bulk in each entry; 700 entries take several atomics anyway (1,000 mutations each).
    description: text,
  }));

Deno.test("request_id answers every entry of the requests named through one index entry per request, across atomics, pages and orderings", async () => {
  const kv = await Deno.openKv(":memory:");
  const inv = await setup({}, { kv });
  try {
    const big = await inv.call("POST", "/api/dcim/sites/", sites(0, 700, "x".repeat(180)));
    assert.equal(big.status, 201, JSON.stringify(big.body).slice(0, 300));
    const one = await inv.call("POST", "/api/dcim/sites/", sites(700, 1)[0]);
    assert.equal(one.status, 201);
    const edit = await inv.call(
      "PATCH",
      "/api/dcim/sites/",
      big.body.slice(0, 300).map((s: { id: number }) => ({ id: s.id, description: "edited" })),
    );
    assert.equal(edit.status, 200, JSON.stringify(edit.body).slice(0, 300));
    const requests = [big, one, edit].map((r) => r.headers.get("X-Request-ID")!);
    const entries = await stored(kv);
    assert.equal(entries.size, 1001);
    // One index entry per request (each logged one batch), not one per entry; no counter.
    assert.deepEqual(await requestKeys(kv), { index: 3, counters: 0 });
    for (const [i, requestId] of requests.entries()) {
      const want = [...entries].filter(([, r]) => r === requestId).map(([id]) => id);
      assert.equal(want.length, [700, 1, 300][i]);
      const desc = [...want].sort((a, b) => b - a);
      // The default ordering (-id) in pages of 1000 and of 97, and by id.
      assert.deepEqual(await walk(inv, `request_id=${requestId}`, 1000), {
        ids: desc,
        count: want.length,
      });
      assert.deepEqual(await walk(inv, `request_id=${requestId}`, 97), {
        ids: desc,
        count: want.length,
      });
      assert.deepEqual(await walk(inv, `request_id=${requestId}&ordering=id`, 250), {
        ids: [...desc].reverse(),
        count: want.length,
      });
    }
    // Two requests at once, with another filter, and one that logged nothing.
    const both = await walk(inv, `request_id=${requests[1]}&request_id=${requests[2]}`, 1000);
    assert.equal(both.count, 301);
    const updates = await walk(inv, `request_id=${requests[0]}&action=update`, 1000);
    assert.deepEqual(updates, { ids: [], count: 0 });
    const created = await walk(inv, `request_id=${requests[2]}&action=update&q=s29`, 1000);
    assert.equal(created.count, 11); // s29, s290…s299
    const none = await walk(inv, `request_id=${crypto.randomUUID()}`, 50);
    assert.deepEqual(none, { ids: [], count: 0 });
    // A value no index holds (too long for a key) is tested entry by entry: nothing, no error.
    const long = await walk(inv, `request_id=${"f".repeat(3000)}`, 50);
    assert.deepEqual(long, { ids: [], count: 0 });
  } finally {
    inv.close();
  }
});

Deno.test("request_id: entries a prune took are not answered, and a batch's index entry goes with its last entry", async () => {
  const kv = await Deno.openKv(":memory:");
  const inv = await setup({ INVENTORY_CHANGELOG_MAX_ENTRIES: "10" }, { kv });
  try {
    const write = async (from: number, n: number) => {
      const r = await inv.call("POST", "/api/dcim/sites/", sites(from, n));
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.headers.get("X-Request-ID")!;
    };
    const a = await write(0, 8);
    const b = await write(8, 6); // 14 entries: the oldest 4 (a's first) pruned
    const names = async (requestId: string) =>
      (await inv.call("GET", `${CHANGES}?request_id=${requestId}&limit=50`)).body;
    const left = await names(a);
    assert.equal(left.count, 4);
    assert.deepEqual(left.results.map((e: { object_repr: string }) => e.object_repr), [
      "s7",
      "s6",
      "s5",
      "s4",
    ]);
    assert.deepEqual(await requestKeys(kv, a), { index: 1, counters: 0 });
    const c = await write(14, 5); // 15: a's last 4 and b's first pruned, a's index entry too
    assert.deepEqual(await names(a), { count: 0, next: null, previous: null, results: [] });
    assert.deepEqual(await requestKeys(kv, a), { index: 0, counters: 0 });
    assert.equal((await names(b)).count, 5);
    assert.equal((await names(c)).count, 5);
    assert.deepEqual(await requestKeys(kv), { index: 2, counters: 0 });
  } finally {
    inv.close();
  }
});

Deno.test("request_id: entries an earlier build indexed one by one are found beside this build's, and their counters swept at start", async () => {
  const kv = await Deno.openKv(":memory:");
  const first = await setup({ INVENTORY_CHANGELOG_MAX_ENTRIES: "20" }, { kv });
  try {
    const made = await first.call("POST", "/api/dcim/sites/", sites(0, 6));
    assert.equal(made.status, 201);
    const old = made.headers.get("X-Request-ID")!;
    // The earlier layout: no batch named on the entries, an index entry and a count for each.
    const op = kv.atomic();
    for await (const e of kv.list<StoredObject>({ prefix: keys.inventoryObjectPrefix(MODEL) })) {
      const { request_batch: _, ...entry } = e.value;
      op.set(e.key, entry);
      op.set(keys.inventoryIndex(MODEL, "request_id", old, entry.id), null);
      op.sum(keys.inventoryIndexCount(MODEL, "request_id", old), 1n);
    }
    assert.ok((await op.commit()).ok);
    await kv.set(keys.inventoryIndexLayout(), 4);
    assert.deepEqual(await requestKeys(kv, old), { index: 6, counters: 1 });
    // Two processes start at once on that store: the counters go, the index entries stay.
    const [a, b] = await Promise.all([
      setup({ INVENTORY_CHANGELOG_MAX_ENTRIES: "20" }, { kv }),
      setup({ INVENTORY_CHANGELOG_MAX_ENTRIES: "20" }, { kv }),
    ]);
    assert.deepEqual(await requestKeys(kv, old), { index: 6, counters: 0 });
    assert.equal((await kv.get(keys.inventoryIndexLayout())).value, INDEX_LAYOUT);
    const more = await b.call("POST", "/api/dcim/sites/", sites(6, 10));
    const fresh = more.headers.get("X-Request-ID")!;
    const entries = await stored(kv);
    for (const [requestId, n] of [[old, 6], [fresh, 10]] as const) {
      const want = [...entries].filter(([, r]) => r === requestId).map(([id]) => id);
      assert.equal(want.length, n);
      assert.deepEqual(await walk(a, `request_id=${requestId}`, 4), {
        ids: want.sort((x, y) => y - x),
        count: n,
      });
    }
    // Pruned by this build, the earlier entries take their index entries with them.
    const last = await a.call("POST", "/api/dcim/sites/", sites(16, 10)); // 26: 6 pruned
    assert.equal(last.status, 201);
    assert.deepEqual(await requestKeys(kv, old), { index: 0, counters: 0 });
    assert.equal((await walk(a, `request_id=${old}`, 50)).count, 0);
    assert.equal((await walk(a, `request_id=${fresh}`, 50)).count, 10);
  } finally {
    first.close();
  }
});
