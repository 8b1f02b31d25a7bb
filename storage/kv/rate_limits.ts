/**
 * Per-client request limits kept in Deno KV, so they hold across restarts and isolates.
 *
 * Fixed window per (route, client address) that opens with the client's first request: the
 * entry holds `{count, resetAt}` and expires (`expireIn`) when the window closes. Increments are
 * compare-and-set on the entry's versionstamp, so concurrent requests never over-admit.
 */
import type { RateDecision, RateLimiter } from "../ports.ts";
import { keys } from "./keys.ts";

export type { RateDecision, RateLimiter };

interface WindowEntry {
  count: number;
  resetAt: number;
}

/** Long forwarded addresses would only waste key space (KV keys max 2 KiB). */
const MAX_CLIENT_KEY = 128;

export class KvRateLimiter implements RateLimiter {
  constructor(private readonly kv: Deno.Kv, private readonly now: () => number) {}

  async hit(route: string, client: string, limit: number, windowMs: number): Promise<RateDecision> {
    const key = keys.hypervisorRateLimit(route, client.slice(0, MAX_CLIENT_KEY));
    for (let attempt = 0; attempt < 20; attempt++) {
      const now = this.now();
      const entry = await this.kv.get<WindowEntry>(key);
      let window = entry.value;
      if (!window || window.resetAt <= now) window = { count: 0, resetAt: now + windowMs };
      const retryAfter = Math.max(1, Math.ceil((window.resetAt - now) / 1000));
      if (window.count >= limit) {
        return { allowed: false, limit, remaining: 0, resetAt: window.resetAt, retryAfter };
      }
      const next = { count: window.count + 1, resetAt: window.resetAt };
      const res = await this.kv.atomic()
        .check(entry)
        .set(key, next, { expireIn: Math.max(1, window.resetAt - now) })
        .commit();
      if (res.ok) {
        return {
          allowed: true,
          limit,
          remaining: limit - next.count,
          resetAt: next.resetAt,
          retryAfter,
        };
      }
    }
    // Persistent contention on one client's counter: refuse rather than over-admit.
    const resetAt = this.now() + 1000;
    return { allowed: false, limit, remaining: 0, resetAt, retryAfter: 1 };
  }
}
