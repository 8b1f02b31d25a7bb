import { createRoute, z } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import type { AppDeps } from "../_lib/deps.ts";
import { APP_NAME, APP_VERSION } from "../../config.ts";
import { Lockout } from "../../domain/lockout.ts";
import { loginEvents } from "../../infra/metrics.ts";
import { AuthCache } from "../../domain/api_keys.ts";
import { CredentialVault } from "../../domain/credentials.ts";
import { fetchPluginEncryptionKey } from "../../clients/inventory.ts";
import type { InventoryEndpointStore } from "../../storage/ports.ts";
import { allowedMethods } from "../_lib/allowed_methods.ts";
import { docsRoutes } from "../_lib/docs.ts";
import { faviconResponse } from "../_lib/favicon.ts";
import { API_KEY_HEADER, apiKeyAuth, presentsValidKey } from "./auth.ts";
import type { BackendEnv, BackendServices } from "./context.ts";
import { endpointRoutes } from "./endpoints.ts";
import { extrasRoutes } from "./extras.ts";
import { ApiError, backendRouter, errorHandler } from "./errors.ts";
import { keyRoutes } from "./keys.ts";
import { rekeyRoutes } from "./rekey.ts";
import { syncRoutes } from "./sync.ts";
import { provisioningRoutes } from "./provisioning.ts";
import { verbRoutes } from "./verbs.ts";
import { jsonContent } from "./schemas.ts";
import { notePattern } from "../_lib/route_pattern.ts";

export const MAX_BODY_BYTES = 1024 * 1024;
const PLUGIN_KEY_TTL_MS = 60_000;

/** Reads the plugin's encryption key with the stored inventory token; cached briefly for reads. */
function pluginKeyReader(
  deps: AppDeps,
  inventory: InventoryEndpointStore,
  vault: () => CredentialVault,
) {
  let cached: { value: string | null; until: number } | null = null;
  return async (options: { fresh?: boolean } = {}): Promise<string | null> => {
    if (!options.fresh && cached && cached.until > deps.now()) return cached.value;
    const [endpoint] = await inventory.list();
    if (!endpoint) return null;
    const token = await vault().open(
      endpoint.token,
      endpoint.key_source,
      `inventory endpoint ${endpoint.id}`,
    );
    if (!token) return null;
    const value = await fetchPluginEncryptionKey(deps.fetch, { ...endpoint, token });
    cached = { value, until: deps.now() + PLUGIN_KEY_TTL_MS };
    return value;
  };
}

export function createBackendServices(deps: AppDeps): BackendServices {
  const { inventoryEndpoints } = deps.storage;
  const vault: CredentialVault = new CredentialVault({
    envKey: deps.config.encryptionKey,
    pluginKey: pluginKeyReader(deps, inventoryEndpoints, () => vault),
    logger: deps.logger,
  });
  const keys = deps.storage.apiKeys;
  const authCache = new AuthCache(deps.now);
  // Another process retiring a key must not leave it working here: drop the cache on any change.
  void keys.watch(() => authCache.clear());
  return {
    deps,
    keys,
    inventoryEndpoints,
    hypervisorEndpoints: deps.storage.hypervisorEndpoints,
    lockout: new Lockout(deps.now, undefined, loginEvents(deps.metrics, "backend")),
    authCache,
    vault,
    verbAudit: deps.storage.verbAudit,
    idempotency: deps.storage.idempotency,
  };
}

