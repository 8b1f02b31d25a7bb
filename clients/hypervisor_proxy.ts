/**
 * Outbound client for a real Proxmox VE API (`HYPERVISOR_MODE=real`).
 *
 * - Base URL `HYPERVISOR_URL` (`https://pve:8006`; a trailing `/api2/json` is accepted).
 * - Auth: API token (`Authorization: PVEAPIToken=<user@realm!tokenid>=<secret>`) when
 *   HYPERVISOR_TOKEN_ID/SECRET are set, else a ticket from `POST /access/ticket` with
 *   HYPERVISOR_USERNAME/PASSWORD, renewed well before its 2-hour life ends (and once more when
 *   the upstream answers 401), sent as `PVEAuthCookie` plus `CSRFPreventionToken` on writes.
 *   A caller may pass its own credentials instead (they are forwarded unchanged).
 * - TLS: verified by default against the system roots plus `HYPERVISOR_CA_FILE` (PEM) when set;
 *   `HYPERVISOR_VERIFY_TLS=false` turns verification off explicitly (Deno's HttpClient cannot,
 *   so those requests go through `nodeExchange` of clients/outbound.ts: node:https without
 *   certificate checks, the one certificate-skipping path of the app).
 * - Failures are classified, never thrown: timeout, unreachable, tls, auth, status.
 */
import type { Config } from "../config.ts";
import type { Logger } from "../infra/logger.ts";
import { nodeExchange } from "./outbound.ts";

export type ProxyAuth =
  | { kind: "token"; tokenId: string; secret: string }
  | { kind: "ticket"; username: string; password: string }
  | { kind: "none" };

export interface ProxyClientOptions {
  baseUrl: string;
  auth: ProxyAuth;
  verifyTls: boolean;
  /** PEM text of extra trusted roots (the content of HYPERVISOR_CA_FILE). */
  caCerts?: string[];
  /** Per upstream request. Default 30 s. */
  timeoutMs?: number;
  /** Renew a ticket once it is this old. Default 90 minutes (tickets live 2 hours). */
  ticketRenewMs?: number;
  fetch: typeof fetch;
  now: () => number;
  logger: Logger;
}

/** Credentials a client sent; forwarded as they are when present. */
export interface ClientCredentials {
  ticket?: string;
  csrf?: string;
  authorization?: string;
}

export type UpstreamResult =
  | {
    ok: true;
    status: number;
    /** The `data` member of Proxmox's envelope. */
    data: unknown;
    /** The whole parsed body (`{data, total?, ...}`). */
    body: Record<string, unknown>;
  }
  | {
    ok: false;
    kind: "timeout" | "unreachable" | "tls" | "auth" | "status" | "protocol";
    /** The status this proxy answers with. */
    status: number;
    /** Human-readable; safe to show (no secrets). */
    message: string;
    /** Proxmox's per-field errors, when the upstream gave them. */
    errors?: Record<string, string>;
  };

export const DEFAULT_TIMEOUT_MS = 30_000;
export const TICKET_LIFETIME_MS = 2 * 3600 * 1000;
export const DEFAULT_TICKET_RENEW_MS = 90 * 60 * 1000;

interface Ticket {
  ticket: string;
  csrf: string;
  obtainedAt: number;
}

interface RawResponse {
  status: number;
  statusText: string;
  text: string;
}

/** `https://pve:8006` or `https://pve:8006/api2/json` → `https://pve:8006/api2/json`. */
export function apiBase(url: string): string {
  const u = new URL(url);
  let path = u.pathname.replace(/\/+$/, "");
  if (!path.endsWith("/api2/json")) path = `${path}/api2/json`;
  return `${u.origin}${path}`;
}

