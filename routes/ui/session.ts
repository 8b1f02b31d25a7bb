/**
 * Console sessions (docs/console.md): a random id and a random secret in an HttpOnly,
 * SameSite=Strict cookie; Deno KV holds, under the id, the inventory token's Authorization
 * header sealed with AES-GCM under that secret, the CSRF token and the expiry. Neither side
 * alone reveals the token: the cookie has no token, and KV has no key to open it.
 */

export const SESSION_COOKIE = "bridgebox_session";
export const LOGIN_CSRF_COOKIE = "bridgebox_login_csrf";
/** Absolute lifetime of a session; sign in again afterwards. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

const KV_PREFIX = ["ui", "session"] as const;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface StoredSession {
  sealed: string;
  iv: string;
  csrf: string;
  token_id: number;
  created: number;
  expires: number;
}

export interface Session {
  id: string;
  /** The inventory `Authorization` header value of the token that signed in. */
  authorization: string;
  csrf: string;
  tokenId: number;
  expires: number;
}

function randomBase64Url(bytes: number): string {
  return crypto.getRandomValues(new Uint8Array(bytes)).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
}

export function randomToken(): string {
  return randomBase64Url(24);
}

function aesKey(secret: Uint8Array, usage: KeyUsage): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", secret as BufferSource, "AES-GCM", false, [usage]);
}

export function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

export class SessionStore {
  constructor(private readonly kv: Deno.Kv, private readonly now: () => number) {}

  /** Creates a session; returns the cookie value (`<id>.<secret>`). */
  async create(
    authorization: string,
    tokenId: number,
  ): Promise<{ cookie: string; session: Session }> {
    const id = crypto.getRandomValues(new Uint8Array(16)).toHex();
    const secret = crypto.getRandomValues(new Uint8Array(32));
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const sealed = new Uint8Array(
      await crypto.subtle.encrypt(
        { name: "AES-GCM", iv, additionalData: encoder.encode(id) },
        await aesKey(secret, "encrypt"),
        encoder.encode(authorization),
      ),
    );
    const created = this.now();
    const stored: StoredSession = {
      sealed: sealed.toBase64(),
      iv: iv.toBase64(),
      csrf: randomToken(),
      token_id: tokenId,
      created,
      expires: created + SESSION_TTL_MS,
    };
    await this.kv.set([...KV_PREFIX, id], stored, { expireIn: SESSION_TTL_MS });
    return {
      cookie: `${id}.${secret.toBase64({ alphabet: "base64url", omitPadding: true })}`,
      session: { id, authorization, csrf: stored.csrf, tokenId, expires: stored.expires },
    };
  }

  /** The session a cookie value names, or null (unknown, expired, forged or tampered). */
  async open(cookie: string | undefined): Promise<Session | null> {
    const match = /^([0-9a-f]{32})\.([A-Za-z0-9_-]{43})$/.exec(cookie ?? "");
    if (!match) return null;
    const [, id, secretText] = match;
    const entry = await this.kv.get<StoredSession>([...KV_PREFIX, id]);
    const stored = entry.value;
    if (!stored) return null;
    if (stored.expires <= this.now()) {
      await this.kv.delete([...KV_PREFIX, id]);
      return null;
    }
    try {
      const secret = Uint8Array.fromBase64(secretText, { alphabet: "base64url" });
      const plain = await crypto.subtle.decrypt(
        {
          name: "AES-GCM",
          iv: Uint8Array.fromBase64(stored.iv) as BufferSource,
          additionalData: encoder.encode(id),
        },
        await aesKey(secret, "decrypt"),
        Uint8Array.fromBase64(stored.sealed) as BufferSource,
      );
      return {
        id,
        authorization: decoder.decode(plain),
        csrf: stored.csrf,
        tokenId: stored.token_id,
        expires: stored.expires,
      };
    } catch {
      return null;
    }
  }

  async destroy(id: string): Promise<void> {
    await this.kv.delete([...KV_PREFIX, id]);
  }
}

/** `Token <v1>` or `Bearer nbt_<key>.<secret>` from what a person pastes into the form. */
export function authorizationFor(pasted: string): string | null {
  const value = pasted.trim().replace(/^(Token|Bearer)\s+/i, "");
  if (value === "" || value.length > 512 || /\s/.test(value)) return null;
  return value.startsWith("nbt_") ? `Bearer ${value}` : `Token ${value}`;
}

/** A local path under /ui/ to return to after sign-in (never another site). */
export function safeNext(value: string | undefined | null): string {
  if (!value || !value.startsWith("/ui/") || value.startsWith("//") || value.includes("\\")) {
    return "/ui/";
  }
  return value;
}
