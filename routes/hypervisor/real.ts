/**
 * Real mode (`HYPERVISOR_MODE=real`): both mounts proxy to the real Proxmox VE API.
 *
 * Per request: route it with the schema's trie (unknown path or method → 501 as Proxmox says),
 * validate every parameter against the schema BEFORE anything is sent (400 in the mount's error
 * format), then forward it (clients/hypervisor_proxy.ts) and map the answer:
 * `/api2/json` gets the upstream envelope and status unchanged; `/pve` gets the bare payload, or
 * `{detail, errors}` with the upstream status (a Proxmox "does not exist" 500 becomes 404, as in
 * mock mode). Transport failures: timeout 504, unreachable 503, TLS verification 502.
 *
 * Credentials: a request carrying its own (`PVEAuthCookie` + `CSRFPreventionToken`, or
 * `Authorization: PVEAPIToken=...`) is forwarded with them, so the real cluster decides; other
 * requests use the configured identity (HYPERVISOR_TOKEN_ID/SECRET or USERNAME/PASSWORD) unless
 * `requireClientAuth` is set, in which case they get 401. `POST /access/ticket` is forwarded
 * anonymously (it is the login).
 */
import { Hono } from "hono";
import type { AppDeps, ServeEnv } from "../_lib/deps.ts";
import type { HttpMethod, SchemaTree } from "../../domain/hypervisor_schema/schema.ts";
import { indexSchema, parseSchemaText } from "../../domain/hypervisor_schema/schema.ts";
import { Router } from "../../domain/hypervisor_schema/router.ts";
import {
  type FieldError,
  type RawParams,
  validateParams,
} from "../../domain/hypervisor_schema/validate.ts";
import type { EngineFailure, EngineSuccess } from "../../domain/hypervisor_schema/exchange.ts";
import { bodyFailure, credentials, formatResult, type Mount, MOUNT_PREFIX } from "./wire.ts";
import { addParam, jsonObjectBody, readLimitedText } from "./body.ts";
import { hypervisorToolingRoutes } from "./codegen.ts";
import type { ActiveSchema } from "./versions.ts";
import {
  type ClientCredentials,
  HypervisorProxyClient,
  type ProxyClientOptions,
  proxyOptionsFromConfig,
  type UpstreamResult,
} from "../../clients/hypervisor_proxy.ts";
import { notePattern } from "../_lib/route_pattern.ts";

type Env = { Bindings: ServeEnv };

export interface RealModeOptions {
  /** Overrides of the client options built from the configuration (tests: timeoutMs, ...). */
  client?: Partial<ProxyClientOptions>;
  /** Refuse requests without their own credentials instead of using the configured identity. */
  requireClientAuth?: boolean;
}

export interface RealModeHandler {
  handle(req: Request, mount: Mount): Promise<Response>;
  readonly client: HypervisorProxyClient;
  close(): void;
}

const METHODS = new Set(["GET", "POST", "PUT", "DELETE"]);
const LOGIN = "/access/ticket";

function queryParams(url: URL): RawParams {
  const out: RawParams = {};
  for (const [k, v] of url.searchParams) addParam(out, k, v);
  return out;
}

async function requestParams(req: Request, url: URL): Promise<RawParams> {
  const out = queryParams(url);
  if (req.method === "GET" || req.method === "HEAD" || req.method === "DELETE" || !req.body) {
    return out;
  }
  const text = await readLimitedText(req);
  if (!text.trim()) return out;
  const type = (req.headers.get("content-type") ?? "").toLowerCase();
  if (type.includes("application/json")) {
    return { ...out, ...jsonObjectBody(text) };
  }
  const body: RawParams = {};
  for (const [k, v] of new URLSearchParams(text)) addParam(body, k, v);
  return { ...out, ...body };
}

function failure(status: number, message: string, errors: FieldError[] = []): EngineFailure {
  return { ok: false, status, wireStatus: status, message, errors };
}

/** Top-level check of an upstream payload against the operation's `returns` type. */
export function shapeMismatch(expected: string | undefined, data: unknown): string | null {
  const actual = data === null
    ? "null"
    : Array.isArray(data)
    ? "array"
    : typeof data === "number"
    ? (Number.isInteger(data) ? "integer" : "number")
    : typeof data;
  if (!expected || expected === "any" || expected === actual) return null;
  if (expected === "number" && actual === "integer") return null;
  if (expected === "boolean" && (data === 0 || data === 1)) return null;
  // Proxmox answers null for many operations whatever their declared type.
  if (actual === "null") return null;
  return `expected ${expected}, got ${actual}`;
}

