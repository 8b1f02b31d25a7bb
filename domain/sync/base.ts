/**
 * The objects every stage hangs its records on, found (or created once) by identity:
 * the ownership tags, shared reference objects by slug, the plugin hypervisor endpoint of this
 * copy, and the cluster of this endpoint (plugin cluster record → virtualization cluster →
 * site). Reference objects that already exist are used as they are, never modified.
 */
import { hvGet, memo, memoShared, type StageContext } from "./context.ts";
import type { CallFailure, InventoryBody, InventoryObject } from "./ports.ts";
import { refId } from "./reconcile.ts";
import { slugify } from "./proxmox.ts";

export const SYNCED_TAG = "bridgebox-synced";
export const MISSING_TAG = "bridgebox-missing";
/** Marks a VM that is a Proxmox template (it never runs; clones are made from it). */
export const TEMPLATE_TAG = "bridgebox-template";

export const PATHS = {
  tags: "extras/tags/",
  sites: "dcim/sites/",
  manufacturers: "dcim/manufacturers/",
  deviceTypes: "dcim/device-types/",
  deviceRoles: "dcim/device-roles/",
  tenants: "tenancy/tenants/",
  devices: "dcim/devices/",
  deviceInterfaces: "dcim/interfaces/",
  macs: "dcim/mac-addresses/",
  clusterTypes: "virtualization/cluster-types/",
  clusters: "virtualization/clusters/",
  vms: "virtualization/virtual-machines/",
  vmTypes: "virtualization/virtual-machine-types/",
  vmInterfaces: "virtualization/interfaces/",
  disks: "virtualization/virtual-disks/",
  ips: "ipam/ip-addresses/",
  vlans: "ipam/vlans/",
  prefixes: "ipam/prefixes/",
  pluginEndpoints: "plugins/service/endpoints/hypervisor/",
  pluginSettings: "plugins/service/settings/",
  customFields: "extras/custom-fields/",
  pluginClusters: "plugins/service/clusters/",
  pluginNodes: "plugins/service/nodes/",
  pluginStorage: "plugins/service/storage/",
  syncState: "plugins/service/vm-sync-state/",
  tasks: "plugins/service/task-history/",
  backups: "plugins/service/backups/",
  snapshots: "plugins/service/snapshots/",
  replications: "plugins/service/replications/",
  backupRoutines: "plugins/service/backup-routines/",
} as const;

/**
 * An "ensure" write: create, and when the inventory refuses because the object appeared in the
 * meantime (another run of another endpoint made it: "tag with this name already exists"),
 * read it and go on. `refind` reads afresh; when it still finds nothing, the refusal stands.
 */
export async function createOrRead<T>(
  ctx: StageContext,
  create: () => Promise<T>,
  refind: () => Promise<T | null>,
): Promise<{ value: T; made: boolean }> {
  try {
    return { value: await create(), made: true };
  } catch (error) {
    if (ctx.signal.aborted || !(error as CallFailure | null)?.refused) throw error;
    const found = await refind();
    if (found === null) throw error;
    return { value: found, made: false };
  }
}

export interface Tags {
  synced: number;
  missing: number;
  template: number;
  managed: ReadonlySet<number>;
}

/** Finds tags by slug, creating the missing ones in one bulk write; slug → id. */
export async function ensureTags(
  ctx: StageContext,
  wanted: { slug: string; name: string; description?: string; color?: string }[],
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (!wanted.length) return out;
  const known = await memoShared(ctx, "tags:all", async () => {
    const all = await ctx.inv.list(PATHS.tags, {}, ctx.signal);
    return new Map(all.map((t) => [String(t.slug), t.id]));
  });
  const missing = wanted.filter((w) => !known.has(w.slug));
  const unique = [...new Map(missing.map((m) => [m.slug, m])).values()];
  if (unique.length) {
    // Counted as created, as every object the run makes (docs/sync.md, "Writes per object").
    let created = 0;
    const { value: made } = await createOrRead(
      ctx,
      async () => {
        const all = await ctx.inv.create(
          PATHS.tags,
          unique.map((m) => ({
            name: m.name,
            slug: m.slug,
            color: m.color ?? "9e9e9e",
            description: m.description ?? "",
          })),
          ctx.signal,
        );
        created = all.length;
        return all;
      },
      async () => {
        // Another run made some of them: take what exists now, create only the rest.
        const now = await ctx.inv.list(PATHS.tags, {}, ctx.signal);
        const bySlug = new Map(now.map((t) => [String(t.slug), t]));
        const rest = unique.filter((m) => !bySlug.has(m.slug));
        const made = rest.length
          ? await ctx.inv.create(
            PATHS.tags,
            rest.map((m) => ({
              name: m.name,
              slug: m.slug,
              color: m.color ?? "9e9e9e",
              description: m.description ?? "",
            })),
            ctx.signal,
          )
          : [];
        created = made.length;
        return [
          ...unique.filter((m) => bySlug.has(m.slug)).map((m) => bySlug.get(m.slug)!),
          ...made,
        ];
      },
    );
    ctx.result.created += created;
    made.forEach((t) => known.set(String(t.slug), t.id));
  }
  for (const w of wanted) out.set(w.slug, known.get(w.slug)!);
  return out;
}

