/** What the console's page modules share: the Hono env and the services built once per app. */
import type { Context } from "hono";
import type { AppDeps, ServeEnv } from "../_lib/deps.ts";
import type { AuthInfo } from "../../domain/netbox/types.ts";
import type { TokenService } from "../../domain/netbox/tokens.ts";
import type { ConsoleApi } from "./api.ts";
import type { ConsoleSessions, Session } from "../../domain/console_sessions.ts";

export type ConsoleEnv = {
  Bindings: ServeEnv;
  Variables: { session: Session; auth: AuthInfo; api: ConsoleApi };
};
export type Ctx = Context<ConsoleEnv>;

export interface ConsoleServices {
  deps: AppDeps;
  sessions: ConsoleSessions;
  tokens: TokenService;
}
