/**
 * The metrics port (infra/metrics.ts) kept in a prom-client registry and written in the
 * Prometheus text format for `GET /metrics`. One registry per app instance, made by main.ts (or a
 * test) and injected: nothing here registers with prom-client's global default registry. The
 * metrics, their labels and what to graph are in docs/metrics.md.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { JobCounts, Metrics, ObjectCounts, StreamKind } from "./metrics.ts";

/** Seconds: from a fast KV read to a stage over thousands of objects. */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const STAGE_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const KV_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5];

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
const OUTCOMES = ["created", "updated", "unchanged", "deleted", "failed"] as const;
/** The job states a job can be in before it ends (domain/jobs/service.ts). */
const JOB_STATES = ["scheduled", "pending", "running"] as const;

/**
 * The most route patterns kept per surface. Patterns come from the app's own route tables, so a
 * few hundred at most exist; the cap is a second wall should a caller ever pass something else.
 */
export const MAX_ROUTES_PER_SURFACE = 1000;
export const OVERFLOW_ROUTE = "(other)";

export interface PrometheusOptions {
  /** The app's version, shown as `bridgebox_build_info{version}`. */
  version?: string;
  /** Reports a failure reading the job store at scrape time (the gauge keeps its last value). */
  onCollectError?: (error: unknown) => void;
}

export type PrometheusMetrics = Metrics & { readonly registry: Registry };

