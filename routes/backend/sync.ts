/**
 * The sync routes: the 13 stage paths (each as SSE under `…/stream` and as one JSON answer
 * without it), `/full-update[/stream]`, and the hypervisor read routes. Handlers only parse,
 * build the two clients from the stored copies, and turn the runner's events into frames.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { BackendEnv, BackendServices } from "./context.ts";
import { ApiError, backendRouter, fail } from "./errors.ts";
import { CredentialUndecryptable, Detail, ErrorResponses, jsonContent } from "./schemas.ts";
import { CredentialError } from "../../domain/credentials.ts";
import { endpointLabel } from "../../domain/endpoints.ts";
import { redactDeep } from "../../domain/redaction.ts";
import { noopMetrics } from "../../infra/metrics.ts";
import { runSync, type StageDef, STAGES, type SyncEvent } from "../../domain/sync/runner.ts";
import { SyncLedgers } from "../../domain/sync/ledger.ts";
import type { HypervisorReader, SyncEndpoint } from "../../domain/sync/ports.ts";
import { HypervisorApiClient, HypervisorApiError } from "../../clients/hypervisor_api.ts";
import { InventoryApiClient } from "../../clients/inventory_api.ts";
import {
  type HypervisorEndpointRecord,
  MAX_RUN_ENDPOINTS,
  type SyncRunHold,
} from "../../storage/ports.ts";
import { type HeldRun, isRunning, SyncRunLocks } from "../../domain/sync/run_lock.ts";
import {
  mergeOptions,
  OPTIONAL_STAGES,
  optionsFromPolicy,
  optionsFromQuery,
  OVERWRITE_FAMILIES,
  SLUG,
  stageParam,
} from "../../domain/sync/options.ts";
import { type PlanItem, PlanningInventory } from "../../domain/sync/plan.ts";
import { authenticate } from "../../domain/api_keys.ts";
import { clientIp } from "../_lib/client_ip.ts";
import { validationError } from "./errors.ts";
import {
  AUTH_TIMEOUT_MS,
  credentialInQuery,
  isSocketUpgrade,
  MAX_PENDING,
  MAX_PENDING_PER_CLIENT,
  serveSocketStream,
} from "./sync_socket.ts";

export const NO_INVENTORY =
  "No inventory endpoint found. Please add an inventory endpoint in the database.";
export const KEEPALIVE_MS = 15_000;

export interface SyncRouteOptions {
  /** Silence after which a `: keepalive` comment is sent (tests shorten it). */
  keepaliveMs?: number;
  /** Concurrent hypervisor reads per endpoint. */
  concurrency?: number;
  /** How long a WebSocket stream waits for its authentication message (tests shorten it). */
  authTimeoutMs?: number;
}

const Result = z.object({
  created: z.number().int(),
  updated: z.number().int(),
  unchanged: z.number().int(),
  deleted: z.number().int(),
  failed: z.number().int(),
}).openapi("SyncResult");

const ErrorFrame = z.object({
  step: z.string(),
  status: z.literal("failed"),
  error: z.string(),
  detail: z.string(),
  reason: z.string().optional(),
  endpoint_id: z.number().int().optional(),
  operation: z.string().optional(),
  url: z.string().optional(),
  upstream_status: z.number().int().nullable().optional(),
  hint: z.string().optional(),
  object: z.string().optional(),
}).openapi("SyncErrorFrame");

const Complete = z.object({
  ok: z.boolean(),
  message: z.string(),
  result: Result,
  stages: z.array(z.object({ step: z.string(), result: Result })),
  errors: z.array(ErrorFrame).optional(),
}).openapi("SyncComplete");

const SyncFailed = z.object({
  detail: z.string(),
  reason: z.string().optional(),
  errors: z.array(ErrorFrame),
  result: Result,
  stages: z.array(z.object({ step: z.string(), result: Result })),
}).openapi("SyncFailed");

const SyncRunning = z.object({
  reason: z.literal("sync_running"),
  detail: z.string(),
  running: z.object({
    run_id: z.string(),
    endpoint_id: z.number().int(),
    endpoint_name: z.string(),
    what: z.string(),
    started_at: z.string(),
  }),
}).openapi("SyncRunning");

/** The 409 body: which run holds which endpoint, since when, and what to do. */
function runningAnswer(running: SyncRunHold, all: HypervisorEndpointRecord[]) {
  const name = all.find((e) => e.id === running.endpoint_id)?.name ?? "";
  const since = new Date(running.started_at).toISOString();
  return {
    reason: "sync_running" as const,
    detail: `A sync run (${running.what}, run ${running.run_id}, started ${since}) is already ` +
      `running for hypervisor endpoint ${running.endpoint_id} ("${name}"). One run per ` +
      "endpoint at a time: wait for it to end, or scope this run to other endpoints with " +
      "?hypervisor_endpoint_ids=.",
    running: {
      run_id: running.run_id,
      endpoint_id: running.endpoint_id,
      endpoint_name: name,
      what: running.what,
      started_at: since,
    },
  };
}

