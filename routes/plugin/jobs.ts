/**
 * The plugin's job routes and the job worker (docs/jobs.md):
 *
 * - `POST /api/plugins/service/sync/`           queue (or schedule) a sync job → 201 {ok, job_id, message}
 * - `POST /api/plugins/service/repair/`         reconcile custom fields, then a full sync → 201
 * - `GET  /api/plugins/service/jobs/{id}/stream` the job's log live (SSE), ends with the job
 * - `DELETE /api/core/jobs/{id}/`               cancel a scheduled or waiting job (NetBox's delete)
 *
 * The worker listens on the KV queue and, at start and every lease period, settles jobs a
 * dead process left running.
 */
import type { AppDeps } from "../_lib/deps.ts";
import { noopMetrics } from "../../infra/metrics.ts";
import { type AuthInfo, type EngineApi, objectNameOf } from "../../domain/netbox/types.ts";
import { JOB_MODEL } from "../../domain/netbox/jobs.ts";
import { DEFAULT_TIMING } from "../../domain/jobs/runner.ts";
import {
  DEFAULT_LEASE_MS,
  FINISHED,
  type JobRequester,
  JobService,
} from "../../domain/jobs/service.ts";
import { TOKEN_MODEL } from "../../domain/netbox/tokens.ts";
import { parseSyncRequest } from "../../domain/jobs/request.ts";
import { SYNC_TYPES } from "../../domain/jobs/stages.ts";
import type { PluginServices } from "../../domain/plugin/service.ts";
import { pluginSide } from "./job_wiring.ts";
import { ApiError, readJsonBody } from "../inventory/errors.ts";

export interface JobOptions {
  leaseMs?: number;
  retention?: number;
  healthBackoffMs?: number[];
  retryBackoffMs?: number[];
  /** Start the queue listener and the recovery check (default true). */
  worker?: boolean;
  keepaliveMs?: number;
  /**
   * How often a job stream reads the job again besides its watch (default: every second on a
   * local KV file, where a watch misses other processes' writes; never elsewhere).
   */
  lookEveryMs?: number;
  /** How often this process looks for parts of a running job to take (docs/jobs.md). */
  partPollMs?: number;
}

const DENIED = "You do not have permission to perform this action.";
const KEEPALIVE_MS = 15_000;
/**
 * On a local KV file a watch sees only this process's writes, and another process may run the job
 * or a part of it (docs/jobs.md, "Several processes"): its stream reads the job this often too.
 */
const SHARED_FILE_LOOK_MS = 1_000;
/**
 * Job streams one token may hold open at once in this process (SECURITY.md "Limits"): each
 * holds a KV watch and a timer, so an unbounded number from one token would cost the event loop.
 */
export const MAX_JOB_STREAMS_PER_TOKEN = 8;

function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(status === 204 ? null : JSON.stringify(body), {
    status,
    headers: status === 204 ? headers : { "content-type": "application/json", ...headers },
  });
}

function can(auth: AuthInfo, permission: string, write = false): boolean {
  if (write && !auth.writeEnabled) return false;
  return auth.isSuperuser || auth.permissions.has(permission);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal.removeEventListener("abort", stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    signal.addEventListener("abort", stop, { once: true });
  });
}

const ROUTES = {
  sync: /^\/api\/plugins\/service\/sync\/?$/,
  repair: /^\/api\/plugins\/service\/repair\/?$/,
  stream: /^\/api\/plugins\/service\/jobs\/(\d+)\/stream\/?$/,
  coreJob: /^\/api\/core\/jobs\/(\d+)\/?$/,
};

export interface JobRoutes {
  service: JobService;
  handle(request: Request, auth: AuthInfo): Promise<Response | null>;
}

