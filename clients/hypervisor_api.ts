/**
 * The backend's client of one hypervisor endpoint copy (Proxmox VE wire format):
 * `http[s]://<ip>:<port>/api2/json`, authenticated with an API token
 * (`Authorization: PVEAPIToken=<user@realm!tokenname>=<value>`) or a ticket from
 * `POST /access/ticket` (cached, renewed well before Proxmox's two-hour expiry, and once
 * more when the hypervisor answers 401). Secrets are asked for at call time, never kept
 * beyond the ticket they buy. Every failure is a `HypervisorApiError` naming the operation,
 * the URL, the upstream status and an excerpt of the answer — never a credential.
 */
import { baseUrl } from "./backend.ts";
import { fetchFor, tokenId } from "./hypervisor_probe.ts";
import { UpstreamCallError } from "./upstream_error.ts";
import { redactSecrets } from "../domain/redaction.ts";
import type { HypervisorEndpointRecord } from "../storage/ports.ts";

/** Proxmox tickets live 2 h; renew after 90 min so a long sync never holds an expired one. */
export const TICKET_RENEW_AFTER_MS = 90 * 60_000;
const EXCERPT_CHARS = 300;

/** What a connection needs of a stored copy (`timeout` is seconds per call). */
export type HypervisorConnection = Pick<
  HypervisorEndpointRecord,
  "id" | "name" | "ip" | "port" | "use_https" | "verify_ssl" | "username" | "token_name" | "timeout"
>;

export interface HypervisorSecrets {
  password: string | null;
  token_value: string | null;
}

export interface HypervisorApiOptions {
  fetch: typeof fetch;
  /** Opens the stored secrets (the vault); called when a call needs them. */
  secrets: () => Promise<HypervisorSecrets>;
  now?: () => number;
}

export type HypervisorParams = Record<string, string | number | boolean | null | undefined>;

export interface RequestOptions {
  signal?: AbortSignal;
}

export class HypervisorApiError extends UpstreamCallError {
  /**
   * The endpoint cannot be used at all (no connection, or its login refused): a sync reports it
   * once and skips the endpoint for the rest of the run (docs/sync.md, Errors).
   */
  unusable?: boolean;
}

/**
 * What to do about a call that got no answer, from the transport's words. The real cause is
 * named: a refused port is a wrong port (or a stopped API), not a policy switch.
 */
function connectionHint(cause: string, where: string): string {
  const text = cause.toLowerCase();
  if (text.includes("timed out")) {
    return "The hypervisor did not answer in time: check it is up, or raise the endpoint's timeout.";
  }
  if (text.includes("service_allow_loopback_targets")) {
    return "This app refuses local and private targets: set SERVICE_ALLOW_LOOPBACK_TARGETS=true " +
      "to allow them (demos and tests), or use the hypervisor's public address.";
  }
  if (text.includes("econnrefused") || text.includes("connection refused")) {
    return `Nothing accepts connections on ${where}: the port is wrong or the API is not running ` +
      "(Proxmox VE listens on 8006, use_https true).";
  }
  if (
    text.includes("econnreset") || text.includes("hang up") || text.includes("connection closed") ||
    text.includes("connection reset") || text.includes("unexpected eof")
  ) {
    return `Something on ${where} closed the connection without answering: is it really the ` +
      "Proxmox VE API (port 8006, use_https true)?";
  }
  if (
    text.includes("enotfound") || text.includes("eai_again") || text.includes("lookup") ||
    text.includes("resolve")
  ) {
    return "The endpoint's host name does not resolve: check its ip (a name or an address).";
  }
  if (text.includes("certificate") || text.includes("tls") || text.includes("ssl")) {
    return "The TLS handshake failed: set verify_ssl false for a self-signed certificate, " +
      "or use_https false if the port speaks plain HTTP.";
  }
  if (text.includes("ehostunreach") || text.includes("enetunreach")) {
    return `No route to ${where}: check the ip and the network between this app and the hypervisor.`;
  }
  return "Check the endpoint's ip, port and use_https, and that the hypervisor is reachable.";
}

