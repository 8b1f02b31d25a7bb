/**
 * What the plugin's domain reaches outside the inventory through: the backend service (push on
 * save, key bootstrap, relays and stage streams) and the hypervisors it keeps endpoints of
 * (keepalive probes). clients/backend.ts and clients/hypervisor_probe.ts implement them over
 * HTTP; routes/plugin/mod.ts hands the implementations to PluginServices.
 *
 * @module
 */
import type { HypervisorEndpointRecord, InventoryEndpointRecord } from "../../storage/ports.ts";

export interface CallOutcome<T = unknown> {
  ok: boolean;
  error: string | null;
  status: number | null;
  /** Parsed JSON body when the backend answered with JSON (also on error statuses). */
  body?: T;
  /**
   * Set when the backend refused the call in a way the plugin acts on: `unauthorized` (the key
   * is not accepted) or `conflict` (it already holds what was sent).
   */
  refused?: "unauthorized" | "conflict";
}

export interface BackendTarget {
  /** `http[s]://<domain or ip>:<port>` without a trailing slash. */
  baseUrl: string;
  /** Sent as `X-Service-API-Key`; null before one was generated. */
  token: string | null;
  /** false: accept any certificate on https (the endpoint's verify_ssl). Default true. */
  verifySsl?: boolean;
  /**
   * `ws[s]://<websocket_domain or host>:<websocket_port>` when the endpoint says
   * `use_websocket`: stage streams are read over WebSocket there (docs/sync.md).
   */
  websocketUrl?: string | null;
}

export interface BackendClientOptions {
  /** Per-call timeouts; tests shorten them. */
  inventoryTimeoutMs?: number;
  hypervisorTimeoutMs?: number;
  defaultTimeoutMs?: number;
}

/**
 * What the plugin sends as the backend's inventory endpoint copy (docs/api-behaviour.md, Backend:
 * endpoint copies): the backend's stored record without what the backend decides itself (id,
 * where the secret's key comes from); the secret travels in plaintext.
 */
export type InventoryCopy = Omit<InventoryEndpointRecord, "id" | "key_source">;

/**
 * What the plugin sends as the backend's hypervisor endpoint copy (docs/api-behaviour.md, Backend:
 * endpoint copies), derived from the backend's stored record like InventoryCopy.
 */
export type HypervisorCopy = Omit<HypervisorEndpointRecord, "id" | "key_source" | "timeout"> & {
  /** Seconds per hypervisor request; omitted to keep the backend default. */
  timeout?: number;
};

/** One Server-Sent Event of a backend stream, `data` parsed as JSON (text when it is not). */
export interface StreamEvent {
  event: string;
  data: unknown;
}

/** An opened stream, or why it could not be opened (the backend's status and body). */
export type StreamOpen =
  | { ok: true; status: number; events: AsyncIterable<StreamEvent> }
  | { ok: false; status: number | null; error: string; body?: unknown };

export interface BootstrapStatus {
  needs_bootstrap: boolean;
  has_db_keys: boolean;
}

export interface RemoteCopy {
  id: number;
  name?: string;
  [field: string]: unknown;
}

/** The backend service as the plugin uses it; every call answers, none throws. */
export interface BackendApi {
  readonly baseUrl: string;
  /** The WebSocket address stage streams are read at, when the endpoint says use_websocket. */
  readonly socketUrl?: string | null;
  /** A copy that authenticates with another key (after registering it). */
  withToken(token: string): BackendApi;
  bootstrapStatus(): Promise<CallOutcome<BootstrapStatus>>;
  registerKey(apiKey: string, label: string): Promise<CallOutcome>;
  verifyKey(): Promise<CallOutcome>;
  listInventoryEndpoints(): Promise<CallOutcome<RemoteCopy[]>>;
  createInventoryEndpoint(copy: InventoryCopy): Promise<CallOutcome<RemoteCopy>>;
  updateInventoryEndpoint(id: number, copy: InventoryCopy): Promise<CallOutcome<RemoteCopy>>;
  listHypervisorEndpoints(): Promise<CallOutcome<RemoteCopy[]>>;
  createHypervisorEndpoint(copy: HypervisorCopy): Promise<CallOutcome<RemoteCopy>>;
  updateHypervisorEndpoint(id: number, copy: HypervisorCopy): Promise<CallOutcome<RemoteCopy>>;
  deleteHypervisorEndpoint(id: number): Promise<CallOutcome>;
  health(timeoutMs?: number): Promise<CallOutcome>;
  reconcileCustomFields(timeoutMs?: number): Promise<CallOutcome>;
  openStream(
    path: string,
    options?: { signal?: AbortSignal; connectTimeoutMs?: number; idleTimeoutMs?: number },
  ): Promise<StreamOpen>;
  /** Raw relay: the backend's status and body are the caller's business. */
  relay(
    path: string,
  ): Promise<{ reached: true; status: number; body: unknown } | { reached: false; error: string }>;
}

/** Makes a backend client for one target (the endpoint's address, key and TLS choice). */
export type BackendConnector = (
  target: BackendTarget,
  options?: BackendClientOptions,
) => BackendApi;

export interface ProbeTarget {
  baseUrl: string;
  username: string | null;
  password: string | null;
  tokenName: string | null;
  tokenValue: string | null;
  /** false: accept any certificate (HTTPS only). Default true. */
  verifySsl?: boolean;
}

export type ProbeResult =
  | { status: "online"; version: string | null; release: string | null; repoid: string | null }
  | { status: "unauthorized" | "offline" | "error"; detail: string; http_status: number | null };

/** Asks a hypervisor for its version with the endpoint's own credentials. */
export type HypervisorProbe = (target: ProbeTarget, timeoutMs?: number) => Promise<ProbeResult>;
