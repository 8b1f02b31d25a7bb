/** Guests (`/nodes/{node}/qemu|lxc`): list, create, destroy, config, pending and status. */
import { failed, fieldError, missing } from "../errors.ts";
import { allocateDisks, fillNicDefaults } from "./allocate.ts";
import { detachKey } from "./disks.ts";
import {
  addGuest,
  type ConfigValue,
  type Guest,
  type GuestType,
  type MockState,
  removeGuest,
  storageOnNode,
} from "../state.ts";
import {
  digestOf,
  failThrow,
  GiB,
  guestOf,
  type Handler,
  type HandlerContext,
  type HandlerTable,
  startTask,
} from "./context.ts";

/** Deterministic live figures for a running guest. */
function usage(g: Guest, nowS: number) {
  const running = g.status === "running";
  const maxmem = Number(g.config.memory ?? 512) * 1024 * 1024;
  const cpus = Number(g.config.cores ?? 1) * Number(g.config.sockets ?? 1);
  return {
    cpu: running ? ((g.vmid * 37) % 100) / 1000 : 0,
    cpus,
    maxmem,
    mem: running ? Math.round(maxmem * (0.2 + ((g.vmid * 13) % 50) / 100)) : 0,
    maxdisk: diskBytes(g),
    disk: 0,
    uptime: running ? Math.max(0, nowS - g.startedAt) : 0,
    netin: running ? g.vmid * 1_000_003 : 0,
    netout: running ? g.vmid * 700_001 : 0,
    diskread: running ? g.vmid * 3_000_017 : 0,
    diskwrite: running ? g.vmid * 1_500_007 : 0,
  };
}

export function diskBytes(g: Guest): number {
  const key = g.type === "qemu" ? (String(g.config.bootdisk ?? "scsi0")) : "rootfs";
  const m = /size=(\d+)([KMGT]?)/.exec(String(g.config[key] ?? ""));
  if (!m) return 0;
  const mult = { "": 1, K: 1024, M: 1024 ** 2, G: GiB, T: 1024 ** 4 }[m[2]] ?? 1;
  return Number(m[1]) * mult;
}

export function guestName(g: Guest): string {
  return String(
    g.type === "qemu" ? g.config.name ?? `VM ${g.vmid}` : g.config.hostname ?? `CT${g.vmid}`,
  );
}

export function listEntry(g: Guest, nowS: number, state: MockState): Record<string, unknown> {
  const u = usage(g, nowS);
  const entry: Record<string, unknown> = {
    vmid: g.vmid,
    name: guestName(g),
    status: g.status,
    cpu: u.cpu,
    cpus: u.cpus,
    maxcpu: u.cpus,
    mem: u.mem,
    maxmem: u.maxmem,
    disk: u.disk,
    maxdisk: u.maxdisk,
    uptime: u.uptime,
    netin: u.netin,
    netout: u.netout,
    diskread: u.diskread,
    diskwrite: u.diskwrite,
    template: Number(g.config.template ?? 0),
  };
  if (g.type === "lxc") entry.type = "lxc";
  if (g.config.tags) entry.tags = g.config.tags;
  if (g.lock) entry.lock = g.lock;
  const pool = state.poolOf.get(g.vmid);
  if (pool) entry.pool = pool;
  if (g.status === "running") entry.pid = 10000 + g.vmid;
  if (g.type === "qemu" && g.status === "running") entry.qmpstatus = "running";
  return entry;
}

function listGuests(type: GuestType): Handler {
  return (ctx) => {
    const ids = ctx.state.guestsByNode.get(String(ctx.values.node));
    const out: unknown[] = [];
    if (!ids) return out;
    for (const vmid of ids) {
      const g = ctx.state.guests.get(vmid)!;
      if (g.type === type) out.push(listEntry(g, ctx.nowS, ctx.state));
    }
    return out;
  };
}

export function vmidTaken(state: MockState, vmid: number): Guest | undefined {
  return state.guests.get(vmid);
}

const CREATE_SKIP = new Set([
  "node",
  "vmid",
  "start",
  "pool",
  "storage",
  "archive",
  "unique",
  "force",
  "live-restore",
  "bwlimit",
  "ostemplate",
  "password",
  "ssh-public-keys",
  "ignore-unpack-errors",
  "restore",
  "limit",
  "start",
]);

/** A deterministic UUID per guest and purpose (the mock's stand-in for a random one). */
function uuidFor(vmid: number, purpose: number): string {
  const hex = (n: number, width: number) => n.toString(16).padStart(width, "0").slice(-width);
  return `${hex(vmid, 8)}-${hex(purpose, 4)}-4000-8000-${hex(vmid * 7919 + purpose, 12)}`;
}

