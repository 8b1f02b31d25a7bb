/**
 * One sync run per hypervisor endpoint at a time (docs/sync.md, "One run per endpoint"):
 * `SyncRunLocks` over the real KV store (in memory), with a clock the test moves. Ordered by
 * the store's own answers (a wrapper signals each renewal), never by sleeps.
 */
import assert from "node:assert/strict";
import { createKvStorage } from "../../../storage/kv/mod.ts";
import type { SyncRunHold, SyncRunLockStore } from "../../../storage/ports.ts";
import { type HeldRun, isRunning, SyncRunLocks } from "../../../domain/sync/run_lock.ts";

/**
 * The KV hold store, telling the test what each renewal answered and when it asked (the test's
 * clock); `hold()` stops renewals at its door until `open()`, so none slips in between two steps.
 */
class WatchedStore implements SyncRunLockStore {
  renewals: { at: number; ours: boolean }[] = [];
  #gate: Promise<void> | null = null;
  #open = () => {};
  #waiting = 0;
  #inFlight = 0;
  #watchers: (() => void)[] = [];
  constructor(private readonly inner: SyncRunLockStore, private readonly now: () => number) {}
  take(ids: readonly number[], hold: Omit<SyncRunHold, "endpoint_id" | "expires_at">, ttl: number) {
    return this.inner.take(ids, hold, ttl);
  }
  async renew(ids: readonly number[], runId: string, ttl: number) {
    while (this.#gate) {
      this.#waiting++;
      this.#changed();
      await this.#gate;
      this.#waiting--;
    }
    this.#inFlight++;
    const at = this.now();
    try {
      const ours = await this.inner.renew(ids, runId, ttl);
      this.renewals.push({ at, ours });
      return ours;
    } finally {
      this.#inFlight--;
      this.#changed();
    }
  }
  release(ids: readonly number[], runId: string) {
    return this.inner.release(ids, runId);
  }
  #changed() {
    this.#watchers.splice(0).forEach((w) => w());
  }
  /** Resolves once `ready()` holds, checked after every renewal's step. */
  async until(ready: () => boolean): Promise<void> {
    while (!ready()) await new Promise<void>((resolve) => this.#watchers.push(resolve));
  }
  /** A renewal asked at or after `t` has answered. */
  renewedSince(t: number) {
    return this.until(() => this.renewals.some((r) => r.at >= t));
  }
  /** Stops renewals: resolves when one waits at the door and none is under way. */
  hold() {
    this.#gate = new Promise((resolve) => this.#open = resolve);
    return this.until(() => this.#waiting > 0 && this.#inFlight === 0);
  }
  open() {
    this.#gate = null;
    this.#open();
  }
}

async function setUp() {
  const kv = await Deno.openKv(":memory:");
  let now = 1_700_000_000_000;
  const clock = { now: () => now, advance: (ms: number) => now += ms };
  const store = new WatchedStore(createKvStorage(kv, { now: clock.now }).syncRuns, clock.now);
  return { kv, clock, store };
}

/** An acquire that must answer at once: waiting for another run fails the test (no hang). */
function acquireNow(locks: SyncRunLocks, ids: number[], what: string) {
  return new Promise<HeldRun | { running: SyncRunHold }>((resolve, reject) => {
    locks.acquire(ids, what, () => {}, (running) => {
      reject(new Error(`waited for run ${running.run_id} instead of answering`));
    }).then(resolve, reject);
  });
}

function held(value: HeldRun | { running: SyncRunHold }): HeldRun {
  assert.equal(isRunning(value), false, JSON.stringify(value));
  return value as HeldRun;
}

Deno.test("run lock: a second run of a held endpoint is told who runs; after the end, the next run takes it", async () => {
  const { kv, clock, store } = await setUp();
  try {
    const locks = new SyncRunLocks(store, clock.now);
    const first = held(await acquireNow(locks, [1, 2], "full-update"));
    const refused = await acquireNow(locks, [3, 2], "stage devices");
    assert.equal(isRunning(refused), true);
    assert.deepEqual((refused as { running: SyncRunHold }).running, {
      run_id: first.runId,
      owner: (refused as { running: SyncRunHold }).running.owner,
      what: "full-update",
      started_at: clock.now(),
      endpoint_id: 2,
      expires_at: clock.now() + 60_000,
    });
    // Endpoint 3 was not taken by the refused run: another run may have it.
    const third = held(await acquireNow(locks, [3], "stage sdn"));
    await first.end();
    await first.end(); // a second end is harmless
    const next = held(await acquireNow(locks, [1, 2], "full-update"));
    assert.notEqual(next.runId, first.runId);
    await next.end();
    await third.end();
  } finally {
    kv.close();
  }
});

Deno.test("run lock: a cancelled run of this process is waited for, not refused; another process's is refused", async () => {
  const { kv, clock, store } = await setUp();
  try {
    const locks = new SyncRunLocks(store, clock.now);
    const other = new SyncRunLocks(store, clock.now); // a second process on the same store
    const first = held(await acquireNow(locks, [1], "full-update"));
    // Not cancelled: refused at once, in this process too.
    assert.equal(isRunning(await acquireNow(locks, [1], "again")), true);
    first.cancelled();
    // Another process never waits for this one's cancelled run.
    const elsewhere = await acquireNow(other, [1], "other");
    assert.equal(isRunning(elsewhere), true);
    let waiting!: () => void;
    const waited = new Promise<void>((resolve) => waiting = resolve);
    const seen: string[] = [];
    const second = locks.acquire([1], "again", () => {}, (running) => {
      seen.push(running.run_id);
      waiting();
    });
    // It waits (rather than answering who runs) until the cancelled run ends.
    const outcome = await Promise.race([
      waited.then(() => "waits"),
      second.then((answer) => `answered ${JSON.stringify(answer)}`),
    ]);
    assert.equal(outcome, "waits");
    assert.deepEqual(seen, [first.runId]);
    await first.end();
    const taken = held(await second);
    assert.notEqual(taken.runId, first.runId);
    // Its end frees the endpoint for the other process.
    await taken.end();
    const later = held(await acquireNow(other, [1], "other"));
    await later.end();
  } finally {
    kv.close();
  }
});

Deno.test("run lock: renewals keep the hold past its first expiry; a run whose hold was taken meanwhile learns it", async () => {
  const { kv, clock, store } = await setUp();
  try {
    const TTL = 30; // renewed every 10 ms (of real time; the hold's time is the test's clock)
    const locks = new SyncRunLocks(store, clock.now, TTL);
    const other = new SyncRunLocks(store, clock.now, TTL);
    let lost = 0;
    let onLost!: () => void;
    const lostSignal = new Promise<void>((resolve) => onLost = resolve);
    const run = held(
      await locks.acquire([4], "full-update", () => {
        lost++;
        onLost();
      }),
    );
    // A renewal at +20 moves the expiry to +50 at least: at +40 the hold still stands.
    clock.advance(20);
    await store.renewedSince(clock.now());
    assert.ok(store.renewals.every((r) => r.ours));
    clock.advance(20);
    assert.equal(isRunning(await acquireNow(other, [4], "other")), true);
    assert.equal(lost, 0);
    // The process stalls (no renewal) past the expiry; another takes the endpoint; the next
    // renewal says so.
    await store.hold();
    clock.advance(1_000);
    const taker = held(await acquireNow(other, [4], "other"));
    store.open();
    await lostSignal;
    assert.equal(lost >= 1, true);
    assert.deepEqual(store.renewals.at(-1), { at: clock.now(), ours: false });
    await run.end();
    // The lost run's end frees nothing of the taker's.
    assert.equal(isRunning(await acquireNow(locks, [4], "again")), true);
    await taker.end();
    const last = held(await acquireNow(locks, [4], "again"));
    await last.end();
  } finally {
    kv.close();
  }
});

Deno.test("run lock: a cancelled run whose release failed is no longer waited for: the next run is told the hold stands", async () => {
  const { kv, clock, store } = await setUp();
  try {
    const failing: SyncRunLockStore = {
      take: (ids, hold, ttl) => store.take(ids, hold, ttl),
      renew: (ids, runId, ttl) => store.renew(ids, runId, ttl),
      release: () => Promise.reject(new Error("store unavailable")),
    };
    const locks = new SyncRunLocks(failing, clock.now);
    const first = held(await acquireNow(locks, [1], "full-update"));
    first.cancelled();
    await assert.rejects(first.end(), /store unavailable/);
    // The hold lasts until it lapses; the ended run is not waited for (it never ends again).
    const answer = await acquireNow(locks, [1], "again");
    assert.equal(isRunning(answer), true);
    assert.equal((answer as { running: SyncRunHold }).running.run_id, first.runId);
    clock.advance(60_001);
    const next = held(await acquireNow(locks, [1], "again"));
    await assert.rejects(next.end(), /store unavailable/); // its renewals stop all the same
  } finally {
    kv.close();
  }
});
