/**
 * Web console sessions (docs/console.md): a random id and a random 256-bit secret go to the
 * browser; storage keeps, under the id, the inventory token's Authorization value sealed with
 * AES-GCM under that secret (the id is the additional data), the CSRF token and the expiry.
 * Neither side alone reveals the token: the cookie holds none, storage has no key to open it.
 */
import type { ConsoleSessionRecord, ConsoleSessionStore } from "../storage/ports.ts";

/** Absolute lifetime of a session; sign in again afterwards. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface Session {
  id: string;
  /** The inventory `Authorization` header value of the token that signed in. */
  authorization: string;
  csrf: string;
  tokenId: number;
  expires: number;
}

/** 32 URL-safe characters of randomness (CSRF tokens). */
export function randomToken(): string {
  return crypto.getRandomValues(new Uint8Array(24)).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
}

export function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

function aesKey(secret: Uint8Array, usage: KeyUsage): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", secret as BufferSource, "AES-GCM", false, [usage]);
}

const COOKIE_VALUE = /^([0-9a-f]{32})\.([A-Za-z0-9_-]{43})$/;

export class ConsoleSessions {
  constructor(private readonly store: ConsoleSessionStore, private readonly now: () => number) {}

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
    const record: ConsoleSessionRecord = {
      sealed: sealed.toBase64(),
      iv: iv.toBase64(),
      csrf: randomToken(),
      token_id: tokenId,
      created,
      expires: created + SESSION_TTL_MS,
    };
    await this.store.put(id, record, SESSION_TTL_MS);
    return {
      cookie: `${id}.${secret.toBase64({ alphabet: "base64url", omitPadding: true })}`,
      session: { id, authorization, csrf: record.csrf, tokenId, expires: record.expires },
    };
  }

  /** The session a cookie value names, or null (unknown, expired, forged or tampered). */
  async open(cookie: string | undefined): Promise<Session | null> {
    const match = COOKIE_VALUE.exec(cookie ?? "");
    if (!match) return null;
    const [, id, secretText] = match;
    const record = await this.store.get(id);
    if (!record) return null;
    if (record.expires <= this.now()) {
      await this.store.delete(id);
      return null;
    }
    try {
      const secret = Uint8Array.fromBase64(secretText, { alphabet: "base64url" });
      const plain = await crypto.subtle.decrypt(
        {
          name: "AES-GCM",
          iv: Uint8Array.fromBase64(record.iv) as BufferSource,
          additionalData: encoder.encode(id),
        },
        await aesKey(secret, "decrypt"),
        Uint8Array.fromBase64(record.sealed) as BufferSource,
      );
      return {
        id,
        authorization: decoder.decode(plain),
        csrf: record.csrf,
        tokenId: record.token_id,
        expires: record.expires,
      };
    } catch {
      return null;
    }
  }

  destroy(id: string): Promise<void> {
    return this.store.delete(id);
  }
}
