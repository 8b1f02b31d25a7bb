/**
 * Stage 8, network-interfaces: each node's network configuration (`/nodes/{n}/network`) as
 * interfaces of the node's device, with their addresses (`cidr`, `cidr6`) as IP addresses; a VLAN
 * interface (`vmbr1.10`) in access mode on its VLAN; the device's primary IPv4/IPv6.
 * Identity: device + interface name; IPs: interface + address.
 */
import { hvGet, mapLimit, type StageContext } from "../context.ts";
import { clusterBase, PATHS, syncTags } from "../base.ts";
import { createdDevices, nodeIndex } from "./devices.ts";
import { changes, deleteOrphans, type Desired, reconcile } from "../reconcile.ts";
import { assignedTo, childrenOf, ensureVlans, refreshTagged, taggedObjects } from "../owned.ts";
import { listByIds } from "../guests.ts";
import type { InventoryObject } from "../ports.ts";
import { createOnlyFields, primaryIps } from "../options.ts";
import { adoptOrReport } from "../address_space.ts";

interface NodeInterface {
  iface: string;
  type?: string;
  gateway?: string;
  gateway6?: string;
  "vlan-id"?: number | string;
  active?: number;
  cidr?: string;
  cidr6?: string;
  mtu?: number | string;
  comments?: string;
  bridge_ports?: string;
}

const DEVICE_IFACE = "dcim.interface";

/** The VLAN a node interface is on: `vlan-id`, else the `.N` of `vmbr1.10` / `eno1.20`. */
export function nodeVlan(nic: NodeInterface): number | null {
  const explicit = Number(nic["vlan-id"]);
  const vid = Number.isInteger(explicit) && explicit > 0
    ? explicit
    : Number(/\.(\d+)$/.exec(nic.iface)?.[1] ?? NaN);
  return Number.isInteger(vid) && vid >= 1 && vid <= 4094 ? vid : null;
}

function interfaceType(type: string | undefined): string {
  if (type === "bridge" || type === "OVSBridge") return "bridge";
  if (type === "bond" || type === "OVSBond") return "lag";
  if (type === "eth") return "other";
  return "virtual";
}