const flag = (description: string) =>
  z.enum(["true", "false", "1", "0"], {
    message: "Use true or false",
  }).optional().openapi({ description });

const RunOptions = {
  dry_run: flag(
    "Write nothing: the answer is the plan (per stage and object: create, update field old → " +
      "new, mark, delete), as `plan` frames and in `complete.plan`.",
  ),
  plan: flag("On a real run, report what was written in the same form as a dry run's plan."),
  ...Object.fromEntries(
    OVERWRITE_FAMILIES.map((f) => [
      `overwrite_${f}`,
      flag(
        `true: the hypervisor owns ${f.replace("_", " ")} (each run writes them); false: the ` +
          "admin does (written when an object is created, then kept as the admin sets them).",
      ),
    ]),
  ),
  delete_orphans: flag(
    "Delete a VM whose guest is gone upstream instead of marking it decommissioning.",
  ),
  primary_ip_preference: z.enum(["both", "v4", "v6"], {
    message: "Use both, v4 or v6",
  }).optional().openapi({
    description: "both (default): primary IPv4 and IPv6; v4/v6: that family's primary only " +
      "(the other family's when there is none of it).",
  }),
  ...Object.fromEntries(
    OPTIONAL_STAGES.map((s) => [stageParam(s), flag(`Include the optional stage ${s}.`)]),
  ),
  ...Object.fromEntries(
    (["qemu", "lxc"] as const).map((type) => [
      `${type}_role`,
      z.string().regex(SLUG, { message: "Use a device role's slug" }).optional().openapi({
        description: `Slug of the device role given to ${
          type === "qemu" ? "QEMU guests" : "LXC containers"
        } (default: the sync's own \`${
          type === "qemu" ? "virtual-machine" : "container"
        }\`); it must exist with VM role on.`,
      }),
    ]),
  ),
};

const Scope = z.object({
  ...RunOptions,
  hypervisor_endpoint_ids: z.string().regex(/^\s*\d+(\s*,\s*\d+)*\s*$/, {
    message: "Use a comma-separated list of endpoint ids, e.g. 1,2",
  }).optional().openapi({
    description: "Comma-separated hypervisor endpoint ids (default: every enabled endpoint).",
    example: "1,2",
  }),
  // Strict: a misspelt scope (hypervisor_endpoint_id=1) must not silently widen a run to every
  // endpoint.
}).strict();

const SSE_DESCRIPTION = "Server-Sent Events: `event: step` frames (started → progress → " +
  "completed), `event: error` frames for failures, then exactly one `event: complete`.";

const SOCKET_DESCRIPTION = "WebSocket (`Upgrade: websocket`): the same frames as `…/stream`, " +
  'one JSON text message each (`{"event": …, "data": …}`). The first message the client sends ' +
  'is `{"api_key": "<X-Service-API-Key value>"}` (never the URL); the query takes the same run ' +
  "options as the stream, checked after the key. A refusal is an `error` message with " +
  "`http_status`, then close 4000 + that status; 4408: no key message in time. See docs/sync.md.";

/**
 * Opened secrets are kept for a few seconds, not for the client's life: a sync makes thousands
 * of calls (decrypting for each costs seconds), and a secret still leaves memory soon after.
 */
export const SECRET_TTL_MS = 5_000;

function briefly<T>(open: () => Promise<T>, now: () => number): () => Promise<T> {
  let held: { value: Promise<T>; until: number } | null = null;
  return () => {
    const t = now();
    if (held && held.until > t) return held.value;
    const value = open();
    held = { value, until: t + SECRET_TTL_MS };
    value.catch(() => {
      if (held?.value === value) held = null;
    });
    return value;
  };
}

/** Hypervisor clients live across requests so a ticket is reused until it must be renewed. */
function clientPool(services: BackendServices) {
  const pool = new Map<number, { fingerprint: string; client: HypervisorApiClient }>();
  return (record: HypervisorEndpointRecord): HypervisorApiClient => {
    const { password: _p, token_value: _t, ...visible } = record;
    // The stored (sealed) secrets are part of the fingerprint: a new secret means a new login.
    const fingerprint = JSON.stringify([visible, record.password, record.token_value]);
    const hit = pool.get(record.id);
    if (hit?.fingerprint === fingerprint) return hit.client;
    const label = endpointLabel(record);
    const client = new HypervisorApiClient(record, {
      fetch: services.deps.fetch,
      now: services.deps.now,
      secrets: briefly(async () => ({
        password: await services.vault.open(record.password, record.key_source, label),
        token_value: await services.vault.open(record.token_value, record.key_source, label),
      }), services.deps.now),
    });
    pool.set(record.id, { fingerprint, client });
    return client;
  };
}

