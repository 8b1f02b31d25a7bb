/**
 * The two faces of the hypervisor engine, mapped in one place:
 *
 * - `/pve/...` (docs/api-behaviour.md, Hypervisor: errors): bare JSON payloads; errors
 *   `{"detail","errors":[{field,message}]}` with 400/401/404/501; task actions answer
 *   `{"success":true,"task":"<UPID>"}`.
 * - `/api2/json/...` (Proxmox VE wire format): `{"data": ...}` (plus `total` on paged lists),
 *   form-encoded or JSON bodies, booleans as 0/1, errors as Proxmox answers them
 *   (`{"data":null,"errors":{"<field>":"<message>"}}` 400, `{"data":null}` 401, 501 for unknown
 *   routes) with the message as HTTP reason text.
 * - Both: HEAD is GET without a body; writes are routed and authenticated before their body is
 *   read; bodies are bounded (413) and multipart uploads streamed (routes/hypervisor/body.ts).
 */
import { gzipSync } from "node:zlib";
import type { LoginThrottle } from "./login_throttle.ts";
import type { Context } from "hono";
import type {
  Credentials,
  EngineFailure,
  EngineRequest,
  EngineResult,
} from "../../domain/hypervisor_schema/exchange.ts";
import type { RawParams } from "../../domain/hypervisor_schema/validate.ts";
import { addParam, BodyError, BodyTooLarge, readBody, type UploadedFile } from "./body.ts";

export type Mount = "pve" | "api2";

export const MOUNT_PREFIX: Record<Mount, string> = { pve: "/pve", api2: "/api2/json" };

/** Query parameters; a repeated key becomes an array. */
function queryParams(url: string): RawParams {
  const out: RawParams = {};
  const q = url.indexOf("?");
  if (q < 0) return out;
  for (const [k, v] of new URLSearchParams(url.slice(q + 1))) addParam(out, k, v);
  return out;
}

function cookie(header: string | null, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    try {
      return decodeURIComponent(value);
    } catch {
      return value;
    }
  }
  return undefined;
}

export function credentials(req: Request): Credentials {
  return {
    ticket: cookie(req.headers.get("cookie"), "PVEAuthCookie"),
    csrf: req.headers.get("csrfpreventiontoken") ?? undefined,
    authorization: req.headers.get("authorization") ?? undefined,
  };
}

/** Booleans as 0/1, recursively (Proxmox never sends JSON true/false). */
function wireValue(v: unknown): unknown {
  if (v === true) return 1;
  if (v === false) return 0;
  if (Array.isArray(v)) return v.map(wireValue);
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = wireValue(x);
    return out;
  }
  return v;
}

function hasBoolean(v: unknown, depth = 0): boolean {
  if (typeof v === "boolean") return true;
  if (depth > 6 || !v || typeof v !== "object") return false;
  if (Array.isArray(v)) {
    for (const x of v) if (hasBoolean(x, depth + 1)) return true;
    return false;
  }
  for (const x of Object.values(v)) if (hasBoolean(x, depth + 1)) return true;
  return false;
}

/** A reason phrase must be visible ASCII without CR/LF. */
function reason(message: string): string {
  return message.replace(/[^\x20-\x7e]+/g, " ").trim().slice(0, 200) || "error";
}

const JSON_HEADERS = { "content-type": "application/json;charset=UTF-8" };

/** A response before it becomes one (GET bodies are cached in this form). */
export interface Reply {
  status: number;
  statusText?: string;
  body: string;
  headers: Record<string, string>;
}

function json(
  body: unknown,
  status: number,
  statusText?: string,
  extra?: Record<string, string>,
): Reply {
  return {
    status,
    statusText: statusText ? reason(statusText) : undefined,
    body: JSON.stringify(body),
    headers: { ...JSON_HEADERS, ...extra },
  };
}

export function toResponse(r: Reply): Response {
  return new Response(r.body, { status: r.status, statusText: r.statusText, headers: r.headers });
}

const encoder = new TextEncoder();
/** Bodies this large are kept gzip-compressed in the cache (compressed once, served many times). */
const GZIP_MIN_BYTES = 8 * 1024;

interface CachedReply {
  key: string;
  token: string;
  reply: Reply;
  bytes: Uint8Array;
  /**
   * The answer as served, built on first use per encoding. Each request gets a `clone()`: it
   * shares the body, where `new Response(bytes)` copies the bytes on every request (Deno's
   * `extractBody`), 37 KB per request of a 1,000-guest list, and that copy was most of its cost
   * (docs/api-behaviour.md, Hypervisor: cached lists).
   */
  identity?: Response;
  gzip?: Response;
  /** The bytes this entry holds (raw, plus the bodies built): counted toward `maxBytes`. */
  size: number;
}

