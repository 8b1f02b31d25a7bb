/**
 * Stage 3, virtual-machines: one inventory VM per guest (QEMU and LXC) with role, tags,
 * status, vCPUs, memory and disk, plus its VM sync-state sidecar record, which is the
 * identity (endpoint + vmid). A guest gone upstream is marked (status decommissioning, the
 * missing tag, sync-state missing), never deleted; a name already taken in the cluster gets
 * a deterministic " (2)" suffix, handed out in vmid order.
 */
import { forget, memoShared, type StageContext } from "../context.ts";
import { clusterBase, ensureBySlug, ensureTags, PATHS, syncTags } from "../base.ts";
import { nodeIndex } from "./devices.ts";
import {
  clusterVmNames,
  type Guest,
  guests,
  keptWalks,
  listByIds,
  madeThisRun,
  onlyFields,
  ownedVms,
  SLICE,
  STATE_FIELDS,
  stateRecord,
  type SyncStateIndex,
  syncStates,
  vmsById,
} from "../guests.ts";
import {
  configDigest,
  guestDisks,
  guestMemoryMb,
  guestTags,
  guestVcpus,
  propertyString,
  slugify,
} from "../proxmox.ts";
import { type Desired, reconcile, type ReconcileOptions, refId } from "../reconcile.ts";
import { createOnlyFields } from "../options.ts";
import { tenantAssignment, vmRole } from "../vm_policy.ts";
import { type InventoryObject, versionAtLeast } from "../ports.ts";
import { digestOf, LEDGER_MODELS, readLog, SliceLogReads } from "../ledger.ts";

const NAME_MAX = 64;

/** This stage's name in the ledger. */
const STAGE = "virtual-machines";

/**
 * The description of the tags the sync makes for guest tags: how a later run knows one again
 * when no guest carries it any more, so the last VM that had it loses it too (docs/sync.md,
 * "What happens when the hypervisor changes"). A tag of the same slug made by hand is used as
 * it is and never taken off by the sync.
 */
export const GUEST_TAG_DESCRIPTION = "A Proxmox VE guest tag, kept in step by the Bridgebox sync.";

/** Ids of the guest tags the sync made (by their description), whether a guest has them or not. */
function guestTagsMade(ctx: StageContext): Promise<number[]> {
  return memoShared(ctx, "guest-tags-made", async () =>
    // Filtered here, not by a `description` query: an inventory ignoring that filter would
    // make every tag look like the sync's.
    (await ctx.inv.list(PATHS.tags, {}, ctx.signal))
      .filter((t) => t.description === GUEST_TAG_DESCRIPTION).map((t) => t.id));
}

/** Ids of the VMs this run created (per endpoint). */
export function createdThisRun(ctx: StageContext): Set<number> {
  return madeThisRun(ctx, PATHS.vms);
}

/** VM status in the inventory for a guest status upstream. */
export function vmStatus(status: string | undefined): string {
  if (status === "running") return "active";
  if (status === "paused" || status === "suspended") return "paused";
  return "offline";
}

/** The name a guest asks for: its config's `name`/`hostname`, else `<type>-<vmid>`. */
export function baseName(g: Guest): string {
  return (String(g.config.name ?? g.config.hostname ?? g.name ?? "").trim() ||
    `${g.type}-${g.vmid}`)
    .slice(0, NAME_MAX);
}

/**
 * Unique names within one cluster (the inventory's constraint is case-insensitive). `taken`
 * holds the names of VMs that are not these guests (hand-made, or ours but gone upstream).
 * A guest whose VM already carries its name keeps it; the others take theirs in vmid order,
 * with " (2)", " (3)"... when the name is taken. So a fresh sync suffixes by vmid, and a
 * later clash renames the newcomer, never the VM that had the name first. `list` holds each
 * guest's `baseName`.
 */