/** Upstream failure → the mount's error format. */
function upstreamFailure(
  mount: Mount,
  method: string,
  r: Extract<UpstreamResult, { ok: false }>,
): Response {
  const errors = Object.entries(r.errors ?? {}).map(([field, message]) => ({ field, message }));
  let status = r.status;
  // Proxmox answers 500 for a missing resource; /pve answers 404 for it, as the mock does.
  if (mount === "pve" && status === 500 && /does not exist|not found|no such/i.test(r.message)) {
    status = 404;
  }
  const message = r.message.trim();
  return formatResult(mount, method, {
    ok: false,
    status,
    wireStatus: r.status,
    message,
    errors,
  });
}

export async function createRealModeHandler(
  deps: AppDeps,
  schema: SchemaTree,
  options: RealModeOptions = {},
): Promise<RealModeHandler> {
  const base = await proxyOptionsFromConfig(deps.config, {
    fetch: deps.fetch,
    now: deps.now,
    logger: deps.logger,
  });
  const client = new HypervisorProxyClient({ ...base, ...options.client });
  const router = Router.fromIndex(indexSchema(schema));

  async function handle(req: Request, mount: Mount): Promise<Response> {
    const url = new URL(req.url);
    const prefix = MOUNT_PREFIX[mount];
    const rawPath = url.pathname.length > prefix.length ? url.pathname.slice(prefix.length) : "/";
    // HEAD is a GET whose body Hono drops.
    const method = req.method === "HEAD" ? "GET" : req.method.toUpperCase();
    const match = router.match(rawPath);
    const operation = match && METHODS.has(method)
      ? match.route.operations[method as HttpMethod]
      : undefined;
    if (!match || !operation) {
      return formatResult(
        mount,
        method,
        failure(501, `Method '${method} ${rawPath}' not implemented`),
      );
    }
    // Without credentials of its own (when they are required): 401 before any body is read.
    const login = method === "POST" && match.route.template === LOGIN;
    const own: ClientCredentials = credentials(req);
    const hasOwn = !!(own.ticket || own.authorization);
    if (!login && !hasOwn && options.requireClientAuth) {
      await req.body?.cancel().catch(() => {});
      return formatResult(mount, method, failure(401, "No ticket"));
    }
    // A multipart upload is streamed upstream as it is: its fields are checked there, the
    // path and query here.
    const contentType = req.headers.get("content-type") ?? "";
    const raw = (method === "POST" || method === "PUT") && req.body &&
        /^multipart\/form-data/i.test(contentType)
      ? { body: req.body, contentType }
      : undefined;
    let params: RawParams;
    try {
      params = raw ? queryParams(url) : await requestParams(req, url);
    } catch (err) {
      const fail = bodyFailure(err);
      if (!fail) throw err;
      return formatResult(mount, method, fail);
    }
    const checked = validateParams(operation, { ...params, ...match.params });
    if (raw) {
      checked.errors = checked.errors.filter((e) =>
        e.message !== "property is missing and it is not optional"
      );
    }
    if (checked.errors.length) {
      await raw?.body.cancel().catch(() => {});
      return formatResult(
        mount,
        method,
        failure(400, "Parameter verification failed.", checked.errors),
      );
    }
    // Path parameters travel in the path; the rest as query or form. `limit`/`start` the
    // operation does not define are applied here: the real API would refuse them.
    const forward: Record<string, unknown> = {};
    const defined = operation.parameters?.properties ?? {};
    let page: { start: number; limit?: number } | undefined;
    for (const [k, v] of Object.entries(checked.values)) {
      if (k in match.params) continue;
      if ((k === "limit" || k === "start") && !(k in defined)) {
        page ??= { start: 0 };
        if (k === "limit") page.limit = Number(v);
        else page.start = Number(v);
        continue;
      }
      forward[k] = v;
    }
    const result = await client.request(
      method,
      rawPath,
      forward,
      hasOwn ? own : undefined,
      login,
      raw,
    );
    if (!result.ok) return upstreamFailure(mount, method, result);
    const mismatch = shapeMismatch(operation.returns?.type, result.data);
    if (mismatch) {
      // Not fatal (the host may run another version than the schema), but visible.
      deps.logger.log("warning", "real mode: upstream answer does not match the schema", {
        operation: `${method} ${match.route.template}`,
        mismatch,
      });
    }
    if (page && Array.isArray(result.data)) {
      const all = result.data;
      const end = page.limit === undefined ? undefined : page.start + page.limit;
      result.data = all.slice(page.start, end);
      result.body = { ...result.body, data: result.data, total: all.length };
    }
    if (mount === "api2") {
      const headers: Record<string, string> = { "content-type": "application/json;charset=UTF-8" };
      if (page) headers["x-total-count"] = String(result.body.total);
      return new Response(JSON.stringify(result.body), { status: result.status, headers });
    }
    const total = typeof result.body.total === "number" ? result.body.total : undefined;
    const upid = typeof result.data === "string" && result.data.startsWith("UPID:")
      ? result.data
      : undefined;
    const success: EngineSuccess = {
      ok: true,
      status: 200,
      data: result.data,
      total,
      task: upid,
      template: match.route.template,
      operation,
    };
    return formatResult(mount, method, success, checked.values);
  }

  return { handle, client, close: () => client.close() };
}

