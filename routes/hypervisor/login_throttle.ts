/**
 * Failed mock logins (`POST /access/ticket` answering 401) are counted per client address:
 * the fifth locks that address out of the login for 300 s (429 with Retry-After), a success
 * clears the count, as the backend's key lockout does (domain/lockout.ts).
 *
 * The app's in-process calls to itself (an endpoint pointed at the app's own port, probed or
 * synced) have no socket peer, yet a token that may edit an endpoint could guess the mock
 * password through them. So they count against the client whose request caused them
 * (`origin`, carried by app.ts) and against one shared key for this login reached in-process
 * (the endpoint every such call goes to): five failures lock either. An in-process success
 * clears neither (it may come from an endpoint someone else configured, which would otherwise
 * reset a guesser's count).
 */
import type { Context } from "hono";
import { Lockout } from "../../domain/lockout.ts";
import { loginEvents, type Metrics } from "../../infra/metrics.ts";
import { clientIp } from "../_lib/client_ip.ts";
import type { ServeEnv } from "../_lib/deps.ts";

/** The key every in-process login counts against, whoever caused it. */
export const IN_PROCESS_KEY = "in-process";

export class LoginThrottle {
  readonly #lockout: Lockout;

  constructor(
    now: () => number,
    private readonly trustedProxies: ReadonlySet<string>,
    metrics?: Metrics,
  ) {
    this.#lockout = new Lockout(now, undefined, loginEvents(metrics, "hypervisor"));
  }

  #keys(c: Context): { keys: string[]; internal: boolean } {
    const env = c.env as ServeEnv | undefined;
    if (!env?.internal) return { keys: [clientIp(c, this.trustedProxies)], internal: false };
    const keys = [IN_PROCESS_KEY];
    if (env.origin) keys.push(env.origin);
    return { keys, internal: true };
  }

  /** Seconds the client must wait before trying again (0: it may try). */
  secondsLocked(c: Context): number {
    return Math.max(0, ...this.#keys(c).keys.map((k) => this.#lockout.secondsLocked(k)));
  }

  record(c: Context, status: number): void {
    const { keys, internal } = this.#keys(c);
    if (status === 401) {
      for (const key of keys) this.#lockout.recordFailure(key);
    } else if (status < 300 && !internal) {
      for (const key of keys) this.#lockout.clear(key);
    }
  }
}