export function createJobRoutes(
  deps: AppDeps,
  engine: EngineApi,
  services: PluginServices,
  options: JobOptions = {},
): JobRoutes {
  const store = deps.storage.jobs;
  const plugin = pluginSide(services, engine);
  const service = new JobService({
    engine,
    store,
    plugin,
    logger: deps.logger,
    now: deps.now,
    // The process id names the process in the job log ("taken by process …"); the random part
    // keeps two apps in one process (tests) apart.
    owner: `${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`,
    metrics: deps.metrics,
    tracer: deps.tracer,
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
    retention: options.retention,
    partPollMs: options.partPollMs,
    timing: {
      healthBackoffMs: options.healthBackoffMs ?? DEFAULT_TIMING.healthBackoffMs,
      retryBackoffMs: options.retryBackoffMs ?? DEFAULT_TIMING.retryBackoffMs,
      sleep,
    },
  });
  const keepaliveMs = options.keepaliveMs ?? KEEPALIVE_MS;
  const kvPath = deps.config.kvPath;
  const localFile = !!kvPath && kvPath !== ":memory:" && !/^https?:/i.test(kvPath);
  const lookEveryMs = options.lookEveryMs ?? (localFile ? SHARED_FILE_LOOK_MS : undefined);
  /** Open job streams per token id. */
  const openStreams = new Map<number, number>();

  if (options.worker !== false) startWorker(deps, service);

  const requester = async (auth: AuthInfo): Promise<JobRequester> => {
    const token = await engine.get(TOKEN_MODEL, auth.tokenId).catch(() => null);
    const description = typeof token?.description === "string" ? token.description : "";
    return { token_id: auth.tokenId, description: description.slice(0, 200) };
  };

  async function body(request: Request): Promise<unknown | Response> {
    try {
      return await readJsonBody(request);
    } catch (error) {
      if (error instanceof ApiError) return json(error.body, error.status);
      throw error;
    }
  }

  /** Storage still busy after the retries: a 503 to try again, never a 500. */
  async function submitOr503<T>(work: () => Promise<T>): Promise<T | Response> {
    try {
      return await work();
    } catch (error) {
      if (!/locked|busy|contention/i.test(String(error))) throw error;
      deps.logger.log("warning", "sync job not queued: storage busy", { error: String(error) });
      return json({ detail: "Storage is busy; try again." }, 503, { "retry-after": "1" });
    }
  }

  /** The per-token bound on scheduled and waiting jobs (SECURITY.md "Limits"). */
  function capAnswer(limit: number): Response {
    return json({
      ok: false,
      detail: `This token already has ${limit} scheduled or waiting jobs, the most one token ` +
        `may have (limit ${limit}); delete one (DELETE /api/core/jobs/{id}/) or let one run first.`,
      limit,
    }, 429);
  }

  async function sync(request: Request, auth: AuthInfo): Promise<Response> {
    if (request.method !== "POST") {
      return json({ detail: `Method "${request.method}" not allowed.` }, 405, { allow: "POST" });
    }
    if (!can(auth, "core.add_job", true)) return json({ detail: DENIED }, 403);
    const parsed0 = await body(request);
    if (parsed0 instanceof Response) return parsed0;
    const endpoints = await plugin.endpoints();
    const parsed = parseSyncRequest(parsed0 ?? {}, endpoints, deps.now());
    if (!parsed.ok) return json(parsed.errors, 400);
    const by = await requester(auth);
    const admitted = await submitOr503(() => service.submit(parsed.value, by));
    if (admitted instanceof Response) return admitted;
    if (!admitted.ok && admitted.reason === "cap") return capAnswer(admitted.limit);
    if (!admitted.ok) {
      return json({
        ok: false,
        detail: `A sync job is already pending or running (job ${admitted.holder}); ` +
          "wait for it to finish, or schedule this one with schedule_at.",
        job_id: admitted.holder,
      }, 409);
    }
    const job = admitted.job;
    const scheduled = String((job.status as { value?: string })?.value ?? job.status) ===
      "scheduled";
    return json({
      ok: true,
      job_id: job.id,
      message: scheduled
        ? `Sync job ${job.id} scheduled for ${job.scheduled}.`
        : `Sync job ${job.id} queued.`,
      url: `/api/core/jobs/${job.id}/`,
    }, 201);
  }

  async function repair(request: Request, auth: AuthInfo): Promise<Response> {
    if (request.method !== "POST") {
      return json({ detail: `Method "${request.method}" not allowed.` }, 405, { allow: "POST" });
    }
    if (!can(auth, "core.add_job", true)) return json({ detail: DENIED }, 403);
    await request.body?.cancel();
    const by = await requester(auth);
    const admitted = await submitOr503(() =>
      service.submit(
        {
          sync_types: [...SYNC_TYPES],
          endpoint_ids: null,
          job_name: null,
          schedule_at: null,
          interval_minutes: null,
        },
        by,
        "repair",
      )
    );
    if (admitted instanceof Response) return admitted;
    if (!admitted.ok && admitted.reason === "cap") return capAnswer(admitted.limit);
    if (!admitted.ok) {
      return json({
        ok: false,
        detail: `A repair is already pending or running (job ${admitted.holder}).`,
        job_id: admitted.holder,
      }, 409);
    }
    return json({
      ok: true,
      job_id: admitted.job.id,
      message: `Repair job ${admitted.job.id} queued: custom-field reconcile, then a full sync.`,
      url: `/api/core/jobs/${admitted.job.id}/`,
    }, 201);
  }

  async function cancel(request: Request, auth: AuthInfo, id: number): Promise<Response | null> {
    if (request.method !== "DELETE") return null; // reads go to the generic model routes
    if (!can(auth, "core.delete_job", true)) return json({ detail: DENIED }, 403);
    const result = await service.cancel(id);
    if (result === "missing") {
      return json({
        detail: `No ${objectNameOf(engine.definition(JOB_MODEL))} matches the given query.`,
      }, 404);
    }
    if (result === "running") {
      return json({ detail: "A running job cannot be deleted; wait for it to finish." }, 409);
    }
    return json(null, 204);
  }

  function stream(request: Request, auth: AuthInfo, id: number): Promise<Response> | Response {
    if (request.method !== "GET" && request.method !== "HEAD") {
      return json({ detail: `Method "${request.method}" not allowed.` }, 405, { allow: "GET" });
    }
    if (!can(auth, "core.view_job")) return json({ detail: DENIED }, 403);
    return jobStream(request, id, auth.tokenId);
  }

  async function jobStream(request: Request, id: number, tokenId: number): Promise<Response> {
    const first = await engine.get(JOB_MODEL, id);
    if (!first) return json({ detail: "Not found." }, 404);
    const open = openStreams.get(tokenId) ?? 0;
    if (open >= MAX_JOB_STREAMS_PER_TOKEN) {
      return json(
        {
          detail: `This token already has ${open} job streams open, the most one token may hold ` +
            `(limit ${MAX_JOB_STREAMS_PER_TOKEN}); close one first.`,
          limit: MAX_JOB_STREAMS_PER_TOKEN,
        },
        429,
        { "retry-after": "5" },
      );
    }
    openStreams.set(tokenId, open + 1);
    const streamClosed = (deps.metrics ?? noopMetrics).streamOpened("sse");
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      streamClosed();
      const left = (openStreams.get(tokenId) ?? 1) - 1;
      if (left > 0) openStreams.set(tokenId, left);
      else openStreams.delete(tokenId);
    };
    const encoder = new TextEncoder();
    const abort = new AbortController();
    request.signal?.addEventListener("abort", () => abort.abort(), { once: true });
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        const send = (event: string, data: unknown) => {
          if (abort.signal.aborted) return;
          try {
            controller.enqueue(
              encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`),
            );
          } catch {
            abort.abort();
          }
        };
        let seenLog: { timestamp: string; message: string } | null = null;
        let seenRecords = 0;
        let lastProgress = "";
        /** Sends what changed since the last look; true when the job has ended. */
        const lookNow = async (): Promise<boolean> => {
          const job = await engine.get(JOB_MODEL, id);
          if (!job) {
            send("complete", { ok: false, status: "deleted", message: "The job was deleted." });
            return true;
          }
          const log =
            (job.log_entries as { timestamp: string; level: string; message: string }[]) ?? [];
          let from = 0;
          if (seenLog) {
            const at = log.findLastIndex((l) =>
              l.timestamp === seenLog!.timestamp && l.message === seenLog!.message
            );
            from = at + 1;
          }
          for (const entry of log.slice(from)) send("log", entry);
          if (log.length) seenLog = log[log.length - 1];
          const data = Array.isArray(job.data) ? job.data as Record<string, unknown>[] : [];
          for (const r of data.slice(seenRecords)) {
            send("step", {
              step: r.sync_type,
              status: "completed",
              endpoint_id: r.endpoint_id,
              message: `${r.sync_type}: ${r.runtime_seconds} s`,
              result: r.result_summary,
            });
          }
          seenRecords = Math.max(seenRecords, data.length);
          const status = String((job.status as { value?: string })?.value ?? job.status);
          if (FINISHED.has(status)) {
            send("complete", {
              ok: status === "completed",
              status,
              message: status === "completed" ? `Job ${id} completed.` : `Job ${id} ${status}.`,
              ...(job.error ? { errors: [{ detail: job.error }] } : {}),
            });
            return true;
          }
          const progress = await store.progress(id) as Record<string, unknown> | null;
          const text = JSON.stringify(progress);
          if (progress && text !== lastProgress) {
            lastProgress = text;
            if (progress.event === "error") send("error", progress);
            else if (progress.status !== "completed") send("step", progress);
          }
          return false;
        };
        // One look at a time (the watch, the keepalive and the shared-file look may coincide):
        // two at once would send the same log lines twice.
        let ended = false;
        let last: Promise<boolean> = Promise.resolve(false);
        const look = (): Promise<boolean> => {
          last = last.catch(() => false).then(async () => ended || (ended = await lookNow()));
          return last;
        };
        // Keepalive, and a fresh look for changes a watch cannot see (another process on a
        // local KV file: Deno KV's watch only signals changes made through this process).
        const timer = setInterval(async () => {
          try {
            controller.enqueue(encoder.encode(": keepalive\n\n"));
            if (await look()) abort.abort();
          } catch {
            abort.abort();
          }
        }, keepaliveMs);
        const looking = lookEveryMs === undefined ? undefined : setInterval(async () => {
          try {
            if (await look()) abort.abort();
          } catch {
            abort.abort();
          }
        }, lookEveryMs);
        try {
          if (!(await look())) {
            for await (const _ of store.watch(id, abort.signal)) {
              if (await look()) break;
            }
          }
        } catch (error) {
          deps.logger.log("warning", "job stream stopped", { job_id: id, error: String(error) });
        } finally {
          clearInterval(timer);
          clearInterval(looking);
          abort.abort();
          release();
          try {
            controller.close();
          } catch { /* the client went away */ }
        }
      },
      cancel() {
        abort.abort();
        release();
      },
    });
    return new Response(body, {
      headers: {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "x-accel-buffering": "no",
      },
    });
  }

  async function handle(request: Request, auth: AuthInfo): Promise<Response | null> {
    const path = new URL(request.url).pathname;
    let m: RegExpExecArray | null;
    if (ROUTES.sync.test(path)) return await sync(request, auth);
    if (ROUTES.repair.test(path)) return await repair(request, auth);
    if ((m = ROUTES.stream.exec(path))) return await stream(request, auth, Number(m[1]));
    if ((m = ROUTES.coreJob.exec(path))) return await cancel(request, auth, Number(m[1]));
    return null;
  }

  return { service, handle };
}

/**
 * The queue listener, the recovery check and the part poll (a job covering several endpoints
 * shares them with every process on the store: docs/jobs.md, "Several processes"); all end when
 * the store closes.
 */
function startWorker(deps: AppDeps, service: JobService): void {
  let closed = false;
  deps.storage.jobs.listen((jobId) => service.handle(jobId)).catch(() => {}).finally(() => {
    closed = true;
    clearInterval(timer);
    clearInterval(parts);
  });
  const check = () => {
    if (closed) return;
    service.reap().catch((error) => {
      if (!closed) {
        deps.logger.log("warning", "sync job recovery check failed", { error: String(error) });
      }
    });
  };
  const timer = setInterval(check, service.leaseMs);
  Deno.unrefTimer(timer);
  const parts = setInterval(() => {
    if (closed) return;
    service.pollParts().catch((error) => {
      if (!closed) {
        deps.logger.log("warning", "looking for sync job parts failed", { error: String(error) });
      }
    });
  }, service.partPollMs);
  Deno.unrefTimer(parts);
  queueMicrotask(check);
}
