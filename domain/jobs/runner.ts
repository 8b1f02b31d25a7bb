/**
 * One sync job run: preflight (backend health with backoff, push every covered endpoint so
 * the backend's copies are current), then the stages of each endpoint, read from the
 * backend's SSE streams. Pure logic over the ports of ./ports.ts; the caller owns the job
 * record, the lease and the queue (./service.ts).
 *
 * Retries: the backend link classifies each answer (ports.ts Refusal). A stage call is retried
 * (twice, with backoff) only when the answer is `retryable` (a server-side failure, a failed
 * connection) or the stream broke before `complete`; `unauthorized` renews the backend key once
 * per job and retries. Every other answer is final and its real status and body become the
 * job's error.
 */
import type { BackendLink, JobEndpoint, JobSpec, PluginSide, StageFrame } from "./ports.ts";
import { FULL_UPDATE_STREAM, type JobStage, stageOf } from "./stages.ts";

export type JobLevel = "debug" | "info" | "warning" | "error";

/** One record per stage and endpoint in the job's `data`. */
export interface StageRecord {
  sync_type: string;
  endpoint_id: number;
  stream_path: string;
  runtime_seconds: number;
  result_summary: {
    created: number;
    updated: number;
    unchanged: number;
    deleted: number;
    failed: number;
    skipped?: boolean;
    error?: string;
  };
}

export interface Journal {
  log(level: JobLevel, message: string): Promise<void>;
  record(record: StageRecord): Promise<void>;
  /** A live frame for the job stream (throttled by the caller). */
  progress(frame: Record<string, unknown>): Promise<void>;
}

export interface RunTiming {
  /** Pauses before health re-checks (the backend may be starting). */
  healthBackoffMs: readonly number[];
  /** Pauses before the retries of a stage call; its length is the number of retries. */
  retryBackoffMs: readonly number[];
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  now(): number;
}

export const DEFAULT_TIMING: Omit<RunTiming, "sleep" | "now"> = {
  healthBackoffMs: [1_000, 2_000, 4_000],
  retryBackoffMs: [1_000, 3_000],
};

export interface RunOutcome {
  status: "completed" | "failed" | "errored";
  /** The job's `error`: which stage, which request, what came back. */
  error: string;
  /** Per endpoint: did every required stage succeed. */
  endpoints: { id: number; ok: boolean }[];
}

class Stop extends Error {
  constructor(readonly outcome: "failed" | "errored", message: string) {
    super(message);
  }
}

const SUMMARY_KEYS = ["created", "updated", "unchanged", "deleted", "failed"] as const;

function summaryOf(result: unknown): StageRecord["result_summary"] {
  const r = (result && typeof result === "object" ? result : {}) as Record<string, unknown>;
  const out = { created: 0, updated: 0, unchanged: 0, deleted: 0, failed: 0 };
  for (const k of SUMMARY_KEYS) out[k] = typeof r[k] === "number" ? r[k] as number : 0;
  return out;
}

