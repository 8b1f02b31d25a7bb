/**
 * Stage 5, vm-disks: one virtual disk per disk key of each guest config (scsi0, virtio1,
 * rootfs, mp0...; a CD-ROM drive is a size-0 disk described `CD-ROM: <iso or none>`), identified
 * by VM + key. Disks gone from a config are
 * deleted (they are the sync's own, tagged); disks of a guest gone upstream stay.
 */
import type { StageContext } from "../context.ts";
import { PATHS, syncTags } from "../base.ts";
import { type Guest, guests, madeThisRun, sliceChildren, vmAnchors } from "../guests.ts";
import { digestOf, LEDGER_MODELS, readLog, SliceLogReads } from "../ledger.ts";
import { guestDisks } from "../proxmox.ts";
import { type Desired, reconcile } from "../reconcile.ts";
import { createOnlyFields } from "../options.ts";

/** This stage's name in the ledger. */
const STAGE = "vm-disks";

/** What the stage reads of a disk: what it compares and writes, and the edit check's stamp. */
const DISK_FIELDS = [
  "id",
  "virtual_machine",
  "name",
  "size",
  "description",
  "tags",
  "last_updated",
];

/** Slice by slice of guests (guests.ts): one slice's disks are read, written, and let go. */
export async function syncVmDisks(ctx: StageContext): Promise<void> {
  const tags = await syncTags(ctx);
  const list = await guests(ctx);
  const anchors = await vmAnchors(ctx);
  let total = 0;
  for (const slice of list.slices()) {
    for (const g of slice) if (anchors.has(g.vmid)) total += guestDisks(g.type, g.config).length;
  }
  ctx.progress(0, total, `${total} virtual disks`);
  const createOnly = createOnlyFields(ctx.options, { description: "descriptions" });
  // The ledger (docs/sync.md, "Re-runs: guests that did not change"): a guest whose disks would
  // be written from the same as when it recorded them, untouched since, is not read again.
  const ledger = await readLog(ctx);
  const shape = { managed: [...tags.managed].sort((a, b) => a - b), createOnly: [...createOnly] };
  const desiredOf = (g: Guest): Desired[] => {
    const vm = anchors.get(g.vmid)!;
    return guestDisks(g.type, g.config).map((d) => ({
      key: `${vm}:${d.name}`,
      label: `virtual disk ${d.name} of vmid ${g.vmid}`,
      body: {
        virtual_machine: vm,
        name: d.name,
        size: d.sizeMb,
        description: (d.cdrom ? `CD-ROM: ${d.volume || "none"}` : d.volume).slice(0, 200),
        tags: [tags.synced],
      },
    }));
  };
  const closing = new SliceLogReads(ctx);
  for (const slice of list.slices()) {
    const mark = ledger?.beginSlice() ?? 0;
    try {
      const wanted = new Map<number, { desired: Desired[]; digest: number }>();
      for (const g of slice) {
        if (!anchors.has(g.vmid)) continue;
        const desired = desiredOf(g);
        const digest = digestOf([shape, desired.map((d) => d.body)]);
        if (ledger?.unchanged(STAGE, g.vmid, digest)) ctx.result.unchanged += desired.length;
        else wanted.set(g.vmid, { desired, digest });
      }
      if (!wanted.size) continue;
      const vmids = new Map([...wanted.keys()].map((vmid) => [anchors.get(vmid)!, vmid]));
      // A VM this run made has no disks yet: only this stage writes them.
      const existing = await sliceChildren(
        ctx,
        PATHS.disks,
        new Set(vmids.keys()),
        DISK_FIELDS,
        madeThisRun(ctx, PATHS.vms),
      );
      const track = (objects: Map<string, { id: number }>) => {
        for (const [key, disk] of objects) {
          const vmid = vmids.get(Number(key.split(":")[0]));
          if (vmid !== undefined) ledger?.track(vmid, [[LEDGER_MODELS.disk, disk.id]]);
        }
      };
      track(existing);
      const failed = ctx.result.failed;
      const saved = await reconcile(ctx, {
        path: PATHS.disks,
        existing,
        desired: [...wanted.values()].flatMap((w) => w.desired),
        managedTags: tags.managed,
        createOnly,
        orphan: "delete",
        answer: DISK_FIELDS,
      });
      if (!ledger) continue;
      track(saved.objects);
      const refused = ctx.result.failed !== failed; // compared again next run
      // Entries made since the slice's read (someone's edit meanwhile) forget their guest; read
      // while the next slice is written.
      await closing.close(ledger, () => {
        if (!refused) {
          for (const [vmid, w] of wanted) ledger.record(STAGE, vmid, w.digest, mark);
        }
      });
    } finally {
      ledger?.endSlice();
    }
  }
  await closing.settle();
  ctx.progress(total, total, `${total} virtual disks synced`);
}
