import type { IdempotencyClaim, IdempotencyEntry, IdempotencyStore } from "../ports.ts";
import { keys } from "./keys.ts";

/** The entry as kept in KV: with the window it was claimed for. */
type Stored = IdempotencyEntry & { ttl_ms: number };

/**
 * Idempotency keys in Deno KV. The claim is one atomic checked against the versionstamp read
 * just before, so of two concurrent requests with one key exactly one claims it. Entries carry
 * their own expiry (KV's `expireIn` only promises deletion some time after).
 */
export class KvIdempotencyStore implements IdempotencyStore {
  constructor(private readonly kv: Deno.Kv) {}

  async claim(
    key: string,
    fingerprint: string,
    now: number,
    ttlMs: number,
  ): Promise<IdempotencyClaim> {
    const k = keys.verbIdempotency(key);
    for (;;) {
      const current = await this.kv.get<IdempotencyEntry>(k);
      if (current.value && current.value.expires_at > now) {
        return { claimed: false, entry: current.value };
      }
      const entry: Stored = { fingerprint, expires_at: now + ttlMs, answer: null, ttl_ms: ttlMs };
      const result = await this.kv.atomic()
        .check(current)
        .set(k, entry, { expireIn: ttlMs * 2 })
        .commit();
      if (result.ok) return { claimed: true };
      // Someone else wrote the key between the read and the commit: read what they wrote.
    }
  }

  async complete(key: string, answer: { status: number; body: unknown }): Promise<void> {
    const k = keys.verbIdempotency(key);
    const current = await this.kv.get<Stored>(k);
    if (!current.value) return;
    // The clock is the caller's (expires_at); KV's own expiry only needs to come later.
    await this.kv.set(k, { ...current.value, answer }, { expireIn: current.value.ttl_ms * 2 });
  }

  async release(key: string): Promise<void> {
    await this.kv.delete(keys.verbIdempotency(key));
  }

  async settled(key: string, signal: AbortSignal): Promise<IdempotencyEntry | null> {
    const stream = this.kv.watch<[IdempotencyEntry]>([keys.verbIdempotency(key)]);
    const reader = stream.getReader();
    const onAbort = () => void reader.cancel().catch(() => {});
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        if (signal.aborted) return null;
        const { value, done } = await reader.read();
        if (done) return null;
        const entry = value[0].value;
        if (!entry || entry.answer) return entry;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      await reader.cancel().catch(() => {});
    }
  }
}
