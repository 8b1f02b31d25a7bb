import type { Config } from "../../config.ts";
import type { Logger } from "../../domain/logger.ts";

/**
 * Everything a surface may use. Built once in main.ts (or a test) and passed down. It lives
 * apart from app.ts so a surface can be compiled and served without the others.
 */
export interface AppDeps {
  config: Config;
  kv: Deno.Kv;
  /** Outbound HTTP for clients/*; tests inject one that reaches an in-process app. */
  fetch: typeof fetch;
  /** Epoch milliseconds. */
  now: () => number;
  logger: Logger;
}

/** Connection facts a surface needs from the server; Deno.serve's handler info fits. */
export interface ServeEnv {
  remoteAddr?: { hostname: string; port?: number };
}
