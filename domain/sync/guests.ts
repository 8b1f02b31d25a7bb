/**
 * The guests of one endpoint as the later stages need them: the hypervisor's list with each
 * config (read with bounded concurrency, once per run), and the inventory VM each one maps to
 * through the VM sync-state sidecar (endpoint + vmid), never through its name.
 */
import { hvGet, mapLimit, memo, type StageContext } from "./context.ts";
import { clusterBase, PATHS } from "./base.ts";
import type { ClusterResource, GuestConfig } from "./proxmox.ts";
import { indexBy, refId } from "./reconcile.ts";
import type { InventoryObject } from "./ports.ts";

export interface Guest extends ClusterResource {
  config: GuestConfig;
}

/** Every guest (templates included) with its config, sorted by vmid. */
export function guests(ctx: StageContext): Promise<Guest[]> {
  return memo(ctx, "guests", async () => {
    const resources = (await hvGet<ClusterResource[]>(ctx, "/cluster/resources", { type: "vm" }) ??
      [])
      .filter((r) => (r.type === "qemu" || r.type === "lxc") && Number.isInteger(r.vmid))
      .sort((a, b) => a.vmid - b.vmid);
    let done = 0;
    return await mapLimit(resources, ctx.concurrency, ctx.signal, async (r) => {
      const config = await hvGet<GuestConfig>(ctx, `/nodes/${r.node}/${r.type}/${r.vmid}/config`);
      done++;
      if (done % 250 === 0 || done === resources.length) {
        ctx.progress(done, resources.length, `read ${done}/${resources.length} guest configs`);
      }
      return { ...r, config: config ?? {} };
    });
  });
}

export interface SyncStateIndex {
  /** vmid → sync-state record */
  states: Map<string, InventoryObject>;
  /** vmid → inventory VM id (present or missing upstream) */
  vms: Map<number, number>;
}

export function syncStates(ctx: StageContext): Promise<SyncStateIndex> {
  return memo(ctx, "sync-states", async () => {
    const base = await clusterBase(ctx);
    const list = await ctx.inv.list(
      PATHS.syncState,
      { endpoint_id: String(base.pluginEndpoint) },
      ctx.signal,
    );
    const states = indexBy(list, (s) => String(s.vmid));
    const vms = new Map<number, number>();
    for (const [vmid, s] of states) {
      const vm = refId(s.virtual_machine);
      if (vm !== null) vms.set(Number(vmid), vm);
    }
    return { states, vms };
  });
}

/** Every VM of this endpoint's cluster, hand-made ones included (one paged read per run). */
export function clusterVms(ctx: StageContext): Promise<InventoryObject[]> {
  return memo(ctx, "cluster-vms", async () => {
    const base = await clusterBase(ctx);
    return await ctx.inv.list(PATHS.vms, { cluster_id: String(base.cluster) }, ctx.signal);
  });
}

/** The inventory VM objects this endpoint owns, by vmid. */
export function ownedVms(ctx: StageContext): Promise<Map<number, InventoryObject>> {
  return memo(ctx, "owned-vms", async () => {
    const { vms } = await syncStates(ctx);
    const byId = new Map((await clusterVms(ctx)).map((v) => [v.id, v]));
    const out = new Map<number, InventoryObject>();
    for (const [vmid, id] of vms) {
      const vm = byId.get(id);
      if (vm) out.set(vmid, vm);
    }
    return out;
  });
}

/** vmid → inventory VM id for guests present upstream and synced (later stages' anchor). */
export async function vmAnchors(ctx: StageContext): Promise<Map<number, number>> {
  const owned = await ownedVms(ctx);
  return new Map([...owned].map(([vmid, vm]) => [vmid, vm.id]));
}
