/**
 * Outbound client for the backend service (docs/api-behaviour.md, Backend) as the inventory plugin
 * uses it: key bootstrap, the inventory and hypervisor endpoint copies, and the bootstrap-status
 * relay.
 *
 * Every call answers the (ok, error, status) triple (docs/api-behaviour.md, Push on save) and never
 * throws: a network failure, a timeout or an unexpected answer becomes ok=false with a message
 * naming the operation and the URL, and the HTTP status when there was one. Secrets never appear in
 * the messages.
 */

import { EventSourceParserStream } from "eventsource-parser/stream";
import { fetchFor } from "./hypervisor_probe.ts";
import { outboundSocket } from "./outbound.ts";
import { openSocketStream } from "./backend_socket.ts";
import type {
  BackendApi,
  BackendClientOptions,
  BackendTarget,
  BootstrapStatus,
  CallOutcome,
  HypervisorCopy,
  InventoryCopy,
  RemoteCopy,
  StreamEvent,
  StreamOpen,
} from "../domain/plugin/ports.ts";
import { baseUrl, urlHost } from "../domain/plugin/destination.ts";

export type {
  BackendClientOptions,
  BackendTarget,
  BootstrapStatus,
  CallOutcome,
  HypervisorCopy,
  InventoryCopy,
  RemoteCopy,
  StreamEvent,
  StreamOpen,
};
export { baseUrl, urlHost };

export const INVENTORY_PUSH_TIMEOUT_MS = 10_000;
export const HYPERVISOR_PUSH_TIMEOUT_MS = 15_000;
/** Key bootstrap and relays are small calls; they share the inventory push budget. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** Silence (no frame, no keepalive comment) after which a stream counts as broken. */
export const STREAM_IDLE_TIMEOUT_MS = 60_000;

/** The refusals the plugin acts on (a key not accepted, a copy or key already there). */
const REFUSALS: Record<number, CallOutcome["refused"]> = { 401: "unauthorized", 409: "conflict" };

function describe(error: unknown): string {
  if (error instanceof DOMException && error.name === "TimeoutError") return "timed out";
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? `${error.message}: ${cause.message}` : error.message;
    return `unreachable (${detail})`;
  }
  return `unreachable (${String(error)})`;
}

function detailOf(body: unknown, text: string): string {
  if (body && typeof body === "object") {
    const detail = (body as Record<string, unknown>).detail;
    if (typeof detail === "string") return detail;
    if (detail !== undefined) return JSON.stringify(detail);
    return JSON.stringify(body).slice(0, 300);
  }
  return text.slice(0, 300);
}

export class BackendClient implements BackendApi {
  readonly #fetch: typeof fetch;
  readonly #target: BackendTarget;
  readonly #timeouts: Required<BackendClientOptions>;

