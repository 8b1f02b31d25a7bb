/**
 * Stage 5, vm-disks: one virtual disk per disk key of each guest config (scsi0, virtio1,
 * rootfs, mp0...; a CD-ROM drive is a size-0 disk described `CD-ROM: <iso or none>`), identified
 * by VM + key. Disks gone from a config are
 * deleted (they are the sync's own, tagged); disks of a guest gone upstream stay.
 */
import type { StageContext } from "../context.ts";
import { PATHS, syncTags } from "../base.ts";
import { guests, sliceChildren, vmAnchors } from "../guests.ts";
import { guestDisks } from "../proxmox.ts";
import { type Desired, reconcile } from "../reconcile.ts";
import { createOnlyFields } from "../options.ts";

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
  for (const slice of list.slices()) {
    const present = slice.filter((g) => anchors.has(g.vmid));
    const parents = new Set(present.map((g) => anchors.get(g.vmid)!));
    const existing = await sliceChildren(ctx, PATHS.disks, parents, DISK_FIELDS);
    const desired: Desired[] = present.flatMap((g) => {
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
    });
    await reconcile(ctx, {
      path: PATHS.disks,
      existing,
      desired,
      managedTags: tags.managed,
      createOnly: createOnlyFields(ctx.options, { description: "descriptions" }),
      orphan: "delete",
      answer: DISK_FIELDS,
    });
  }
  ctx.progress(total, total, `${total} virtual disks synced`);
}
