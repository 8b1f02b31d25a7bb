/**
 * Durable sync jobs (docs/jobs.md): NetBox `core.job` records moved by a Deno KV queue.
 *
 * - Admission: an immediate sync is refused (409) while another immediate sync or a repair
 *   is pending or running; a repair is refused while a repair is. Slots are claimed with
 *   atomic checks, so two concurrent requests never both win, in one process or many.
 * - Ownership: a run holds the lease (one KV key, taken and renewed with atomic checks,
 *   expiring after `leaseMs`). Runs never overlap; a due job that finds the lease taken waits
 *   (status pending) and is woken when the holder finishes.
 * - Recovery: a job left `running` by a process that died (its lease expired) is marked
 *   `errored` with the reason, at start-up, by the periodic check of any process sharing the
 *   KV, and when the queue redelivers its message.
 * - Scheduling: `scheduled` jobs are queued with a delay; an interval job queues its next
 *   run (a new `scheduled` job) when it finishes. Deleting a scheduled job cancels it.
 * - Retention: the last `retention` finished jobs per kind are kept, older ones deleted.
 * - Bounds per token: at most MAX_WAITING_JOBS_PER_TOKEN scheduled or waiting jobs each; the
 *   token that asked is checked again before every run (and before an interval job queues its
 *   next run): deleted, disabled, expired, read-only or without `core.add_job`, the job fails
 *   with the reason and its series ends.
 */
import type { EngineApi, StoredObject } from "../netbox/types.ts";
import type { Logger } from "../../infra/logger.ts";
import type { Metrics } from "../../infra/metrics.ts";
import { type ActiveSpan, noopTracer, type Tracer } from "../../infra/tracing.ts";
import { redactDeep, redactSecrets } from "../redaction.ts";
import { authInfo, can, TOKEN_MODEL } from "../netbox/tokens.ts";
import {
  appendJobLog,
  createJob,
  JOB_MODEL,
  type JobLogLevel,
  type JobStatus,
  updateJob,
} from "../netbox/jobs.ts";
import type { JobKind, JobPart, JobSpec, JobStore, PluginSide } from "./ports.ts";
import {
  type EndpointResult,
  type EndpointSharing,
  type Journal,
  type RunOutcome,
  runSyncJob,
  runSyncPart,
  type RunTiming,
  type StageRecord,
} from "./runner.ts";
import type { SyncRequest } from "./request.ts";

export const FINISHED: ReadonlySet<string> = new Set(["completed", "errored", "failed"]);
export const DEFAULT_LEASE_MS = 30_000;
export const DEFAULT_RETENTION = 100;
/** Scheduled or waiting (`scheduled`, `pending`) jobs one token may have at once. */
export const MAX_WAITING_JOBS_PER_TOKEN = 20;
/** A waiting job re-checks the lease this often (besides being woken by the holder). */
const WAIT_RECHECK_MS = 15_000;
/** How often a process looks for parts of a running job it could take (docs/jobs.md). */
export const DEFAULT_PART_POLL_MS = 500;
/** Bytes of `data` (stage records) kept per job; the log has its own budget. */
const MAX_DATA_BYTES = 24_000;

export interface JobServiceDeps {
  engine: EngineApi;
  store: JobStore;
  plugin: PluginSide;
  logger: Logger;
  now: () => number;
  /** This process (lease owner); a random id per app instance. */
  owner: string;
  leaseMs?: number;
  retention?: number;
  timing: Omit<RunTiming, "now">;
  progressEveryMs?: number;
  /** How often this process looks for parts of a running job to take (default 500 ms). */
  partPollMs?: number;
  /** Finished jobs and the waiting/running counts (docs/metrics.md); default: not kept. */
  metrics?: Metrics;
  /** A span per job run (README, Metrics and tracing); default: none. */
  tracer?: Tracer;
}

