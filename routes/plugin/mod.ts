/**
 * The inventory plugin (`/api/plugins/service/...`): its models, registered in the inventory
 * model engine and served by the generic NetBox-style model routes, plus the plugin's own
 * routes handled here:
 *
 * - `GET  endpoints/hypervisor/{id}/status/`       keepalive (disabled → "disabled", no contact)
 * - `GET  endpoints/hypervisor/{id}/ssh-secrets/`  SSH credentials for a terminal session
 * - `GET|PATCH settings/`, `GET settings/runtime/`  the settings singleton
 * - `GET  bootstrap-status/`                        relay of the backend's /extras/bootstrap-status
 * - `POST endpoints/{kind}/{id}/push/`              push now (the dashboard's "push the selected
 *                                                   endpoint"; the sync preflight uses the same)
 * - `POST endpoints/backend/{id}/token/`            set a key created on the backend (when its
 *                                                   registry was claimed before ours registered)
 * - `X-Cloud-Tenant` on the hypervisor endpoint list (rewritten to `?cloud_tenant=`)
 *
 * Each is a Hono route with its permission checks as middleware (routes/plugin/permissions.ts).
 *
 * Wiring (routes/inventory): build once with `createPlugin(deps, {tokenPlaintext})`, register
 * `plugin.models` in the engine, and after authenticating a request call
 * `plugin.handle(request, auth, engine)` before the generic model routes: a Response is the
 * answer, a Request is the (rewritten) request to pass on, null means "not a plugin route".
 */
