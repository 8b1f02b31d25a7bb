/** Backups: `POST /nodes/{node}/vzdump` writes archives to a backup storage as a task. */
import { fieldError } from "../errors.ts";
import { storageOnNode, volumesOn } from "../state.ts";
import { type HandlerContext, type HandlerTable, startTask } from "./context.ts";
import { diskBytes, guestName } from "./guests.ts";

export function vzdump(ctx: HandlerContext) {
  const node = String(ctx.values.node);
  const state = ctx.state;
  let storageId = ctx.values.storage !== undefined ? String(ctx.values.storage) : undefined;
  if (storageId === undefined) {
    for (const [id, s] of state.storages) {
      if (String(s.config.content).includes("backup") && storageOnNode(s, node)) {
        storageId = id;
        break;
      }
    }
  }
  const storage = storageId !== undefined ? state.storages.get(storageId) : undefined;
  if (!storage) throw fieldError("storage", `storage '${storageId ?? ""}' does not exist`);
  if (!String(storage.config.content).includes("backup")) {
    throw fieldError("storage", `storage '${storageId}' does not support backups`);
  }
  let vmids: number[];
  if (ctx.values.all === 1) {
    const exclude = new Set(
      String(ctx.values.exclude ?? "").split(/[,;\s]+/).filter(Boolean).map(Number),
    );
    vmids = [...(state.guestsByNode.get(node) ?? [])].filter((id) => !exclude.has(id));
  } else if (ctx.values.vmid !== undefined) {
    vmids = String(ctx.values.vmid).split(/[,;\s]+/).filter(Boolean).map(Number);
    for (const id of vmids) {
      const g = state.guests.get(id);
      if (!g || g.node !== node) throw fieldError("vmid", `guest ${id} is not on node '${node}'`);
    }
  } else if (ctx.values.pool !== undefined) {
    vmids = [...state.poolOf].filter(([id, p]) =>
      p === ctx.values.pool && state.guests.get(id)?.node === node
    )
      .map(([id]) => id);
  } else throw fieldError("vmid", "please specify a VM ID, --all or --pool");
  const notesTemplate = ctx.values["notes-template"];
  return startTask(ctx, {
    node,
    type: "vzdump",
    id: vmids.length === 1 ? String(vmids[0]) : "",
    log: [`INFO: starting new backup job: vzdump ${vmids.join(" ")} --storage ${storageId}`],
    effect: () => {
      const at = Math.floor(ctx.clock() / 1000);
      const d = new Date(at * 1000).toISOString();
      const stamp = `${d.slice(0, 4)}_${d.slice(5, 7)}_${d.slice(8, 10)}-${d.slice(11, 13)}_${
        d.slice(14, 16)
      }_${d.slice(17, 19)}`;
      for (const id of vmids) {
        const g = state.guests.get(id);
        if (!g) continue;
        const ext = g.type === "qemu" ? "vma.zst" : "tar.zst";
        volumesOn(storage, node).push({
          volid: `${storageId}:backup/vzdump-${g.type}-${id}-${stamp}.${ext}`,
          content: "backup",
          format: ext,
          subtype: g.type,
          size: Math.round(diskBytes(g) * 0.3),
          ctime: at,
          vmid: id,
          notes: typeof notesTemplate === "string"
            ? notesTemplate.replace("{{guestname}}", guestName(g))
            : guestName(g),
          protected: ctx.values.protected === 1 ? 1 : 0,
        });
      }
    },
  });
}

export const backupHandlers: HandlerTable = {
  "POST /nodes/{node}/vzdump": vzdump,
};