export function uniqueNames(
  list: { vmid: number; base: string }[],
  taken: Iterable<string>,
  current: Map<number, string> = new Map(),
): Map<number, string> {
  const used = new Set([...taken].map((n) => n.toLowerCase()));
  const out = new Map<number, string>();
  const sorted = [...list].sort((a, b) => a.vmid - b.vmid);
  for (const { vmid, base } of sorted) {
    if (current.get(vmid) === base && !used.has(base.toLowerCase())) {
      used.add(base.toLowerCase());
      out.set(vmid, base);
    }
  }
  for (const { vmid, base } of sorted) {
    if (out.has(vmid)) continue;
    let name = base;
    for (let n = 2; used.has(name.toLowerCase()); n++) {
      const suffix = ` (${n})`;
      name = base.slice(0, NAME_MAX - suffix.length) + suffix;
    }
    used.add(name.toLowerCase());
    out.set(vmid, name);
  }
  return out;
}

/** A Proxmox template: `template: 1` in the cluster resources or the config. */
export function isTemplate(g: Guest): boolean {
  return Number(g.template) === 1 || Number(g.config.template) === 1;
}

/** The custom fields the sync fills (docs/sync.md); created by `/extras/custom-fields/reconcile`. */
const HYPERVISOR_FIELDS = [
  "hypervisor_vmid",
  "hypervisor_vm_type",
  "hypervisor_start_at_boot",
  "hypervisor_qemu_agent",
  "hypervisor_unprivileged",
  "hypervisor_last_synced",
];
const VM_MODEL = "virtualization.virtualmachine";

/**
 * The hypervisor custom fields this run fills: none unless the plugin setting
 * `custom_fields_enabled` is on, and only those that exist on VMs in the inventory (a field not
 * there would be refused).
 */
function customFieldsToFill(ctx: StageContext): Promise<Set<string>> {
  return memoShared(ctx, "custom-fields", async () => {
    const settings = await ctx.inv.read?.(PATHS.pluginSettings, ctx.signal) ?? null;
    if (settings?.custom_fields_enabled !== true) return new Set<string>();
    const defined = await ctx.inv.list(PATHS.customFields, { name: HYPERVISOR_FIELDS }, ctx.signal);
    return new Set(
      defined.filter((f) =>
        HYPERVISOR_FIELDS.includes(String(f.name)) &&
        Array.isArray(f.object_types) && f.object_types.map(String).includes(VM_MODEL)
      ).map((f) => String(f.name)),
    );
  });
}

/** A guest's custom field values (the ones `fill` names). */
function customFieldValues(g: Guest, fill: Set<string>): Record<string, unknown> {
  const agent = propertyString(g.config.agent);
  const values: Record<string, unknown> = {
    hypervisor_vmid: g.vmid,
    hypervisor_vm_type: g.type,
    hypervisor_start_at_boot: Number(g.config.onboot) === 1,
    hypervisor_qemu_agent: g.type === "qemu" && (agent[""] === "1" || agent.enabled === "1"),
    hypervisor_unprivileged: g.type === "lxc" && Number(g.config.unprivileged) === 1,
  };
  return Object.fromEntries(Object.entries(values).filter(([k]) => fill.has(k)));
}

/**
 * Guest by guest in slices of SLICE (guests.ts): what is kept for the whole stage is numbers and
 * names (each guest's name and tenant, vmid → VM id); the configs, the VM objects and the
 * sync-state records of one slice are read, reconciled, written and let go (docs/sync.md,
 * "Memory"). Slices go in vmid order, so a run writes what it wrote before, in the same order.
 */
