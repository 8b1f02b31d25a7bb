/**
 * Stage 1, devices: the cluster's reference objects (site, manufacturer, device type and
 * role, cluster type, cluster), one device per node, and the plugin's node records.
 * Identity: the plugin node record (endpoint + node name) points at the node's device.
 */
import { hvGet, memo, type StageContext } from "../context.ts";
import { clusterBase, type ClusterStatusEntry, ensureBySlug, PATHS, syncTags } from "../base.ts";
import { type Desired, indexBy, reconcile, refId } from "../reconcile.ts";
import type { InventoryObject } from "../ports.ts";
import { createOnlyFields } from "../options.ts";
import { listByIds } from "../guests.ts";

interface NodeEntry {
  node: string;
  status?: string;
  maxcpu?: number;
  maxmem?: number;
  level?: string;
}

export interface NodeIndex {
  /** node name → plugin node record */
  nodes: Map<string, InventoryObject>;
  /** node name → device id */
  devices: Map<string, number>;
}

/** The plugin nodes of this endpoint and their devices (as earlier runs left them). */
export function nodeIndex(ctx: StageContext): Promise<NodeIndex> {
  return memo(ctx, "node-index", async () => {
    const base = await clusterBase(ctx);
    const records = await ctx.inv.list(
      PATHS.pluginNodes,
      { endpoint_id: String(base.pluginEndpoint) },
      ctx.signal,
    );
    const nodes = indexBy(records, (r) => String(r.name));
    const devices = new Map<string, number>();
    for (const [name, r] of nodes) {
      const id = refId(r.device);
      if (id !== null) devices.set(name, id);
    }
    return { nodes, devices };
  });
}

/** Device ids this run created (a later stage completing them does not count an update). */
export function createdDevices(ctx: StageContext): Set<number> {
  let made = ctx.cache.get("devices-created") as Set<number> | undefined;
  if (!made) ctx.cache.set("devices-created", made = new Set());
  return made;
}

/** What the node is, in one line: `Proxmox VE 8.4.1 node, 32 CPUs, 125.8 GiB RAM`. */
export function nodeDescription(node: NodeEntry | undefined, version: string | undefined): string {
  const parts = [`Proxmox VE${version ? ` ${version}` : ""} node`];
  if (node?.maxcpu) parts.push(`${node.maxcpu} CPUs`);
  if (node?.maxmem) parts.push(`${(node.maxmem / 1024 ** 3).toFixed(1)} GiB RAM`);
  return parts.join(", ").slice(0, 200);
}

