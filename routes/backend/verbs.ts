/**
 * Operational verbs (docs/verbs.md): `POST /hypervisor/{qemu|lxc}/{vmid}/{verb}?endpoint_id=`
 * and the audit trail `GET /hypervisor/actions`. The checks run in a fixed order, and the
 * endpoint's gate answers before the body is even read: endpoint_id (400), the endpoint
 * (404), allow_writes (403), then the request itself (400/422).
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { HypervisorApiClient } from "../../clients/hypervisor_api.ts";
import { HypervisorGuests } from "../../clients/hypervisor_guests.ts";
import { endpointLabel } from "../../domain/endpoints.ts";
import { type Answer, idempotent } from "../../domain/verbs/idempotency.ts";
import { runVerb } from "../../domain/verbs/run.ts";
import type {
  GuestControlPort,
  GuestType,
  VerbCall,
  VerbName,
  VerbOutcome,
} from "../../domain/verbs/types.ts";
import type { HypervisorEndpointRecord } from "../../storage/ports.ts";
import { actorOf } from "./actor.ts";
import type { BackendEnv, BackendServices } from "./context.ts";
import { ApiError, backendRouter, validationError } from "./errors.ts";
import { ErrorResponses, jsonContent } from "./schemas.ts";

const VERBS = ["start", "stop", "snapshot", "migrate"] as const;
const GUEST_TYPES = ["qemu", "lxc"] as const;
const IDEMPOTENCY_HEADER = "Idempotency-Key";
const MAX_IDEMPOTENCY_KEY = 200;

const Reason = (reason: string) =>
  z.object({ reason: z.literal(reason), detail: z.string() }).passthrough();

const SnapName = z.string().regex(
  /^[A-Za-z][A-Za-z0-9_-]{1,39}$/,
  "2-40 letters, digits, '_' or '-', starting with a letter",
);
const NodeName = z.string().regex(
  /^[A-Za-z0-9]([A-Za-z0-9.-]{0,61}[A-Za-z0-9])?$/,
  "must be a node name",
);

const NoBody = z.object({}).strict();
const SnapshotBody = z.object({
  snapname: SnapName.optional().openapi({
    description: "Default: snap_<UTC date>_<time> of the request",
  }),
  description: z.string().max(8192).optional(),
}).strict().openapi("SnapshotVerbBody");
const MigrateBody = z.object({
  target: NodeName.openapi({ description: "Node to move the guest to" }),
  online: z.boolean().default(false).openapi({
    description: "Move a running guest: live for QEMU, a restart migration for LXC",
  }),
}).strict().openapi("MigrateVerbBody");

const BODIES: Record<VerbName, z.ZodType> = {
  start: NoBody,
  stop: NoBody,
  snapshot: SnapshotBody,
  migrate: MigrateBody,
};

const VerbAnswer = z.object({
  verb: z.enum(VERBS),
  vm_type: z.enum(GUEST_TYPES),
  vmid: z.number().int(),
  endpoint_id: z.number().int(),
  actor: z.string(),
  result: z.enum(["ok", "already_running", "already_stopped", "accepted", "failed"]),
  task_upid: z.string().optional(),
  dispatched_at: z.string().openapi({ description: "ISO 8601" }),
  audit_id: z.number().int(),
}).openapi("VerbResult");

const VerbFailure = VerbAnswer.extend({
  reason: z.enum([
    "hypervisor_error",
    "hypervisor_unreachable",
    "credential_undecryptable",
    "encryption_key_unavailable",
    "guest_not_found",
  ]),
  detail: z.string(),
  hypervisor_status: z.number().int().nullable().optional(),
}).openapi("VerbFailure");

const AuditRecord = z.object({
  id: z.number().int(),
  verb: z.enum(VERBS),
  vm_type: z.enum(GUEST_TYPES),
  vmid: z.number().int(),
  endpoint_id: z.number().int(),
  actor: z.string().openapi({ description: "X-Service-Actor as sent (free text)" }),
  api_key_id: z.number().int().nullable().openapi({
    description: "The API key that made the request (GET /auth/keys); null on older records",
  }),
  result: z.enum(["ok", "already_running", "already_stopped", "accepted", "failed"]).nullable(),
  status: z.enum(["in_progress", "finalized"]),
  task_upid: z.string().nullable(),
  idempotency_key: z.string().nullable(),
  created_at: z.string(),
  finished_at: z.string().nullable(),
  detail: z.string().nullable(),
}).openapi("VerbAuditRecord");

const ActionsQuery = z.object({
  endpoint_id: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  vmid: z.coerce.number().int().min(1).max(999_999_999).optional(),
  actor: z.string().min(1).max(200).optional(),
  verb: z.enum(VERBS).optional(),
  status: z.enum(["in_progress", "finalized"]).optional().openapi({
    description: "in_progress: verbs whose outcome is not (or not yet) known",
  }),
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

const fail = (status: ContentfulStatusCode, reason: string, detail: string, extra = {}) =>
  new ApiError(status, { reason, detail, ...extra });

/** Clients are kept per endpoint (a ticket lasts) until the endpoint's settings change. */
function guestPorts(services: BackendServices) {
  const cache = new Map<number, { print: string; port: GuestControlPort }>();
  return (endpoint: HypervisorEndpointRecord): GuestControlPort => {
    const print = JSON.stringify(endpoint);
    const hit = cache.get(endpoint.id);
    if (hit?.print === print) return hit.port;
    const label = `hypervisor ${endpointLabel(endpoint)}`;
    const client = new HypervisorApiClient(endpoint, {
      fetch: services.deps.fetch,
      now: services.deps.now,
      secrets: async () => ({
        password: await services.vault.open(endpoint.password, endpoint.key_source, label),
        token_value: await services.vault.open(endpoint.token_value, endpoint.key_source, label),
      }),
    });
    const port = new HypervisorGuests(client);
    cache.set(endpoint.id, { print, port });
    return port;
  };
}