import { type Context, Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { AppDeps } from "../_lib/deps.ts";
import { BackendClient, type BackendClientOptions } from "../../clients/backend.ts";
import { PROBE_TIMEOUT_MS, probeHypervisor } from "../../clients/hypervisor_probe.ts";
import type { ModelEngine } from "../../domain/netbox/engine.ts";
import type { AuthInfo, ModelDef } from "../../domain/netbox/types.ts";
import { MODELS, pluginModels } from "../../domain/plugin/models.ts";
import {
  bootstrapStatus,
  changeSettings,
  keepalive,
  type NaturalKey,
  type OpOutcome,
  type OpResult,
  pushNow,
  setBackendToken,
  sshSecrets,
  storageKey,
  taskKey,
  upsertMany,
} from "../../domain/plugin/operations.ts";
import { PluginServices, type TokenPlaintextReader } from "../../domain/plugin/service.ts";
import { SSH_TERMINAL_PERMISSION } from "../../domain/plugin/ssh.ts";
import {
  parseSettingsPatch,
  type PluginSettingsStore,
  publicSettings,
} from "../../domain/plugin/settings.ts";
import {
  ApiError,
  bulkTooLarge,
  MAX_BULK_ITEMS,
  readJsonBody,
  WRITE_REFUSAL_STATUS,
} from "../inventory/errors.ts";
import {
  can,
  canWrite,
  DENIED,
  mayChange,
  mayChangeWith,
  mayView,
  type PluginEnv,
} from "./permissions.ts";

export { pluginOpenApiPaths } from "./openapi.ts";

export const PLUGIN_PREFIX = "/api/plugins/service/";

export const PERMISSIONS = {
  viewBackend: "service.view_backendendpoint",
  changeBackend: "service.change_backendendpoint",
  viewHypervisor: "service.view_hypervisorendpoint",
  changeHypervisor: "service.change_hypervisorendpoint",
  /**
   * Reading SSH secrets back (`…/ssh-secrets/`, either credential source), checked with the
   * view permission: the permission a browser SSH terminal opens a session with. Changing an
   * endpoint grants no reading back (SECURITY.md "Who may read which secret back").
   */
  openSshTerminal: SSH_TERMINAL_PERMISSION,
  viewSettings: "service.view_pluginsettings",
  changeSettings: "service.change_pluginsettings",
} as const;

export interface PluginOptions {
  /** Reads a v1 inventory token's plaintext (the core token model keeps it retrievable). */
  tokenPlaintext: TokenPlaintextReader;
  /** Test hooks: shorter timeouts. */
  backendTimeouts?: BackendClientOptions;
  probeTimeoutMs?: number;
  /** Settings storage; defaults to Deno KV from deps. */
  settings?: PluginSettingsStore;
}

export interface Plugin {
  models: ModelDef[];
  services: PluginServices;
  settings: PluginSettingsStore;
  handle(request: Request, auth: AuthInfo, engine: ModelEngine): Promise<Response | Request | null>;
}

function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** The status of each plugin operation outcome (domain/plugin/operations.ts). */
const OUTCOME_STATUS = {
  ok: 200,
  not_found: 404,
  conflict: 409,
  invalid: 400,
  unprocessable: 422,
  backend_unreachable: 502,
} as const satisfies Record<OpOutcome, number>;

function respond(result: OpResult): Response {
  if (result.outcome === "relayed") return json(result.body, result.upstreamStatus);
  return json(result.body, OUTCOME_STATUS[result.outcome], result.headers);
}

/** A known plugin path asked with a method it does not serve: 405 naming the ones it does. */
function notAllowed(allow: string[]) {
  return function methodNotAllowed(c: Context<PluginEnv>): Response {
    return json({ detail: `Method "${c.req.method}" not allowed.` }, 405, {
      allow: allow.join(", "),
    });
  };
}

/**
 * Upsert collections: a POST whose natural key already exists updates that record (PATCH
 * semantics) instead of failing on the unique constraint, so the sync can write blindly.
 */
const UPSERTS: Array<{ path: string; model: string; key: NaturalKey }> = [
  { path: "/storage", model: MODELS.storage, key: storageKey },
  { path: "/task-history", model: MODELS.taskHistory, key: taskKey },
];

/** A path id: digits only (anything else is left to the model routes, which answer 404). */
const ID = "{[0-9]+}";

type PushKind = "hypervisor" | "inventory" | "backend";

/** Marks the plugin router's answer for a path it does not serve (handle() turns it into null). */
const NOT_A_PLUGIN_ROUTE = "x-bridgebox-not-a-plugin-route";

export { can };

export function createPlugin(deps: AppDeps, options: PluginOptions): Plugin {
  const settings = options.settings ?? deps.storage.pluginSettings;
  const services = new PluginServices({
    settings,
    atRestKey: deps.config.encryptionKey,
    // The outside world of the plugin's domain: both clients go through the guarded transport.
    backend: (target, timeouts) => new BackendClient(deps.fetch, target, timeouts),
    probe: (target, timeoutMs) => probeHypervisor(deps.fetch, target, timeoutMs),
    now: deps.now,
    logger: deps.logger,
    tokenPlaintext: options.tokenPlaintext,
    backendTimeouts: options.backendTimeouts,
  });
  const models = pluginModels(services);
  const probeTimeout = options.probeTimeoutMs ?? PROBE_TIMEOUT_MS;

  async function upsert(
    request: Request,
    auth: AuthInfo,
    engine: ModelEngine,
    model: string,
    key: NaturalKey,
  ): Promise<Response> {
    const [app, name] = model.split(".");
    if (!canWrite(auth, `${app}.add_${name}`)) return json({ detail: DENIED }, 403);
    const body = await readJsonBody(request);
    const many = Array.isArray(body);
    if (many && body.length > MAX_BULK_ITEMS) return json(bulkTooLarge(body.length), 400);
    const result = await upsertMany(engine, auth, model, key, many ? body as unknown[] : [body], {
      mayUpdate: canWrite(auth, `${app}.change_${name}`),
    });
    if (!result.ok) {
      if (result.reason === "forbidden") return json({ detail: DENIED }, 403);
      return json(
        many || !Array.isArray(result.body) ? result.body : result.body[0],
        result.reason === "invalid" ? 400 : WRITE_REFUSAL_STATUS[result.reason],
      );
    }
    const origin = new URL(request.url).origin;
    const rendered = await engine.render(model, result.records, { origin });
    const redact = engine.definition(model).redact;
    if (redact) { for (const r of rendered) await redact(r as Record<string, unknown>, auth); }
    if (many) return json(rendered, 201);
    return json(rendered[0], result.updated[0] ? 200 : 201);
  }

  const routes = new Hono<PluginEnv>({ strict: false }).basePath(PLUGIN_PREFIX.slice(0, -1));
  routes.onError((error) => {
    if (error instanceof HTTPException) return error.getResponse();
    if (error instanceof ApiError) return json(error.body, error.status);
    throw error;
  });
  routes.notFound(() =>
    new Response(null, { status: 404, headers: { [NOT_A_PLUGIN_ROUTE]: "1" } })
  );
  const id = (c: Context<PluginEnv>) => Number(c.req.param("id"));

  routes.get(
    `/endpoints/hypervisor/:id${ID}/status`,
    mayView(PERMISSIONS.viewHypervisor),
    async function hypervisorKeepalive(c) {
      return respond(await keepalive(services, c.env.engine, id(c), probeTimeout));
    },
  );
  routes.all(`/endpoints/hypervisor/:id${ID}/status`, notAllowed(["GET"]));

  // Secrets: only for tokens granted the terminal permission (with view), never for one that
  // can merely change the endpoint. write_enabled=false never gets them: a shell on the host is
  // no read-only access.
  routes.get(
    `/endpoints/hypervisor/:id${ID}/ssh-secrets`,
    mayView(PERMISSIONS.viewHypervisor),
    mayChange(PERMISSIONS.openSshTerminal),
    async function hypervisorSshSecrets(c) {
      return respond(await sshSecrets(services, c.env.engine, id(c)));
    },
  );
  routes.all(`/endpoints/hypervisor/:id${ID}/ssh-secrets`, notAllowed(["GET"]));

  routes.get(
    "/settings/runtime",
    mayView(PERMISSIONS.viewSettings, PERMISSIONS.changeSettings),
    async function runtimeSettings(c) {
      const s = await settings.get();
      const body: Record<string, unknown> = publicSettings(s);
      if (canWrite(c.env.auth, PERMISSIONS.changeSettings)) body.encryption_key = s.encryption_key;
      return json(body, 200, { "cache-control": "no-store" });
    },
  );
  routes.all("/settings/runtime", notAllowed(["GET"]));

  routes.get(
    "/settings",
    mayView(PERMISSIONS.viewSettings, PERMISSIONS.changeSettings),
    async function readSettings() {
      return json(publicSettings(await settings.get()));
    },
  );
  routes.on(
    ["PATCH", "PUT"],
    "/settings",
    mayChange(PERMISSIONS.changeSettings),
    async function writeSettings(c) {
      const parsed = parseSettingsPatch(await readJsonBody(c.req.raw));
      if (!parsed.ok) return json(parsed.errors, 400);
      return respond(await changeSettings(services, c.env.engine, parsed));
    },
  );
  routes.all("/settings", notAllowed(["GET", "PATCH", "PUT"]));

  routes.post(
    `/endpoints/:kind{hypervisor|inventory|backend}/:id${ID}/push`,
    mayChangeWith((param) => `service.change_${MODELS[param("kind") as PushKind].split(".")[1]}`),
    async function pushEndpointNow(c) {
      const kind = c.req.param("kind") as PushKind;
      return respond(await pushNow(services, c.env.engine, kind, id(c)));
    },
  );
  routes.all(`/endpoints/:kind{hypervisor|inventory|backend}/:id${ID}/push`, notAllowed(["POST"]));

  routes.post(
    `/endpoints/backend/:id${ID}/token`,
    mayChange(PERMISSIONS.changeBackend),
    async function setBackendKey(c) {
      const body = await readJsonBody(c.req.raw);
      return respond(await setBackendToken(services, c.env.engine, id(c), body));
    },
  );
  routes.all(`/endpoints/backend/:id${ID}/token`, notAllowed(["POST"]));

  routes.get(
    "/bootstrap-status",
    mayView(PERMISSIONS.viewBackend),
    async function relayBootstrapStatus(c) {
      return respond(await bootstrapStatus(services, c.env.engine));
    },
  );
  routes.all("/bootstrap-status", notAllowed(["GET"]));

  for (const u of UPSERTS) {
    routes.post(u.path, function upsertCollection(c) {
      return upsert(c.req.raw, c.env.auth, c.env.engine, u.model, u.key);
    });
  }

  /**
   * The plugin's answer to an authenticated request under /api/: a Response, the (rewritten)
   * Request for the model routes, or null when the path is not the plugin's.
   */
  async function handle(
    request: Request,
    auth: AuthInfo,
    engine: ModelEngine,
  ): Promise<Response | Request | null> {
    const url = new URL(request.url);
    if (!url.pathname.startsWith(PLUGIN_PREFIX)) return null;
    const read = request.method === "GET" || request.method === "HEAD";
    // X-Cloud-Tenant on the hypervisor endpoint list narrows it (docs/api-behaviour.md, Tenant
    // allow-list): rewritten to the model routes' `cloud_tenant` filter.
    if (read && /^endpoints\/hypervisor\/?$/.test(url.pathname.slice(PLUGIN_PREFIX.length))) {
      const header = request.headers.get("x-cloud-tenant");
      if (header === null || header.trim() === "") return null;
      const tenant = await services.resolveTenant(engine, header);
      if (tenant === null) {
        return json({ detail: `Unknown tenant in X-Cloud-Tenant: "${header.trim()}".` }, 400);
      }
      url.searchParams.set("cloud_tenant", String(tenant));
      return new Request(url, request);
    }
    const answer = await routes.fetch(request, { auth, engine });
    return answer.headers.has(NOT_A_PLUGIN_ROUTE) ? null : answer;
  }

  return { models, services, settings, handle };
}
