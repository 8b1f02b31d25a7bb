import { createRoute, z } from "@hono/zod-openapi";
import { checkPolicy } from "../../domain/sync/options.ts";
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
import {
  CredentialError,
  type CredentialVault,
  KeyUnavailableError,
} from "../../domain/credentials.ts";
import type { KeySource } from "../../storage/ports.ts";
import { ApiError, backendRouter, fail, validationError } from "./errors.ts";
import type { BackendEnv, BackendServices } from "./context.ts";
import {
  CredentialUndecryptable,
  Detail,
  EncryptionKeyUnavailable,
  ErrorResponses,
  jsonBody,
  jsonContent,
  pathId,
} from "./schemas.ts";

function validIpv6(host: string): boolean {
  try {
    return new URL(`http://[${host.replace(/^\[|\]$/g, "")}]/`).hostname.length > 2;
  } catch {
    return false;
  }
}

/**
 * `ip` is where the endpoint is reached: an IP address, or a DNS name (the plugin pushes an
 * endpoint's domain here when it has one). Anything else (a URL, a port, spaces, an
 * all-numeric name that is not a valid IPv4 address) is refused with the field named.
 */
const Host = z.string().min(1, { abort: true }).max(253, { abort: true }).regex(
  /^(\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]+|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)$/,
  // abort: a value that is not host-shaped gets this one message, not also an IP complaint.
  { message: "must be an IP address or a DNS host name (no scheme, port or path)", abort: true },
).refine(
  (host) =>
    !/^[0-9.]+$/.test(host) ||
    /^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/.test(host),
  "is not a valid IPv4 address",
).refine((host) => !host.includes(":") || validIpv6(host), "is not a valid IPv6 address").openapi({
  description: "IP address or DNS host name",
  example: "192.0.2.10",
});
const Port = z.number().int().min(1).max(65535);
const Secret = z.string().max(4096);
const Id = z.object({ id: pathId() });

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
  sync_policy: z.record(z.string(), z.union([z.boolean(), z.string(), z.array(z.unknown())]))
    .nullable().optional()
    .transform((value, ctx) => {
      const checked = checkPolicy(value);
      if (checked.ok) return checked.value;
      for (const message of checked.messages) ctx.addIssue({ code: "custom", message });
      return z.NEVER;
    }).openapi({
      description: "Run options this endpoint's runs default to (docs/sync.md, Run options), " +
        'e.g. {"overwrite_names": false, "stage_sdn": false, "qemu_role": "server", ' +
        '"tenant_rules": [{"match": "name", "pattern": "^web-", "tenant": "web"}]}; a run\'s ' +
        "query wins. Omitted: kept.",
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
  sync_policy: z.record(
    z.string(),
    z.union([
      z.boolean(),
      z.string(),
      z.array(z.object({
        match: z.enum(["name", "tag", "cluster"]),
        pattern: z.string(),
        tenant: z.string(),
      })),
    ]),
  ).nullable().optional(),
}).openapi("HypervisorEndpoint");

const CredentialCheck = z.object({ ok: z.literal(true), key_source: KeySourceSchema });

/** A save's outcome as the backend answers it: 422 with the field issues, 404, or 409. */
function unwrap<T>(result: SaveResult<T>): T {
  if (result.ok) return result.record;
  if (result.reason === "invalid") throw issuesError(result.issues);
  throw fail(result.reason === "not_found" ? 404 : 409, result.detail);
}

/** Domain rule failures leave in the same 422 shape as schema validation. */
function issuesError(issues: FieldIssue[]): ApiError {
  return validationError(
    "json",
    issues.map((i) => ({ path: [i.field], message: i.message, code: i.type })),
  );
}

/** Secrets that cannot be opened are a 409 naming the endpoint, never a crash. */
async function guardCredentials<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof CredentialError) {
      throw new ApiError(409, { reason: "credential_undecryptable", detail: error.message });
    }
    if (error instanceof KeyUnavailableError) {
      throw new ApiError(502, { reason: "encryption_key_unavailable", detail: error.message });
    }
    throw error;
  }
}

/** One registry of endpoint copies: the same six routes serve both kinds. */
interface Registry<R extends { id: number; name: string; key_source: KeySource }, I> {
  tag: string;
  path: string;
  noun: string;
  input: z.ZodType<I>;
  output: z.ZodType;
  store: {
    list(): Promise<R[]>;
    get(id: number): Promise<R | null>;
    delete(id: number): Promise<boolean>;
  };
  save(id: number | null, input: I): Promise<SaveResult<R>>;
  view(record: R): unknown;
  /** The stored secrets the credentials check must be able to open. */
  secrets(record: R): (string | null)[];
  label(record: R): string;
  notFound: string;
  createConflict: string;
}

