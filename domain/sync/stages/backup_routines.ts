/**
 * Stage 13, backup-routines: `/cluster/backup` jobs into plugin backup routines, identified
 * by endpoint + job id. Retention comes from `prune-backups`, the selection from `vmid`. A job
 * gone upstream is marked `stale` (never deleted: it may be what explains a missing backup).
 */
import { hvGet, type StageContext } from "../context.ts";
import { clusterBase, PATHS } from "../base.ts";
import { nodeIndex } from "./devices.ts";
import { storageIndex } from "./storage.ts";
import { type Desired, indexBy, reconcile } from "../reconcile.ts";
import { propertyString } from "../proxmox.ts";

type BackupJob = Record<string, unknown> & { id: string };

const int = (v: unknown): number | null => {
  const n = Number(v);
  return v !== undefined && v !== null && v !== "" && Number.isInteger(n) && n >= 0 ? n : null;
};

export async function syncBackupRoutines(ctx: StageContext): Promise<void> {
  const base = await clusterBase(ctx);
  const { nodes } = await nodeIndex(ctx);
  const storages = await storageIndex(ctx);
  const jobs = (await hvGet<BackupJob[]>(ctx, "/cluster/backup") ?? [])
    .filter((j) => typeof j.id === "string" && j.id);
  const existing = indexBy(
    await ctx.inv.list(
      PATHS.backupRoutines,
      { endpoint_id: String(base.pluginEndpoint) },
      ctx.signal,
    ),
    (r) => String(r.job_id),
  );
  const desired: Desired[] = jobs.map((j) => {
    const prune = propertyString(j["prune-backups"]);
    const performance = propertyString(j.performance);
    const fleecing = typeof j.fleecing === "string" ? j.fleecing : "";
    const fleecingStorage = propertyString(fleecing).storage;
    const mode = String(j["pbs-change-detection-mode"] ?? "default");
    return {
      key: j.id,
      label: `backup routine ${j.id}`,
      body: {
        endpoint: base.pluginEndpoint,
        job_id: j.id,
        enabled: j.enabled === undefined ? true : Number(j.enabled) === 1,
        schedule: String(j.schedule ?? j.starttime ?? ""),
        node: typeof j.node === "string" ? nodes.get(j.node)?.id ?? null : null,
        storage: typeof j.storage === "string" ? storages.get(j.storage)?.id ?? null : null,
        selection: String(j.vmid ?? "").split(",").map((v) => Number(v.trim()))
          .filter((v) => Number.isInteger(v) && v > 0),
        comment: String(j.comment ?? ""),
        status: "active",
        keep_last: int(prune["keep-last"]),
        keep_daily: int(prune["keep-daily"]),
        keep_weekly: int(prune["keep-weekly"]),
        keep_monthly: int(prune["keep-monthly"]),
        keep_yearly: int(prune["keep-yearly"]),
        keep_all: prune["keep-all"] === undefined ? null : prune["keep-all"] === "1",
        notes_template: String(j["notes-template"] ?? ""),
        bwlimit: int(j.bwlimit),
        zstd: int(j.zstd),
        io_workers: int(performance["max-workers"]),
        fleecing,
        fleecing_storage: fleecingStorage ? storages.get(fleecingStorage)?.id ?? null : null,
        repeat_missed: Number(j["repeat-missed"] ?? 0) === 1,
        pbs_change_detection_mode: ["default", "legacy", "data"].includes(mode) ? mode : "default",
        raw_config: j,
      },
    };
  });
  ctx.progress(0, desired.length, `${desired.length} backup jobs`);
  await reconcile(ctx, {
    path: PATHS.backupRoutines,
    existing,
    desired,
    orphan: () => ({ status: "stale" }),
  });
  ctx.progress(desired.length, desired.length, `${desired.length} backup jobs synced`);
}
