/**
 * `Idempotency-Key` for verbs: the first request with a key runs; a repeat within the window
 * replays its answer without running again, and waits for it when the first is still running.
 * The same key with a different request is refused.
 */
import type { IdempotencyStore } from "../../storage/ports.ts";

export const IDEMPOTENCY_WINDOW_MS = 60_000;

export interface Answer {
  status: number;
  body: unknown;
}

export type Idempotent =
  | { kind: "fresh"; answer: Answer }
  | { kind: "replayed"; answer: Answer }
  /** The key was first used for another request. */
  | { kind: "reused" }
  /** The first request is still running after the whole window (it never finished). */
  | { kind: "in_progress" };

/** A stable text of what makes two requests "the same" (object keys sorted). */
export function fingerprint(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, v) =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
        : v,
  );
}

export async function idempotent(
  store: IdempotencyStore,
  key: string,
  request: unknown,
  now: number,
  /** Runs the request; `keep` false: nothing happened, a repeat must run afresh. */
  work: () => Promise<{ answer: Answer; keep: boolean }>,
): Promise<Idempotent> {
  const print = fingerprint(request);
  const claim = await store.claim(key, print, now, IDEMPOTENCY_WINDOW_MS);
  if (claim.claimed) {
    let outcome: { answer: Answer; keep: boolean };
    try {
      outcome = await work();
    } catch (error) {
      await store.release(key);
      throw error;
    }
    if (outcome.keep) await store.complete(key, outcome.answer);
    else await store.release(key);
    return { kind: "fresh", answer: outcome.answer };
  }
  if (claim.entry.fingerprint !== print) return { kind: "reused" };
  if (claim.entry.answer) return { kind: "replayed", answer: claim.entry.answer };
  const wait = AbortSignal.timeout(Math.max(1, claim.entry.expires_at - now));
  const settled = await store.settled(key, wait);
  if (settled?.answer && settled.fingerprint === print) {
    return { kind: "replayed", answer: settled.answer };
  }
  if (!settled && !wait.aborted) {
    // The first request gave the key up (it did nothing): this one runs.
    return idempotent(store, key, request, now, work);
  }
  return { kind: "in_progress" };
}