  constructor(fetchFn: typeof fetch, target: BackendTarget, options: BackendClientOptions = {}) {
    this.#fetch = fetchFn;
    this.#target = { ...target, baseUrl: target.baseUrl.replace(/\/+$/, "") };
    this.#timeouts = {
      inventoryTimeoutMs: options.inventoryTimeoutMs ?? INVENTORY_PUSH_TIMEOUT_MS,
      hypervisorTimeoutMs: options.hypervisorTimeoutMs ?? HYPERVISOR_PUSH_TIMEOUT_MS,
      defaultTimeoutMs: options.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS,
    };
  }

  /** The fetch for a URL: certificate checks skipped only when the endpoint says so. */
  #send(url: string): typeof fetch {
    return fetchFor(url, this.#target.verifySsl !== false, this.#fetch);
  }

  get baseUrl(): string {
    return this.#target.baseUrl;
  }

  get socketUrl(): string | null {
    return this.#target.websocketUrl ?? null;
  }

  /** A copy of this client that authenticates with another key (after registering it). */
  withToken(token: string): BackendClient {
    const copy = new BackendClient(this.#fetch, { ...this.#target, token }, this.#timeouts);
    return copy;
  }

  /**
   * One request. `expect` lists the statuses that count as success; any other status yields
   * ok=false with the backend's `detail`. The parsed body is returned either way.
   */
  async call<T>(
    method: string,
    path: string,
    options: { body?: unknown; timeoutMs: number; expect?: number[]; auth?: boolean },
  ): Promise<CallOutcome<T>> {
    const url = `${this.#target.baseUrl}${path}`;
    const headers: Record<string, string> = { accept: "application/json" };
    if (options.body !== undefined) headers["content-type"] = "application/json";
    if (options.auth !== false && this.#target.token) {
      headers["x-service-api-key"] = this.#target.token;
    }
    let response: Response;
    try {
      response = await this.#send(url)(url, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
    } catch (error) {
      const why = describe(error);
      const suffix = why === "timed out" ? ` after ${options.timeoutMs / 1000} s` : "";
      return { ok: false, error: `${method} ${url}: backend ${why}${suffix}`, status: null };
    }
    let text = "";
    try {
      text = await response.text();
    } catch (error) {
      return {
        ok: false,
        error: `${method} ${url}: reading the answer failed (${describe(error)})`,
        status: response.status,
      };
    }
    let body: unknown = undefined;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
    }
    const expected = options.expect ?? [200];
    if (!expected.includes(response.status)) {
      return {
        ok: false,
        error: `${method} ${url}: HTTP ${response.status}: ${
          detailOf(body, text) || response.statusText
        }`,
        status: response.status,
        body: body as T,
        ...(REFUSALS[response.status] ? { refused: REFUSALS[response.status] } : {}),
      };
    }
    return { ok: true, error: null, status: response.status, body: body as T };
  }

  // ------------------------------------------------------------------ key bootstrap

  async bootstrapStatus(): Promise<CallOutcome<BootstrapStatus>> {
    const out = await this.call<BootstrapStatus>("GET", "/auth/bootstrap-status", {
      timeoutMs: this.#timeouts.defaultTimeoutMs,
      auth: false,
    });
    if (
      out.ok && (typeof out.body !== "object" || out.body === null ||
        typeof out.body.needs_bootstrap !== "boolean")
    ) {
      return {
        ...out,
        ok: false,
        error: `GET ${this.baseUrl}/auth/bootstrap-status: unexpected answer`,
      };
    }
    return out;
  }

  registerKey(apiKey: string, label: string): Promise<CallOutcome> {
    return this.call("POST", "/auth/register-key", {
      body: { api_key: apiKey, label },
      timeoutMs: this.#timeouts.defaultTimeoutMs,
      expect: [200, 201],
      auth: false,
    });
  }

  /** One authenticated read (the key list) to tell whether our key is accepted. */
  verifyKey(): Promise<CallOutcome> {
    return this.call("GET", "/auth/keys", { timeoutMs: this.#timeouts.defaultTimeoutMs });
  }

  // ------------------------------------------------------------------ inventory endpoint copy

  listInventoryEndpoints(): Promise<CallOutcome<RemoteCopy[]>> {
    return this.#list("/inventory/endpoint", this.#timeouts.inventoryTimeoutMs);
  }

  createInventoryEndpoint(copy: InventoryCopy): Promise<CallOutcome<RemoteCopy>> {
    return this.call("POST", "/inventory/endpoint", {
      body: copy,
      timeoutMs: this.#timeouts.inventoryTimeoutMs,
      expect: [200, 201],
    });
  }

  updateInventoryEndpoint(id: number, copy: InventoryCopy): Promise<CallOutcome<RemoteCopy>> {
    return this.call("PUT", `/inventory/endpoint/${id}`, {
      body: copy,
      timeoutMs: this.#timeouts.inventoryTimeoutMs,
    });
  }

  // ------------------------------------------------------------------ hypervisor endpoint copies

  listHypervisorEndpoints(): Promise<CallOutcome<RemoteCopy[]>> {
    return this.#list("/hypervisor/endpoints", this.#timeouts.hypervisorTimeoutMs);
  }

  createHypervisorEndpoint(copy: HypervisorCopy): Promise<CallOutcome<RemoteCopy>> {
    return this.call("POST", "/hypervisor/endpoints", {
      body: copy,
      timeoutMs: this.#timeouts.hypervisorTimeoutMs,
      expect: [200, 201],
    });
  }

  updateHypervisorEndpoint(id: number, copy: HypervisorCopy): Promise<CallOutcome<RemoteCopy>> {
    return this.call("PUT", `/hypervisor/endpoints/${id}`, {
      body: copy,
      timeoutMs: this.#timeouts.hypervisorTimeoutMs,
    });
  }

  deleteHypervisorEndpoint(id: number): Promise<CallOutcome> {
    return this.call("DELETE", `/hypervisor/endpoints/${id}`, {
      timeoutMs: this.#timeouts.hypervisorTimeoutMs,
      expect: [200, 204, 404],
    });
  }

  // ------------------------------------------------------------------ sync jobs

  /** `GET /health` (no key needed): ok when the backend answers `{status:"ready"}`. */
  health(timeoutMs = this.#timeouts.defaultTimeoutMs): Promise<CallOutcome> {
    return this.call("GET", "/health", { timeoutMs, auth: false });
  }

  /** `POST /extras/custom-fields/reconcile`: the backend writes the inventory's definitions. */
  reconcileCustomFields(timeoutMs = 60_000): Promise<CallOutcome> {
    return this.call("POST", "/extras/custom-fields/reconcile", { timeoutMs });
  }

  /**
   * Opens a Server-Sent Events stream (a sync stage). Opening has `connectTimeoutMs`; once
   * open, a stream silent for `idleTimeoutMs` (the backend sends a keepalive every 15 s) is
   * cut and iterating it throws, as does a broken connection.
   */
  async openStream(
    path: string,
    options: { signal?: AbortSignal; connectTimeoutMs?: number; idleTimeoutMs?: number } = {},
  ): Promise<StreamOpen> {
    if (this.#target.websocketUrl) {
      return this.#openSocket(this.#target.websocketUrl, path, options);
    }
    const url = `${this.#target.baseUrl}${path}`;
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (this.#target.token) headers["x-service-api-key"] = this.#target.token;
    const abort = new AbortController();
    const stop = () => abort.abort(options.signal?.reason);
    options.signal?.addEventListener("abort", stop, { once: true });
    const connectMs = options.connectTimeoutMs ?? this.#timeouts.defaultTimeoutMs;
    const idleMs = options.idleTimeoutMs ?? STREAM_IDLE_TIMEOUT_MS;
    let timedOut = false;
    let timer = setTimeout(() => {
      timedOut = true;
      abort.abort(new DOMException("timed out", "TimeoutError"));
    }, connectMs);
    const done = () => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", stop);
    };
    let response: Response;
    try {
      response = await this.#send(url)(url, { headers, signal: abort.signal });
    } catch (error) {
      done();
      const why = timedOut ? `timed out after ${connectMs / 1000} s` : describe(error);
      return { ok: false, status: null, error: `GET ${url}: backend ${why}` };
    }
    if (response.status !== 200 || !response.body) {
      done();
      const text = await response.text().catch(() => "");
      let body: unknown = undefined;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      return {
        ok: false,
        status: response.status,
        error: `GET ${url}: HTTP ${response.status}: ${
          detailOf(body, text) || response.statusText
        }`,
        body,
      };
    }
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        abort.abort(new DOMException("idle", "TimeoutError"));
      }, idleMs);
    };
    arm();
    const source = response.body;
    const events = async function* () {
      // Every chunk (frames and keepalive comments alike) proves the stream alive. The pipe
      // follows the abort too: a fetch over a socket errors its body on abort, but the app's own
      // port is answered in-process (clients/outbound.ts) with a body nothing else cancels, so a
      // caller that stops (a job that lost its run lease, the idle timer) would otherwise wait
      // for the backend's next frame. Cancelling it here also tells the backend to stop the run.
      const watched = source.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            arm();
            controller.enqueue(chunk);
          },
        }),
        { signal: abort.signal },
      );
      const parsed = watched.pipeThrough(new TextDecoderStream()).pipeThrough(
        new EventSourceParserStream(),
      );
      try {
        for await (const message of parsed) {
          let data: unknown = message.data;
          try {
            data = JSON.parse(message.data);
          } catch {
            // a frame that is not JSON is passed on as text
          }
          yield { event: message.event ?? "message", data };
        }
      } catch (error) {
        if (timedOut) {
          throw new Error(`GET ${url}: the stream was silent for ${idleMs / 1000} s`);
        }
        throw new Error(`GET ${url}: the stream broke (${describe(error)})`);
      } finally {
        done();
        abort.abort();
      }
    };
    return { ok: true, status: 200, events: events() };
  }

  /**
   * The same stream over WebSocket (`…/stream` → `…/ws` at the endpoint's WebSocket address),
   * through the guarded transport's pinned connection: no other way out (SECURITY.md "Outbound
   * requests").
   */
  #openSocket(
    base: string,
    path: string,
    options: { signal?: AbortSignal; connectTimeoutMs?: number; idleTimeoutMs?: number },
  ): Promise<StreamOpen> {
    const url = new URL(`${base.replace(/\/+$/, "")}${path}`);
    url.pathname = url.pathname.replace(/\/stream$/, "/ws");
    const connect = outboundSocket(this.#fetch);
    if (!connect) {
      return Promise.resolve({
        ok: false,
        status: null,
        error: `GET ${url.href}: WebSocket streams need the guarded outbound transport`,
      });
    }
    return openSocketStream(connect, url, this.#target.token, {
      signal: options.signal,
      connectTimeoutMs: options.connectTimeoutMs ?? this.#timeouts.defaultTimeoutMs,
      idleTimeoutMs: options.idleTimeoutMs ?? STREAM_IDLE_TIMEOUT_MS,
      verifyTls: this.#target.verifySsl !== false,
    });
  }

  // ------------------------------------------------------------------ relays

  /** Raw relay: the backend's status and body are the caller's business. */
  async relay(
    path: string,
  ): Promise<{ reached: true; status: number; body: unknown } | { reached: false; error: string }> {
    const url = `${this.#target.baseUrl}${path}`;
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.#target.token) headers["x-service-api-key"] = this.#target.token;
    try {
      const response = await this.#send(url)(url, {
        headers,
        signal: AbortSignal.timeout(this.#timeouts.defaultTimeoutMs),
      });
      const text = await response.text();
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        body = { detail: text.slice(0, 500) };
      }
      return { reached: true, status: response.status, body };
    } catch (error) {
      return { reached: false, error: `GET ${url}: backend ${describe(error)}` };
    }
  }

  async #list(path: string, timeoutMs: number): Promise<CallOutcome<RemoteCopy[]>> {
    const out = await this.call<unknown>("GET", path, { timeoutMs });
    if (!out.ok) return out as CallOutcome<RemoteCopy[]>;
    // The backend answers a bare array; tolerate a {results:[...]} envelope as well.
    const list = Array.isArray(out.body) ? out.body : (out.body as { results?: unknown })?.results;
    if (!Array.isArray(list)) {
      return {
        ok: false,
        error: `GET ${this.baseUrl}${path}: expected a list`,
        status: out.status,
      };
    }
    return { ...out, body: list as RemoteCopy[] };
  }
}
