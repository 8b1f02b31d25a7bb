import type { Context } from "hono";
import { ApiError } from "./errors.ts";

export const ACTOR_HEADER = "X-Service-Actor";
export const DEFAULT_ACTOR = "service";
const MAX_ACTOR_CHARS = 200;

/** Who asked: `X-Service-Actor`, trimmed, or "service" when absent or blank. */
export function actorOf(c: Context): string {
  const raw = c.req.header(ACTOR_HEADER)?.trim() ?? "";
  if (!raw) return DEFAULT_ACTOR;
  const control = [...raw].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f);
  if (raw.length > MAX_ACTOR_CHARS || control) {
    throw new ApiError(400, {
      reason: "invalid_actor",
      detail: `${ACTOR_HEADER} must be 1-${MAX_ACTOR_CHARS} printable characters`,
    });
  }
  return raw;
}
