/**
 * The guests of one endpoint as the later stages need them: the hypervisor's list with each
 * config (read with bounded concurrency, once per run), and the inventory VM each one maps to
 * through the VM sync-state sidecar (endpoint + vmid), never through its name.
 *
 * Memory (docs/sync.md, "Memory"): what a run keeps between stages is compact, whatever the
 * estate's size: each guest as one JSON text (its config and the few resource fields the stages
 * read), parsed a slice at a time, and the inventory side as numbers (vmid → VM id) and names.
 * Whole inventory objects are read per slice of guests, written, and let go.
 */
import { mapLimit, memo, type StageContext } from "./context.ts";
import { clusterBase, PATHS, SYNCED_TAG } from "./base.ts";
import type { ClusterResource, GuestConfig } from "./proxmox.ts";
import { plain, refId } from "./reconcile.ts";
import type { InventoryObject } from "./ports.ts";
import { assignedTo, childrenOf } from "./owned.ts";
import type { KeptWalks } from "./ledger.ts";

export interface Guest extends ClusterResource {
  config: GuestConfig;
}

/** Guests per slice: the configs and inventory objects of one slice are in memory at a time. */
export const SLICE = 500;

/** Ids per list request that names them (`id=…`, `virtual_machine_id=…`): URLs stay < 4 KiB. */
const IDS_PER_REQUEST = 100;

/**
 * Requests of one read by ids in flight at once: the inventory answers one while the next is on
 * its way (its own reads wait on storage), where one at a time left the app idle between them.
 */
const REQUESTS_IN_FLIGHT = 4;

/** Every guest of the endpoint, sorted by vmid, each kept as the JSON text of a `Guest`. */
export interface GuestList {
  readonly count: number;
  readonly vmids: readonly number[];
  /** The guests in vmid order, `size` at a time, parsed for the slice only. */
  slices(size?: number): Generator<Guest[]>;
}

function guestList(texts: string[], vmids: number[]): GuestList {
  return {
    count: texts.length,
    vmids,
    *slices(size = SLICE) {
      for (let i = 0; i < texts.length; i += size) {
        yield texts.slice(i, i + size).map((t) => JSON.parse(t) as Guest);
      }
    },
  };
}

/** Every guest (templates included) with its config, sorted by vmid. */
export function guests(ctx: StageContext): Promise<GuestList> {
  return memo(ctx, "guests", async () => {
    const resources = (await ctx.hv.get<ClusterResource[]>(
      "/cluster/resources",
      { type: "vm" },
      ctx.signal,
    ) ?? [])
      .filter((r) => (r.type === "qemu" || r.type === "lxc") && Number.isInteger(r.vmid))
      .sort((a, b) => a.vmid - b.vmid);
    let done = 0;
    // Each config is read once per run, and kept as text: the parsed objects of 100,000 guests
    // would be most of the run's memory.
    const texts = await mapLimit(resources, ctx.concurrency, ctx.signal, async (r) => {
      const config = await ctx.hv.get<GuestConfig>(
        `/nodes/${r.node}/${r.type}/${r.vmid}/config`,
        undefined,
        ctx.signal,
      );
      done++;
      if (done % 250 === 0 || done === resources.length) {
        ctx.progress(done, resources.length, `read ${done}/${resources.length} guest configs`);
      }
      const guest: Guest = {
        vmid: r.vmid,
        name: r.name,
        node: r.node,
        type: r.type,
        status: r.status,
        maxmem: r.maxmem,
        maxcpu: r.maxcpu,
        maxdisk: r.maxdisk,
        template: r.template,
        tags: r.tags,
        config: config ?? {},
      };
      return JSON.stringify(guest);
    });
    return guestList(texts, resources.map((r) => r.vmid));
  });
}

/**
 * Every object of `path` matching `filters`, page by page: `keep` takes what it needs of each
 * page, which is then let go (the inventory client's page walk; a port without one lists whole).
 */
export async function eachPage(
  ctx: StageContext,
  path: string,
  filters: Record<string, string | string[]>,
  keep: (page: InventoryObject[]) => void,
): Promise<void> {
  if (!ctx.inv.pages) {
    keep(await ctx.inv.list(path, filters, ctx.signal));
    return;
  }
  for await (const page of ctx.inv.pages(path, filters, ctx.signal)) {
    ctx.signal.throwIfAborted();
    keep(page);
  }
}

/**
 * The objects of `path` whose `field` (`id`, `virtual_machine_id`, `assigned_object_id`) is
 * one of `ids`, read IDS_PER_REQUEST ids per request (REQUESTS_IN_FLIGHT at a time), with
 * `filters` besides. Ids a dry run made up (negative) are asked for apart: the inventory has
 * none of them. The answer is in request order (each request's objects as the inventory gave
 * them), whatever order the answers came in.
 */
