/**
 * Runs sync stages for the chosen hypervisor endpoints and reports every step as an event
 * (the SSE frames and the JSON answer are both made from these). A stage failing for one
 * endpoint is reported and the run goes on; `complete` comes last, exactly once.
 */
import { CredentialError } from "../credentials.ts";
import { type Metrics, noopMetrics } from "../../infra/metrics.ts";
import { noopTracer, type Tracer } from "../../infra/tracing.ts";
import type { SyncLedger } from "./ledger.ts";
import { addResults, emptyResult, type StageContext, type StageResult } from "./context.ts";
import type { CallFailure, HypervisorReader, InventoryApi, SyncEndpoint } from "./ports.ts";
import { syncDevices } from "./stages/devices.ts";
import { syncStorage } from "./stages/storage.ts";
import { syncVirtualMachines } from "./stages/virtual_machines.ts";
import { syncTaskHistory } from "./stages/task_history.ts";
import { syncVmDisks } from "./stages/vm_disks.ts";
import { syncBackups } from "./stages/backups.ts";
import { syncSnapshots } from "./stages/snapshots.ts";
import { syncNetworkInterfaces } from "./stages/network_interfaces.ts";
import { syncVmInterfaces } from "./stages/vm_interfaces.ts";
import { syncIpAddresses } from "./stages/ip_addresses.ts";
import { syncSdn } from "./stages/sdn.ts";
import { syncReplications } from "./stages/replications.ts";
import { syncBackupRoutines } from "./stages/backup_routines.ts";
import type { PlanItem } from "./plan.ts";
import {
  DEFAULT_SYNC_OPTIONS,
  OPTIONAL_STAGES,
  type OptionalStage,
  stageParam,
  type SyncOptions,
} from "./options.ts";

/** Error frames for refused objects per stage and endpoint; more are only counted. */
const MAX_ITEM_FRAMES = 20;

export interface StageDef {
  /** The sync type: the `step` of its frames. */
  type: string;
  /** Route path without `/stream`. */
  path: string;
  summary: string;
  run: (ctx: StageContext) => Promise<void>;
}

export const STAGES: readonly StageDef[] = [
  {
    type: "devices",
    path: "/dcim/devices/create",
    summary: "Sites, cluster, one device per node, plugin nodes",
    run: syncDevices,
  },
  {
    type: "storage",
    path: "/virtualization/virtual-machines/storage/create",
    summary: "Plugin storage records",
    run: syncStorage,
  },
  {
    type: "virtual-machines",
    path: "/virtualization/virtual-machines/create",
    summary: "Virtual machines and containers, roles, tags, VM sync-state",
    run: syncVirtualMachines,
  },
  {
    type: "task-history",
    path: "/virtualization/virtual-machines/task-history/create",
    summary: "Plugin task history",
    run: syncTaskHistory,
  },
  {
    type: "vm-disks",
    path: "/virtualization/virtual-machines/virtual-disks/create",
    summary: "Virtual disks",
    run: syncVmDisks,
  },
  {
    type: "vm-backups",
    path: "/virtualization/virtual-machines/backups/all/create",
    summary: "Plugin backups",
    run: syncBackups,
  },
  {
    type: "vm-snapshots",
    path: "/virtualization/virtual-machines/snapshots/all/create",
    summary: "Plugin snapshots",
    run: syncSnapshots,
  },
  {
    type: "network-interfaces",
    path: "/dcim/devices/interfaces/create",
    summary: "Node interfaces and their IP addresses",
    run: syncNetworkInterfaces,
  },
  {
    type: "vm-interfaces",
    path: "/virtualization/virtual-machines/interfaces/create",
    summary: "VM interfaces, MAC addresses, VLANs",
    run: syncVmInterfaces,
  },
  {
    type: "ip-addresses",
    path: "/virtualization/virtual-machines/interfaces/ip-address/create",
    summary: "VM IP addresses and primary IPs",
    run: syncIpAddresses,
  },
  {
    type: "sdn",
    path: "/hypervisor/sdn/create",
    summary: "SDN prefixes and VLANs",
    run: syncSdn,
  },
  {
    type: "replications",
    path: "/hypervisor/replication",
    summary: "Plugin replications",
    run: syncReplications,
  },
  {
    type: "backup-routines",
    path: "/hypervisor/cluster/backup",
    summary: "Plugin backup routines",
    run: syncBackupRoutines,
  },
];

export interface StepFrame {
  step: string;
  status: "started" | "progress" | "completed";
  message: string;
  progress?: { current: number; total: number };
  result?: StageResult;
  /** Completed frames: how long the stage took, all endpoints together. */
  elapsed_ms?: number;
}

