/**
 * What a stage is given: the two ports for one hypervisor endpoint, the abort signal, a
 * tally of what it did, progress reporting, and a cache shared by the stages of one run (so a
 * full update reads each guest config once and finds the objects earlier stages wrote).
 */
import type { HypervisorReader, InventoryApi, SyncEndpoint } from "./ports.ts";
import type { SyncOptions } from "./options.ts";
import type { SyncLedger } from "./ledger.ts";

export interface StageResult {
  created: number;
  updated: number;
  unchanged: number;
  deleted: number;
  failed: number;
}

export const emptyResult = (): StageResult => ({
  created: 0,
  updated: 0,
  unchanged: 0,
  deleted: 0,
  failed: 0,
});

export function addResults(into: StageResult, from: StageResult): StageResult {
  into.created += from.created;
  into.updated += from.updated;
  into.unchanged += from.unchanged;
  into.deleted += from.deleted;
  into.failed += from.failed;
  return into;
}

export type ProgressFn = (current: number, total: number, message: string) => void;

export interface StageContext {
  endpoint: SyncEndpoint;
  hv: HypervisorReader;
  inv: InventoryApi;
  signal: AbortSignal;
  result: StageResult;
  progress: ProgressFn;
  /** Per endpoint, per run: memoised lookups. */
  cache: Map<string, unknown>;
  /** Per run, across endpoints: objects every endpoint shares (tags, roles, types). */
  shared: Map<string, unknown>;
  now: () => number;
  /** Bounded concurrency for hypervisor reads. */
  concurrency: number;
  /** The run's options (docs/sync.md, "Run options"): ownership, orphans, primary IPs. */
  options: SyncOptions;
  /**
   * One object the inventory refused while the rest of its batch was written: counted as
   * failed and reported (an error frame naming the object), the stage goes on.
   */
  itemFailed: (object: string, error: unknown) => void;
  /**
   * One object not written because the inventory already holds it for another owner (a true
   * conflict of NetBox's unique IP space, docs/sync.md): reported, not a failure of the run.
   */
  itemConflict: (object: string, detail: string) => void;
  /**
   * One object someone edited in the inventory between the stage's read and its write: it was
   * re-read and the owner policy applied again (docs/sync.md, "Edits made while a run writes").
   * Reported, not a failure. Absent: not reported.
   */
  itemEdited?: (object: string, detail: string) => void;
  /**
   * This endpoint's ledger on the inventory (docs/sync.md, "Re-runs: guests that did not
   * change"): the guest stages skip the guests it vouches for. Absent (a dry run, a port
   * without a change log): every guest is compared.
   */
  ledger?: SyncLedger;
}

/** Memoise one value per run and endpoint under `key`. */
export function memo<T>(ctx: StageContext, key: string, make: () => Promise<T>): Promise<T> {
  return remember(ctx.cache, key, make);
}

/** Memoise one value per run for every endpoint (shared reference objects). */
export function memoShared<T>(ctx: StageContext, key: string, make: () => Promise<T>): Promise<T> {
  return remember(ctx.shared, key, make);
}

function remember<T>(cache: Map<string, unknown>, key: string, make: () => Promise<T>): Promise<T> {
  const hit = cache.get(key) as Promise<T> | undefined;
  if (hit) return hit;
  const made = make();
  cache.set(key, made);
  // A failed lookup is not remembered: the next stage tries again.
  made.catch(() => {
    if (cache.get(key) === made) cache.delete(key);
  });
  return made;
}

/** Forget a memoised value (a stage changed what it describes). */
export function forget(ctx: StageContext, key: string): void {
  ctx.cache.delete(key);
}

/** Runs `work` over `items` with at most `limit` at a time; stops early on abort. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  signal: AbortSignal,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      signal.throwIfAborted();
      const i = next++;
      out[i] = await work(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** A memoised hypervisor GET: a full update reads each path once per run. */
export function hvGet<T>(
  ctx: StageContext,
  path: string,
  params?: Record<string, string | number | boolean | undefined>,
): Promise<T> {
  const key = `hv:${path}?${new URLSearchParams(params as Record<string, string>)}`;
  return memo(ctx, key, () => ctx.hv.get<T>(path, params, ctx.signal));
}