/** A part nobody runs: open, or claimed by a process whose claim lapsed (it stopped). */
function claimable(part: JobPart, now: number): boolean {
  return part.state === "open" || (part.state === "claimed" && part.expires_at <= now);
}

/** Who asks for a job: the API token, recorded on the job (its `user`) and in its first log line. */
export interface JobRequester {
  token_id: number;
  description: string;
}

export type Admission =
  | { ok: true; job: StoredObject }
  | { ok: false; reason: "busy"; holder: number }
  | { ok: false; reason: "cap"; limit: number };

function statusOf(job: StoredObject | null): string | null {
  const s = job?.status;
  if (s && typeof s === "object") return String((s as { value?: unknown }).value);
  return typeof s === "string" ? s : null;
}

/**
 * Replaces every known secret, in every spelling (raw, URL/form-encoded, JSON-escaped, base64;
 * domain/redaction.ts), in a message: a job log never holds one.
 */
export function scrub(message: string, secrets: readonly string[]): string {
  return redactSecrets(message, secrets, "[redacted]");
}

/**
 * Retries a storage write that failed on contention (two processes on one local KV file can
 * see SQLite busy errors for a moment).
 */
async function transient<T>(work: () => Promise<T>, attempts = 8): Promise<T> {
  for (let i = 1;; i++) {
    try {
      return await work();
    } catch (error) {
      if (i >= attempts || !/locked|busy|contention/i.test(String(error))) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10 * i + Math.random() * 20));
    }
  }
}

export class JobService {
  readonly leaseMs: number;
  readonly retention: number;
  readonly partPollMs: number;
  #running = new Set<number>();
  /** Parts of a job (one endpoint each) running in this process: at most one at a time. */
  #partsHere = 0;
  #polling = false;
  /** Runs in flight in this process (tests and graceful stops wait on them). */
  readonly inFlight = new Set<Promise<void>>();

  constructor(readonly deps: JobServiceDeps) {
    this.leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
    this.retention = deps.retention ?? DEFAULT_RETENTION;
    this.partPollMs = deps.partPollMs ?? DEFAULT_PART_POLL_MS;
    deps.metrics?.jobCounts(() => this.activeCounts());
  }

  /** Jobs scheduled, pending and running now (finished ones are counted as they end). */
  async activeCounts(): Promise<Record<string, number>> {
    const active = await this.deps.engine.find(JOB_MODEL, {
      status: ["scheduled", "pending", "running"],
    });
    const counts: Record<string, number> = {};
    for (const job of active) {
      const status = statusOf(job);
      if (status) counts[status] = (counts[status] ?? 0) + 1;
    }
    return counts;
  }

