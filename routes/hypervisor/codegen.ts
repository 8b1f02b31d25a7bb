/**
 * Code generation and versions of the hypervisor surface:
 *
 * - `GET /pve/codegen/openapi` — OpenAPI 3.1 of a schema version (`?version=`, `?mount=api2`);
 * - `GET /pve/codegen/models` — TypeScript types of every operation (`?version=`);
 * - `POST /pve/codegen/generate` `{source, version?}` — load a schema from an allowed file or
 *   public http(s) URL into a new stored version (Deno KV, compressed and chunked);
 * - `GET /pve/versions` — built-in and stored versions, the active one marked.
 *
 * Per client address (routes/_lib/client_ip.ts): generate 1/hour, models 5/hour, openapi
 * 5/hour, counted in KV so the limits hold across restarts and isolates; over the limit → 429
 * `{"detail"}` with `Retry-After`. Generate counts requests that pass input validation and the
 * source allow-list (a rejected source costs nothing).
 */
import { type Context, Hono } from "hono";
import type { AppDeps, ServeEnv } from "../_lib/deps.ts";
import { clientIp } from "../_lib/client_ip.ts";
import { OpenApiCache } from "../../domain/hypervisor_schema/openapi.ts";
import { TypeScriptCache } from "../../domain/hypervisor_schema/typescript.ts";
import {
  indexSchema,
  loadSchema,
  SchemaLoadError,
  type SchemaTree,
} from "../../domain/hypervisor_schema/schema.ts";
import {
  MAX_STORED_VERSIONS,
  type RateDecision,
  type RateLimiter,
  type SchemaVersionStore,
} from "../../storage/ports.ts";
import {
  blockedAddressReason,
  checkSchemaSource,
  defaultResolve,
} from "../../domain/schema_sources.ts";
import { createOutboundFetch, systemResolve } from "../../clients/outbound.ts";
import { type ActiveSchema, defaultSchemaDirs, SchemaCatalog, VERSION_LABEL } from "./versions.ts";
import { hypervisorDocsRoutes, openApiResponse } from "./docs.ts";
import { BodyTooLarge, readLimitedText } from "./body.ts";

type Env = { Bindings: ServeEnv };
type Ctx = Context<Env>;

export const HOUR_MS = 3600 * 1000;

export interface RouteLimit {
  limit: number;
  windowMs: number;
}

export const CODEGEN_LIMITS: Readonly<Record<"generate" | "models" | "openapi", RouteLimit>> = {
  generate: { limit: 1, windowMs: HOUR_MS },
  models: { limit: 5, windowMs: HOUR_MS },
  openapi: { limit: 5, windowMs: HOUR_MS },
};

/** Largest schema text generate accepts (the real ones are ~4 MB). */
export const MAX_SCHEMA_BYTES = 32 * 1024 * 1024;
export const FETCH_TIMEOUT_MS = 30_000;

export interface CodegenOptions {
  /** The schema the server runs on. */
  active: () => ActiveSchema;
  /** Directories generate may read files from; default `defaultSchemaDirs(config)`. */
  schemaDirs?: readonly string[];
  /** DNS resolution for the URL allow-list (tests inject one). */
  resolve?: (host: string) => Promise<string[]>;
  store?: SchemaVersionStore;
  limiter?: RateLimiter;
  limits?: Partial<typeof CODEGEN_LIMITS>;
  openApiCache?: OpenApiCache;
  typeScriptCache?: TypeScriptCache;
  catalog?: SchemaCatalog;
  /**
   * Whether a request carries a hypervisor login (ticket or API token) the surface accepts.
   * Without one, `/pve/versions` answers 401 and `/pve/openapi.json` names no version
   * (SECURITY.md "Who may read what"). Absent: nobody counts as logged in.
   */
  loggedIn?: (request: Request) => boolean | Promise<boolean>;
}

export const VERSIONS_NEED_LOGIN =
  "Log in to list schema versions: a PVEAuthCookie ticket or a PVEAPIToken, as for /api2/json.";

function fieldErrors(c: Ctx, detail: string, errors: { field: string; message: string }[]) {
  return c.json({ detail, errors }, 400);
}

function rateHeaders(d: RateDecision): Record<string, string> {
  return {
    "RateLimit-Limit": String(d.limit),
    "RateLimit-Remaining": String(d.remaining),
    "RateLimit-Reset": String(d.retryAfter),
  };
}

