/**
 * The saved sync ledgers port (storage/ports.ts, `SyncLedgerStore`; docs/sync.md, "The ledger
 * across restarts and processes"): a save is seen whole by every process or not at all, and of
 * two saves over the same one only the first is kept.
 */
import assert from "node:assert/strict";
import type { Storage } from "../../../storage/ports.ts";
import { contract } from "./_backends.ts";

/** `bytes` of random data (it does not compress: a large state takes many chunks). */
function state(bytes: number, seed = 1): Uint8Array {
  const out = new Uint8Array(bytes);
  let x = seed;
  for (let i = 0; i < bytes; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

/** Whether two states hold the same bytes (an assertion's diff of megabytes would not print). */
function same(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** What a load answered, short enough for an assertion's message. */
const what = (loaded: Awaited<ReturnType<Storage["syncLedgers"]["load"]>>) =>
  loaded === null || loaded === "unchanged" ? loaded : `state ${loaded.tag}`;

contract("sync ledgers", {
  "the sync's own request ids noted by one process are known to another, per inventory": async (
    { storage, reopen },
  ) => {
    const other = await reopen();
    await storage.syncLedgers.noteOwn("inv a", "r-1");
    await storage.syncLedgers.noteOwn("inv a", "r-2");
    await storage.syncLedgers.noteOwn("inv b", "r-3");
    const ids = Array.from({ length: 25 }, (_, i) => `r-${i}`);
    assert.deepEqual((await other.syncLedgers.ownOf("inv a", ids)).sort(), ["r-1", "r-2"]);
    assert.deepEqual(await other.syncLedgers.ownOf("inv b", ["r-1", "r-3"]), ["r-3"]);
    assert.deepEqual(await other.syncLedgers.ownOf("inv a", []), []);
  },

  "a saved state is read back whole by another process; the saver's own tag reads as unchanged":
    async ({ storage, reopen }) => {
      const ledgers = storage.syncLedgers;
      assert.equal(what(await ledgers.load("inv 1", null)), null, "nothing saved yet");
      const big = state(1_500_000); // over one atomic's worth of chunks
      const tag = await ledgers.save("inv 1", big, null);
      assert.ok(tag);
      const other = await reopen();
      const loaded = await other.syncLedgers.load("inv 1", null);
      assert.ok(loaded && loaded !== "unchanged");
      assert.equal(loaded.tag, tag);
      assert.ok(same(loaded.state, big));
      assert.equal(what(await other.syncLedgers.load("inv 1", tag)), "unchanged");
      assert.equal(what(await ledgers.load("inv 2", null)), null, "another key holds nothing");
    },

  "a save over a state that is no longer the saved one is refused and changes nothing": async (
    { storage },
  ) => {
    const ledgers = storage.syncLedgers;
    const first = await ledgers.save("k", state(100, 1), null);
    assert.ok(first);
    assert.equal(await ledgers.save("k", state(100, 2), null), null, "one is saved already");
    const second = await ledgers.save("k", state(200, 3), first);
    assert.ok(second && second !== first);
    assert.equal(await ledgers.save("k", state(100, 4), first), null, "the first was replaced");
    const loaded = await ledgers.load("k", first);
    assert.ok(loaded && loaded !== "unchanged");
    assert.equal(loaded.tag, second);
    assert.ok(same(loaded.state, state(200, 3)));
  },

  "of two saves over the same state at once, one is kept whole": async ({ storage, reopen }) => {
    const other = await reopen();
    const base = await storage.syncLedgers.save("k", state(10), null);
    const [a, b] = await Promise.all([
      storage.syncLedgers.save("k", state(300_000, 5), base),
      other.syncLedgers.save("k", state(300_000, 6), base),
    ]);
    assert.equal([a, b].filter(Boolean).length, 1, JSON.stringify([a, b]));
    const loaded = await storage.syncLedgers.load("k", null);
    assert.ok(loaded && loaded !== "unchanged");
    assert.equal(loaded.tag, a ?? b);
    assert.ok(same(loaded.state, state(300_000, a ? 5 : 6)));
  },
});
