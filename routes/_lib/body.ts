/**
 * The one size-limited body reader every surface uses: the declared Content-Length is checked
 * first, then the bytes are counted while they arrive (a chunked body is cut off as well). Each
 * surface turns `BodyTooLarge` into its own 413 answer.
 *
 * @module
 * @example
 * ```ts
 * try {
 *   const bytes = await readLimitedBytes(request, 1024 * 1024);
 * } catch (error) {
 *   if (error instanceof BodyTooLarge) return tooLarge(error.limit);
 *   throw error;
 * }
 * ```
 */

export class BodyTooLarge extends Error {
  constructor(readonly limit: number, unit = "bytes") {
    super(`request too large (limit ${limit} ${unit})`);
    this.name = "BodyTooLarge";
  }
}

/** The body's bytes, refusing more than `limit` (declared or actually sent). */
export async function readLimitedBytes(request: Request, limit: number): Promise<Uint8Array> {
  const declared = Number(request.headers.get("content-length") ?? "");
  if (Number.isFinite(declared) && declared > limit) {
    await request.body?.cancel().catch(() => {});
    throw new BodyTooLarge(limit);
  }
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        throw new BodyTooLarge(limit);
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.length;
  }
  return all;
}
