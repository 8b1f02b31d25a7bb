/**
 * Stage 9, vm-interfaces: one VM interface per `netN` of each guest, named `netN` for QEMU and
 * LXC alike (a container's `name=` goes into the description), its MAC address object (set as primary MAC) and the
 * VLAN of its `tag=` (a VLAN of the cluster's site, found by vid or created).
 */
import type { StageContext } from "../context.ts";
import { clusterBase, PATHS, syncTags } from "../base.ts";
import { type Guest, guests, sliceAssigned, sliceChildren, vmAnchors } from "../guests.ts";
import { guestNics } from "../proxmox.ts";
import { createOnlyFields } from "../options.ts";
import { deleteOrphans, type Desired, reconcile, refId } from "../reconcile.ts";
import { ensureVlans } from "../owned.ts";

export const VM_IFACE = "virtualization.vminterface";

/** What the stage reads of an interface and of a MAC address (what it compares and writes). */
const IFACE_FIELDS = [
  "id",
  "virtual_machine",
  "name",
  "enabled",
  "description",
  "mode",
  "untagged_vlan",
  "primary_mac_address",
  "tags",
  "last_updated",
];
const MAC_FIELDS = [
  "id",
  "mac_address",
  "assigned_object_type",
  "assigned_object_id",
  "tags",
  "last_updated",
];

/**
 * Slice by slice of guests (guests.ts): one slice's interfaces and MAC addresses are read,
 * written, and let go; only the VLANs (by vid) are known for the whole stage.
 */
export async function syncVmInterfaces(ctx: StageContext): Promise<void> {
  const base = await clusterBase(ctx);
  const tags = await syncTags(ctx);
  const list = await guests(ctx);
  const anchors = await vmAnchors(ctx);
  const vids = new Map<number, string>();
  let total = 0;
  for (const slice of list.slices()) {
    for (const g of slice) {
      if (!anchors.has(g.vmid)) continue;
      const nics = guestNics(g.type, g.config);
      total += nics.length;
      for (const nic of nics) if (nic.vlan) vids.set(nic.vlan, "");
    }
  }
  for (const vid of vids.keys()) vids.set(vid, `VLAN ${vid}`);
  const vlans = await ensureVlans(ctx, base.site, vids);
  const createOnly = createOnlyFields(ctx.options, { description: "descriptions" });
  ctx.progress(0, total, `${total} VM interfaces`);
  for (const slice of list.slices()) {
    await syncSlice(ctx, slice, anchors, vlans, tags, createOnly);
  }
  ctx.progress(total, total, `${total} VM interfaces synced`);
}

async function syncSlice(
  ctx: StageContext,
  slice: Guest[],
  anchors: Map<number, number>,
  vlans: Map<number, number>,
  tags: Awaited<ReturnType<typeof syncTags>>,
  createOnly: ReadonlySet<string>,
): Promise<void> {
  const present = slice.filter((g) => anchors.has(g.vmid));
  const parents = new Set(present.map((g) => anchors.get(g.vmid)!));
  const nics = present.map((g) => ({ g, nics: guestNics(g.type, g.config) }));
  const existing = await sliceChildren(ctx, PATHS.vmInterfaces, parents, IFACE_FIELDS);
  // Interfaces are named by the Proxmox key (`net0`) for containers too; one an earlier version
  // named by the container's `name=` (`eth0`) is renamed, not made again.
  for (const { g, nics: n } of nics) {
    const vm = anchors.get(g.vmid)!;
    for (const nic of n) {
      const legacy = nic.guestName ? existing.get(`${vm}:${nic.guestName}`) : undefined;
      if (legacy && !existing.has(`${vm}:${nic.name}`)) {
        existing.delete(`${vm}:${nic.guestName}`);
        existing.set(`${vm}:${nic.name}`, legacy);
      }
    }
  }
  const desired: Desired[] = nics.flatMap(({ g, nics: n }) => {
    const vm = anchors.get(g.vmid)!;
    return n.map((nic) => ({
      key: `${vm}:${nic.name}`,
      label: `interface ${nic.name} of vmid ${g.vmid}`,
      body: {
        virtual_machine: vm,
        name: nic.name,
        enabled: true,
        description: [nic.guestName ?? "", nic.bridge ? `bridge ${nic.bridge}` : ""]
          .filter(Boolean).join(", "),
        mode: nic.vlan ? "access" : null,
        untagged_vlan: nic.vlan ? vlans.get(nic.vlan) ?? null : null,
        tags: [tags.synced],
      },
    }));
  });
  const ifaces = await reconcile(ctx, {
    path: PATHS.vmInterfaces,
    existing,
    desired,
    managedTags: tags.managed,
    createOnly,
    orphan: "delete",
    answer: IFACE_FIELDS,
  });

  // MAC addresses, one per interface, made the interface's primary MAC. An interface the
  // inventory refused (reported above) has none: the other guests' MACs are written all the same.
  const written = (vm: number, nic: { name: string }) => ifaces.objects.has(`${vm}:${nic.name}`);
  const ifaceIds = new Set([...ifaces.objects.values()].map((i) => i.id));
  const macs = await sliceAssigned(
    ctx,
    PATHS.macs,
    VM_IFACE,
    ifaceIds,
    MAC_FIELDS,
    (m) => String(m.mac_address).toUpperCase(),
  );
  const macDesired: Desired[] = nics.flatMap(({ g, nics: n }) => {
    const vm = anchors.get(g.vmid)!;
    return n.filter((nic) => nic.mac && written(vm, nic)).map((nic) => {
      const iface = ifaces.objects.get(`${vm}:${nic.name}`)!.id;
      return {
        key: `${iface}:${nic.mac}`,
        label: `MAC address ${nic.mac} of vmid ${g.vmid}`,
        body: {
          mac_address: nic.mac,
          assigned_object_type: VM_IFACE,
          assigned_object_id: iface,
          tags: [tags.synced],
        },
      };
    });
  });
  const savedMacs = await reconcile(ctx, {
    path: PATHS.macs,
    existing: macs,
    desired: macDesired,
    managedTags: tags.managed,
    orphan: "keep",
    answer: MAC_FIELDS,
  });
  const primary: Desired[] = [];
  for (const { g, nics: n } of nics) {
    const vm = anchors.get(g.vmid)!;
    for (const nic of n) {
      if (!written(vm, nic)) continue;
      const iface = ifaces.objects.get(`${vm}:${nic.name}`)!;
      const mac = nic.mac ? savedMacs.objects.get(`${iface.id}:${nic.mac}`)?.id ?? null : null;
      if (refId(iface.primary_mac_address) !== mac) {
        primary.push({
          key: `${vm}:${nic.name}`,
          label: `interface ${nic.name} of vmid ${g.vmid}`,
          body: { primary_mac_address: mac },
        });
      }
    }
  }
  if (primary.length) {
    // Counted once: these interfaces were already counted above.
    const before = { ...ctx.result };
    await reconcile(ctx, {
      path: PATHS.vmInterfaces,
      existing: new Map(primary.map((p) => [p.key, ifaces.objects.get(p.key)!])),
      desired: primary,
      answer: IFACE_FIELDS,
    });
    ctx.result.updated = before.updated;
    ctx.result.unchanged = before.unchanged;
  }
  await deleteOrphans(ctx, PATHS.macs, macs, macDesired);
}
