/**
 * Stage 6, vm-backups: backup volumes (`/nodes/{n}/storage/{s}/content?content=backup`) into
 * plugin backup records, identified by endpoint + volid. A shared storage is read once. A
 * backup gone upstream is marked stale.
 */
import { hvGet, mapLimit, type StageContext } from "../context.ts";
import { clusterBase, PATHS } from "../base.ts";
import { nodeIndex } from "./devices.ts";
import { nodeStorages, storageIndex } from "./storage.ts";
import { vmAnchors } from "../guests.ts";
import { type Desired, indexBy, reconcile } from "../reconcile.ts";
import { epochToIso } from "../proxmox.ts";
import { BACKUP_STAGE, digestOf, LEDGER_MODELS, readLog } from "../ledger.ts";

/**
 * The ledger's key for the endpoint's backup records as a whole: backups are listed per storage,
 * not per guest, so the stage records one digest of all of them (no vmid is negative).
 */
const ALL_BACKUPS = -1;

interface BackupVolume {
  volid: string;
  format?: string;
  size?: number;
  ctime?: number;
  vmid?: number;
  subtype?: string;
  notes?: string;
  protected?: number;
  encrypted?: string;
  verification?: { state?: string };
}

export async function syncBackups(ctx: StageContext): Promise<void> {
  const base = await clusterBase(ctx);
  const { nodes } = await nodeIndex(ctx);
  const storages = await storageIndex(ctx);
  const anchors = await vmAnchors(ctx);
  const perNode = await nodeStorages(ctx);
  const reads: { node: string; storage: string }[] = [];
  const sharedDone = new Set<string>();
  for (const [node, list] of perNode) {
    for (const s of list) {
      if (!(s.content ?? "").split(",").includes("backup") || s.active === 0) continue;
      if (s.shared === 1) {
        if (sharedDone.has(s.storage)) continue;
        sharedDone.add(s.storage);
      }
      reads.push({ node, storage: s.storage });
    }
  }
  const lists = await mapLimit(
    reads,
    ctx.concurrency,
    ctx.signal,
    (r) =>
      hvGet<BackupVolume[]>(ctx, `/nodes/${r.node}/storage/${r.storage}/content`, {
        content: "backup",
      }),
  );
  const desired: Desired[] = [];
  const seen = new Set<string>();
  reads.forEach((r, i) => {
    for (const v of lists[i] ?? []) {
      if (!v.volid || seen.has(v.volid)) continue;
      seen.add(v.volid);
      const type = v.subtype === "qemu" || v.subtype === "lxc" ? v.subtype : null;
      desired.push({
        key: v.volid,
        label: `backup ${v.volid}`,
        body: {
          endpoint: base.pluginEndpoint,
          storage: storages.get(r.storage)?.id ?? null,
          node: nodes.get(r.node)?.id ?? null,
          virtual_machine: v.vmid !== undefined ? anchors.get(v.vmid) ?? null : null,
          vmid: v.vmid ?? null,
          vm_type: type,
          volid: v.volid,
          format: v.format ?? null,
          size: v.size ?? null,
          creation_time: epochToIso(v.ctime),
          notes: v.notes ?? "",
          protected: v.protected === 1,
          encrypted: Boolean(v.encrypted),
          verification_state: v.verification?.state ?? null,
          status: "active",
          raw_config: v,
        },
      });
    }
  });
  ctx.progress(0, desired.length, `${desired.length} backups`);
  // The ledger (docs/sync.md, "Re-runs: guests that did not change"): when the storages list the
  // same backups as when it recorded them and nobody else touched a backup record since, the
  // records are not read again (as a compare, each counts unchanged).
  const ledger = await readLog(ctx);
  const digest = digestOf(desired.map((d) => d.body));
  if (ledger?.unchanged(BACKUP_STAGE, ALL_BACKUPS, digest)) {
    ctx.result.unchanged += desired.length;
    ctx.progress(desired.length, desired.length, `${desired.length} backups synced`);
    return;
  }
  const mark = ledger?.beginSlice() ?? 0;
  try {
    const existing = indexBy(
      await ctx.inv.list(PATHS.backups, { endpoint_id: String(base.pluginEndpoint) }, ctx.signal),
      (b) => String(b.volid),
    );
    const track = (records: Map<string, { id: number }>) =>
      ledger?.track(
        ALL_BACKUPS,
        [...records.values()].map((b) => [LEDGER_MODELS.backup, b.id] as const),
      );
    track(existing);
    const failed = ctx.result.failed;
    const saved = await reconcile(ctx, {
      path: PATHS.backups,
      existing,
      desired,
      orphan: () => ({ status: "stale" }),
      answer: ["id"], // nothing of what the writes answer is read
    });
    if (ledger) {
      track(saved.objects);
      // Entries made since the read (someone's edit meanwhile) forget the digest.
      await readLog(ctx);
      if (ctx.result.failed === failed) ledger.record(BACKUP_STAGE, ALL_BACKUPS, digest, mark);
    }
  } finally {
    ledger?.endSlice();
  }
  ctx.progress(desired.length, desired.length, `${desired.length} backups synced`);
}
