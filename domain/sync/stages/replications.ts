/**
 * Stage 12, replications: `/cluster/replication` jobs into plugin replication records,
 * identified by endpoint + job id (`<vmid>-<n>`). A job gone upstream is marked stale.
 */
import { hvGet, type StageContext } from "../context.ts";
import { clusterBase, PATHS } from "../base.ts";
import { nodeIndex } from "./devices.ts";
import { vmAnchors } from "../guests.ts";
import { type Desired, indexBy, reconcile } from "../reconcile.ts";

interface ReplicationJob {
  id: string;
  type?: string;
  guest?: number;
  jobnum?: number;
  source?: string;
  target?: string;
  schedule?: string;
  rate?: number;
  comment?: string;
  disable?: number;
  remove_job?: string;
}

export async function syncReplications(ctx: StageContext): Promise<void> {
  const base = await clusterBase(ctx);
  const { nodes } = await nodeIndex(ctx);
  const anchors = await vmAnchors(ctx);
  const jobs = (await hvGet<ReplicationJob[]>(ctx, "/cluster/replication") ?? [])
    .filter((j) => /^\d+-\d+$/.test(j.id));
  const existing = indexBy(
    await ctx.inv.list(
      PATHS.replications,
      { endpoint_id: String(base.pluginEndpoint) },
      ctx.signal,
    ),
    (r) => String(r.replication_id),
  );
  const desired: Desired[] = jobs.map((j) => {
    const guest = j.guest ?? Number(j.id.split("-")[0]);
    return {
      key: j.id,
      label: `replication ${j.id}`,
      body: {
        endpoint: base.pluginEndpoint,
        replication_id: j.id,
        virtual_machine: anchors.get(guest) ?? null,
        hypervisor_node: j.source ? nodes.get(j.source)?.id ?? null : null,
        guest,
        target: j.target ?? "",
        job_type: "local",
        schedule: j.schedule ?? "*/15",
        rate: j.rate ?? null,
        comment: j.comment ?? "",
        disable: j.disable === 1,
        source: j.source ?? "",
        jobnum: j.jobnum ?? Number(j.id.split("-")[1]),
        remove_job: j.remove_job === "local" || j.remove_job === "full" ? j.remove_job : null,
        status: "active",
        raw_config: j,
      },
    };
  });
  ctx.progress(0, desired.length, `${desired.length} replication jobs`);
  await reconcile(ctx, {
    path: PATHS.replications,
    existing,
    desired,
    orphan: () => ({ status: "stale" }),
  });
  ctx.progress(desired.length, desired.length, `${desired.length} replication jobs synced`);
}