export async function syncNetworkInterfaces(ctx: StageContext): Promise<void> {
  const tags = await syncTags(ctx);
  const { devices } = await nodeIndex(ctx);
  const nodes = [...devices.keys()].sort();
  const lists = await mapLimit(
    nodes,
    ctx.concurrency,
    ctx.signal,
    (node) => hvGet<NodeInterface[]>(ctx, `/nodes/${node}/network`).catch(() => null),
  );
  const base = await clusterBase(ctx);
  const vids = new Map<number, string>();
  for (const list of lists) {
    for (const nic of list ?? []) {
      const vid = nodeVlan(nic);
      if (vid !== null) vids.set(vid, `VLAN ${vid}`);
    }
  }
  const vlans = await ensureVlans(ctx, base.site, vids);
  const parents = new Set(devices.values());
  const existing = childrenOf(await taggedObjects(ctx, PATHS.deviceInterfaces), "device", parents);
  const desired: Desired[] = [];
  nodes.forEach((node, i) => {
    const device = devices.get(node)!;
    for (const nic of [...(lists[i] ?? [])].sort((a, b) => a.iface.localeCompare(b.iface))) {
      const mtu = Number(nic.mtu);
      desired.push({
        key: `${device}:${nic.iface}`,
        label: `interface ${nic.iface} of node ${node}`,
        body: {
          device,
          name: nic.iface.slice(0, 64),
          type: interfaceType(nic.type),
          enabled: nic.active !== 0,
          mtu: Number.isInteger(mtu) && mtu > 0 ? mtu : null,
          description: (nic.comments ?? (nic.bridge_ports ? `ports ${nic.bridge_ports}` : ""))
            .slice(0, 200),
          // A VLAN interface (`vmbr1.10`) carries its VLAN untagged, as VM interfaces do.
          mode: nodeVlan(nic) !== null ? "access" : null,
          untagged_vlan: nodeVlan(nic) !== null ? vlans.get(nodeVlan(nic)!) ?? null : null,
          tags: [tags.synced],
        },
      });
    }
  });
  ctx.progress(0, desired.length, `${desired.length} node interfaces`);
  const ifaces = await reconcile(ctx, {
    path: PATHS.deviceInterfaces,
    existing,
    desired,
    managedTags: tags.managed,
    createOnly: createOnlyFields(ctx.options, { description: "descriptions" }),
    orphan: "delete",
  });
  const ids = new Set([...ifaces.objects.values()].map((i) => i.id));
  const ipExisting = assignedTo(
    // The addresses of these interfaces only: every tagged address is mostly guests' ones.
    await listByIds(ctx, PATHS.ips, "assigned_object_id", ids, { tag: "bridgebox-synced" }),
    DEVICE_IFACE,
    ids,
    (ip) => String(ip.address).toLowerCase(),
  );
  const ipDesired: Desired[] = [];
  nodes.forEach((node, i) => {
    const device = devices.get(node)!;
    for (const nic of lists[i] ?? []) {
      const iface = ifaces.objects.get(`${device}:${nic.iface.slice(0, 64)}`);
      if (!iface) continue;
      for (const cidr of [nic.cidr, nic.cidr6]) {
        if (!cidr || !cidr.includes("/")) continue;
        ipDesired.push({
          key: `${iface.id}:${cidr.toLowerCase()}`,
          label: `IP address ${cidr} of node ${node}`,
          body: {
            address: cidr,
            status: "active",
            assigned_object_type: DEVICE_IFACE,
            assigned_object_id: iface.id,
            tags: [tags.synced],
          },
        });
      }
    }
  });
  const ips = await reconcile(ctx, {
    path: PATHS.ips,
    existing: ipExisting,
    desired: ipDesired,
    managedTags: tags.managed,
    orphan: "keep",
    resolveRefused: adoptOrReport(ctx, {
      path: PATHS.ips,
      field: "address",
      existing: ipExisting,
      wanted: new Set(ipDesired.map((d) => d.key)),
      managedTags: tags.managed,
      syncedTag: tags.synced,
    }),
  });

  // Each node's primary IPv4/IPv6 (before old addresses go: a primary IP cannot be deleted).
  const statusIp = new Map(
    base.status.filter((s) => s.type === "node" && s.ip).map((s) => [s.name, s.ip!]),
  );
  const deviceObjects = new Map(
    (await ctx.inv.list(PATHS.devices, { cluster_id: String(base.cluster) }, ctx.signal))
      .map((d) => [d.id, d]),
  );
  const primaryExisting = new Map<string, InventoryObject>();
  const primaryDesired: Desired[] = [];
  nodes.forEach((node, i) => {
    const device = deviceObjects.get(devices.get(node)!);
    if (!device) return;
    const pick = (family: "v4" | "v6") => {
      const candidates: { key: string; host: string; gateway: boolean }[] = [];
      for (const nic of lists[i] ?? []) {
        const cidr = family === "v4" ? nic.cidr : nic.cidr6;
        if (!cidr || !cidr.includes("/")) continue;
        const iface = ifaces.objects.get(`${device.id}:${nic.iface.slice(0, 64)}`);
        if (!iface) continue;
        candidates.push({
          key: `${iface.id}:${cidr.toLowerCase()}`,
          host: cidr.split("/")[0].toLowerCase(),
          gateway: Boolean(family === "v4" ? nic.gateway : nic.gateway6),
        });
      }
      // The address the cluster knows the node by, else the one with the default gateway,
      // else the first (interfaces in name order).
      const known = statusIp.get(node)?.toLowerCase();
      const chosen = candidates.find((c) => c.host === known) ??
        candidates.find((c) => c.gateway) ?? candidates[0];
      return chosen ? ips.objects.get(chosen.key)?.id ?? null : null;
    };
    primaryExisting.set(node, device);
    primaryDesired.push({
      key: node,
      label: `primary IPs of device ${node}`,
      body: primaryIps(ctx.options.primaryIpPreference, pick("v4"), pick("v6")),
    });
  });
  const before = { ...ctx.result };
  const made = createdDevices(ctx);
  const changed = primaryDesired.filter((d) => {
    const device = primaryExisting.get(d.key)!;
    return !made.has(device.id) && changes(device, d.body, undefined) !== null;
  }).length;
  await reconcile(ctx, { path: PATHS.devices, existing: primaryExisting, desired: primaryDesired });
  // Devices are counted by their own stage; a device this run made is only being completed.
  ctx.result.unchanged = before.unchanged;
  ctx.result.updated = before.updated + Math.min(changed, ctx.result.updated - before.updated);
  await deleteOrphans(ctx, PATHS.ips, ipExisting, ipDesired);
  refreshTagged(ctx, PATHS.deviceInterfaces);
  ctx.progress(desired.length, desired.length, `${desired.length} node interfaces synced`);
}