function parseIds(value: string | undefined): number[] | null {
  if (!value) return null;
  return [...new Set(value.split(",").map((v) => Number(v.trim())))];
}

function toSyncEndpoint(r: HypervisorEndpointRecord): SyncEndpoint {
  return {
    id: r.id,
    name: r.name,
    ip: r.ip,
    port: r.port,
    use_https: r.use_https,
    verify_ssl: r.verify_ssl,
    username: r.username,
  };
}

const encoder = new TextEncoder();

function frame(event: string, data: unknown): Uint8Array {
  return encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

export function syncRoutes(services: BackendServices, options: SyncRouteOptions = {}) {
  const app = backendRouter<BackendEnv>();
  const hypervisorClient = clientPool(services);
  const keepaliveMs = options.keepaliveMs ?? KEEPALIVE_MS;
  // A run's hold expires like a job's lease (SERVICE_JOB_LEASE_MS): a process killed mid-run
  // keeps its endpoints no longer than that (docs/sync.md, "One run per endpoint").
  // The sync's ledgers on the inventory, in memory and saved in the store after each run
  // (docs/sync.md, "The ledger across restarts and processes").
  const ledgers = new SyncLedgers(services.deps.storage.syncLedgers);
  const runLocks = new SyncRunLocks(
    services.deps.storage.syncRuns,
    services.deps.now,
    services.deps.config.jobs.leaseMs,
  );

  /** Everything a run needs, checked before any frame (the 400 comes first). */
  async function prepare(scope: string | undefined) {
    const [inventory] = await services.inventoryEndpoints.list();
    if (!inventory) throw fail(400, NO_INVENTORY);
    const ids = parseIds(scope);
    const all = await services.hypervisorEndpoints.list();
    if (ids) {
      const unknown = ids.filter((id) => !all.some((e) => e.id === id));
      if (unknown.length) {
        throw fail(404, `Hypervisor endpoint(s) not found: ${unknown.join(", ")}`);
      }
    }
    const endpoints = all
      .filter((e) => e.enabled && (!ids || ids.includes(e.id)))
      .sort((a, b) => a.id - b.id);
    const label = `inventory endpoint ${inventory.id} ("${inventory.name}")`;
    const inventoryApi = new InventoryApiClient(inventory, {
      fetch: services.deps.fetch,
      token: async () => {
        const token = await services.vault.open(inventory.token, inventory.key_source, label);
        if (!token) throw new CredentialError(label, "no token is stored");
        return token;
      },
    });
    const records = new Map(endpoints.map((e) => [e.id, e]));
    const hypervisor = (endpoint: SyncEndpoint): HypervisorReader => {
      const client = hypervisorClient(records.get(endpoint.id)!);
      return { get: (path, params, signal) => client.get(path, params, { signal }) };
    };
    // Every secret this run may send, so no frame carries one in any spelling (the clients
    // already scrub their excerpts; this is the last gate before the caller reads it).
    const opened = await Promise.all([
      services.vault.open(inventory.token, inventory.key_source, label),
      ...endpoints.flatMap((e) => [
        services.vault.open(e.password, e.key_source, endpointLabel(e)),
        services.vault.open(e.token_value, e.key_source, endpointLabel(e)),
      ]),
    ].map((p) => p.catch(() => null)));
    const secrets = opened.filter((v): v is string => typeof v === "string" && v !== "");
    // Which inventory a ledger is about: the copy and where it points.
    const inventoryKey = `${inventory.id} ${inventoryApi.api}`;
    return {
      endpoints: endpoints.map(toSyncEndpoint),
      inventoryApi,
      inventoryKey,
      hypervisor,
      all,
      secrets,
    };
  }

  /**
   * The run's options from its query, and the inventory it writes through: a dry run (or
   * `plan=true`) goes through the planner, which records each write and, dry, answers it.
   */
  function runOptions(
    query: Record<string, string>,
    inventoryApi: InventoryApiClient,
    inventoryKey: string,
  ) {
    const syncOptions = mergeOptions(optionsFromQuery(query));
    const recording = syncOptions.dryRun || query.plan === "true" || query.plan === "1";
    // The sync's own writes, for the ledgers. Not a planned run's: it keeps no ledger, so its
    // writes forget the guests they touch, as an admin's would (docs/sync.md, "Re-runs"). Taken
    // as own, a ledger kept its digests from before them and skipped a guest once upstream went
    // back.
    inventoryApi.onWriteRequest = recording
      ? null
      : (requestId) => ledgers.noteOwn(inventoryKey, requestId);
    const listeners: ((item: PlanItem) => void)[] = [];
    const planner = recording
      ? new PlanningInventory(
        inventoryApi,
        syncOptions.dryRun,
        (i) => listeners.forEach((l) => l(i)),
      )
      : null;
    return {
      syncOptions,
      /** Per endpoint: its stored policy, then this run's query (the query wins). */
      optionsFor: (all: HypervisorEndpointRecord[]) => (endpoint: SyncEndpoint) =>
        mergeOptions(
          optionsFromPolicy(all.find((e) => e.id === endpoint.id)?.sync_policy),
          optionsFromQuery(query),
        ),
      inventory: planner ?? inventoryApi,
      /** A run that writes as it goes keeps the ledger; a planned one compares every guest. */
      ledger: planner
        ? undefined
        : (endpoint: SyncEndpoint) => ledgers.ledger(inventoryKey, endpoint.id),
      /** Saved for the next run, in this process or another (a failure is logged, not thrown). */
      keepLedger: planner
        ? undefined
        : (endpoint: SyncEndpoint) =>
          ledgers.keep(inventoryKey, endpoint.id).catch((error) =>
            services.deps.logger.log("warning", "sync ledger not saved", {
              endpoint_id: endpoint.id,
              error: error instanceof Error ? error.message : String(error),
            })
          ),
      onItem: (listener: (item: PlanItem) => void) => {
        if (planner) listeners.push(listener);
      },
      /** Keeps the planner's stage current and puts the plan into `complete`. */
      tracking: (emit: (event: SyncEvent) => void | Promise<void>) => (event: SyncEvent) => {
        if (planner && event.event === "step" && event.data.status === "started") {
          planner.step = event.data.step;
        }
        if (planner && event.event === "complete") event.data.plan = planner.items;
        return emit(event);
      },
    };
  }

  /** Holds the run's endpoints, or answers 409 naming the run in the way (before any frame). */
  async function hold(
    all: HypervisorEndpointRecord[],
    endpoints: SyncEndpoint[],
    what: string,
    abort: AbortController,
  ): Promise<HeldRun> {
    if (endpoints.length > MAX_RUN_ENDPOINTS) {
      throw fail(
        422,
        `A sync run covers at most ${MAX_RUN_ENDPOINTS} hypervisor endpoints and this one ` +
          `would cover ${endpoints.length}: scope it with ?hypervisor_endpoint_ids= (several ` +
          `runs of different endpoints go side by side).`,
      );
    }
    const held = await runLocks.acquire(
      endpoints.map((e) => e.id),
      what,
      () => abort.abort(new DOMException("the run lost its hold on the endpoint", "AbortError")),
      (running) =>
        services.deps.logger.log("info", "sync run waits for a cancelled run to end", {
          endpoint_id: running.endpoint_id,
          run_id: running.run_id,
        }),
    );
    if (!isRunning(held)) return held;
    throw new ApiError(409, runningAnswer(held.running, all));
  }

  /**
   * What every run does before its first frame, for streams and JSON alike: the checks that may
   * refuse it, its options, and the hold on its endpoints; each write then names the run.
   */
  async function begin(what: string, query: Record<string, string>) {
    const prepared = await prepare(query.hypervisor_endpoint_ids);
    const run = runOptions(query, prepared.inventoryApi, prepared.inventoryKey);
    const abort = new AbortController();
    const held = await hold(prepared.all, prepared.endpoints, what, abort);
    prepared.inventoryApi.changelogMessage = `Bridgebox sync run ${held.runId} (${what})`;
    return { ...prepared, run, abort, held };
  }

  type Begun = Awaited<ReturnType<typeof begin>>;

  /**
   * Runs a begun run to its end, handing each event (secrets scrubbed) to `emit`; resolves once
   * the run's hold is released. The SSE and the WebSocket streams share it, so both send the
   * same frames in the same order, one `complete` last.
   */
  function launch(
    begun: Begun,
    stages: readonly StageDef[],
    emit: (event: SyncEvent) => void,
    transport: "sse" | "websocket",
  ) {
    const { endpoints, hypervisor, all, secrets, run, abort, held } = begun;
    // Open while its run lasts (docs/metrics.md, bridgebox_open_streams).
    const streamClosed = (services.deps.metrics ?? noopMetrics).streamOpened(transport);
    const scrubbed = (event: SyncEvent) =>
      emit({ event: event.event, data: redactDeep(event.data, secrets) } as SyncEvent);
    run.onItem((item) => scrubbed({ event: "plan", data: item }));
    let ended: Record<string, unknown> | undefined;
    return runSync({
      stages,
      endpoints,
      hypervisor,
      inventory: run.inventory,
      ledger: run.ledger,
      keepLedger: run.keepLedger,
      syncOptions: run.syncOptions,
      syncOptionsFor: run.optionsFor(all),
      emit: run.tracking(scrubbed),
      signal: abort.signal,
      now: services.deps.now,
      concurrency: options.concurrency,
      metrics: services.deps.metrics,
      tracer: services.deps.tracer,
    }).then((complete) => {
      ended = {
        ok: complete.ok,
        cancelled: abort.signal.aborted,
        stages: complete.stages.length,
        result: complete.result,
      };
    }).catch((error) => {
      services.deps.logger.log("error", "sync run crashed", {
        error: error instanceof Error ? error.message : String(error),
      });
      scrubbed({
        event: "complete",
        data: {
          ok: false,
          message: "Sync failed",
          result: { created: 0, updated: 0, unchanged: 0, deleted: 0, failed: 1 },
          stages: [],
          errors: [{
            step: "sync",
            status: "failed",
            error: "internal error",
            detail: "The sync stopped on an internal error; see the server log.",
          }],
        },
      });
    }).finally(async () => {
      streamClosed();
      await held.end().catch((error) =>
        services.deps.logger.log("error", "sync run hold not released", {
          error: error instanceof Error ? error.message : String(error),
        })
      );
      // Logged once the endpoint is free again, so "ended" means a new run may start.
      if (ended) services.deps.logger.log("info", "sync run ended", ended);
    });
  }

  async function stream(
    c: Context<BackendEnv>,
    stages: readonly StageDef[],
    what: string,
    query: Record<string, string>,
  ) {
    const begun = await begin(what, query);
    const { abort, held } = begun;
    abort.signal.addEventListener("abort", () => held.cancelled(), { once: true });
    const requestSignal = c.req.raw.signal;
    const onRequestAbort = () => abort.abort(new DOMException("client went away", "AbortError"));
    requestSignal?.addEventListener("abort", onRequestAbort, { once: true });
    let timer: ReturnType<typeof setInterval> | undefined;
    let closed = false;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        let last = Date.now();
        const write = (bytes: Uint8Array) => {
          if (closed) return;
          try {
            controller.enqueue(bytes);
            last = Date.now();
          } catch {
            closed = true;
          }
        };
        timer = setInterval(() => {
          if (Date.now() - last >= keepaliveMs) write(encoder.encode(": keepalive\n\n"));
        }, Math.max(10, Math.min(1000, keepaliveMs / 3)));
        const emit = (event: SyncEvent) => write(frame(event.event, event.data));
        launch(begun, stages, emit, "sse").finally(() => {
          clearInterval(timer);
          requestSignal?.removeEventListener("abort", onRequestAbort);
          if (!closed) {
            closed = true;
            try {
              controller.close();
            } catch { /* already closed by the client */ }
          }
        });
      },
      cancel() {
        // The client went away: stop the work (no orphaned writes carry on).
        closed = true;
        clearInterval(timer);
        abort.abort(new DOMException("client went away", "AbortError"));
      },
    });
    return new Response(body, {
      status: 200,
      headers: {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "x-accel-buffering": "no",
      },
    });
  }

  /** Sockets waiting for their authentication message, by client address. */
  const pending = new Map<string, number>();
  let pendingTotal = 0;

  /** `GET …/ws`: the same run as `…/stream`, over a WebSocket (routes/backend/sync_socket.ts). */
  function socket(c: Context<BackendEnv>, stages: readonly StageDef[], what: string) {
    const streamPath = c.req.path.replace(/\/ws$/, "/stream");
    if (!isSocketUpgrade(c.req.method, c.req.header("upgrade"))) {
      return c.json(
        {
          detail: `This address takes a WebSocket (Upgrade: websocket; docs/sync.md). ` +
            `For Server-Sent Events use GET ${streamPath}.`,
        },
        426,
        { Upgrade: "websocket" },
      );
    }
    const ip = c.env?.internal ? null : clientIp(c, services.deps.config.trustedProxies);
    const peer = ip ?? "internal";
    if ((pending.get(peer) ?? 0) >= MAX_PENDING_PER_CLIENT || pendingTotal >= MAX_PENDING) {
      return c.json(
        {
          detail: "Too many WebSocket streams waiting for their authentication message; " +
            "send the key as the first message right after opening.",
        },
        503,
        { "Retry-After": "5" },
      );
    }
    // Read before the upgrade: the request is handed to the socket after it.
    const query = c.req.query();
    let upgraded: { socket: WebSocket; response: Response };
    try {
      upgraded = Deno.upgradeWebSocket(c.req.raw);
    } catch {
      return c.json({ detail: "This request cannot be upgraded to a WebSocket." }, 400);
    }
    pending.set(peer, (pending.get(peer) ?? 0) + 1);
    pendingTotal++;
    const { keys, lockout, authCache } = services;
    serveSocketStream({
      socket: upgraded.socket,
      ip,
      keyInUrl: credentialInQuery(query),
      authenticate: (key) => authenticate(keys, lockout, ip, key, authCache),
      async accept() {
        const parsed = Scope.safeParse(query);
        if (!parsed.success) throw validationError("query", parsed.error.issues);
        const begun = await begin(what, query);
        begun.abort.signal.addEventListener("abort", () => begun.held.cancelled(), {
          once: true,
        });
        return {
          run: (emit) => launch(begun, stages, emit, "websocket"),
          stop: () => begun.abort.abort(new DOMException("client went away", "AbortError")),
        };
      },
      authTimeoutMs: options.authTimeoutMs ?? AUTH_TIMEOUT_MS,
      keepaliveMs,
      logger: services.deps.logger,
      settled() {
        const left = (pending.get(peer) ?? 1) - 1;
        if (left > 0) pending.set(peer, left);
        else pending.delete(peer);
        pendingTotal--;
      },
    });
    return upgraded.response;
  }

  async function json(
    c: Context<BackendEnv>,
    stages: readonly StageDef[],
    what: string,
    query: Record<string, string>,
  ) {
    const { endpoints, hypervisor, all, secrets, run, abort, held } = await begin(what, query);
    const requestSignal = c.req.raw.signal;
    const onRequestAbort = () => {
      held.cancelled();
      abort.abort(requestSignal?.reason);
    };
    requestSignal?.addEventListener("abort", onRequestAbort, { once: true });
    let complete;
    try {
      complete = await runSync({
        stages,
        endpoints,
        hypervisor,
        inventory: run.inventory,
        ledger: run.ledger,
        keepLedger: run.keepLedger,
        syncOptions: run.syncOptions,
        syncOptionsFor: run.optionsFor(all),
        emit: run.tracking(() => {}),
        signal: abort.signal,
        now: services.deps.now,
        concurrency: options.concurrency,
        metrics: services.deps.metrics,
        tracer: services.deps.tracer,
      });
    } finally {
      requestSignal?.removeEventListener("abort", onRequestAbort);
      await held.end();
    }
    complete = redactDeep(complete, secrets);
    if (complete.ok) return c.json(complete, 200);
    const errors = complete.errors ?? [];
    const detail = errors.map((e) => e.detail).join("; ");
    const undecryptable = errors.find((e) => e.reason === "credential_undecryptable");
    if (undecryptable) {
      return c.json({
        reason: "credential_undecryptable" as const,
        detail,
        errors,
        result: complete.result,
        stages: complete.stages,
      }, 409);
    }
    return c.json({ detail, errors, result: complete.result, stages: complete.stages }, 502);
  }

  const register = (
    path: string,
    summary: string,
    stages: readonly StageDef[],
    tag: string,
    what: string,
  ) => {
    app.openapi(
      createRoute({
        method: "get",
        path: `${path}/stream`,
        tags: [tag],
        summary: `${summary} (SSE)`,
        description: SSE_DESCRIPTION,
        request: { query: Scope },
        responses: {
          200: {
            description: SSE_DESCRIPTION,
            content: { "text/event-stream": { schema: z.string() } },
          },
          400: jsonContent(Detail, "No inventory endpoint copy"),
          404: jsonContent(Detail, "Unknown hypervisor endpoint id in the scope"),
          409: jsonContent(SyncRunning, "Another run holds one of the endpoints"),
          ...ErrorResponses,
        },
      }),
      (c) => stream(c, stages, what, c.req.query()),
    );
    app.openapi(
      createRoute({
        method: "get",
        path,
        tags: [tag],
        summary,
        request: { query: Scope },
        responses: {
          200: jsonContent(Complete, "Every stage ran without error"),
          400: jsonContent(Detail, "No inventory endpoint copy"),
          404: jsonContent(Detail, "Unknown hypervisor endpoint id in the scope"),
          409: jsonContent(
            z.union([CredentialUndecryptable, SyncRunning]),
            "Stored credentials cannot be decrypted, or another run holds one of the endpoints",
          ),
          502: jsonContent(SyncFailed, "A stage failed; `detail` names what and why"),
          ...ErrorResponses,
        },
      }),
      (c) => json(c, stages, what, c.req.query()),
    );
    app.openapi(
      createRoute({
        method: "get",
        path: `${path}/ws`,
        tags: [tag],
        summary: `${summary} (WebSocket)`,
        description: SOCKET_DESCRIPTION,
        responses: {
          101: { description: SOCKET_DESCRIPTION },
          426: jsonContent(Detail, "Not a WebSocket upgrade"),
          503: jsonContent(Detail, "Too many sockets waiting for their authentication message"),
        },
      }),
      (c) => socket(c, stages, what),
    );
  };

  register("/full-update", "Full update: all 13 stages in order", STAGES, "sync", "full-update");
  for (const stage of STAGES) {
    register(
      stage.path,
      `Sync stage ${stage.type}: ${stage.summary}`,
      [stage],
      "sync stages",
      stage.type,
    );
  }

  // ------------------------------------------------------------ hypervisor read routes
  readRoutes(app, services, hypervisorClient);
  return app;
}

