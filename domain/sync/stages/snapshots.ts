/**
 * Stage 7, vm-snapshots: each guest's snapshots (`/nodes/{n}/{type}/{vmid}/snapshot`, the
 * "current" pseudo-entry left out) into plugin snapshot records, identified by endpoint +
 * vmid + snapshot name. Only guests whose config names a `parent` have snapshots, so only
 * those are asked. A snapshot gone upstream is marked stale.
 */
import { mapLimit, type StageContext } from "../context.ts";
import { clusterBase, PATHS } from "../base.ts";
import { nodeIndex } from "./devices.ts";
import { type Guest, guests, vmAnchors } from "../guests.ts";
import { type Desired, indexBy, reconcile } from "../reconcile.ts";
import { epochToIso } from "../proxmox.ts";

interface SnapshotEntry {
  name: string;
  description?: string;
  parent?: string;
  snaptime?: number;
  vmstate?: number;
}

export async function syncSnapshots(ctx: StageContext): Promise<void> {
  const base = await clusterBase(ctx);
  const { nodes } = await nodeIndex(ctx);
  const list = await guests(ctx);
  const anchors = await vmAnchors(ctx);
  const existing = indexBy(
    await ctx.inv.list(PATHS.snapshots, { endpoint_id: String(base.pluginEndpoint) }, ctx.signal),
    (s) => `${s.vmid}:${s.name}`,
  );
  const desired: Desired[] = [];
  // A slice of guests' configs at a time (guests.ts); only snapshot entries are kept.
  for (const slice of list.slices()) {
    const withSnapshots = slice.filter((g) => typeof g.config.parent === "string");
    const lists = await mapLimit(
      withSnapshots,
      ctx.concurrency,
      ctx.signal,
      (g) =>
        ctx.hv.get<SnapshotEntry[]>(
          `/nodes/${g.node}/${g.type}/${g.vmid}/snapshot`,
          undefined,
          ctx.signal,
        ),
    );
    withSnapshots.forEach((g, i) => addSnapshots(g, lists[i]));
  }
  function addSnapshots(g: Guest, entries: SnapshotEntry[] | null | undefined): void {
    for (const s of entries ?? []) {
      if (!s.name || s.name === "current") continue;
      desired.push({
        key: `${g.vmid}:${s.name}`,
        label: `snapshot ${s.name} of vmid ${g.vmid}`,
        body: {
          endpoint: base.pluginEndpoint,
          virtual_machine: anchors.get(g.vmid) ?? null,
          node: nodes.get(g.node)?.id ?? null,
          vmid: g.vmid,
          vm_type: g.type,
          name: s.name,
          description: s.description ?? "",
          parent: s.parent ?? null,
          snaptime: epochToIso(s.snaptime),
          vmstate: s.vmstate === 1,
          status: "active",
          raw_config: s,
        },
      });
    }
  }
  ctx.progress(0, desired.length, `${desired.length} snapshots`);
  await reconcile(ctx, {
    path: PATHS.snapshots,
    existing,
    desired,
    orphan: () => ({ status: "stale" }),
  });
  ctx.progress(desired.length, desired.length, `${desired.length} snapshots synced`);
}
