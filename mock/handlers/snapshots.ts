/** Guest snapshots: list, create, delete, rollback and snapshot config. */
import type { GuestType } from "../state.ts";
import { fieldError } from "../errors.ts";
import {
  digestOf,
  failThrow,
  guestOf,
  type HandlerContext,
  type HandlerTable,
  startTask,
} from "./context.ts";

function listSnapshots(ctx: HandlerContext): unknown[] {
  const g = guestOf(ctx);
  const out: Record<string, unknown>[] = g.snapshots.map((s) => {
    const e: Record<string, unknown> = {
      name: s.name,
      description: s.description,
      snaptime: s.snaptime,
    };
    if (s.parent) e.parent = s.parent;
    if (g.type === "qemu") e.vmstate = s.vmstate ?? 0;
    return e;
  });
  const current: Record<string, unknown> = {
    name: "current",
    description: "You are here!",
    digest: digestOf(g.config),
  };
  if (g.config.parent) current.parent = g.config.parent;
  if (g.type === "qemu") current.running = g.status === "running" ? 1 : 0;
  out.push(current);
  return out;
}

function snapshotCreate(ctx: HandlerContext): string {
  const g = guestOf(ctx);
  const name = String(ctx.values.snapname);
  if (name === "current") throw fieldError("snapname", "invalid snapshot name 'current'");
  if (g.snapshots.some((s) => s.name === name)) {
    throw fieldError("snapname", `snapshot name '${name}' already used`);
  }
  if (g.lock) failThrow(`${g.type === "qemu" ? "VM" : "CT"} is locked (${g.lock})`);
  const parent = g.config.parent !== undefined ? String(g.config.parent) : undefined;
  const config = { ...g.config };
  delete config.parent;
  g.snapshots.push({
    name,
    description: String(ctx.values.description ?? ""),
    snaptime: ctx.nowS,
    parent,
    vmstate: ctx.values.vmstate === 1 ? 1 : 0,
    config,
  });
  g.config.parent = name;
  g.lock = "snapshot";
  return startTask(ctx, {
    node: g.node,
    type: g.type === "qemu" ? "qmsnapshot" : "vzsnapshot",
    id: String(g.vmid),
    log: [`snapshotting '${name}'`],
    effect: () => {
      delete g.lock;
    },
  });
}

function snapshotDelete(ctx: HandlerContext): string {
  const g = guestOf(ctx);
  const name = String(ctx.values.snapname);
  const snap = g.snapshots.find((s) => s.name === name)!;
  g.snapshots = g.snapshots.filter((s) => s !== snap);
  for (const s of g.snapshots) if (s.parent === name) s.parent = snap.parent;
  if (g.config.parent === name) {
    if (snap.parent) g.config.parent = snap.parent;
    else delete g.config.parent;
  }
  return startTask(ctx, {
    node: g.node,
    type: g.type === "qemu" ? "qmdelsnapshot" : "vzdelsnapshot",
    id: String(g.vmid),
    log: [`delete snapshot '${name}'`],
  });
}

function snapshotRollback(ctx: HandlerContext): string {
  const g = guestOf(ctx);
  const name = String(ctx.values.snapname);
  const snap = g.snapshots.find((s) => s.name === name)!;
  if (g.lock) failThrow(`${g.type === "qemu" ? "VM" : "CT"} is locked (${g.lock})`);
  g.lock = "rollback";
  return startTask(ctx, {
    node: g.node,
    type: g.type === "qemu" ? "qmrollback" : "vzrollback",
    id: String(g.vmid),
    log: [`rollback to snapshot '${name}'`],
    effect: () => {
      delete g.lock;
      g.config = { ...snap.config, parent: name };
      const start = ctx.values.start === 1 || snap.vmstate === 1;
      g.status = start ? "running" : "stopped";
      if (start) g.startedAt = Math.floor(ctx.clock() / 1000);
    },
  });
}

function snapshotConfigGet(ctx: HandlerContext) {
  const g = guestOf(ctx);
  const snap = g.snapshots.find((s) => s.name === ctx.values.snapname)!;
  return { ...snap.config, description: snap.description, snaptime: snap.snaptime };
}

function snapshotConfigPut(ctx: HandlerContext) {
  const g = guestOf(ctx);
  const snap = g.snapshots.find((s) => s.name === ctx.values.snapname)!;
  if (ctx.values.description !== undefined) snap.description = String(ctx.values.description);
  return null;
}

/** Per guest type: `/nodes/{node}/<type>/{vmid}/snapshot...`. */
export function snapshotHandlers(type: GuestType): HandlerTable {
  const item = `/nodes/{node}/${type}/{vmid}`;
  return {
    [`GET ${item}/snapshot`]: listSnapshots,
    [`POST ${item}/snapshot`]: snapshotCreate,
    [`DELETE ${item}/snapshot/{snapname}`]: snapshotDelete,
    [`POST ${item}/snapshot/{snapname}/rollback`]: snapshotRollback,
    [`GET ${item}/snapshot/{snapname}/config`]: snapshotConfigGet,
    [`PUT ${item}/snapshot/{snapname}/config`]: snapshotConfigPut,
  };
}
