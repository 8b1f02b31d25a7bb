/**
 * Request bodies of the hypervisor mounts, read the way pveproxy takes them and bounded:
 *
 * - `application/x-www-form-urlencoded` (what Proxmox clients send, also when no type is
 *   given) and `application/json`: at most MAX_BODY_BYTES, counted while reading (a body
 *   without Content-Length is cut off as well) → BodyTooLarge;
 * - `multipart/form-data` (file uploads: proxmoxer's `upload`, the bpg provider): parsed as a
 *   stream; text fields become parameters (bounded like a form), file parts are counted and
 *   discarded, so an ISO upload never sits in memory. Each file field becomes its file name,
 *   with `{name, size}` reported beside the parameters.
 */
import type { RawParams } from "../../domain/hypervisor_schema/validate.ts";
import { BodyTooLarge, readLimitedBytes } from "../_lib/body.ts";

export { BodyTooLarge };

/** Largest form or JSON body (and the sum of multipart text fields). */
export const MAX_BODY_BYTES = 1024 * 1024;

export class BodyError extends Error {}

export interface UploadedFile {
  name: string;
  size: number;
}

export interface ParsedBody {
  params: RawParams;
  files: Record<string, UploadedFile>;
}

export function addParam(out: RawParams, k: string, v: unknown): void {
  // Own data properties only: `toString=1` or `__proto__=x` are parameters (refused as
  // unknown), never Object.prototype members or a prototype change.
  const own = Object.hasOwn(out, k);
  if (own && Array.isArray(out[k])) (out[k] as unknown[]).push(v);
  else {
    const value = own ? [out[k], v] : v;
    Object.defineProperty(out, k, { value, enumerable: true, writable: true, configurable: true });
  }
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** The body as text, refusing more than `limit` bytes (declared or actually sent). */
export async function readLimitedText(req: Request, limit = MAX_BODY_BYTES): Promise<string> {
  return decoder.decode(await readLimitedBytes(req, limit));
}

/** Parameters of a request body (query parameters are not included). */
/** A JSON request body, which must be one object. */
export function jsonObjectBody(text: string): RawParams {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new BodyError("request body is not valid JSON");
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new BodyError("request body must be a JSON object");
  }
  return parsed as RawParams;
}

export async function readBody(req: Request): Promise<ParsedBody> {
  const files: Record<string, UploadedFile> = {};
  if (req.method === "GET" || req.method === "HEAD" || !req.body) return { params: {}, files };
  const type = (req.headers.get("content-type") ?? "").toLowerCase();
  if (type.startsWith("multipart/form-data")) {
    const m = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(
      req.headers.get("content-type") ?? "",
    );
    const boundary = m?.[1] ?? m?.[2];
    if (!boundary || boundary.length > 200) {
      await req.body.cancel().catch(() => {});
      throw new BodyError("multipart body without a boundary");
    }
    return await readMultipart(req.body, boundary);
  }
  const text = await readLimitedText(req);
  if (!text.trim()) return { params: {}, files };
  if (type.includes("application/json")) {
    return { params: jsonObjectBody(text), files };
  }
  const params: RawParams = {};
  for (const [k, v] of new URLSearchParams(text)) addParam(params, k, v);
  return { params, files };
}

function indexOf(hay: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0];
  const last = hay.length - needle.length;
  for (let i = hay.indexOf(first, from); i >= 0 && i <= last; i = hay.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (!a.length) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function dispositionParam(header: string, name: string): string | undefined {
  const re = new RegExp(`(?:^|;)\\s*${name}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;]*))`, "i");
  const m = re.exec(header);
  if (!m) return undefined;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2].trim();
}

const MAX_HEADER_BYTES = 16 * 1024;
const CRLF = encoder.encode("\r\n");
const HEADER_END = encoder.encode("\r\n\r\n");

interface Part {
  name: string;
  filename?: string;
  chunks: Uint8Array[];
  size: number;
}

