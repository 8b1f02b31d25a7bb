// deno-lint-ignore-file no-explicit-any
/**
 * The job service in process, fast: the real inventory engine (core.job, users.token) and the
 * real KV job store on `:memory:`, a clock the test moves by hand, and a fake backend link whose
 * stage streams the test writes (and may hold on a promise). Queue messages go to the real KV
 * queue; the store also notes each one (nothing replaced), and the test delivers a message by
 * calling `handle(id)` itself, so nothing waits on wall-clock time.
 */
import { ModelEngine } from "../../../domain/netbox/engine.ts";
import { JOB, tokenModel } from "../../../domain/netbox/models/core.ts";
import { JOB_MODEL } from "../../../domain/netbox/jobs.ts";
import { TOKEN_MODEL } from "../../../domain/netbox/tokens.ts";
import { JobService } from "../../../domain/jobs/service.ts";
import type { SyncRequest } from "../../../domain/jobs/request.ts";
import type {
  BackendLink,
  JobEndpoint,
  JobPart,
  PluginSide,
  StageStream,
} from "../../../domain/jobs/ports.ts";
import { JOB_STAGES, SYNC_TYPES } from "../../../domain/jobs/stages.ts";
import { MemoryLogger } from "../../../infra/logger.ts";
import { noopMetrics } from "../../../infra/metrics.ts";
import type { SpanAttributes, Tracer } from "../../../infra/tracing.ts";
import { KvModelStore } from "../../../storage/kv/models.ts";
import { KvJobStore } from "../../../storage/kv/jobs.ts";

export type Frame = { event: string; data: any };

/**
 * Looks at the parts one world's store answers. A job's process looks once per part it runs and
 * again at each pause while another process runs one (pauses take no time here: 13 looks at
 * most in these tests); far more is a run that waits for what never comes, or goes round for
 * ever, and it fails at once instead of hanging the suite.
 */
export const MAX_PART_LOOKS = 1_000;

export const T0 = Date.parse("2030-01-01T00:00:00.000Z");
export const MINUTE = 60_000;

/** The frames of a stage stream in which every given stage creates one object. */
export function stageFrames(types: readonly string[], fail: Record<string, string> = {}): Frame[] {
  const out: Frame[] = [];
  for (const step of types) {
    out.push({ event: "step", data: { step, status: "started" } });
    if (fail[step]) {
      out.push({
        event: "error",
        data: { step, error: "Hypervisor request failed", detail: fail[step] },
      });
    }
    out.push({
      event: "step",
      data: {
        step,
        status: "completed",
        result: { created: 1, updated: 0, unchanged: 0, deleted: 0, failed: fail[step] ? 1 : 0 },
        elapsed_ms: 5,
      },
    });
  }
  const errors = Object.entries(fail).map(([step, detail]) => ({ step, detail }));
  out.push({ event: "complete", data: errors.length ? { ok: false, errors } : { ok: true } });
  return out;
}

async function* replay(frames: Frame[]): AsyncIterable<Frame> {
  for (const f of frames) yield f;
}

export const streamOf = (frames: Frame[]): StageStream => ({
  ok: true,
  status: 200,
  events: replay(frames),
});

/** The stages one stream path stands for. */
export function typesOf(path: string): string[] {
  const bare = path.split("?")[0];
  if (bare === "/full-update/stream") return [...SYNC_TYPES];
  return JOB_STAGES.filter((s) => s.stream === bare).map((s) => s.type);
}

/** The KV job store, noting every queue message it sends (the message is still sent). */
export class NotingJobStore extends KvJobStore {
  readonly queued: { job_id: number; delay_ms: number }[] = [];
  override async enqueue(jobId: number, delayMs: number): Promise<void> {
    this.queued.push({ job_id: jobId, delay_ms: delayMs });
    await super.enqueue(jobId, delayMs);
  }
  #looks = 0;
  override async parts(jobId?: number): Promise<JobPart[]> {
    if (++this.#looks > MAX_PART_LOOKS) {
      throw new Error(`the parts were looked at ${MAX_PART_LOOKS} times: a run that never ends`);
    }
    return await super.parts(jobId);
  }
  /** The messages sent for one job, in order. */
  queuedFor(jobId: number): number[] {
    return this.queued.filter((m) => m.job_id === jobId).map((m) => m.delay_ms);
  }
}

