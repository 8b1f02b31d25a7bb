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
import { clusterBase, PATHS } from "./base.ts";
import type { ClusterResource, GuestConfig } from "./proxmox.ts";
import { refId } from "./reconcile.ts";
import type { InventoryObject } from "./ports.ts";

export interface Guest extends ClusterResource {
  config: GuestConfig;
}

/** Guests per slice: the configs and inventory objects of one slice are in memory at a time. */
export const SLICE = 500;

/** Ids per list request that names them (`id=…`, `virtual_machine_id=…`): URLs stay < 4 KiB. */
const IDS_PER_REQUEST = 100;

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
 * one of `ids`, read IDS_PER_REQUEST ids per request, with `filters` besides. Ids a dry run
 * made up (negative) are asked for apart: the inventory has none of them.
 */
export async function listByIds(
  ctx: StageContext,
  path: string,
  field: string,
  ids: Iterable<number>,
  filters: Record<string, string | string[]> = {},
): Promise<InventoryObject[]> {
  const all = [...new Set(ids)].sort((a, b) => a - b);
  const out: InventoryObject[] = [];
  for (const group of [all.filter((id) => id < 0), all.filter((id) => id >= 0)]) {
    for (let i = 0; i < group.length; i += IDS_PER_REQUEST) {
      const batch = group.slice(i, i + IDS_PER_REQUEST).map(String);
      out.push(...await ctx.inv.list(path, { ...filters, [field]: batch }, ctx.signal));
    }
  }
  return out;
}

export interface SyncStateIndex {
  /** vmid → sync-state record id */
  ids: Map<number, number>;
  /** vmid → inventory VM id (present or missing upstream) */
  vms: Map<number, number>;
}

/** This endpoint's VM sync-state records, as numbers (one paged walk per run). */
export function syncStates(ctx: StageContext): Promise<SyncStateIndex> {
  return memo(ctx, "sync-states", async () => {
    const base = await clusterBase(ctx);
    const ids = new Map<number, number>();
    const vms = new Map<number, number>();
    const firstId = new Map<number, number>();
    await eachPage(ctx, PATHS.syncState, { endpoint_id: String(base.pluginEndpoint) }, (page) => {
      for (const s of page) {
        const vmid = Number(s.vmid);
        // Later duplicates lose: the first record by id wins.
        if (firstId.has(vmid) && firstId.get(vmid)! < s.id) continue;
        firstId.set(vmid, s.id);
        ids.set(vmid, s.id);
        const vm = refId(s.virtual_machine);
        if (vm !== null) vms.set(vmid, vm);
        else vms.delete(vmid);
      }
    });
    return { ids, vms };
  });
}

/** Every VM of this endpoint's cluster, hand-made ones included, as id → name. */
export function clusterVmNames(ctx: StageContext): Promise<Map<number, string>> {
  return memo(ctx, "cluster-vms", async () => {
    const base = await clusterBase(ctx);
    const names = new Map<number, string>();
    await eachPage(ctx, PATHS.vms, { cluster_id: String(base.cluster) }, (page) => {
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

/** The inventory VMs of `ids` that are still in this endpoint's cluster, by id. */
export async function vmsById(
  ctx: StageContext,
  ids: Iterable<number>,
): Promise<Map<number, InventoryObject>> {
  const base = await clusterBase(ctx);
  const out = new Map<number, InventoryObject>();
  for (const vm of await listByIds(ctx, PATHS.vms, "id", ids)) {
    if (refId(vm.cluster) === base.cluster && !out.has(vm.id)) out.set(vm.id, vm);
  }
  return out;
}
