/**
 * One sync run per hypervisor endpoint: a hold per endpoint under `["sync_run", id]`, taken for
 * all endpoints of a run in one atomic step (every key checked), so two processes sharing the
 * KV file never both win. An expired hold (its process died) counts as free.
 */
import { retryAtomic } from "./ids.ts";
import { MAX_RUN_ENDPOINTS, type SyncRunHold, type SyncRunLockStore } from "../ports.ts";

const key = (endpointId: number): Deno.KvKey => ["sync_run", endpointId];
/** KV allows 100 checks per atomic; a run over more endpoints than that is refused whole. */
const MAX_ENDPOINTS = MAX_RUN_ENDPOINTS;
/** KV's getMany reads at most 10 keys per call. */
const READ_BATCH = 10;

/** The holds of `ids`, in order, read 10 keys at a time (the batches sent together). */
async function readHolds(kv: Deno.Kv, ids: readonly number[]) {
  const batches: Promise<Deno.KvEntryMaybe<SyncRunHold>[]>[] = [];
  for (let i = 0; i < ids.length; i += READ_BATCH) {
    batches.push(kv.getMany<SyncRunHold[]>(ids.slice(i, i + READ_BATCH).map(key)));
  }
  return (await Promise.all(batches)).flat();
}

export class KvSyncRunLockStore implements SyncRunLockStore {
  constructor(private readonly kv: Deno.Kv, private readonly now: () => number) {}

  async take(
    endpointIds: readonly number[],
    hold: Omit<SyncRunHold, "endpoint_id" | "expires_at">,
    ttlMs: number,
  ): Promise<{ ok: true } | { ok: false; held: SyncRunHold }> {
    const ids = [...new Set(endpointIds)].sort((a, b) => a - b);
    if (!ids.length) return { ok: true };
    if (ids.length > MAX_ENDPOINTS) {
      throw new RangeError(`a sync run covers at most ${MAX_ENDPOINTS} endpoints`);
    }
    return await retryAtomic(async () => {
      const entries = await readHolds(this.kv, ids);
      const now = this.now();
      for (const entry of entries) {
        const held = entry.value;
        if (held && held.expires_at > now && held.run_id !== hold.run_id) {
          return { ok: false as const, held };
        }
      }
      const op = this.kv.atomic();
      entries.forEach((entry, i) => {
        op.check(entry).set(
          key(ids[i]),
          {
            ...hold,
            endpoint_id: ids[i],
            expires_at: now + ttlMs,
          } satisfies SyncRunHold,
        );
      });
      return (await op.commit()).ok ? { ok: true as const } : undefined;
    });
  }

  async renew(endpointIds: readonly number[], runId: string, ttlMs: number): Promise<boolean> {
    const ids = [...new Set(endpointIds)];
    if (!ids.length) return true;
    return await retryAtomic(async () => {
      const entries = await readHolds(this.kv, ids);
      if (entries.some((e) => e.value?.run_id !== runId)) return false;
      const op = this.kv.atomic();
      const expires = this.now() + ttlMs;
      for (const entry of entries) {
        op.check(entry).set(entry.key, { ...entry.value!, expires_at: expires });
      }
      return (await op.commit()).ok ? true : undefined;
    });
  }

  async release(endpointIds: readonly number[], runId: string): Promise<void> {
    const ids = [...new Set(endpointIds)];
    if (!ids.length) return;
    await retryAtomic(async () => {
      const entries = await readHolds(this.kv, ids);
      const op = this.kv.atomic();
      for (const entry of entries) {
        if (entry.value?.run_id === runId) op.check(entry).delete(entry.key);
      }
      return (await op.commit()).ok ? true : undefined;
    });
  }
}