/** Fetch for schema URLs: no redirects (each hop would need the allow-list), a timeout, a cap. */
function guardedFetch(base: typeof fetch): typeof fetch {
  return async (input, init) => {
    const res = await base(input, {
      ...init,
      redirect: "manual",
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel();
      throw new Error(`redirect (HTTP ${res.status}) refused; give the final URL`);
    }
    const declared = Number(res.headers.get("content-length") ?? "0");
    if (declared > MAX_SCHEMA_BYTES) {
      await res.body?.cancel();
      throw new Error(`schema larger than ${MAX_SCHEMA_BYTES} bytes`);
    }
    if (!res.body) return res;
    let seen = 0;
    const capped = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.length;
          if (seen > MAX_SCHEMA_BYTES) {
            controller.error(new Error(`schema larger than ${MAX_SCHEMA_BYTES} bytes`));
          } else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(capped, { status: res.status, headers: res.headers });
  };
}

export function createSchemaCatalog(deps: AppDeps, options: CodegenOptions): SchemaCatalog {
  return options.catalog ?? new SchemaCatalog(
    options.active,
    options.store ?? deps.storage.schemaVersions,
    options.schemaDirs ?? defaultSchemaDirs(deps.config),
  );
}

/** The codegen and versions routes (absolute paths under /pve). */
export function hypervisorCodegenRoutes(deps: AppDeps, options: CodegenOptions): Hono<Env> {
  const app = new Hono<Env>();
  const catalog = createSchemaCatalog(deps, options);
  const store = catalog.store;
  const limiter = options.limiter ?? deps.storage.rateLimits;
  const limits = { ...CODEGEN_LIMITS, ...options.limits };
  const openApiCache = options.openApiCache ?? new OpenApiCache();
  const tsCache = options.typeScriptCache ?? new TypeScriptCache();
  const schemaDirs = catalog.schemaDirs;
  const trustedOrigins = [deps.config.hypervisor.schema, deps.config.hypervisor.url]
    .filter((u): u is string => !!u && /^https?:\/\//i.test(u))
    .map((u) => new URL(u).origin);
  // Schema URLs resolve once per fetch and connect to the address that passed the check (no
  // second lookup an attacker's DNS could answer differently); private targets are refused too.
  const allowPrivate = deps.config.allowLoopbackTargets;
  const schemaFetch = createOutboundFetch({
    allowLoopbackTargets: allowPrivate,
    refuse: allowPrivate ? undefined : blockedAddressReason,
    resolve: options.resolve ?? systemResolve,
    trustedOrigins,
  });

  /** Counts the request: a 429 Response when over the limit, else the headers to add. */
  async function limited(
    c: Ctx,
    route: keyof typeof CODEGEN_LIMITS,
    label: string,
  ): Promise<{ over: Response | null; headers: Record<string, string> }> {
    const { limit, windowMs } = limits[route];
    const ip = clientIp(c, deps.config.trustedProxies);
    const decision = await limiter.hit(route, ip, limit, windowMs);
    const headers = rateHeaders(decision);
    if (decision.allowed) return { over: null, headers };
    const per = windowMs === HOUR_MS ? "hour" : `${windowMs / 1000} s`;
    const over = c.json(
      {
        detail: `Rate limit exceeded for ${label}: ${limit} per ${per} per client. ` +
          `Retry in ${decision.retryAfter} s.`,
      },
      429,
      { ...headers, "Retry-After": String(decision.retryAfter) },
    );
    return { over, headers };
  }

  app.get("/pve/codegen/openapi", async (c) => {
    const { over, headers } = await limited(c, "openapi", "GET /pve/codegen/openapi");
    if (over) return over;
    const res = await openApiResponse(
      catalog,
      openApiCache,
      c.req.query("version"),
      c.req.query("mount"),
    );
    for (const [k, v] of Object.entries(headers)) res.headers.set(k, v);
    return res;
  });

  app.get("/pve/codegen/models", async (c) => {
    const { over, headers } = await limited(c, "models", "GET /pve/codegen/models");
    if (over) return over;
    const version = c.req.query("version");
    let resolved;
    try {
      resolved = await catalog.resolve(version);
    } catch {
      return c.json({ detail: `Schema version ${version} cannot be loaded.` }, 500);
    }
    if (!resolved) return c.json({ detail: `Unknown schema version ${version}.` }, 404);
    const text = tsCache.get(resolved.tree, { version: resolved.version });
    const wantsTs = (c.req.header("accept") ?? "").includes("application/typescript");
    return c.body(text, 200, {
      ...headers,
      "content-type": wantsTs
        ? "application/typescript; charset=utf-8"
        : "text/plain; charset=utf-8",
      "content-disposition": `inline; filename="pve-${resolved.version}.ts"`,
    });
  });

  app.get("/pve/versions", async (c) => {
    if (!(await options.loggedIn?.(c.req.raw))) {
      return c.json({ detail: VERSIONS_NEED_LOGIN, errors: [] }, 401);
    }
    return c.json(await catalog.list());
  });

  app.post("/pve/codegen/generate", async (c) => {
    let body: unknown;
    try {
      body = JSON.parse(await readLimitedText(c.req.raw, 64 * 1024));
    } catch (err) {
      if (err instanceof BodyTooLarge) return c.json({ detail: err.message, errors: [] }, 413);
      return fieldErrors(c, "Request body must be a JSON object.", [
        { field: "body", message: "invalid JSON" },
      ]);
    }
    if (!body || typeof body !== "object" || Array.isArray(body)) {
      return fieldErrors(c, "Request body must be a JSON object.", [
        { field: "body", message: "expected an object" },
      ]);
    }
    const errors: { field: string; message: string }[] = [];
    const { source, version, ...rest } = body as Record<string, unknown>;
    for (const field of Object.keys(rest)) errors.push({ field, message: "unknown field" });
    if (typeof source !== "string" || !source.trim()) {
      errors.push({ field: "source", message: "a file path or http(s) URL is required" });
    }
    if (version !== undefined && (typeof version !== "string" || !VERSION_LABEL.test(version))) {
      errors.push({
        field: "version",
        message:
          "1-64 characters: letters, digits, '.', '_' or '-', starting with a letter or digit",
      });
    }
    if (errors.length) return fieldErrors(c, "Invalid request.", errors);
    const label = version as string | undefined;
    if (label !== undefined && await catalog.isTaken(label)) {
      return c.json({ detail: `Schema version ${label} already exists.` }, 409);
    }
    const check = await checkSchemaSource(source as string, {
      allowedDirs: schemaDirs,
      allowPrivate: deps.config.allowLoopbackTargets,
      trustedOrigins,
      resolve: options.resolve ?? defaultResolve,
    });
    if (!check.ok) {
      return fieldErrors(c, `Source not allowed: ${check.message}`, [
        { field: "source", message: check.message },
      ]);
    }
    const { over } = await limited(c, "generate", "POST /pve/codegen/generate");
    if (over) return over;

    let tree: SchemaTree;
    const where = check.kind === "file" ? check.path : check.url.href;
    try {
      if (check.kind === "file") {
        const info = await Deno.stat(check.path);
        if (info.size > MAX_SCHEMA_BYTES) {
          return c.json({ detail: `Schema file larger than ${MAX_SCHEMA_BYTES} bytes.` }, 422);
        }
        tree = await loadSchema(check.path);
      } else {
        tree = await loadSchema(check.url.href, guardedFetch(schemaFetch));
      }
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const unreachable = !(err instanceof SchemaLoadError) ||
        /fetch failed|HTTP \d{3}|redirect/.test(message);
      deps.logger.log("warning", "schema generate: cannot load source", { source: where, message });
      return c.json(
        { detail: unreachable ? `Cannot fetch ${where}: ${message}` : message },
        unreachable ? 502 : 422,
      );
    }
    const index = indexSchema(tree);
    if (index.operations.length === 0) {
      return c.json({ detail: `${where} holds no API operations.` }, 422);
    }
    const text = JSON.stringify(tree);
    const digest = new Uint8Array(
      await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
    ).toHex();
    const finalLabel = label ?? `gen-${digest.slice(0, 12)}`;
    if (label === undefined && await catalog.isTaken(finalLabel)) {
      return c.json({ detail: `This schema is already stored as version ${finalLabel}.` }, 409);
    }
    const saved = await store.save({
      version: finalLabel,
      source: where,
      operations: index.operations.length,
      paths: index.pathCount,
      created_at: new Date(deps.now()).toISOString(),
    }, text);
    if (!saved.ok) {
      return c.json({
        detail: saved.reason === "conflict"
          ? `Schema version ${finalLabel} already exists.`
          : `At most ${MAX_STORED_VERSIONS} generated versions can be stored.`,
      }, 409);
    }
    deps.logger.log("info", "schema version stored", {
      version: finalLabel,
      source: where,
      operations: index.operations.length,
    });
    const q = `version=${encodeURIComponent(finalLabel)}`;
    const { blob: _blob, ...record } = saved.record;
    return c.json({
      ...record,
      kind: "generated",
      openapi: `/pve/codegen/openapi?${q}`,
      models: `/pve/codegen/models?${q}`,
      docs: `/pve/openapi.json?${q}`,
    }, 201);
  });

  return app;
}

/**
 * Docs, code generation and versions together, sharing one catalogue and caches: mount this
 * on the hypervisor app before its catch-all.
 */
export function hypervisorToolingRoutes(deps: AppDeps, options: CodegenOptions): Hono<Env> {
  const catalog = createSchemaCatalog(deps, options);
  const openApiCache = options.openApiCache ?? new OpenApiCache();
  const app = new Hono<Env>();
  app.route("/", hypervisorDocsRoutes(catalog, openApiCache, options.loggedIn));
  app.route("/", hypervisorCodegenRoutes(deps, { ...options, catalog, openApiCache }));
  return app;
}