export function syncTags(ctx: StageContext): Promise<Tags> {
  return memo(ctx, "tags:sync", async () => {
    const ids = await ensureTags(ctx, [
      {
        slug: SYNCED_TAG,
        name: SYNCED_TAG,
        color: "2196f3",
        description: "Created and kept in step by the Bridgebox sync; hand-made objects lack it.",
      },
      {
        slug: MISSING_TAG,
        name: MISSING_TAG,
        color: "f44336",
        description: "Gone from the hypervisor at the last sync.",
      },
      {
        slug: TEMPLATE_TAG,
        name: TEMPLATE_TAG,
        color: "9c27b0",
        description: "A Proxmox VE template: never runs, guests are cloned from it.",
      },
    ]);
    const synced = ids.get(SYNCED_TAG)!;
    const missing = ids.get(MISSING_TAG)!;
    const template = ids.get(TEMPLATE_TAG)!;
    return { synced, missing, template, managed: new Set([synced, missing, template]) };
  });
}

/**
 * A shared reference object (manufacturer, role, type...) found by slug or created tagged.
 * An existing one, hand-made or not, is used as it is.
 */
export function ensureBySlug(
  ctx: StageContext,
  path: string,
  slug: string,
  body: InventoryBody,
): Promise<InventoryObject> {
  return memoShared(ctx, `slug:${path}${slug}`, async () => {
    const [found] = await ctx.inv.list(path, { slug }, ctx.signal);
    if (found && found.slug === slug) return found;
    const tags = await syncTags(ctx);
    const { value, made } = await createOrRead(
      ctx,
      async () =>
        (await ctx.inv.create(path, [{ slug, ...body, tags: [tags.synced] }], ctx.signal))[0],
      async () =>
        (await ctx.inv.list(path, { slug }, ctx.signal)).find((o) => o.slug === slug) ?? null,
    );
    if (made) ctx.result.created++;
    return value;
  });
}

const INV_SUFFIX = / \(inv:(\d+)\)$/;

/**
 * The plugin hypervisor endpoint record this copy belongs to: a pushed copy's name ends with
 * ` (inv:<pk>)`; a copy made directly on the backend gets a record of its own (found by
 * name, created disabled so the plugin never pushes it back, no secrets).
 */
export function pluginEndpoint(ctx: StageContext): Promise<number> {
  return memo(ctx, "plugin-endpoint", async () => {
    const match = INV_SUFFIX.exec(ctx.endpoint.name);
    if (match) {
      const pk = Number(match[1]);
      const [found] = await ctx.inv.list(PATHS.pluginEndpoints, { id: String(pk) }, ctx.signal);
      if (found?.id === pk) return pk;
    }
    // A record of the same name is this copy's only when it names the same host and port:
    // a name alone never decides identity.
    const name = ctx.endpoint.name.slice(0, 180);
    const sameHost = (e: InventoryObject) => {
      const address = (e.ip_address as { address?: string } | null)?.address?.split("/")[0];
      return Number(e.port) === ctx.endpoint.port &&
        (e.domain === ctx.endpoint.ip || address === ctx.endpoint.ip);
    };
    const found = (await ctx.inv.list(PATHS.pluginEndpoints, { name }, ctx.signal))
      .filter((e) => e.name === name && sameHost(e)).sort((a, b) => a.id - b.id)[0];
    if (found) return found.id;
    const { value, made } = await createOrRead(
      ctx,
      async () =>
        (await ctx.inv.create(PATHS.pluginEndpoints, [{
          name,
          domain: ctx.endpoint.ip,
          port: ctx.endpoint.port,
          username: ctx.endpoint.username ?? "root@pam",
          use_https: ctx.endpoint.use_https,
          verify_ssl: ctx.endpoint.verify_ssl,
          enabled: false,
        }], ctx.signal))[0],
      async () =>
        (await ctx.inv.list(PATHS.pluginEndpoints, { name }, ctx.signal))
          .filter((e) => e.name === name && sameHost(e)).sort((a, b) => a.id - b.id)[0] ?? null,
    );
    if (made) ctx.result.created++;
    return value.id;
  });
}

