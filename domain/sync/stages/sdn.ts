/**
 * Stage 11, sdn: SDN vnets with a VLAN tag become VLANs of the cluster's site (by vid), their
 * subnets become prefixes scoped to the site (identity: prefix within the site, owned ones
 * only). A subnet gone upstream marks its prefix deprecated.
 */
import { hvGet, mapLimit, type StageContext } from "../context.ts";
import { clusterBase, PATHS, syncTags } from "../base.ts";
import { ensureVlans, refreshTagged, taggedObjects } from "../owned.ts";
import { type Desired, indexBy, reconcile } from "../reconcile.ts";
import { adoptOrReport } from "../address_space.ts";

interface Vnet {
  vnet: string;
  zone?: string;
  tag?: number;
  alias?: string;
}

interface Subnet {
  cidr?: string;
  subnet?: string;
  gateway?: string;
  vnet?: string;
  zone?: string;
}

export async function syncSdn(ctx: StageContext): Promise<void> {
  const base = await clusterBase(ctx);
  const tags = await syncTags(ctx);
  const vnets = (await hvGet<Vnet[]>(ctx, "/cluster/sdn/vnets") ?? [])
    .sort((a, b) => a.vnet.localeCompare(b.vnet));
  const subnetLists = await mapLimit(
    vnets,
    ctx.concurrency,
    ctx.signal,
    (v) => hvGet<Subnet[]>(ctx, `/cluster/sdn/vnets/${v.vnet}/subnets`).catch(() => []),
  );
  const wanted = new Map<number, string>();
  for (const v of vnets) {
    const vid = Number(v.tag);
    if (Number.isInteger(vid) && vid >= 1 && vid <= 4094 && !wanted.has(vid)) {
      wanted.set(vid, v.vnet);
    }
  }
  const vlans = await ensureVlans(ctx, base.site, wanted);
  const existing = indexBy(
    (await taggedObjects(ctx, PATHS.prefixes)).filter((p) =>
      Number(p.scope_id) === base.site ||
      (typeof p.scope === "object" && (p.scope as { id?: number } | null)?.id === base.site)
    ),
    (p) => String(p.prefix),
  );
  const desired: Desired[] = [];
  const seen = new Set<string>();
  vnets.forEach((v, i) => {
    for (const s of subnetLists[i] ?? []) {
      const cidr = s.cidr ?? s.subnet;
      if (!cidr || !cidr.includes("/") || seen.has(cidr)) continue;
      seen.add(cidr);
      const vid = Number(v.tag);
      desired.push({
        key: cidr,
        label: `prefix ${cidr} (vnet ${v.vnet})`,
        body: {
          prefix: cidr,
          status: "active",
          vlan: Number.isInteger(vid) ? vlans.get(vid) ?? null : null,
          scope_type: "dcim.site",
          scope_id: base.site,
          description: `SDN vnet ${v.vnet}${v.zone ? ` (zone ${v.zone})` : ""}${
            v.alias ? `: ${v.alias}` : ""
          }`.slice(0, 200),
          tags: [tags.synced],
        },
      });
    }
  });
  ctx.progress(0, desired.length, `${desired.length} SDN subnets`);
  await reconcile(ctx, {
    path: PATHS.prefixes,
    existing,
    desired,
    managedTags: tags.managed,
    orphan: () => ({ status: "deprecated" }),
    resolveRefused: adoptOrReport(ctx, {
      path: PATHS.prefixes,
      field: "prefix",
      existing,
      wanted: new Set(desired.map((d) => d.key)),
      managedTags: tags.managed,
      syncedTag: tags.synced,
    }),
  });
  refreshTagged(ctx, PATHS.prefixes);
  ctx.progress(desired.length, desired.length, `${desired.length} SDN subnets synced`);
}
