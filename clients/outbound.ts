/**
 * The one outbound transport every client uses (SECURITY.md "Outbound requests"). main.ts
 * builds it once and hands it out as `deps.fetch`; `fetchFor` (clients/hypervisor_probe.ts)
 * derives the certificate-skipping variant from it. Rules, in order:
 *
 * 1. http and https only, no credentials in the URL.
 * 2. A local host (any spelling of loopback or the unspecified address, or `localhost`) on the
 *    app's own port is the app itself: the request is answered in-process by the app's own
 *    fetch (no socket; marked `internal`: it never locks the app out, and app.ts attaches the
 *    originating client so failed mock logins still count against it).
 * 3. Origins the operator configured (HYPERVISOR_URL, a HYPERVISOR_SCHEMA URL) are trusted and
 *    go to the plain platform fetch.
 * 4. Everything else: the name is resolved once, every address is checked
 *    (domain/outbound_policy.ts; refused unless SERVICE_ALLOW_LOOPBACK_TARGETS), and the
 *    connection goes to the checked address (node:http/https with a pinned `lookup`, so TLS
 *    still verifies the host name).
 * 5. Redirects are never followed: a 3xx becomes an error naming the location.
 */
import http from "node:http";
import https from "node:https";
import dns from "node:dns";
import net from "node:net";
import tls from "node:tls";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import {
  endpointAddressReason,
  endpointNameReason,
  isIpAddress,
  isLocalHost,
} from "../domain/outbound_policy.ts";

/** The app itself, bound after it listens (main.ts). */
export interface SelfRoute {
  port: number;
  fetch: (request: Request) => Response | Promise<Response>;
}

export interface OutboundOptions {
  allowLoopbackTargets: boolean;
  /** Name → addresses; default the system resolver (hosts file included). */
  resolve?: (host: string) => Promise<string[]>;
  /** A stricter rule on top of the endpoint rule (codegen refuses private addresses too). */
  refuse?: (address: string) => string | null;
  /** `scheme://host:port` origins that skip the address rule (operator configuration). */
  trustedOrigins?: readonly string[];
  /** Fetch for trusted origins; default the platform fetch. */
  trustedFetch?: typeof fetch;
  /** The running app, for calls to its own port; read on every request (late binding). */
  self?: () => SelfRoute | undefined;
  /** Reuse connections (default true); a one-off transport passes false. */
  keepAlive?: boolean;
}

/** Extra request options the transport understands. */
export interface OutboundInit extends RequestInit {
  /** false: accept any certificate (an endpoint saved with verify_ssl false). */
  verifyTls?: boolean;
}

export class OutboundRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OutboundRefused";
  }
}

const GUARDED = Symbol("bridgebox.outbound");
const SOCKET = Symbol("bridgebox.outbound.socket");

/**
 * A WebSocket connection checked by the transport's rules, for a WebSocket library that makes
 * the handshake itself (clients/backend_socket.ts uses `ws`): `createConnection` opens TCP (TLS
 * for wss, certificate checked unless verifyTls is false, SNI the URL's host name) to the
 * checked address and nowhere else, whatever host or options the library passes it.
 */
export interface PinnedSocket {
  /** The target as `ws://` or `wss://` (its host name stays the Host header). */
  url: URL;
  /** The address the check accepted. */
  address: string;
  createConnection: (libraryOptions?: unknown) => Duplex;
}

export type OutboundSocket = (url: URL, init: { verifyTls: boolean }) => Promise<PinnedSocket>;

export type OutboundFetch = typeof fetch & {
  readonly [GUARDED]: true;
  readonly [SOCKET]: OutboundSocket;
};

/** The pinned WebSocket connection of a guarded transport, or null for any other fetch. */
export function outboundSocket(fn: unknown): OutboundSocket | null {
  return isOutboundFetch(fn) ? fn[SOCKET] : null;
}

export function isOutboundFetch(fn: unknown): fn is OutboundFetch {
  return typeof fn === "function" && (fn as Partial<OutboundFetch>)[GUARDED] === true;
}