function hintFor(status: number | null, cause?: string, where = "the endpoint"): string {
  if (status === null) return connectionHint(cause ?? "", where);
  if (status === 401) {
    return "The hypervisor rejected the credentials: check username/password or the API token.";
  }
  if (status === 403) return "The user or token lacks the permission for this path.";
  if (status === 404) return "The path does not exist on this hypervisor (or the object is gone).";
  if (status === 501) return "This hypervisor does not implement the path (older version?).";
  if (status >= 300 && status < 400) {
    return "Redirects are not followed: point the endpoint at the API host directly.";
  }
  if (status >= 500) return "The hypervisor failed; retry later or look at its logs.";
  return "The hypervisor refused the request.";
}

function causeOf(error: unknown): string {
  if (error instanceof DOMException && error.name === "TimeoutError") return "timed out";
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message;
  }
  return String(error);
}

/**
 * Excerpts must never echo a secret back, in any spelling (a login form comes back
 * form-encoded): secrets are removed before the text is cut, so no prefix of one survives.
 */
function excerpt(text: string, secrets: readonly (string | null)[]): string {
  const window = text.slice(0, EXCERPT_CHARS * 16);
  return redactSecrets(window, secrets).replace(/\s+/g, " ").trim().slice(0, EXCERPT_CHARS);
}

function encodeParams(params: HypervisorParams | undefined): URLSearchParams {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params ?? {})) {
    if (value === undefined || value === null) continue;
    search.set(key, typeof value === "boolean" ? (value ? "1" : "0") : String(value));
  }
  return search;
}

interface Ticket {
  ticket: string;
  csrf: string;
  at: number;
}

export class HypervisorApiClient {
  readonly api: string;
  readonly #options: HypervisorApiOptions;
  readonly #send: typeof fetch;
  readonly #now: () => number;
  #ticket: Promise<Ticket> | null = null;
  #ticketAt = 0;

  constructor(readonly connection: HypervisorConnection, options: HypervisorApiOptions) {
    this.api = `${baseUrl(connection.use_https, connection.ip, connection.port)}/api2/json`;
    this.#options = options;
    this.#send = fetchFor(this.api, connection.verify_ssl, options.fetch);
    this.#now = options.now ?? Date.now;
  }

  /** GET a path (e.g. `/cluster/resources`) and return its `data`. */
  get<T = unknown>(path: string, params?: HypervisorParams, options?: RequestOptions): Promise<T> {
    return this.request<T>("GET", path, params, options);
  }

