import { keys } from "./keys.ts";

/**
 * Reads the next id of a named sequence. The caller commits `counter.set(next)` in the same
 * atomic as the insert, checked against `versionstamp`, so two writers never share an id.
 */
export async function readSequence(
  kv: Deno.Kv,
  name: string,
): Promise<{ next: number; key: Deno.KvKey; versionstamp: string | null }> {
  const key = keys.counter(name);
  const entry = await kv.get<number>(key);
  return { next: (entry.value ?? 0) + 1, key, versionstamp: entry.versionstamp };
}

/**
 * How long an optimistic atomic keeps trying. Every lost attempt means another writer's commit
 * went through, so the store is making progress; with dozens of writers on one hot key (an id
 * sequence under 200 clients) a fixed count of attempts ran out while the store was busy, not
 * stuck, and answered 500.
 */
const RETRY_BUDGET_MS = 15_000;

/** Retries an optimistic atomic (at least 64 attempts, then until the time budget is spent). */
export async function retryAtomic<T>(attempt: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + RETRY_BUDGET_MS;
  for (let i = 0;; i++) {
    const result = await attempt();
    if (result !== undefined) return result;
    if (i >= 63 && Date.now() > deadline) {
      throw new Error(`storage contention: gave up after ${i + 1} attempts`);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** i)));
  }
}

/** Collects every value under a prefix (KV lists in batches; this drains them). */
export async function listValues<T>(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
  reverse = false,
): Promise<T[]> {
  const out: T[] = [];
  for await (const entry of kv.list<T>({ prefix }, { reverse })) out.push(entry.value);
  return out;
}
