/**
 * Stage 9, vm-interfaces: one VM interface per `netN` of each guest, named `netN` for QEMU and
 * LXC alike (a container's `name=` goes into the description), its MAC address object (set as primary MAC) and the
 * VLAN of its `tag=` (a VLAN of the cluster's site, found by vid or created).
 */
import type { StageContext } from "../context.ts";
import { clusterBase, PATHS, syncTags } from "../base.ts";
import {
  type Guest,
  guests,
  madeThisRun,
  sliceAssigned,
  sliceChildren,
  vmAnchors,
} from "../guests.ts";
import { guestNics } from "../proxmox.ts";
import { createOnlyFields } from "../options.ts";
import { deleteOrphans, type Desired, reconcile, refId } from "../reconcile.ts";
import { ensureVlans } from "../owned.ts";
import { digestOf, LEDGER_MODELS, readLog, SliceLogReads, type SyncLedger } from "../ledger.ts";
import type { InventoryObject } from "../ports.ts";

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
  // The ledger (docs/sync.md, "Re-runs: guests that did not change"): a guest whose interfaces
  // and MAC addresses would be written from the same as when it recorded them, untouched since,
  // is not read again.
  const ledger = await readLog(ctx);
  const shape = { managed: [...tags.managed].sort((a, b) => a - b), createOnly: [...createOnly] };
  const closing = new SliceLogReads(ctx);
  for (const slice of list.slices()) {
    const mark = ledger?.beginSlice() ?? 0;
    try {
      const digests = new Map<number, number>();
      const todo: Guest[] = [];
      for (const g of slice) {
        if (!anchors.has(g.vmid)) continue;
        const vm = anchors.get(g.vmid)!;
        const nics = guestNics(g.type, g.config);
        const digest = digestOf([
          shape,
          nics.map((nic) => [interfaceBody(vm, nic, vlans, tags), nic.mac ?? null]),
        ]);
        if (ledger?.unchanged(STAGE, g.vmid, digest)) {
          // Its interfaces and MAC addresses, as a compare would have counted them.
          ctx.result.unchanged += nics.length + nics.filter((nic) => nic.mac).length;
        } else {
          todo.push(g);
          digests.set(g.vmid, digest);
        }
      }
      if (!todo.length) continue;
      const failed = ctx.result.failed;
      await syncSlice(ctx, todo, anchors, vlans, tags, createOnly, ledger);
      if (!ledger) continue;
      const refused = ctx.result.failed !== failed; // compared again next run
      // Entries made since the slice's read (someone's edit meanwhile) forget their guest; read
      // while the next slice is written.
      await closing.close(ledger, () => {
        if (!refused) {
          for (const [vmid, digest] of digests) ledger.record(STAGE, vmid, digest, mark);
        }
      });
    } finally {
      ledger?.endSlice();
    }
  }
  await closing.settle();
  ctx.progress(total, total, `${total} VM interfaces synced`);
}

/** This stage's name in the ledger. */
const STAGE = "vm-interfaces";

/** What the sync writes of one guest NIC's interface. */
function interfaceBody(
  vm: number,
  nic: ReturnType<typeof guestNics>[number],
  vlans: Map<number, number>,
  tags: Awaited<ReturnType<typeof syncTags>>,
) {
  return {
    virtual_machine: vm,
    name: nic.name,
    enabled: true,
    description: [nic.guestName ?? "", nic.bridge ? `bridge ${nic.bridge}` : ""]
      .filter(Boolean).join(", "),
    mode: nic.vlan ? "access" : null,
    untagged_vlan: nic.vlan ? vlans.get(nic.vlan) ?? null : null,
    tags: [tags.synced],
  };
}

async function syncSlice(
  ctx: StageContext,
  slice: Guest[],
  anchors: Map<number, number>,
  vlans: Map<number, number>,
  tags: Awaited<ReturnType<typeof syncTags>>,
  createOnly: ReadonlySet<string>,
  ledger: SyncLedger | null = null,
): Promise<void> {
  const present = slice.filter((g) => anchors.has(g.vmid));
  const parents = new Set(present.map((g) => anchors.get(g.vmid)!));
  const nics = present.map((g) => ({ g, nics: guestNics(g.type, g.config) }));
  // A VM this run made has no interfaces yet, nor an interface made here MAC addresses: only
  // this stage writes them (docs/sync.md, "Writes: round 8").
  const existing = await sliceChildren(
    ctx,
    PATHS.vmInterfaces,
    parents,
    IFACE_FIELDS,
    madeThisRun(ctx, PATHS.vms),
  );
  // The objects read and written, each noted with its guest in the ledger (a key starts with
  // its interface's VM, a MAC's with its interface).
  const vmids = new Map(present.map((g) => [anchors.get(g.vmid)!, g.vmid]));
  const ifaceVm = new Map<number, number>();
  const track = (model: string, objects: Map<string, InventoryObject>) => {
    if (!ledger) return;
    for (const [key, o] of objects) {
      const head = Number(key.split(":")[0]);
      const vmid = model === LEDGER_MODELS.mac ? ifaceVm.get(head) : vmids.get(head);
      if (model === LEDGER_MODELS.vmInterface) ifaceVm.set(o.id, vmids.get(head) ?? NaN);
      if (vmid !== undefined && !Number.isNaN(vmid)) ledger.track(vmid, [[model, o.id]]);
    }
  };
  track(LEDGER_MODELS.vmInterface, existing);
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
      body: interfaceBody(vm, nic, vlans, tags),
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
  track(LEDGER_MODELS.vmInterface, ifaces.objects);
  const made = madeThisRun(ctx, PATHS.vmInterfaces);
  for (const [key, iface] of ifaces.objects) if (!existing.has(key)) made.add(iface.id);

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
    made,
  );
  track(LEDGER_MODELS.mac, macs);
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
  track(LEDGER_MODELS.mac, savedMacs.objects);
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
      // An interface made above is written as its create answered, without the edit check's
      // re-read (reconcile.ts: it has no `last_updated` to compare): the check is for objects
      // read before the stage wrote, and someone else's edit since the create is in the change
      // log, which has the ledger compare the guest next run (docs/sync.md, "Writes: round 8").
      existing: new Map(primary.map((p) => {
        const iface = ifaces.objects.get(p.key)!;
        return [p.key, made.has(iface.id) ? { ...iface, last_updated: undefined } : iface];
      })),
      desired: primary,
      answer: IFACE_FIELDS,
    });
    ctx.result.updated = before.updated;
    ctx.result.unchanged = before.unchanged;
  }
  await deleteOrphans(ctx, PATHS.macs, macs, macDesired);
}
