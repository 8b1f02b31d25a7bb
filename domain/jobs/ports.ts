/**
 * What the sync job runner talks through (docs/jobs.md). The KV implementation is
 * storage/kv/jobs.ts; the backend link is built by routes/plugin/job_wiring.ts over the
 * plugin's BackendClient, so the runner drives the backend over HTTP as a separate plugin
 * process would.
 */

export type JobKind = "sync" | "repair";

/** What a job was asked to do; kept beside the NetBox job record (which has no room for it). */
export interface JobSpec {
  kind: JobKind;
  /** Stage sync types in table order (never "all": expanded when the job is made). */
  sync_types: string[];
  /** Plugin hypervisor endpoint ids; null = every enabled endpoint at run time. */
  endpoint_ids: number[] | null;
  /** Minutes between runs (NetBox `interval`), or null for a one-off. */
  interval_minutes: number | null;
  /** Who asked: the token's id and description, for the log. */
  requested_by: string;
}

/** Who holds the run lease: one job of one process, until `expires_at` (epoch ms). */
export interface Lease {
  job_id: number;
  owner: string;
  expires_at: number;
}

/** The job queue and the ownership rules, all in one KV. */
export interface JobStore {
  saveSpec(jobId: number, spec: JobSpec): Promise<void>;
  spec(jobId: number): Promise<JobSpec | null>;
  deleteSpec(jobId: number): Promise<void>;

  /**
   * Admission: claims the `kind` slot for `jobId` unless one of `blocking` slots names a job
   * that `isActive` says is still pending or running (that job's id is returned instead).
   * Atomic (one check per slot): two concurrent claims never both win.
   */
  claimSlot(
    kind: JobKind,
    jobId: number,
    blocking: readonly JobKind[],
    isActive: (jobId: number) => Promise<boolean>,
  ): Promise<{ ok: true } | { ok: false; holder: number }>;
  /** Frees the slot if it still names `jobId`. */
  releaseSlot(kind: JobKind, jobId: number): Promise<void>;
  /** The job a slot names, if any. */
  slotHolder(kind: JobKind): Promise<number | null>;

  /** Takes the run lease (free or expired) for `jobId`; the holder when it is taken. */
  takeLease(
    jobId: number,
    owner: string,
    ttlMs: number,
  ): Promise<{ ok: true } | { ok: false; lease: Lease }>;
  /** Extends our lease; false when it is no longer ours (expired and taken by another). */
  renewLease(jobId: number, owner: string, ttlMs: number): Promise<boolean>;
  releaseLease(jobId: number, owner: string): Promise<void>;
  lease(): Promise<Lease | null>;

  /** Queues a run message for `jobId`, delivered after `delayMs`. */
  enqueue(jobId: number, delayMs: number): Promise<void>;

  /** Latest live progress frame of a running job (not kept after the job). */
  setProgress(jobId: number, frame: unknown): Promise<void>;
  progress(jobId: number): Promise<unknown>;
  clearProgress(jobId: number): Promise<void>;

  /** Finished jobs per kind, oldest first (retention). */
  markFinished(kind: JobKind, jobId: number): Promise<void>;
  finished(kind: JobKind): Promise<number[]>;
  forgetFinished(kind: JobKind, jobIds: number[]): Promise<void>;

  /**
   * Delivers queued job ids to `handler` (at least once; a message whose handler was cut
   * off by a dead process comes back). Resolves when the store closes.
   */
  listen(handler: (jobId: number) => Promise<void>): Promise<void>;

  /** Ticks whenever the job record or its progress changes (ends when `signal` aborts). */
  watch(jobId: number, signal: AbortSignal): AsyncIterable<void>;
}

/** One backend call's outcome as the runner needs it; never holds a secret. */
export interface Answer {
  ok: boolean;
  status: number | null;
  error: string | null;
  body?: unknown;
}

export interface StageFrame {
  event: string;
  data: unknown;
}

export type StageStream =
  | { ok: true; events: AsyncIterable<StageFrame> }
  | { ok: false; status: number | null; error: string; body?: unknown };

/** The backend as the plugin reaches it (its URL and key from the backend endpoint record). */
export interface BackendLink {
  /** Where the backend is (for the log; no key in it). */
  readonly url: string;
  health(): Promise<Answer>;
  stream(path: string, signal: AbortSignal): Promise<StageStream>;
  reconcile(): Promise<Answer>;
  /** Backend hypervisor endpoint copies: id and name. */
  copies(): Promise<Answer & { copies?: { id: number; name: string }[] }>;
}

/** A plugin hypervisor endpoint the job covers. */
export interface JobEndpoint {
  id: number;
  name: string;
  enabled: boolean;
  /** The name its backend copy carries (`<name> (inv:<pk>)`). */
  copyName: string;
}

export interface PushReport {
  what: string;
  ok: boolean;
  error: string | null;
  status: number | null;
}

/** The plugin side: its records, its pushes, its backend key. */
export interface PluginSide {
  /** The backend link, or why there is none (no backend endpoint record, no host). */
  backend(): Promise<BackendLink | { error: string }>;
  /** Re-reads the backend endpoint, registers its key when the backend has none; a new link. */
  renewBackendKey(): Promise<BackendLink | { error: string }>;
  /** Every plugin hypervisor endpoint (enabled or not), by id. */
  endpoints(): Promise<JobEndpoint[]>;
  /** Pushes the inventory endpoint and the given hypervisor endpoints; one report each. */
  pushAll(endpointIds: number[]): Promise<PushReport[]>;
  /** Sets the endpoint record's read-only `last_sync`. */
  recordLastSync(
    endpointId: number,
    last: { at: string; ok: boolean; job_id: number; status: string },
  ): Promise<void>;
  /** Secrets that must never reach a job log (the backend key, pushed tokens, passwords). */
  secrets(): Promise<string[]>;
}