const EndpointQuery = z.object({
  endpoint_id: z.coerce.number().int().min(1).optional().openapi({
    description: "One hypervisor endpoint (default: every enabled endpoint).",
  }),
});

const Annotated = z.array(z.record(z.string(), z.unknown())).openapi({
  description: "Hypervisor items, each with `endpoint_id` and `endpoint_name` added.",
});

function readRoutes(
  app: ReturnType<typeof backendRouter<BackendEnv>>,
  services: BackendServices,
  clientOf: (record: HypervisorEndpointRecord) => HypervisorApiClient,
) {
  async function targets(endpointId: number | undefined) {
    const all = await services.hypervisorEndpoints.list();
    if (endpointId === undefined) return all.filter((e) => e.enabled).sort((a, b) => a.id - b.id);
    const one = all.find((e) => e.id === endpointId);
    if (!one) throw fail(404, "Hypervisor endpoint not found.");
    if (!one.enabled) throw fail(409, `Hypervisor endpoint ${one.id} ("${one.name}") is disabled.`);
    return [one];
  }

  async function read(
    record: HypervisorEndpointRecord,
    path: string,
    params: Record<string, string> | undefined,
    signal: AbortSignal | undefined,
  ) {
    try {
      return await clientOf(record).get(path, params, { signal });
    } catch (error) {
      if (error instanceof CredentialError) {
        throw new ApiError(409, { reason: "credential_undecryptable", detail: error.message });
      }
      if (error instanceof HypervisorApiError) {
        throw new ApiError(502, {
          detail: `${endpointLabel(record)}: ${error.message}`,
          upstream_status: error.status,
        });
      }
      throw error;
    }
  }

  /** What a read across the hypervisor endpoints answers besides its 200. */
  const readFailures = {
    404: jsonContent(Detail, "Unknown endpoint_id"),
    409: jsonContent(z.union([Detail, CredentialUndecryptable]), "Disabled, or secrets"),
    502: jsonContent(Detail, "The hypervisor failed; detail names the call"),
    ...ErrorResponses,
  };

  const list = (path: string, summary: string, extraQuery = false) => {
    const query = extraQuery
      ? EndpointQuery.extend({
        type: z.enum(["vm", "storage", "node", "sdn"]).optional().openapi({
          description: "Resource type filter, as Proxmox takes it.",
        }),
      })
      : EndpointQuery;
    const routePath = path === "/nodes" ? "/hypervisor/nodes/" : `/hypervisor${path}`;
    app.openapi(
      createRoute({
        method: "get",
        path: routePath,
        tags: ["hypervisor"],
        summary,
        request: { query },
        responses: {
          200: jsonContent(Annotated, "Items of every chosen endpoint"),
          ...readFailures,
        },
      }),
      async (c) => {
        const q = c.req.query();
        const endpointId = q.endpoint_id ? Number(q.endpoint_id) : undefined;
        const params = extraQuery && q.type ? { type: q.type } : undefined;
        const out: Record<string, unknown>[] = [];
        for (const record of await targets(endpointId)) {
          const data = await read(record, path, params, c.req.raw.signal);
          for (const item of Array.isArray(data) ? data : []) {
            out.push({ ...item, endpoint_id: record.id, endpoint_name: record.name });
          }
        }
        return c.json(out, 200);
      },
    );
  };
  list("/cluster/status", "Cluster status of every enabled hypervisor endpoint (or one)");
  list("/nodes", "Nodes of every enabled hypervisor endpoint (or one)");
  list("/cluster/resources", "Cluster resources (guests, storage, nodes)", true);

  taskRoute(app, services, read);

  app.openapi(
    createRoute({
      method: "get",
      path: "/hypervisor/version",
      tags: ["hypervisor"],
      summary: "Hypervisor version of every enabled endpoint (or one)",
      request: { query: EndpointQuery },
      responses: {
        200: jsonContent(Annotated, "One version record per endpoint"),
        ...readFailures,
      },
    }),
    async (c) => {
      const q = c.req.query();
      const endpointId = q.endpoint_id ? Number(q.endpoint_id) : undefined;
      const out: Record<string, unknown>[] = [];
      for (const record of await targets(endpointId)) {
        const data = await read(record, "/version", undefined, c.req.raw.signal);
        out.push({
          ...(data && typeof data === "object" ? data : {}),
          endpoint_id: record.id,
          endpoint_name: record.name,
        });
      }
      return c.json(out, 200);
    },
  );
}