export async function syncVirtualMachines(ctx: StageContext): Promise<void> {
  const base = await clusterBase(ctx);
  const tags = await syncTags(ctx);
  const list = await guests(ctx);
  const { devices } = await nodeIndex(ctx);
  // Taken before the walks read (docs/sync.md, "Re-runs: guests that did not change").
  const walks = await keptWalks(ctx);
  const failedBefore = ctx.result.failed;
  const states = await syncStates(ctx);
  const owned = await ownedVms(ctx);
  // The policy's roles (docs/sync.md, "Roles and tenants"); null: the one it names is unusable
  // (reported), and those guests keep the role they have.
  const roles = { qemu: await vmRole(ctx, "qemu"), lxc: await vmRole(ctx, "lxc") };

  // NetBox 4.6 has virtual machine types (qemu and lxc here) and 4.5 `start_on_boot`; an
  // inventory announcing an older API gets neither (docs/sync.md, NetBox versions).
  const version = ctx.inv.apiVersion?.() ?? null;
  const typed = versionAtLeast(version, 4, 6);
  const qemuType = typed
    ? await ensureBySlug(ctx, PATHS.vmTypes, "qemu-virtual-machine", {
      name: "QEMU virtual machine",
      description: "Proxmox VE QEMU/KVM guest",
    })
    : null;
  const lxcType = typed
    ? await ensureBySlug(ctx, PATHS.vmTypes, "lxc-container", {
      name: "LXC container",
      description: "Proxmox VE LXC container",
    })
    : null;
  const bootField = versionAtLeast(version, 4, 5);

  // One pass over the guests for what the whole stage needs: their tags and names.
  const tagSet = new Set<string>();
  const bases: { vmid: number; base: string }[] = [];
  for (const slice of list.slices()) {
    for (const g of slice) {
      for (const t of guestTags(g.config)) tagSet.add(t);
      bases.push({ vmid: g.vmid, base: baseName(g) });
    }
  }
  // Guest tags become inventory tags (by slug); they are managed on synced VMs.
  const tagNames = [...tagSet];
  const guestTagIds = await ensureTags(
    ctx,
    tagNames.map((name) => ({
      slug: slugify(name),
      name: name.slice(0, 100),
      description: GUEST_TAG_DESCRIPTION,
    })),
  );
  // Guest tags are managed (added and removed) only while the hypervisor owns tags; otherwise
  // they are written when a VM is created and the admin keeps them from then on. Managed: the
  // guest tags of this run and those the sync made earlier that no guest carries any more.
  const managed = ctx.options.overwrite.tags
    ? new Set([...tags.managed, ...guestTagIds.values(), ...await guestTagsMade(ctx)])
    : tags.managed;
  const createOnly = createOnlyFields(ctx.options, {
    name: "names",
    role: "roles",
    custom_fields: "custom_fields",
    tenant: "tenants",
  });
  const fill = await customFieldsToFill(ctx);
  // "Last synced" is when the sync last wrote the guest: sent with real changes only.
  const touch = fill.has("hypervisor_last_synced")
    ? { custom_fields: { hypervisor_last_synced: new Date(ctx.now()).toISOString() } }
    : undefined;

  // Names of VMs in this cluster that are not these guests (hand-made, or ours but gone).
  const present = new Set(list.vmids);
  const ownIds = new Set([...owned].filter(([vmid]) => present.has(vmid)).map(([, id]) => id));
  const inCluster = await clusterVmNames(ctx);
  let names: Map<number, string>;
  if (ctx.options.overwrite.names) {
    names = uniqueNames(
      bases,
      [...inCluster].filter(([id]) => !ownIds.has(id)).map(([, name]) => name),
      new Map([...owned].map(([vmid, id]) => [vmid, inCluster.get(id)!])),
    );
  } else {
    // The admin owns names: a synced VM keeps the name it has; only newcomers are named, around
    // every name the cluster holds.
    names = uniqueNames(bases.filter((b) => !owned.has(b.vmid)), inCluster.values());
    for (const b of bases) {
      if (owned.has(b.vmid)) names.set(b.vmid, inCluster.get(owned.get(b.vmid)!)!);
    }
  }
  bases.length = 0;

  const tenantOf = await tenantAssignment(ctx, list.slices(), names, base.name);

  const desiredOf = (g: Guest, existing: InventoryObject | undefined): Desired => {
    const disk = guestDisks(g.type, g.config).reduce((sum, d) => sum + d.sizeMb, 0);
    // NetBox keeps `disk` equal to the sum of a VM's virtual disks and refuses any other value
    // (docs/netbox-rules.md): once the VM has disks, the vm-disks stage's writes set it.
    const hasDisks = Number(existing?.virtual_disk_count ?? 0) > 0;
    return {
      key: String(g.vmid),
      label: `virtual machine ${names.get(g.vmid)} (vmid ${g.vmid})`,
      body: {
        name: names.get(g.vmid),
        status: vmStatus(g.status),
        cluster: base.cluster,
        device: devices.get(g.node) ?? null,
        ...(roles[g.type === "lxc" ? "lxc" : "qemu"] === null
          ? {}
          : { role: roles[g.type === "lxc" ? "lxc" : "qemu"] }),
        ...(tenantOf(g.vmid) === undefined ? {} : { tenant: tenantOf(g.vmid) }),
        ...(typed ? { virtual_machine_type: g.type === "lxc" ? lxcType!.id : qemuType!.id } : {}),
        ...(bootField ? { start_on_boot: Number(g.config.onboot) === 1 ? "on" : "off" } : {}),
        vcpus: guestVcpus(g.type, g.config, g.maxcpu),
        memory: guestMemoryMb(g.config, g.maxmem),
        ...(hasDisks
          ? {}
          : { disk: disk || (g.maxdisk ? Math.round(g.maxdisk / 1024 ** 2) : null) }),
        ...(fill.size ? { custom_fields: customFieldValues(g, fill) } : {}),
        tags: [
          tags.synced,
          ...(isTemplate(g) ? [tags.template] : []),
          ...guestTags(g.config).map((t) => guestTagIds.get(slugify(t))!),
        ],
      },
    };
  };
  ctx.progress(0, list.count, `writing ${list.count} virtual machines`);
  // A VM taking a name another VM of the cluster still holds (it is being renamed in this run)
  // is written after that rename, once every slice is written: the inventory checks names one
  // write at a time.
  const holders = new Map<string, number>();
  for (const [id, name] of inCluster) holders.set(name.toLowerCase(), id);
  const waits = (g: Guest) => {
    const holder = holders.get(String(names.get(g.vmid)).toLowerCase());
    return holder !== undefined && holder !== owned.get(g.vmid);
  };
  // VMs created by this run: a later stage completing them (the primary IP, which needs the
  // address on the VM's interface first) does not count them again as updated.
  const made = createdThisRun(ctx);
  // The sidecar: identity and last-seen facts, one per guest ever synced.
  const now = new Date(ctx.now()).toISOString();
  const stateBody = (g: Guest, vm: number | null, digest: string) => ({
    endpoint: base.pluginEndpoint,
    vmid: g.vmid,
    vm_type: g.type,
    virtual_machine: vm,
    node_name: g.node,
    name: names.get(g.vmid),
    status: "present",
    config_digest: digest,
  });
  const writeStates = async (
    slice: Guest[],
    written: Map<string, InventoryObject>,
    read: Promise<Map<string, InventoryObject>> = statesOf(ctx, states, slice.map((g) => g.vmid)),
    digests: Map<number, string> = new Map(),
  ) => {
    const stateDesired: Desired[] = [];
    for (const g of slice) {
      stateDesired.push({
        key: String(g.vmid),
        label: `VM sync-state ${g.type}/${g.vmid}`,
        body: stateBody(
          g,
          written.get(String(g.vmid))?.id ?? null,
          digests.get(g.vmid) ?? await configDigest(g.config),
        ),
      });
    }
    const saved = await reconcile(ctx, {
      path: PATHS.syncState,
      existing: await read,
      desired: stateDesired,
      touch: { last_seen: now },
      answer: STATE_FIELDS,
    });
    // Later stages of this run see what was just written.
    for (const [key, state] of saved.objects) {
      const vmid = Number(key);
      states.ids.set(vmid, state.id);
      const vm = written.get(key);
      if (vm) {
        states.vms.set(vmid, vm.id);
        owned.set(vmid, vm.id);
      }
    }
  };
  /** A guest's VM and sync-state, as far as they are known. */
  const guestObjects = (vmid: number) => {
    const out: [string, number][] = [];
    const vm = owned.get(vmid);
    const state = states.ids.get(vmid);
    if (vm !== undefined) out.push([LEDGER_MODELS.vm, vm]);
    if (state !== undefined) out.push([LEDGER_MODELS.state, state]);
    return out;
  };
  /** Writes `slice` and the VMs of `gone` (vmids), read first; the VMs written, by vmid. */
  const writeVms = async (
    slice: Guest[],
    orphan?: ReconcileOptions["orphan"],
    gone: number[] = [],
  ) => {
    const vmids = [...slice.map((g) => g.vmid), ...gone];
    const objects = await vmsById(
      ctx,
      vmids.map((vmid) => owned.get(vmid)).filter((id) => id !== undefined) as number[],
      // Whole VMs but their interface count (a count per VM, never compared), their primary
      // IPs (the ip-addresses stage's, each an address read) and config context (computed):
      // an edit report names every other field an admin changed meanwhile (docs/sync.md,
      // "Edits made while a run writes"). The disk count stays: it decides whether `disk` is
      // written.
      { omit: VM_STAGE_OMITS },
    );
    const existing = new Map<string, InventoryObject>();
    for (const vmid of vmids) {
      const vm = objects.get(owned.get(vmid) ?? NaN);
      if (vm) existing.set(String(vmid), vm);
    }
    const vms = await reconcile(ctx, {
      path: PATHS.vms,
      existing,
      desired: slice.map((g) => desiredOf(g, existing.get(String(g.vmid)))),
      managedTags: managed,
      createOnly,
      touch,
      orphan,
      answer: VM_ANSWER_FIELDS,
    });
    for (const [key, vm] of vms.objects) {
      if (!existing.has(key)) made.add(vm.id);
      // The cluster's names as this stage leaves them: what the next run takes for its walk.
      if (refId(vm.cluster) === base.cluster && typeof vm.name === "string") {
        inCluster.set(vm.id, vm.name);
      } else inCluster.delete(vm.id);
    }
    return vms.objects;
  };
  // The ledger (docs/sync.md, "Re-runs: guests that did not change"): a guest whose VM and
  // sync-state would be written from the same as when the ledger recorded them, and which nobody
  // else touched since, is not read again. What shapes the writes besides each guest's objects
  // goes into every guest's digest.
  const ledger = await readLog(ctx);
  const shape = {
    managed: [...managed].sort((a, b) => a - b),
    createOnly: [...createOnly].sort(),
    touch: touch !== undefined,
  };
  /** What a guest's VM and sync-state are written from, with the VM it has now. */
  const digestFor = (g: Guest, config: string) =>
    digestOf([
      shape,
      desiredOf(g, undefined).body,
      stateBody(g, owned.get(g.vmid) ?? null, config),
    ]);
  const deferred: Guest[] = [];
  const closing = new SliceLogReads(ctx);
  for (const slice of list.slices()) {
    const ready = slice.filter((g) => !waits(g));
    for (const g of slice) {
      if (!waits(g)) continue;
      deferred.push(g);
      ledger?.forgetGuest(g.vmid);
    }
    if (!ready.length) continue;
    const mark = ledger?.beginSlice() ?? 0;
    try {
      const configDigests = new Map<number, string>();
      let todo = ready;
      if (ledger) {
        todo = [];
        for (const g of ready) {
          const config = await configDigest(g.config);
          configDigests.set(g.vmid, config);
          const vm = owned.get(g.vmid);
          const digest = digestFor(g, config);
          if (
            vm !== undefined && states.ids.has(g.vmid) && ledger.unchanged(STAGE, g.vmid, digest)
          ) {
            // Its VM and sync-state, as a compare would have counted them.
            ctx.result.unchanged += 2;
            states.read.delete(g.vmid);
          } else todo.push(g);
        }
        for (const g of todo) ledger.track(g.vmid, guestObjects(g.vmid));
      }
      if (!todo.length) continue;
      const failed = ctx.result.failed;
      // The slice's sync-states are read while its VMs are read and written: neither read
      // depends on the other's writes, and one request at a time left the app idle between them.
      const stateRead = statesOf(ctx, states, todo.map((g) => g.vmid));
      stateRead.catch(() => {}); // awaited in writeStates; a failed VM write must not leave it unhandled
      await writeStates(todo, await writeVms(todo), stateRead, configDigests);
      if (!ledger) continue;
      for (const g of todo) ledger.track(g.vmid, guestObjects(g.vmid));
      const refused = ctx.result.failed !== failed; // compared again next run
      // Entries made since the slice's read (someone's edit meanwhile) forget their guest; read
      // while the next slice is written.
      await closing.close(ledger, () => {
        if (refused) return;
        for (const g of todo) {
          if (owned.has(g.vmid) && states.ids.has(g.vmid)) {
            // With the VM it has now (one made by this slice included).
            ledger.record(STAGE, g.vmid, digestFor(g, configDigests.get(g.vmid)!), mark);
          }
        }
      });
    } finally {
      ledger?.endSlice();
    }
  }
  await closing.settle();
  // Then the guests that waited for a rename, and the VMs whose guest is gone upstream (marked,
  // or deleted with delete_orphans), a slice at a time.
  const gone = [...owned].filter(([vmid]) => !present.has(vmid)).map(([vmid]) => vmid);
  for (const vmid of gone) ledger?.forgetGuest(vmid);
  const orphan: ReconcileOptions["orphan"] = ctx.options.deleteOrphans
    ? "delete"
    : () => ({ status: "decommissioning", tags: [tags.synced, tags.missing] });
  for (let i = 0; i === 0 || i < gone.length; i += SLICE) {
    const slice = i === 0 ? deferred : [];
    const written = await writeVms(slice, orphan, gone.slice(i, i + SLICE));
    if (slice.length) await writeStates(slice, written);
  }
  // Sync-states of guests gone upstream are marked missing.
  const goneStates = [...states.ids.keys()].filter((vmid) => !present.has(vmid));
  for (let i = 0; i < goneStates.length; i += SLICE) {
    const vmids = goneStates.slice(i, i + SLICE);
    await reconcile(ctx, {
      path: PATHS.syncState,
      existing: await statesOf(ctx, states, vmids),
      desired: [],
      orphan: () => ({ status: "missing" }),
    });
  }
  for (const vmid of [...owned.keys()]) if (!present.has(vmid)) owned.delete(vmid);
  // What the walk read of records no slice took (none but duplicates) is let go with the stage.
  states.read.clear();
  // The walks as this stage leaves them, for the next run (ledger.ts `keepWalks`): not after a
  // refused write (what it holds is not known) nor after deletes (their VMs leave the names).
  if (
    ctx.ledger && ctx.result.failed === failedBefore && !(ctx.options.deleteOrphans && gone.length)
  ) {
    await readLog(ctx); // the stage's last writes, read as its own before the walks are kept
    ctx.ledger.keepWalks(
      { stateIds: states.ids, stateVms: states.vms, clusterNames: inCluster },
      walks.mark,
    );
  }
  forget(ctx, "cluster-vms");
  ctx.progress(list.count, list.count, `${list.count} virtual machines synced`);
}

