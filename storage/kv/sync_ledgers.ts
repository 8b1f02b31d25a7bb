/**
 * The sync's ledgers saved between runs (docs/sync.md, "The ledger across restarts and
 * processes"). A ledger of 100,000 guests is tens of megabytes, far over KV's 64 KiB value
 * limit: its state is gzip-compressed (CompressionStream) and split into chunks under a random
 * blob id, written first; the head naming the blob is written last, checked against the head
 * the saver saw, so a reader never sees a head whose chunks are incomplete and two savers never
 * both win. The saver then deletes the ledger's other blobs (the one it replaced, and any a
 * saver that died left). Runs of one endpoint are one at a time (its run hold), so no save
 * starts between a save's head and its sweep; a load that meets chunks swept under it reads as
 * nothing saved.
 */
import { OWN_REQUEST_DAYS, type SyncLedgerStore } from "../ports.ts";
import { keys } from "./keys.ts";
import { sha256Hex } from "./schema_versions.ts";
import { gunzip, gzip, readChunks, writeChunks } from "./chunks.ts";

/** Deletes per atomic commit (KV allows 1,000 mutations). */
const DELETES_PER_COMMIT = 500;
/** KV's getMany reads at most 10 keys per call. */
const READ_BATCH = 10;
/** Request ids looked up at once (their batches sent together). */
const LOOKUPS_IN_FLIGHT = 50;

interface LedgerHead {
  blob: string;
  chunks: number;
  /** The state's length before and after compression. */
  bytes: number;
  stored_bytes: number;
  saved_at: number;
}

export class KvSyncLedgerStore implements SyncLedgerStore {
  constructor(private readonly kv: Deno.Kv, private readonly now: () => number) {}

  /** The key's hash: an inventory's address may be long, a KV key may not. */
  #hash(key: string): Promise<string> {
    return sha256Hex(new TextEncoder().encode(key));
  }

  async load(
    key: string,
    known: string | null,
  ): Promise<{ tag: string; state: Uint8Array } | "unchanged" | null> {
    const hash = await this.#hash(key);
    const head = (await this.kv.get<LedgerHead>(keys.syncLedgerHead(hash))).value;
    if (!head) return null;
    if (head.blob === known) return "unchanged";
    // A chunk missing: swept under this load by a newer save.
    const compressed = await readChunks(
      this.kv,
      keys.syncLedgerChunkPrefix(hash, head.blob),
      head.chunks,
    );
    if ("missing" in compressed) return null;
    try {
      // gzip's own check (CRC-32 and length) refuses damaged bytes.
      const state = await gunzip(compressed);
      return state.length === head.bytes ? { tag: head.blob, state } : null;
    } catch {
      return null;
    }
  }

  async save(key: string, state: Uint8Array, previous: string | null): Promise<string | null> {
    const hash = await this.#hash(key);
    const headKey = keys.syncLedgerHead(hash);
    const head = await this.kv.get<LedgerHead>(headKey);
    if ((head.value?.blob ?? null) !== previous) return null;
    const compressed = await gzip(state);
    const blob = crypto.randomUUID();
    try {
      const chunks = await writeChunks(
        this.kv,
        compressed,
        (i) => keys.syncLedgerChunk(hash, blob, i),
      );
      const record: LedgerHead = {
        blob,
        chunks,
        bytes: state.length,
        stored_bytes: compressed.length,
        saved_at: this.now(),
      };
      // The flip: only over the head this save saw.
      const res = await this.kv.atomic().check(head).set(headKey, record).commit();
      if (!res.ok) {
        await this.#sweep(hash, (b) => b === blob);
        return null;
      }
    } catch (error) {
      await this.#sweep(hash, (b) => b === blob);
      throw error;
    }
    await this.#sweep(hash, (b) => b !== blob);
    return blob;
  }

  async noteOwn(inventory: string, requestId: string): Promise<void> {
    const key = keys.syncOwnRequest(await this.#hash(inventory), requestId);
    await this.kv.set(key, true, { expireIn: OWN_REQUEST_DAYS * 86_400_000 });
  }

  async ownOf(inventory: string, requestIds: readonly string[]): Promise<string[]> {
    const hash = await this.#hash(inventory);
    const found: string[] = [];
    for (let i = 0; i < requestIds.length; i += READ_BATCH * LOOKUPS_IN_FLIGHT) {
      const batches: Promise<Deno.KvEntryMaybe<unknown>[]>[] = [];
      const upTo = Math.min(requestIds.length, i + READ_BATCH * LOOKUPS_IN_FLIGHT);
      for (let j = i; j < upTo; j += READ_BATCH) {
        const ids = requestIds.slice(j, Math.min(upTo, j + READ_BATCH));
        batches.push(this.kv.getMany(ids.map((id) => keys.syncOwnRequest(hash, id))));
      }
      for (const entries of await Promise.all(batches)) {
        for (const entry of entries) if (entry.value) found.push(String(entry.key[3]));
      }
    }
    return found;
  }

  /** Deletes the chunks of this ledger's blobs that `doomed` names. */
  async #sweep(hash: string, doomed: (blob: string) => boolean): Promise<void> {
    let op = this.kv.atomic();
    let n = 0;
    for await (const entry of this.kv.list({ prefix: keys.syncLedgerChunkPrefix(hash) })) {
      if (!doomed(String(entry.key[entry.key.length - 2]))) continue;
      op.delete(entry.key);
      if (++n % DELETES_PER_COMMIT === 0) {
        await op.commit();
        op = this.kv.atomic();
      }
    }
    if (n % DELETES_PER_COMMIT !== 0) await op.commit();
  }
}