/** A UPID as the hypervisor writes it: `UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>:`. */
const UPID_PATTERN =
  /^UPID:([a-zA-Z0-9][a-zA-Z0-9.-]*):[0-9A-Fa-f]{8}:[0-9A-Fa-f]{8,9}:[0-9A-Fa-f]{8}:[\w@.!=+-]+:[\w@.!=+-]*:[\w@.!=+-]+:$/;

const TaskParams = z.object({
  upid: z.string().max(512).regex(UPID_PATTERN, {
    message: "Not a task id: expected UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>:",
  }).openapi({
    param: { name: "upid", in: "path" },
    example: "UPID:pve1:0000A1B2:00C0FFEE:6560A000:qmstart:100:root@pam:",
  }),
});

const TaskQuery = z.object({
  endpoint_id: z.coerce.number().int().min(1).openapi({
    description: "The hypervisor endpoint copy the task runs on (the verb's endpoint_id).",
  }),
});

const TaskStatus = z.object({
  upid: z.string(),
  node: z.string(),
  status: z.enum(["running", "stopped"]),
  exitstatus: z.string().nullable().openapi({
    description: '"OK" when it succeeded, the error text when it failed, null while running.',
  }),
  type: z.string(),
  id: z.string(),
  starttime: z.number().int(),
  endtime: z.number().int().optional(),
}).openapi("HypervisorTaskStatus");

