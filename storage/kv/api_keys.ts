import type { ApiKeyRecord, ApiKeyStore, KeyChange } from "../ports.ts";
import { keys } from "./keys.ts";
import { readSequence, retryAtomic } from "./ids.ts";

const SEQUENCE = "api_keys";

/**
 * API keys live under their digest, so authenticating is one read whatever the number of
 * keys. An id index points back at the digest; a counter of active keys backs the
 * last-active-key guard, checked in the same atomic as every change that could break it.
 */
export class KvApiKeyStore implements ApiKeyStore {
  constructor(private readonly kv: Deno.Kv, private readonly pollMs?: number) {}

  async isClaimed(): Promise<boolean> {
    return (await this.kv.get(keys.apiKeyClaim())).value === true;
  }

  async lookup(digest: string): Promise<{ claimed: boolean; record: ApiKeyRecord | null }> {
    const [claim, record] = await this.kv.getMany<[boolean, ApiKeyRecord]>([
      keys.apiKeyClaim(),
      keys.apiKeyByDigest(digest),
    ]);
    return { claimed: claim.value === true, record: record.value };
  }

  claimFirst(digest: string, label: string, createdAt: number): Promise<ApiKeyRecord | null> {
    return retryAtomic(async () => {
      const claim = await this.kv.get(keys.apiKeyClaim());
      if (claim.value === true) return null;
      const seq = await readSequence(this.kv, SEQUENCE);
      const record: ApiKeyRecord = {
        id: seq.next,
        label,
        is_active: true,
        created_at: createdAt,
        digest,
      };
      const result = await this.kv.atomic()
        .check(claim)
        .check({ key: seq.key, versionstamp: seq.versionstamp })
        .check({ key: keys.apiKeyByDigest(digest), versionstamp: null })
        .set(keys.apiKeyClaim(), true)
        .set(seq.key, seq.next)
        .set(keys.apiKeyByDigest(digest), record)
        .set(keys.apiKeyIdIndex(record.id), digest)
        .set(keys.apiKeyActiveCount(), 1)
        .set(keys.apiKeyGeneration(), crypto.randomUUID())
        .commit();
      return result.ok ? record : undefined;
    });
  }

  create(digest: string, label: string, createdAt: number): Promise<ApiKeyRecord> {
    return retryAtomic(async () => {
      const seq = await readSequence(this.kv, SEQUENCE);
      const count = await this.kv.get<number>(keys.apiKeyActiveCount());
      const record: ApiKeyRecord = {
        id: seq.next,
        label,
        is_active: true,
        created_at: createdAt,
        digest,
      };
      const result = await this.kv.atomic()
        .check({ key: seq.key, versionstamp: seq.versionstamp })
        .check(count)
        .check({ key: keys.apiKeyByDigest(digest), versionstamp: null })
        .set(keys.apiKeyClaim(), true)
        .set(seq.key, seq.next)
        .set(keys.apiKeyByDigest(digest), record)
        .set(keys.apiKeyIdIndex(record.id), digest)
        .set(keys.apiKeyActiveCount(), (count.value ?? 0) + 1)
        .set(keys.apiKeyGeneration(), crypto.randomUUID())
        .commit();
      return result.ok ? record : undefined;
    });
  }

  async get(id: number): Promise<ApiKeyRecord | null> {
    return (await this.#load(id))?.record.value ?? null;
  }

  async list(): Promise<ApiKeyRecord[]> {
    const digests: string[] = [];
    for await (
      const entry of this.kv.list<string>({ prefix: keys.apiKeyIdIndexPrefix() }, { reverse: true })
    ) {
      digests.push(entry.value);
    }
    const out: ApiKeyRecord[] = [];
    // getMany takes at most 10 keys per call.
    for (let i = 0; i < digests.length; i += 10) {
      const batch = await this.kv.getMany<ApiKeyRecord[]>(
        digests.slice(i, i + 10).map((d) => keys.apiKeyByDigest(d)),
      );
      for (const entry of batch) if (entry.value) out.push(entry.value);
    }
    return out;
  }

  setActive(id: number, active: boolean): Promise<KeyChange> {
    return retryAtomic(async () => {
      const loaded = await this.#load(id);
      if (!loaded) return { ok: false, reason: "not_found" } as const;
      const { record, index, count } = loaded;
      const current = record.value;
      if (current.is_active === active) return { ok: true, record: current } as const;
      const activeCount = count.value ?? 0;
      if (!active && activeCount <= 1) return { ok: false, reason: "last_active" } as const;
      const updated = { ...current, is_active: active };
      const result = await this.kv.atomic()
        .check(record).check(index).check(count)
        .set(record.key, updated)
        .set(count.key, activeCount + (active ? 1 : -1))
        .set(keys.apiKeyGeneration(), crypto.randomUUID())
        .commit();
      return result.ok ? { ok: true, record: updated } as const : undefined;
    });
  }

  delete(id: number): Promise<KeyChange> {
    return retryAtomic(async () => {
      const loaded = await this.#load(id);
      if (!loaded) return { ok: false, reason: "not_found" } as const;
      const { record, index, count } = loaded;
      const activeCount = count.value ?? 0;
      if (record.value.is_active && activeCount <= 1) {
        return { ok: false, reason: "last_active" } as const;
      }
      const result = await this.kv.atomic()
        .check(record).check(index).check(count)
        .delete(record.key)
        .delete(index.key)
        .set(count.key, activeCount - (record.value.is_active ? 1 : 0))
        .set(keys.apiKeyGeneration(), crypto.randomUUID())
        .commit();
      return result.ok ? { ok: true, record: record.value } as const : undefined;
    });
  }

  async watch(onChange: () => void, signal?: AbortSignal): Promise<void> {
    if (this.pollMs) void this.#poll(this.pollMs, onChange, signal);
    const stream = this.kv.watch([keys.apiKeyGeneration()]);
    const reader = stream.getReader();
    const stop = () => reader.cancel().catch(() => {});
    signal?.addEventListener("abort", stop, { once: true });
    try {
      while (true) {
        const { done } = await reader.read();
        if (done) return;
        onChange();
      }
    } catch {
      // The store closed under the watch: nothing left to invalidate.
    } finally {
      signal?.removeEventListener("abort", stop);
    }
  }

  /** Another process's key change, seen on a shared KV file where watches stay local. */
  async #poll(everyMs: number, onChange: () => void, signal?: AbortSignal): Promise<void> {
    let seen: string | null = null;
    try {
      seen = (await this.kv.get<string>(keys.apiKeyGeneration())).versionstamp;
      while (!signal?.aborted) {
        await new Promise((resolve) => Deno.unrefTimer(setTimeout(resolve, everyMs)));
        const now = (await this.kv.get<string>(keys.apiKeyGeneration())).versionstamp;
        if (now !== seen) {
          seen = now;
          onChange();
        }
      }
    } catch {
      // The store closed: nothing left to invalidate.
    }
  }

  async #load(id: number) {
    const index = await this.kv.get<string>(keys.apiKeyIdIndex(id));
    if (index.value === null) return null;
    const [record, count] = await this.kv.getMany<[ApiKeyRecord, number]>([
      keys.apiKeyByDigest(index.value),
      keys.apiKeyActiveCount(),
    ]);
    if (record.value === null) return null;
    return {
      index,
      record: record as Deno.KvEntry<ApiKeyRecord>,
      count: count as Deno.KvEntryMaybe<number>,
    };
  }
}
