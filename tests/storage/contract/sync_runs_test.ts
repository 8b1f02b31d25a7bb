/**
 * The sync-run hold port (storage/ports.ts, `SyncRunLockStore`; docs/sync.md, "One run per
 * endpoint"): one run per hypervisor endpoint at a time, across processes sharing a store.
 */
import assert from "node:assert/strict";
import type { SyncRunHold } from "../../../storage/ports.ts";
import { contract } from "./_backends.ts";

const TTL = 60_000;
const hold = (
  run: string,
  owner = "process-a",
): Omit<SyncRunHold, "endpoint_id" | "expires_at"> => ({
  run_id: run,
  owner,
  what: "full-update",
  started_at: 1_700_000_000_000,
});

contract("sync runs", {
  "a run takes its endpoints all or none; a second run is told who holds the first it meets":
    async (
      { storage, clock },
    ) => {
      const runs = storage.syncRuns;
      assert.deepEqual(await runs.take([1, 2], hold("run-a"), TTL), { ok: true });
      const refused = await runs.take([3, 2], hold("run-b", "process-b"), TTL);
      assert.deepEqual(refused, {
        ok: false,
        held: { ...hold("run-a"), endpoint_id: 2, expires_at: clock.ms + TTL },
      });
      // Nothing of the refused run was taken: endpoint 3 is still free for anyone.
      assert.deepEqual(await runs.take([3], hold("run-c"), TTL), { ok: true });
      // The holder taking again is no refusal (a run re-checks its endpoints).
      assert.deepEqual(await runs.take([2, 1], hold("run-a"), TTL), { ok: true });
      assert.deepEqual(await runs.take([], hold("run-d"), TTL), { ok: true });
    },

  "a hold lapses after its time unless renewed; only its run renews it": async (
    { storage, clock },
  ) => {
    const runs = storage.syncRuns;
    await runs.take([7], hold("run-a"), 1_000);
    clock.advance(800);
    assert.equal(await runs.renew([7], "run-a", 1_000), true);
    clock.advance(800);
    const still = await runs.take([7], hold("run-b"), 1_000);
    assert.equal(still.ok, false, "a renewed hold still stands");
    assert.equal(await runs.renew([7], "run-b", 1_000), false, "a run renews only its own hold");
    clock.advance(201);
    assert.deepEqual(
      await runs.take([7], hold("run-b", "process-b"), 1_000),
      { ok: true },
      "a lapsed hold (its process died) is free",
    );
    assert.equal(await runs.renew([7], "run-a", 1_000), false, "the lapsed run lost it");
  },

  "release frees only the holds that still name the run": async ({ storage }) => {
    const runs = storage.syncRuns;
    await runs.take([1], hold("run-a"), TTL);
    await runs.take([2], hold("run-b"), TTL);
    await runs.release([1, 2], "run-a");
    assert.deepEqual(await runs.take([1], hold("run-c"), TTL), { ok: true });
    const refused = await runs.take([2], hold("run-c"), TTL);
    assert.equal(refused.ok, false);
    assert.equal(!refused.ok && refused.held.run_id, "run-b");
    await runs.release([2], "run-b");
    assert.deepEqual(await runs.take([2], hold("run-c"), TTL), { ok: true });
  },

  "runs racing for overlapping endpoints: exactly one wins, the others name it": async (
    { storage, reopen },
  ) => {
    const second = await reopen();
    const attempts = Array.from(
      { length: 12 },
      (_, i) =>
        (i % 2 ? second : storage).syncRuns.take([1, 2, 3].slice(i % 3), hold(`run-${i}`), TTL),
    );
    const outcomes = await Promise.all(attempts);
    const winners = outcomes.flatMap((o, i) => o.ok ? [i] : []);
    // Every attempt covers endpoint 3, so at most one can win; and someone must.
    assert.equal(winners.length, 1, JSON.stringify(outcomes));
    for (const o of outcomes) {
      if (!o.ok) assert.equal(o.held.run_id, `run-${winners[0]}`);
    }
  },

  "a run over many endpoints (past KV's 10-key read) is held whole, and refused whole": async (
    { storage, reopen },
  ) => {
    const ids = Array.from({ length: 60 }, (_, i) => i + 1);
    assert.deepEqual(await storage.syncRuns.take(ids, hold("run-a"), TTL), { ok: true });
    const other = await reopen();
    const refused = await other.syncRuns.take([61, 60], hold("run-b"), TTL);
    assert.equal(!refused.ok && refused.held.endpoint_id, 60);
    assert.equal(await storage.syncRuns.renew(ids, "run-a", TTL), true);
    await storage.syncRuns.release(ids, "run-a");
    assert.deepEqual(await other.syncRuns.take(ids, hold("run-b"), TTL), { ok: true });
  },
});
