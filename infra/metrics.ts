/**
 * The metrics port: what the app counts and times, as named events. Infrastructure, as the logger
 * is (docs/architecture.md, The logger): every room may take a `Metrics` through its deps, and
 * this module imports nothing of the app. main.ts injects the Prometheus registry
 * (infra/prometheus.ts); `noopMetrics` stands in where nothing is scraped. What each event becomes
 * on `GET /metrics` is listed in docs/metrics.md.
 *
 * Every label value passed here must come from a closed set the app defines (a route pattern, a
 * stage type, an outcome name), never from a request: a client must not be able to grow the
 * registry.
 */

/** The streams open at once, by transport (the WebSocket variants and the browser terminal). */
export type StreamKind = "sse" | "websocket" | "terminal";

/** The five counts of a sync stage (domain/sync/context.ts StageResult). */
export interface ObjectCounts {
  created: number;
  updated: number;
  unchanged: number;
  deleted: number;
  failed: number;
}

/** Jobs waiting or running, by status (scheduled, pending, running), as the store holds them. */
export type JobCounts = Record<string, number>;

export interface Metrics {
  /** One answered HTTP request: the mount, the route PATTERN (never the raw path), the status. */
  request(
    labels: { surface: string; method: string; route: string; status: number },
    seconds: number,
  ): void;
  /** One sync stage done (all endpoints of the run together); `counts` are its objects. */
  syncStage(stage: string, seconds: number, counts: ObjectCounts, dryRun: boolean): void;
  /** One sync run ended: ok, failed (errors reported) or cancelled. */
  syncRun(outcome: "ok" | "failed" | "cancelled", seconds: number, dryRun: boolean): void;
  /** One job ended with its final status (completed, errored, failed). */
  jobFinished(kind: string, status: string, seconds: number): void;
  /**
   * Reads the job store's waiting and running jobs when metrics are scraped (the figure is the
   * store's, so every process sharing it reports the same). The last registration wins.
   */
  jobCounts(read: () => Promise<JobCounts>): void;
  /** One operational verb answered: `outcome` is its result or why it did not run. */
  verb(verb: string, outcome: string): void;
  /** A failed sign-in or key check counted toward a lockout, on `surface`. */
  loginFailure(surface: string): void;
  /** A client locked out (MAX_FAILURES reached) on `surface`. */
  loginLocked(surface: string): void;
  /** One Deno KV call (get, getMany, set, delete, list, commit) and how long it took. */
  kvOperation(operation: string, seconds: number, ok: boolean): void;
  /** The mutations (set, delete, sum, min, max) one committed KV atomic carried. */
  kvMutations(count: number): void;
  /** The entries one KV read returned or looked up: get 1, getMany its keys, list its entries. */
  kvKeysRead(operation: string, count: number): void;
  /**
   * A stream opened; call the returned function once when it closes (further calls do nothing).
   * SSE, WebSocket and terminal streams all report here.
   */
  streamOpened(kind: StreamKind): () => void;
  /** The exposition a scraper reads (`GET /metrics`); empty when nothing is kept. */
  exposition(): Promise<{ contentType: string; body: string }>;
}

const nothing = () => {};

/** Counts nothing: the default where no registry is injected. */
export const noopMetrics: Metrics = {
  request: nothing,
  syncStage: nothing,
  syncRun: nothing,
  jobFinished: nothing,
  jobCounts: nothing,
  verb: nothing,
  loginFailure: nothing,
  loginLocked: nothing,
  kvOperation: nothing,
  kvMutations: nothing,
  kvKeysRead: nothing,
  streamOpened: () => nothing,
  exposition: () => Promise.resolve({ contentType: "text/plain; charset=utf-8", body: "" }),
};

/** A lockout's failures and locks as metrics of `surface` (domain/lockout.ts LockoutEvents). */
export function loginEvents(metrics: Metrics | undefined, surface: string) {
  return {
    failure: () => metrics?.loginFailure(surface),
    locked: () => metrics?.loginLocked(surface),
  };
}