function registryRoutes<R extends { id: number; name: string; key_source: KeySource }, I>(
  app: ReturnType<typeof backendRouter<BackendEnv>>,
  vault: CredentialVault,
  reg: Registry<R, I>,
) {
  const withId = { params: Id };
  const tags = [reg.tag];
  const notFound = jsonContent(Detail, "Unknown id");
  const load = async (id: number) => {
    const record = await reg.store.get(id);
    if (!record) throw fail(404, reg.notFound);
    return record;
  };
  const save = async (id: number | null, input: I) =>
    unwrap(await guardCredentials(() => reg.save(id, input)));

  app.openapi(
    createRoute({
      method: "get",
      path: reg.path,
      tags,
      summary: `List ${reg.noun}`,
      responses: { 200: jsonContent(z.array(reg.output), "Copies"), ...ErrorResponses },
    }),
    async (c) => c.json((await reg.store.list()).map(reg.view), 200),
  );
  app.openapi(
    createRoute({
      method: "post",
      path: reg.path,
      tags,
      summary: `Create ${reg.noun}`,
      request: jsonBody(reg.input),
      responses: {
        201: jsonContent(reg.output, "Created"),
        502: jsonContent(EncryptionKeyUnavailable, "The plugin's encryption key could not be read"),
        409: jsonContent(z.union([Detail, CredentialUndecryptable]), reg.createConflict),
        ...ErrorResponses,
      },
    }),
    async (c) => c.json(reg.view(await save(null, c.req.valid("json") as I)), 201),
  );
  app.openapi(
    createRoute({
      method: "get",
      path: `${reg.path}/{id}`,
      tags,
      summary: `Read ${reg.noun}`,
      request: withId,
      responses: { 200: jsonContent(reg.output, "The copy"), 404: notFound, ...ErrorResponses },
    }),
    async (c) => c.json(reg.view(await load(c.req.valid("param").id)), 200),
  );
  app.openapi(
    createRoute({
      method: "put",
      path: `${reg.path}/{id}`,
      tags,
      summary: `Replace ${reg.noun} (omitted secrets keep the stored ones)`,
      request: { ...withId, ...jsonBody(reg.input) },
      responses: {
        200: jsonContent(reg.output, "Updated"),
        502: jsonContent(EncryptionKeyUnavailable, "The plugin's encryption key could not be read"),
        404: notFound,
        409: jsonContent(
          z.union([Detail, CredentialUndecryptable]),
          "Conflict, or stored secrets undecryptable",
        ),
        ...ErrorResponses,
      },
    }),
    async (c) =>
      c.json(reg.view(await save(c.req.valid("param").id, c.req.valid("json") as I)), 200),
  );
  app.openapi(
    createRoute({
      method: "delete",
      path: `${reg.path}/{id}`,
      tags,
      summary: `Delete ${reg.noun}`,
      request: withId,
      responses: { 204: { description: "Deleted" }, 404: notFound, ...ErrorResponses },
    }),
    async (c) => {
      if (!(await reg.store.delete(c.req.valid("param").id))) throw fail(404, reg.notFound);
      return c.body(null, 204);
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: `${reg.path}/{id}/credentials/check`,
      tags,
      summary: "Prove the stored secrets still decrypt with the configured key",
      request: withId,
      responses: {
        200: jsonContent(CredentialCheck, "Decrypts"),
        404: notFound,
        409: jsonContent(CredentialUndecryptable, "Cannot be decrypted"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const record = await load(c.req.valid("param").id);
      await guardCredentials(async () => {
        for (const secret of reg.secrets(record)) {
          await vault.open(secret, record.key_source, reg.label(record));
        }
      });
      return c.json({ ok: true as const, key_source: record.key_source }, 200);
    },
  );
}

export function endpointRoutes(services: BackendServices) {
  const { inventoryEndpoints, hypervisorEndpoints, vault } = services;
  const app = backendRouter<BackendEnv>();
  registryRoutes(app, vault, {
    tag: "inventory endpoint",
    path: "/inventory/endpoint",
    noun: "the inventory endpoint copy (at most one)",
    input: InventoryInput,
    output: InventoryOutput,
    store: inventoryEndpoints,
    save: (id, input) => saveInventoryEndpoint(inventoryEndpoints, vault, id, input),
    view: publicInventoryEndpoint,
    secrets: (record) => [record.token],
    label: (record) => `inventory ${endpointLabel(record)}`,
    notFound: texts.inventoryNotFound,
    createConflict: "One already exists",
  });
  registryRoutes(app, vault, {
    tag: "hypervisor endpoints",
    path: "/hypervisor/endpoints",
    noun: "hypervisor endpoint copies (names are unique)",
    input: HypervisorInput,
    output: HypervisorOutput,
    store: hypervisorEndpoints,
    save: (id, input) => saveHypervisorEndpoint(hypervisorEndpoints, vault, id, input),
    view: publicHypervisorEndpoint,
    secrets: (record) => [record.password, record.token_value],
    label: (record) => `hypervisor ${endpointLabel(record)}`,
    notFound: texts.hypervisorNotFound,
    createConflict: "Name taken, or stored secrets undecryptable",
  });
  return app;
}
