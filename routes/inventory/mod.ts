import { Hono } from "hono";
import type { AppDeps, ServeEnv } from "../_lib/deps.ts";
import { ModelEngine } from "../../domain/netbox/engine.ts";
import { tokenModel } from "../../domain/netbox/models/core.ts";
import { INVENTORY_MODELS } from "../../domain/netbox/models/mod.ts";
import { AUTH_MESSAGES, TOKEN_MODEL, TokenService } from "../../domain/netbox/tokens.ts";
import { createPlugin, pluginOpenApiPaths, type PluginOptions } from "../plugin/mod.ts";
import { SSH_TERMINAL_PERMISSION } from "../../domain/plugin/ssh.ts";
import { createJobRoutes, type JobOptions } from "../plugin/jobs.ts";
import { docsRoutes } from "../_lib/docs.ts";
import {
  API_VERSION,
  type InventoryContext,
  type InventoryEnv,
  NETBOX_VERSION,
  PLUGIN_VERSION,
} from "./context.ts";
import { ApiError, MAX_BODY_BYTES, methodNotAllowed, notFound } from "./errors.ts";
import { apiRootListing, handleModelRequest } from "./models.ts";
import { publicOrigin } from "../_lib/client_ip.ts";
import { buildOpenApi } from "./openapi.ts";
import { notePattern } from "../_lib/route_pattern.ts";

export type { InventoryContext, InventoryEnv };

/** Builds the engine with every core model registered (plugin models are added by the caller). */
export function createInventoryCore(deps: AppDeps): InventoryContext {
  const store = deps.storage.models;
  const engine = new ModelEngine({
    store,
    logger: deps.logger,
    now: deps.now,
    changelog: deps.config.changelog,
    settings: { enforceGlobalUnique: deps.config.inventoryEnforceGlobalUnique },
  });
  const tokens = new TokenService({
    store,
    encryptionKey: deps.config.encryptionKey,
    now: deps.now,
    customPermissions: [SSH_TERMINAL_PERMISSION],
  });
  engine.register(...INVENTORY_MODELS, tokenModel(tokens.hooks()));
  return { deps, engine, tokens };
}

/**
 * INVENTORY_BOOTSTRAP_TOKEN: registers one v1 superuser token with that value when no token
 * exists yet. Returns true when it created one.
 */
export async function ensureBootstrapToken(ctx: InventoryContext): Promise<boolean> {
  const value = ctx.deps.config.inventoryBootstrapToken;
  if (!value) return false;
  if ((await ctx.engine.store.count(TOKEN_MODEL)) > 0) return false;
  const result = await ctx.engine.insert(TOKEN_MODEL, {
    version: 1,
    token: value,
    is_superuser: true,
    write_enabled: true,
    description: "bootstrap token (INVENTORY_BOOTSTRAP_TOKEN)",
  });
  if (!result.ok) {
    ctx.deps.logger.log("error", "INVENTORY_BOOTSTRAP_TOKEN could not be registered", {
      errors: "errors" in result ? result.errors : result.detail,
    });
    return false;
  }
  ctx.deps.logger.log("info", "registered the inventory bootstrap token", {
    token_id: result.value.id,
  });
  return true;
}

/** A superuser token just made: `token` is what a client sends (v2: `nbt_<key>.<secret>`). */
export interface NewSuperuserToken {
  id: number;
  version: 1 | 2;
  token: string;
  /** v2: the 12-character key and the secret, as the plugin's endpoint stores them. */
  key?: string;
  secret?: string;
  /** The ready Authorization header: `Bearer nbt_…` (v2) or `Token …` (v1, deprecated). */
  header: string;
}

/**
 * Creates a superuser token (scripts/token_create.ts, the demo): v2 by default, as NetBox 4.5+
 * makes them; v1 (deprecated, as in NetBox 4.6) when asked.
 */
export async function createSuperuserToken(
  ctx: InventoryContext,
  description: string,
  version: 1 | 2 = 2,
): Promise<NewSuperuserToken> {
  const result = await ctx.engine.create(TOKEN_MODEL, {
    version,
    is_superuser: true,
    write_enabled: true,
    description,
  });
  if (!result.ok) throw new Error(`could not create token: ${JSON.stringify(result)}`);
  const secret = String(result.extras?.token);
  const header = String(result.extras?.header);
  if (version === 1) return { id: result.value.id, version, token: secret, header };
  const key = String(result.extras?.key);
  return { id: result.value.id, version, token: `nbt_${key}.${secret}`, key, secret, header };
}

/** The host name /api/status/ reports, as NetBox's settings.HOSTNAME (empty when not allowed). */
function hostname(): string {
  try {
    return Deno.hostname();
  } catch {
    return "";
  }
}

/** `/api/status/` as NetBox 4.6 renders it (`installed_apps` was `installed-apps` before 4.6). */
function statusBody(_ctx: InventoryContext): Record<string, unknown> {
  return {
    "django-version": "5.2",
    "hostname": hostname(),
    "installed_apps": {
      "bridgebox": "deno",
      "hono": "4",
    },
    "netbox-version": NETBOX_VERSION,
    "netbox-full-version": `${NETBOX_VERSION}-bridgebox`,
    "plugins": { service: PLUGIN_VERSION },
    "python-version": `deno ${Deno.version.deno}`,
    "rq-workers-running": 1,
  };
}

export interface InventoryAppOptions {
  /** Passed to the plugin (test hooks such as shorter timeouts). */
  plugin?: Partial<PluginOptions>;
  /** Sync job tuning (shorter leases and backoffs in tests). */
  jobs?: JobOptions;
}