/** `GET /hypervisor/tasks/{upid}`: one task's status, so a verb's caller can follow it. */
function taskRoute(
  app: ReturnType<typeof backendRouter<BackendEnv>>,
  services: BackendServices,
  read: (
    record: HypervisorEndpointRecord,
    path: string,
    params: Record<string, string> | undefined,
    signal: AbortSignal | undefined,
  ) => Promise<unknown>,
) {
  app.openapi(
    createRoute({
      method: "get",
      path: "/hypervisor/tasks/{upid}",
      tags: ["hypervisor"],
      summary: "Status of one hypervisor task (the task_upid a verb answers)",
      request: { params: TaskParams, query: TaskQuery },
      responses: {
        200: jsonContent(TaskStatus, "The task, running or stopped with its exit status"),
        404: jsonContent(Reason404, "Unknown endpoint_id"),
        409: jsonContent(z.union([Detail, CredentialUndecryptable]), "Disabled, or secrets"),
        502: jsonContent(Detail, "The hypervisor failed; detail names the call"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const { upid } = c.req.valid("param");
      const { endpoint_id: id } = c.req.valid("query");
      const record = await services.hypervisorEndpoints.get(id);
      if (!record) {
        throw new ApiError(404, {
          reason: "endpoint_not_found",
          detail: `Hypervisor endpoint ${id} not found.`,
          endpoint_id: id,
        });
      }
      if (!record.enabled) {
        throw fail(409, `Hypervisor endpoint ${id} ("${record.name}") is disabled.`);
      }
      const node = UPID_PATTERN.exec(upid)![1];
      // The pattern admits no "/", "?", "#" or "%": the UPID goes into the path as it is.
      const path = `/nodes/${node}/tasks/${upid}/status`;
      const raw = await read(record, path, undefined, c.req.raw.signal);
      const data = (raw && typeof raw === "object" ? raw : {}) as Record<string, unknown>;
      const stopped = data.status === "stopped";
      const endtime = Number(data.endtime);
      return c.json({
        upid,
        node,
        status: stopped ? "stopped" as const : "running" as const,
        exitstatus: stopped ? String(data.exitstatus ?? "unknown") : null,
        type: String(data.type ?? ""),
        id: String(data.id ?? ""),
        starttime: Number.isInteger(Number(data.starttime)) ? Number(data.starttime) : 0,
        ...(stopped && Number.isInteger(endtime) ? { endtime } : {}),
      }, 200);
    },
  );
}

const Reason404 = z.object({
  reason: z.literal("endpoint_not_found"),
  detail: z.string(),
  endpoint_id: z.number().int(),
});
