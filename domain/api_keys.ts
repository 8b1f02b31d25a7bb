/**
 * API key rules (docs/api-behaviour.md, Backend: authentication). Keys are kept only as SHA-256
 * digests; the store is indexed by digest so authenticating costs the same whatever the number of
 * keys.
 */
import type { ApiKeyRecord, ApiKeyStore, KeyChange } from "../storage/ports.ts";
import type { Lockout } from "./lockout.ts";

export const MIN_KEY_LENGTH = 32;

export const texts = {
  noKeyConfigured:
    "No API key configured. Register a key via POST /auth/register-key or use an existing key.",
  invalidKey: "Invalid API key",
  lockedOut: "Too many failed authentication attempts",
  keyTooShort: "API key must be at least 32 characters.",
  registered: "API key registered.",
  alreadyConfigured: "An API key is already configured.",
  notFound: "API key not found.",
  lastActive: {
    code: "last_active_api_key_required",
    message: "Create and verify another active API key before retiring this key.",
  },
} as const;

const encoder = new TextEncoder();

export async function digestKey(raw: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(raw));
  return new Uint8Array(digest).toHex();
}

/** 64 URL-safe characters from 48 random bytes. */
export function generateRawKey(): string {
  return crypto.getRandomValues(new Uint8Array(48)).toBase64({ alphabet: "base64url" });
}

export type PublicKeyRecord = Omit<ApiKeyRecord, "digest">;

export function publicRecord({ digest: _digest, ...rest }: ApiKeyRecord): PublicKeyRecord {
  return rest;
}

/** Why a request is not authenticated; routes/backend/errors.ts maps each to its answer. */
export type AuthRefusal = "no_key_configured" | "invalid_key" | "locked_out";

export type AuthOutcome =
  | { ok: true; record: ApiKeyRecord }
  | { ok: false; reason: "no_key_configured" | "invalid_key"; detail: string; counted: boolean }
  | { ok: false; reason: "locked_out"; detail: string; retryAfter: number };

/**
 * Recently verified active keys, so a busy client costs no digest and no storage read per
 * request. It holds only what storage said a moment ago: it is cleared on every key change
 * (here, or in another process through ApiKeyStore.watch) and entries expire after `ttlMs`.
 * A look-up that a clear overtook keeps nothing (`generation`): it may have read the key before
 * the change that clear stands for, and would otherwise put a retired key back for `ttlMs`.
 */
export class AuthCache {
  readonly #entries = new Map<string, { record: ApiKeyRecord; until: number }>();
  #generation = 0;

  constructor(
    private readonly now: () => number,
    private readonly ttlMs = 30_000,
    private readonly capacity = 1_000,
  ) {}

  get(presented: string): ApiKeyRecord | null {
    const entry = this.#entries.get(presented);
    if (!entry) return null;
    if (entry.until <= this.now()) {
      this.#entries.delete(presented);
      return null;
    }
    return entry.record;
  }

  /** Counts the clears: a look-up notes it before it reads storage and hands it to `set`. */
  get generation(): number {
    return this.#generation;
  }

  /** Keeps what a look-up begun at `generation` read, unless a clear came since. */
  set(presented: string, record: ApiKeyRecord, generation: number): void {
    if (generation !== this.#generation) return;
    if (this.#entries.size >= this.capacity) {
      this.#entries.delete(this.#entries.keys().next().value as string);
    }
    this.#entries.set(presented, { record, until: this.now() + this.ttlMs });
  }

  clear(): void {
    this.#generation++;
    this.#entries.clear();
  }
}

/**
 * The part of `authenticate` that needs no storage: a locked-out address, or a key the cache
 * verified a moment ago. Synchronous, so a busy client's request (and an authenticated 404)
 * costs no digest, no storage read and no extra await; null when storage must decide.
 */
export function authenticateKnown(
  lockout: Lockout,
  ip: string | null,
  presented: string | undefined,
  cache?: AuthCache,
): AuthOutcome | null {
  const locked = ip === null ? 0 : lockout.secondsLocked(ip);
  if (locked > 0) {
    return { ok: false, reason: "locked_out", detail: texts.lockedOut, retryAfter: locked };
  }
  const cached = presented ? cache?.get(presented) : null;
  if (!cached) return null;
  if (ip !== null) lockout.clear(ip);
  return { ok: true, record: cached };
}

/**
 * Decides one authentication attempt and keeps the per-IP lockout in step with it.
 *
 * Only a presented key that is wrong, deactivated or deleted counts as a failure: a request
 * without the header is not a guess (browsers fetch `/favicon.ico` on their own). `ip` null is
 * the app calling itself in-process: there is no remote address to count or lock.
 */
export async function authenticate(
  store: ApiKeyStore,
  lockout: Lockout,
  ip: string | null,
  presented: string | undefined,
  cache?: AuthCache,
): Promise<AuthOutcome> {
  return authenticateKnown(lockout, ip, presented, cache) ??
    await authenticateStored(store, lockout, ip, presented, cache);
}

/**
 * The part of `authenticate` that asks storage, once `authenticateKnown` answered null (the
 * address is not locked and the cache does not hold the key).
 */
export async function authenticateStored(
  store: ApiKeyStore,
  lockout: Lockout,
  ip: string | null,
  presented: string | undefined,
  cache?: AuthCache,
): Promise<AuthOutcome> {
  // Noted before the read: a key change cleared after it means the read may be stale.
  const generation = cache?.generation ?? 0;
  // The header value is compared exactly: spaces and newlines count (docs/api-behaviour.md,
  // Backend: authentication).
  const { claimed, record } = await store.lookup(await digestKey(presented ?? ""));
  if (!claimed) {
    return {
      ok: false,
      reason: "no_key_configured",
      detail: texts.noKeyConfigured,
      counted: false,
    };
  }
  if (presented && record?.is_active) {
    if (ip !== null) lockout.clear(ip);
    cache?.set(presented, record, generation);
    return { ok: true, record };
  }
  if (!presented || ip === null) {
    return { ok: false, reason: "invalid_key", detail: texts.invalidKey, counted: false };
  }
  lockout.recordFailure(ip);
  return { ok: false, reason: "invalid_key", detail: texts.invalidKey, counted: true };
}

export type RegisterOutcome = {
  outcome: "registered" | "key_too_short" | "already_configured";
  detail: string;
};

export async function registerFirstKey(
  store: ApiKeyStore,
  rawKey: string,
  label: string,
  nowMs: number,
): Promise<RegisterOutcome> {
  if (rawKey.length < MIN_KEY_LENGTH) {
    return { outcome: "key_too_short", detail: texts.keyTooShort };
  }
  const record = await store.claimFirst(await digestKey(rawKey), label, nowMs / 1000);
  return record
    ? { outcome: "registered", detail: texts.registered }
    : { outcome: "already_configured", detail: texts.alreadyConfigured };
}

export async function createKey(
  store: ApiKeyStore,
  label: string,
  nowMs: number,
): Promise<PublicKeyRecord & { raw_key: string }> {
  const raw = generateRawKey();
  const record = await store.create(await digestKey(raw), label, nowMs / 1000);
  return { ...publicRecord(record), raw_key: raw };
}

export function describeChange(change: KeyChange):
  | { ok: true; record: PublicKeyRecord }
  | { ok: false; reason: "not_found"; detail: string }
  | { ok: false; reason: "last_active"; detail: typeof texts.lastActive } {
  if (change.ok) return { ok: true, record: publicRecord(change.record) };
  return change.reason === "not_found"
    ? { ok: false, reason: "not_found", detail: texts.notFound }
    : { ok: false, reason: "last_active", detail: texts.lastActive };
}
