/** Actions on one guest: lifecycle (start, stop, ...), template, resize, migrate and clone. */
import { fieldError } from "../errors.ts";
import { macFor } from "../seed.ts";
import {
  addGuest,
  type ConfigValue,
  type Guest,
  type GuestType,
  moveGuest,
  volumesOn,
} from "../state.ts";
import {
  failThrow,
  GiB,
  guestOf,
  type Handler,
  type HandlerContext,
  type HandlerTable,
  startTask,
} from "./context.ts";
import { guestName, vmidTaken } from "./guests.ts";

type Action = "start" | "stop" | "shutdown" | "reboot" | "suspend" | "resume" | "reset";

function lifecycle(type: GuestType, action: Action): Handler {
  return (ctx) => {
    const g = guestOf(ctx);
    const kind = type === "qemu" ? "VM" : "CT";
    const running = g.status === "running" || g.status === "paused";
    if (action === "start" && running) failThrow(`${kind} ${g.vmid} already running`);
    if (["shutdown", "reboot", "suspend", "reset"].includes(action) && !running) {
      failThrow(`${kind} ${g.vmid} not running`);
    }
    if (action === "resume" && g.status !== "paused") failThrow(`${kind} ${g.vmid} not paused`);
    if (g.lock && ctx.values.skiplock !== 1 && action !== "stop") {
      failThrow(`${kind} is locked (${g.lock})`);
    }
    const prefix = type === "qemu" ? "qm" : "vz";
    const taskType = `${prefix}${action}`;
    return startTask(ctx, {
      node: g.node,
      type: taskType,
      id: String(g.vmid),
      log: [`${action} ${kind} ${g.vmid}`],
      effect: () => {
        if (ctx.state.guests.get(g.vmid) !== g) return;
        const now = Math.floor(ctx.clock() / 1000);
        if (action === "start" || action === "reboot" || action === "reset") {
          if (g.status !== "running") g.startedAt = now;
          if (action !== "start") g.startedAt = now;
          g.status = "running";
        } else if (action === "stop" || action === "shutdown") g.status = "stopped";
        else if (action === "suspend") g.status = "paused";
        else if (action === "resume") g.status = "running";
      },
    });
  };
}

function migrate(type: GuestType): Handler {
  return (ctx) => {
    const g = guestOf(ctx);
    const target = String(ctx.values.target);
    if (!ctx.state.nodes.has(target)) {
      throw fieldError("target", `no such cluster node '${target}'`);
    }
    if (target === g.node) throw fieldError("target", `target is local node.`);
    if (g.status === "running") {
      if (type === "qemu" && ctx.values.online !== 1) {
        failThrow(`can't migrate running VM without --online`);
      }
      if (type === "lxc" && ctx.values.restart !== 1 && ctx.values.online !== 1) {
        failThrow(`lxc live migration is currently not implemented - use 'restart' mode`);
      }
    }
    if (g.lock) failThrow(`${type === "qemu" ? "VM" : "CT"} is locked (${g.lock})`);
    g.lock = "migrate";
    const source = g.node;
    return startTask(ctx, {
      node: source,
      type: type === "qemu" ? "qmigrate" : "vzmigrate",
      id: String(g.vmid),
      log: [
        `starting migration of ${g.vmid} to node '${target}'`,
        "migration finished successfully",
      ],
      effect: () => {
        delete g.lock;
        if (ctx.state.guests.get(g.vmid) !== g || !ctx.state.nodes.has(target)) return;
        moveGuest(ctx.state, g.vmid, target);
        for (const s of ctx.state.storages.values()) {
          if (s.config.shared) continue;
          const from = volumesOn(s, source);
          const moving = from.filter((v) => v.vmid === g.vmid && v.content !== "backup");
          if (!moving.length) continue;
          s.volumes.set(source, from.filter((v) => !moving.includes(v)));
          volumesOn(s, target).push(...moving);
        }
      },
    });
  };
}

function migratePrecondition(type: GuestType): Handler {
  return (ctx) => {
    const g = guestOf(ctx);
    const others = [...ctx.state.nodes.keys()].filter((n) => n !== g.node);
    const base = {
      running: g.status === "running" ? 1 : 0,
      "dependent-ha-resources": [] as string[],
    };
    if (type === "qemu") {
      return {
        ...base,
        allowed_nodes: others,
        not_allowed_nodes: {},
        local_disks: [],
        local_resources: [],
        "mapped-resources": [],
        "mapped-resource-info": {},
        "has-dbus-vmstate": 0,
      };
    }
    return { ...base, "allowed-nodes": others, "not-allowed-nodes": {} };
  };
}