export async function systemResolve(host: string): Promise<string[]> {
  const found = await dns.promises.lookup(host, { all: true });
  return found.map((a) => a.address);
}

const LOOPBACK_HINT = "set SERVICE_ALLOW_LOOPBACK_TARGETS=true to allow local targets";

function defaultPort(url: URL): number {
  return Number(url.port || (url.protocol === "https:" ? 443 : 80));
}

function redirectError(status: number, location: string | null, url: URL): OutboundRefused {
  const where = location ? new URL(location, url).href : "(no Location header)";
  return new OutboundRefused(
    `redirect (HTTP ${status}) to ${where} not followed; use the final URL`,
  );
}

async function refuseRedirect(response: Response, url: URL): Promise<Response> {
  if (response.status < 300 || response.status > 399) return response;
  await response.body?.cancel();
  throw redirectError(response.status, response.headers.get("location"), url);
}

/** The request as fetch would send it (headers normalised, a default content type). */
function normalise(input: RequestInfo | URL, init: OutboundInit): Request {
  const withDuplex = init.body instanceof ReadableStream ? { ...init, duplex: "half" } : init;
  return new Request(input, withDuplex as RequestInit);
}

const NULL_BODY = new Set([101, 204, 205, 304]);

function toResponse(res: IncomingMessage, method: string, signal?: AbortSignal | null): Response {
  const headers = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
    try {
      headers.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
    } catch {
      // A header the Fetch API cannot hold is dropped, as fetch would.
    }
  }
  const status = res.statusCode ?? 502;
  if (NULL_BODY.has(status) || method === "HEAD") {
    res.resume();
    return new Response(null, { status, statusText: res.statusMessage, headers });
  }
  let done = false;
  // The abort listener goes when the answer ends: a listener on an AbortSignal.timeout() signal
  // keeps its timer, and so the process, alive until it fires (a stopped app lingered 30 s).
  const listening = new AbortController();
  const settle = () => {
    done = true;
    listening.abort();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const fail = (error: unknown) => {
        if (done) return;
        settle();
        controller.error(error);
      };
      res.on("data", (chunk: Uint8Array) => {
        if (done) return;
        controller.enqueue(new Uint8Array(chunk));
        if ((controller.desiredSize ?? 1) <= 0) res.pause();
      });
      res.on("end", () => {
        if (done) return;
        settle();
        controller.close();
      });
      res.on("error", fail);
      res.on("close", () => fail(new Error("connection closed before the answer ended")));
      signal?.addEventListener("abort", () => {
        fail(signal.reason);
        res.destroy();
      }, { once: true, signal: listening.signal });
    },
    pull() {
      res.resume();
    },
    cancel() {
      settle();
      res.destroy();
    },
  });
  return new Response(body, { status, statusText: res.statusMessage, headers });
}

/**
 * Keep-alive pools, one pair per transport: a connection is reused only for the same host,
 * port and TLS options, and it was opened to an address this transport checked.
 */
interface Agents {
  http: http.Agent;
  https: https.Agent;
}

/** What one node:http(s) exchange sends; see `nodeExchange`. */
export interface NodeExchange {
  method: string;
  headers: Record<string, string>;
  /** Sent with its length, or streamed (chunked) when a stream. */
  body?: Uint8Array | string | ReadableStream<Uint8Array>;
  /** false: accept any certificate (an explicit opt-out). */
  verifyTls: boolean;
  /** Connect only to this address (the one a check accepted); default: resolve the host. */
  address?: string;
  agent?: http.Agent;
  signal?: AbortSignal | null;
}

/**
 * One exchange over node:http(s): the only way Deno can skip certificate verification or pin
 * the connected address. The answer streams; redirects are the caller's to judge. The guarded
 * transport below and the real-mode hypervisor proxy (clients/hypervisor_proxy.ts) share it.
 */