/**
 * What the stage reads of the VMs its writes answer: their ids (the sync-states and later stages
 * anchor on them) and names; the edit re-check reads whole VMs itself (reconcile.ts).
 */
const VM_ANSWER_FIELDS = ["id", "name", "cluster", "last_updated"];

/** What the stage leaves out of the VMs it reads (NetBox 4.5.2's `omit`; ignored before). */
export const VM_STAGE_OMITS = "interface_count,primary_ip,primary_ip4,primary_ip6,config_context";

/**
 * The sync-state records of `vmids` (those this endpoint has), by vmid: as the run's walk read
 * them (each taken once, then let go), else read by id (one the walk did not see).
 */
async function statesOf(
  ctx: StageContext,
  states: SyncStateIndex,
  vmids: number[],
): Promise<Map<string, InventoryObject>> {
  const out = new Map<string, InventoryObject>();
  const unread: number[] = [];
  for (const vmid of vmids) {
    const id = states.ids.get(vmid);
    if (id === undefined) continue;
    const values = states.read.get(vmid);
    states.read.delete(vmid);
    if (values && values[0] === id) out.set(String(vmid), stateRecord(values));
    else unread.push(id);
  }
  if (!unread.length) return out;
  const byId = new Map(
    (await listByIds(ctx, PATHS.syncState, "id", unread, onlyFields(STATE_FIELDS)))
      .map((s) => [s.id, s]),
  );
  for (const vmid of vmids) {
    const state = byId.get(states.ids.get(vmid) ?? NaN);
    if (state) out.set(String(vmid), state);
  }
  return out;
}
