import type { Context, MiddlewareHandler } from "hono";
import {
  authenticate,
  authenticateKnown,
  authenticateStored,
  type PublicKeyRecord,
  publicRecord,
} from "../../domain/api_keys.ts";
import type { ApiKeyRecord } from "../../storage/ports.ts";
import { clientIp } from "../_lib/client_ip.ts";
import { authError } from "./errors.ts";
import type { BackendEnv, BackendServices } from "./context.ts";
import { isSocketUpgrade, SOCKET_PATHS } from "./sync_socket.ts";

export const API_KEY_HEADER = "X-Service-API-Key";

/**
 * Exempt routes, matched exactly (docs/api-behaviour.md, Backend: authentication); HEAD rides along
 * with GET.
 */
const EXEMPT = new Set([
  "GET /",
  "GET /docs",
  "GET /redoc",
  "GET /openapi.json",
  "GET /health",
  "GET /meta",
  "GET /favicon.ico",
  "GET /auth/bootstrap-status",
  "POST /auth/register-key",
]);

function isExempt(method: string, path: string): boolean {
  const verb = method === "HEAD" ? "GET" : method;
  if (verb === "GET" && path.startsWith("/static/")) return true;
  return EXEMPT.has(`${verb} ${path}`);
}

/**
 * On an exempt route: whether the request carries a valid key (a wrong one counts toward the
 * lockout like anywhere else). Used where an exempt answer says more to a key holder (`/meta`).
 */
export async function presentsValidKey(
  services: BackendServices,
  c: Context<BackendEnv>,
): Promise<boolean> {
  const sent = c.req.header(API_KEY_HEADER);
  if (!sent) return false;
  const { keys, lockout, deps, authCache } = services;
  const ip = c.env?.internal ? null : clientIp(c, deps.config.trustedProxies);
  return (await authenticate(keys, lockout, ip, sent, authCache)).ok;
}

/** Runs before routing, so unknown paths are authenticated too and never leak a 404. */
export function apiKeyAuth(services: BackendServices): MiddlewareHandler<BackendEnv> {
  const { keys, lockout, deps, authCache } = services;
  // One frozen public view per verified record: the cache hands back the same record object for
  // each request of a busy client, so its view is made once, not once per request.
  const views = new WeakMap<ApiKeyRecord, PublicKeyRecord>();
  const shown = (record: ApiKeyRecord) => {
    let view = views.get(record);
    if (!view) views.set(record, view = Object.freeze(publicRecord(record)));
    return view;
  };
  return async (c, next) => {
    c.set("apiKey", null);
    if (isExempt(c.req.method, c.req.path)) return next();
    // A sync stream's WebSocket carries its key in the first message, where browsers can put
    // it (routes/backend/sync_socket.ts authenticates it there, with the same lockout).
    if (isSocketUpgrade(c.req.method, c.req.header("upgrade")) && SOCKET_PATHS.has(c.req.path)) {
      return next();
    }
    const ip = c.env?.internal ? null : clientIp(c, deps.config.trustedProxies);
    const sent = c.req.header(API_KEY_HEADER);
    // authenticate() in two parts: the known part without an await (a busy client's request).
    const outcome = authenticateKnown(lockout, ip, sent, authCache) ??
      await authenticateStored(keys, lockout, ip, sent, authCache);
    if (outcome.ok) {
      c.set("apiKey", shown(outcome.record));
      return next();
    }
    const refused = authError(outcome);
    // The detail is the contract's own text; a call that sent no key at all is also told where
    // the key goes (docs/api-behaviour.md, Backend: authentication).
    const body = outcome.reason === "invalid_key" && sent === undefined
      ? { ...refused.body, hint: `Send the backend API key in the ${API_KEY_HEADER} header.` }
      : refused.body;
    return c.json(body, refused.status, refused.headers);
  };
}