export interface ErrorFrame {
  step: string;
  status: "failed";
  error: string;
  detail: string;
  reason?: "credential_undecryptable";
  endpoint_id?: number;
  operation?: string;
  url?: string;
  upstream_status?: number | null;
  hint?: string;
  object?: string;
}

/** An object left unwritten because another owner holds it in the inventory (docs/sync.md). */
export interface ConflictFrame {
  step: string;
  endpoint_id: number;
  object: string;
  detail: string;
}

export interface CompleteFrame {
  ok: boolean;
  /** Set on a dry run: nothing was written, `result` counts what would be. */
  dry_run?: boolean;
  /** The plan (dry run) or the record of what was written (`plan=true`), in write order. */
  plan?: PlanItem[];
  message: string;
  result: StageResult;
  stages: { step: string; result: StageResult }[];
  errors?: ErrorFrame[];
  /** Objects not written because the inventory holds them for another owner. */
  conflicts?: ConflictFrame[];
  /**
   * Objects someone edited in the inventory between the run's read and its write: re-read and
   * written again under the owner policy (docs/sync.md, "Edits made while a run writes").
   */
  edited?: ConflictFrame[];
}

export type SyncEvent =
  | { event: "step"; data: StepFrame }
  | { event: "plan"; data: PlanItem }
  | { event: "error"; data: ErrorFrame }
  | { event: "conflict"; data: ConflictFrame }
  | { event: "edited"; data: ConflictFrame }
  | { event: "complete"; data: CompleteFrame };

export interface RunOptions {
  stages: readonly StageDef[];
  endpoints: SyncEndpoint[];
  /** The hypervisor reader of one endpoint (secrets opened by it at call time). */
  hypervisor: (endpoint: SyncEndpoint) => HypervisorReader;
  inventory: InventoryApi;
  emit: (event: SyncEvent) => void | Promise<void>;
  signal: AbortSignal;
  now?: () => number;
  concurrency?: number;
  /** Minimum milliseconds between two progress frames of one stage. */
  progressEveryMs?: number;
  /** Run options (default: DEFAULT_SYNC_OPTIONS). */
  syncOptions?: SyncOptions;
  /** One endpoint's options (its policy under the run's query); default `syncOptions`. */
  syncOptionsFor?: (endpoint: SyncEndpoint) => SyncOptions;
  /** Stage durations, object counts and run outcomes (docs/metrics.md); default: not kept. */
  metrics?: Metrics;
  /** A `sync.run` span with a `sync.stage <type>` child per stage (docs/metrics.md). */
  tracer?: Tracer;
  /**
   * The ledger of one endpoint on the run's inventory, kept between runs (docs/sync.md,
   * "Re-runs: guests that did not change"); default: none, every guest compared.
   */
  ledger?: (endpoint: SyncEndpoint) => SyncLedger | Promise<SyncLedger>;
  /**
   * A run not cancelled ended with the endpoint's ledger read past its writes: kept for the
   * next run, whichever process makes it (docs/sync.md, "The ledger across restarts and
   * processes"). A failure is the caller's to report: the run's outcome does not change.
   */
  keepLedger?: (endpoint: SyncEndpoint) => Promise<unknown>;
}

function describeFailure(
  step: string,
  endpoint: SyncEndpoint,
  error: unknown,
): ErrorFrame {
  const where = `endpoint ${endpoint.id} ("${endpoint.name}")`;
  if (error instanceof CredentialError) {
    return {
      step,
      status: "failed",
      error: "Stored credentials cannot be decrypted",
      detail: `${error.message}. Hint: save the secret again on the endpoint, ` +
        "or restore the encryption key it was stored with.",
      reason: "credential_undecryptable",
      endpoint_id: endpoint.id,
    };
  }
  const failure = (error ?? {}) as CallFailure & Error;
  const message = error instanceof Error ? error.message : String(error);
  const isInventory = typeof failure.url === "string" && failure.url.includes("/api/") &&
    !failure.url.includes("/api2/");
  const kind = failure.url
    ? (isInventory ? "Inventory request failed" : "Hypervisor request failed")
    : "Stage failed";
  const object = failure.object ? ` while writing ${failure.object}` : "";
  return {
    step,
    status: "failed",
    error: kind,
    detail: `${step} for ${where}${object}: ${message}`,
    endpoint_id: endpoint.id,
    operation: failure.operation,
    url: failure.url,
    upstream_status: failure.status ?? null,
    hint: failure.hint,
    object: failure.object,
  };
}

export function runSync(options: RunOptions): Promise<CompleteFrame> {
  const tracer = options.tracer ?? noopTracer;
  const dryRun = (options.syncOptions ?? DEFAULT_SYNC_OPTIONS).dryRun;
  return tracer.span("sync.run", {
    "bridgebox.sync.stages": options.stages.map((s) => s.type).join(","),
    "bridgebox.sync.endpoints": options.endpoints.length,
    "bridgebox.sync.dry_run": dryRun,
  }, async (span) => {
    const complete = await runStages(options, tracer);
    span.set({
      "bridgebox.sync.created": complete.result.created,
      "bridgebox.sync.updated": complete.result.updated,
      "bridgebox.sync.failed": complete.result.failed,
    });
    if (!complete.ok) span.fail(complete.message);
    return complete;
  });
}

