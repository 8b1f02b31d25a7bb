/**
 * Stored (generated) hypervisor schema versions in Deno KV.
 *
 * A schema is ~4 MB of JSON, far over KV's 64 KiB value limit, so its text is gzip-compressed
 * (CompressionStream) and split into chunks under a random blob id. Chunks are written first,
 * in atomic batches; the manifest is written last with a check that the label is still free,
 * so a reader never sees a manifest whose chunks are incomplete. A failed or lost race deletes
 * the chunks it wrote.
 */
import {
  MAX_STORED_VERSIONS,
  type SaveResult,
  type SchemaVersionStore,
  type StoredSchemaVersion,
} from "../ports.ts";
import { keys } from "./keys.ts";
import { gunzip, gzip, readChunks, writeChunks } from "./chunks.ts";

export { MAX_STORED_VERSIONS };
export type { SaveResult, SchemaVersionStore, StoredSchemaVersion };

export class SchemaIntegrityError extends Error {
  constructor(version: string, why: string) {
    super(`stored schema version ${version} is damaged: ${why}`);
    this.name = "SchemaIntegrityError";
  }
}

export async function sha256Hex(data: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", data as Uint8Array<ArrayBuffer>);
  return new Uint8Array(digest).toHex();
}

export class KvSchemaVersionStore implements SchemaVersionStore {
  constructor(private readonly kv: Deno.Kv) {}

  async list(): Promise<StoredSchemaVersion[]> {
    const out: StoredSchemaVersion[] = [];
    for await (
      const entry of this.kv.list<StoredSchemaVersion>({
        prefix: keys.hypervisorSchemaVersionPrefix(),
      })
    ) out.push(entry.value);
    return out.sort((a, b) => a.created_at.localeCompare(b.created_at));
  }

  async get(version: string): Promise<StoredSchemaVersion | null> {
    return (await this.kv.get<StoredSchemaVersion>(keys.hypervisorSchemaVersion(version))).value;
  }

  async save(
    meta: Omit<StoredSchemaVersion, "sha256" | "bytes" | "stored_bytes" | "chunks" | "blob">,
    text: string,
  ): Promise<SaveResult> {
    const manifestKey = keys.hypervisorSchemaVersion(meta.version);
    if ((await this.kv.get(manifestKey)).versionstamp !== null) {
      return { ok: false, reason: "conflict" };
    }
    if ((await this.list()).length >= MAX_STORED_VERSIONS) return { ok: false, reason: "limit" };
    const raw = new TextEncoder().encode(text);
    const compressed = await gzip(raw);
    const blob = crypto.randomUUID();
    try {
      const chunks = await writeChunks(
        this.kv,
        compressed,
        (i) => keys.hypervisorSchemaChunk(blob, i),
      );
      const record: StoredSchemaVersion = {
        ...meta,
        sha256: await sha256Hex(raw),
        bytes: raw.length,
        stored_bytes: compressed.length,
        chunks,
        blob,
      };
      // The flip: the manifest appears only if the label is still free.
      const res = await this.kv.atomic()
        .check({ key: manifestKey, versionstamp: null })
        .set(manifestKey, record)
        .commit();
      if (!res.ok) {
        await this.#deleteChunks(blob);
        return { ok: false, reason: "conflict" };
      }
      return { ok: true, record };
    } catch (err) {
      await this.#deleteChunks(blob);
      throw err;
    }
  }

  async loadText(version: string): Promise<string | null> {
    const record = await this.get(version);
    if (!record) return null;
    const compressed = await readChunks(
      this.kv,
      keys.hypervisorSchemaChunkPrefix(record.blob),
      record.chunks,
    );
    if ("missing" in compressed) throw new SchemaIntegrityError(version, compressed.missing);
    let raw: Uint8Array;
    try {
      raw = await gunzip(compressed);
    } catch {
      throw new SchemaIntegrityError(version, "cannot decompress");
    }
    if ((await sha256Hex(raw)) !== record.sha256) {
      throw new SchemaIntegrityError(version, "digest mismatch");
    }
    return new TextDecoder().decode(raw);
  }

  async delete(version: string): Promise<boolean> {
    const entry = await this.kv.get<StoredSchemaVersion>(keys.hypervisorSchemaVersion(version));
    if (!entry.value) return false;
    const res = await this.kv.atomic().check(entry).delete(entry.key).commit();
    if (!res.ok) return false;
    await this.#deleteChunks(entry.value.blob);
    return true;
  }

  async #deleteChunks(blob: string): Promise<void> {
    let op = this.kv.atomic();
    let n = 0;
    for await (const entry of this.kv.list({ prefix: keys.hypervisorSchemaChunkPrefix(blob) })) {
      op.delete(entry.key);
      if (++n % 500 === 0) {
        await op.commit();
        op = this.kv.atomic();
      }
    }
    if (n % 500 !== 0) await op.commit();
  }
}
