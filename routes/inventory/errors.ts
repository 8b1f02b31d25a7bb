/**
 * The inventory surface's one error model: handlers throw ApiError (or return engine
 * results mapped by `fromWrite`), and createInventoryApp's onError turns everything else
 * into a bodyless 500 with a log line, never a stack trace.
 */
import type { Context } from "hono";
import { AUTH_MESSAGES, can } from "../../domain/netbox/tokens.ts";
import {
  type AuthInfo,
  type ModelDef,
  objectNameOf,
  type WriteRefusal,
} from "../../domain/netbox/types.ts";
import { BodyTooLarge, readLimitedBytes } from "../_lib/body.ts";

export const MAX_BODY_BYTES = 1024 * 1024;
/** Objects one bulk request (a JSON list) may hold: the work and the error list stay bounded. */
export const MAX_BULK_ITEMS = 1000;

export function bulkTooLarge(count: number): { detail: string } {
  return { detail: `A bulk request may hold at most ${MAX_BULK_ITEMS} objects (got ${count}).` };
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    /** Headers the error answer carries (a 412's current ETag). */
    readonly headers: Record<string, string> = {},
  ) {
    super(
      typeof body === "object" && body && "detail" in body
        ? String((body as { detail: unknown }).detail)
        : "error",
    );
    this.name = "ApiError";
  }
}

/** The status each refused engine write answers with (field errors are always a 400). */
export const WRITE_REFUSAL_STATUS = {
  not_found: 404,
  not_allowed: 405,
  conflict: 409,
  forbidden: 403,
  precondition_failed: 412,
} as const satisfies Record<WriteRefusal, number>;

export const notFound = () => new ApiError(404, { detail: "Not found." });
/**
 * An object asked for by an id no object of the model has: NetBox 4.6 answers Django's
 * get_object_or_404 text, which DRF passes on ("No VirtualMachine matches the given query.");
 * an id that is no number stays "Not found." (docs/api-behaviour.md, "Inventory: errors").
 */
export const noObject = (def: ModelDef) =>
  new ApiError(404, { detail: `No ${objectNameOf(def)} matches the given query.` });
export const forbidden = () => new ApiError(403, { detail: AUTH_MESSAGES.denied });
export const methodNotAllowed = (method: string) =>
  new ApiError(405, { detail: `Method "${method}" not allowed.` });

/** Throws 403 unless the token holds `permission` (and write_enabled for write actions). */
export function requirePermission(auth: AuthInfo | undefined, permission: string): void {
  if (!can(auth, permission)) throw forbidden();
}

async function readLimited(request: Request, limit: number): Promise<string> {
  let bytes: Uint8Array;
  try {
    bytes = await readLimitedBytes(request, limit);
  } catch (error) {
    if (!(error instanceof BodyTooLarge)) throw error;
    throw new ApiError(413, { detail: `Request body too large (limit ${limit} bytes).` });
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new ApiError(400, { detail: "JSON parse error - body is not valid UTF-8" });
  }
}

/**
 * The JSON body of a request (size-limited to 1 MiB). Malformed JSON → 400
 * `{"detail":"JSON parse error - ..."}`; a non-JSON content type → 415. Empty → undefined.
 */
export function readJson(c: Context): Promise<unknown> {
  return readJsonBody(c.req.raw);
}

/** readJson for code that holds the Request itself (the plugin's own routes). */
export async function readJsonBody(request: Request): Promise<unknown> {
  const type = request.headers.get("content-type") ?? "";
  const text = await readLimited(request, MAX_BODY_BYTES);
  if (text.trim() === "") return undefined;
  if (type && !/json/i.test(type)) {
    throw new ApiError(415, {
      detail: `Unsupported media type "${type.split(";")[0]}" in request.`,
    });
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ApiError(400, {
      detail: `JSON parse error - ${error instanceof Error ? error.message : "invalid JSON"}`,
    });
  }
}
