/**
 * Values over KV's 64 KiB limit (a stored hypervisor schema, a sync ledger): gzip-compressed
 * (CompressionStream) and split into chunks, written in atomic batches under a key per index.
 * The stores that use this write their chunks first and the record naming them last, so a reader
 * never sees a record whose chunks are incomplete.
 */

/** Under KV's 64 KiB value limit with room to spare. */
export const CHUNK_BYTES = 60 * 1024;
/** Chunks per atomic commit: 10 × 60 KiB stays under the 800 KiB total mutation size. */
const CHUNKS_PER_COMMIT = 10;

async function pipeThrough(data: Uint8Array, stream: GenericTransformStream): Promise<Uint8Array> {
  const out = new Response(
    new Blob([data as Uint8Array<ArrayBuffer>]).stream().pipeThrough(stream),
  );
  return new Uint8Array(await out.arrayBuffer());
}

export const gzip = (data: Uint8Array) => pipeThrough(data, new CompressionStream("gzip"));
/** Throws on damaged input (gzip's CRC-32 and length check). */
export const gunzip = (data: Uint8Array) => pipeThrough(data, new DecompressionStream("gzip"));

/** Writes `data` in chunks under `keyOf(index)`; how many chunks (at least one). */
export async function writeChunks(
  kv: Deno.Kv,
  data: Uint8Array,
  keyOf: (index: number) => Deno.KvKey,
): Promise<number> {
  const chunks = Math.max(1, Math.ceil(data.length / CHUNK_BYTES));
  for (let first = 0; first < chunks; first += CHUNKS_PER_COMMIT) {
    const op = kv.atomic();
    for (let i = first; i < Math.min(chunks, first + CHUNKS_PER_COMMIT); i++) {
      op.set(keyOf(i), data.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES));
    }
    if (!(await op.commit()).ok) throw new Error("chunk write was not committed");
  }
  return chunks;
}

/**
 * The chunks under `prefix` in key order, joined; or why they cannot be (a chunk missing, fewer
 * than `count`).
 */
export async function readChunks(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
  count: number,
): Promise<Uint8Array | { missing: string }> {
  const parts: Uint8Array[] = [];
  for await (const entry of kv.list<Uint8Array>({ prefix })) {
    if (entry.key[entry.key.length - 1] !== parts.length) {
      return { missing: `chunk ${parts.length} is missing` };
    }
    parts.push(entry.value);
  }
  if (parts.length !== count) return { missing: `${parts.length} of ${count} chunks` };
  const joined = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    joined.set(p, at);
    at += p.length;
  }
  return joined;
}