/**
 * zlib's default level (6): the bytes CompressionStream gives, 12 % fewer than level 3 on a
 * 1,000-guest list (37.6 KB instead of 42.7 KB) for 1.5 ms more per rebuild; a cached list is
 * rebuilt and compressed again at most once a second (uptimes move).
 */
function gzip(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return new Uint8Array(gzipSync(bytes, { level: 6 }));
}

/**
 * Serialised GET answers, valid while the engine's cache token is unchanged (no write, no
 * finished task, same second). Big lists (1,000 guests on a node) are then served without
 * rebuilding and re-serialising them on every request. Bounded.
 */
export class ReplyCache {
  readonly #map = new Map<string, CachedReply>();
  #bytes = 0;
  constructor(private readonly maxEntries = 256, private readonly maxBytes = 64 * 1024 * 1024) {}

  get(key: string, token: string): CachedReply | undefined {
    const hit = this.#map.get(key);
    return hit && hit.token === token ? hit : undefined;
  }

  set(key: string, token: string, reply: Reply): CachedReply {
    const bytes = encoder.encode(reply.body);
    const entry: CachedReply = {
      key,
      token,
      reply: { ...reply, body: "" },
      bytes,
      size: bytes.length,
    };
    this.#drop(key);
    // Too big to keep: serve it once, uncached.
    if (entry.bytes.length > this.maxBytes / 4) return entry;
    while (
      this.#map.size && (this.#map.size >= this.maxEntries ||
        this.#bytes + entry.bytes.length > this.maxBytes)
    ) {
      this.#drop(this.#map.keys().next().value!);
    }
    this.#map.set(key, entry);
    this.#bytes += entry.size;
    return entry;
  }

  /**
   * The entry's answer in the encoding the client takes: a clone of a Response built once per
   * entry and encoding, so no request copies (or compresses) the body again. The built bodies
   * count toward the cache's bytes.
   */
  respond(entry: CachedReply, acceptGzip: boolean): Response {
    const { reply } = entry;
    const init = { status: reply.status, statusText: reply.statusText };
    if (acceptGzip && entry.bytes.length >= GZIP_MIN_BYTES) {
      if (!entry.gzip) {
        const body = gzip(entry.bytes);
        entry.gzip = new Response(body, {
          ...init,
          headers: { ...reply.headers, "content-encoding": "gzip", vary: "Accept-Encoding" },
        });
        this.#grow(entry, body.length);
      }
      return entry.gzip.clone();
    }
    if (!entry.identity) {
      entry.identity = new Response(entry.bytes as Uint8Array<ArrayBuffer>, {
        ...init,
        headers: reply.headers,
      });
      this.#grow(entry, entry.bytes.length);
    }
    return entry.identity.clone();
  }

  /** A body built for a kept entry; the bound is enforced again by the next `set`. */
  #grow(entry: CachedReply, bytes: number): void {
    if (this.#map.get(entry.key) !== entry) return;
    entry.size += bytes;
    this.#bytes += bytes;
  }

  #drop(key: string): void {
    const old = this.#map.get(key);
    if (!old) return;
    this.#map.delete(key);
    this.#bytes -= old.size;
  }
}

/** The Response for an engine result on `mount` (used by real mode too). */
export function formatResult(
  mount: Mount,
  method: string,
  result: EngineResult,
  params: RawParams = {},
): Response {
  return toResponse(formatReply(mount, method, result, params));
}

export function formatReply(
  mount: Mount,
  method: string,
  result: EngineResult,
  params: RawParams = {},
): Reply {
  if (!result.ok) {
    if (mount === "pve") {
      return json({ detail: result.message, errors: result.errors }, result.status, result.message);
    }
    const status = result.wireStatus;
    if (result.errors.length) {
      const errors: Record<string, string> = {};
      for (const e of result.errors) errors[e.field] = e.message;
      return json({ data: null, errors, message: `${result.message}\n` }, status, result.message);
    }
    if (status === 401) return json({ data: null }, status, result.message);
    // Deno's server drops custom reason phrases, so the 501 text is in the body as well.
    if (status === 501) {
      return json({ data: null, message: `${result.message}\n` }, status, result.message);
    }
    return json({ data: null, message: `${result.message}\n` }, status, result.message);
  }
  const headers: Record<string, string> = {};
  if (result.total !== undefined) headers["x-total-count"] = String(result.total);
  if (mount === "api2") {
    const body: Record<string, unknown> = {
      data: hasBoolean(result.data) ? wireValue(result.data) : result.data,
    };
    if (
      result.total !== undefined && Array.isArray(result.data) &&
      (result.data.length !== result.total || result.operation.parameters?.properties?.limit)
    ) {
      body.total = result.total;
    }
    return json(body, 200, undefined, headers);
  }
  let data = result.data;
  if (result.task && typeof data === "string" && method !== "GET") {
    const out: Record<string, unknown> = { success: true, task: result.task };
    // Spec 3: creating a guest answers {success, vmid} (plus the task).
    if (/^\/nodes\/\{node\}\/(qemu|lxc)$/.test(result.template)) out.vmid = Number(params.vmid);
    data = out;
  } else if (data === null && method !== "GET") {
    // Writes without an answer (Proxmox: `{"data":null}`) report plain success here.
    data = { success: true };
  }
  return json(data, 200, undefined, headers);
}