/** Where a Proxmox VE host serves its own API-viewer schema. */
export const UPSTREAM_SCHEMA_PATH = "/pve-docs/api-viewer/apidata.js";

/**
 * Real mode without HYPERVISOR_SCHEMA: the real host's own schema (so every operation it has is
 * validated and proxied), with the same TLS settings; null when it cannot be read.
 */
export async function loadUpstreamSchema(
  deps: AppDeps,
  client?: Partial<ProxyClientOptions>,
): Promise<{ tree: SchemaTree; source: string } | null> {
  const base = await proxyOptionsFromConfig(deps.config, {
    fetch: deps.fetch,
    now: deps.now,
    logger: deps.logger,
  });
  const proxy = new HypervisorProxyClient({ ...base, auth: { kind: "none" }, ...client });
  try {
    const res = await proxy.fetchText(UPSTREAM_SCHEMA_PATH);
    const source = `${new URL(proxy.base).origin}${UPSTREAM_SCHEMA_PATH}`;
    if (!res || res.status !== 200) return null;
    try {
      return { tree: parseSchemaText(res.text, source), source };
    } catch {
      return null;
    }
  } finally {
    proxy.close();
  }
}

/** `/api2/json/*` and `/pve/*` proxied to the real hypervisor (mount before any catch-all). */
export async function hypervisorRealRoutes(
  deps: AppDeps,
  schema: SchemaTree,
  options: RealModeOptions = {},
): Promise<{ app: Hono<Env>; handler: RealModeHandler }> {
  const handler = await createRealModeHandler(deps, schema, options);
  const app = new Hono<Env>();
  // A bug answers a JSON 500 in the mount's format, never a stack trace or plain text.
  app.onError((err, c) => {
    deps.logger.log("error", "hypervisor proxy: unexpected error", {
      method: c.req.method,
      path: c.req.path,
      error: err instanceof Error ? err.message : String(err),
    });
    return c.req.path.startsWith("/api2/")
      ? c.json({ data: null, message: "internal error\n" }, 500)
      : c.json({ detail: "Internal error in the hypervisor proxy.", errors: [] }, 500);
  });
  app.all("/api2/json/*", (c) => handler.handle(c.req.raw, "api2"));
  app.all("/api2/json", (c) => handler.handle(c.req.raw, "api2"));
  app.all("/pve/*", (c) => handler.handle(c.req.raw, "pve"));
  app.all("/pve", (c) => handler.handle(c.req.raw, "pve"));
  return { app, handler };
}

/**
 * The whole hypervisor surface in real mode: docs/codegen/versions plus both proxied mounts.
 * With `preferUpstreamSchema` (no HYPERVISOR_SCHEMA given) the real host's own schema replaces
 * the built-in catalogue when it can be read, so every operation the host has is proxied.
 */
export async function hypervisorRealModeApp(
  deps: AppDeps,
  active: ActiveSchema,
  options: RealModeOptions & { preferUpstreamSchema?: boolean } = {},
): Promise<Hono<Env>> {
  let schema = active;
  if (options.preferUpstreamSchema) {
    const upstream = await loadUpstreamSchema(deps, { timeoutMs: 10_000, ...options.client });
    if (upstream) schema = { ...active, tree: upstream.tree, source: upstream.source };
    else {
      deps.logger.log("warning", "real mode: upstream schema unavailable, using the catalogue", {
        url: deps.config.hypervisor.url,
      });
    }
  }
  const app = new Hono<Env>();
  // First: names the answering route by its pattern for the request metrics (app.ts).
  app.use("*", notePattern);
  const { app: proxied, handler } = await hypervisorRealRoutes(deps, schema.tree, options);
  // A caller counts as logged in when the real cluster answers its GET /version (with
  // HYPERVISOR_PROXY_SHARED_IDENTITY=true, everyone does, as for the proxied API itself).
  const loggedIn = async (request: Request) => {
    const headers = new Headers();
    for (const name of ["cookie", "authorization"]) {
      const value = request.headers.get(name);
      if (value) headers.set(name, value);
    }
    const probe = new Request(new URL("/api2/json/version", request.url), { headers });
    const res = await handler.handle(probe, "api2");
    await res.body?.cancel();
    return res.status === 200;
  };
  app.route("/", hypervisorToolingRoutes(deps, { active: () => schema, loggedIn }));
  app.route("/", proxied);
  app.all("*", (c) => c.json({ detail: "Not Found" }, 404));
  return app;
}