/** The inventory surface: NetBox-compatible core objects and the plugin REST API under /api. */
export async function createInventoryApp(
  deps: AppDeps,
  options: InventoryAppOptions = {},
): Promise<Hono<{ Bindings: ServeEnv }>> {
  const ctx = createInventoryCore(deps);
  const plugin = createPlugin(deps, {
    tokenPlaintext: (_engine, id: number) => ctx.tokens.plaintext(id),
    ...options.plugin,
  });
  ctx.engine.register(...plugin.models);
  const dropped = await ctx.engine.dropUnusedIndexKeys();
  if (dropped > 0) {
    deps.logger.log("info", "removed index keys this build no longer keeps", { count: dropped });
  }
  await ensureBootstrapToken(ctx);
  const jobs = createJobRoutes(deps, ctx.engine, plugin.services, {
    leaseMs: deps.config.jobs.leaseMs,
    retention: deps.config.jobs.retention,
    ...options.jobs,
  });

  const app = new Hono<InventoryEnv>({ strict: false });
  // First: names the answering route by its pattern for the request metrics (app.ts).
  app.use("*", notePattern);

  app.onError((error, c) => {
    if (error instanceof ApiError) {
      return c.json(error.body as object, error.status as 400, error.headers);
    }
    deps.logger.log("error", "inventory request failed", {
      method: c.req.method,
      path: new URL(c.req.url).pathname,
      error: error instanceof Error ? error.message : String(error),
    });
    return c.json({ detail: "Internal server error." }, 500);
  });
  app.notFound((c) => c.json({ detail: "Not found." }, 404));

  app.use("*", async (c, next) => {
    await next();
    c.res.headers.set("API-Version", API_VERSION);
  });
  app.use("*", async (c, next) => {
    const declared = Number(c.req.header("content-length") ?? "0");
    if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) {
      throw new ApiError(413, {
        detail: `Request body too large (limit ${MAX_BODY_BYTES} bytes).`,
      });
    }
    await next();
  });

  // Public: docs pages, their assets and the schema (a browser cannot send the token).
  let schema: Record<string, unknown> | null = null;
  app.get("/api/schema", (c) => {
    if (!schema) {
      const doc = buildOpenApi(ctx.engine);
      // The plugin's own routes (keepalive, ssh-secrets, settings, relay) sit beside the models.
      schema = {
        ...doc,
        paths: { ...doc.paths as Record<string, unknown>, ...pluginOpenApiPaths() },
      };
    }
    return c.json(schema);
  });
  app.route(
    "/",
    docsRoutes({
      title: "Bridgebox inventory API",
      specUrl: "/api/schema/",
      docsPath: "/api/docs",
      redocPath: "/api/redoc",
      staticBase: "/api/static",
    }),
  );

  // The API root without a token, only when INVENTORY_ANONYMOUS_API_ROOT is set: pynetbox 7.0.0
  // (Debian bookworm's, under Ansible's netbox.netbox modules) reads the version from this page's
  // API-Version header without sending its token. NetBox answers 403 (the default here too; the
  // header is sent either way). The page only names the API's sections; a token that is sent is
  // still checked. docs/api-behaviour.md, Inventory: authentication.
  app.on(["GET", "HEAD"], ["/api", "/api/"], async (c, next) => {
    if (!deps.config.inventoryAnonymousApiRoot) return await next();
    if (c.req.header("authorization") !== undefined) return await next();
    c.set("origin", publicOrigin(c, deps.config.trustedProxies));
    return c.json(apiRootListing(ctx, c, "/api/"));
  });

  const recordingLastUse = new Map<number, Promise<void>>();
  app.use("/api/*", async (c, next) => {
    const result = await ctx.tokens.authenticate(c.req.header("authorization"));
    if (result === null) throw new ApiError(403, { detail: AUTH_MESSAGES.missing });
    if (!result.ok) throw new ApiError(403, { detail: result.detail });
    c.set("auth", result.auth);
    c.set("origin", publicOrigin(c, deps.config.trustedProxies));
    // NetBox records last use at most once a minute. It is bookkeeping: one update per token at
    // a time in this process (200 concurrent requests of one token all raced this one record
    // and some answered 500 "storage contention"), and a failed update never fails the request.
    const last = typeof result.record.last_used === "string"
      ? Date.parse(result.record.last_used)
      : 0;
    const tokenId = result.record.id;
    if (deps.now() - last > 60_000 && !recordingLastUse.has(tokenId)) {
      const recording = ctx.engine.patchStored(TOKEN_MODEL, tokenId, {
        last_used: new Date(deps.now()).toISOString(),
      }).then(() => {}, (error) => {
        deps.logger.log("warning", "could not record a token's last use", {
          token_id: tokenId,
          error: error instanceof Error ? error.message : String(error),
        });
      }).finally(() => recordingLastUse.delete(tokenId));
      recordingLastUse.set(tokenId, recording);
      await recording;
    }
    await next();
  });

  app.get("/api/status", (c) => c.json(statusBody(ctx)));

  app.all("/api/*", async (c) => {
    let request = c.req.raw;
    const job = await jobs.handle(request, c.get("auth"));
    if (job) return job;
    const handled = await plugin.handle(request, c.get("auth"), ctx.engine);
    if (handled instanceof Response) return handled;
    if (handled instanceof Request) request = handled;
    const response = await handleModelRequest(ctx, c, request);
    if (response) return response;
    const method = c.req.method;
    const listing = apiRootListing(ctx, c, new URL(c.req.url).pathname);
    if (listing) {
      if (method !== "GET" && method !== "HEAD") throw methodNotAllowed(method);
      return c.json(listing);
    }
    throw notFound();
  });
  app.all("/api", (c) => c.redirect("/api/", 301));

  return app as unknown as Hono<{ Bindings: ServeEnv }>;
}
