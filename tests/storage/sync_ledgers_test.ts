/**
 * The KV layout of saved sync ledgers (storage/kv/sync_ledgers.ts): compressed chunks under a
 * blob, the head written last; a replaced blob's chunks are deleted, and damaged or missing
 * chunks read as nothing saved (the next run compares every guest).
 */
import assert from "node:assert/strict";
import { KvSyncLedgerStore } from "../../storage/kv/sync_ledgers.ts";

async function chunkKeys(kv: Deno.Kv): Promise<Deno.KvKey[]> {
  const out: Deno.KvKey[] = [];
  for await (const e of kv.list({ prefix: ["backend", "sync_ledger", "chunk"] })) out.push(e.key);
  return out;
}

/** Incompressible bytes (each chunk stays full). */
function noise(bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i += 65_536) crypto.getRandomValues(out.subarray(i, i + 65_536));
  return out;
}

Deno.test("sync ledgers in KV: a new save deletes the chunks of the one it replaced and of a refused save; a damaged or missing chunk reads as nothing saved", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvSyncLedgerStore(kv, Date.now);
    const first = await store.save("k", noise(65_536), null);
    const firstChunks = await chunkKeys(kv);
    assert.equal(firstChunks.length, 2, "64 KiB of noise: two chunks");
    assert.ok(firstChunks.every((k) => k[4] === first));
    const second = await store.save("k", noise(200_000), first);
    const secondChunks = await chunkKeys(kv);
    assert.equal(secondChunks.length, 4);
    assert.ok(secondChunks.every((k) => k[4] === second), "the first blob's chunks are gone");
    assert.equal(await store.save("k", noise(200_000), first), null);
    assert.deepEqual(await chunkKeys(kv), secondChunks, "a refused save leaves no chunk");

    // Two saves over the same one at once: the loser's chunks are deleted too.
    const [x, y] = await Promise.all([
      store.save("k", noise(300_000), second),
      store.save("k", noise(300_000), second),
    ]);
    assert.ok((x === null) !== (y === null), JSON.stringify([x, y]));
    const winner = await chunkKeys(kv);
    assert.ok(winner.length >= 5 && winner.every((k) => k[4] === (x ?? y)), "only the winner's");
    const third = await store.save("k", noise(200_000), x ?? y);
    assert.ok(third);
    const thirdChunks = await chunkKeys(kv);
    await kv.set(thirdChunks[1], noise(1000));
    assert.equal(await store.load("k", null), null, "a damaged chunk");
    await kv.delete(thirdChunks[1]);
    assert.equal(await store.load("k", null), null, "a missing chunk");
    // The next save replaces it.
    const fourth = await store.save("k", new Uint8Array([1, 2, 3]), third);
    const loaded = await store.load("k", null);
    assert.ok(loaded && loaded !== "unchanged");
    assert.deepEqual([loaded.tag, [...loaded.state]], [fourth, [1, 2, 3]]);
    assert.equal((await chunkKeys(kv)).length, 1);
  } finally {
    kv.close();
  }
});