function text(value: unknown, max = 400): string {
  const s = typeof value === "string" ? value : JSON.stringify(value) ?? "";
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

/** What an error frame says, in one line (operation, URL, upstream status, hint). */
export function describeErrorFrame(frame: Record<string, unknown>): string {
  const parts = [String(frame.error ?? "error")];
  if (frame.detail) parts.push(text(frame.detail, 600));
  if (frame.upstream_status != null) parts.push(`upstream status ${frame.upstream_status}`);
  if (frame.hint) parts.push(`hint: ${text(frame.hint, 200)}`);
  return parts.join(" — ");
}

interface CallPlan {
  path: string;
  stages: JobStage[];
}

type Failure = { outcome: "failed" | "errored"; error: string };

/** One endpoint's verdict: null when every required stage succeeded. */
export interface EndpointResult {
  id: number;
  failure: Failure | null;
}

/**
 * Runs the endpoints of a job that covers several, here or in other processes sharing the store
 * (docs/jobs.md, "Several processes"); `runHere` runs one in this process. One result per
 * endpoint, in the given order. Without it, the endpoints run one after another here.
 */
export interface EndpointSharing {
  run(
    endpoints: JobEndpoint[],
    runHere: (endpoint: JobEndpoint, signal: AbortSignal) => Promise<EndpointResult>,
  ): Promise<EndpointResult[]>;
}

/** The backend link of one run (renewed at most once on a 401) and the endpoint stages. */
class Session {
  #renewedOnce = false;

  constructor(
    public link: BackendLink,
    readonly spec: JobSpec,
    readonly plugin: PluginSide,
    readonly journal: Journal,
    readonly timing: RunTiming,
  ) {}

  async renew(status: number | null): Promise<BackendLink> {
    if (this.#renewedOnce) {
      throw new Stop("errored", `The backend rejected the renewed key too (HTTP ${status}).`);
    }
    this.#renewedOnce = true;
    await this.journal.log(
      "warning",
      `The backend answered ${status}: renewing the backend key once.`,
    );
    const fresh = await this.plugin.renewBackendKey();
    if ("error" in fresh) {
      throw new Stop("errored", `Renewing the backend key failed: ${fresh.error}`);
    }
    this.link = fresh;
    return fresh;
  }

  /** The backend's hypervisor endpoint copies (a 401 renews the key once). */
  async copies(): Promise<{ id: number; name: string }[]> {
    let copies = await this.link.copies();
    if (copies.reason === "unauthorized") {
      const renewed = await this.renew(copies.status);
      copies = await renewed.copies();
    }
    if (!copies.ok || !copies.copies) {
      throw new Stop(
        "errored",
        `Preflight: listing the backend's hypervisor endpoints failed: ${copies.error}`,
      );
    }
    return copies.copies;
  }

  /** The stages of one endpoint, scoped to its backend copy. */
  async endpoint(
    endpoint: JobEndpoint,
    copies: { id: number; name: string }[],
    signal: AbortSignal,
  ): Promise<EndpointResult> {
    signal.throwIfAborted();
    const copy = copies.find((c) => c.name === endpoint.copyName);
    if (!copy) {
      const why = `endpoint ${endpoint.id} ("${endpoint.name}") has no copy on the backend ` +
        `(its push failed; see the preflight lines)`;
      await this.journal.log("error", why);
      return { id: endpoint.id, failure: { outcome: "errored", error: why } };
    }
    // The job's run options ride along on every stream (docs/sync.md, "Run options").
    const scope = `?${new URLSearchParams({
      hypervisor_endpoint_ids: String(copy.id),
      ...this.spec.sync_options,
    })}`;
    const stages = this.spec.sync_types.map((t) => stageOf(t)!).filter(Boolean);
    try {
      const failure = await this.#stages(endpoint, scope, stages.length === 13, stages, signal);
      return { id: endpoint.id, failure };
    } catch (error) {
      if (error instanceof Stop) {
        await this.journal.log("error", error.message);
        return { id: endpoint.id, failure: { outcome: error.outcome, error: error.message } };
      }
      throw error;
    }
  }

  /** Runs the stages of one endpoint; null when every required stage succeeded. */
  async #stages(
    endpoint: JobEndpoint,
    scope: string,
    full: boolean,
    stages: JobStage[],
    signal: AbortSignal,
  ): Promise<Failure | null> {
    const { journal, timing } = this;
    // consume() below reads the link live: a renewal in between replaces it.
    const currentLink = () => this.link;
    const label = `"${endpoint.name}"`;
    // A full sync is one stream: the backend then reads each guest config once for all
    // stages. After a broken call, the stages not yet done run one stream each.
    const plan: CallPlan[] = full
      ? [{ path: FULL_UPDATE_STREAM, stages }]
      : stages.map((s) => ({ path: s.stream, stages: [s] }));
    const attempts = new Map<string, number>();
    let requiredFailure: Failure | null = null;
    while (plan.length) {
      signal.throwIfAborted();
      const call = plan.shift()!;
      const request = streamRequest(this.link, `${call.path}${scope}`);
      const done = new Set<string>();
      const problem = await consume(call, done);
      if (problem === null) continue;
      const remaining = call.stages.filter((s) => !done.has(s.type));
      const current = remaining[0];
      if (!current) continue;
      if (problem.kind === "auth") {
        await this.renew(problem.status ?? null);
        plan.unshift(...remaining.map((s) => ({ path: s.stream, stages: [s] })));
        continue;
      }
      if (problem.kind === "retry") {
        const n = (attempts.get(current.type) ?? 0) + 1;
        attempts.set(current.type, n);
        if (n <= timing.retryBackoffMs.length) {
          await journal.log(
            "warning",
            `${current.type} for ${label}: ${problem.error}; retry ${n} of ` +
              `${timing.retryBackoffMs.length}`,
          );
          await timing.sleep(timing.retryBackoffMs[n - 1], signal);
          plan.unshift(...remaining.map((s) => ({ path: s.stream, stages: [s] })));
          continue;
        }
      }
      // Final for this stage: an optional stage is skipped, a required one stops the run.
      const evidence = `${current.type} for ${label}: ${request} → ${problem.error}`;
      if (current.optional) {
        await journal.log("warning", `Skipped ${evidence}`);
        await journal.record({
          sync_type: current.type,
          endpoint_id: endpoint.id,
          stream_path: current.stream,
          runtime_seconds: 0,
          result_summary: {
            ...summaryOf({}),
            skipped: true,
            error: text(problem.error, 300),
          },
        });
        plan.unshift(...remaining.slice(1).map((s) => ({ path: s.stream, stages: [s] })));
        continue;
      }
      await journal.log("error", evidence);
      return { outcome: "errored", error: evidence };
    }
    return requiredFailure;

    /**
     * Reads one stream to its `complete`. Stage records are written as `completed` frames
     * arrive. Null when the call ended well; else what went wrong and whether to retry.
     */
    async function consume(
      call: CallPlan,
      done: Set<string>,
    ): Promise<
      { kind: "retry" | "auth" | "final"; error: string; status?: number | null } | null
    > {
      const link = currentLink();
      const opened = await link.stream(call.path + scope, signal);
      if (!opened.ok) {
        const body = opened.body === undefined ? "" : ` (body: ${text(opened.body, 300)})`;
        const error = `${opened.error}${body}`;
        if (opened.reason === "unauthorized") {
          return { kind: "auth", error, status: opened.status };
        }
        if (opened.reason === "retryable") return { kind: "retry", error };
        return { kind: "final", error };
      }
      const started = new Map<string, number>();
      const stageErrors = new Map<string, string[]>();
      let complete: Record<string, unknown> | null = null;
      try {
        for await (const frame of opened.events as AsyncIterable<StageFrame>) {
          const data = (frame.data ?? {}) as Record<string, unknown>;
          const step = String(data.step ?? "");
          if (frame.event === "step") {
            await journal.progress({ ...data, endpoint_id: endpoint.id });
            if (data.status === "started") {
              started.set(step, timing.now());
              await journal.log("info", `${step} for ${label}: started`);
            } else if (data.status === "completed") {
              const stage = call.stages.find((s) => s.type === step);
              if (!stage) continue;
              done.add(step);
              const summary = summaryOf(data.result);
              const errors = stageErrors.get(step) ?? [];
              const seconds = typeof data.elapsed_ms === "number"
                ? data.elapsed_ms / 1000
                : (timing.now() - (started.get(step) ?? timing.now())) / 1000;
              const record: StageRecord = {
                sync_type: step,
                endpoint_id: endpoint.id,
                stream_path: call.path,
                runtime_seconds: Math.round(seconds * 1000) / 1000,
                result_summary: summary,
              };
              const counts = `${summary.created} created, ${summary.updated} updated, ` +
                `${summary.unchanged} unchanged, ${summary.deleted} deleted, ` +
                `${summary.failed} failed`;
              if (summary.failed > 0 || errors.length > 0) {
                const cause = errors[0] ?? "the backend counted failures";
                record.result_summary.error = text(cause, 300);
                if (stage.optional) {
                  record.result_summary.skipped = true;
                  await journal.log(
                    "warning",
                    `Skipped ${step} for ${label} (${counts}): ${cause}`,
                  );
                } else {
                  await journal.log("error", `${step} for ${label} failed (${counts}): ${cause}`);
                  requiredFailure ??= {
                    outcome: "failed",
                    // The cause first, in the backend's words; where it was read last.
                    error: `${step} for ${label} failed: ${cause} ` +
                      `(read from ${streamRequest(link, `${call.path}${scope}`)})`,
                  };
                }
              } else {
                await journal.log("info", `${step} for ${label}: completed (${counts})`);
              }
              await journal.record(record);
            }
          } else if (frame.event === "error") {
            const line = describeErrorFrame(data);
            const list = stageErrors.get(step) ?? [];
            if (list.length < 5) list.push(line);
            stageErrors.set(step, list);
            await journal.progress({ ...data, endpoint_id: endpoint.id, event: "error" });
          } else if (frame.event === "complete") {
            complete = data;
          }
        }
      } catch (error) {
        if (signal.aborted) throw signal.reason ?? error;
        return { kind: "retry", error: (error as Error).message };
      }
      if (!complete) {
        return { kind: "retry", error: "the stream ended before its complete frame" };
      }
      if (complete.ok === false) {
        const errors = Array.isArray(complete.errors) ? complete.errors : [];
        const cancelled = errors.some((e) => (e as Record<string, unknown>)?.error === "cancelled");
        // The backend stopped mid-run (shutting down): try again like a broken connection.
        if (cancelled && call.stages.some((s) => !done.has(s.type))) {
          return { kind: "retry", error: "the backend cancelled the run (shutting down?)" };
        }
        // Failures that belong to no stage record (e.g. a step "sync" frame) still count.
        const orphan = errors.map((e) => e as Record<string, unknown>)
          .find((e) => !call.stages.some((s) => s.type === e.step && done.has(s.type)));
        if (orphan && call.stages.some((s) => !done.has(s.type))) {
          return { kind: "final", error: `complete ok:false: ${describeErrorFrame(orphan)}` };
        }
      }
      return null;
    }
  }
}

