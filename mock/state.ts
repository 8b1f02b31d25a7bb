/**
 * The mock cluster's state: plain data, owned by one engine instance (never module-level).
 * Guest-scoped records (firewall rules, ...) are keyed by vmid so they follow the guest when it
 * migrates and vanish when it is destroyed.
 */

export type GuestType = "qemu" | "lxc";
export type ConfigValue = string | number;

export interface Snapshot {
  name: string;
  description: string;
  snaptime: number;
  parent?: string;
  vmstate?: 0 | 1;
  /** The guest configuration at snapshot time (rollback restores it). */
  config: Record<string, ConfigValue>;
}

export interface AgentInterface {
  name: string;
  "hardware-address": string;
  "ip-addresses": Array<
    { "ip-address-type": "ipv4" | "ipv6"; "ip-address": string; prefix: number }
  >;
}

export interface Guest {
  vmid: number;
  type: GuestType;
  node: string;
  status: "running" | "stopped" | "paused";
  /** Epoch seconds the guest was last started (uptime derives from it). */
  startedAt: number;
  config: Record<string, ConfigValue>;
  snapshots: Snapshot[];
  /** Guest agent view of the network (qemu with agent=1, running). */
  agentInterfaces?: AgentInterface[];
  /** What the QEMU guest agent reports as host name (get-host-name); default the guest's name. */
  agentHostName?: string;
  lock?: string;
}

export interface NodeState {
  node: string;
  nodeid: number;
  ip: string;
  maxcpu: number;
  maxmem: number;
  maxdisk: number;
  bootedAt: number;
  status: "online" | "offline";
}

export interface Volume {
  volid: string;
  content: string;
  format: string;
  size: number;
  ctime: number;
  vmid?: number;
  notes?: string;
  protected?: 0 | 1;
  subtype?: string;
}

export interface StorageState {
  /** The storage.cfg entry (`storage`, `type`, `content`, `shared`, `nodes`, `path`, ...). */
  config: Record<string, ConfigValue>;
  total: number;
  /** Volumes by node; a shared storage keeps them all under the key "". */
  volumes: Map<string, Volume[]>;
}

export interface ApiToken {
  tokenid: string;
  secret: string;
  privsep: 0 | 1;
  expire: number;
  comment?: string;
}

export interface User {
  userid: string;
  password?: string;
  enable: 0 | 1;
  expire: number;
  firstname?: string;
  lastname?: string;
  email?: string;
  comment?: string;
  groups: string[];
  tokens: Map<string, ApiToken>;
}

export interface Pool {
  poolid: string;
  comment?: string;
  storage: Set<string>;
}

export interface Task {
  upid: string;
  node: string;
  pid: number;
  pstart: number;
  starttime: number;
  type: string;
  id: string;
  user: string;
  /** Epoch ms when the task finishes. */
  endsAtMs: number;
  endtime?: number;
  status: "running" | "stopped";
  exitstatus?: string;
  log: string[];
  /** Applied once when the task finishes (the task's effect). */
  effect?: () => void;
}

/** A generic record of a schema collection the engine has no special handler for. */
export type GenericRecord = Record<string, unknown>;

export interface MockState {
  clusterName: string;
  nodes: Map<string, NodeState>;
  guests: Map<number, Guest>;
  /** vmids per node, kept in step with guests (lists by node must not scan every guest). */
  guestsByNode: Map<string, Set<number>>;
  storages: Map<string, StorageState>;
  users: Map<string, User>;
  pools: Map<string, Pool>;
  /** Guest vmid → pool id. */
  poolOf: Map<number, string>;
  tasks: Map<string, Task>;
  /** Tasks per node in start order (oldest first). */
  tasksByNode: Map<string, Task[]>;
  /** Generic collections: concrete parent key → id → record. */
  collections: Map<string, Map<string, GenericRecord>>;
  /** Counter for task pids and generated ids. */
  counter: number;
}

export function emptyState(clusterName = "bridgebox"): MockState {
  return {
    clusterName,
    nodes: new Map(),
    guests: new Map(),
    guestsByNode: new Map(),
    storages: new Map(),
    users: new Map(),
    pools: new Map(),
    poolOf: new Map(),
    tasks: new Map(),
    tasksByNode: new Map(),
    collections: new Map(),
    counter: 0,
  };
}

export function addGuest(state: MockState, guest: Guest): void {
  state.guests.set(guest.vmid, guest);
  let set = state.guestsByNode.get(guest.node);
  if (!set) state.guestsByNode.set(guest.node, set = new Set());
  set.add(guest.vmid);
}

export function removeGuest(state: MockState, vmid: number): void {
  const guest = state.guests.get(vmid);
  if (!guest) return;
  state.guests.delete(vmid);
  state.guestsByNode.get(guest.node)?.delete(vmid);
  state.poolOf.delete(vmid);
  const prefix = `vm:${vmid}/`;
  for (const key of [...state.collections.keys()]) {
    if (key.startsWith(prefix)) state.collections.delete(key);
  }
}

export function moveGuest(state: MockState, vmid: number, target: string): void {
  const guest = state.guests.get(vmid);
  if (!guest) return;
  state.guestsByNode.get(guest.node)?.delete(vmid);
  guest.node = target;
  let set = state.guestsByNode.get(target);
  if (!set) state.guestsByNode.set(target, set = new Set());
  set.add(vmid);
}

export function collection(state: MockState, key: string): Map<string, GenericRecord> {
  let c = state.collections.get(key);
  if (!c) state.collections.set(key, c = new Map());
  return c;
}

/** Volumes of a storage as seen from a node (shared storages show the same set everywhere). */
export function volumesOn(storage: StorageState, node: string): Volume[] {
  const key = storage.config.shared ? "" : node;
  let list = storage.volumes.get(key);
  if (!list) storage.volumes.set(key, list = []);
  return list;
}

export function storageUsed(storage: StorageState, node: string): number {
  let used = 0;
  for (const v of volumesOn(storage, node)) used += v.size;
  return used;
}

/** Whether a storage is available on a node (its `nodes` list, if any, names the node). */
export function storageOnNode(storage: StorageState, node: string): boolean {
  const nodes = storage.config.nodes;
  if (nodes === undefined || nodes === "") return true;
  return String(nodes).split(/[,;\s]+/).includes(node);
}