async function runStages(options: RunOptions, tracer: Tracer): Promise<CompleteFrame> {
  const metrics = options.metrics ?? noopMetrics;
  const { signal } = options;
  const now = options.now ?? Date.now;
  const every = options.progressEveryMs ?? 250;
  const total = emptyResult();
  const stages: CompleteFrame["stages"] = [];
  const errors: ErrorFrame[] = [];
  const conflicts: ConflictFrame[] = [];
  const edited: ConflictFrame[] = [];
  const caches = new Map<number, Map<string, unknown>>();
  const shared = new Map<string, unknown>();
  const readers = new Map<number, HypervisorReader>();
  /** Endpoints that cannot be used (no connection, login refused): reported once, then skipped. */
  const unusable = new Set<number>();
  let cancelled = false;
  const syncOptions = options.syncOptions ?? DEFAULT_SYNC_OPTIONS;
  const runStartedAt = now();
  /** Each endpoint's ledger, read up to the log's end before its first stage (none: dry run). */
  const ledgers = new Map<number, { endpoint: SyncEndpoint; ledger?: SyncLedger }>();
  const ledgerOf = async (endpoint: SyncEndpoint, dryRun: boolean) => {
    if (ledgers.has(endpoint.id)) return ledgers.get(endpoint.id)!.ledger;
    const ledger = dryRun ? undefined : await options.ledger?.(endpoint);
    ledgers.set(endpoint.id, { endpoint, ledger });
    if (ledger) {
      ledger.startRun();
      // A log that cannot be read leaves the ledger empty: this run compares every guest.
      await ledger.catchUp(options.inventory, signal).catch(() => {});
    }
    return ledger;
  };

  for (const stage of options.stages) {
    if (signal.aborted) {
      cancelled = true;
      break;
    }
    const optional = (OPTIONAL_STAGES as readonly string[]).includes(stage.type);
    if (optional && !syncOptions.stages[stage.type as OptionalStage]) {
      // Left out by the run's options: framed like any stage, with nothing done.
      const param = stageParam(stage.type as OptionalStage);
      await options.emit({
        event: "step",
        data: { step: stage.type, status: "started", message: `${stage.summary}: skipped` },
      });
      stages.push({ step: stage.type, result: emptyResult() });
      await options.emit({
        event: "step",
        data: {
          step: stage.type,
          status: "completed",
          message: `${stage.summary}: skipped (${param}=false)`,
          result: emptyResult(),
          elapsed_ms: 0,
        },
      });
      continue;
    }
    // A child of sync.run; ended below when the stage completes or the run is cancelled.
    const span = tracer.start(`sync.stage ${stage.type}`, { "bridgebox.sync.stage": stage.type });
    const names = options.endpoints.map((e) => e.name).join(", ") || "no enabled endpoint";
    await options.emit({
      event: "step",
      data: { step: stage.type, status: "started", message: `${stage.summary}: ${names}` },
    });
    const result = emptyResult();
    const startedAt = now();
    for (const endpoint of options.endpoints) {
      if (signal.aborted) break;
      if (unusable.has(endpoint.id)) continue;
      const endpointOptions = options.syncOptionsFor?.(endpoint) ?? syncOptions;
      // An endpoint whose policy leaves this optional stage out.
      if (optional && !endpointOptions.stages[stage.type as OptionalStage]) continue;
      let cache = caches.get(endpoint.id);
      if (!cache) caches.set(endpoint.id, cache = new Map());
      let hv = readers.get(endpoint.id);
      if (!hv) readers.set(endpoint.id, hv = options.hypervisor(endpoint));
      let last = 0;
      let refused = 0;
      const pending: Promise<unknown>[] = [];
      /** Reports an object as a `conflict` or `edited` frame, the first MAX_ITEM_FRAMES a stage. */
      const objectFrames = (event: "conflict" | "edited", into: ConflictFrame[]) => {
        let sent = 0;
        return (object: string, detail: string) => {
          if (++sent > MAX_ITEM_FRAMES) return;
          const frame: ConflictFrame = {
            step: stage.type,
            endpoint_id: endpoint.id,
            object,
            detail,
          };
          into.push(frame);
          pending.push(Promise.resolve(options.emit({ event, data: frame })));
        };
      };
      const ledger = await ledgerOf(endpoint, syncOptions.dryRun || endpointOptions.dryRun);
      const ctx: StageContext = {
        endpoint,
        hv,
        ledger,
        inv: options.inventory,
        signal,
        result: emptyResult(),
        cache,
        shared,
        now,
        concurrency: options.concurrency ?? 8,
        options: endpointOptions,
        itemFailed: (object, error) => {
          ctx.result.failed++;
          if (++refused > MAX_ITEM_FRAMES) return;
          const frame = describeFailure(stage.type, endpoint, error);
          frame.object = object;
          if (refused === MAX_ITEM_FRAMES) {
            frame.detail += ` (further refused objects of this stage are only counted)`;
          }
          errors.push(frame);
          pending.push(Promise.resolve(options.emit({ event: "error", data: frame })));
        },
        itemConflict: objectFrames("conflict", conflicts),
        itemEdited: objectFrames("edited", edited),
        progress: (current, of, message) => {
          const t = now();
          if (current !== 0 && current !== of && t - last < every) return;
          last = t;
          pending.push(Promise.resolve(options.emit({
            event: "step",
            data: {
              step: stage.type,
              status: "progress",
              message: `${endpoint.name}: ${message}`,
              progress: { current, total: of },
            },
          })));
        },
      };
      try {
        await stage.run(ctx);
      } catch (error) {
        if (signal.aborted) {
          cancelled = true;
          break;
        }
        ctx.result.failed++;
        const frame = describeFailure(stage.type, endpoint, error);
        if (error instanceof CredentialError || (error as CallFailure | null)?.unusable) {
          unusable.add(endpoint.id);
          const rest = options.stages.slice(options.stages.indexOf(stage) + 1);
          if (rest.length) {
            frame.detail += ` (endpoint ${endpoint.id} is skipped for the rest of this run: ` +
              `${rest.map((s) => s.type).join(", ")})`;
          }
        }
        errors.push(frame);
        await options.emit({ event: "error", data: frame });
      } finally {
        await Promise.all(pending);
      }
      addResults(result, ctx.result);
    }
    if (cancelled || signal.aborted) {
      cancelled = true;
      span.fail("cancelled");
      span.end();
      break;
    }
    addResults(total, result);
    stages.push({ step: stage.type, result });
    const elapsed = now() - startedAt;
    metrics.syncStage(stage.type, elapsed / 1000, result, syncOptions.dryRun);
    span.set({
      "bridgebox.sync.created": result.created,
      "bridgebox.sync.updated": result.updated,
      "bridgebox.sync.unchanged": result.unchanged,
      "bridgebox.sync.deleted": result.deleted,
      "bridgebox.sync.failed": result.failed,
    });
    if (result.failed) span.fail(`${result.failed} failed`);
    span.end();
    await options.emit({
      event: "step",
      data: {
        step: stage.type,
        status: "completed",
        message: result.failed
          ? `${stage.summary}: failed for ${result.failed} endpoint(s)`
          : `${stage.summary}: done`,
        result,
        elapsed_ms: Math.round(elapsed),
      },
    });
  }

  // The run's own writes read from the log now, not by the next run after others' writes
  // may have pushed them out of a bounded log.
  if (!cancelled) {
    for (const { endpoint, ledger } of ledgers.values()) {
      if (!ledger) continue;
      await ledger.catchUp(options.inventory, signal).catch(() => {});
      await options.keepLedger?.(endpoint);
    }
  }

  let complete: CompleteFrame;
  if (cancelled) {
    complete = {
      ok: false,
      message: "Sync cancelled",
      result: total,
      stages,
      errors: [...errors, {
        step: "sync",
        status: "failed",
        error: "cancelled",
        detail: "The sync was cancelled (client disconnected or server shutting down).",
      }],
    };
  } else if (errors.length) {
    complete = {
      ok: false,
      message: `Sync finished with ${errors.length} error(s)`,
      result: total,
      stages,
      errors,
    };
  } else {
    complete = {
      ok: true,
      message: options.endpoints.length
        ? `Sync complete: ${total.created} created, ${total.updated} updated, ` +
          `${total.unchanged} unchanged, ${total.deleted} deleted` +
          (conflicts.length ? `, ${conflicts.length} held by another owner (see conflicts)` : "") +
          (edited.length ? `, ${edited.length} edited during the run (see edited)` : "")
        : "Nothing to sync: no enabled hypervisor endpoint",
      result: total,
      stages,
    };
  }
  if (conflicts.length) complete.conflicts = conflicts;
  if (edited.length) complete.edited = edited;
  if (syncOptions.dryRun) {
    complete.dry_run = true;
    complete.message = `Dry run, nothing written: ${complete.message}`;
  }
  metrics.syncRun(
    cancelled ? "cancelled" : complete.ok ? "ok" : "failed",
    (now() - runStartedAt) / 1000,
    syncOptions.dryRun,
  );
  await options.emit({ event: "complete", data: complete });
  return complete;
}