/** Proxy options from the configuration; reads HYPERVISOR_CA_FILE. */
export async function proxyOptionsFromConfig(
  config: Config,
  base: Pick<ProxyClientOptions, "fetch" | "now" | "logger">,
): Promise<ProxyClientOptions> {
  const h = config.hypervisor;
  if (!h.url) throw new Error("HYPERVISOR_URL is required in real mode");
  let auth: ProxyAuth = { kind: "none" };
  if (h.tokenId && h.tokenSecret) {
    auth = { kind: "token", tokenId: h.tokenId, secret: h.tokenSecret };
  } else if (h.username && h.password) {
    auth = { kind: "ticket", username: h.username, password: h.password };
  }
  let caCerts: string[] | undefined;
  if (h.caFile) {
    try {
      caCerts = [await Deno.readTextFile(h.caFile)];
    } catch (err) {
      throw new Error(`HYPERVISOR_CA_FILE ${h.caFile}: ${(err as Error).message}`);
    }
  }
  return { ...base, baseUrl: h.url, auth, verifyTls: h.verifyTls, caCerts, timeoutMs: h.timeoutMs };
}

/** Walks an error's cause chain into one lowercase string for classification. */
function errorText(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let i = 0; e && i < 5; i++) {
    if (e instanceof Error) {
      parts.push(`${e.name}: ${e.message}`);
      const code = (e as { code?: string }).code;
      if (code) parts.push(code);
      e = e.cause;
    } else {
      parts.push(String(e));
      break;
    }
  }
  return parts.join(" | ");
}

export function classifyFailure(
  err: unknown,
  target: string,
): Extract<UpstreamResult, { ok: false }> {
  const text = errorText(err);
  const lower = text.toLowerCase();
  if (
    (err instanceof DOMException && err.name === "TimeoutError") ||
    lower.includes("timeouterror") ||
    lower.includes("timed out")
  ) {
    return {
      ok: false,
      kind: "timeout",
      status: 504,
      message: `Hypervisor at ${target} timed out.`,
    };
  }
  if (
    /certificate|invalidcertificate|unknownissuer|self.signed|cert_|tls|handshake|ssl/.test(lower)
  ) {
    return {
      ok: false,
      kind: "tls",
      status: 502,
      message: `TLS certificate of ${target} could not be verified (${
        text.split(" | ").pop()
      }). Trust its CA with HYPERVISOR_CA_FILE, or set HYPERVISOR_VERIFY_TLS=false.`,
    };
  }
  return {
    ok: false,
    kind: "unreachable",
    status: 503,
    message: `Hypervisor at ${target} is unreachable (${text.split(" | ").pop()}).`,
  };
}

export class HypervisorProxyClient {
  readonly base: string;
  readonly #opts: ProxyClientOptions;
  readonly #client?: Deno.HttpClient;
  #ticket?: Ticket;
  #login?: Promise<Ticket | Extract<UpstreamResult, { ok: false }>>;
  /** Upstream logins performed (observability and tests). */
  logins = 0;

  constructor(opts: ProxyClientOptions) {
    this.#opts = opts;
    this.base = apiBase(opts.baseUrl);
    if (opts.verifyTls && opts.caCerts?.length) {
      this.#client = Deno.createHttpClient({ caCerts: opts.caCerts });
    }
  }

  close(): void {
    this.#client?.close();
  }