/** Streaming multipart/form-data reader; file contents are counted, not kept. */
export async function readMultipart(
  body: ReadableStream<Uint8Array>,
  boundary: string,
  fieldLimit = MAX_BODY_BYTES,
): Promise<ParsedBody> {
  const params: RawParams = {};
  const files: Record<string, UploadedFile> = {};
  const delimiter = encoder.encode(`\r\n--${boundary}`);
  // The leading CRLF lets the first boundary (which has none) match the delimiter.
  let buf: Uint8Array = CRLF.slice();
  type State = "preamble" | "delimiter" | "headers" | "body" | "done";
  let state = "preamble" as State;
  /** `state` as the loop sees it (step() changes it behind the compiler's back). */
  const current = (): State => state;
  let part: Part | undefined;
  let fieldBytes = 0;
  const reader = body.getReader();

  const keep = (p: Part, bytes: Uint8Array) => {
    if (!bytes.length) return;
    p.size += bytes.length;
    if (p.filename !== undefined) return;
    fieldBytes += bytes.length;
    if (fieldBytes > fieldLimit) {
      throw new BodyTooLarge(fieldLimit, "bytes of fields");
    }
    p.chunks.push(bytes.slice());
  };
  const finish = (p: Part) => {
    if (p.filename !== undefined) {
      files[p.name] = { name: p.filename, size: p.size };
      addParam(params, p.name, p.filename);
      return;
    }
    const all = new Uint8Array(p.size);
    let at = 0;
    for (const c of p.chunks) {
      all.set(c, at);
      at += c.length;
    }
    addParam(params, p.name, decoder.decode(all));
  };

  /** Consumes what the buffer allows; false when more input is needed. */
  const step = (): boolean => {
    switch (state) {
      case "preamble": {
        const at = indexOf(buf, delimiter, 0);
        if (at < 0) {
          buf = buf.slice(Math.max(0, buf.length - delimiter.length + 1));
          return false;
        }
        buf = buf.slice(at + delimiter.length);
        state = "delimiter";
        return true;
      }
      case "delimiter": {
        if (buf.length < 2) return false;
        if (buf[0] === 0x2d && buf[1] === 0x2d) {
          state = "done";
          return false;
        }
        const eol = indexOf(buf, CRLF, 0);
        if (eol < 0) {
          if (buf.length > 256) throw new BodyError("malformed multipart boundary line");
          return false;
        }
        if (decoder.decode(buf.subarray(0, eol)).trim() !== "") {
          throw new BodyError("malformed multipart boundary line");
        }
        buf = buf.slice(eol + 2);
        state = "headers";
        return true;
      }
      case "headers": {
        // A part without headers starts with the blank line directly.
        const end = buf[0] === 0x0d && buf[1] === 0x0a ? -2 : indexOf(buf, HEADER_END, 0);
        if (end === -1) {
          if (buf.length > MAX_HEADER_BYTES) throw new BodyError("multipart part headers too long");
          return false;
        }
        const text = end < 0 ? "" : decoder.decode(buf.subarray(0, end));
        buf = buf.slice(end < 0 ? 2 : end + 4);
        let disposition = "";
        for (const line of text.split("\r\n")) {
          const colon = line.indexOf(":");
          if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === "content-disposition") {
            disposition = line.slice(colon + 1);
          }
        }
        const name = dispositionParam(disposition, "name");
        if (!name) throw new BodyError("multipart part without a field name");
        part = { name, filename: dispositionParam(disposition, "filename"), chunks: [], size: 0 };
        state = "body";
        return true;
      }
      case "body": {
        const at = indexOf(buf, delimiter, 0);
        if (at < 0) {
          const safe = buf.length - delimiter.length + 1;
          if (safe > 0) {
            keep(part!, buf.subarray(0, safe));
            buf = buf.slice(safe);
          }
          return false;
        }
        keep(part!, buf.subarray(0, at));
        finish(part!);
        part = undefined;
        buf = buf.slice(at + delimiter.length);
        state = "delimiter";
        return true;
      }
      default:
        return false;
    }
  };

  try {
    while (current() !== "done") {
      let progressed = step();
      while (progressed) progressed = step();
      if (current() === "done") break;
      const { done, value } = await reader.read();
      if (done) throw new BodyError("multipart body ends before its closing boundary");
      buf = concat(buf, value);
    }
    // The epilogue after the closing boundary carries nothing.
    await reader.cancel().catch(() => {});
  } catch (err) {
    await reader.cancel().catch(() => {});
    throw err;
  } finally {
    reader.releaseLock();
  }
  return { params, files };
}
