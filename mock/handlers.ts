/**
 * Specific handlers of the mock: the operations whose behaviour depends on cluster state
 * (guests, lifecycle tasks, snapshots, storage and its content, tasks, users and tokens,
 * pools, cluster views). Keyed by `METHOD /template`; anything not here is handled by the
 * generic collections or answered with schema-shaped sample data.
 */
import type { HttpMethod, Operation } from "../domain/hypervisor_schema/schema.ts";
import type { Route } from "../domain/hypervisor_schema/router.ts";
import type { HypervisorEngine } from "./engine.ts";
import type { Principal } from "./auth.ts";
import { checkLogin, newTokenSecret } from "./auth.ts";
import { AuthError } from "./auth.ts";
import { failed, fieldError, missing, MockError } from "./errors.ts";
import { parsePropertyString } from "../domain/hypervisor_schema/validate.ts";
import {
  addGuest,
  type AgentInterface,
  collection,
  type ConfigValue,
  type Guest,
  type GuestType,
  type MockState,
  moveGuest,
  removeGuest,
  storageOnNode,
  type StorageState,
  storageUsed,
  type Task,
  volumesOn,
} from "./state.ts";
import { macFor } from "./seed.ts";

export interface HandlerContext {
  engine: HypervisorEngine;
  state: MockState;
  method: HttpMethod;
  template: string;
  route: Route;
  operation: Operation;
  /** Raw path parameters. */
  path: Record<string, string>;
  /** Validated, normalised parameters (path + query + body). */
  values: Record<string, unknown>;
  principal: Principal | undefined;
  user: string;
  nowMs: number;
  nowS: number;
  /** Set when the handler started a task. */
  task: string | undefined;
  /** Files of a multipart body by field name. */
  files: Record<string, { name: string; size: number }>;
}

type Handler = (ctx: HandlerContext) => unknown;

const GiB = 1024 ** 3;

export function firstNode(state: MockState): string {
  return state.nodes.keys().next().value ?? "pve1";
}

export function looksLikeTask(op: Operation): boolean {
  const text = `${op.description ?? ""} ${op.returns?.description ?? ""}`;
  return /\b(task|worker|UPID)\b/i.test(text);
}

export function startTask(
  ctx: HandlerContext,
  t: { node: string; type: string; id: string; log?: string[]; effect?: () => void },
): string {
  const task = ctx.engine.tasks.start(
    { ...t, user: ctx.principal?.tokenid ?? ctx.user },
    ctx.nowMs,
  );
  ctx.task = task.upid;
  return task.upid;
}

// ---------------------------------------------------------------- guests

function guestOf(ctx: HandlerContext): Guest {
  return ctx.state.guests.get(Number(ctx.values.vmid))!;
}

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

function diskBytes(g: Guest): number {
  const key = g.type === "qemu" ? (String(g.config.bootdisk ?? "scsi0")) : "rootfs";
  const m = /size=(\d+)([KMGT]?)/.exec(String(g.config[key] ?? ""));
  if (!m) return 0;
  const mult = { "": 1, K: 1024, M: 1024 ** 2, G: GiB, T: 1024 ** 4 }[m[2]] ?? 1;
  return Number(m[1]) * mult;
}

function guestName(g: Guest): string {
  return String(
    g.type === "qemu" ? g.config.name ?? `VM ${g.vmid}` : g.config.hostname ?? `CT${g.vmid}`,
  );
}

