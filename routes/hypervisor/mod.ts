/**
 * The hypervisor API server (docs/api-behaviour.md, Hypervisor): one engine, two mounts.
 *
 * - `/pve/...` answers bare payloads; `/api2/json/...` answers the Proxmox VE wire format
 *   (routes/hypervisor/wire.ts maps both, including errors).
 * - Schema: `options.schema`, else HYPERVISOR_SCHEMA (file or URL, JSON or `const apiSchema`),
 *   else the built-in catalogue (domain/hypervisor_schema/catalogue.ts). Every operation of the
 *   loaded schema is routed by one trie (domain/hypervisor_schema/router.ts); anything else is
 *   501 as Proxmox answers.
 * - Mock mode (default): mock/engine.ts with a deterministic seed (HYPERVISOR_MOCK_SEED) in
 *   memory; `POST /pve/mock/reset` (authenticated) restores it. Login with
 *   HYPERVISOR_MOCK_USER / HYPERVISOR_MOCK_PASSWORD (default `root@pam` / `bridgebox`) via
 *   `POST /api2/json/access/ticket`, then cookie `PVEAuthCookie` (+ header `CSRFPreventionToken`
 *   on writes), or create an API token with `POST /access/users/{userid}/token/{tokenid}` and
 *   send `Authorization: PVEAPIToken=user@realm!tokenid=secret`.
 * - Real mode (HYPERVISOR_MODE=real): routes/hypervisor/real.ts.
 * - Docs, OpenAPI, codegen and versions: routes/hypervisor/docs.ts and codegen.ts, mounted
 *   before the engine's catch-all.
 */
import { LoginThrottle } from "./login_throttle.ts";
import { Hono, type MiddlewareHandler } from "hono";
import type { AppDeps, ServeEnv } from "../_lib/deps.ts";
import { HypervisorEngine } from "../../mock/engine.ts";
import { loadSchema, type SchemaTree } from "../../domain/hypervisor_schema/schema.ts";
import { builtinCatalogue } from "../../domain/hypervisor_schema/catalogue.ts";
import { hypervisorToolingRoutes } from "./codegen.ts";
import { hypervisorRealModeApp } from "./real.ts";
import type { ActiveSchema } from "./versions.ts";
import { credentials, handleRequest, type Mount, MOUNT_PREFIX, ReplyCache } from "./wire.ts";
import { authenticate, AuthError } from "../../mock/auth.ts";
import { nameRoute, notePattern } from "../_lib/route_pattern.ts";

type Env = { Bindings: ServeEnv };

export const CATALOGUE_SOURCE = "built-in catalogue";

export interface HypervisorAppOptions {
  /** A schema already loaded (tests, benchmarks); otherwise config.hypervisor.schema or the catalogue. */
  schema?: SchemaTree;
  /** How long mock tasks run before finishing (ms). Default 1000. */
  taskDelayMs?: number;
  /** Finished tasks kept per node; older ones are dropped. Default 10,000. */
  maxTasksPerNode?: number;
  /** Receives the engine (tests, benchmarks, the integrator's tooling). */
  onEngine?: (engine: HypervisorEngine) => void;
}

/** The schema the surface runs on: the injected tree, HYPERVISOR_SCHEMA, else the catalogue. */
export async function resolveActiveSchema(
  deps: AppDeps,
  options: HypervisorAppOptions = {},
): Promise<ActiveSchema> {
  const source = deps.config.hypervisor.schema;
  if (options.schema) {
    return {
      tree: options.schema,
      version: deps.config.hypervisor.version,
      source: source ?? "injected",
    };
  }
  if (source) {
    return {
      tree: await loadSchema(source, deps.fetch),
      version: deps.config.hypervisor.version,
      source,
    };
  }
  return {
    tree: builtinCatalogue(),
    version: deps.config.hypervisor.version,
    source: CATALOGUE_SOURCE,
  };
}

export function createEngine(deps: AppDeps, tree: SchemaTree, options: HypervisorAppOptions = {}) {
  const h = deps.config.hypervisor;
  return new HypervisorEngine({
    schema: tree,
    seed: { size: h.seed, mockUser: h.mockUser, mockPassword: h.mockPassword },
    now: deps.now,
    taskDelayMs: options.taskDelayMs ?? h.taskDelayMs,
    version: h.version,
    maxTasksPerNode: options.maxTasksPerNode,
  });
}

