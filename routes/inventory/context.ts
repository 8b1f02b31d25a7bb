/**
 * What the inventory surface shares with the routes mounted on it (core and plugin): the
 * app deps, the model engine and the token service, plus the Hono env carrying `auth`.
 */
import type { AppDeps, ServeEnv } from "../_lib/deps.ts";
import type { ModelEngine } from "../../domain/netbox/engine.ts";
import type { TokenService } from "../../domain/netbox/tokens.ts";
import type { AuthInfo } from "../../domain/netbox/types.ts";

export interface InventoryContext {
  deps: AppDeps;
  engine: ModelEngine;
  tokens: TokenService;
}

/** Hono env of the inventory surface: `c.get("auth")` is set on every authenticated route. */
export type InventoryEnv = {
  Bindings: ServeEnv;
  /** `origin`: scheme://host the client used (X-Forwarded-* honoured from trusted proxies). */
  Variables: { auth: AuthInfo; origin: string };
};

/** NetBox API version announced in the `API-Version` header and /api/status/. */
export const API_VERSION = "4.6";
export const NETBOX_VERSION = "4.6.8";
export const PLUGIN_VERSION = "0.0.15";
