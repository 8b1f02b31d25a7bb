/**
 * Micro-VM provisioning through a host-agent (docs/provisioning.md): one JSON answer, or the
 * same run as Server-Sent Events (`provision_step`, `terminal_line`, then one `complete`).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { streamSSE } from "hono/streaming";
import { HostAgentClient } from "../../clients/host_agent.ts";
import { systemResolve } from "../../clients/outbound.ts";
import { provisionMicrovm } from "../../domain/provisioning/run.ts";
import { checkHostAgentTarget } from "../../domain/provisioning/target.ts";
import {
  PROVISION_STEPS,
  type ProvisionEvent,
  type ProvisionOutcome,
  type ProvisionRequest,
  STEP_LABELS,
} from "../../domain/provisioning/types.ts";
import type { AppDeps } from "../_lib/deps.ts";
import { actorOf } from "./actor.ts";
import type { BackendEnv } from "./context.ts";
import { backendRouter, validationError } from "./errors.ts";
import { ErrorResponses, jsonBody, jsonContent } from "./schemas.ts";

const KEEPALIVE_MS = 15_000;

const Sha256 = z.string().regex(/^[0-9a-fA-F]{64}$/, "must be 64 hexadecimal characters");
const Id = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const Text = (max: number) => z.string().min(1).max(max);

const Image = z.object({
  name: Text(200),
  kernel_image_url: Text(2048),
  kernel_image_sha256: Sha256,
  rootfs_image_url: Text(2048),
  rootfs_image_sha256: Sha256,
  image_id: Id.nullable().optional(),
  architecture: z.enum(["x86_64", "aarch64"]).default("x86_64"),
  default_user: Text(64).default("cloud-user"),
}).strict().openapi("MicrovmImage");

const Network = z.object({
  mode: z.enum(["nat", "bridge"]).default("nat"),
  guest_ip: Text(64).optional(),
  gateway: Text(64).optional(),
  bridge_name: Text(64).optional(),
  tap_name: Text(64).optional(),
  nameservers: z.array(Text(64)).max(8).optional(),
}).strict().openapi("MicrovmNetwork");

export const MicrovmProvisionRequest = z.object({
  host_agent_base_url: Text(2048).openapi({
    description: "http(s) base URL of the host-agent; no userinfo, query or fragment; " +
      "loopback, link-local and metadata hosts refused unless SERVICE_ALLOW_LOOPBACK_TARGETS",
    example: "http://10.0.0.5:8080",
  }),
  host_agent_token: z.string().max(4096).nullable().optional().openapi({
    description: "Bearer token for the host-agent; never echoed, logged or stored",
  }),
  host_id: Id.nullable().optional(),
  host_pool_id: Id.nullable().optional(),
  image: Image,
  inventory_microvm_id: Id.nullable().optional().openapi({
    description: "Inventory id of the micro-VM record; gives instance_ref microvm:<id>",
  }),
  microvm_id: z.uuid().default(() => crypto.randomUUID()).openapi({
    description: "Sent to the host-agent; a fresh UUID when omitted",
  }),
  name: z.string().regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/,
    "1-63 letters, digits, '.', '_' or '-', starting with a letter or digit",
  ),
  tenant_id: Id.nullable().optional(),
  network: Network.default({ mode: "nat" }),
  vcpus: z.number().int().min(1).max(1024).default(1),
  memory_mib: z.number().int().min(64).max(16 * 1024 * 1024).default(512),
  disk_mib: z.number().int().min(1).max(1024 * 1024 * 1024).default(1024),
  ssh_authorized_keys: z.array(z.string().min(1).max(16_384)).max(64).default([]),
  metadata: z.record(z.string(), z.unknown()).default({}).openapi({
    description: "Forwarded to the host-agent; the service sets actor, tenant_id, " +
      "inventory_microvm_id and instance_ref itself",
  }),
  start_after_provision: z.boolean().default(true),
}).strict().openapi("MicrovmProvisionRequest");

const MicrovmProvisionResponse = z.object({
  ok: z.literal(true),
  microvm_id: z.string(),
  instance_ref: z.string().optional().openapi({ example: "microvm:42" }),
  host_id: z.number().int().nullable(),
  host_pool_id: z.number().int().nullable(),
  image_id: z.number().int().nullable(),
  status: z.string().openapi({ example: "running" }),
  guest_ip: z.string().nullable(),
  detail: z.string().nullable(),
}).openapi("MicrovmProvisionResponse");

const ProvisionFailure = z.object({
  ok: z.literal(false),
  error: z.string(),
  step: z.enum(PROVISION_STEPS),
}).openapi("MicrovmProvisionFailure");

const streamDescription = [
  "Server-Sent Events:",
  "`provision_step` `{step, label, status}` (status started, done, skipped or failed),",
  "`terminal_line` `{line}`, and last, exactly once, `complete`: the success response, or",
  "`{ok:false, error, step}`.",
].join(" ");

export interface ProvisioningOptions {
  /** Host name lookup for the address rules; the system resolver (hosts file included). */
  resolve?: (host: string) => Promise<string[]>;
}