/** The gate, in order; nothing of the body is touched here. */
async function gate(c: Context<BackendEnv>, services: BackendServices) {
  const raw = c.req.query("endpoint_id")?.trim();
  if (!raw) {
    throw fail(
      400,
      "endpoint_id_required",
      "Query parameter endpoint_id is required: the id of the hypervisor endpoint copy to act on.",
    );
  }
  const id = Number(raw);
  if (!/^\d{1,15}$/.test(raw) || id < 1) {
    throw fail(400, "endpoint_id_invalid", `endpoint_id must be a positive integer, not "${raw}".`);
  }
  const endpoint = await services.hypervisorEndpoints.get(id);
  if (!endpoint) {
    throw fail(404, "endpoint_not_found", `Hypervisor endpoint ${id} not found.`, {
      endpoint_id: id,
    });
  }
  if (!endpoint.allow_writes) {
    throw fail(
      403,
      "writes_disabled_for_endpoint",
      `Writes are disabled for hypervisor endpoint ${id} (${endpoint.name}): ` +
        "set allow_writes to true on it to allow operational verbs.",
      { endpoint_id: id },
    );
  }
  // A disabled copy is out of every operational path (sync skips it too); checked after the
  // allow_writes 403 so the documented 400 → 404 → 403 order stays exact.
  if (endpoint.enabled === false) {
    throw fail(
      409,
      "endpoint_disabled",
      `Hypervisor endpoint ${id} (${endpoint.name}) is disabled: ` +
        "set enabled to true on it to act on its guests.",
      { endpoint_id: id },
    );
  }
  return endpoint;
}

async function readBody(c: Context<BackendEnv>, verb: VerbName): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  let body: unknown = {};
  if (text.trim()) {
    const type = c.req.header("content-type") ?? "";
    if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
      throw new ApiError(415, { detail: "Content-Type must be application/json" });
    }
    try {
      body = JSON.parse(text);
    } catch {
      throw new ApiError(400, { detail: "The request body is not valid JSON." });
    }
  }
  if (verb === "migrate") {
    const target = (body as { target?: unknown } | null)?.target;
    if (
      body && typeof body === "object" && (target === undefined || target === null || target === "")
    ) {
      throw fail(400, "target_required", 'migrate needs a target node: {"target": "<node>"}.');
    }
  }
  const parsed = BODIES[verb].safeParse(body);
  if (!parsed.success) throw validationError("json", parsed.error.issues);
  return parsed.data as Record<string, unknown>;
}

