/**
 * Disks leaving a guest, as Proxmox handles them: a detached disk stays on its storage as
 * `unused<n>` (`delete=scsi1`, `unlink` without force); `unlink` with force, or deleting an
 * `unused<n>` entry, destroys the volume; `move_disk` copies it to a new volume on another
 * storage and leaves the old one as unused unless `delete=1`.
 */
import { fieldError } from "../errors.ts";
import type { ConfigValue, Guest, MockState } from "../state.ts";
import { volumesOn } from "../state.ts";
import { guestOf, type HandlerContext, type HandlerTable, startTask } from "./context.ts";

export const QEMU_DISK_KEY = /^(scsi|virtio|sata|ide|efidisk|tpmstate)\d+$/;
const LXC_DISK_KEY = /^mp\d+$/;

/** The volume a disk spec names, unless it is no volume (a CD-ROM drive, `none`). */
function volumeOf(spec: ConfigValue | undefined): string | null {
  if (typeof spec !== "string") return null;
  const first = spec.split(",")[0].replace(/^file=/, "");
  if (first === "none" || /(^|,)media=cdrom(,|$)/.test(spec) || !first.includes(":")) return null;
  if (/^[^:]+:(iso|vztmpl)\//.test(first)) return null;
  return first;
}

function destroyVolume(state: MockState, g: Guest, volid: string): void {
  const storage = state.storages.get(volid.split(":")[0]);
  if (!storage) return;
  const list = volumesOn(storage, g.node);
  const at = list.findIndex((v) => v.volid === volid);
  if (at >= 0) list.splice(at, 1);
}

function firstUnused(config: Record<string, ConfigValue>): string {
  for (let n = 0;; n++) if (config[`unused${n}`] === undefined) return `unused${n}`;
}

/**
 * Takes `key` off the config: a disk's volume is kept as `unused<n>` (or destroyed when
 * `destroy`), an `unused<n>` volume is destroyed; anything else is just removed.
 */
export function detachKey(
  state: MockState,
  g: Guest,
  config: Record<string, ConfigValue>,
  key: string,
  destroy: boolean,
): void {
  const spec = config[key];
  delete config[key];
  const isDisk = (g.type === "qemu" ? QEMU_DISK_KEY : LXC_DISK_KEY).test(key);
  const volid = isDisk || /^unused\d+$/.test(key) ? volumeOf(spec) : null;
  if (!volid) return;
  if (destroy || /^unused\d+$/.test(key)) destroyVolume(state, g, volid);
  else config[firstUnused(config)] = volid;
}

function unlink(ctx: HandlerContext): null {
  const g = guestOf(ctx);
  const next = { ...g.config };
  for (const key of String(ctx.values.idlist).split(/[,;\s]+/).filter(Boolean)) {
    if (next[key] === undefined) continue;
    detachKey(ctx.state, g, next, key, ctx.values.force === 1);
  }
  g.config = next;
  return null;
}

function moveDisk(ctx: HandlerContext): string {
  const g = guestOf(ctx);
  const disk = String(ctx.values.disk ?? ctx.values.volume);
  const spec = g.config[disk];
  const volid = volumeOf(spec);
  if (!volid) throw fieldError("disk", `disk '${disk}' does not exist`);
  const target = String(ctx.values.storage ?? "");
  const storage = ctx.state.storages.get(target);
  if (!storage) throw fieldError("storage", `storage '${target}' does not exist`);
  const content = g.type === "qemu" ? "images" : "rootdir";
  if (!String(storage.config.content ?? "").split(",").includes(content)) {
    throw fieldError("storage", `storage '${target}' does not support content-type '${content}'`);
  }
  if (volid.startsWith(`${target}:`)) {
    throw fieldError("storage", `you can't move to the same storage with same format`);
  }
  const volumes = volumesOn(storage, g.node);
  const taken = new Set(volumes.map((v) => v.volid));
  let n = 0;
  while (taken.has(`${target}:vm-${g.vmid}-disk-${n}`)) n++;
  const newVolid = `${target}:vm-${g.vmid}-disk-${n}`;
  const source = ctx.state.storages.get(volid.split(":")[0]);
  const old = source ? volumesOn(source, g.node).find((v) => v.volid === volid) : undefined;
  volumes.push({
    volid: newVolid,
    content: g.type === "qemu" ? "images" : "rootdir",
    format: String(ctx.values.format ?? old?.format ?? "raw"),
    size: old?.size ?? 0,
    ctime: 0,
    vmid: g.vmid,
  });
  const next = { ...g.config, [disk]: String(spec).replace(volid, newVolid) };
  if (ctx.values.delete === 1) destroyVolume(ctx.state, g, volid);
  else next[firstUnused(next)] = volid;
  g.config = next;
  return startTask(ctx, {
    node: g.node,
    type: g.type === "qemu" ? "qmmove" : "move_volume",
    id: String(g.vmid),
    log: [`moving disk '${volid}' to '${newVolid}'`],
  });
}

export const diskHandlers: HandlerTable = {
  "PUT /nodes/{node}/qemu/{vmid}/unlink": unlink,
  "POST /nodes/{node}/qemu/{vmid}/move_disk": moveDisk,
  "POST /nodes/{node}/lxc/{vmid}/move_volume": moveDisk,
};