export async function listByIds(
  ctx: StageContext,
  path: string,
  field: string,
  ids: Iterable<number>,
  filters: Record<string, string | string[]> = {},
): Promise<InventoryObject[]> {
  const all = [...new Set(ids)].sort((a, b) => a - b);
  const batches: string[][] = [];
  for (const group of [all.filter((id) => id < 0), all.filter((id) => id >= 0)]) {
    for (let i = 0; i < group.length; i += IDS_PER_REQUEST) {
      batches.push(group.slice(i, i + IDS_PER_REQUEST).map(String));
    }
  }
  const pages = await mapLimit(
    batches,
    REQUESTS_IN_FLIGHT,
    ctx.signal,
    (batch) => ctx.inv.list(path, { ...filters, [field]: batch }, ctx.signal),
  );
  return pages.flat();
}

/**
 * NetBox's dynamic `fields` (4.0+): only what a stage compares and writes is rendered, never
 * the counts and nested objects it does not read (a VM interface's address counts, a disk's
 * nested VM form). An inventory that ignores `fields` answers whole objects, which hold them.
 */
export function onlyFields(fields: readonly string[]): { fields: string } {
  return { fields: fields.join(",") };
}

const NONE: ReadonlySet<number> = new Set();

/** `parents` but those in `none`. */
function unread(parents: ReadonlySet<number>, none: ReadonlySet<number>): Iterable<number> {
  return none.size ? [...parents].filter((id) => !none.has(id)) : parents;
}

/**
 * Ids of the objects of `path` (VMs, VM interfaces) this run created, per endpoint. Until the
 * stage that writes their children runs, none of them has any of the sync's children (tagged,
 * made by the sync): that stage need not read them (docs/sync.md, "Writes: round 8").
 */
export function madeThisRun(ctx: StageContext, path: string): Set<number> {
  const key = `created:${path}`;
  let made = ctx.cache.get(key) as Set<number> | undefined;
  if (!made) ctx.cache.set(key, made = new Set());
  return made;
}

/**
 * The sync's own children (its tag) on `path` of a slice's `parents` (inventory VM ids), keyed
 * `${parent}:${name}` (owned.ts `childrenOf`), with only `fields`: the one read the vm-disks,
 * vm-interfaces and ip-addresses stages make of each slice's disks and interfaces. Parents in
 * `none` are known to have none of the sync's children yet (made by this run before the stage
 * that writes `path`: `madeThisRun`) and are not asked about.
 */
export async function sliceChildren(
  ctx: StageContext,
  path: string,
  parents: ReadonlySet<number>,
  fields: readonly string[],
  none: ReadonlySet<number> = NONE,
): Promise<Map<string, InventoryObject>> {
  const found = await listByIds(ctx, path, "virtual_machine_id", unread(parents, none), {
    tag: SYNCED_TAG,
    ...onlyFields(fields),
  });
  return childrenOf(found, "virtual_machine", parents);
}

/**
 * The sync's own objects on `path` (MAC and IP addresses) assigned to `interfaces` of `type`,
 * keyed `${interfaceId}:${valueOf(object)}` (owned.ts `assignedTo`), with only `fields`;
 * interfaces in `none` are not asked about (as for `sliceChildren`).
 */
export async function sliceAssigned(
  ctx: StageContext,
  path: string,
  type: string,
  interfaces: ReadonlySet<number>,
  fields: readonly string[],
  valueOf: (o: InventoryObject) => string,
  none: ReadonlySet<number> = NONE,
): Promise<Map<string, InventoryObject>> {
  const found = await listByIds(ctx, path, "assigned_object_id", unread(interfaces, none), {
    tag: SYNCED_TAG,
    ...onlyFields(fields),
  });
  return assignedTo(found, type, interfaces, valueOf);
}

/**
 * What the virtual-machines stage compares and writes of a sync-state record, plus `id` and
 * `last_updated` (the edit check): the per-run walk reads these, so the stage need not read
 * the records again.
 */
export const STATE_FIELDS = [
  "id",
  "endpoint",
  "vmid",
  "vm_type",
  "virtual_machine",
  "node_name",
  "name",
  "status",
  "config_digest",
  "last_updated",
] as const;

export interface SyncStateIndex {
  /** vmid → sync-state record id */
  ids: Map<number, number>;
  /** vmid → inventory VM id (present or missing upstream) */
  vms: Map<number, number>;
  /**
   * vmid → the record as the walk read it, STATE_FIELDS' values in order, each reduced to what
   * one writes (an id for a nested object, a choice's value): taken (and let go) by the
   * virtual-machines stage, which compares them with what it would write.
   */
  read: Map<number, unknown[]>;
}