const QEMU_DISKS = /^(scsi|virtio|sata|ide|efidisk|tpmstate)\d+$/;
const LXC_DISKS = /^(rootfs|mp\d+)$/;

function createGuest(type: GuestType): Handler {
  return (ctx) => {
    const vmid = Number(ctx.values.vmid);
    const node = String(ctx.values.node);
    const existing = vmidTaken(ctx.state, vmid);
    if (existing) {
      throw fieldError("vmid", `VM ${vmid} already exists on node '${existing.node}'`);
    }
    const config: Record<string, ConfigValue> = {};
    for (const [k, v] of Object.entries(ctx.values)) {
      if (CREATE_SKIP.has(k)) continue;
      config[k] = typeof v === "number" || typeof v === "string" ? v : String(v);
    }
    if (type === "qemu") {
      // What Proxmox writes on create besides the parameters: the SMBIOS UUID, the VM
      // generation id and the creation record. Memory, cores and name stay unset (their
      // defaults apply: 512 MiB, 1 core, "VM <vmid>").
      config.smbios1 ??= `uuid=${uuidFor(vmid, 1)}`;
      config.vmgenid ??= uuidFor(vmid, 2);
      config.meta ??= `creation-qemu=10.0.2,ctime=${ctx.nowS}`;
      allocateDisks(ctx.state, node, vmid, config, QEMU_DISKS);
    } else {
      config.hostname ??= `CT${vmid}`;
      config.memory ??= 512;
      config.swap ??= 512;
      config.cores ??= 1;
      config.arch ??= "amd64";
      config.ostype ??= "debian";
      config.rootfs ??= `${firstImageStorage(ctx.state, node)}:8`;
      allocateDisks(ctx.state, node, vmid, config, LXC_DISKS);
    }
    fillNicDefaults(type, vmid, config);
    config.digest = "";
    const guest: Guest = {
      vmid,
      type,
      node,
      status: "stopped",
      startedAt: 0,
      config,
      snapshots: [],
      lock: "create",
    };
    addGuest(ctx.state, guest);
    if (ctx.values.pool !== undefined) {
      if (!ctx.state.pools.has(String(ctx.values.pool))) {
        removeGuest(ctx.state, vmid);
        throw fieldError("pool", `pool '${ctx.values.pool}' does not exist`);
      }
      ctx.state.poolOf.set(vmid, String(ctx.values.pool));
    }
    const start = ctx.values.start === 1;
    return startTask(ctx, {
      node,
      type: type === "qemu" ? "qmcreate" : "vzcreate",
      id: String(vmid),
      log: [`create ${type === "qemu" ? "VM" : "CT"} ${vmid}`],
      effect: () => {
        delete guest.lock;
        if (start && ctx.state.guests.get(vmid) === guest) {
          guest.status = "running";
          guest.startedAt = Math.floor(ctx.clock() / 1000);
        }
      },
    });
  };
}

function firstImageStorage(state: MockState, node: string): string {
  for (const [id, s] of state.storages) {
    if (String(s.config.content).includes("rootdir") && storageOnNode(s, node)) return id;
  }
  return state.storages.keys().next().value ?? "local";
}

function destroyGuest(type: GuestType): Handler {
  return (ctx) => {
    const g = guestOf(ctx);
    if (g.status === "running") {
      failThrow(`${type === "qemu" ? "VM" : "CT"} ${g.vmid} is running - destroy failed`);
    }
    if (g.config.protection === 1) failThrow(`can't remove ${g.vmid} - protection mode enabled`);
    if (g.lock && ctx.values.skiplock !== 1) {
      failThrow(`${type === "qemu" ? "VM" : "CT"} is locked (${g.lock})`);
    }
    const node = g.node;
    removeGuest(ctx.state, g.vmid);
    for (const s of ctx.state.storages.values()) {
      for (const [key, list] of s.volumes) {
        s.volumes.set(key, list.filter((v) => !(v.vmid === g.vmid && v.content !== "backup")));
      }
    }
    if (ctx.values.purge === 1) purgeGuest(ctx.state, g.vmid);
    return startTask(ctx, {
      node,
      type: type === "qemu" ? "qmdestroy" : "vzdestroy",
      id: String(g.vmid),
      log: [`destroy ${g.vmid}`],
    });
  };
}

/**
 * `purge=1` on destroy: the guest leaves replication jobs, HA resources (`vm:<id>`/`ct:<id>`)
 * and the vmid lists of backup jobs (a job left without guests is removed).
 */