export function provisioningRoutes(deps: AppDeps, options: ProvisioningOptions = {}) {
  const app = backendRouter<BackendEnv>();
  const resolve = options.resolve ?? systemResolve;

  /** The URL rules, then the client; a refused URL never sees a request. */
  async function agentFor(request: ProvisionRequest) {
    const target = await checkHostAgentTarget(request.host_agent_base_url, {
      allowLoopback: deps.config.allowLoopbackTargets,
      resolve,
    });
    if (!target.ok && target.kind === "invalid") {
      throw validationError("json", [{
        path: ["host_agent_base_url"],
        message: target.message,
        code: "value_error",
      }]);
    }
    return {
      unresolved: target.ok ? null : target.message,
      agent: new HostAgentClient({
        baseUrl: request.host_agent_base_url,
        token: request.host_agent_token,
        fetch: deps.fetch,
      }),
    };
  }

  async function run(
    request: ProvisionRequest,
    prepared: Awaited<ReturnType<typeof agentFor>>,
    actor: string,
    emit?: (event: ProvisionEvent) => Promise<void>,
    signal?: AbortSignal,
  ): Promise<ProvisionOutcome> {
    const { agent, unresolved } = prepared;
    if (unresolved) {
      const failure = { ok: false as const, step: "host_agent_health" as const, error: unresolved };
      for (const status of ["started", "failed"] as const) {
        await emit?.({
          type: "provision_step",
          step: failure.step,
          label: STEP_LABELS.host_agent_health,
          status,
        });
      }
      return failure;
    }
    const outcome = await provisionMicrovm(request, agent, { actor, emit, signal });
    deps.logger.log(outcome.ok ? "info" : "warning", "micro-VM provisioning", {
      actor,
      microvm_id: request.microvm_id,
      ok: outcome.ok,
      ...(outcome.ok ? {} : { step: outcome.step, error: outcome.error }),
    });
    return outcome;
  }

  app.openapi(
    createRoute({
      method: "post",
      path: "/cloud/microvm/provision",
      tags: ["provisioning"],
      summary: "Provision a micro-VM through a host-agent (one JSON answer)",
      request: jsonBody(MicrovmProvisionRequest),
      responses: {
        200: jsonContent(MicrovmProvisionResponse, "Provisioned"),
        502: jsonContent(ProvisionFailure, "A step failed (the step is named)"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const request = c.req.valid("json") as ProvisionRequest;
      const actor = actorOf(c);
      const outcome = await run(
        request,
        await agentFor(request),
        actor,
        undefined,
        c.req.raw.signal,
      );
      if (!outcome.ok) return c.json(outcome, 502);
      return c.json(outcome, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/cloud/microvm/provision/stream",
      tags: ["provisioning"],
      summary: "Provision a micro-VM, progress as Server-Sent Events",
      request: jsonBody(MicrovmProvisionRequest),
      responses: {
        200: {
          content: { "text/event-stream": { schema: z.string() } },
          description: streamDescription,
        },
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const request = c.req.valid("json") as ProvisionRequest;
      const actor = actorOf(c);
      // Rules first: a refused URL is a 422 before any frame, like any other bad field.
      const prepared = await agentFor(request);
      return streamSSE(c, async (stream) => {
        const stop = new AbortController();
        stream.onAbort(() => stop.abort(new DOMException("client disconnected", "AbortError")));
        let last = Date.now();
        const keepalive = setInterval(() => {
          if (Date.now() - last >= KEEPALIVE_MS && !stream.aborted) {
            last = Date.now();
            void stream.write(": keepalive\n\n").catch(() => {});
          }
        }, KEEPALIVE_MS / 3);
        const send = async (event: string, data: unknown) => {
          if (stream.aborted) return;
          last = Date.now();
          await stream.writeSSE({ event, data: JSON.stringify(data) });
        };
        try {
          const outcome = await run(
            request,
            prepared,
            actor,
            ({ type, ...payload }) => send(type, payload),
            stop.signal,
          );
          await send("complete", outcome);
        } finally {
          clearInterval(keepalive);
        }
      }, async (error, stream) => {
        deps.logger.log("error", "provisioning stream failed", { error: error.message });
        await stream.writeSSE({
          event: "complete",
          data: JSON.stringify({ ok: false, error: "internal error", step: "host_agent_health" }),
        });
      });
    },
  );

  return app;
}
