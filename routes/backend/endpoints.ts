import { createRoute, z } from "@hono/zod-openapi";
import {
  endpointLabel,
  type FieldIssue,
  publicHypervisorEndpoint,
  publicInventoryEndpoint,
  saveHypervisorEndpoint,
  saveInventoryEndpoint,
  type SaveResult,
  texts,
} from "../../domain/endpoints.ts";
import { CredentialError } from "../../domain/credentials.ts";
import { ApiError, backendRouter, fail } from "./errors.ts";
import type { BackendEnv, BackendServices } from "./context.ts";
import {
  CredentialUndecryptable,
  Detail,
  ErrorResponses,
  jsonBody,
  jsonContent,
} from "./schemas.ts";

const Host = z.string().min(1).max(253).regex(
  /^(\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]+|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)$/,
  "must be a host name or an IP address (no scheme, port or path)",
);
const Port = z.number().int().min(1).max(65535);
const Secret = z.string().max(4096);
const Id = z.object({
  id: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).openapi({
    param: { name: "id", in: "path" },
  }),
});

const InventoryInput = z.object({
  name: z.string().min(1).max(200),
  ip: Host,
  port: Port,
  use_https: z.boolean().default(true),
  verify_ssl: z.boolean().default(true),
  token_version: z.enum(["v1", "v2"]),
  token: Secret.optional().openapi({
    description: "v1: the token; v2: the token secret. Write-only.",
  }),
  token_key: z.string().max(200).nullable().optional().openapi({
    description: "v2 only: the key id",
  }),
}).strict().openapi("InventoryEndpointInput");

const KeySourceSchema = z.enum(["env", "plugin", "none"]).openapi({
  description:
    "Which key protects the stored secrets: SERVICE_ENCRYPTION_KEY, the plugin setting, or none",
});

const InventoryOutput = z.object({
  id: z.number().int(),
  name: z.string(),
  ip: z.string(),
  port: z.number().int(),
  use_https: z.boolean(),
  verify_ssl: z.boolean(),
  token_version: z.enum(["v1", "v2"]),
  token_key: z.string().nullable(),
  has_token: z.boolean(),
  key_source: KeySourceSchema,
}).openapi("InventoryEndpoint");

const HypervisorInput = z.object({
  name: z.string().min(1).max(200),
  ip: Host,
  port: Port.default(8006),
  use_https: z.boolean().default(true),
  verify_ssl: z.boolean().default(false),
  username: z.string().max(200).nullable().optional(),
  password: Secret.nullable().optional().openapi({ description: "Write-only" }),
  token_name: z.string().max(200).nullable().optional(),
  token_value: Secret.nullable().optional().openapi({ description: "Write-only" }),
  allow_writes: z.boolean().default(false),
  enabled: z.boolean().default(true),
  timeout: z.number().int().min(1).max(3600).default(30).openapi({
    description: "Seconds per hypervisor call",
  }),
}).strict().openapi("HypervisorEndpointInput");

const HypervisorOutput = z.object({
  id: z.number().int(),
  name: z.string(),
  ip: z.string(),
  port: z.number().int(),
  use_https: z.boolean(),
  verify_ssl: z.boolean(),
  username: z.string().nullable(),
  token_name: z.string().nullable(),
  has_password: z.boolean(),
  has_token_value: z.boolean(),
  allow_writes: z.boolean(),
  enabled: z.boolean(),
  timeout: z.number().int(),
  key_source: KeySourceSchema,
}).openapi("HypervisorEndpoint");

const CredentialCheck = z.object({ ok: z.literal(true), key_source: KeySourceSchema });

function unwrap<T>(result: SaveResult<T>): T {
  if (result.ok) return result.record;
  if (result.status === 422) throw issuesError(result.issues);
  throw fail(result.status, result.detail);
}

function issuesError(issues: FieldIssue[]): ApiError {
  return new ApiError(422, {
    detail: issues.map((i) => ({ loc: ["body", i.field], msg: i.message, type: i.type })),
  });
}

/** Secrets that cannot be opened are a 409 naming the endpoint (decisions §1.2), never a crash. */
async function guardCredentials<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof CredentialError) {
      throw new ApiError(409, { reason: "credential_undecryptable", detail: error.message });
    }
    throw error;
  }
}

