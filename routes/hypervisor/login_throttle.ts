/**
 * Failed mock logins (`POST /access/ticket` answering 401) are counted per client address:
 * the fifth locks that address out of the login for 300 s (429 with Retry-After), a success
 * clears the count, as the backend's key lockout does (domain/lockout.ts).
 */
import type { Context } from "hono";
import { Lockout } from "../../domain/lockout.ts";
import { clientIp } from "../_lib/client_ip.ts";
import type { ServeEnv } from "../_lib/deps.ts";

export class LoginThrottle {
  readonly #lockout: Lockout;

  constructor(now: () => number, private readonly trustedProxies: ReadonlySet<string>) {
    this.#lockout = new Lockout(now);
  }

  /** The client address, or null for the app's own in-process calls (never throttled). */
  #ip(c: Context): string | null {
    return (c.env as ServeEnv | undefined)?.internal ? null : clientIp(c, this.trustedProxies);
  }

  /** Seconds the client must wait before trying again (0: it may try). */
  secondsLocked(c: Context): number {
    const ip = this.#ip(c);
    return ip === null ? 0 : this.#lockout.secondsLocked(ip);
  }

  record(c: Context, status: number): void {
    const ip = this.#ip(c);
    if (ip === null) return;
    if (status === 401) this.#lockout.recordFailure(ip);
    else if (status < 300) this.#lockout.clear(ip);
  }
}
