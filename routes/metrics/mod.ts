/**
 * `GET /metrics`: the Prometheus text exposition of the injected registry (docs/metrics.md),
 * behind METRICS_ACCESS. With `key` (the default) a scraper sends `Authorization: Bearer
 * <METRICS_TOKEN>` or the backend API key in `X-Service-API-Key`; wrong keys count toward a
 * per-address lockout as the backend's do (SECURITY.md). app.ts mounts it before the surfaces
 * and only when METRICS_ACCESS is not `off`, so then `/metrics` is an unknown path like any other.
 */
import { type Context, Hono } from "hono";
import { type AuthCache, authenticate } from "../../domain/api_keys.ts";
import { constantTimeEqual } from "../../domain/console_sessions.ts";
import { Lockout } from "../../domain/lockout.ts";
import { loginEvents, noopMetrics } from "../../infra/metrics.ts";
import { clientIp } from "../_lib/client_ip.ts";
import type { AppDeps, ServeEnv } from "../_lib/deps.ts";
import { notePattern } from "../_lib/route_pattern.ts";

export const METRICS_PATH = "/metrics";
const API_KEY_HEADER = "X-Service-API-Key";

export const texts = {
  missing: "Metrics need a key (METRICS_ACCESS=key): send Authorization: Bearer <METRICS_TOKEN>, " +
    `or the backend API key in ${API_KEY_HEADER}.`,
  wrong: "Invalid metrics key",
  locked: "Too many failed authentication attempts",
} as const;

const CHALLENGE = { "WWW-Authenticate": 'Bearer realm="metrics"' };

export function createMetricsApp(deps: AppDeps, cache?: AuthCache) {
  const metrics = deps.metrics ?? noopMetrics;
  const { access, token } = deps.config.metrics;
  const lockout = new Lockout(deps.now, undefined, loginEvents(deps.metrics, "metrics"));
  type Env = { Bindings: ServeEnv };
  const app = new Hono<Env>();
  app.use("*", notePattern);

  /** Whether the request may read the metrics; else the refusal to send. */
  async function refusal(c: Context<Env>) {
    if (access === "open") return null;
    const ip = c.env?.internal ? null : clientIp(c, deps.config.trustedProxies);
    const locked = ip === null ? 0 : lockout.secondsLocked(ip);
    if (locked > 0) {
      return c.json({ detail: texts.locked }, 429, { "Retry-After": String(locked) });
    }
    const bearer = /^Bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "")?.[1]?.trim();
    const apiKey = c.req.header(API_KEY_HEADER);
    if (bearer === undefined && apiKey === undefined) {
      return c.json({ detail: texts.missing }, 401, CHALLENGE);
    }
    if (bearer !== undefined && token !== undefined && constantTimeEqual(bearer, token)) {
      if (ip !== null) lockout.clear(ip);
      return null;
    }
    if (apiKey !== undefined) {
      // The backend's own check (digest lookup, active keys only); it counts a wrong key here.
      const outcome = await authenticate(deps.storage.apiKeys, lockout, ip, apiKey, cache);
      if (outcome.ok) return null;
      if (outcome.reason === "locked_out") {
        return c.json({ detail: texts.locked }, 429, {
          "Retry-After": String(outcome.retryAfter),
        });
      }
      return c.json({ detail: texts.wrong }, 401, CHALLENGE);
    }
    if (ip !== null) lockout.recordFailure(ip);
    return c.json({ detail: texts.wrong }, 401, CHALLENGE);
  }

  app.get(METRICS_PATH, async (c) => {
    const refused = await refusal(c);
    if (refused) return refused;
    const { contentType, body } = await metrics.exposition();
    return c.body(body, 200, { "content-type": contentType, "cache-control": "no-store" });
  });
  app.all(
    METRICS_PATH,
    (c) => c.json({ detail: `Method "${c.req.method}" not allowed.` }, 405, { Allow: "GET, HEAD" }),
  );
  return app;
}
