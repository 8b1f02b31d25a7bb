/**
 * The backend's 13 sync stages as the command line names them: the sync type (the `step`
 * field of the stage's SSE frames) and the stream path. `/full-update/stream` runs all 13.
 */
import { STAGES } from "../../domain/sync/runner.ts";

export interface StageRoute {
  /** Sync type, as in the frames' `step` field. */
  type: string;
  /** GET path of the SSE stream; the same path without `/stream` answers one JSON response. */
  stream: string;
  /** What the stage writes, in a few words. */
  summary: string;
}

export const FULL_UPDATE_STREAM = "/full-update/stream";

/** The backend's own stage table: paths and names are never written twice. */
export const SYNC_STAGES: readonly StageRoute[] = STAGES.map((stage) => ({
  type: stage.type,
  stream: `${stage.path}/stream`,
  summary: stage.summary,
}));

/** Short names people type; each maps to one sync type. */
const ALIASES: Readonly<Record<string, string>> = {
  vms: "virtual-machines",
  tasks: "task-history",
  disks: "vm-disks",
  backups: "vm-backups",
  snapshots: "vm-snapshots",
  interfaces: "network-interfaces",
  ips: "ip-addresses",
};

export type StageSelection = { ok: true; stages: StageRoute[] } | { ok: false; unknown: string[] };

/**
 * Resolves a list of names to stages in the pipeline's own order (later stages read what
 * earlier ones wrote, so `vm-disks,devices` still runs devices first). Duplicates collapse.
 */
export function selectStages(names: readonly string[]): StageSelection {
  const wanted = new Set<string>();
  const unknown: string[] = [];
  for (const raw of names) {
    const name = raw.trim().toLowerCase();
    if (!name) continue;
    const type = ALIASES[name] ?? name;
    if (SYNC_STAGES.some((s) => s.type === type)) wanted.add(type);
    else unknown.push(raw.trim());
  }
  if (unknown.length > 0) return { ok: false, unknown };
  return { ok: true, stages: SYNC_STAGES.filter((s) => wanted.has(s.type)) };
}
