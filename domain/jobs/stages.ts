/**
 * The stages a job can run, from the backend's stage table (domain/sync/runner.ts): sync
 * type, stream path, and whether a failure only skips it.
 */
import { STAGES } from "../sync/runner.ts";

export interface JobStage {
  type: string;
  /** The backend's SSE path of this stage alone. */
  stream: string;
  /** Optional stages that fail are logged as skipped with the cause; others fail the job. */
  optional: boolean;
}

export const OPTIONAL_STAGES: ReadonlySet<string> = new Set([
  "task-history",
  "vm-backups",
  "vm-snapshots",
  "sdn",
]);

export const JOB_STAGES: readonly JobStage[] = STAGES.map((s) => ({
  type: s.type,
  stream: `${s.path}/stream`,
  optional: OPTIONAL_STAGES.has(s.type),
}));

export const FULL_UPDATE_STREAM = "/full-update/stream";

export const SYNC_TYPES: readonly string[] = JOB_STAGES.map((s) => s.type);

export function stageOf(type: string): JobStage | undefined {
  return JOB_STAGES.find((s) => s.type === type);
}