function listEntry(g: Guest, nowS: number, state: MockState): Record<string, unknown> {
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

function vmidTaken(state: MockState, vmid: number): Guest | undefined {
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

/** Turn `storage:size` disk specs into volumes, as Proxmox allocates them at create time. */
function allocateDisks(
  state: MockState,
  node: string,
  vmid: number,
  config: Record<string, ConfigValue>,
  keys: RegExp,
): void {
  let n = 0;
  for (const [key, value] of Object.entries(config)) {
    if (!keys.test(key) || typeof value !== "string") continue;
    const m = /^([a-z][a-z0-9\-_.]*):(\d+(?:\.\d+)?)(,.*)?$/i.exec(value);
    if (!m) continue;
    const storage = state.storages.get(m[1]);
    if (!storage) throw fieldError(key, `storage '${m[1]}' does not exist`);
    const name = `vm-${vmid}-disk-${n++}`;
    volumesOn(storage, node).push({
      volid: `${m[1]}:${name}`,
      content: key === "rootfs" || key.startsWith("mp") ? "rootdir" : "images",
      format: "raw",
      size: Math.round(Number(m[2]) * GiB),
      ctime: 0,
      vmid,
    });
    config[key] = `${m[1]}:${name}${m[3] ?? ""},size=${m[2]}G`;
  }
}

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
      config.memory ??= 2048;
      config.cores ??= 1;
      config.sockets ??= 1;
      config.name ??= `VM${vmid}`;
      allocateDisks(ctx.state, node, vmid, config, /^(scsi|virtio|sata|ide|efidisk|tpmstate)\d+$/);
      for (const [k, v] of Object.entries(config)) {
        if (/^net\d+$/.test(k) && typeof v === "string" && !/[=]([0-9A-F]{2}:){5}/i.test(v)) {
          // Fill in a MAC: `virtio,bridge=vmbr0` → `virtio=BC:24:11:..,bridge=vmbr0`.
          config[k] = v.replace(
            /^(virtio|e1000e?|rtl8139|vmxnet3)(,|$)/,
            `$1=${macFor(vmid, Number(k.slice(3)))}$2`,
          );
        }
      }
    } else {
      config.hostname ??= `CT${vmid}`;
      config.memory ??= 512;
      config.swap ??= 512;
      config.cores ??= 1;
      config.arch ??= "amd64";
      config.ostype ??= "debian";
      config.rootfs ??= `${firstImageStorage(ctx.state, node)}:8`;
      allocateDisks(ctx.state, node, vmid, config, /^(rootfs|mp\d+)$/);
    }
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
          guest.startedAt = Math.floor(ctx.engine.now() / 1000);
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

function failThrow(message: string): never {
  throw failed(message);
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

function digestOf(config: Record<string, unknown>): string {
  let h = 0x811c9dc5;
  const text = JSON.stringify(Object.entries(config).filter(([k]) => k !== "digest").sort());
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return (h >>> 0).toString(16).padStart(8, "0").repeat(5);
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
      for (const k of ctx.values.delete.split(/[,;\s]+/).filter(Boolean)) delete next[k];
    }
    allocateDisks(
      ctx.state,
      g.node,
      g.vmid,
      next,
      g.type === "qemu" ? /^(scsi|virtio|sata|ide|efidisk|tpmstate)\d+$/ : /^(rootfs|mp\d+)$/,
    );
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
function agentEnabled(g: Guest): boolean {
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
        const now = Math.floor(ctx.engine.now() / 1000);
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

/** Recent tasks of all nodes, newest first (GET /cluster/tasks). */
function clusterTasks(ctx: HandlerContext): unknown[] {
  const all: Task[] = [];
  for (const list of ctx.state.tasksByNode.values()) all.push(...list.slice(-50));
  all.sort((a, b) => b.starttime - a.starttime || b.pid - a.pid);
  return all.map(taskEntry);
}

// ---------------------------------------------------------------- snapshots

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
      if (start) g.startedAt = Math.floor(ctx.engine.now() / 1000);
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

// ---------------------------------------------------------------- agent / interfaces

function agentInterfaces(ctx: HandlerContext) {
  const g = guestOf(ctx);
  if (!agentEnabled(g)) {
    failThrow("No QEMU guest agent configured");
  }
  if (g.status !== "running") failThrow(`VM ${g.vmid} is not running`);
  return { result: g.agentInterfaces ?? agentView(g) };
}

/** What the guest agent reports for a guest without seeded data: its NICs and cloud-init IPs. */
function agentView(g: Guest): AgentInterface[] {
  const out: AgentInterface[] = [{
    name: "lo",
    "hardware-address": "00:00:00:00:00:00",
    "ip-addresses": [{ "ip-address-type": "ipv4", "ip-address": "127.0.0.1", prefix: 8 }],
  }];
  for (const [k, v] of Object.entries(g.config)) {
    const m = /^net(\d+)$/.exec(k);
    if (!m) continue;
    const mac = /([0-9A-F]{2}:){5}[0-9A-F]{2}/i.exec(String(v))?.[0] ?? "00:00:00:00:00:00";
    const ipcfg = parsePropertyString(String(g.config[`ipconfig${m[1]}`] ?? ""));
    const ips: AgentInterface["ip-addresses"] = [];
    const cidr = /^(\d+\.\d+\.\d+\.\d+)\/(\d+)$/.exec(ipcfg.ip ?? "");
    if (cidr) {
      ips.push({ "ip-address-type": "ipv4", "ip-address": cidr[1], prefix: Number(cidr[2]) });
    }
    out.push({ name: `eth${m[1]}`, "hardware-address": mac.toLowerCase(), "ip-addresses": ips });
  }
  return out;
}

function lxcInterfaces(ctx: HandlerContext) {
  const g = guestOf(ctx);
  if (g.status !== "running") failThrow(`CT ${g.vmid} not running`);
  const out: Record<string, unknown>[] = [{
    name: "lo",
    hwaddr: "00:00:00:00:00:00",
    inet: "127.0.0.1/8",
    inet6: "::1/128",
  }];
  for (const [k, v] of Object.entries(g.config)) {
    if (!/^net\d+$/.test(k)) continue;
    const p = parsePropertyString(String(v));
    const e: Record<string, unknown> = {
      name: p.name ?? `eth${k.slice(3)}`,
      hwaddr: (p.hwaddr ?? "").toLowerCase(),
    };
    if (p.ip && p.ip !== "dhcp" && p.ip !== "manual") e.inet = p.ip;
    out.push(e);
  }
  return out;
}

// ---------------------------------------------------------------- nodes and cluster

function nodeEntry(state: MockState, node: string, nowS: number) {
  const n = state.nodes.get(node)!;
  let mem = 2 * GiB;
  let cpu = 0.01;
  for (const vmid of state.guestsByNode.get(node) ?? []) {
    const g = state.guests.get(vmid)!;
    if (g.status !== "running") continue;
    mem += Number(g.config.memory ?? 512) * 1024 * 1024 * 0.5;
    cpu += 0.002;
  }
  return {
    node,
    id: `node/${node}`,
    type: "node",
    status: n.status,
    cpu: Math.min(1, Math.round(cpu * 1000) / 1000),
    maxcpu: n.maxcpu,
    mem: Math.min(n.maxmem, Math.round(mem)),
    maxmem: n.maxmem,
    disk: Math.round(n.maxdisk * 0.18),
    maxdisk: n.maxdisk,
    uptime: Math.max(0, nowS - n.bootedAt),
    level: "",
    ssl_fingerprint: fingerprint(node),
  };
}

function fingerprint(node: string): string {
  const bytes: string[] = [];
  let h = 7;
  for (let i = 0; i < 32; i++) {
    h = (Math.imul(h, 31) + node.charCodeAt(i % node.length) + i) >>> 0;
    bytes.push((h & 0xff).toString(16).toUpperCase().padStart(2, "0"));
  }
  return bytes.join(":");
}

function nodeStatus(ctx: HandlerContext) {
  const e = nodeEntry(ctx.state, String(ctx.values.node), ctx.nowS);
  const n = ctx.state.nodes.get(String(ctx.values.node))!;
  return {
    cpu: e.cpu,
    uptime: e.uptime,
    loadavg: ["0.42", "0.37", "0.31"],
    wait: 0.001,
    idle: 0,
    pveversion: "pve-manager/9.2.0/mock",
    kversion: "Linux 6.17.2-1-pve #1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1 x86_64",
    "current-kernel": {
      sysname: "Linux",
      release: "6.17.2-1-pve",
      version: "#1 SMP",
      machine: "x86_64",
    },
    "boot-info": { mode: "efi", secureboot: 0 },
    cpuinfo: {
      cpus: n.maxcpu,
      cores: n.maxcpu / 2,
      sockets: 1,
      model: "Mock CPU @ 3.00GHz",
      mhz: "3000.000",
      hvm: "1",
      flags: "fpu vme de pse tsc msr pae mce cx8 apic sep",
      user_hz: 100,
    },
    memory: { total: e.maxmem, used: e.mem, free: e.maxmem - e.mem, available: e.maxmem - e.mem },
    swap: { total: 8 * GiB, used: 0, free: 8 * GiB },
    rootfs: { total: e.maxdisk, used: e.disk, free: e.maxdisk - e.disk, avail: e.maxdisk - e.disk },
    ksm: { shared: 0 },
  };
}

function clusterStatus(ctx: HandlerContext): unknown[] {
  const nodes = [...ctx.state.nodes.values()];
  const online = nodes.filter((n) => n.status === "online").length;
  const out: unknown[] = [{
    type: "cluster",
    id: "cluster",
    name: ctx.state.clusterName,
    nodes: nodes.length,
    quorate: online * 2 > nodes.length ? 1 : 0,
    version: nodes.length + 2,
  }];
  nodes.forEach((n, i) =>
    out.push({
      type: "node",
      id: `node/${n.node}`,
      name: n.node,
      nodeid: n.nodeid,
      ip: n.ip,
      online: n.status === "online" ? 1 : 0,
      local: i === 0 ? 1 : 0,
      level: "",
    })
  );
  return out;
}

function storageEntry(_state: MockState, id: string, s: StorageState, node: string) {
  const used = storageUsed(s, node);
  return {
    storage: id,
    type: String(s.config.type),
    content: String(s.config.content ?? ""),
    shared: Number(s.config.shared ?? 0),
    active: 1,
    enabled: s.config.disable === 1 ? 0 : 1,
    total: s.total,
    used,
    avail: Math.max(0, s.total - used),
    used_fraction: s.total ? Math.round((used / s.total) * 10000) / 10000 : 0,
  };
}

function clusterResources(ctx: HandlerContext): unknown[] {
  const type = ctx.values.type as string | undefined;
  const out: unknown[] = [];
  const state = ctx.state;
  if (!type || type === "node") {
    for (const node of state.nodes.keys()) out.push(nodeEntry(state, node, ctx.nowS));
  }
  if (!type || type === "vm") {
    for (const g of state.guests.values()) {
      const e = listEntry(g, ctx.nowS, state);
      out.push({
        id: `${g.type}/${g.vmid}`,
        type: g.type,
        vmid: g.vmid,
        name: e.name,
        node: g.node,
        status: g.status,
        cpu: e.cpu,
        maxcpu: e.maxcpu,
        mem: e.mem,
        maxmem: e.maxmem,
        disk: e.disk,
        maxdisk: e.maxdisk,
        uptime: e.uptime,
        netin: e.netin,
        netout: e.netout,
        diskread: e.diskread,
        diskwrite: e.diskwrite,
        template: e.template,
        hastate: undefined,
        ...(e.tags ? { tags: e.tags } : {}),
        ...(e.pool ? { pool: e.pool } : {}),
        ...(e.lock ? { lock: e.lock } : {}),
      });
      delete (out[out.length - 1] as Record<string, unknown>).hastate;
    }
  }
  if (!type || type === "storage") {
    for (const node of state.nodes.keys()) {
      for (const [id, s] of state.storages) {
        if (!storageOnNode(s, node)) continue;
        const e = storageEntry(state, id, s, node);
        out.push({
          id: `storage/${node}/${id}`,
          type: "storage",
          storage: id,
          node,
          status: "available",
          plugintype: e.type,
          content: e.content,
          shared: e.shared,
          disk: e.used,
          maxdisk: e.total,
        });
      }
    }
  }
  if (!type || type === "sdn") {
    for (const node of state.nodes.keys()) {
      for (const zone of state.collections.get("/cluster/sdn/zones")?.keys() ?? []) {
        out.push({ id: `sdn/${node}/${zone}`, type: "sdn", sdn: zone, zone, node, status: "ok" });
      }
    }
  }
  if (!type || type === "pool") {
    for (const p of state.pools.values()) {
      out.push({ id: `/pool/${p.poolid}`, type: "pool", pool: p.poolid, comment: p.comment ?? "" });
    }
  }
  return out;
}

function nextId(ctx: HandlerContext): number {
  if (ctx.values.vmid !== undefined) {
    const vmid = Number(ctx.values.vmid);
    if (ctx.state.guests.has(vmid)) throw fieldError("vmid", `VM ${vmid} already exists`);
    return vmid;
  }
  let id = 100;
  while (ctx.state.guests.has(id)) id++;
  return id;
}

// ---------------------------------------------------------------- storage

function storageConfigList(ctx: HandlerContext): unknown[] {
  const out: unknown[] = [];
  for (const [id, s] of ctx.state.storages) {
    if (ctx.values.type !== undefined && s.config.type !== ctx.values.type) continue;
    out.push({ ...s.config, storage: id, digest: digestOf(s.config) });
  }
  return out;
}

function storageCreate(ctx: HandlerContext) {
  const id = String(ctx.values.storage);
  if (ctx.state.storages.has(id)) {
    throw fieldError("storage", `storage ID '${id}' already defined`);
  }
  const config: Record<string, ConfigValue> = {};
  for (const [k, v] of Object.entries(ctx.values)) {
    if (k === "password" || k === "encryption-key" || k === "keyring") continue;
    config[k] = typeof v === "number" || typeof v === "string" ? v : String(v);
  }
  config.content ??= config.type === "dir" ? "images,rootdir,iso,vztmpl,backup" : "images,rootdir";
  config.shared ??= ["nfs", "cifs", "cephfs", "rbd", "pbs", "iscsi"].includes(String(config.type))
    ? 1
    : 0;
  ctx.state.storages.set(id, { config, total: 1024 * GiB, volumes: new Map() });
  return { storage: id, type: String(config.type) };
}

function storageGet(ctx: HandlerContext) {
  const s = ctx.state.storages.get(String(ctx.values.storage))!;
  return { ...s.config, digest: digestOf(s.config) };
}

function storageUpdate(ctx: HandlerContext) {
  const s = ctx.state.storages.get(String(ctx.values.storage))!;
  for (const [k, v] of Object.entries(ctx.values)) {
    if (["storage", "digest", "delete", "password", "encryption-key", "keyring"].includes(k)) {
      continue;
    }
    s.config[k] = typeof v === "number" || typeof v === "string" ? v : String(v);
  }
  if (typeof ctx.values.delete === "string") {
    for (const k of ctx.values.delete.split(/[,;\s]+/).filter(Boolean)) delete s.config[k];
  }
  return { storage: String(ctx.values.storage), type: String(s.config.type) };
}

function storageDelete(ctx: HandlerContext) {
  ctx.state.storages.delete(String(ctx.values.storage));
  return null;
}

function nodeStorageList(ctx: HandlerContext): unknown[] {
  const node = String(ctx.values.node);
  const out: unknown[] = [];
  for (const [id, s] of ctx.state.storages) {
    if (!storageOnNode(s, node)) continue;
    if (ctx.values.storage !== undefined && id !== ctx.values.storage) continue;
    if (ctx.values.enabled === 1 && s.config.disable === 1) continue;
    if (typeof ctx.values.content === "string") {
      const have = String(s.config.content).split(",");
      if (!ctx.values.content.split(",").every((c) => have.includes(c))) continue;
    }
    out.push(storageEntry(ctx.state, id, s, node));
  }
  return out;
}

function nodeStorageStatus(ctx: HandlerContext) {
  const id = String(ctx.values.storage);
  return storageEntry(ctx.state, id, ctx.state.storages.get(id)!, String(ctx.values.node));
}

function volumeId(ctx: HandlerContext): string {
  const v = String(ctx.values.volume);
  return v.includes(":") ? v : `${ctx.values.storage}:${v}`;
}

function contentList(ctx: HandlerContext): unknown[] {
  const s = ctx.state.storages.get(String(ctx.values.storage))!;
  const out: unknown[] = [];
  for (const v of volumesOn(s, String(ctx.values.node))) {
    if (ctx.values.content !== undefined && v.content !== ctx.values.content) continue;
    if (ctx.values.vmid !== undefined && v.vmid !== ctx.values.vmid) continue;
    const e: Record<string, unknown> = {
      volid: v.volid,
      content: v.content,
      format: v.format,
      size: v.size,
      ctime: v.ctime,
    };
    if (v.vmid !== undefined) e.vmid = v.vmid;
    if (v.notes !== undefined) e.notes = v.notes;
    if (v.protected !== undefined) e.protected = v.protected;
    if (v.subtype !== undefined) e.subtype = v.subtype;
    if (v.content === "images" || v.content === "rootdir") e.used = Math.round(v.size * 0.4);
    out.push(e);
  }
  return out;
}

function findVolume(ctx: HandlerContext) {
  const s = ctx.state.storages.get(String(ctx.values.storage))!;
  const list = volumesOn(s, String(ctx.values.node));
  const volid = volumeId(ctx);
  const v = list.find((x) => x.volid === volid);
  if (!v) throw missing(`volume '${volid}' does not exist`);
  return { s, list, v };
}

function contentGet(ctx: HandlerContext) {
  const { v } = findVolume(ctx);
  return {
    path: `/var/lib/vz/${v.volid.split(":")[1]}`,
    size: v.size,
    used: Math.round(v.size * 0.4),
    format: v.format,
    notes: v.notes ?? "",
    protected: v.protected ?? 0,
  };
}

function contentUpdate(ctx: HandlerContext) {
  const { v } = findVolume(ctx);
  if (ctx.values.notes !== undefined) v.notes = String(ctx.values.notes);
  if (ctx.values.protected !== undefined) v.protected = ctx.values.protected === 1 ? 1 : 0;
  return null;
}

function contentDelete(ctx: HandlerContext) {
  const { s, v } = findVolume(ctx);
  if (v.protected === 1) failThrow(`volume '${v.volid}' is protected`);
  const key = s.config.shared ? "" : String(ctx.values.node);
  s.volumes.set(key, volumesOn(s, String(ctx.values.node)).filter((x) => x !== v));
  return startTask(ctx, {
    node: String(ctx.values.node),
    type: "imgdel",
    id: v.volid,
    log: [`delete ${v.volid}`],
  });
}

function contentAlloc(ctx: HandlerContext) {
  const s = ctx.state.storages.get(String(ctx.values.storage))!;
  const filename = String(ctx.values.filename);
  const volid = `${ctx.values.storage}:${filename}`;
  const list = volumesOn(s, String(ctx.values.node));
  if (list.some((v) => v.volid === volid)) {
    throw fieldError("filename", `volume '${volid}' already exists`);
  }
  const m = /^(\d+)([KMG]?)$/.exec(String(ctx.values.size));
  const mult = m ? ({ "": 1024, K: 1024, M: 1024 ** 2, G: GiB }[m[2]] ?? 1) : 1024;
  list.push({
    volid,
    content: "images",
    format: String(ctx.values.format ?? "raw"),
    size: m ? Number(m[1]) * mult : 0,
    ctime: ctx.nowS,
    vmid: Number(ctx.values.vmid),
  });
  return volid;
}

/** File name rules of `pvesm upload` per content type. */
const UPLOAD_NAMES: Record<string, { re: RegExp; format: (name: string) => string }> = {
  iso: { re: /\.(iso|img)$/i, format: () => "iso" },
  vztmpl: {
    re: /\.tar\.(gz|xz|zst|bz2)$/i,
    format: (n) => `t${/\.tar\.(\w+)$/i.exec(n)![1].toLowerCase()}`,
  },
  import: {
    re: /\.(ova|ovf|qcow2|raw|vmdk|img)$/i,
    format: (n) => /\.(\w+)$/.exec(n)![1].toLowerCase(),
  },
};

/** POST /nodes/{node}/storage/{storage}/upload: the file lands as `<storage>:<content>/<name>`. */
function upload(ctx: HandlerContext) {
  const storageId = String(ctx.values.storage);
  const s = ctx.state.storages.get(storageId)!;
  const content = String(ctx.values.content);
  if (!String(s.config.content ?? "").split(",").includes(content)) {
    throw fieldError(
      "content",
      `storage '${storageId}' does not support content type '${content}'`,
    );
  }
  // Proxmox normalises the name (anything unusual becomes `_`).
  const name = String(ctx.values.filename).split(/[\\/]/).pop()!.replace(/[^\w.+-]/g, "_");
  const rule = UPLOAD_NAMES[content];
  if (!name || (rule && !rule.re.test(name))) {
    throw fieldError("filename", `wrong file extension for content type '${content}'`);
  }
  const volid = `${storageId}:${content}/${name}`;
  const node = String(ctx.values.node);
  const list = volumesOn(s, node);
  if (list.some((v) => v.volid === volid)) {
    throw fieldError("filename", `volume '${volid}' already exists`);
  }
  const size = ctx.files.filename?.size ?? 0;
  return startTask(ctx, {
    node,
    type: "imgcopy",
    id: "",
    log: [`starting file import from: /var/tmp/pveupload-${name}`, `target file: ${volid}`],
    effect: () => {
      const now = volumesOn(s, node);
      if (now.some((v) => v.volid === volid)) return;
      now.push({
        volid,
        content,
        format: rule ? rule.format(name) : "raw",
        size,
        ctime: Math.floor(ctx.engine.now() / 1000),
      });
    },
  });
}

function vzdump(ctx: HandlerContext) {
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
      const at = Math.floor(ctx.engine.now() / 1000);
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

// ---------------------------------------------------------------- tasks

function taskEntry(t: Task): Record<string, unknown> {
  const e: Record<string, unknown> = {
    upid: t.upid,
    node: t.node,
    pid: t.pid,
    pstart: t.pstart,
    starttime: t.starttime,
    type: t.type,
    id: t.id,
    user: t.user,
  };
  if (t.status === "stopped") {
    e.endtime = t.endtime;
    e.status = t.exitstatus;
  } else e.status = "running";
  return e;
}

function taskList(ctx: HandlerContext): unknown[] {
  const list = ctx.state.tasksByNode.get(String(ctx.values.node)) ?? [];
  const v = ctx.values;
  const source = String(v.source ?? "archive");
  const out: unknown[] = [];
  for (let i = list.length - 1; i >= 0; i--) {
    const t = list[i];
    if (source === "archive" && t.status === "running") continue;
    if (source === "active" && t.status !== "running") continue;
    if (v.vmid !== undefined && t.id !== String(v.vmid)) continue;
    if (v.typefilter !== undefined && t.type !== v.typefilter) continue;
    if (v.userfilter !== undefined && !t.user.includes(String(v.userfilter))) continue;
    if (v.errors === 1 && (t.status === "running" || t.exitstatus === "OK")) continue;
    if (v.since !== undefined && t.starttime < Number(v.since)) continue;
    if (v.until !== undefined && t.starttime > Number(v.until)) continue;
    if (typeof v.statusfilter === "string") {
      const wanted = v.statusfilter.split(",");
      const state = t.status === "running" ? "running" : t.exitstatus === "OK" ? "ok" : "error";
      if (!wanted.includes(state)) continue;
    }
    out.push(taskEntry(t));
  }
  return out;
}

/** Proxmox's default `source=archive` hides running tasks; we list them too so a fresh UPID shows. */
function taskListAll(ctx: HandlerContext): unknown[] {
  if (ctx.values.source === undefined) ctx.values.source = "all";
  return taskList(ctx);
}

function taskStatus(ctx: HandlerContext) {
  const t = ctx.state.tasks.get(String(ctx.values.upid))!;
  const e: Record<string, unknown> = { ...taskEntry(t), status: t.status };
  if (t.status === "stopped") e.exitstatus = t.exitstatus;
  return e;
}

function taskLog(ctx: HandlerContext) {
  const t = ctx.state.tasks.get(String(ctx.values.upid))!;
  return t.log.map((line, i) => ({ n: i + 1, t: line }));
}

function taskStop(ctx: HandlerContext) {
  const t = ctx.state.tasks.get(String(ctx.values.upid))!;
  ctx.engine.tasks.finish(t, ctx.nowMs, "interrupted by signal");
  return null;
}

// ---------------------------------------------------------------- access

function login(ctx: HandlerContext) {
  try {
    const userid = checkLogin(
      ctx.state,
      ctx.engine.sessions,
      String(ctx.values.username),
      String(ctx.values.password),
      ctx.values.realm as string | undefined,
      ctx.nowS,
    );
    return { ...ctx.engine.sessions.issue(userid), clustername: ctx.state.clusterName };
  } catch (err) {
    if (err instanceof AuthError) throw new MockError(401, err.message);
    throw err;
  }
}

function userEntry(state: MockState, userid: string, full: boolean) {
  const u = state.users.get(userid)!;
  const e: Record<string, unknown> = {
    userid,
    enable: u.enable,
    expire: u.expire,
    "realm-type": userid.split("@")[1] ?? "pve",
  };
  for (const k of ["firstname", "lastname", "email", "comment"] as const) {
    if (u[k] !== undefined) e[k] = u[k];
  }
  if (u.groups.length) e.groups = full ? u.groups : u.groups.join(",");
  if (full) {
    e.tokens = [...u.tokens.values()].map((t) => ({
      tokenid: t.tokenid,
      privsep: t.privsep,
      expire: t.expire,
      ...(t.comment ? { comment: t.comment } : {}),
    }));
  }
  return e;
}

function usersList(ctx: HandlerContext) {
  const out: unknown[] = [];
  for (const [id, u] of ctx.state.users) {
    if (ctx.values.enabled === 1 && u.enable !== 1) continue;
    out.push(userEntry(ctx.state, id, ctx.values.full === 1));
  }
  return out;
}

function userCreate(ctx: HandlerContext) {
  const userid = String(ctx.values.userid);
  if (ctx.state.users.has(userid)) throw fieldError("userid", `user '${userid}' already exists`);
  ctx.state.users.set(userid, {
    userid,
    password: ctx.values.password as string | undefined,
    enable: ctx.values.enable === 0 ? 0 : 1,
    expire: Number(ctx.values.expire ?? 0),
    firstname: ctx.values.firstname as string | undefined,
    lastname: ctx.values.lastname as string | undefined,
    email: ctx.values.email as string | undefined,
    comment: ctx.values.comment as string | undefined,
    groups: String(ctx.values.groups ?? "").split(/[,;\s]+/).filter(Boolean),
    tokens: new Map(),
  });
  return null;
}

function userGet(ctx: HandlerContext) {
  const e = userEntry(ctx.state, String(ctx.values.userid), true);
  delete e.userid;
  const u = ctx.state.users.get(String(ctx.values.userid))!;
  e.tokens = Object.fromEntries(
    [...u.tokens.values()].map((
      t,
    ) => [t.tokenid, { privsep: t.privsep, expire: t.expire, comment: t.comment }]),
  );
  return e;
}

function userUpdate(ctx: HandlerContext) {
  const u = ctx.state.users.get(String(ctx.values.userid))!;
  for (const k of ["firstname", "lastname", "email", "comment"] as const) {
    if (ctx.values[k] !== undefined) u[k] = String(ctx.values[k]);
  }
  if (ctx.values.enable !== undefined) u.enable = ctx.values.enable === 1 ? 1 : 0;
  if (ctx.values.expire !== undefined) u.expire = Number(ctx.values.expire);
  if (ctx.values.groups !== undefined) {
    const groups = String(ctx.values.groups).split(/[,;\s]+/).filter(Boolean);
    u.groups = ctx.values.append === 1 ? [...new Set([...u.groups, ...groups])] : groups;
  }
  return null;
}

function userDelete(ctx: HandlerContext) {
  ctx.state.users.delete(String(ctx.values.userid));
  return null;
}

function passwordChange(ctx: HandlerContext) {
  const u = ctx.state.users.get(String(ctx.values.userid));
  if (!u) throw fieldError("userid", `no such user ('${ctx.values.userid}')`);
  u.password = String(ctx.values.password);
  return null;
}

function tokenList(ctx: HandlerContext) {
  const u = ctx.state.users.get(String(ctx.values.userid))!;
  return [...u.tokens.values()].map((t) => ({
    tokenid: t.tokenid,
    privsep: t.privsep,
    expire: t.expire,
    comment: t.comment ?? "",
  }));
}

function tokenInfo(t: { privsep: number; expire: number; comment?: string }) {
  return { privsep: t.privsep, expire: t.expire, ...(t.comment ? { comment: t.comment } : {}) };
}

function tokenCreate(ctx: HandlerContext) {
  const userid = String(ctx.values.userid);
  const tokenid = String(ctx.values.tokenid);
  const u = ctx.state.users.get(userid)!;
  if (u.tokens.has(tokenid)) throw fieldError("tokenid", `Token already exists.`);
  const token = {
    tokenid,
    secret: newTokenSecret(),
    privsep: ctx.values.privsep === 0 ? 0 as const : 1 as const,
    expire: Number(ctx.values.expire ?? 0),
    comment: ctx.values.comment as string | undefined,
  };
  u.tokens.set(tokenid, token);
  return { "full-tokenid": `${userid}!${tokenid}`, info: tokenInfo(token), value: token.secret };
}

function tokenGet(ctx: HandlerContext) {
  const t = ctx.state.users.get(String(ctx.values.userid))!.tokens.get(String(ctx.values.tokenid))!;
  return tokenInfo(t);
}

function tokenUpdate(ctx: HandlerContext) {
  const userid = String(ctx.values.userid);
  const t = ctx.state.users.get(userid)!.tokens.get(String(ctx.values.tokenid))!;
  if (ctx.values.comment !== undefined) t.comment = String(ctx.values.comment);
  if (ctx.values.expire !== undefined) t.expire = Number(ctx.values.expire);
  if (ctx.values.privsep !== undefined) t.privsep = ctx.values.privsep === 1 ? 1 : 0;
  const out: Record<string, unknown> = {
    ...tokenInfo(t),
    "full-tokenid": `${userid}!${t.tokenid}`,
  };
  if (ctx.values.regenerate === 1) {
    t.secret = newTokenSecret();
    out.value = t.secret;
  }
  return out;
}

function tokenDelete(ctx: HandlerContext) {
  ctx.state.users.get(String(ctx.values.userid))!.tokens.delete(String(ctx.values.tokenid));
  return null;
}

// ---------------------------------------------------------------- ACL

const ACL_KEY = "/access/acl";

function aclList(ctx: HandlerContext): unknown[] {
  return [...(ctx.state.collections.get(ACL_KEY)?.values() ?? [])].map((r) => ({ ...r }));
}

function aclUpdate(ctx: HandlerContext): null {
  const acl = collection(ctx.state, ACL_KEY);
  const path = String(ctx.values.path);
  const roles = String(ctx.values.roles).split(/[,;\s]+/).filter(Boolean);
  const who: Array<["user" | "group" | "token", string]> = [];
  const split = (v: unknown) => String(v ?? "").split(/[,;\s]+/).filter(Boolean);
  for (const u of split(ctx.values.users)) {
    if (!ctx.state.users.has(u)) throw fieldError("users", `user '${u}' does not exist`);
    who.push(["user", u]);
  }
  for (const g of split(ctx.values.groups)) {
    if (!ctx.state.collections.get("/access/groups")?.has(g)) {
      throw fieldError("groups", `group '${g}' does not exist`);
    }
    who.push(["group", g]);
  }
  for (const t of split(ctx.values.tokens)) who.push(["token", t]);
  if (!who.length) throw fieldError("users", "no user, group or token given");
  const known = ctx.state.collections.get("/access/roles");
  for (const roleid of roles) {
    if (known && !known.has(roleid)) throw fieldError("roles", `role '${roleid}' does not exist`);
    for (const [type, ugid] of who) {
      const key = `${path}|${type}|${ugid}|${roleid}`;
      if (ctx.values.delete === 1) acl.delete(key);
      else {acl.set(key, {
          path,
          type,
          ugid,
          roleid,
          propagate: ctx.values.propagate === 0 ? 0 : 1,
        });}
    }
  }
  return null;
}

// ---------------------------------------------------------------- pools

function poolMembers(state: MockState, poolid: string, type: unknown, nowS: number) {
  const members: unknown[] = [];
  if (type === undefined || type === "qemu" || type === "lxc") {
    for (const [vmid, p] of state.poolOf) {
      if (p !== poolid) continue;
      const g = state.guests.get(vmid);
      if (!g || (type !== undefined && g.type !== type)) continue;
      const e = listEntry(g, nowS, state);
      members.push({
        id: `${g.type}/${vmid}`,
        type: g.type,
        vmid,
        node: g.node,
        name: e.name,
        status: g.status,
        maxmem: e.maxmem,
        maxcpu: e.maxcpu,
      });
    }
  }
  if (type === undefined || type === "storage") {
    for (const id of state.pools.get(poolid)!.storage) {
      for (const node of state.nodes.keys()) {
        members.push({ id: `storage/${node}/${id}`, type: "storage", storage: id, node });
      }
    }
  }
  return members;
}

function poolsList(ctx: HandlerContext) {
  const out: unknown[] = [];
  for (const p of ctx.state.pools.values()) {
    if (ctx.values.poolid !== undefined && p.poolid !== ctx.values.poolid) continue;
    const e: Record<string, unknown> = { poolid: p.poolid };
    if (p.comment) e.comment = p.comment;
    if (ctx.values.poolid !== undefined) {
      e.members = poolMembers(ctx.state, p.poolid, ctx.values.type, ctx.nowS);
    }
    out.push(e);
  }
  if (ctx.values.poolid !== undefined && !out.length) {
    throw missing(`pool '${ctx.values.poolid}' does not exist`);
  }
  return out;
}

function poolCreate(ctx: HandlerContext) {
  const poolid = String(ctx.values.poolid);
  if (ctx.state.pools.has(poolid)) throw fieldError("poolid", `pool '${poolid}' already exists`);
  ctx.state.pools.set(poolid, {
    poolid,
    comment: ctx.values.comment as string | undefined,
    storage: new Set(),
  });
  return null;
}

function poolGet(ctx: HandlerContext) {
  const p = ctx.state.pools.get(String(ctx.values.poolid))!;
  return {
    comment: p.comment ?? "",
    members: poolMembers(ctx.state, p.poolid, ctx.values.type, ctx.nowS),
  };
}

function poolUpdate(ctx: HandlerContext) {
  const poolid = String(ctx.values.poolid);
  const p = ctx.state.pools.get(poolid);
  if (!p) throw missing(`pool '${poolid}' does not exist`);
  if (ctx.values.comment !== undefined) p.comment = String(ctx.values.comment);
  const remove = ctx.values.delete === 1;
  if (ctx.values.vms !== undefined) {
    const ids = String(ctx.values.vms).split(/[,;\s]+/).filter(Boolean).map(Number);
    for (const id of ids) {
      if (!ctx.state.guests.has(id)) throw fieldError("vms", `VM ${id} does not exist`);
      const current = ctx.state.poolOf.get(id);
      if (remove) {
        if (current === poolid) ctx.state.poolOf.delete(id);
      } else {
        if (current && current !== poolid && ctx.values["allow-move"] !== 1) {
          throw fieldError("vms", `VM ${id} is already a pool member of '${current}'`);
        }
        ctx.state.poolOf.set(id, poolid);
      }
    }
  }
  if (ctx.values.storage !== undefined) {
    for (const id of String(ctx.values.storage).split(/[,;\s]+/).filter(Boolean)) {
      if (!ctx.state.storages.has(id)) {
        throw fieldError("storage", `storage '${id}' does not exist`);
      }
      if (remove) p.storage.delete(id);
      else p.storage.add(id);
    }
  }
  return null;
}

function poolDelete(ctx: HandlerContext) {
  const poolid = String(ctx.values.poolid);
  const p = ctx.state.pools.get(poolid);
  if (!p) throw missing(`pool '${poolid}' does not exist`);
  if (p.storage.size || [...ctx.state.poolOf.values()].includes(poolid)) {
    failThrow("pool is not empty");
  }
  ctx.state.pools.delete(poolid);
  return null;
}

// ---------------------------------------------------------------- table

function guestHandlers(type: GuestType): Record<string, Handler> {
  const base = `/nodes/{node}/${type}`;
  const item = `${base}/{vmid}`;
  const h: Record<string, Handler> = {
    [`GET ${base}`]: listGuests(type),
    [`POST ${base}`]: createGuest(type),
    [`DELETE ${item}`]: destroyGuest(type),
    [`GET ${item}/config`]: getConfig,
    [`PUT ${item}/config`]: updateConfig(false),
    [`GET ${item}/status/current`]: statusCurrent,
    [`GET ${item}/pending`]: pendingList,
    [`POST ${item}/template`]: makeTemplate(type),
    [`PUT ${item}/resize`]: resize,
    [`POST ${item}/migrate`]: migrate(type),
    [`GET ${item}/migrate`]: migratePrecondition(type),
    [`POST ${item}/clone`]: clone(type),
    [`GET ${item}/snapshot`]: listSnapshots,
    [`POST ${item}/snapshot`]: snapshotCreate,
    [`DELETE ${item}/snapshot/{snapname}`]: snapshotDelete,
    [`POST ${item}/snapshot/{snapname}/rollback`]: snapshotRollback,
    [`GET ${item}/snapshot/{snapname}/config`]: snapshotConfigGet,
    [`PUT ${item}/snapshot/{snapname}/config`]: snapshotConfigPut,
  };
  for (
    const action of ["start", "stop", "shutdown", "reboot", "suspend", "resume", "reset"] as const
  ) {
    h[`POST ${item}/status/${action}`] = lifecycle(type, action);
  }
  if (type === "qemu") {
    h[`POST ${item}/config`] = updateConfig(true);
    h[`GET ${item}/agent/network-get-interfaces`] = agentInterfaces;
  } else {
    h[`GET ${item}/interfaces`] = lxcInterfaces;
  }
  return h;
}

export const HANDLERS: Record<string, Handler> = {
  "GET /version": (ctx) => ({ ...ctx.engine.versionInfo, console: "xtermjs" }),
  "POST /access/ticket": login,
  "GET /access/ticket": () => null,
  "GET /access/users": usersList,
  "POST /access/users": userCreate,
  "GET /access/users/{userid}": userGet,
  "PUT /access/users/{userid}": userUpdate,
  "DELETE /access/users/{userid}": userDelete,
  "GET /access/users/{userid}/token": tokenList,
  "POST /access/users/{userid}/token/{tokenid}": tokenCreate,
  "GET /access/users/{userid}/token/{tokenid}": tokenGet,
  "PUT /access/users/{userid}/token/{tokenid}": tokenUpdate,
  "DELETE /access/users/{userid}/token/{tokenid}": tokenDelete,
  "PUT /access/password": passwordChange,
  "GET /access/acl": aclList,
  "PUT /access/acl": aclUpdate,
  "GET /cluster/status": clusterStatus,
  "GET /cluster/resources": clusterResources,
  "GET /cluster/nextid": nextId,
  "GET /cluster/tasks": clusterTasks,
  "GET /nodes": (ctx) => [...ctx.state.nodes.keys()].map((n) => nodeEntry(ctx.state, n, ctx.nowS)),
  "GET /nodes/{node}/status": nodeStatus,
  "GET /nodes/{node}/tasks": taskListAll,
  "GET /nodes/{node}/tasks/{upid}/status": taskStatus,
  "GET /nodes/{node}/tasks/{upid}/log": taskLog,
  "DELETE /nodes/{node}/tasks/{upid}": taskStop,
  "POST /nodes/{node}/vzdump": vzdump,
  "GET /storage": storageConfigList,
  "POST /storage": storageCreate,
  "GET /storage/{storage}": storageGet,
  "PUT /storage/{storage}": storageUpdate,
  "DELETE /storage/{storage}": storageDelete,
  "GET /nodes/{node}/storage": nodeStorageList,
  "GET /nodes/{node}/storage/{storage}/status": nodeStorageStatus,
  "GET /nodes/{node}/storage/{storage}/content": contentList,
  "POST /nodes/{node}/storage/{storage}/content": contentAlloc,
  "GET /nodes/{node}/storage/{storage}/content/{volume}": contentGet,
  "PUT /nodes/{node}/storage/{storage}/content/{volume}": contentUpdate,
  "DELETE /nodes/{node}/storage/{storage}/content/{volume}": contentDelete,
  "POST /nodes/{node}/storage/{storage}/upload": upload,
  "GET /pools": poolsList,
  "POST /pools": poolCreate,
  "PUT /pools": poolUpdate,
  "DELETE /pools": poolDelete,
  "GET /pools/{poolid}": poolGet,
  "PUT /pools/{poolid}": poolUpdate,
  "DELETE /pools/{poolid}": poolDelete,
  ...guestHandlers("qemu"),
  ...guestHandlers("lxc"),
};