export function prometheusMetrics(options: PrometheusOptions = {}): PrometheusMetrics {
  const registry = new Registry();
  const registers = [registry];

  const requests = new Counter({
    name: "bridgebox_http_requests_total",
    help: "HTTP requests answered, by surface, method, route pattern and status.",
    labelNames: ["surface", "method", "route", "status"] as const,
    registers,
  });
  const requestSeconds = new Histogram({
    name: "bridgebox_http_request_duration_seconds",
    help: "Time to the response head (streams: until the stream opened), by route pattern.",
    labelNames: ["surface", "method", "route"] as const,
    buckets: REQUEST_BUCKETS,
    registers,
  });
  const syncRuns = new Counter({
    name: "bridgebox_sync_runs_total",
    help: "Sync runs ended, by outcome (ok, failed, cancelled) and whether they were dry runs.",
    labelNames: ["outcome", "dry_run"] as const,
    registers,
  });
  const syncRunSeconds = new Histogram({
    name: "bridgebox_sync_run_duration_seconds",
    help: "How long sync runs took, by outcome.",
    labelNames: ["outcome"] as const,
    buckets: STAGE_BUCKETS,
    registers,
  });
  const stageSeconds = new Histogram({
    name: "bridgebox_sync_stage_duration_seconds",
    help: "How long each sync stage took, all endpoints of the run together.",
    labelNames: ["stage"] as const,
    buckets: STAGE_BUCKETS,
    registers,
  });
  const objects = new Counter({
    name: "bridgebox_sync_objects_total",
    help: "Inventory objects the sync created, updated, left unchanged, deleted or failed to " +
      "write, by stage (the kind of object). Dry runs are not counted.",
    labelNames: ["stage", "outcome"] as const,
    registers,
  });
  const jobsFinished = new Counter({
    name: "bridgebox_jobs_finished_total",
    help: "Sync and repair jobs this process ran to an end, by kind and final status.",
    labelNames: ["kind", "status"] as const,
    registers,
  });
  const jobSeconds = new Histogram({
    name: "bridgebox_job_duration_seconds",
    help: "How long jobs this process ran took, by kind.",
    labelNames: ["kind"] as const,
    buckets: STAGE_BUCKETS,
    registers,
  });
  let readJobs: (() => Promise<JobCounts>) | undefined;
  new Gauge({
    name: "bridgebox_jobs",
    help: "Jobs waiting or running in the job store now, by status (scheduled, pending, " +
      "running; read when scraped).",
    labelNames: ["status"] as const,
    registers,
    async collect() {
      if (!readJobs) return;
      try {
        const counts = await readJobs();
        for (const status of JOB_STATES) this.set({ status }, counts[status] ?? 0);
      } catch (error) {
        options.onCollectError?.(error);
      }
    },
  });
  const verbs = new Counter({
    name: "bridgebox_verbs_total",
    help: "Operational verbs answered, by verb and outcome (the verb's result, or why it did " +
      "not run).",
    labelNames: ["verb", "outcome"] as const,
    registers,
  });
  const loginFailures = new Counter({
    name: "bridgebox_login_failures_total",
    help: "Failed sign-ins and API key checks counted toward a lockout, by surface.",
    labelNames: ["surface"] as const,
    registers,
  });
  const loginLocks = new Counter({
    name: "bridgebox_login_lockouts_total",
    help: "Clients locked out after too many failures, by surface.",
    labelNames: ["surface"] as const,
    registers,
  });
  const kvSeconds = new Histogram({
    name: "bridgebox_kv_operation_duration_seconds",
    help: "Deno KV calls and how long they took, by operation.",
    labelNames: ["operation"] as const,
    buckets: KV_BUCKETS,
    registers,
  });
  const kvErrors = new Counter({
    name: "bridgebox_kv_operation_errors_total",
    help: "Deno KV calls that threw, by operation.",
    labelNames: ["operation"] as const,
    registers,
  });
  const kvMutations = new Counter({
    name: "bridgebox_kv_mutations_total",
    help: "Mutations (set, delete, sum, min, max) carried by committed Deno KV atomics.",
    registers,
  });
  const kvKeysRead = new Counter({
    name: "bridgebox_kv_keys_read_total",
    help:
      "Entries Deno KV reads returned or looked up (get 1, getMany its keys, list its entries).",
    labelNames: ["operation"] as const,
    registers,
  });
  const openStreams = new Gauge({
    name: "bridgebox_open_streams",
    help: "Streams open now, by kind (sse, websocket, terminal).",
    labelNames: ["kind"] as const,
    registers,
  });
  for (const kind of ["sse", "websocket", "terminal"]) openStreams.set({ kind }, 0);
  new Gauge({
    name: "bridgebox_build_info",
    help: "Always 1; the running version as a label.",
    labelNames: ["version"] as const,
    registers,
  }).set({ version: options.version ?? "unknown" }, 1);
  const startedAt = Date.now() / 1000;
  new Gauge({
    name: "process_start_time_seconds",
    help: "Start time of the process since the Unix epoch, in seconds.",
    registers,
  }).set(startedAt);
  new Gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
    registers,
    collect() {
      this.set(Deno.memoryUsage().rss);
    },
  });
  new Gauge({
    name: "process_heap_used_bytes",
    help: "V8 heap in use (live objects and garbage not yet collected), in bytes.",
    registers,
    collect() {
      this.set(Deno.memoryUsage().heapUsed);
    },
  });

  /** Route patterns seen per surface: beyond the cap, new ones are counted as OVERFLOW_ROUTE. */
  const routes = new Map<string, Set<string>>();
  const boundedRoute = (surface: string, route: string) => {
    let seen = routes.get(surface);
    if (!seen) routes.set(surface, seen = new Set());
    if (seen.has(route)) return route;
    if (seen.size >= MAX_ROUTES_PER_SURFACE) return OVERFLOW_ROUTE;
    seen.add(route);
    return route;
  };

  return {
    registry,
    request({ surface, method, route, status }, seconds) {
      const m = METHODS.has(method) ? method : "OTHER";
      const r = boundedRoute(surface, route);
      const s = Number.isInteger(status) && status >= 100 && status <= 599 ? String(status) : "0";
      requests.inc({ surface, method: m, route: r, status: s });
      requestSeconds.observe({ surface, method: m, route: r }, seconds);
    },
    syncStage(stage: string, seconds: number, counts: ObjectCounts, dryRun: boolean) {
      stageSeconds.observe({ stage }, seconds);
      if (dryRun) return;
      for (const outcome of OUTCOMES) {
        if (counts[outcome] > 0) objects.inc({ stage, outcome }, counts[outcome]);
      }
    },
    syncRun(outcome, seconds, dryRun) {
      syncRuns.inc({ outcome, dry_run: String(dryRun) });
      syncRunSeconds.observe({ outcome }, seconds);
    },
    jobFinished(kind, status, seconds) {
      jobsFinished.inc({ kind, status });
      jobSeconds.observe({ kind }, seconds);
    },
    jobCounts(read) {
      readJobs = read;
    },
    verb(verb, outcome) {
      verbs.inc({ verb, outcome });
    },
    loginFailure(surface) {
      loginFailures.inc({ surface });
    },
    loginLocked(surface) {
      loginLocks.inc({ surface });
    },
    kvOperation(operation, seconds, ok) {
      kvSeconds.observe({ operation }, seconds);
      if (!ok) kvErrors.inc({ operation });
    },
    kvMutations(count) {
      kvMutations.inc(count);
    },
    kvKeysRead(operation, count) {
      kvKeysRead.inc({ operation }, count);
    },
    streamOpened(kind: StreamKind) {
      openStreams.inc({ kind });
      let open = true;
      return () => {
        if (!open) return;
        open = false;
        openStreams.dec({ kind });
      };
    },
    async exposition() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}