function idempotencyKeyOf(c: Context<BackendEnv>): string | null {
  const raw = c.req.header(IDEMPOTENCY_HEADER);
  if (raw === undefined) return null;
  const key = raw.trim();
  const printable = [...key].every((ch) => ch.charCodeAt(0) >= 0x20 && ch.charCodeAt(0) < 0x7f);
  if (!key || key.length > MAX_IDEMPOTENCY_KEY || !printable) {
    throw fail(
      400,
      "invalid_idempotency_key",
      `${IDEMPOTENCY_HEADER} must be 1-${MAX_IDEMPOTENCY_KEY} printable ASCII characters.`,
    );
  }
  return key;
}

function defaultSnapname(now: number): string {
  const iso = new Date(now).toISOString();
  return `snap_${iso.slice(0, 10).replaceAll("-", "")}_${iso.slice(11, 19).replaceAll(":", "")}`;
}

/** The HTTP answer of an outcome, and whether a repeat with the same key replays it. */
function answerOf(outcome: VerbOutcome): { answer: Answer; keep: boolean } {
  switch (outcome.kind) {
    case "done":
      return {
        answer: { status: outcome.answer.result === "accepted" ? 202 : 200, body: outcome.answer },
        keep: true,
      };
    case "audit_unavailable":
      return {
        answer: { status: 409, body: { reason: "audit_unavailable", detail: outcome.detail } },
        keep: false,
      };
    case "guest_not_found":
      return {
        answer: {
          status: 404,
          body: { ...outcome.answer, reason: "guest_not_found", detail: outcome.detail },
        },
        keep: true,
      };
    case "failed": {
      const upstream = outcome.hypervisor_status;
      // The hypervisor's own status, except a 401 (ours means "your API key") and non-errors.
      const status = outcome.failure === "credential_undecryptable"
        ? 409
        : upstream !== null && upstream >= 400 && upstream <= 599 && upstream !== 401
        ? upstream
        : 502;
      return {
        answer: {
          status,
          body: {
            ...outcome.answer,
            reason: outcome.failure,
            detail: outcome.detail,
            hypervisor_status: upstream,
          },
        },
        keep: true,
      };
    }
  }
}

