/**
 * What the sync job runner talks through (docs/jobs.md). The KV implementation is
 * storage/kv/jobs.ts; the backend link is built by routes/plugin/job_wiring.ts over the
 * plugin's BackendClient, so the runner drives the backend over HTTP as a separate plugin
 * process would.
 */

// The job store is a storage port like every other (storage/ports.ts); re-exported for the runner.
export type {
  JobKind,
  JobPart,
  JobPartOutcome,
  JobSpec,
  JobStore,
  Lease,
} from "../../storage/ports.ts";

/**
 * Why the backend did not do what was asked, as the runner acts on it. The link classifies its
 * answers (docs/jobs.md): `unauthorized` renews the backend key once, `retryable` (no answer, a
 * broken connection, a server-side failure) is tried again with backoff, `refused` is final.
 * The status stays data, for the job log only.
 */
export type Refusal = "unauthorized" | "retryable" | "refused";

/** One backend call's outcome as the runner needs it; never holds a secret. */
export interface Answer {
  ok: boolean;
  /** Set whenever `ok` is false. */
  reason?: Refusal;
  status: number | null;
  error: string | null;
  body?: unknown;
}

export interface StageFrame {
  event: string;
  data: unknown;
}

export type StageStream =
  | { ok: true; status: number; events: AsyncIterable<StageFrame> }
  | { ok: false; reason: Refusal; status: number | null; error: string; body?: unknown };

/** The backend as the plugin reaches it (its URL and key from the backend endpoint record). */
export interface BackendLink {
  /** Where the backend is (for the log; no key in it). */
  readonly url: string;
  /**
   * Where stage streams are read, when not `GET <url><path>` (the WebSocket variant: docs/sync.md
   * "WebSocket streams"); for the log only.
   */
  readonly socketUrl?: string | null;
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
