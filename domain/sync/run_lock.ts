/**
 * One sync run per hypervisor endpoint at a time, on the backend (docs/sync.md, "One run per
 * endpoint"). The plugin's job lease covers jobs only; direct calls to `/full-update/stream` or
 * a stage meet here. Holds live in the store (atomic checks, so several processes on one KV
 * agree) and expire unless renewed, so a dead process frees its endpoints by itself.
 *
 * A run of this process that was cancelled (its client went away) is still finishing the call
 * in flight: a new run for the same endpoints waits for it to end instead of being refused.
 */
import type { SyncRunHold, SyncRunLockStore } from "../../storage/ports.ts";

export const SYNC_RUN_TTL_MS = 60_000;

export interface HeldRun {
  runId: string;
  /** Marks the run as cancelled: a newcomer for its endpoints waits for `end` instead of a 409. */
  cancelled(): void;
  /** Frees the endpoints (always call it, also after a failure). */
  end(): Promise<void>;
}

export interface SyncRunning {
  running: SyncRunHold;
}

interface LocalRun {
  cancelled: boolean;
  ended: Promise<void>;
}

export class SyncRunLocks {
  readonly #owner = crypto.randomUUID();
  readonly #local = new Map<string, LocalRun>();

  constructor(
    private readonly store: SyncRunLockStore,
    private readonly now: () => number,
    private readonly ttlMs = SYNC_RUN_TTL_MS,
  ) {}

  /**
   * Takes the endpoints for one run, or says who holds one of them. `onLost` is called when a
   * renewal finds the hold taken by someone else (this process stalled past the expiry): the
   * run must stop writing.
   */
  async acquire(
    endpointIds: readonly number[],
    what: string,
    onLost: () => void,
    onWait: (running: SyncRunHold) => void = () => {},
  ): Promise<HeldRun | SyncRunning> {
    const runId = crypto.randomUUID();
    for (;;) {
      const taken = await this.store.take(endpointIds, {
        run_id: runId,
        owner: this.#owner,
        what,
        started_at: this.now(),
      }, this.ttlMs);
      if (taken.ok) break;
      const local = taken.held.owner === this.#owner ? this.#local.get(taken.held.run_id) : null;
      if (!local?.cancelled) return { running: taken.held };
      onWait(taken.held);
      await local.ended;
    }
    let resolveEnded!: () => void;
    const local: LocalRun = {
      cancelled: false,
      ended: new Promise((resolve) => resolveEnded = resolve),
    };
    this.#local.set(runId, local);
    const timer = setInterval(() => {
      this.store.renew(endpointIds, runId, this.ttlMs).then((ours) => {
        if (!ours) onLost();
      }, () => {/* the next tick tries again; the hold outlives one missed renewal */});
    }, Math.max(10, Math.floor(this.ttlMs / 3)));
    let ended = false;
    return {
      runId,
      cancelled: () => {
        local.cancelled = true;
      },
      end: async () => {
        if (ended) return;
        ended = true;
        clearInterval(timer);
        try {
          await this.store.release(endpointIds, runId);
        } finally {
          this.#local.delete(runId);
          resolveEnded();
        }
      },
    };
  }
}

export function isRunning(value: HeldRun | SyncRunning): value is SyncRunning {
  return "running" in value;
}