  get #timeoutMs(): number {
    return this.#opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** One HTTP exchange; throws on transport failure. */
  async #send(
    method: string,
    url: string,
    headers: Record<string, string>,
    body?: string | ReadableStream<Uint8Array>,
  ): Promise<RawResponse> {
    const signal = AbortSignal.timeout(this.#timeoutMs);
    if (!this.#opts.verifyTls && url.startsWith("https:")) {
      return await insecureRequest(method, url, headers, body, signal);
    }
    const init: RequestInit & { client?: Deno.HttpClient; duplex?: "half" } = {
      method,
      headers,
      body,
      signal,
    };
    if (body instanceof ReadableStream) init.duplex = "half";
    if (this.#client) init.client = this.#client;
    const res = await this.#opts.fetch(url, init);
    return { status: res.status, statusText: res.statusText, text: await res.text() };
  }

  async #obtainTicket(): Promise<Ticket | Extract<UpstreamResult, { ok: false }>> {
    const auth = this.#opts.auth;
    if (auth.kind !== "ticket") throw new Error("not a ticket configuration");
    this.logins++;
    const form = new URLSearchParams({ username: auth.username, password: auth.password });
    let res: RawResponse;
    try {
      res = await this.#send(
        "POST",
        `${this.base}/access/ticket`,
        { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        form.toString(),
      );
    } catch (err) {
      return classifyFailure(err, this.base);
    }
    const data = parseEnvelope(res.text)?.data as Record<string, unknown> | undefined;
    if (res.status !== 200 || !data || typeof data.ticket !== "string") {
      this.#opts.logger.log("error", "hypervisor proxy: login rejected", {
        url: this.base,
        status: res.status,
        username: auth.username,
      });
      return {
        ok: false,
        kind: "auth",
        status: 502,
        message: `The hypervisor rejected the configured credentials of ${auth.username} ` +
          `(HTTP ${res.status}); check HYPERVISOR_USERNAME and HYPERVISOR_PASSWORD.`,
      };
    }
    return {
      ticket: data.ticket,
      csrf: String(data.CSRFPreventionToken ?? ""),
      obtainedAt: this.#opts.now(),
    };
  }

  /** A valid ticket: cached, renewed once it is `ticketRenewMs` old, one login at a time. */
  async #currentTicket(force = false): Promise<Ticket | Extract<UpstreamResult, { ok: false }>> {
    const renewAfter = this.#opts.ticketRenewMs ?? DEFAULT_TICKET_RENEW_MS;
    const t = this.#ticket;
    if (!force && t && this.#opts.now() - t.obtainedAt < renewAfter) return t;
    if (!this.#login) {
      this.#login = this.#obtainTicket().then((r) => {
        if ("ticket" in r) this.#ticket = r;
        return r;
      }).finally(() => (this.#login = undefined));
    }
    return await this.#login;
  }

  async #authHeaders(
    method: string,
    client: ClientCredentials | undefined,
    forceLogin: boolean,
  ): Promise<Record<string, string> | Extract<UpstreamResult, { ok: false }>> {
    const write = method !== "GET";
    if (client && (client.ticket || client.authorization)) {
      const h: Record<string, string> = {};
      if (client.authorization) h.authorization = client.authorization;
      if (client.ticket) h.cookie = `PVEAuthCookie=${encodeURIComponent(client.ticket)}`;
      if (client.csrf) h.csrfpreventiontoken = client.csrf;
      return h;
    }
    const auth = this.#opts.auth;
    if (auth.kind === "token") {
      return { authorization: `PVEAPIToken=${auth.tokenId}=${auth.secret}` };
    }
    if (auth.kind === "ticket") {
      const t = await this.#currentTicket(forceLogin);
      if (!("ticket" in t)) return t;
      const h: Record<string, string> = { cookie: `PVEAuthCookie=${encodeURIComponent(t.ticket)}` };
      if (write) h.csrfpreventiontoken = t.csrf;
      return h;
    }
    return {};
  }

  /** Origin-relative GET without auth (e.g. the host's own API-viewer schema); null on failure. */
  async fetchText(path: string): Promise<{ status: number; text: string } | null> {
    try {
      const res = await this.#send("GET", `${new URL(this.base).origin}${path}`, {
        accept: "application/javascript, application/json, */*",
      });
      return { status: res.status, text: res.text };
    } catch {
      return null;
    }
  }

  /**
   * Call `method path` upstream. `path` is the API path (`/nodes/pve1/qemu`, already
   * percent-encoded); `params` are sent as the query (GET/DELETE) or a form body (POST/PUT).
   * `client` credentials, when given, are forwarded instead of the configured ones;
   * `anonymous` sends none (login). `raw` is a body sent as it is (a multipart upload,
   * streamed); `params` then travel in the query.
   */
  async request(
    method: string,
    path: string,
    params: Record<string, unknown>,
    client?: ClientCredentials,
    anonymous = false,
    raw?: { body: ReadableStream<Uint8Array>; contentType: string },
  ): Promise<UpstreamResult> {
    const form = encodeParams(params);
    const hasBody = !raw && (method === "POST" || method === "PUT");
    const query = !hasBody && form.size ? `?${form}` : "";
    const url = `${this.base}${path}${query}`;
    const usesConfigured = !anonymous && !(client?.ticket || client?.authorization);
    for (let attempt = 0; attempt < 2; attempt++) {
      const auth = anonymous ? {} : await this.#authHeaders(method, client, attempt > 0);
      if ("ok" in auth) return auth as Extract<UpstreamResult, { ok: false }>;
      const headers: Record<string, string> = { accept: "application/json", ...auth };
      if (hasBody) headers["content-type"] = "application/x-www-form-urlencoded";
      if (raw) headers["content-type"] = raw.contentType;
      let res: RawResponse;
      try {
        res = await this.#send(
          method,
          url,
          headers,
          raw ? raw.body : hasBody ? form.toString() : undefined,
        );
      } catch (err) {
        const failure = classifyFailure(err, this.base);
        this.#opts.logger.log("warning", "hypervisor proxy: upstream failed", {
          method,
          path,
          kind: failure.kind,
          cause: failure.message,
        });
        return failure;
      }
      // An expired or revoked ticket of ours: log in again once and retry.
      // (A streamed body cannot be sent twice.)
      if (
        res.status === 401 && attempt === 0 && usesConfigured &&
        this.#opts.auth.kind === "ticket" && !raw
      ) {
        continue;
      }
      return toResult(res);
    }
    return { ok: false, kind: "auth", status: 502, message: "Upstream authentication failed." };
  }
}