function acceptsGzip(req: Request): boolean {
  return /\bgzip\b/i.test(req.headers.get("accept-encoding") ?? "");
}

/** A body that cannot be read: 413 when too large, 400 when malformed; null for other errors. */
export function bodyFailure(err: unknown): EngineResult | null {
  if (err instanceof BodyTooLarge) {
    return { ok: false, status: 413, wireStatus: 413, message: err.message, errors: [] };
  }
  if (err instanceof BodyError) {
    return {
      ok: false,
      status: 400,
      wireStatus: 400,
      message: "Parameter verification failed.",
      errors: [{ field: "body", message: err.message }],
    };
  }
  return null;
}

/** What `handleRequest` needs of the mock engine (mock/engine.ts implements it). */
export interface ExchangeEngine {
  /** Route and authenticate only (no parameters checked). */
  authorize(req: EngineRequest): EngineFailure | { ok: true };
  handle(req: EngineRequest): EngineResult;
  /** Changes whenever the state changes (cached answers are keyed by it). */
  cacheToken(): string;
}

/** Parse a request on `mount` and run it through the engine. */
export async function handleRequest(
  engine: ExchangeEngine,
  mount: Mount,
  c: Context,
  cache?: ReplyCache,
  logins?: LoginThrottle,
): Promise<Response> {
  const req = c.req.raw;
  // HEAD is GET without a body (Hono drops the body of the answer).
  const method = req.method === "HEAD" ? "GET" : req.method;
  const prefix = MOUNT_PREFIX[mount];
  const pathname = c.req.path;
  const path = pathname.length > prefix.length ? pathname.slice(prefix.length) : "/";
  const creds = credentials(req);
  const login = logins && method === "POST" && path.replace(/\/+$/, "") === "/access/ticket"
    ? logins
    : undefined;
  const wait = login?.secondsLocked(c) ?? 0;
  if (wait > 0) {
    await req.body?.cancel().catch(() => {});
    const message = "Too many failed login attempts";
    return Response.json(
      mount === "api2" ? { data: null, message: `${message}\n` } : { detail: message, errors: [] },
      { status: 429, headers: { "retry-after": String(wait) } },
    );
  }
  let cacheKey: string | undefined;
  if (cache && method === "GET") {
    const pre = engine.authorize({ method: "GET", path, params: {}, credentials: creds });
    if (!pre.ok) return formatResult(mount, "GET", pre);
    const q = req.url.indexOf("?");
    cacheKey = `${mount} ${path}${q < 0 ? "" : req.url.slice(q)}`;
    const hit = cache.get(cacheKey, engine.cacheToken());
    if (hit) return cache.respond(hit, acceptsGzip(req));
  }
  // Route and authenticate before a body is read: an anonymous client cannot make the server
  // read (or buffer) anything, and an unknown route answers 501 at once.
  if (method !== "GET" && req.body) {
    const pre = engine.authorize({ method, path, params: {}, credentials: creds });
    if (!pre.ok) {
      await req.body.cancel().catch(() => {});
      return formatResult(mount, method, pre);
    }
  }
  let params: RawParams;
  let files: Record<string, UploadedFile>;
  try {
    const body = await readBody(req);
    params = { ...queryParams(req.url), ...body.params };
    files = body.files;
  } catch (err) {
    const fail = bodyFailure(err);
    if (!fail) throw err;
    return formatResult(mount, method, fail);
  }
  const request: EngineRequest = { method, path, params, files, credentials: creds };
  const result = engine.handle(request);
  login?.record(c, result.status);
  const reply = formatReply(mount, method, result, params);
  if (cacheKey && result.ok) {
    return cache!.respond(cache!.set(cacheKey, engine.cacheToken(), reply), acceptsGzip(req));
  }
  return toResponse(reply);
}
