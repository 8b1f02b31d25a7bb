import type { Config } from "../../config.ts";
import type { Logger } from "../../infra/logger.ts";
import type { Metrics } from "../../infra/metrics.ts";
import type { Tracer } from "../../infra/tracing.ts";
import type { Storage } from "../../storage/ports.ts";
import type { SshConnector } from "../../domain/terminal.ts";

/**
 * Everything a surface may use. Built once in main.ts (or a test) and passed down. It lives
 * apart from app.ts so a surface can be compiled and served without the others.
 */
export interface AppDeps {
  config: Config;
  /**
   * Every store, behind its port (storage/ports.ts); main.ts builds it once with
   * `createKvStorage(kv)`. No surface holds the raw KV handle: watches and expiries are port
   * methods.
   */
  storage: Storage;
  /**
   * Outbound HTTP for clients/*: the guarded transport of clients/outbound.ts (main.ts and
   * tests/_helpers.ts build it); a test may inject one that reaches an in-process app.
   */
  fetch: typeof fetch;
  /** The running app for calls to its own port, bound by main.ts once it listens. */
  self?: { port: number; fetch: (request: Request) => Response | Promise<Response> };
  /** Epoch milliseconds. */
  now: () => number;
  logger: Logger;
  /**
   * What `GET /metrics` shows (infra/metrics.ts): main.ts injects a Prometheus registry
   * (infra/prometheus.ts); absent, nothing is counted (`noopMetrics`).
   */
  metrics?: Metrics;
  /**
   * Spans of sync runs, stages and jobs (infra/tracing.ts): main.ts injects the OpenTelemetry
   * tracer, exported when Deno runs with OTEL_DENO=true; absent, no spans (`noopTracer`).
   */
  tracer?: Tracer;
  /** The browser terminal's SSH client (default: clients/ssh.ts). */
  ssh?: SshConnector;
  /** The browser terminal's idle timeout (milliseconds; default 15 minutes). */
  terminalIdleTimeoutMs?: number;
}

/** Connection facts a surface needs from the server; Deno.serve's handler info fits. */
export interface ServeEnv {
  remoteAddr?: { hostname: string; port?: number };
  /**
   * Set only on requests the app sends to itself in-process (clients/outbound.ts): they never
   * touched a socket, so there is no remote address to count failed logins against.
   */
  internal?: boolean;
  /**
   * On an in-process request: the client address of the outside request that caused it (app.ts
   * carries it across the call), so failed logins still count against that client.
   */
  origin?: string;
  /**
   * Filled by the surface that answers (routes/_lib/route_pattern.ts) with the route pattern that
   * matched, for the request metrics app.ts records.
   */
  route?: RouteNote;
}

/** The answering surface's route pattern: claimed by the outermost surface app, set after it. */
export interface RouteNote {
  claimed?: boolean;
  pattern?: string;
}
