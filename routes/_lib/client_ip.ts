import type { Context } from "hono";
import type { ServeEnv } from "./deps.ts";

/**
 * The client's address: the socket peer, unless that peer is a configured trusted proxy,
 * in which case the right-most X-Forwarded-For hop that is not itself trusted.
 */
export function clientIp(c: Context, trustedProxies: ReadonlySet<string>): string {
  const peer = (c.env as ServeEnv | undefined)?.remoteAddr?.hostname ?? "unknown";
  if (!trustedProxies.has(peer)) return peer;
  const hops = (c.req.header("x-forwarded-for") ?? "").split(",").map((s) => s.trim()).filter(
    Boolean,
  );
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!trustedProxies.has(hops[i])) return hops[i];
  }
  return peer;
}
