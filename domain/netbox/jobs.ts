/**
 * core.job records, written by code (the REST resource is read-only): the plugin's sync job
 * runner creates a job, moves its status and appends log lines; clients read
 * /api/core/jobs/{id}/.
 */
import type { EngineApi, StoredObject } from "./types.ts";

export const JOB_MODEL = "core.job";
export type JobStatus = "pending" | "scheduled" | "running" | "completed" | "errored" | "failed";
export type JobLogLevel = "debug" | "info" | "warning" | "error";

export interface JobLogEntry {
  timestamp: string;
  level: JobLogLevel;
  message: string;
}

/** Log lines kept per job (oldest dropped first) so a record stays far below 64 KiB. */
export const MAX_LOG_ENTRIES = 200;
const MAX_MESSAGE = 500;
/** Size budget of a job's log (the rest of the record, `data` included, gets the remainder). */
const MAX_LOG_BYTES = 32_000;

export async function createJob(
  engine: EngineApi,
  input: {
    name: string;
    object_type?: string | null;
    object_id?: number | null;
    data?: unknown;
    status?: JobStatus;
    scheduled?: string | null;
    user?: unknown;
  },
): Promise<StoredObject> {
  const result = await engine.insert(JOB_MODEL, {
    name: input.name,
    object_type: input.object_type ?? null,
    object_id: input.object_id ?? null,
    data: input.data ?? null,
    status: input.status ?? "pending",
    scheduled: input.scheduled ?? null,
    user: input.user ?? null,
  });
  if (!result.ok) throw new Error(`could not create job: ${JSON.stringify(result)}`);
  return result.value;
}

/** Sets status/started/completed/data/error; `started`/`completed` default to now on transitions. */
export async function updateJob(
  engine: EngineApi,
  id: number,
  changes: {
    status?: JobStatus;
    data?: unknown;
    error?: string;
    started?: string;
    completed?: string;
  },
  now: () => number = Date.now,
): Promise<StoredObject | null> {
  const patch: Record<string, unknown> = { ...changes };
  const iso = new Date(now()).toISOString();
  if (changes.status === "running" && !changes.started) patch.started = iso;
  if (
    changes.status && ["completed", "errored", "failed"].includes(changes.status) &&
    !changes.completed
  ) patch.completed = iso;
  if (typeof patch.error === "string") patch.error = (patch.error as string).slice(0, 1000);
  return await engine.patchStored(JOB_MODEL, id, patch);
}

export async function appendJobLog(
  engine: EngineApi,
  id: number,
  level: JobLogLevel,
  message: string,
  now: () => number = Date.now,
): Promise<StoredObject | null> {
  const entry = {
    timestamp: new Date(now()).toISOString(),
    level,
    message: message.slice(0, MAX_MESSAGE),
  };
  // The updater runs against the freshest record on every retry, so concurrent appends never drop lines.
  return await engine.patchStored(JOB_MODEL, id, (current) => {
    const entries = [...((current.log_entries as JobLogEntry[] | undefined) ?? []), entry];
    const kept = entries.slice(-MAX_LOG_ENTRIES);
    // Keep the record far below the 64 KiB value limit whatever the messages hold.
    while (kept.length > 1 && engine.recordSize(kept) > MAX_LOG_BYTES) kept.shift();
    return { log_entries: kept };
  });
}
