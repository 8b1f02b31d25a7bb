import { z } from "@hono/zod-openapi";

export const Detail = z.object({ detail: z.string() }).openapi("Detail");

export const ValidationError = z.object({
  detail: z.array(z.object({
    loc: z.array(z.union([z.string(), z.number()])),
    msg: z.string(),
    type: z.string(),
  })),
}).openapi("ValidationError");

export const LastActiveConflict = z.object({
  detail: z.object({ code: z.literal("last_active_api_key_required"), message: z.string() }),
}).openapi("LastActiveConflict");

export const KeyRecord = z.object({
  id: z.number().int(),
  label: z.string(),
  is_active: z.boolean(),
  created_at: z.number().openapi({ description: "Seconds since the Unix epoch" }),
}).openapi("ApiKey");

export const CredentialUndecryptable = z.object({
  reason: z.literal("credential_undecryptable"),
  detail: z.string(),
}).openapi("CredentialUndecryptable");

export const EncryptionKeyUnavailable = z.object({
  reason: z.literal("encryption_key_unavailable"),
  detail: z.string(),
}).openapi("EncryptionKeyUnavailable");

/** A positive integer id in the path; a bad one is a 422 that names the parameter. */
export function pathId(name = "id") {
  const message = `path parameter ${name} must be a positive integer`;
  return z.coerce.number({ error: message }).int({ error: message }).min(1, { error: message })
    .max(Number.MAX_SAFE_INTEGER, { error: `path parameter ${name} is too large` })
    .openapi({ param: { name, in: "path" }, example: 1 });
}

export function jsonContent<T extends z.ZodType>(schema: T, description: string) {
  return { content: { "application/json": { schema } }, description };
}

export function jsonBody<T extends z.ZodType>(schema: T) {
  return { body: { content: { "application/json": { schema } }, required: true } };
}

/** Answers every authenticated route can give, declared once for the OpenAPI document. */
export const ErrorResponses = {
  401: jsonContent(Detail, "Missing, invalid or unknown API key"),
  413: jsonContent(Detail, "Body over 1 MiB"),
  415: jsonContent(Detail, "Body is not JSON"),
  422: jsonContent(ValidationError, "Validation failed"),
  429: jsonContent(Detail, "Locked out after repeated failures"),
} as const;
