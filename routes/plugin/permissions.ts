/**
 * Permission checks of the plugin's own routes as Hono middleware, built the way Hono's own
 * `bearerAuth` is: the options are checked once when the middleware is made, the returned
 * handler is named, and a refusal is an `HTTPException` carrying the surface's 403 body.
 *
 * @module
 * @example
 * ```ts
 * app.get("/settings", mayView(PERMISSIONS.viewSettings, PERMISSIONS.changeSettings), handler);
 * app.patch("/settings", mayChange(PERMISSIONS.changeSettings), handler);
 * ```
 */
import type { MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { AuthInfo } from "../../domain/netbox/types.ts";
import type { ModelEngine } from "../../domain/netbox/engine.ts";

/** What the inventory hands each plugin request: who is asking, and the engine. */
export interface PluginEnv {
  Bindings: { auth: AuthInfo; engine: ModelEngine };
}

export const DENIED = "You do not have permission to perform this action.";

export function can(auth: AuthInfo, permission: string): boolean {
  return auth.isSuperuser || auth.permissions.has(permission);
}

export function canWrite(auth: AuthInfo, permission: string): boolean {
  return auth.writeEnabled && can(auth, permission);
}

/** The 403 every refused permission check answers with. */
export function denied(): HTTPException {
  return new HTTPException(403, {
    res: new Response(JSON.stringify({ detail: DENIED }), {
      status: 403,
      headers: { "content-type": "application/json" },
    }),
  });
}

function checked(permissions: readonly string[], what: string): readonly string[] {
  if (permissions.length === 0 || permissions.some((p) => !/^[a-z_]+\.[a-z_]+$/.test(p))) {
    throw new Error(`${what} needs permissions named "<app>.<action>_<model>"`);
  }
  return permissions;
}

/** Lets the request through when the token holds any of `permissions` (reading). */
export function mayView(...permissions: string[]): MiddlewareHandler<PluginEnv> {
  const needed = checked(permissions, "mayView");
  return async function viewPermission(c, next) {
    if (!needed.some((p) => can(c.env.auth, p))) throw denied();
    await next();
  };
}

/** Lets the request through when the token may write and holds `permission`. */
export function mayChange(permission: string): MiddlewareHandler<PluginEnv> {
  const [needed] = checked([permission], "mayChange");
  return async function changePermission(c, next) {
    if (!canWrite(c.env.auth, needed)) throw denied();
    await next();
  };
}

/** mayChange with the permission chosen per request (e.g. from a path parameter). */
export function mayChangeWith(
  permissionOf: (param: (name: string) => string) => string,
): MiddlewareHandler<PluginEnv> {
  return async function changePermissionOf(c, next) {
    if (!canWrite(c.env.auth, permissionOf((name) => c.req.param(name) ?? ""))) throw denied();
    await next();
  };
}
