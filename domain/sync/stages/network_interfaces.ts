/**
 * Stage 8, network-interfaces: each node's network configuration (`/nodes/{n}/network`) as
 * interfaces of the node's device, with their addresses (`cidr`, `cidr6`) as IP addresses.
 * Identity: device + interface name; IPs: interface + address.
 */
import { hvGet, mapLimit, type StageContext } from "../context.ts";
import { PATHS, syncTags } from "../base.ts";
import { nodeIndex } from "./devices.ts";
import { deleteOrphans, type Desired, reconcile } from "../reconcile.ts";
import { assignedTo, childrenOf, refreshTagged, taggedObjects } from "../owned.ts";

interface NodeInterface {
  iface: string;
  type?: string;
  active?: number;
  cidr?: string;
  cidr6?: string;
  mtu?: number | string;
  comments?: string;
  bridge_ports?: string;
}

const DEVICE_IFACE = "dcim.interface";

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
    orphan: "delete",
  });
  const ids = new Set([...ifaces.objects.values()].map((i) => i.id));
  const ipExisting = assignedTo(
    await taggedObjects(ctx, PATHS.ips),
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
  await reconcile(ctx, {
    path: PATHS.ips,
    existing: ipExisting,
    desired: ipDesired,
    managedTags: tags.managed,
    orphan: "keep",
  });
  await deleteOrphans(ctx, PATHS.ips, ipExisting, ipDesired);
  refreshTagged(ctx, PATHS.deviceInterfaces);
  refreshTagged(ctx, PATHS.ips);
  ctx.progress(desired.length, desired.length, `${desired.length} node interfaces synced`);
}