function purgeGuest(state: MockState, vmid: number): void {
  const repl = state.collections.get("/cluster/replication");
  for (const [id, r] of repl ?? []) if (Number(r.guest) === vmid) repl!.delete(id);
  const ha = state.collections.get("/cluster/ha/resources");
  for (const [id, r] of ha ?? []) {
    const sid = String(r.sid ?? id);
    if (Number(sid.replace(/^(vm|ct):/, "")) === vmid) ha!.delete(id);
  }
  const backup = state.collections.get("/cluster/backup");
  for (const [id, job] of backup ?? []) {
    if (job.vmid === undefined) continue;
    const ids = String(job.vmid).split(/[,;\s]+/).filter(Boolean);
    const left = ids.filter((x) => Number(x) !== vmid);
    if (left.length === ids.length) continue;
    if (left.length) job.vmid = left.join(",");
    else if (job.all !== 1 && job.pool === undefined) backup!.delete(id);
    else delete job.vmid;
  }
}

function getConfig(ctx: HandlerContext): Record<string, unknown> {
  const g = guestOf(ctx);
  if (ctx.values.snapshot !== undefined) {
    const snap = g.snapshots.find((s) => s.name === ctx.values.snapshot);
    if (!snap) throw missing(`snapshot '${ctx.values.snapshot}' does not exist`);
    return { ...snap.config, digest: digestOf(snap.config) };
  }
  const out: Record<string, unknown> = { ...g.config, digest: digestOf(g.config) };
  if (g.type === "qemu") out.vmid = g.vmid;
  if (g.lock) out.lock = g.lock;
  return out;
}

const UPDATE_SKIP = new Set([
  "node",
  "vmid",
  "digest",
  "delete",
  "revert",
  "skiplock",
  "force",
  "background_delay",
  "limit",
  "start",
]);

function updateConfig(asTask: boolean): Handler {
  return (ctx) => {
    const g = guestOf(ctx);
    if (ctx.values.digest !== undefined && ctx.values.digest !== digestOf(g.config)) {
      throw failed("detected modified configuration - file changed by other user? Try again.");
    }
    if (g.lock && ctx.values.skiplock !== 1) failThrow(`VM is locked (${g.lock})`);
    const next = { ...g.config };
    for (const [k, v] of Object.entries(ctx.values)) {
      if (UPDATE_SKIP.has(k)) continue;
      next[k] = typeof v === "number" || typeof v === "string" ? v : String(v);
    }
    if (typeof ctx.values.delete === "string") {
      for (const k of ctx.values.delete.split(/[,;\s]+/).filter(Boolean)) {
        detachKey(ctx.state, g, next, k, false);
      }
    }
    fillNicDefaults(g.type, g.vmid, next, Object.keys(ctx.values));
    allocateDisks(ctx.state, g.node, g.vmid, next, g.type === "qemu" ? QEMU_DISKS : LXC_DISKS);
    g.config = next;
    if (!asTask) return null;
    return startTask(ctx, {
      node: g.node,
      type: "qmconfig",
      id: String(g.vmid),
      log: ["update VM config"],
    });
  };
}

/** No pending changes in the mock: every key is current. */
function pendingList(ctx: HandlerContext): unknown[] {
  const g = guestOf(ctx);
  return Object.entries(g.config)
    .filter(([k]) => k !== "digest")
    .map(([key, value]) => ({ key, value }));
}

/** `agent: 1`, `enabled=1,...`, `true`, ... (the default key of the agent property string). */
export function agentEnabled(g: Guest): boolean {
  const first = String(g.config.agent ?? "0").split(",")[0].replace(/^enabled=/, "").toLowerCase();
  return ["1", "true", "yes", "on"].includes(first);
}

function statusCurrent(ctx: HandlerContext): Record<string, unknown> {
  const g = guestOf(ctx);
  const entry = listEntry(g, ctx.nowS, ctx.state);
  const out: Record<string, unknown> = { ...entry, ha: { managed: 0 } };
  if (g.type === "qemu") {
    out.qmpstatus = g.status === "paused" ? "paused" : g.status;
    out.agent = agentEnabled(g) ? 1 : 0;
    out["running-machine"] = g.status === "running" ? "pc-q35-10.0+pve1" : undefined;
    if (out["running-machine"] === undefined) delete out["running-machine"];
  } else out.type = "lxc";
  return out;
}

/** Per guest type: list, create, destroy, config and status of `/nodes/{node}/<type>`. */
export function guestHandlers(type: GuestType): HandlerTable {
  const base = `/nodes/{node}/${type}`;
  const item = `${base}/{vmid}`;
  const h: HandlerTable = {
    [`GET ${base}`]: listGuests(type),
    [`POST ${base}`]: createGuest(type),
    [`DELETE ${item}`]: destroyGuest(type),
    [`GET ${item}/config`]: getConfig,
    [`PUT ${item}/config`]: updateConfig(false),
    [`GET ${item}/status/current`]: statusCurrent,
    [`GET ${item}/pending`]: pendingList,
  };
  if (type === "qemu") h[`POST ${item}/config`] = updateConfig(true);
  return h;
}
