/**
 * The backend surface's one error model: every error leaves as JSON with `detail` (FastAPI
 * style, as the clients of the original service expect), mapped here and nowhere else.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, Env } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Logger } from "../../infra/logger.ts";
import type { AuthOutcome, RegisterOutcome } from "../../domain/api_keys.ts";

export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly body: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body.detail === "string" ? body.detail : `HTTP ${status}`);
    this.name = "ApiError";
  }
}

export const fail = (
  status: ContentfulStatusCode,
  detail: unknown,
  extra: Record<string, unknown> = {},
) => new ApiError(status, { detail, ...extra });

/** How each refused authentication answers: 401, or 429 with Retry-After while locked out. */
export function authError(outcome: Extract<AuthOutcome, { ok: false }>): ApiError {
  return outcome.reason === "locked_out"
    ? new ApiError(429, { detail: outcome.detail }, { "Retry-After": String(outcome.retryAfter) })
    : new ApiError(401, { detail: outcome.detail });
}

/** The status of each first-key registration outcome. */
export const REGISTER_STATUS = {
  registered: 201,
  key_too_short: 400,
  already_configured: 409,
} as const satisfies Record<RegisterOutcome["outcome"], ContentfulStatusCode>;

/** The status of each refused key change (activate, deactivate, delete). */
export const KEY_CHANGE_STATUS = { not_found: 404, last_active: 409 } as const;

interface Issue {
  path: PropertyKey[];
  message: string;
  code: string;
}

const LOCATION: Record<string, string> = {
  json: "body",
  query: "query",
  param: "path",
  header: "header",
};

/** The 422 body, one entry per failing field: `{detail:[{loc, msg, type}]}`. */
export function validationError(target: string, issues: readonly Issue[]): ApiError {
  return new ApiError(422, {
    detail: issues.map((issue) => ({
      loc: [
        LOCATION[target] ?? target,
        ...issue.path.map((p) => typeof p === "number" ? p : String(p)),
      ],
      msg: issue.message,
      type: issue.code,
    })),
  });
}

export function validationResponse(c: Context, target: string, issues: readonly Issue[]) {
  const error = validationError(target, issues);
  return c.json(error.body, 422);
}

/** Every OpenAPIHono of this surface is made here, so all share the validation hook. */
export function backendRouter<E extends Env = Env>(): OpenAPIHono<E> {
  return new OpenAPIHono<E>({
    defaultHook: (result, c) => {
      if (!result.success) return validationResponse(c, result.target, result.error.issues);
    },
  });
}

export function errorHandler(logger: Logger) {
  return (error: Error, c: Context): Response => {
    if (error instanceof ApiError) return c.json(error.body, error.status, error.headers);
    if (error instanceof HTTPException) {
      const status = error.status as ContentfulStatusCode;
      const detail = status === 413
        ? "Request body too large (limit 1 MiB)."
        : error.message || "Bad request";
      return c.json({ detail }, status);
    }
    if (error?.name === "BadResource" || /request body/i.test(error?.message ?? "")) {
      // The client went away or broke the body mid-way: their fault, not ours.
      return c.json({ detail: "The request body could not be read completely." }, 400);
    }
    logger.log("error", "Unhandled error", {
      path: new URL(c.req.url).pathname,
      method: c.req.method,
      error: error?.message,
      stack: error?.stack,
    });
    return c.json({ detail: "Internal server error" }, 500);
  };
}
