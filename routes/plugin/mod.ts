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
 * Wiring (routes/inventory): build once with `createPlugin(deps, {tokenPlaintext})`, register
 * `plugin.models` in the engine, and after authenticating a request call
 * `plugin.handle(request, auth, engine)` before the generic model routes: a Response is the
 * answer, a Request is the (rewritten) request to pass on, null means "not a plugin route".
 */
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

export { pluginOpenApiPaths } from "./openapi.ts";

export const PLUGIN_PREFIX = "/api/plugins/service/";

export const PERMISSIONS = {
  viewBackend: "service.view_backendendpoint",
  changeBackend: "service.change_backendendpoint",
  viewHypervisor: "service.view_hypervisorendpoint",
  changeHypervisor: "service.change_hypervisorendpoint",
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

const DENIED = "You do not have permission to perform this action.";

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

/** The JSON body (1 MiB limit, as every inventory route), or the 4xx Response saying why not. */
async function readJson(request: Request): Promise<unknown> {
  try {
    return await readJsonBody(request);
  } catch (error) {
    if (error instanceof ApiError) return json(error.body, error.status);
    throw error;
  }
}

function notAllowed(method: string, allow: string[]): Response {
  return json({ detail: `Method "${method}" not allowed.` }, 405, { allow: allow.join(", ") });
}

export function can(auth: AuthInfo, permission: string): boolean {
  return auth.isSuperuser || auth.permissions.has(permission);
}

function canWrite(auth: AuthInfo, permission: string): boolean {
  return auth.writeEnabled && can(auth, permission);
}

const ROUTES = {
  status: /^endpoints\/hypervisor\/(\d+)\/status\/?$/,
  ssh: /^endpoints\/hypervisor\/(\d+)\/ssh-secrets\/?$/,
  settings: /^settings\/?$/,
  runtime: /^settings\/runtime\/?$/,
  bootstrap: /^bootstrap-status\/?$/,
  push: /^endpoints\/(hypervisor|inventory|backend)\/(\d+)\/push\/?$/,
  backendToken: /^endpoints\/backend\/(\d+)\/token\/?$/,
  hypervisorList: /^endpoints\/hypervisor\/?$/,
  storageList: /^storage\/?$/,
  taskList: /^task-history\/?$/,
};

/**
 * Upsert collections: a POST whose natural key already exists updates that record (PATCH
 * semantics) instead of failing on the unique constraint, so the sync can write blindly.
 */
const UPSERTS: Array<{ route: RegExp; model: string; key: NaturalKey }> = [
  { route: ROUTES.storageList, model: MODELS.storage, key: storageKey },
  { route: ROUTES.taskList, model: MODELS.taskHistory, key: taskKey },
];

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
    const body = await readJson(request);
    if (body instanceof Response) return body;
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

  async function handle(
    request: Request,
    auth: AuthInfo,
    engine: ModelEngine,
  ): Promise<Response | Request | null> {
    const url = new URL(request.url);
    if (!url.pathname.startsWith(PLUGIN_PREFIX)) return null;
    const path = url.pathname.slice(PLUGIN_PREFIX.length);
    const method = request.method.toUpperCase();
    const read = method === "GET" || method === "HEAD";
    let m: RegExpExecArray | null;

    if ((m = ROUTES.status.exec(path))) {
      if (!read) return notAllowed(method, ["GET"]);
      if (!can(auth, PERMISSIONS.viewHypervisor)) return json({ detail: DENIED }, 403);
      return respond(await keepalive(services, engine, Number(m[1]), probeTimeout));
    }
    if ((m = ROUTES.ssh.exec(path))) {
      if (!read) return notAllowed(method, ["GET"]);
      // Secrets: only for tokens that may change the endpoint (and so could set them).
      // A write_enabled=false token cannot change it, and a shell is no read-only access.
      if (
        !can(auth, PERMISSIONS.viewHypervisor) || !canWrite(auth, PERMISSIONS.changeHypervisor)
      ) {
        return json({ detail: DENIED }, 403);
      }
      return respond(await sshSecrets(services, engine, Number(m[1])));
    }
    if (ROUTES.runtime.test(path)) {
      if (!read) return notAllowed(method, ["GET"]);
      if (!can(auth, PERMISSIONS.viewSettings) && !can(auth, PERMISSIONS.changeSettings)) {
        return json({ detail: DENIED }, 403);
      }
      const s = await settings.get();
      const body: Record<string, unknown> = publicSettings(s);
      if (canWrite(auth, PERMISSIONS.changeSettings)) body.encryption_key = s.encryption_key;
      return json(body, 200, { "cache-control": "no-store" });
    }
    if (ROUTES.settings.test(path)) {
      if (read) {
        if (!can(auth, PERMISSIONS.viewSettings) && !can(auth, PERMISSIONS.changeSettings)) {
          return json({ detail: DENIED }, 403);
        }
        return json(publicSettings(await settings.get()));
      }
      if (method !== "PATCH" && method !== "PUT") {
        return notAllowed(method, ["GET", "PATCH", "PUT"]);
      }
      if (!canWrite(auth, PERMISSIONS.changeSettings)) return json({ detail: DENIED }, 403);
      const body = await readJson(request);
      if (body instanceof Response) return body;
      const parsed = parseSettingsPatch(body);
      if (!parsed.ok) return json(parsed.errors, 400);
      return respond(await changeSettings(services, engine, parsed));
    }
    if ((m = ROUTES.push.exec(path))) {
      if (method !== "POST") return notAllowed(method, ["POST"]);
      const kind = m[1] as "hypervisor" | "inventory" | "backend";
      if (!canWrite(auth, `service.change_${MODELS[kind].split(".")[1]}`)) {
        return json({ detail: DENIED }, 403);
      }
      return respond(await pushNow(services, engine, kind, Number(m[2])));
    }
    if ((m = ROUTES.backendToken.exec(path))) {
      if (method !== "POST") return notAllowed(method, ["POST"]);
      if (!canWrite(auth, PERMISSIONS.changeBackend)) return json({ detail: DENIED }, 403);
      const body = await readJson(request);
      if (body instanceof Response) return body;
      return respond(await setBackendToken(services, engine, Number(m[1]), body));
    }
    if (ROUTES.bootstrap.test(path)) {
      if (!read) return notAllowed(method, ["GET"]);
      if (!can(auth, PERMISSIONS.viewBackend)) return json({ detail: DENIED }, 403);
      return respond(await bootstrapStatus(services, engine));
    }
    if (method === "POST") {
      for (const u of UPSERTS) {
        if (u.route.test(path)) return upsert(request, auth, engine, u.model, u.key);
      }
    }
    if (ROUTES.hypervisorList.test(path) && read) {
      const header = request.headers.get("x-cloud-tenant");
      if (header === null || header.trim() === "") return null;
      const tenant = await services.resolveTenant(engine, header);
      if (tenant === null) {
        return json({ detail: `Unknown tenant in X-Cloud-Tenant: "${header.trim()}".` }, 400);
      }
      url.searchParams.set("cloud_tenant", String(tenant));
      return new Request(url, request);
    }
    return null;
  }

  return { models, services, settings, handle };
}