/** The hypervisor API server: /pve (bare payloads) and /api2/json (Proxmox wire format). */
export async function createHypervisorApp(
  deps: AppDeps,
  options: HypervisorAppOptions = {},
): Promise<Hono<Env>> {
  const active = await resolveActiveSchema(deps, options);
  // HYPERVISOR_MODE=real: both mounts proxy to HYPERVISOR_URL (routes/hypervisor/real.ts).
  if (deps.config.hypervisor.mode === "real") {
    const preferUpstreamSchema = !options.schema && !deps.config.hypervisor.schema;
    return await hypervisorRealModeApp(deps, active, {
      preferUpstreamSchema,
      requireClientAuth: !deps.config.hypervisor.proxySharedIdentity,
    });
  }
  const engine = createEngine(deps, active.tree, options);
  options.onEngine?.(engine);
  const app = new Hono<Env>();
  // First: names the answering route by its pattern for the request metrics (app.ts).
  app.use("*", notePattern);
  // A bug in a handler answers a JSON 500 in the mount's format, never a stack trace.
  app.onError((err, c) => {
    deps.logger.log("error", "hypervisor mock: unexpected error", {
      method: c.req.method,
      path: c.req.path,
      error: err instanceof Error ? err.message : String(err),
    });
    return c.req.path.startsWith("/api2/")
      ? c.json({ data: null, message: "internal error\n" }, 500)
      : c.json({ detail: "Internal error in the hypervisor mock.", errors: [] }, 500);
  });

  // Writes outside the schema (reset, storing a new schema version) need a mock login too:
  // a ticket with its CSRF token, or an API token.
  const requireLogin: MiddlewareHandler<Env> = async (c, next) => {
    try {
      authenticate(
        engine.state,
        engine.sessions,
        credentials(c.req.raw),
        true,
        Math.floor(deps.now() / 1000),
      );
    } catch (err) {
      if (err instanceof AuthError) return c.json({ detail: err.message, errors: [] }, 401);
      throw err;
    }
    await next();
  };
  app.post("/pve/codegen/generate", requireLogin);

  // Docs, OpenAPI, code generation and versions (routes/hypervisor/docs.ts, codegen.ts).
  // Schema versions are shown only to a caller with a mock login (SECURITY.md).
  const loggedIn = (request: Request) => {
    try {
      authenticate(
        engine.state,
        engine.sessions,
        credentials(request),
        false,
        Math.floor(deps.now() / 1000),
      );
      return true;
    } catch (err) {
      if (err instanceof AuthError) return false;
      throw err;
    }
  };
  app.route("/", hypervisorToolingRoutes(deps, { active: () => active, loggedIn }));

  app.post("/pve/mock/reset", requireLogin, (c) => {
    engine.reset();
    deps.logger.log("info", "hypervisor mock reset to seed", {});
    return c.json({
      detail: "Mock state restored to the seed.",
      nodes: engine.state.nodes.size,
      guests: engine.state.guests.size,
      storages: engine.state.storages.size,
    });
  });

  const cache = new ReplyCache();
  const logins = new LoginThrottle(deps.now, deps.config.trustedProxies, deps.metrics);
  const serve = (mount: Mount) => (c: Parameters<typeof handleRequest>[2]) => {
    // The schema's path template, never the request's: one series per API path (docs/metrics.md).
    const match = engine.router.match(c.req.path.slice(MOUNT_PREFIX[mount].length));
    if (match) nameRoute(c, `${MOUNT_PREFIX[mount]}${match.route.template}`);
    return handleRequest(engine, mount, c, cache, logins);
  };
  // OPTIONS says which methods a path has (RFC 9110), from the schema; no login needed.
  for (const mount of ["api2", "pve"] as const) {
    app.options(`${MOUNT_PREFIX[mount]}/*`, (c) => {
      const match = engine.router.match(c.req.path.slice(MOUNT_PREFIX[mount].length));
      if (!match) return serve(mount)(c);
      const methods = Object.keys(match.route.operations);
      if (methods.includes("GET")) methods.push("HEAD");
      return c.body(null, 204, { allow: [...methods, "OPTIONS"].join(", ") });
    });
  }

  // Proxmox answers a refused login or a write without its CSRF token with a bare 401 (clients
  // expect exactly that), so the reason is said here, in the server log, instead.
  app.use("/api2/json/*", async (c, next) => {
    await next();
    if (c.res.status !== 401) return;
    deps.logger.log("warning", "hypervisor API: authentication refused (401)", {
      method: c.req.method,
      path: c.req.path,
      reason: c.res.statusText || c.res.headers.get("x-reason") || "not given",
    });
  });
  app.all("/api2/json/*", serve("api2"));
  app.all("/api2/json", serve("api2"));
  app.all("/pve/*", serve("pve"));
  app.all("/pve", serve("pve"));
  app.all(
    "*",
    (c) => c.json({ data: null }, 501, { "x-reason": "Only /api2/json is implemented" }),
  );
  return app;
}