  /**
   * Any method on any path: GET/DELETE send params in the query, POST/PUT as a form (as
   * Proxmox's own clients do). Returns the answer's `data`.
   */
  async request<T = unknown>(
    method: string,
    path: string,
    params?: HypervisorParams,
    options: RequestOptions = {},
  ): Promise<T> {
    const verb = method.toUpperCase();
    const first = await this.#call(verb, path, params, options, false);
    if (first.retry) return (await this.#call(verb, path, params, options, true)).data as T;
    return first.data as T;
  }

  async #call(
    method: string,
    path: string,
    params: HypervisorParams | undefined,
    options: RequestOptions,
    freshTicket: boolean,
  ): Promise<{ data: unknown; retry: boolean }> {
    const cleanPath = path.startsWith("/") ? path : `/${path}`;
    const encoded = encodeParams(params);
    const inQuery = method === "GET" || method === "DELETE";
    const query = inQuery && encoded.size ? `?${encoded}` : "";
    const url = `${this.api}${cleanPath}${query}`;
    const shownUrl = `${this.api}${cleanPath}`;
    const secrets = await this.#options.secrets();
    const headers: Record<string, string> = { accept: "application/json" };
    let usedTicket = false;
    if (this.connection.token_name && secrets.token_value) {
      headers.authorization = `PVEAPIToken=${
        tokenId(this.connection.username, this.connection.token_name)
      }=${secrets.token_value}`;
    } else if (secrets.password) {
      const ticket = await this.#login(secrets, options.signal, freshTicket);
      headers.cookie = `PVEAuthCookie=${ticket.ticket}`;
      if (!inQuery) headers.csrfpreventiontoken = ticket.csrf;
      usedTicket = true;
    } else {
      const failure = new HypervisorApiError(
        method,
        shownUrl,
        null,
        "",
        "The endpoint has neither a password nor an API token: save one on the endpoint.",
      );
      failure.unusable = true;
      throw failure;
    }
    if (!inQuery && encoded.size) headers["content-type"] = "application/x-www-form-urlencoded";
    const signals = [AbortSignal.timeout(this.connection.timeout * 1000)];
    if (options.signal) signals.push(options.signal);
    let response: Response;
    try {
      response = await this.#send(url, {
        method,
        headers,
        body: !inQuery && encoded.size ? encoded.toString() : undefined,
        signal: AbortSignal.any(signals),
        redirect: "manual",
      });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason ?? error;
      const cause = causeOf(error);
      const failure = new HypervisorApiError(
        method,
        shownUrl,
        null,
        cause === "timed out"
          ? `timed out after ${this.connection.timeout} s`
          : excerpt(cause, [secrets.password, secrets.token_value]),
        hintFor(null, cause, this.#where()),
      );
      failure.unusable = true;
      throw failure;
    }
    const text = await response.text().catch(() => "");
    if (response.status === 401 && usedTicket && !freshTicket) {
      // The ticket may have expired early (hypervisor restart, key rotation): log in again once.
      this.#ticket = null;
      return { data: null, retry: true };
    }
    if (!response.ok) {
      const where = response.headers.get("location");
      const failure = new HypervisorApiError(
        method,
        shownUrl,
        response.status,
        excerpt(where ? `redirect to ${where}` : text, [secrets.password, secrets.token_value]),
        hintFor(response.status),
      );
      // Credentials refused (after a fresh ticket) or a redirect: no later call can do better.
      failure.unusable = response.status === 401 ||
        (response.status >= 300 && response.status < 400);
      throw failure;
    }
    let body: { data?: unknown } | null = null;
    try {
      body = JSON.parse(text);
    } catch {
      throw new HypervisorApiError(
        method,
        shownUrl,
        response.status,
        excerpt(text, [secrets.password, secrets.token_value]),
        "The answer is not JSON: is this really a Proxmox VE API (port, use_https)?",
      );
    }
    return { data: body?.data ?? null, retry: false };
  }

  #where(): string {
    const host = this.connection.ip.includes(":") ? `[${this.connection.ip}]` : this.connection.ip;
    return `${host}:${this.connection.port}`;
  }

  #login(secrets: HypervisorSecrets, signal: AbortSignal | undefined, fresh: boolean) {
    const now = this.#now();
    if (!fresh && this.#ticket && now - this.#ticketAt < TICKET_RENEW_AFTER_MS) {
      return this.#ticket;
    }
    this.#ticketAt = now;
    const pending = this.#fetchTicket(secrets, signal);
    this.#ticket = pending;
    // A failed login must not be cached: the next call tries again.
    pending.catch(() => {
      if (this.#ticket === pending) this.#ticket = null;
    });
    return pending;
  }

  async #fetchTicket(secrets: HypervisorSecrets, signal: AbortSignal | undefined): Promise<Ticket> {
    const url = `${this.api}/access/ticket`;
    const signals = [AbortSignal.timeout(this.connection.timeout * 1000)];
    if (signal) signals.push(signal);
    let response: Response;
    try {
      response = await this.#send(url, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          accept: "application/json",
        },
        body: new URLSearchParams({
          username: this.connection.username || "root@pam",
          password: secrets.password ?? "",
        }).toString(),
        signal: AbortSignal.any(signals),
        redirect: "manual",
      });
    } catch (error) {
      if (signal?.aborted) throw signal.reason ?? error;
      const cause = causeOf(error);
      const failure = new HypervisorApiError(
        "login (POST)",
        url,
        null,
        excerpt(cause, [secrets.password]),
        hintFor(null, cause, this.#where()),
      );
      failure.unusable = true;
      throw failure;
    }
    const text = await response.text().catch(() => "");
    let data: { ticket?: string; CSRFPreventionToken?: string } | undefined;
    try {
      data = JSON.parse(text)?.data ?? undefined;
    } catch { /* reported below */ }
    if (!response.ok || !data?.ticket) {
      const failure = new HypervisorApiError(
        "login (POST)",
        url,
        response.status,
        excerpt(text, [secrets.password]),
        response.ok || response.status === 401
          ? "The hypervisor rejected the username/password."
          : hintFor(response.status),
      );
      // A login that failed fails the same way for every later call of this run.
      failure.unusable = true;
      throw failure;
    }
    return { ticket: data.ticket, csrf: data.CSRFPreventionToken ?? "", at: this.#now() };
  }
}