function parseEnvelope(text: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(text);
    return v && typeof v === "object" && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

function toResult(res: RawResponse): UpstreamResult {
  const body = parseEnvelope(res.text);
  if (res.status >= 200 && res.status < 300) {
    if (!body || !("data" in body)) {
      return {
        ok: false,
        kind: "protocol",
        status: 502,
        message: 'The hypervisor answered without a {"data": ...} envelope.',
      };
    }
    return { ok: true, status: res.status, data: body.data, body };
  }
  const errors = body?.errors && typeof body.errors === "object"
    ? Object.fromEntries(
      Object.entries(body.errors as Record<string, unknown>).map(([k, v]) => [k, String(v)]),
    )
    : undefined;
  const message = (typeof body?.message === "string" ? body.message : "").trim() ||
    res.statusText || `HTTP ${res.status}`;
  return { ok: false, kind: "status", status: res.status, message, errors };
}

/** Proxmox parameters as a form: booleans 0/1, arrays as repeated keys. */
export function encodeParams(params: Record<string, unknown>): URLSearchParams {
  const form = new URLSearchParams();
  const one = (k: string, v: unknown) => {
    if (v === undefined || v === null) return;
    if (typeof v === "boolean") form.append(k, v ? "1" : "0");
    else if (typeof v === "object") form.append(k, JSON.stringify(v));
    else form.append(k, String(v));
  };
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) v.forEach((x) => one(k, x));
    else one(k, v);
  }
  return form;
}

/** HTTPS without certificate verification (an explicit opt-out), over the shared node exchange. */
async function insecureRequest(
  method: string,
  url: string,
  headers: Record<string, string>,
  body: string | ReadableStream<Uint8Array> | undefined,
  signal: AbortSignal,
): Promise<RawResponse> {
  const res = await nodeExchange(new URL(url), { method, headers, body, verifyTls: false, signal });
  return { status: res.status, statusText: res.statusText, text: await res.text() };
}