export function nodeExchange(url: URL, exchange: NodeExchange): Promise<Response> {
  const signal = exchange.signal ?? null;
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const headers: Record<string, string> = { ...exchange.headers };
  const body = typeof exchange.body === "string"
    ? new TextEncoder().encode(exchange.body)
    : exchange.body;
  if (body instanceof Uint8Array) headers["content-length"] = String(body.length);
  const secure = url.protocol === "https:";
  return new Promise<Response>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const options: https.RequestOptions = {
      method: exchange.method,
      hostname,
      port: defaultPort(url),
      path: `${url.pathname}${url.search}`,
      headers,
      agent: exchange.agent,
    };
    const address = exchange.address;
    if (address) {
      const family = address.includes(":") ? 6 : 4;
      options.lookup = ((
        _host: string,
        opts: { all?: boolean },
        callback: (...args: unknown[]) => void,
      ) => {
        if (opts?.all) callback(null, [{ address, family }]);
        else callback(null, address, family);
      }) as unknown as https.RequestOptions["lookup"];
    }
    if (secure) {
      options.rejectUnauthorized = exchange.verifyTls;
      if (!isIpAddress(hostname)) options.servername = hostname;
    }
    const onAbort = () => {
      req.destroy();
      reject(signal?.reason ?? new DOMException("aborted", "AbortError"));
    };
    const req = (secure ? https : http).request(options, (res) => {
      signal?.removeEventListener("abort", onAbort);
      resolve(toResponse(res, exchange.method, signal));
    });
    signal?.addEventListener("abort", onAbort, { once: true });
    req.on("error", (error: Error) => {
      signal?.removeEventListener("abort", onAbort);
      reject(error);
    });
    if (body instanceof ReadableStream) {
      (async () => {
        for await (const chunk of body) {
          if (!req.write(chunk)) await new Promise((r) => req.once("drain", r));
        }
        req.end();
      })().catch((error) => req.destroy(error as Error));
      return;
    }
    req.end(body);
  });
}

/** One exchange connecting only to `address`; a 3xx is refused, never followed. */
async function pinnedExchange(
  agents: Agents,
  url: URL,
  address: string,
  request: Request,
  body: Uint8Array | undefined,
  init: OutboundInit,
): Promise<Response> {
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => headers[name] = value);
  const response = await nodeExchange(url, {
    method: request.method,
    headers,
    body,
    verifyTls: init.verifyTls !== false,
    address,
    agent: url.protocol === "https:" ? agents.https : agents.http,
    signal: init.signal ?? null,
  });
  if (response.status >= 300 && response.status <= 399) {
    await response.body?.cancel();
    throw redirectError(response.status, response.headers.get("location"), url);
  }
  return response;
}

