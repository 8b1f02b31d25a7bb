/**
 * OpenAPI 3.1 path items of the plugin's own routes (routes/plugin/mod.ts), to merge into the
 * inventory document next to the generated model paths: `Object.assign(doc.paths,
 * pluginOpenApiPaths())`.
 */

import { jobOpenApiPaths } from "./jobs_openapi.ts";

type Schema = Record<string, unknown>;

const TAG = "plugins/service";
const err = {
  description: "Error",
  content: { "application/json": { schema: { type: "object" } } },
};
const ok = (schema: Schema, description = "OK") => ({
  description,
  content: { "application/json": { schema } },
});
const idParam = { name: "id", in: "path", required: true, schema: { type: "integer" } };

const lastPush: Schema = {
  type: ["object", "null"],
  properties: {
    ok: { type: "boolean" },
    error: { type: ["string", "null"] },
    status: { type: ["integer", "null"] },
    at: { type: "string", format: "date-time" },
  },
};

const settings: Schema = {
  type: "object",
  properties: {
    custom_fields_enabled: { type: "boolean" },
    has_encryption_key: { type: "boolean" },
    last_updated: { type: ["string", "null"], format: "date-time" },
  },
};

export function pluginOpenApiPaths(): Record<string, Schema> {
  const base = "/api/plugins/service";
  return {
    [`${base}/endpoints/hypervisor/{id}/status/`]: {
      get: {
        tags: [TAG],
        operationId: "service_hypervisorendpoint_status",
        summary:
          "Keepalive: contacts the hypervisor's /api2/json/version (disabled: not contacted)",
        parameters: [idParam],
        responses: {
          200: ok({
            type: "object",
            properties: {
              id: { type: "integer" },
              name: { type: "string" },
              status: {
                type: "string",
                enum: ["online", "offline", "unauthorized", "error", "disabled"],
              },
              version: { type: ["string", "null"] },
              release: { type: ["string", "null"] },
              repoid: { type: ["string", "null"] },
              detail: { type: "string" },
              checked_at: { type: "string", format: "date-time" },
            },
          }),
          403: err,
          404: err,
        },
      },
    },
    [`${base}/endpoints/hypervisor/{id}/ssh-secrets/`]: {
      get: {
        tags: [TAG],
        operationId: "service_hypervisorendpoint_ssh_secrets",
        summary:
          "SSH credentials for a terminal session (needs service.view_hypervisorendpoint and service.open_ssh_terminal on a write-enabled token)",
        parameters: [idParam],
        responses: {
          200: ok({
            type: "object",
            properties: {
              auth_method: { type: "string", enum: ["password", "key"] },
              username: { type: "string" },
              password: { type: "string" },
              private_key: { type: "string" },
            },
          }),
          403: err,
          404: err,
          409: { ...err, description: "Disabled endpoint, or secrets cannot be decrypted" },
          422: {
            ...err,
            description: "Incomplete credentials (e.g. token-only endpoint in reuse mode)",
          },
        },
      },
    },
    [`${base}/endpoints/{kind}/{id}/push/`]: {
      post: {
        tags: [TAG],
        operationId: "service_endpoint_push",
        summary: "Push the endpoint to the backend now (same as push-on-save)",
        parameters: [
          {
            name: "kind",
            in: "path",
            required: true,
            schema: { type: "string", enum: ["hypervisor", "inventory", "backend"] },
          },
          idParam,
        ],
        responses: {
          200: ok({ type: "object", properties: { id: { type: "integer" }, last_push: lastPush } }),
          403: err,
          404: err,
          409: { ...err, description: "Disabled endpoints are never pushed" },
        },
      },
    },
    [`${base}/endpoints/backend/{id}/token/`]: {
      post: {
        tags: [TAG],
        operationId: "service_backendendpoint_set_token",
        summary: "Use a key created on the backend (POST /auth/keys) as this endpoint's token",
        parameters: [idParam],
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["token"],
                properties: { token: { type: "string", minLength: 32, maxLength: 512 } },
              },
            },
          },
        },
        responses: {
          200: ok({
            type: "object",
            properties: { id: { type: "integer" }, token: { type: "string" }, last_push: lastPush },
          }),
          400: err,
          403: err,
          404: err,
        },
      },
    },
    [`${base}/settings/`]: {
      get: {
        tags: [TAG],
        operationId: "service_settings_retrieve",
        responses: { 200: ok(settings), 403: err },
      },
      patch: {
        tags: [TAG],
        operationId: "service_settings_partial_update",
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: {
                type: "object",
                properties: {
                  encryption_key: { type: ["string", "null"], writeOnly: true, minLength: 16 },
                  custom_fields_enabled: { type: "boolean" },
                },
                additionalProperties: false,
              },
            },
          },
        },
        responses: { 200: ok(settings), 400: err, 403: err },
      },
    },
    [`${base}/settings/runtime/`]: {
      get: {
        tags: [TAG],
        operationId: "service_settings_runtime",
        summary: "Settings plus encryption_key for tokens allowed to change settings",
        responses: {
          200: ok({
            ...settings,
            properties: {
              ...(settings.properties as Schema),
              encryption_key: { type: ["string", "null"] },
            },
          }),
          403: err,
        },
      },
    },
    [`${base}/bootstrap-status/`]: {
      get: {
        tags: [TAG],
        operationId: "service_bootstrap_status",
        summary: "Relay of the backend's GET /extras/bootstrap-status (needs view_backendendpoint)",
        responses: {
          200: {
            ...ok({ type: "object" }),
            description: "The backend's answer; without a backend endpoint, ok false with reason " +
              "backend_not_configured",
          },
          403: err,
          502: { ...err, description: "Backend unreachable" },
        },
      },
    },
    ...jobOpenApiPaths(base),
  };
}