export interface WorldOptions {
  endpoints?: JobEndpoint[];
  /** A stage stream's answer: the path with its query, the backend copy id it is scoped to. */
  answer?: (
    path: string,
    copyId: number,
    signal: AbortSignal,
  ) => StageStream | Promise<StageStream>;
  retention?: number;
  leaseMs?: number;
  owner?: string;
  /** Secrets the plugin side names (the log and the error must never hold them). */
  secrets?: string[];
  /** Another process on the same KV, engine and clock (its own job store and owner). */
  sharing?: ServiceWorld;
  /** The clock (epoch ms) the service reads; shared ones move together. */
  clock?: { t: number };
  /** Live progress frames are kept at most this often (default: every one). */
  progressEveryMs?: number;
  /** Called at each pause the service takes (the pause itself takes no time). */
  onPause?: (ms: number) => void;
}

/** A span the service opened: its name, its attributes (as set last), its failure. */
export interface SeenSpan {
  name: string;
  attributes: SpanAttributes;
  failed: string | null;
}

export interface ServiceWorld {
  kv: Deno.Kv;
  engine: ModelEngine;
  store: NotingJobStore;
  service: JobService;
  logger: MemoryLogger;
  clock: { t: number };
  /** Every stage stream asked for: `<copy id> <path without query>`. */
  streams: string[];
  lastSync: Map<number, { at: string; ok: boolean; job_id: number; status: string }[]>;
  tokenId: number;
  endpoints: JobEndpoint[];
  /** Every pause the service took (ms asked for), in order: they take no time here. */
  pauses: number[];
  /** Finished jobs as counted for the metrics: kind, status, seconds. */
  finished: [string, string, number][];
  /** The metrics' reader of the scheduled/pending/running counts. */
  counts(): Promise<Record<string, number>>;
  spans: SeenSpan[];
  submit(
    request?: Partial<SyncRequest>,
    kind?: "sync" | "repair",
  ): ReturnType<JobService["submit"]>;
  /** Submits and expects admission: the job id. */
  admit(request?: Partial<SyncRequest>, kind?: "sync" | "repair"): Promise<number>;
  job(id: number): Promise<any>;
  /** The job's log messages, in order. */
  messages(id: number): Promise<string[]>;
  close(): void;
}

export const statusOf = (job: any) => job?.status?.value ?? job?.status;

export function endpoint(id: number, name: string, enabled = true): JobEndpoint {
  return { id, name, enabled, copyName: `${name} (inv:${id})` };
}

