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

/**
 * The origin as the client sees it. Behind a configured trusted proxy (socket peer in
 * SERVICE_TRUSTED_PROXIES) X-Forwarded-Proto / X-Forwarded-Host are believed.
 */
export function publicOrigin(c: Context, trustedProxies: ReadonlySet<string>): string {
  const url = new URL(c.req.url);
  const peer = (c.env as ServeEnv | undefined)?.remoteAddr?.hostname;
  if (!peer || !trustedProxies.has(peer)) return url.origin;
  const proto = c.req.header("x-forwarded-proto")?.split(",")[0].trim().toLowerCase();
  const host = c.req.header("x-forwarded-host")?.split(",")[0].trim();
  const scheme = proto === "https" || proto === "http" ? proto : url.protocol.slice(0, -1);
  const authority = host && /^[a-z0-9.\-:\[\]]+$/i.test(host) ? host : url.host;
  return `${scheme}://${authority}`;
}

/**
 * Whether the client reached us over HTTPS: directly (a TLS listener), or through a trusted
 * proxy that terminated TLS and says so in X-Forwarded-Proto. Cookies are marked `Secure` then.
 */
export function isHttps(c: Context, trustedProxies: ReadonlySet<string>): boolean {
  return publicOrigin(c, trustedProxies).startsWith("https:");
}