/** A record of `read` as an inventory object (plain values, which the diff compares alike). */
export function stateRecord(values: readonly unknown[]): InventoryObject {
  const out: Record<string, unknown> = {};
  STATE_FIELDS.forEach((field, i) => out[field] = values[i]);
  return out as InventoryObject;
}

/**
 * This endpoint's VM sync-state records (one paged walk per run): as numbers for every stage,
 * and the fields the virtual-machines stage compares, read here once rather than again by id
 * in that stage (docs/sync.md, "Re-runs": a record and its nested VM per guest fewer).
 */
export function syncStates(ctx: StageContext): Promise<SyncStateIndex> {
  return memo(ctx, "sync-states", async () => {
    const { kept } = await keptWalks(ctx);
    // As the last run's virtual-machines stage left them, nobody else having touched one since
    // (ledger.ts): nothing read. The stage then reads the records it compares by id.
    if (kept) return { ids: kept.stateIds, vms: kept.stateVms, read: new Map() };
    const base = await clusterBase(ctx);
    const ids = new Map<number, number>();
    const vms = new Map<number, number>();
    const read = new Map<number, unknown[]>();
    const filters = {
      endpoint_id: String(base.pluginEndpoint),
      ...onlyFields(STATE_FIELDS),
    };
    await eachPage(ctx, PATHS.syncState, filters, (page) => {
      for (const s of page) {
        const vmid = Number(s.vmid);
        // Later duplicates lose: the first record by id wins.
        if (ids.has(vmid) && ids.get(vmid)! < s.id) continue;
        ids.set(vmid, s.id);
        read.set(vmid, STATE_FIELDS.map((field) => plain(s[field])));
        const vm = refId(s.virtual_machine);
        if (vm !== null) vms.set(vmid, vm);
        else vms.delete(vmid);
      }
    });
    return { ids, vms, read };
  });
}

/**
 * The walks the ledger kept from the last run (docs/sync.md, "Re-runs: guests that did not
 * change"), taken once per run before any walk reads, with the mark the virtual-machines stage
 * keeps this run's by; none without a ledger (every run walks).
 */
export function keptWalks(ctx: StageContext): Promise<{ kept: KeptWalks | null; mark: number }> {
  return memo(
    ctx,
    "kept-walks",
    () => Promise.resolve(ctx.ledger?.takeWalks() ?? { kept: null, mark: -1 }),
  );
}

/** Every VM of this endpoint's cluster, hand-made ones included, as id → name. */
export function clusterVmNames(ctx: StageContext): Promise<Map<number, string>> {
  return memo(ctx, "cluster-vms", async () => {
    const { kept } = await keptWalks(ctx);
    if (kept) return kept.clusterNames;
    const base = await clusterBase(ctx);
    const names = new Map<number, string>();
    const filters = { cluster_id: String(base.cluster), ...onlyFields(["id", "name", "cluster"]) };
    await eachPage(ctx, PATHS.vms, filters, (page) => {
      for (const vm of page) {
        if (refId(vm.cluster) === base.cluster) names.set(vm.id, String(vm.name));
      }
    });
    return names;
  });
}

/**
 * vmid → inventory VM id of the VMs this endpoint owns (its sync-state points at a VM of its
 * cluster). After the virtual-machines stage: the guests present upstream, synced.
 */
export function ownedVms(ctx: StageContext): Promise<Map<number, number>> {
  return memo(ctx, "owned-vms", async () => {
    const { vms } = await syncStates(ctx);
    const inCluster = await clusterVmNames(ctx);
    const out = new Map<number, number>();
    for (const [vmid, id] of vms) if (inCluster.has(id)) out.set(vmid, id);
    return out;
  });
}

/** vmid → inventory VM id for guests present upstream and synced (later stages' anchor). */
export function vmAnchors(ctx: StageContext): Promise<Map<number, number>> {
  return ownedVms(ctx);
}

/**
 * The inventory VMs of `ids` that are still in this endpoint's cluster, by id; `view` narrows
 * what is rendered (`fields`, `omit`), `cluster` is always asked for.
 */
export async function vmsById(
  ctx: StageContext,
  ids: Iterable<number>,
  view: { fields?: string; omit?: string } = {},
): Promise<Map<number, InventoryObject>> {
  const base = await clusterBase(ctx);
  const out = new Map<number, InventoryObject>();
  for (const vm of await listByIds(ctx, PATHS.vms, "id", ids, view)) {
    if (refId(vm.cluster) === base.cluster && !out.has(vm.id)) out.set(vm.id, vm);
  }
  return out;
}