export async function runSyncJob(input: {
  jobId: number;
  spec: JobSpec;
  plugin: PluginSide;
  journal: Journal;
  signal: AbortSignal;
  timing: RunTiming;
  /** Runs the endpoints of a job that covers several in other processes too. */
  sharing?: EndpointSharing;
}): Promise<RunOutcome> {
  const { spec, plugin, journal, signal, timing } = input;
  const endpointsOut: RunOutcome["endpoints"] = [];
  try {
    // ---------------------------------------------------------------- which endpoints
    const all = await plugin.endpoints();
    const chosen = spec.endpoint_ids
      ? all.filter((e) => spec.endpoint_ids!.includes(e.id))
      : all.filter((e) => e.enabled);
    for (const id of spec.endpoint_ids ?? []) {
      const e = all.find((x) => x.id === id);
      if (!e) throw new Stop("errored", `Hypervisor endpoint ${id} no longer exists.`);
      if (!e.enabled) {
        throw new Stop("errored", `Hypervisor endpoint ${id} ("${e.name}") is disabled.`);
      }
    }

    // ---------------------------------------------------------------- preflight
    const first = await plugin.backend();
    if ("error" in first) throw new Stop("errored", `Preflight: ${first.error}`);
    const session = new Session(first, spec, plugin, journal, timing);
    await preflightHealth(session.link, journal, signal, timing);
    const pushes = await plugin.pushAll(chosen.map((e) => e.id));
    for (const p of pushes) {
      await journal.log(
        p.ok ? "info" : "warning",
        p.ok
          ? `Preflight: pushed ${p.what}`
          : `Preflight: push of ${p.what} failed${
            p.status ? ` (HTTP ${p.status})` : ""
          }: ${p.error}`,
      );
    }
    // Repair: the backend reconciles the custom fields first; a failure is only a warning.
    if (spec.kind === "repair") {
      const answer = await session.link.reconcile();
      const b = (answer.body ?? {}) as Record<string, unknown>;
      await journal.log(
        answer.ok ? "info" : "warning",
        answer.ok
          ? `Custom fields reconciled: ${b.created ?? 0} created, ${b.updated ?? 0} updated, ` +
            `${b.unchanged ?? 0} unchanged.`
          : `Custom-field reconcile failed: ${answer.error}`,
      );
    }
    if (chosen.length === 0) {
      await journal.log("warning", "No enabled hypervisor endpoint: nothing to sync.");
      return { status: "completed", error: "", endpoints: [] };
    }
    const copies = await session.copies();

    // ---------------------------------------------------------------- stages
    let results: EndpointResult[];
    if (input.sharing && chosen.length > 1) {
      results = await input.sharing.run(
        chosen,
        (endpoint, partSignal) => session.endpoint(endpoint, copies, partSignal),
      );
    } else {
      results = [];
      for (const endpoint of chosen) {
        const result = await session.endpoint(endpoint, copies, signal);
        results.push(result);
        // An errored endpoint stops the run (a failed one lets the others go on).
        if (result.failure?.outcome === "errored") break;
      }
    }
    let failure: Failure | null = null;
    for (const result of results) {
      endpointsOut.push({ id: result.id, ok: result.failure === null });
      failure ??= result.failure;
    }
    if (failure) return { status: failure.outcome, error: failure.error, endpoints: endpointsOut };
    return { status: "completed", error: "", endpoints: endpointsOut };
  } catch (error) {
    return await stopped(error, journal, signal, endpointsOut);
  }
}