function clone(type: GuestType): Handler {
  return (ctx) => {
    const g = guestOf(ctx);
    const newid = Number(ctx.values.newid);
    const existing = vmidTaken(ctx.state, newid);
    if (existing) {
      throw fieldError("newid", `VM ${newid} already exists on node '${existing.node}'`);
    }
    const target = ctx.values.target !== undefined ? String(ctx.values.target) : g.node;
    if (!ctx.state.nodes.has(target)) {
      throw fieldError("target", `no such cluster node '${target}'`);
    }
    let source = g.config;
    if (ctx.values.snapname !== undefined) {
      const snap = g.snapshots.find((s) => s.name === ctx.values.snapname);
      if (!snap) throw fieldError("snapname", `snapshot '${ctx.values.snapname}' does not exist`);
      source = snap.config;
    }
    const config: Record<string, ConfigValue> = {};
    for (const [k, v] of Object.entries(source)) {
      if (k === "parent" || k === "digest") continue;
      config[k] = typeof v === "string" ? v.replaceAll(`vm-${g.vmid}-`, `vm-${newid}-`) : v;
    }
    for (const [k, v] of Object.entries(config)) {
      if (/^net\d+$/.test(k) && typeof v === "string") {
        config[k] = v.replace(/([0-9A-F]{2}:){5}[0-9A-F]{2}/i, macFor(newid, Number(k.slice(3))));
      }
    }
    const nameKey = type === "qemu" ? "name" : "hostname";
    config[nameKey] = String(
      ctx.values[type === "qemu" ? "name" : "hostname"] ?? `Copy-of-${guestName(g)}`,
    );
    if (ctx.values.description !== undefined) config.description = String(ctx.values.description);
    const copy: Guest = {
      vmid: newid,
      type,
      node: target,
      status: "stopped",
      startedAt: 0,
      config,
      snapshots: [],
      lock: "clone",
    };
    addGuest(ctx.state, copy);
    if (ctx.values.pool !== undefined && ctx.state.pools.has(String(ctx.values.pool))) {
      ctx.state.poolOf.set(newid, String(ctx.values.pool));
    }
    return startTask(ctx, {
      node: g.node,
      type: type === "qemu" ? "qmclone" : "vzclone",
      id: String(g.vmid),
      log: [`create full clone of ${g.vmid} as ${newid}`],
      effect: () => {
        delete copy.lock;
        for (const s of ctx.state.storages.values()) {
          const vols = volumesOn(s, g.node).filter((v) =>
            v.vmid === g.vmid && v.content !== "backup"
          );
          volumesOn(s, target).push(
            ...vols.map((v) => ({
              ...v,
              vmid: newid,
              volid: v.volid.replaceAll(`vm-${g.vmid}-`, `vm-${newid}-`),
            })),
          );
        }
      },
    });
  };
}

/** Convert to a template (qemu: a task; lxc: synchronous, as in Proxmox). */
function makeTemplate(type: GuestType): Handler {
  return (ctx) => {
    const g = guestOf(ctx);
    if (g.status !== "stopped") failThrow(`${type === "qemu" ? "VM" : "CT"} ${g.vmid} is running`);
    if (g.config.template === 1) {
      failThrow(`${type === "qemu" ? "VM" : "CT"} ${g.vmid} is already a template`);
    }
    if (type === "lxc") {
      g.config.template = 1;
      return null;
    }
    return startTask(ctx, {
      node: g.node,
      type: "qmtemplate",
      id: String(g.vmid),
      log: [`convert VM ${g.vmid} to a template`],
      effect: () => {
        g.config.template = 1;
      },
    });
  };
}

/** Grow a disk: `size` is `+<n>[KMGT]` (relative) or `<n>[KMGT]` (absolute, not smaller). */
function resize(ctx: HandlerContext): string {
  const g = guestOf(ctx);
  const disk = String(ctx.values.disk);
  const spec = g.config[disk];
  if (spec === undefined) throw fieldError("disk", `disk '${disk}' does not exist`);
  const m = /^(\+)?(\d+(?:\.\d+)?)([KMGT]?)$/.exec(String(ctx.values.size));
  if (!m) throw fieldError("size", "unable to parse size");
  const unit: Record<string, number> = { "": 1, K: 1024, M: 1024 ** 2, G: GiB, T: 1024 ** 4 };
  const asked = Number(m[2]) * unit[m[3]];
  const current = /size=(\d+(?:\.\d+)?)([KMGT]?)/.exec(String(spec));
  const now = current ? Number(current[1]) * unit[current[2]] : 0;
  const next = m[1] ? now + asked : asked;
  if (next < now) throw fieldError("size", "shrinking disks is not supported");
  const gib = Math.round((next / GiB) * 100) / 100;
  g.config[disk] = current
    ? String(spec).replace(/size=[^,]+/, `size=${gib}G`)
    : `${spec},size=${gib}G`;
  return startTask(ctx, {
    node: g.node,
    type: "resize",
    id: String(g.vmid),
    log: [`resize ${disk} to ${gib}G`],
  });
}

/** Per guest type: lifecycle, template, resize, migrate and clone of one guest. */
export function guestActionHandlers(type: GuestType): HandlerTable {
  const item = `/nodes/{node}/${type}/{vmid}`;
  const h: HandlerTable = {
    [`POST ${item}/template`]: makeTemplate(type),
    [`PUT ${item}/resize`]: resize,
    [`POST ${item}/migrate`]: migrate(type),
    [`GET ${item}/migrate`]: migratePrecondition(type),
    [`POST ${item}/clone`]: clone(type),
  };
  for (
    const action of ["start", "stop", "shutdown", "reboot", "suspend", "resume", "reset"] as const
  ) {
    h[`POST ${item}/status/${action}`] = lifecycle(type, action);
  }
  return h;
}