/** The guarded transport. See the module note for the rules. */
export function createOutboundFetch(options: OutboundOptions): OutboundFetch {
  const resolve = options.resolve ?? systemResolve;
  const trusted = new Set(options.trustedOrigins ?? []);
  const trustedFetch = options.trustedFetch ?? globalThis.fetch;
  const keepAlive = options.keepAlive !== false;
  const agents: Agents = {
    http: new http.Agent({ keepAlive, maxSockets: 16 }),
    https: new https.Agent({ keepAlive, maxSockets: 16 }),
  };

  async function addressFor(url: URL): Promise<string> {
    const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase().replace(/\.$/, "");
    if (!options.allowLoopbackTargets) {
      const nameReason = endpointNameReason(host);
      if (nameReason) {
        throw new OutboundRefused(
          `outbound request to ${host} refused: ${nameReason}; ${LOOPBACK_HINT}`,
        );
      }
    }
    const addresses = isIpAddress(host) ? [host] : await resolve(host);
    if (!addresses.length) throw new OutboundRefused(`cannot resolve host ${host}`);
    for (const address of addresses) {
      const reason = (options.allowLoopbackTargets ? null : endpointAddressReason(address)) ??
        options.refuse?.(address) ?? null;
      if (reason) {
        const shown = address === host ? host : `${host} (${address})`;
        throw new OutboundRefused(
          `outbound request to ${shown} refused: ${reason}; ${LOOPBACK_HINT}`,
        );
      }
    }
    return addresses[0];
  }

  const outbound = async (input: RequestInfo | URL, init: OutboundInit = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new OutboundRefused(`only http and https URLs are allowed, not ${url.protocol}`);
    }
    if (url.username || url.password) {
      throw new OutboundRefused("URLs with credentials are not allowed");
    }
    const self = options.self?.();
    if (self && isLocalHost(url.hostname) && defaultPort(url) === self.port) {
      return refuseRedirect(await self.fetch(normalise(input, init)), url);
    }
    if (trusted.has(url.origin)) {
      return refuseRedirect(await trustedFetch(input, { ...init, redirect: "manual" }), url);
    }
    const address = await addressFor(url);
    const request = normalise(input, init);
    // Our request bodies are small JSON or form texts: read whole, sent with a length.
    const body = request.body ? new Uint8Array(await request.arrayBuffer()) : undefined;
    return pinnedExchange(agents, url, address, request, body, init);
  };
  /** The WebSocket target as http(s) and the address it may connect to. */
  const socketTarget = async (target: URL): Promise<{ url: URL; address: string }> => {
    const scheme = { "ws:": "http:", "wss:": "https:", "http:": "http:", "https:": "https:" }[
      target.protocol
    ];
    if (!scheme) {
      throw new OutboundRefused(`only ws and wss URLs are allowed, not ${target.protocol}`);
    }
    const url = new URL(target.href.replace(/^[a-z]+:/i, scheme));
    if (url.username || url.password) {
      throw new OutboundRefused("URLs with credentials are not allowed");
    }
    const self = options.self?.();
    // The app's own port on this machine is the app itself (rule 2); a WebSocket cannot be
    // answered in-process, so it goes over loopback to that port, and nowhere else.
    const isSelf = self !== undefined && isLocalHost(url.hostname) &&
      defaultPort(url) === self.port;
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const address = isSelf ? (isIpAddress(host) ? host : "127.0.0.1") : await addressFor(url);
    return { url, address };
  };
  const socket: OutboundSocket = async (target, init) => {
    const { url, address } = await socketTarget(target);
    const wsUrl = new URL(url.href.replace(/^http/i, "ws"));
    return { url: wsUrl, address, createConnection: pinnedConnector(url, address, init.verifyTls) };
  };
  return Object.assign(outbound as typeof fetch, {
    [GUARDED]: true as const,
    [SOCKET]: socket,
  });
}

/**
 * Connects to `address` only: the library's own options (host, port, lookup, TLS settings) are
 * ignored, so nothing it does can re-resolve the name or loosen the certificate check.
 */
function pinnedConnector(url: URL, address: string, verifyTls: boolean): () => Duplex {
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const port = defaultPort(url);
  if (url.protocol !== "https:") return () => net.connect({ host: address, port });
  return () =>
    tls.connect({
      host: address,
      port,
      rejectUnauthorized: verifyTls,
      ...(isIpAddress(hostname) ? {} : { servername: hostname }),
    });
}

/** Origins the operator configured: the real hypervisor and a schema URL. */
export function configuredOrigins(
  hypervisor: { url: string | undefined; schema: string | undefined },
): string[] {
  const origins: string[] = [];
  for (const value of [hypervisor.url, hypervisor.schema]) {
    if (!value || !/^https?:\/\//i.test(value)) continue;
    try {
      origins.push(new URL(value).origin);
    } catch {
      // Not a URL (a schema file path): nothing to trust.
    }
  }
  return origins;
}

/** The transport main.ts (and tests/_helpers.ts) put into `deps.fetch`. */
export function outboundForConfig(
  config: {
    allowLoopbackTargets: boolean;
    hypervisor: { url: string | undefined; schema: string | undefined };
  },
  self?: () => SelfRoute | undefined,
): OutboundFetch {
  return createOutboundFetch({
    allowLoopbackTargets: config.allowLoopbackTargets,
    trustedOrigins: configuredOrigins(config.hypervisor),
    self,
  });
}