/** A Stop or an abort as the run's outcome; anything else is a crash (rethrown). */
async function stopped(
  error: unknown,
  journal: Journal,
  signal: AbortSignal,
  endpointsOut: RunOutcome["endpoints"],
): Promise<RunOutcome> {
  if (error instanceof Stop) {
    await journal.log("error", error.message);
    return { status: error.outcome, error: error.message, endpoints: endpointsOut };
  }
  if (signal.aborted) {
    const why = signal.reason instanceof Error ? signal.reason.message : String(signal.reason);
    await journal.log("error", `Stopped: ${why}`);
    return { status: "errored", error: `Stopped: ${why}`, endpoints: endpointsOut };
  }
  throw error;
}

/**
 * One endpoint of a job, run by a process that is not the job's (docs/jobs.md, "Several
 * processes"): the job's process did the preflight (health, pushes); this one reaches the
 * backend through its own link and runs that endpoint's stages.
 */
export async function runSyncPart(input: {
  spec: JobSpec;
  endpointId: number;
  plugin: PluginSide;
  journal: Journal;
  signal: AbortSignal;
  timing: RunTiming;
}): Promise<EndpointResult> {
  const { spec, endpointId, plugin, journal, signal, timing } = input;
  try {
    const endpoint = (await plugin.endpoints()).find((e) => e.id === endpointId);
    if (!endpoint) throw new Stop("errored", `Hypervisor endpoint ${endpointId} no longer exists.`);
    const first = await plugin.backend();
    if ("error" in first) throw new Stop("errored", `Preflight: ${first.error}`);
    const session = new Session(first, spec, plugin, journal, timing);
    return await session.endpoint(endpoint, await session.copies(), signal);
  } catch (error) {
    const outcome = await stopped(error, journal, signal, []);
    return { id: endpointId, failure: { outcome: "errored", error: outcome.error } };
  }
}

