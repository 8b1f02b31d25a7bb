/** What the console's page modules share: the Hono env and the services built once per app. */
import type { Context } from "hono";
import type { AppDeps, ServeEnv } from "../_lib/deps.ts";
import type { AuthInfo } from "../../domain/netbox/types.ts";
import type { TokenService } from "../../domain/netbox/tokens.ts";
import type { ConsoleApi } from "./api.ts";
import type { ConsoleSessions, Session } from "../../domain/console_sessions.ts";
import type { SshConnector, SshHostPolicy, TerminalSessions } from "../../domain/terminal.ts";
import type { Metrics } from "../../infra/metrics.ts";

export type ConsoleEnv = {
  Bindings: ServeEnv;
  Variables: { session: Session; auth: AuthInfo; api: ConsoleApi };
};
export type Ctx = Context<ConsoleEnv>;

export interface ConsoleServices {
  deps: AppDeps;
  sessions: ConsoleSessions;
  tokens: TokenService;
  terminals: TerminalServices;
}

/** The browser terminal's parts (routes/ui/terminal.tsx). */
export interface TerminalServices {
  sessions: TerminalSessions;
  ssh: SshConnector;
  /** Where SSH may go (the outbound policy; domain/terminal.ts checkSshHost). */
  hostPolicy: SshHostPolicy;
  idleTimeoutMs: number;
  /** A session record that could not be written (logged). */
  onRecordFailed(error: string): void;
  /** Open terminals per console session, so signing out ends them (this process). */
  live: Map<string, Set<(code: number, reason: string) => void>>;
  /** Open terminals are counted as `terminal` streams (docs/metrics.md). */
  metrics: Metrics;
}