export function verbRoutes(services: BackendServices) {
  const app = backendRouter<BackendEnv>();
  const { deps } = services;
  const portFor = guestPorts(services);

  for (const vmType of GUEST_TYPES) {
    for (const verb of VERBS) {
      const hasBody = verb === "snapshot" || verb === "migrate";
      app.openAPIRegistry.registerPath({
        method: "post",
        path: `/hypervisor/${vmType}/{vmid}/${verb}`,
        tags: ["operational verbs"],
        summary: `${verb[0].toUpperCase()}${verb.slice(1)} ${
          vmType === "qemu" ? "a QEMU VM" : "an LXC container"
        } (needs allow_writes; audited)`,
        request: {
          params: z.object({ vmid: z.number().int().openapi({ param: { name: "vmid" } }) }),
          query: z.object({
            endpoint_id: z.number().int().openapi({ description: "Hypervisor endpoint copy" }),
          }),
          headers: z.object({
            "X-Service-Actor": z.string().optional().openapi({ description: 'Default "service"' }),
            "Idempotency-Key": z.string().optional().openapi({
              description: "A repeat within 60 s replays the first answer without a new call",
            }),
          }),
          ...(hasBody
            ? {
              body: {
                content: {
                  "application/json": { schema: verb === "snapshot" ? SnapshotBody : MigrateBody },
                },
                required: verb === "migrate",
              },
            }
            : {}),
        },
        responses: {
          [verb === "migrate" ? 202 : 200]: jsonContent(
            VerbAnswer,
            "Dispatched (or nothing to do)",
          ),
          400: jsonContent(
            z.union([Reason("endpoint_id_required"), Reason("target_required")]),
            "endpoint_id missing, or migrate without target",
          ),
          403: jsonContent(Reason("writes_disabled_for_endpoint"), "allow_writes is false"),
          404: jsonContent(
            z.union([Reason("endpoint_not_found"), VerbFailure]),
            "Unknown endpoint or guest",
          ),
          409: jsonContent(
            z.union([Reason("endpoint_disabled"), Reason("audit_unavailable"), VerbFailure]),
            "The endpoint copy is disabled, the audit record could not be written (nothing " +
              "sent), or credentials undecryptable",
          ),
          422: jsonContent(
            z.union([
              Reason("idempotency_key_reused"),
              ErrorResponses[422].content["application/json"].schema,
            ]),
            "Invalid body, or the Idempotency-Key was used for another request",
          ),
          502: jsonContent(VerbFailure, "The hypervisor failed or could not be reached"),
        },
      });
    }
  }

  app.post(
    "/hypervisor/:vm_type{qemu|lxc}/:vmid/:verb{start|stop|snapshot|migrate}",
    async (c) => {
      const endpoint = await gate(c, services);
      const vmType = c.req.param("vm_type") as GuestType;
      const verb = c.req.param("verb") as VerbName;
      const rawVmid = c.req.param("vmid");
      const vmid = Number(rawVmid);
      if (!/^\d{1,9}$/.test(rawVmid) || vmid < 1) {
        throw fail(400, "invalid_vmid", `vmid must be a positive integer, not "${rawVmid}".`);
      }
      const actor = actorOf(c);
      const apiKeyId = c.get("apiKey")?.id ?? null;
      const body = await readBody(c, verb);
      const key = idempotencyKeyOf(c);
      const now = deps.now();
      const call: VerbCall = {
        verb,
        vm_type: vmType,
        vmid,
        endpoint_id: endpoint.id,
        actor,
        api_key_id: apiKeyId,
        idempotency_key: key,
        ...(verb === "snapshot"
          ? {
            snapshot: {
              snapname: (body.snapname as string | undefined) ?? defaultSnapname(now),
              ...(body.description === undefined ? {} : { description: String(body.description) }),
            },
          }
          : {}),
        ...(verb === "migrate"
          ? { migrate: { target: String(body.target), online: body.online === true } }
          : {}),
      };
      const work = async () => {
        const outcome = await runVerb(call, {
          audit: services.verbAudit,
          guests: () => portFor(endpoint),
          now: deps.now,
          logger: deps.logger,
        });
        // The verb's result when it reached the hypervisor, else why not (docs/metrics.md).
        deps.metrics?.verb(verb, outcome.kind === "done" ? outcome.answer.result : outcome.kind);
        return answerOf(outcome);
      };
      if (key === null) {
        const { answer } = await work();
        return c.json(answer.body as object, answer.status as ContentfulStatusCode);
      }
      const same = { verb, vm_type: vmType, vmid, endpoint_id: endpoint.id, body };
      // Keys are scoped to the API key that sent them: another caller reusing the same
      // Idempotency-Key runs its own request (and leaves its own audit record), never gets
      // the first caller's answer.
      const scoped = `${apiKeyId ?? "-"}:${key}`;
      const outcome = await idempotent(services.idempotency, scoped, same, now, work);
      switch (outcome.kind) {
        case "fresh":
          return c.json(
            outcome.answer.body as object,
            outcome.answer.status as ContentfulStatusCode,
          );
        case "replayed":
          return c.json(
            outcome.answer.body as object,
            outcome.answer.status as ContentfulStatusCode,
            { "Idempotent-Replayed": "true" },
          );
        case "reused":
          throw fail(
            422,
            "idempotency_key_reused",
            `This ${IDEMPOTENCY_HEADER} was used for a different request (verb, guest, endpoint ` +
              "or body) within the last 60 s; use a new key.",
            { idempotency_key: key },
          );
        case "in_progress":
          throw fail(
            409,
            "idempotency_key_in_progress",
            `The first request with this ${IDEMPOTENCY_HEADER} has not finished; retry later.`,
            { idempotency_key: key },
          );
      }
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/hypervisor/actions",
      tags: ["operational verbs"],
      summary: "Audit records of operational verbs, newest first",
      description: "A record still in_progress is a verb whose outcome is unknown (the process " +
        "stopped between the call and the record's update): check the guest and its task.",
      request: { query: ActionsQuery },
      responses: {
        200: jsonContent(
          z.object({
            count: z.number().int(),
            limit: z.number().int(),
            offset: z.number().int(),
            results: z.array(AuditRecord),
          }),
          "One page of records",
        ),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const { limit, offset, ...filter } = c.req.valid("query");
      const page = await services.verbAudit.list(filter, { limit, offset });
      const results = page.results.map((r) => ({ ...r, api_key_id: r.api_key_id ?? null }));
      return c.json({ count: page.count, limit, offset, results }, 200);
    },
  );

  return app;
}
