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

/** Retries an optimistic atomic a bounded number of times; contention here is rare and brief. */
export async function retryAtomic<T>(attempt: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 64; i++) {
    const result = await attempt();
    if (result !== undefined) return result;
    await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** i)));
  }
  throw new Error("storage contention: gave up after 64 attempts");
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
