/**
 * The host-agent mock: the five calls micro-VM provisioning makes (health, capabilities, asset
 * preparation, create, start), with state, plus a listing of created micro-VMs and fault
 * injection so every failure path can be tried. Mounted at /host-agent (or alone at "/").
 * Every answer, errors included, is JSON.
 */
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppDeps, ServeEnv } from "../_lib/deps.ts";
import { APP_NAME, APP_VERSION } from "../../config.ts";
import { docsRoutes } from "../_lib/docs.ts";
import {
  HostAgentMock,
  MOCK_STEPS,
  type MockStep,
  type Outcome,
} from "../../mock/host_agent/state.ts";
import { notePattern } from "../_lib/route_pattern.ts";

type Env = { Bindings: ServeEnv };

const ErrorBody = z.object({ error: z.string() }).openapi("HostAgentError");
const MAX_BODY_BYTES = 256 * 1024;
const TOO_LARGE = "Request body too large (limit 256 KiB)";

const json = <T extends z.ZodType>(schema: T, description: string) => ({
  content: { "application/json": { schema } },
  description,
});
const body = <T extends z.ZodType>(schema: T) => ({
  body: { content: { "application/json": { schema } }, required: true },
});
const Errors = {
  401: json(ErrorBody, "Missing or wrong bearer token"),
  400: json(ErrorBody, "Invalid request"),
  413: json(ErrorBody, "Body larger than 256 KiB (counted as it arrives, chunked too)"),
  415: json(ErrorBody, "A body that is not JSON"),
};

const Sha256 = z.string().regex(/^[0-9a-fA-F]{64}$/, "must be 64 hexadecimal characters");
const Image = z.object({
  name: z.string().min(1).max(200),
  kernel_image_url: z.string().min(1).max(2048),
  kernel_image_sha256: Sha256,
  rootfs_image_url: z.string().min(1).max(2048),
  rootfs_image_sha256: Sha256,
  image_id: z.number().int().nullable().optional(),
  architecture: z.string().max(32).optional(),
  default_user: z.string().max(64).optional(),
}).openapi("HostAgentImage");

const Network = z.object({
  mode: z.enum(["nat", "bridge"]),
  guest_ip: z.string().max(64).optional(),
  gateway: z.string().max(64).optional(),
  bridge_name: z.string().max(64).optional(),
  tap_name: z.string().max(64).optional(),
  nameservers: z.array(z.string().max(64)).max(8).optional(),
}).openapi("HostAgentNetwork");

const CreateInput = z.object({
  microvm_id: z.string().min(1).max(64),
  name: z.string().min(1).max(128),
  vcpus: z.number().int().min(1),
  memory_mib: z.number().int().min(64),
  disk_mib: z.number().int().min(1),
  kernel_image_path: z.string().min(1).max(1024),
  rootfs_image_path: z.string().min(1).max(1024),
  network: Network,
  ssh_authorized_keys: z.array(z.string().max(16_384)).max(64).default([]),
  metadata: z.record(z.string(), z.unknown()).default({}),
  architecture: z.string().max(32).optional(),
  default_user: z.string().max(64).optional(),
}).openapi("HostAgentCreateMicrovm");

const Microvm = z.object({
  microvm_id: z.string(),
  name: z.string(),
  status: z.enum(["stopped", "running"]),
  guest_ip: z.string(),
  vcpus: z.number().int(),
  memory_mib: z.number().int(),
  disk_mib: z.number().int(),
  kernel_image_path: z.string(),
  rootfs_image_path: z.string(),
  network: Network,
  ssh_authorized_keys: z.array(z.string()),
  metadata: z.record(z.string(), z.unknown()),
  created_at: z.string(),
  started_at: z.string().nullable(),
}).openapi("HostAgentMicrovm");

const Faults = z.object({
  fail_step: z.enum(MOCK_STEPS).nullable(),
  fail_status: z.number().int(),
  delay_ms: z.number().int(),
}).openapi("HostAgentFaults");