export async function syncDevices(ctx: StageContext): Promise<void> {
  const base = await clusterBase(ctx);
  const tags = await syncTags(ctx);
  const nodeList = await hvGet<NodeEntry[]>(ctx, "/nodes") ?? [];
  const version = await hvGet<{ version?: string }>(ctx, "/version").catch(() => null);
  const statusByName = new Map(
    base.status.filter((s) => s.type === "node").map((s) => [s.name, s]),
  );
  const names = [...new Set([...nodeList.map((n) => n.node), ...statusByName.keys()])].sort();
  ctx.progress(0, names.length, `${names.length} nodes`);

  const manufacturer = await ensureBySlug(ctx, PATHS.manufacturers, "proxmox", {
    name: "Proxmox",
  });
  const deviceType = await ensureBySlug(ctx, PATHS.deviceTypes, "proxmox-ve-node", {
    manufacturer: manufacturer.id,
    model: "Proxmox VE node",
  });
  const role = await ensureBySlug(ctx, PATHS.deviceRoles, "hypervisor", {
    name: "Hypervisor",
    color: "3f51b5",
    vm_role: false,
  });

  // Plugin cluster facts.
  const entry = base.status.find((s) => s.type === "cluster") as ClusterStatusEntry | undefined;
  const online = names.filter((n) =>
    (statusByName.get(n)?.online ??
      (nodeList.find((x) => x.node === n)?.status === "online" ? 1 : 0)) === 1
  );
  const updatedBefore = ctx.result.updated;
  await reconcile(ctx, {
    path: PATHS.pluginClusters,
    existing: new Map([["cluster", base.pluginCluster]]),
    desired: [{
      key: "cluster",
      label: `plugin cluster ${base.name}`,
      body: {
        mode: entry ? "cluster" : "standalone",
        version: version?.version ?? null,
        quorate: entry ? entry.quorate === 1 : null,
        nodes_online: online.length,
        nodes_total: names.length,
      },
    }],
    touch: { last_synced: new Date(ctx.now()).toISOString() },
  });
  // A record made earlier in this run is completed here, not changed: it counts as one creation.
  if (base.pluginClusterMade) ctx.result.updated = updatedBefore;

  // Devices: ours are found through the plugin node records, else by name among our tagged
  // devices in this cluster (a node record deleted by hand).
  const index = await nodeIndex(ctx);
  const deviceIds = new Set(index.devices.values());
  const inCluster = await ctx.inv.list(
    PATHS.devices,
    { cluster_id: String(base.cluster) },
    ctx.signal,
  );
  // A node record's device outside the cluster (its cluster deleted by hand, then made again
  // above) is still this node's: it moves back, never made a second time.
  const listed = new Set(inCluster.map((d) => d.id));
  const elsewhere = [...deviceIds].filter((id) => !listed.has(id));
  const clusterDevices = elsewhere.length
    ? [...inCluster, ...await listByIds(ctx, PATHS.devices, "id", elsewhere)]
    : inCluster;
  const ours = clusterDevices.filter((d) =>
    deviceIds.has(d.id) ||
    (Array.isArray(d.tags) && d.tags.some((t) => refId(t) === tags.synced))
  );
  const byId = new Map(ours.map((d) => [d.id, d]));
  const existing = new Map<string, InventoryObject>();
  for (const [name, id] of index.devices) {
    const d = byId.get(id);
    if (d) existing.set(name, d);
  }
  for (const d of ours) if (!existing.has(String(d.name))) existing.set(String(d.name), d);

  const isOnline = new Set(online);
  const desired: Desired[] = names.map((name) => ({
    key: name,
    label: `device ${name}`,
    body: {
      name,
      description: nodeDescription(nodeList.find((x) => x.node === name), version?.version),
      device_type: deviceType.id,
      role: role.id,
      site: base.site,
      cluster: base.cluster,
      status: isOnline.has(name) ? "active" : "offline",
      tags: [tags.synced],
    },
  }));
  const devices = await reconcile(ctx, {
    path: PATHS.devices,
    existing,
    desired,
    managedTags: tags.managed,
    createOnly: createOnlyFields(ctx.options, { description: "descriptions", role: "roles" }),
    orphan: () => ({ status: "decommissioning", tags: [tags.synced, tags.missing] }),
  });

  const made = createdDevices(ctx);
  for (const [key, d] of devices.objects) if (!existing.has(key)) made.add(d.id);

  // Plugin nodes.
  const now = new Date(ctx.now()).toISOString();
  const nodeDesired: Desired[] = names.map((name) => {
    const s = statusByName.get(name);
    const n = nodeList.find((x) => x.node === name);
    return {
      key: name,
      label: `plugin node ${name}`,
      body: {
        endpoint: base.pluginEndpoint,
        cluster: base.pluginCluster.id,
        name,
        node_id: s?.nodeid ?? null,
        online: isOnline.has(name),
        ip_address: s?.ip ?? null,
        local: s?.local === undefined ? null : s.local === 1,
        level: s?.level ?? n?.level ?? null,
        version: version?.version ?? null,
        device: devices.objects.get(name)?.id ?? null,
        maxcpu: n?.maxcpu ?? null,
        maxmem: n?.maxmem ?? null,
      },
    };
  });
  const nodes = await reconcile(ctx, {
    path: PATHS.pluginNodes,
    existing: index.nodes,
    desired: nodeDesired,
    touch: { last_synced: now },
    orphan: () => ({ online: false }),
  });
  index.nodes.clear();
  index.devices.clear();
  for (const [name, record] of nodes.objects) {
    index.nodes.set(name, record);
    const device = devices.objects.get(name)?.id;
    if (device) index.devices.set(name, device);
  }
  ctx.progress(names.length, names.length, `${names.length} nodes synced`);
}