export async function serviceWorld(options: WorldOptions = {}): Promise<ServiceWorld> {
  const shared = options.sharing;
  const clock = shared?.clock ?? options.clock ?? { t: T0 };
  const now = () => clock.t;
  const kv = shared?.kv ?? await Deno.openKv(":memory:");
  const logger = new MemoryLogger();
  const engine = shared?.engine ??
    new ModelEngine({ store: new KvModelStore(kv), logger, now }).register(JOB, tokenModel({}));
  const store = new NotingJobStore(kv, now);
  const endpoints = options.endpoints ?? shared?.endpoints ?? [endpoint(1, "pve")];
  const streams: string[] = shared?.streams ?? [];
  const lastSync: ServiceWorld["lastSync"] = shared?.lastSync ?? new Map();
  const answer = options.answer ?? ((path: string) => streamOf(stageFrames(typesOf(path))));
  const link: BackendLink = {
    url: "http://backend.test",
    health: () => Promise.resolve({ ok: true, status: 200, error: null }),
    stream: async (path, signal) => {
      const copyId = Number(new URLSearchParams(path.split("?")[1]).get("hypervisor_endpoint_ids"));
      streams.push(`${copyId} ${path.split("?")[0]}`);
      return await answer(path, copyId, signal);
    },
    reconcile: () =>
      Promise.resolve({ ok: true, status: 200, error: null, body: { created: 2, updated: 0 } }),
    copies: () =>
      Promise.resolve({
        ok: true,
        status: 200,
        error: null,
        copies: endpoints.map((e) => ({ id: 100 + e.id, name: e.copyName })),
      }),
  };
  const plugin: PluginSide = {
    backend: () => Promise.resolve(link),
    renewBackendKey: () => Promise.resolve(link),
    endpoints: () => Promise.resolve(endpoints),
    pushAll: (ids) =>
      Promise.resolve(
        ids.map((id) => ({
          what: `hypervisor endpoint "${endpoints.find((e) => e.id === id)?.name}"`,
          ok: true,
          error: null,
          status: 200,
        })),
      ),
    recordLastSync: (id, last) => {
      lastSync.set(id, [...(lastSync.get(id) ?? []), last]);
      return Promise.resolve();
    },
    secrets: () => Promise.resolve(options.secrets ?? []),
  };
  const finished: [string, string, number][] = [];
  const pauses: number[] = [];
  let countsReader: () => Promise<Record<string, number>> = () => Promise.resolve({});
  const spans: SeenSpan[] = [];
  const tracer: Tracer = {
    span: (name, attributes, work) => {
      const seen: SeenSpan = { name, attributes: { ...attributes }, failed: null };
      spans.push(seen);
      return work({
        set: (more) => Object.assign(seen.attributes, more),
        fail: (message) => void (seen.failed = message),
      });
    },
    start: () => ({ set: () => {}, fail: () => {}, end: () => {} }),
  };
  const service = new JobService({
    engine,
    store,
    plugin,
    logger,
    now,
    owner: options.owner ?? "p1",
    leaseMs: options.leaseMs,
    retention: options.retention,
    progressEveryMs: options.progressEveryMs ?? 0,
    metrics: {
      ...noopMetrics,
      jobFinished: (kind, status, seconds) => void finished.push([kind, status, seconds]),
      jobCounts: (read) => void (countsReader = read),
    },
    tracer,
    timing: {
      healthBackoffMs: [1, 1, 1],
      retryBackoffMs: [1, 1],
      // Pauses take no time: the test's clock only moves when the test moves it.
      sleep: (ms, signal) => {
        signal.throwIfAborted();
        pauses.push(ms);
        options.onPause?.(ms);
        return Promise.resolve();
      },
    },
  });
  let tokenId = shared?.tokenId ?? 0;
  if (!shared) {
    const token = await engine.insert(TOKEN_MODEL, {
      version: 1,
      is_superuser: true,
      write_enabled: true,
      description: "ops",
    });
    if (!token.ok) throw new Error(JSON.stringify(token));
    tokenId = token.value.id;
  }
  const submit: ServiceWorld["submit"] = (request = {}, kind = "sync") =>
    service.submit(
      {
        sync_types: ["devices"],
        endpoint_ids: null,
        job_name: null,
        schedule_at: null,
        interval_minutes: null,
        ...request,
      },
      { token_id: tokenId, description: "ops" },
      kind,
    );
  const job = async (id: number) => await engine.get(JOB_MODEL, id);
  return {
    kv,
    engine,
    store,
    service,
    logger,
    clock,
    streams,
    lastSync,
    tokenId,
    endpoints,
    finished,
    pauses,
    counts: () => countsReader(),
    spans,
    submit,
    async admit(request, kind) {
      const admitted = await submit(request, kind);
      if (!admitted.ok) throw new Error(`not admitted: ${JSON.stringify(admitted)}`);
      return admitted.job.id;
    },
    job,
    async messages(id) {
      const entries = ((await job(id))?.log_entries ?? []) as { message: string }[];
      return entries.map((l) => l.message);
    },
    close: () => {
      if (!shared) kv.close();
    },
  };
}