const FaultsInput = z.object({
  fail_step: z.enum(MOCK_STEPS).nullable().optional().openapi({
    description: "The step whose call answers an error (null: none)",
  }),
  fail_status: z.number().int().min(400).max(599).optional().openapi({
    description: "HTTP status of the injected failure (default 500)",
  }),
  delay_ms: z.number().int().min(0).max(60_000).optional().openapi({
    description: "Delay added to every call except these control routes",
  }),
}).strict().openapi("HostAgentFaultsInput");

const Capacity = z.object({
  vcpus: z.number().int(),
  memory_mib: z.number().int(),
  disk_mib: z.number().int(),
  supports_nat: z.boolean(),
  supports_bridge: z.boolean(),
}).openapi("HostAgentCapacity");

const CapacityInput = z.object({
  vcpus: z.number().int().min(0).max(100_000).optional(),
  memory_mib: z.number().int().min(0).max(1_000_000_000).optional(),
  disk_mib: z.number().int().min(0).max(1_000_000_000).optional(),
  supports_nat: z.boolean().optional(),
  supports_bridge: z.boolean().optional(),
}).strict().openapi("HostAgentCapacityInput");

const IdParam = z.object({
  id: z.string().min(1).max(64).openapi({ param: { name: "id", in: "path" } }),
});

/** An error answer of this surface: always `{error}` JSON with its status. */
class AgentError extends Error {
  constructor(readonly status: ContentfulStatusCode, message: string) {
    super(message);
  }
}

/** Paths no token is needed for: the docs a browser opens. */
const PUBLIC = new Set(["/docs", "/openapi.json", "/static/scalar.js"]);

function bearer(token: string): MiddlewareHandler<Env> {
  const expected = new TextEncoder().encode(`Bearer ${token}`);
  return async function hostAgentBearer(c, next) {
    if (PUBLIC.has(c.req.path)) return await next();
    const given = new TextEncoder().encode(c.req.header("authorization") ?? "");
    if (!sameBytes(given, expected)) {
      return c.json({ error: "Missing or invalid bearer token" }, 401, {
        "WWW-Authenticate": 'Bearer realm="host-agent"',
      });
    }
    await next();
  };
}

/** Compares every byte whatever the first difference, so timing says nothing of the token. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (a[i] ?? 0) ^ b[i];
  return diff === 0;
}

/** JSON, as `application/json` or any `+json` type, parameters allowed. */
function isJsonType(type: string): boolean {
  const base = type.split(";")[0].trim().toLowerCase();
  return base === "application/json" || /^application\/[\w.+-]+\+json$/.test(base);
}

/**
 * Bodies are JSON or nothing: anything else (text/plain JSON, XML, forms, multipart) is a 415,
 * read within the size limit first, so no body reaches a handler unparsed.
 */
const jsonBodiesOnly: MiddlewareHandler<Env> = async function jsonBodiesOnly(c, next) {
  if (["POST", "PUT", "PATCH"].includes(c.req.method)) {
    const type = c.req.header("content-type") ?? "";
    // Read once: Hono keeps it for the validator.
    const empty = (await c.req.arrayBuffer()).byteLength === 0;
    if (!empty && !isJsonType(type)) {
      const given = JSON.stringify(type || "(none)");
      return c.json({ error: `Unsupported Content-Type ${given}: send application/json` }, 415);
    }
  }
  await next();
};

/**
 * The mock always wants a bearer token (docs excepted): `HOST_AGENT_MOCK_TOKEN`, else one made
 * at start (createHostAgentApp logs it). Anonymous, anyone on the network could reset it,
 * inject faults or fill its memory (SECURITY.md, "The host-agent mock").
 */