export function endpointRoutes(services: BackendServices) {
  const { inventoryEndpoints, hypervisorEndpoints, vault } = services;
  const app = backendRouter<BackendEnv>();
  const withId = { params: Id };

  // ---------------------------------------------------------------- inventory endpoint
  app.openapi(
    createRoute({
      method: "get",
      path: "/inventory/endpoint",
      tags: ["inventory endpoint"],
      summary: "List the inventory endpoint copy ([] when none)",
      responses: { 200: jsonContent(z.array(InventoryOutput), "Copies"), ...ErrorResponses },
    }),
    async (c) => c.json((await inventoryEndpoints.list()).map(publicInventoryEndpoint), 200),
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/inventory/endpoint",
      tags: ["inventory endpoint"],
      summary: "Create the inventory endpoint copy (only one is allowed)",
      request: jsonBody(InventoryInput),
      responses: {
        201: jsonContent(InventoryOutput, "Created"),
        409: jsonContent(Detail, "One already exists"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const record = unwrap(
        await saveInventoryEndpoint(inventoryEndpoints, vault, null, c.req.valid("json")),
      );
      return c.json(publicInventoryEndpoint(record), 201);
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/inventory/endpoint/{id}",
      tags: ["inventory endpoint"],
      summary: "Read the inventory endpoint copy",
      request: withId,
      responses: {
        200: jsonContent(InventoryOutput, "The copy"),
        404: jsonContent(Detail, "Unknown id"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const record = await inventoryEndpoints.get(c.req.valid("param").id);
      if (!record) throw fail(404, texts.inventoryNotFound);
      return c.json(publicInventoryEndpoint(record), 200);
    },
  );
  app.openapi(
    createRoute({
      method: "put",
      path: "/inventory/endpoint/{id}",
      tags: ["inventory endpoint"],
      summary: "Replace the inventory endpoint copy (an omitted token keeps the stored one)",
      request: { ...withId, ...jsonBody(InventoryInput) },
      responses: {
        200: jsonContent(InventoryOutput, "Updated"),
        404: jsonContent(Detail, "Unknown id"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const record = unwrap(
        await saveInventoryEndpoint(inventoryEndpoints, vault, id, c.req.valid("json")),
      );
      return c.json(publicInventoryEndpoint(record), 200);
    },
  );
  app.openapi(
    createRoute({
      method: "delete",
      path: "/inventory/endpoint/{id}",
      tags: ["inventory endpoint"],
      summary: "Delete the inventory endpoint copy",
      request: withId,
      responses: {
        204: { description: "Deleted" },
        404: jsonContent(Detail, "Unknown id"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      if (!(await inventoryEndpoints.delete(c.req.valid("param").id))) {
        throw fail(404, texts.inventoryNotFound);
      }
      return c.body(null, 204);
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/inventory/endpoint/{id}/credentials/check",
      tags: ["inventory endpoint"],
      summary: "Prove the stored token still decrypts with the configured key",
      request: withId,
      responses: {
        200: jsonContent(CredentialCheck, "Decrypts"),
        404: jsonContent(Detail, "Unknown id"),
        409: jsonContent(CredentialUndecryptable, "Cannot be decrypted"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const record = await inventoryEndpoints.get(c.req.valid("param").id);
      if (!record) throw fail(404, texts.inventoryNotFound);
      await guardCredentials(() =>
        vault.open(record.token, record.key_source, `inventory ${endpointLabel(record)}`)
      );
      return c.json({ ok: true as const, key_source: record.key_source }, 200);
    },
  );

  // ---------------------------------------------------------------- hypervisor endpoints
  app.openapi(
    createRoute({
      method: "get",
      path: "/hypervisor/endpoints",
      tags: ["hypervisor endpoints"],
      summary: "List hypervisor endpoint copies",
      responses: { 200: jsonContent(z.array(HypervisorOutput), "Copies"), ...ErrorResponses },
    }),
    async (c) => c.json((await hypervisorEndpoints.list()).map(publicHypervisorEndpoint), 200),
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/hypervisor/endpoints",
      tags: ["hypervisor endpoints"],
      summary: "Create a hypervisor endpoint copy (names are unique)",
      request: jsonBody(HypervisorInput),
      responses: {
        201: jsonContent(HypervisorOutput, "Created"),
        409: jsonContent(Detail, "Name taken"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const input = c.req.valid("json");
      const record = unwrap(
        await guardCredentials(() =>
          saveHypervisorEndpoint(hypervisorEndpoints, vault, null, input)
        ),
      );
      return c.json(publicHypervisorEndpoint(record), 201);
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/hypervisor/endpoints/{id}",
      tags: ["hypervisor endpoints"],
      summary: "Read a hypervisor endpoint copy",
      request: withId,
      responses: {
        200: jsonContent(HypervisorOutput, "The copy"),
        404: jsonContent(Detail, "Unknown id"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const record = await hypervisorEndpoints.get(c.req.valid("param").id);
      if (!record) throw fail(404, texts.hypervisorNotFound);
      return c.json(publicHypervisorEndpoint(record), 200);
    },
  );
  app.openapi(
    createRoute({
      method: "put",
      path: "/hypervisor/endpoints/{id}",
      tags: ["hypervisor endpoints"],
      summary: "Replace a hypervisor endpoint copy (omitted secrets keep the stored ones)",
      request: { ...withId, ...jsonBody(HypervisorInput) },
      responses: {
        200: jsonContent(HypervisorOutput, "Updated"),
        404: jsonContent(Detail, "Unknown id"),
        409: jsonContent(
          z.union([Detail, CredentialUndecryptable]),
          "Name taken, or stored secrets undecryptable",
        ),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const input = c.req.valid("json");
      const record = unwrap(
        await guardCredentials(() => saveHypervisorEndpoint(hypervisorEndpoints, vault, id, input)),
      );
      return c.json(publicHypervisorEndpoint(record), 200);
    },
  );
  app.openapi(
    createRoute({
      method: "delete",
      path: "/hypervisor/endpoints/{id}",
      tags: ["hypervisor endpoints"],
      summary: "Delete a hypervisor endpoint copy",
      request: withId,
      responses: {
        204: { description: "Deleted" },
        404: jsonContent(Detail, "Unknown id"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      if (!(await hypervisorEndpoints.delete(c.req.valid("param").id))) {
        throw fail(404, texts.hypervisorNotFound);
      }
      return c.body(null, 204);
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/hypervisor/endpoints/{id}/credentials/check",
      tags: ["hypervisor endpoints"],
      summary: "Prove the stored secrets still decrypt with the configured key",
      request: withId,
      responses: {
        200: jsonContent(CredentialCheck, "Decrypts"),
        404: jsonContent(Detail, "Unknown id"),
        409: jsonContent(CredentialUndecryptable, "Cannot be decrypted"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const record = await hypervisorEndpoints.get(c.req.valid("param").id);
      if (!record) throw fail(404, texts.hypervisorNotFound);
      const label = `hypervisor ${endpointLabel(record)}`;
      await guardCredentials(async () => {
        await vault.open(record.password, record.key_source, label);
        await vault.open(record.token_value, record.key_source, label);
      });
      return c.json({ ok: true as const, key_source: record.key_source }, 200);
    },
  );

  return app;
}
