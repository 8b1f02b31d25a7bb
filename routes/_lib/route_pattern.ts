/**
 * Names the route that answered a request by its registered PATTERN (`/api/dcim/devices/:id`),
 * never by the raw path, so request metrics have one series per route whatever clients ask for
 * (docs/metrics.md). Each surface app installs `notePattern` first; app.ts reads the note.
 */
import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { ServeEnv } from "./deps.ts";

/** What a request that no route of its surface matched is counted as. */
export const UNMATCHED = "(unmatched)";

/** Patterns that only middleware registers: a request that matched only these matched nothing. */
const CATCH_ALL = new Set(["*", "/*"]);

/** The pattern of the most specific route that matched: the last one registered. */
export function routePattern(c: Context): string {
  const routes = matchedRoutes(c).filter((r) => !CATCH_ALL.has(r.path));
  return routes.at(-1)?.path ?? UNMATCHED;
}

/**
 * A handler that serves many routes from its own table (the inventory's models, the hypervisor
 * schema) names the finer pattern it matched; it must come from that table, never the path.
 */
export function nameRoute(c: Context, pattern: string): void {
  const note = (c.env as ServeEnv | undefined)?.route;
  if (note && note.pattern === undefined) note.pattern = pattern;
}

/** Install first on a surface app. The outermost surface claims the note (inner apps skip). */
export const notePattern: MiddlewareHandler = async function notePattern(c, next) {
  const note = (c.env as ServeEnv | undefined)?.route;
  if (!note || note.claimed) return next();
  note.claimed = true;
  try {
    await next();
  } finally {
    if (note.pattern === undefined) note.pattern = routePattern(c);
  }
};