export interface ClusterStatusEntry {
  type: "cluster" | "node";
  name: string;
  nodeid?: number;
  online?: number;
  ip?: string;
  local?: number;
  level?: string;
  quorate?: number;
  nodes?: number;
  version?: number;
}

export interface ClusterBase {
  pluginEndpoint: number;
  /** The plugin cluster record (endpoint + PVE cluster name). */
  pluginCluster: InventoryObject;
  /** True when this run made the plugin cluster record (the devices stage fills in its facts). */
  pluginClusterMade: boolean;
  /** The virtualization cluster and its site. */
  cluster: number;
  site: number;
  name: string;
  status: ClusterStatusEntry[];
}

/** The PVE cluster name, or the endpoint's name for a standalone node. */
export function clusterNameOf(status: ClusterStatusEntry[], endpointName: string): string {
  const entry = status.find((s) => s.type === "cluster");
  return entry?.name || endpointName.replace(INV_SUFFIX, "");
}

export function clusterBase(ctx: StageContext): Promise<ClusterBase> {
  return memo(ctx, "cluster-base", async () => {
    const status = await hvGet<ClusterStatusEntry[]>(ctx, "/cluster/status");
    const pe = await pluginEndpoint(ctx);
    const tags = await syncTags(ctx);
    const pveName = clusterNameOf(status ?? [], ctx.endpoint.name).slice(0, 100);
    const records = await ctx.inv.list(
      PATHS.pluginClusters,
      { endpoint_id: String(pe) },
      ctx.signal,
    );
    let record = records.find((r) => r.name === pveName && refId(r.endpoint) === pe);
    let cluster = record ? refId(record.cluster) : null;
    let site: number | null = null;
    if (cluster !== null) {
      // Only what is read here (NetBox 4's dynamic `fields`): a whole cluster sums every VM
      // of it for `allocated_vcpus`/`_memory`/`_disk`, three reads of 100,000 records at
      // 100,000 guests (docs/sync.md, "Re-runs").
      const [found] = await ctx.inv.list(
        PATHS.clusters,
        { id: String(cluster), fields: "id,scope,scope_id" },
        ctx.signal,
      );
      if (found?.id === cluster) site = refId(found.scope) ?? refId(found.scope_id);
      else cluster = null;
    }
    if (cluster === null) {
      const type = await ensureBySlug(ctx, PATHS.clusterTypes, "proxmox-ve", {
        name: "Proxmox VE",
        description: "Proxmox VE cluster",
      });
      // Two endpoints may run clusters of the same name: the second gets its endpoint's name.
      const own = `${pveName} (${ctx.endpoint.name.replace(INV_SUFFIX, "")})`.slice(0, 100);
      const isTaken = async () =>
        (await ctx.inv.list(PATHS.clusters, { name: pveName }, ctx.signal))
          .some((c) => String(c.name).toLowerCase() === pveName.toLowerCase());
      const make = async (name: string) => {
        const siteObject = await ensureBySlug(ctx, PATHS.sites, slugify(name), {
          name,
          status: "active",
          description: `Proxmox VE cluster ${pveName}`,
        });
        const [made] = await ctx.inv.create(PATHS.clusters, [{
          name,
          type: type.id,
          status: "active",
          scope_type: "dcim.site",
          scope_id: siteObject.id,
          tags: [tags.synced],
        }], ctx.signal);
        return { cluster: made.id, site: siteObject.id };
      };
      const first = await isTaken() ? own : pveName;
      // Another endpoint's run may take the name between the look and the write (runs of
      // different endpoints go side by side): then this one takes its endpoint's name.
      const { value } = await createOrRead(
        ctx,
        () => make(first),
        async () => first === pveName && await isTaken() ? await make(own) : null,
      );
      cluster = value.cluster;
      site = value.site;
      ctx.result.created++;
    }
    if (site === null) {
      const siteObject = await ensureBySlug(ctx, PATHS.sites, slugify(pveName), {
        name: pveName,
        status: "active",
      });
      site = siteObject.id;
    }
    const pluginClusterMade = !record;
    if (!record) {
      [record] = await ctx.inv.create(PATHS.pluginClusters, [{
        endpoint: pe,
        name: pveName,
        cluster,
        last_synced: new Date(ctx.now()).toISOString(),
      }], ctx.signal);
      ctx.result.created++;
    } else if (refId(record.cluster) !== cluster) {
      [record] = await ctx.inv.update(
        PATHS.pluginClusters,
        [{ id: record.id, cluster }],
        ctx.signal,
      );
      ctx.result.updated++;
    }
    return {
      pluginEndpoint: pe,
      pluginCluster: record,
      pluginClusterMade,
      cluster,
      site: site!,
      name: pveName,
      status: status ?? [],
    };
  });
}