export function createHostAgentRouter(mock: HostAgentMock, token: string) {
  const app = new OpenAPIHono<Env>({
    defaultHook: (result, c) => {
      if (result.success) return;
      const issues = result.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`);
      return c.json({ error: `Invalid request: ${issues.join("; ")}` }, 400);
    },
  });
  app.onError((error, c) => {
    if (error instanceof AgentError) return c.json({ error: error.message }, error.status);
    const status = (error as { status?: number }).status;
    if (status === 413) return c.json({ error: TOO_LARGE }, 413);
    if (error instanceof SyntaxError || /json|body/i.test(error.message)) {
      return c.json({ error: "Request body is not valid JSON" }, 400);
    }
    return c.json({ error: "Internal error in the host-agent mock" }, 500);
  });
  app.notFound((c) => c.json({ error: "Not Found" }, 404));
  // First: names the answering route by its pattern for the request metrics (app.ts).
  app.use("*", notePattern);
  app.use("*", bearer(token));
  // Counts the bytes as they arrive (a chunked body has no Content-Length to trust).
  app.use(
    "*",
    bodyLimit({ maxSize: MAX_BODY_BYTES, onError: (c) => c.json({ error: TOO_LARGE }, 413) }),
  );
  app.use("*", jsonBodiesOnly);

  /** The injected delay, then the injected failure when this call is the faulty step. */
  const faulted = async (step: MockStep): Promise<void> => {
    const { delay_ms, fail_step, fail_status } = mock.faults;
    if (delay_ms > 0) await new Promise((resolve) => setTimeout(resolve, delay_ms));
    if (fail_step === step) {
      throw new AgentError(fail_status as ContentfulStatusCode, `injected fault: ${step} fails`);
    }
  };
  const value = <T>(outcome: Outcome<T>): T => {
    if (!outcome.ok) throw new AgentError(outcome.status, outcome.error);
    return outcome.value;
  };

  const tags = ["host-agent"];
  app.openapi(
    createRoute({
      method: "get",
      path: "/health",
      tags,
      summary: "Health",
      responses: {
        200: json(z.object({ ok: z.boolean(), status: z.string() }), "Ready"),
        ...Errors,
      },
    }),
    async (c) => {
      await faulted("host_agent_health");
      return c.json({ ok: true, status: "ready" }, 200);
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/capabilities",
      tags,
      summary: "What this host can run now",
      responses: {
        200: json(
          z.object({
            supports_nat: z.boolean(),
            supports_bridge: z.boolean(),
            available_vcpus: z.number().int(),
            available_memory_mib: z.number().int(),
            available_disk_mib: z.number().int(),
          }),
          "Free capacity (running micro-VMs hold vCPUs and memory, every one holds its disk)",
        ),
        ...Errors,
      },
    }),
    async (c) => {
      await faulted("capabilities");
      return c.json(mock.available(), 200);
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/assets/prepare",
      tags,
      summary: "Fetch and verify a kernel and rootfs",
      request: body(z.object({ image: Image })),
      responses: {
        200: json(
          z.object({ kernel_image_path: z.string(), rootfs_image_path: z.string() }),
          "Where the assets are on the host",
        ),
        ...Errors,
      },
    }),
    async (c) => {
      await faulted("prepare_assets");
      return c.json(mock.prepare(c.req.valid("json").image), 200);
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/microvms",
      tags,
      summary: "Create a micro-VM (stopped)",
      request: body(CreateInput),
      responses: {
        201: json(Microvm, "Created"),
        409: json(ErrorBody, "Id taken, assets not prepared, or no disk space"),
        ...Errors,
      },
    }),
    async (c) => {
      await faulted("create_microvm");
      return c.json(value(mock.create(c.req.valid("json"))), 201);
    },
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/microvms",
      tags,
      summary: "List micro-VMs",
      responses: { 200: json(z.object({ microvms: z.array(Microvm) }), "Micro-VMs"), ...Errors },
    }),
    (c) => c.json({ microvms: mock.list() }, 200),
  );
  app.openapi(
    createRoute({
      method: "get",
      path: "/microvms/{id}",
      tags,
      summary: "Read a micro-VM",
      request: { params: IdParam },
      responses: { 200: json(Microvm, "The micro-VM"), 404: json(ErrorBody, "Unknown"), ...Errors },
    }),
    (c) => {
      const vm = mock.get(c.req.valid("param").id);
      return vm ? c.json(vm, 200) : c.json({ error: "micro-VM not found" }, 404);
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/microvms/{id}/actions/start",
      tags,
      summary: "Start a micro-VM",
      request: { params: IdParam },
      responses: {
        200: json(Microvm, "Running"),
        404: json(ErrorBody, "Unknown"),
        409: json(ErrorBody, "Not enough free vCPUs or memory"),
        ...Errors,
      },
    }),
    async (c) => {
      await faulted("start_microvm");
      return c.json(value(mock.start(c.req.valid("param").id)), 200);
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/microvms/{id}/actions/stop",
      tags,
      summary: "Stop a micro-VM",
      request: { params: IdParam },
      responses: { 200: json(Microvm, "Stopped"), 404: json(ErrorBody, "Unknown"), ...Errors },
    }),
    (c) => c.json(value(mock.stop(c.req.valid("param").id)), 200),
  );
  app.openapi(
    createRoute({
      method: "delete",
      path: "/microvms/{id}",
      tags,
      summary: "Delete a micro-VM",
      request: { params: IdParam },
      responses: { 204: { description: "Deleted" }, 404: json(ErrorBody, "Unknown"), ...Errors },
    }),
    (c) =>
      mock.delete(c.req.valid("param").id)
        ? c.body(null, 204)
        : c.json({ error: "micro-VM not found" }, 404),
  );

  const mockTags = ["mock control"];
  app.openapi(
    createRoute({
      method: "get",
      path: "/mock/faults",
      tags: mockTags,
      summary: "Injected faults in force",
      responses: { 200: json(Faults, "Faults"), ...Errors },
    }),
    (c) => c.json(mock.faults, 200),
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/mock/faults",
      tags: mockTags,
      summary: "Make a step fail, or every call slow (fields left out keep their value)",
      request: body(FaultsInput),
      responses: { 200: json(Faults, "Faults now in force"), ...Errors },
    }),
    (c) => {
      const input = c.req.valid("json");
      const next: Parameters<HostAgentMock["setFaults"]>[0] = {};
      if (input.fail_step !== undefined) next.fail_step = input.fail_step;
      if (input.fail_status !== undefined) next.fail_status = input.fail_status;
      if (input.delay_ms !== undefined) next.delay_ms = input.delay_ms;
      return c.json(mock.setFaults(next), 200);
    },
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/mock/capacity",
      tags: mockTags,
      summary: "Set the host's total capacity and network support (fields left out keep theirs)",
      request: body(CapacityInput),
      responses: { 200: json(Capacity, "Capacity now in force"), ...Errors },
    }),
    (c) => c.json(mock.setCapacity(c.req.valid("json")), 200),
  );
  app.openapi(
    createRoute({
      method: "post",
      path: "/mock/reset",
      tags: mockTags,
      summary: "Forget every micro-VM, prepared asset and fault; restore the initial capacity",
      responses: { 200: json(Faults, "Faults after the reset (none)"), ...Errors },
    }),
    (c) => {
      mock.reset();
      return c.json(mock.faults, 200);
    },
  );

  app.openAPIRegistry.registerComponent("securitySchemes", "Bearer", {
    type: "http",
    scheme: "bearer",
  });
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: `${APP_NAME} host-agent mock`,
      version: APP_VERSION,
      description:
        "Provisions micro-VMs without a real host. Every route but the docs wants the bearer token: HOST_AGENT_MOCK_TOKEN, or the one the app prints at start when that is unset.",
    },
    security: [{ Bearer: [] }],
  });
  // Relative URLs: the same page works at /host-agent/docs and, served alone, at /docs.
  app.route(
    "/",
    docsRoutes({
      title: `${APP_NAME} host-agent mock`,
      specUrl: "openapi.json",
      docsPath: "/docs",
      staticBase: "/static",
      assetUrlBase: "static",
    }),
  );
  return app;
}

/**
 * Host-agent mock (micro-VM provisioning without a real host); mounted at /host-agent. Without
 * HOST_AGENT_MOCK_TOKEN a token is generated for this run and logged once, as the start line is.
 */
// deno-lint-ignore require-await
export async function createHostAgentApp(deps: AppDeps) {
  let token = deps.config.hostAgentMock.token;
  if (!token) {
    token = crypto.getRandomValues(new Uint8Array(24)).toBase64({ alphabet: "base64url" });
    deps.logger.log(
      "warning",
      `HOST_AGENT_MOCK_TOKEN is not set: the host-agent mock wants "Authorization: Bearer ${token}" ` +
        "(generated for this run; send it as host_agent_token when provisioning through it)",
      { host_agent_mock_token: token },
    );
  }
  return createHostAgentRouter(new HostAgentMock(deps.now), token);
}
