/**
 * Mock authentication, as Proxmox does it: tickets (`PVEAuthCookie` + `CSRFPreventionToken`
 * on writes, 2-hour life, renewable by logging in with the ticket as password) and API tokens
 * (`Authorization: PVEAPIToken=user@realm!tokenid=secret`).
 */
import type { MockState } from "./state.ts";
import type { Credentials } from "../domain/hypervisor_schema/exchange.ts";

export type { Credentials };

export const TICKET_LIFETIME_MS = 2 * 3600 * 1000;

export interface Principal {
  userid: string;
  /** `user@realm!tokenid` for token auth. */
  tokenid?: string;
  via: "ticket" | "token";
}

export class AuthError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AuthError";
  }
}

interface Session {
  userid: string;
  csrf: string;
  issuedMs: number;
}

function randomB64(bytes: number): string {
  const b = new Uint8Array(bytes);
  crypto.getRandomValues(b);
  return b.toBase64();
}

const hex8 = (n: number) => (n >>> 0).toString(16).toUpperCase().padStart(8, "0");

export class Sessions {
  readonly #tickets = new Map<string, Session>();

  constructor(private readonly now: () => number) {}

  issue(userid: string): { ticket: string; CSRFPreventionToken: string; username: string } {
    const nowMs = this.now();
    if (this.#tickets.size > 10_000) this.#prune(nowMs);
    const stamp = hex8(Math.floor(nowMs / 1000));
    const ticket = `PVE:${userid}:${stamp}::${randomB64(48)}`;
    const csrf = `${stamp}:${randomB64(32).replace(/=+$/, "")}`;
    this.#tickets.set(ticket, { userid, csrf, issuedMs: nowMs });
    return { ticket, CSRFPreventionToken: csrf, username: userid };
  }

  #prune(nowMs: number): void {
    for (const [t, s] of this.#tickets) {
      if (nowMs - s.issuedMs >= TICKET_LIFETIME_MS) this.#tickets.delete(t);
    }
  }

  /** The session of a valid, unexpired ticket. */
  check(ticket: string): Session | undefined {
    const s = this.#tickets.get(ticket);
    if (!s) return undefined;
    if (this.now() - s.issuedMs >= TICKET_LIFETIME_MS) {
      this.#tickets.delete(ticket);
      return undefined;
    }
    return s;
  }
}

function userUsable(state: MockState, userid: string, nowS: number): boolean {
  const u = state.users.get(userid);
  return !!u && u.enable === 1 && (u.expire === 0 || u.expire > nowS);
}

/** Check username/password (or a valid ticket as password, for renewal). */
export function checkLogin(
  state: MockState,
  sessions: Sessions,
  username: string,
  password: string,
  realm: string | undefined,
  nowS: number,
): string {
  const userid = username.includes("@") ? username : `${username}@${realm ?? "pam"}`;
  const user = state.users.get(userid);
  if (!user || !userUsable(state, userid, nowS)) throw new AuthError("authentication failure");
  if (password.startsWith("PVE:")) {
    const s = sessions.check(password);
    if (s && s.userid === userid) return userid;
    throw new AuthError("authentication failure");
  }
  if (user.password === undefined || !timingSafeEqual(user.password, password)) {
    throw new AuthError("authentication failure");
  }
  return userid;
}

/**
 * Authenticate a request. `write` is true for POST/PUT/DELETE (ticket auth then needs the
 * CSRF token). Throws AuthError (→ 401).
 */
export function authenticate(
  state: MockState,
  sessions: Sessions,
  creds: Credentials,
  write: boolean,
  nowS: number,
): Principal {
  const auth = creds.authorization?.trim();
  if (auth && /^PVEAPIToken[= ]/i.test(auth)) {
    // Proxmox URI-unescapes the value (`root%40pam!id=secret` is the same token).
    let value = auth.slice("PVEAPIToken=".length).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      throw new AuthError("invalid token format");
    }
    const m = /^(\S+?)!([A-Za-z][A-Za-z0-9.\-_]*)[=:](\S+)$/.exec(value);
    if (!m) throw new AuthError("invalid token format");
    const [, userid, tokenid, secret] = m;
    const user = state.users.get(userid);
    const token = user?.tokens.get(tokenid);
    if (!user || !token || !userUsable(state, userid, nowS)) {
      throw new AuthError("invalid token value!");
    }
    if (token.expire !== 0 && token.expire <= nowS) throw new AuthError("token expired");
    if (!timingSafeEqual(token.secret, secret)) throw new AuthError("invalid token value!");
    return { userid, tokenid: `${userid}!${tokenid}`, via: "token" };
  }
  const ticket = creds.ticket ??
    (auth && /^PVEAuthCookie=/i.test(auth) ? auth.slice("PVEAuthCookie=".length) : undefined);
  if (!ticket) throw new AuthError("No ticket");
  const session = sessions.check(ticket);
  if (!session || !userUsable(state, session.userid, nowS)) {
    throw new AuthError("invalid PVE ticket");
  }
  if (write && (!creds.csrf || !timingSafeEqual(creds.csrf, session.csrf))) {
    throw new AuthError("Permission denied - invalid csrf token");
  }
  return { userid: session.userid, via: "ticket" };
}

/** Compares in time that depends on the lengths only, never on where the texts differ. */
function timingSafeEqual(a: string, b: string): boolean {
  const n = Math.max(a.length, b.length);
  let diff = a.length ^ b.length;
  for (let i = 0; i < n; i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}

export function newTokenSecret(): string {
  return crypto.randomUUID();
}