/** The backend service. Served at "/", it owns every path no other surface claims. */
// deno-lint-ignore require-await
export async function createBackendApp(deps: AppDeps, services = createBackendServices(deps)) {
  const app = backendRouter<BackendEnv>();
  // First: names the answering route by its pattern for the request metrics (app.ts).
  app.use("*", notePattern);
  app.onError(errorHandler(deps.logger));
  app.notFound((c) => {
    // A known path asked with a method it does not serve is a 405 that says which ones it does.
    const allow = allowedMethods(app.routes, c.req.path);
    if (allow.length) {
      return c.json({ detail: "Method Not Allowed" }, 405, { Allow: allow.join(", ") });
    }
    return c.json({ detail: "Not Found" }, 404);
  });

  app.use("*", apiKeyAuth(services));
  app.use(
    "*",
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => {
        throw new ApiError(413, { detail: "Request body too large (limit 1 MiB)." });
      },
    }),
  );
  // Registered before the body check below: a verb's gate (endpoint, allow_writes) answers
  // before its body is read, and the verb reads and checks its own body after that.
  app.route("/", verbRoutes(services));
  app.use("*", async (c, next) => {
    const type = c.req.header("content-type") ?? "";
    if (["POST", "PUT", "PATCH"].includes(c.req.method)) {
      // Read once (Hono caches it for the validator); the 1 MiB limit above already applies.
      const empty = (await c.req.arrayBuffer()).byteLength === 0;
      if (empty && type) {
        // An empty body is no body, whatever Content-Type a client sent along with it
        // (POST /auth/keys takes none; requests-style clients still label it JSON).
        const headers = new Headers(c.req.raw.headers);
        headers.delete("content-type");
        c.req.raw = new Request(c.req.raw.url, { method: c.req.method, headers });
        c.req.bodyCache = {};
      } else if (!empty && !/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
        throw new ApiError(415, { detail: "Content-Type must be application/json" });
      }
    }
    await next();
  });

  // A browser (it asks for HTML first) is sent to the console where one is served; API clients
  // keep the JSON answer below.
  app.get("/", async (c, next) => {
    const wantsHtml = /^\s*text\/html\b/i.test(c.req.header("accept") ?? "");
    if (wantsHtml && deps.config.surfaces.has("plugin")) return c.redirect("/ui/", 302);
    await next();
  });
  app.openapi(
    createRoute({
      method: "get",
      path: "/",
      description: "A browser (Accept: text/html first) is redirected to the console at /ui/.",
      tags: ["meta"],
      summary: "Service root",
      security: [],
      responses: {
        200: jsonContent(
          z.object({ name: z.string(), version: z.string(), docs: z.string() }),
          "Root",
        ),
      },
    }),
    (c) => c.json({ name: APP_NAME, version: APP_VERSION, docs: "/docs" }, 200),
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/health",
      tags: ["meta"],
      summary: "Health check",
      security: [],
      responses: {
        200: jsonContent(z.object({ status: z.string(), init_ok: z.boolean() }), "Ready"),
      },
    }),
    (c) => c.json({ status: "ready", init_ok: true }, 200),
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/meta",
      tags: ["meta"],
      summary: "Service metadata",
      description: "Public; `version` and `runtime` are filled in only for a request with a " +
        "valid X-Service-API-Key (null otherwise: versions are not told to anonymous callers).",
      security: [],
      responses: {
        200: jsonContent(
          z.object({
            name: z.string(),
            version: z.string().nullable(),
            runtime: z.string().nullable(),
            storage: z.string(),
            surfaces: z.array(z.string()),
          }),
          "Metadata",
        ),
      },
    }),
    async (c) => {
      const known = await presentsValidKey(services, c);
      return c.json({
        name: APP_NAME,
        version: known ? APP_VERSION : null,
        runtime: known ? `deno ${Deno.version.deno}` : null,
        storage: "deno-kv",
        surfaces: [...deps.config.surfaces],
      }, 200);
    },
  );

  app.get("/favicon.ico", () => faviconResponse());

  app.route("/", keyRoutes(services));
  app.route("/", endpointRoutes(services));
  app.route("/", rekeyRoutes(services));
  app.route("/", syncRoutes(services));
  app.route("/", extrasRoutes(services));
  app.route("/", provisioningRoutes(deps));

  app.openAPIRegistry.registerComponent("securitySchemes", "ApiKey", {
    type: "apiKey",
    in: "header",
    name: API_KEY_HEADER,
  });
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: `${APP_NAME} backend service`,
      version: APP_VERSION,
      description: "API keys, endpoint copies, sync stages, operational verbs and provisioning.",
    },
    security: [{ ApiKey: [] }],
  });
  app.route(
    "/",
    docsRoutes({
      title: `${APP_NAME} backend`,
      specUrl: "/openapi.json",
      docsPath: "/docs",
      redocPath: "/redoc",
      staticBase: "/static",
    }),
  );
  return app;
}