async function preflightHealth(
  link: BackendLink,
  journal: Journal,
  signal: AbortSignal,
  timing: RunTiming,
): Promise<void> {
  const tries = timing.healthBackoffMs.length + 1;
  for (let i = 0; i < tries; i++) {
    signal.throwIfAborted();
    const health = await link.health();
    if (health.ok) {
      const over = link.socketUrl ? `; stage streams over WebSocket at ${link.socketUrl}` : "";
      await journal.log("info", `Preflight: backend ${link.url} is ready${over}`);
      return;
    }
    if (i === tries - 1) {
      throw new Stop(
        "errored",
        `Preflight: the backend is not ready after ${tries} checks: ${health.error}`,
      );
    }
    await journal.log(
      "warning",
      `Preflight: backend health check ${i + 1} of ${tries} failed: ${health.error}`,
    );
    await timing.sleep(timing.healthBackoffMs[i], signal);
  }
}

/** How a stage stream is requested, for the log: SSE at the backend, or its WebSocket twin. */
function streamRequest(link: BackendLink, pathAndQuery: string): string {
  if (!link.socketUrl) return `GET ${link.url}${pathAndQuery}`;
  return `GET ${link.socketUrl}${pathAndQuery.replace(/\/stream(?=\?|$)/, "/ws")}`;
}