  #iso(ms = this.deps.now()): string {
    return new Date(ms).toISOString();
  }

  async isActive(jobId: number): Promise<boolean> {
    const status = statusOf(await this.deps.engine.get(JOB_MODEL, jobId));
    return status === "pending" || status === "running";
  }

  async log(jobId: number, level: JobLogLevel, message: string, secrets: string[] = []) {
    await appendJobLog(this.deps.engine, jobId, level, scrub(message, secrets), this.deps.now);
  }

  /** Scheduled or waiting jobs asked for by this token (their `user.token_id`). */
  async waitingJobsOf(tokenId: number): Promise<number> {
    const waiting = await this.deps.engine.find(JOB_MODEL, { status: ["scheduled", "pending"] });
    return waiting.filter((j) => (j.user as { token_id?: unknown } | null)?.token_id === tokenId)
      .length;
  }

  /**
   * Why the token that asked for this job may no longer run it, or null. Old specs without a
   * token id fall back to the job record's `user`.
   */
  async #requesterRefusal(job: StoredObject, spec: JobSpec): Promise<string | null> {
    const tokenId = spec.token_id ??
      (job.user as { token_id?: unknown } | null | undefined)?.token_id;
    if (typeof tokenId !== "number") return null;
    const token = await this.deps.engine.get(TOKEN_MODEL, tokenId);
    const who = `token ${tokenId}, which asked for this job,`;
    if (!token) return `The ${who} was deleted`;
    if (token.enabled === false) return `The ${who} is disabled`;
    if (typeof token.expires === "string" && Date.parse(token.expires) <= this.deps.now()) {
      return `The ${who} has expired`;
    }
    if (!can(authInfo(token), "core.add_job")) {
      return `The ${who} may no longer add jobs (it needs core.add_job and write access)`;
    }
    return null;
  }

  // ------------------------------------------------------------------ admission

  async submit(
    request: SyncRequest,
    requester: JobRequester,
    kind: JobKind = "sync",
  ): Promise<Admission> {
    const { engine } = this.deps;
    const requestedBy = requester.description
      ? `token ${requester.token_id} (${requester.description})`
      : `token ${requester.token_id}`;
    const scheduled = request.schedule_at !== null;
    const all = request.sync_types.length === 13;
    const name = request.job_name ??
      (kind === "repair"
        ? "Repair: reconcile custom fields and full sync"
        : `Sync ${all ? "all" : request.sync_types.join(", ")}`.slice(0, 200));
    const job = await transient(() =>
      createJob(engine, {
        name,
        status: scheduled ? "scheduled" : "pending",
        scheduled: scheduled ? this.#iso(request.schedule_at!) : null,
        data: [],
        user: { display: requestedBy, ...requester },
      })
    );
    try {
      // Counted after the job exists, so two racing requests cannot both squeeze under the cap
      // (at worst both are refused).
      if ((await this.waitingJobsOf(requester.token_id)) > MAX_WAITING_JOBS_PER_TOKEN) {
        await engine.remove(JOB_MODEL, job.id);
        return { ok: false, reason: "cap", limit: MAX_WAITING_JOBS_PER_TOKEN };
      }
      return await this.#admit(job, request, requestedBy, kind, scheduled, all, requester);
    } catch (error) {
      // Nothing half-made stays behind: a record without its queue message would wait forever.
      await engine.remove(JOB_MODEL, job.id).catch(() => {});
      await this.deps.store.deleteSpec(job.id).catch(() => {});
      await this.deps.store.releaseSlot(kind, job.id).catch(() => {});
      throw error;
    }
  }

  async #admit(
    job: StoredObject,
    request: SyncRequest,
    requestedBy: string,
    kind: JobKind,
    scheduled: boolean,
    all: boolean,
    requester: JobRequester,
  ): Promise<Admission> {
    const { engine, store } = this.deps;
    if (request.interval_minutes) {
      await engine.patchStored(JOB_MODEL, job.id, { interval: request.interval_minutes });
    }
    const spec: JobSpec = {
      kind,
      sync_types: request.sync_types,
      endpoint_ids: request.endpoint_ids,
      interval_minutes: request.interval_minutes,
      requested_by: requestedBy,
      token_id: requester.token_id,
      ...(request.sync_options ? { sync_options: request.sync_options } : {}),
    };
    await store.saveSpec(job.id, spec);
    if (!scheduled) {
      const blocking: JobKind[] = kind === "repair" ? ["repair"] : ["sync", "repair"];
      const claim = await store.claimSlot(kind, job.id, blocking, (id) => this.isActive(id));
      if (!claim.ok) {
        await engine.remove(JOB_MODEL, job.id);
        await store.deleteSpec(job.id);
        return { ok: false, reason: "busy", holder: claim.holder };
      }
    }
    await this.log(
      job.id,
      "info",
      `${scheduled ? `Scheduled for ${this.#iso(request.schedule_at!)}` : "Queued"} by ` +
        `${requestedBy}: ${all ? "all stages" : request.sync_types.join(", ")}` +
        `${request.endpoint_ids ? ` for endpoint(s) ${request.endpoint_ids.join(", ")}` : ""}` +
        `${request.interval_minutes ? `, every ${request.interval_minutes} min` : ""}.`,
    );
    await store.enqueue(
      job.id,
      scheduled ? Math.max(0, request.schedule_at! - this.deps.now()) : 0,
    );
    return { ok: true, job: (await engine.get(JOB_MODEL, job.id)) ?? job };
  }

  // ------------------------------------------------------------------ the queue handler

  /** One queue message: run the job, wait for the lease, or settle what a dead owner left. */
  async handle(jobId: number): Promise<void> {
    try {
      await this.#handle(jobId);
    } catch (error) {
      this.deps.logger.log("error", "sync job handler failed", {
        job_id: jobId,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  async #handle(jobId: number): Promise<void> {
    const { engine, store } = this.deps;
    const job = await engine.get(JOB_MODEL, jobId);
    const status = statusOf(job);
    if (!job || status === null || FINISHED.has(status)) return; // deleted (cancelled) or done
    if (this.#running.has(jobId)) return; // a duplicate delivery while we run it
    const spec = await store.spec(jobId);
    if (!spec) {
      await this.#settle(job, null, {
        status: "errored",
        error: "The job's request is missing.",
        endpoints: [],
      });
      return;
    }
    const now = this.deps.now();
    if (status === "scheduled") {
      const due = Date.parse(String(job.scheduled ?? "")) || now;
      if (due > now + 1_000) {
        await store.enqueue(jobId, due - now);
        return;
      }
    }
    if (status === "running") {
      const lease = await store.lease();
      if (lease && lease.job_id === jobId && lease.expires_at > now) return; // alive elsewhere
      await this.#abandon(job, spec, lease?.job_id === jobId ? lease.expires_at : null);
      return;
    }
    const refusal = await this.#requesterRefusal(job, spec);
    if (refusal) {
      await this.#settle(job, { ...spec, interval_minutes: null }, {
        status: "failed",
        error: `${refusal}: not run${spec.interval_minutes ? ", and not scheduled again" : ""}.`,
        endpoints: [],
      });
      return;
    }
    const took = await store.takeLease(jobId, this.deps.owner, this.leaseMs);
    if (!took.ok) {
      if (status !== "pending") {
        await updateJob(engine, jobId, { status: "pending" }, this.deps.now);
      }
      const holder = took.lease.job_id;
      const already = ((job.log_entries as { message: string }[] | undefined) ?? [])
        .some((l) => l.message.startsWith("Waiting for job"));
      if (!already) {
        await this.log(jobId, "info", `Waiting for job ${holder} to finish (runs never overlap).`);
      }
      await store.enqueue(
        jobId,
        Math.min(WAIT_RECHECK_MS, Math.max(50, took.lease.expires_at - now)),
      );
      return;
    }
    const run = this.#run(job, spec);
    this.inFlight.add(run);
    try {
      await run;
    } finally {
      this.inFlight.delete(run);
    }
  }

  /** One run, in a span named for its kind (`job.sync`, `job.repair`). */
  #run(job: StoredObject, spec: JobSpec): Promise<void> {
    const tracer = this.deps.tracer ?? noopTracer;
    return tracer.span(`job.${spec.kind}`, {
      "bridgebox.job.id": job.id,
      "bridgebox.job.kind": spec.kind,
      "bridgebox.job.sync_types": spec.sync_types.join(","),
    }, (span) => this.#runInSpan(job, spec, span));
  }

  async #runInSpan(job: StoredObject, spec: JobSpec, span: ActiveSpan): Promise<void> {
    const { engine, store, plugin } = this.deps;
    const jobId = job.id;
    const startedAt = this.deps.now();
    this.#running.add(jobId);
    const abort = new AbortController();
    const renewEvery = Math.max(20, Math.floor(this.leaseMs / 3));
    const renewal = setInterval(async () => {
      try {
        if (!(await store.renewLease(jobId, this.deps.owner, this.leaseMs))) {
          abort.abort(new Error("this process lost the run lease (it expired and was taken)"));
        }
      } catch (error) {
        this.deps.logger.log("warning", "renewing the sync job lease failed", {
          job_id: jobId,
          error: String(error),
        });
      }
    }, renewEvery);
    let outcome: RunOutcome;
    let secrets: string[] = [];
    try {
      await updateJob(engine, jobId, { status: "running" }, this.deps.now);
      secrets = await plugin.secrets().catch(() => []);
      await this.log(
        jobId,
        "info",
        `Started (${spec.kind === "repair" ? "repair" : "sync"}) by process ${this.deps.owner}.`,
      );
      const journal = this.#journal(jobId, secrets);
      outcome = await runSyncJob({
        jobId,
        spec,
        plugin,
        journal,
        signal: abort.signal,
        timing: { ...this.deps.timing, now: this.deps.now },
        sharing: this.#sharing(jobId, abort.signal),
      });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.deps.logger.log("error", "sync job crashed", { job_id: jobId, error: message });
      outcome = { status: "errored", error: `Internal error: ${message}`, endpoints: [] };
    } finally {
      clearInterval(renewal);
    }
    span.set({ "bridgebox.job.status": outcome.status });
    if (outcome.status !== "completed") span.fail(outcome.error);
    try {
      await this.#settle(job, spec, outcome, secrets, startedAt);
    } finally {
      this.#running.delete(jobId);
      await store.releaseLease(jobId, this.deps.owner);
      await this.#wakeWaiting();
    }
  }

  // ------------------------------------------------------------------ parts (several processes)

  /**
   * The endpoints of a job that covers several become parts any process sharing the store may
   * take (docs/jobs.md, "Several processes"). This process, which holds the job's lease, runs
   * parts too, one at a time, takes over a part whose claim lapsed (its process stopped), skips
   * the parts nobody started once one errored, and returns when every part is done.
   */
  #sharing(jobId: number, signal: AbortSignal): EndpointSharing {
    const { store } = this.deps;
    return {
      run: async (endpoints, runHere) => {
        await store.openParts(jobId, endpoints.map((e) => e.id));
        await this.log(
          jobId,
          "info",
          `${endpoints.length} endpoints: each one is a part that any process sharing this ` +
            `store may take.`,
        );
        for (;;) {
          signal.throwIfAborted();
          const parts = await store.parts(jobId);
          if (parts.every((p) => p.state === "done")) {
            return endpoints.flatMap((e): EndpointResult[] => {
              const outcome = parts.find((p) => p.endpoint_id === e.id)?.outcome;
              if (!outcome || outcome.status === "skipped") return [];
              return [{
                id: e.id,
                failure: outcome.status === "completed"
                  ? null
                  : { outcome: outcome.status, error: outcome.error },
              }];
            });
          }
          if (parts.some((p) => p.outcome?.status === "errored")) {
            // An errored endpoint stops the run: parts nobody started are not started.
            for (const p of parts.filter((p) => p.state === "open")) {
              await store.finishPart(jobId, p.endpoint_id, null, {
                status: "skipped",
                error: "not run: another endpoint of this job errored",
                by: null,
              });
            }
          } else if (this.#partsHere === 0) {
            const next = parts.find((p) => claimable(p, this.deps.now()));
            const claimed = next &&
              await store.claimPart(jobId, next.endpoint_id, this.deps.owner, this.leaseMs);
            if (claimed) {
              const endpoint = endpoints.find((e) => e.id === claimed.endpoint_id)!;
              await this.#runPart(claimed, (partSignal) => runHere(endpoint, partSignal), signal);
              continue;
            }
          }
          await this.deps.timing.sleep(this.partPollMs, signal);
        }
      },
    };
  }

  /** Runs one claimed part here, renewing the claim; records its outcome unless taken over. */
  async #runPart(
    part: JobPart,
    work: (signal: AbortSignal) => Promise<EndpointResult>,
    jobSignal: AbortSignal | null,
    jobGone?: () => Promise<string | null>,
  ): Promise<void> {
    const { store, owner } = this.deps;
    const { job_id: jobId, endpoint_id: endpointId } = part;
    this.#partsHere++;
    const abort = new AbortController();
    const onJobAbort = () => abort.abort(jobSignal?.reason);
    jobSignal?.addEventListener("abort", onJobAbort, { once: true });
    const renewal = setInterval(async () => {
      try {
        if (!(await store.renewPart(jobId, endpointId, owner, this.leaseMs))) {
          abort.abort(
            new Error("this process lost its claim on the part (it lapsed and was taken over)"),
          );
          return;
        }
        const gone = await jobGone?.();
        if (gone) abort.abort(new Error(gone));
      } catch (error) {
        this.deps.logger.log("warning", "renewing a sync job part failed", {
          job_id: jobId,
          endpoint_id: endpointId,
          error: String(error),
        });
      }
    }, Math.max(20, Math.floor(this.leaseMs / 3)));
    await this.log(
      jobId,
      "info",
      `Endpoint ${endpointId}: taken by process ${owner}` +
        (part.claims > 1 ? " (taken over: the claim of the process running it lapsed)." : "."),
    ).catch(() => {});
    let result: EndpointResult;
    try {
      result = await work(abort.signal);
    } catch (error) {
      const why = abort.signal.aborted
        ? `Stopped: ${(abort.signal.reason as Error)?.message ?? String(abort.signal.reason)}`
        : `Internal error: ${error instanceof Error ? error.message : String(error)}`;
      result = { id: endpointId, failure: { outcome: "errored", error: why } };
    } finally {
      clearInterval(renewal);
      jobSignal?.removeEventListener("abort", onJobAbort);
      this.#partsHere--;
    }
    // A part taken over meanwhile is the other process's to record.
    await store.finishPart(jobId, endpointId, owner, {
      status: result.failure?.outcome ?? "completed",
      error: result.failure?.error ?? "",
      by: owner,
    });
  }

  /**
   * Looks for a part of a running job that nobody runs and takes it (one at a time): called by
   * the worker every `partPollMs`, in every process sharing the store.
   */
  async pollParts(): Promise<void> {
    if (this.#partsHere > 0 || this.#polling) return;
    this.#polling = true;
    try {
      const { store } = this.deps;
      for (const part of await store.parts()) {
        // The job's own process runs its parts through #sharing.
        if (this.#running.has(part.job_id) || !claimable(part, this.deps.now())) continue;
        if (!(await this.#leaseAlive(part.job_id))) continue;
        const spec = await store.spec(part.job_id);
        if (!spec) continue;
        const claimed = await store.claimPart(
          part.job_id,
          part.endpoint_id,
          this.deps.owner,
          this.leaseMs,
        );
        if (!claimed) continue;
        const run = this.#remotePart(claimed, spec);
        this.inFlight.add(run);
        void run.finally(() => this.inFlight.delete(run));
        return;
      }
    } finally {
      this.#polling = false;
    }
  }

  /** True while the job's run lease names it and has not expired (its process is alive). */
  async #leaseAlive(jobId: number): Promise<boolean> {
    const lease = await this.deps.store.lease();
    return !!lease && lease.job_id === jobId && lease.expires_at > this.deps.now();
  }

  /** A part of a job another process runs: its stages, recorded into that job. */
  async #remotePart(part: JobPart, spec: JobSpec): Promise<void> {
    try {
      const secrets = await this.deps.plugin.secrets().catch(() => []);
      const journal = this.#journal(part.job_id, secrets);
      await this.#runPart(
        part,
        (signal) =>
          runSyncPart({
            spec,
            endpointId: part.endpoint_id,
            plugin: this.deps.plugin,
            journal,
            signal,
            timing: { ...this.deps.timing, now: this.deps.now },
          }),
        null,
        async () =>
          (await this.#leaseAlive(part.job_id))
            ? null
            : `the process running job ${part.job_id} stopped (its run lease is gone)`,
      );
    } catch (error) {
      this.deps.logger.log("error", "sync job part failed", {
        job_id: part.job_id,
        endpoint_id: part.endpoint_id,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  #journal(jobId: number, secrets: string[]): Journal {
    const { engine, store } = this.deps;
    const every = this.deps.progressEveryMs ?? 250;
    let last = 0;
    return {
      log: (level, message) => this.log(jobId, level, message, secrets),
      record: async (stageRecord: StageRecord) => {
        const record = redactDeep(stageRecord, secrets, "[redacted]");
        await engine.patchStored(JOB_MODEL, jobId, (current) => {
          const data = Array.isArray(current.data) ? [...current.data] : [];
          data.push(record);
          // Many endpoints: older records lose their detail before the record outgrows KV.
          for (let i = 0; i < data.length && engine.recordSize(data) > MAX_DATA_BYTES; i++) {
            const r = data[i] as StageRecord;
            if (r.result_summary?.error) {
              data[i] = { ...r, result_summary: { ...r.result_summary, error: undefined } };
            }
          }
          return { data };
        });
      },
      progress: async (frame) => {
        const t = this.deps.now();
        if (frame.status === "progress" && t - last < every) return;
        last = t;
        await store.setProgress(jobId, redactDeep(frame, secrets, "[redacted]"));
      },
    };
  }

  /** The end of a job: status, error, last_sync, lease and slot, retention, next run. */
  async #settle(
    job: StoredObject,
    spec: JobSpec | null,
    outcome: RunOutcome,
    secrets: string[] = [],
    startedAt?: number,
  ): Promise<boolean> {
    const { engine, store, plugin } = this.deps;
    const jobId = job.id;
    // One settler per job (two processes may find the same dead job); everything a reader
    // expects once the status is final (last line, last_sync, retention, the next run) is done
    // before the status changes.
    if (FINISHED.has(statusOf(await engine.get(JOB_MODEL, jobId)) ?? "completed")) return false;
    if (!(await store.claimSettlement(jobId))) return false;
    await store.clearParts(jobId);
    await this.log(
      jobId,
      outcome.status === "completed" ? "info" : "error",
      outcome.status === "completed"
        ? "Completed."
        : `Finished ${outcome.status}: ${outcome.error}`,
      secrets,
    );
    const at = this.#iso();
    for (const e of outcome.endpoints) {
      await plugin.recordLastSync(e.id, {
        at,
        ok: e.ok && outcome.status === "completed",
        job_id: jobId,
        status: outcome.status,
      }).catch(() => {});
    }
    await store.clearProgress(jobId);
    if (spec) {
      await store.markFinished(spec.kind, jobId);
      await this.#prune(spec.kind);
      if (spec.interval_minutes) {
        const refusal = await this.#requesterRefusal(job, spec);
        if (refusal) {
          await this.log(jobId, "warning", `${refusal}: the series is not scheduled again.`);
        } else await this.#next(job, spec);
      }
    }
    // Counted before the status turns final, as everything else a reader of that status expects.
    // A job settled without a run here (abandoned, refused) has no start of its own in this
    // process: its stored start is used.
    const began = startedAt ?? (Date.parse(String(job.started ?? "")) || this.deps.now());
    this.deps.metrics?.jobFinished(
      spec?.kind ?? "sync",
      outcome.status,
      Math.max(0, this.deps.now() - began) / 1000,
    );
    await engine.patchStored(JOB_MODEL, jobId, (current) => ({
      status: outcome.status,
      completed: at,
      error: scrub(outcome.error, secrets).slice(0, 1000),
      ...(current.started ? {} : { started: at }),
    }));
    if (spec) await store.releaseSlot(spec.kind, jobId);
    return true;
  }

  /** An interval job's next run: a new scheduled job one interval after this one was due. */
  async #next(job: StoredObject, spec: JobSpec): Promise<void> {
    const current = await this.deps.engine.get(JOB_MODEL, job.id);
    const base = Date.parse(String(current?.scheduled ?? current?.started ?? "")) ||
      this.deps.now();
    let due = base + spec.interval_minutes! * 60_000;
    if (due <= this.deps.now()) due = this.deps.now() + spec.interval_minutes! * 60_000;
    const next = await createJob(this.deps.engine, {
      name: String(job.name),
      status: "scheduled",
      scheduled: this.#iso(due),
      data: [],
      ...(current?.user ? { user: current.user } : {}),
    });
    await this.deps.engine.patchStored(JOB_MODEL, next.id, { interval: spec.interval_minutes });
    await this.deps.store.saveSpec(next.id, spec);
    await this.log(
      next.id,
      "info",
      `Scheduled for ${this.#iso(due)} (every ${spec.interval_minutes} min, after job ${job.id}).`,
    );
    await this.deps.store.enqueue(next.id, due - this.deps.now());
  }

  async #prune(kind: JobKind): Promise<void> {
    const ids = await this.deps.store.finished(kind);
    const excess = ids.length - this.retention;
    if (excess <= 0) return;
    const old = ids.slice(0, excess);
    for (const id of old) {
      await this.deps.engine.remove(JOB_MODEL, id);
      await this.deps.store.deleteSpec(id);
    }
    await this.deps.store.forgetFinished(kind, old);
  }

  async #wakeWaiting(): Promise<void> {
    const waiting = await this.deps.engine.find(JOB_MODEL, { status: ["pending"] });
    for (const job of waiting.sort((a, b) => a.id - b.id)) {
      await this.deps.store.enqueue(job.id, 0);
    }
  }

  /** A job its owner left `running`: errored with the reason (never `running` forever). */
  async #abandon(job: StoredObject, spec: JobSpec | null, expiredAt: number | null): Promise<void> {
    const reason = "The process running this job stopped before it finished" +
      (expiredAt
        ? ` (its run lease expired at ${this.#iso(expiredAt)})`
        : " (it holds no run lease)") +
      "; the stages it did are recorded, start a new sync to finish.";
    const settled = await this.#settle(job, spec, {
      status: "errored",
      error: reason,
      endpoints: [],
    });
    if (settled) {
      this.deps.logger.log("warning", "sync job recovered after its owner stopped", {
        job_id: job.id,
      });
      await this.#wakeWaiting();
    }
  }

  /** Marks running jobs whose owner is gone (lease expired or not theirs) errored. */
  async reap(): Promise<number> {
    const running = await this.deps.engine.find(JOB_MODEL, { status: ["running"] });
    if (running.length === 0) return 0;
    const lease = await this.deps.store.lease();
    const now = this.deps.now();
    let n = 0;
    for (const job of running) {
      if (this.#running.has(job.id)) continue;
      if (lease && lease.job_id === job.id && lease.expires_at > now) continue;
      await this.#abandon(
        job,
        await this.deps.store.spec(job.id),
        lease?.job_id === job.id ? lease.expires_at : null,
      );
      n++;
    }
    return n;
  }

  /** Deleting a job: a running one is refused; a scheduled or waiting one is cancelled. */
  async cancel(jobId: number): Promise<"deleted" | "running" | "missing"> {
    const { engine, store } = this.deps;
    const job = await engine.get(JOB_MODEL, jobId);
    if (!job) return "missing";
    if (statusOf(job) === "running") return "running";
    const spec = await store.spec(jobId);
    await engine.remove(JOB_MODEL, jobId);
    await store.deleteSpec(jobId);
    await store.clearProgress(jobId);
    if (spec) {
      await store.releaseSlot(spec.kind, jobId);
      await store.forgetFinished(spec.kind, [jobId]);
    }
    return "deleted";
  }

  /** Waits for this process's runs in flight (tests, graceful stop). */
  async idle(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }
}

export type { JobStatus };
