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
import { clusterVms, type Guest, guests, ownedVms, syncStates } from "../guests.ts";
import {
  configDigest,
  guestDisks,
  guestMemoryMb,
  guestTags,
  guestVcpus,
  propertyString,
  slugify,
} from "../proxmox.ts";
import { type Desired, reconcile } from "../reconcile.ts";
import { createOnlyFields } from "../options.ts";
import { tenantAssignment, vmRole } from "../vm_policy.ts";
import { type InventoryObject, versionAtLeast } from "../ports.ts";

const NAME_MAX = 64;

/** Ids of the VMs this run created (per endpoint). */
export function createdThisRun(ctx: StageContext): Set<number> {
  let made = ctx.cache.get("vms-created") as Set<number> | undefined;
  if (!made) ctx.cache.set("vms-created", made = new Set());
  return made;
}

/** VM status in the inventory for a guest status upstream. */
export function vmStatus(status: string | undefined): string {
  if (status === "running") return "active";
  if (status === "paused" || status === "suspended") return "paused";
  return "offline";
}

/**
 * Unique names within one cluster (the inventory's constraint is case-insensitive). `taken`
 * holds the names of VMs that are not these guests (hand-made, or ours but gone upstream).
 * A guest whose VM already carries its name keeps it; the others take theirs in vmid order,
 * with " (2)", " (3)"... when the name is taken. So a fresh sync suffixes by vmid, and a
 * later clash renames the newcomer, never the VM that had the name first.
 */
export function uniqueNames(
  list: Guest[],
  taken: Iterable<string>,
  current: Map<number, string> = new Map(),
): Map<number, string> {
  const used = new Set([...taken].map((n) => n.toLowerCase()));
  const out = new Map<number, string>();
  const baseOf = (g: Guest) =>
    (String(g.config.name ?? g.config.hostname ?? g.name ?? "").trim() || `${g.type}-${g.vmid}`)
      .slice(0, NAME_MAX);
  const sorted = [...list].sort((a, b) => a.vmid - b.vmid);
  for (const g of sorted) {
    const base = baseOf(g);
    if (current.get(g.vmid) === base && !used.has(base.toLowerCase())) {
      used.add(base.toLowerCase());
      out.set(g.vmid, base);
    }
  }
  for (const g of sorted) {
    if (out.has(g.vmid)) continue;
    const base = baseOf(g);
    let name = base;
    for (let n = 2; used.has(name.toLowerCase()); n++) {
      const suffix = ` (${n})`;
      name = base.slice(0, NAME_MAX - suffix.length) + suffix;
    }
    used.add(name.toLowerCase());
    out.set(g.vmid, name);
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

export async function syncVirtualMachines(ctx: StageContext): Promise<void> {
  const base = await clusterBase(ctx);
  const tags = await syncTags(ctx);
  const list = await guests(ctx);
  const { devices } = await nodeIndex(ctx);
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

  // Guest tags become inventory tags (by slug); they are managed on synced VMs.
  const tagNames = [...new Set(list.flatMap((g) => guestTags(g.config)))];
  const guestTagIds = await ensureTags(
    ctx,
    tagNames.map((name) => ({ slug: slugify(name), name: name.slice(0, 100) })),
  );
  // Guest tags are managed (added and removed) only while the hypervisor owns tags; otherwise
  // they are written when a VM is created and the admin keeps them from then on.
  const managed = ctx.options.overwrite.tags
    ? new Set([...tags.managed, ...guestTagIds.values()])
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
  const present = new Set(list.map((g) => g.vmid));
  const ownIds = new Set([...owned].filter(([vmid]) => present.has(vmid)).map(([, v]) => v.id));
  const inCluster = await clusterVms(ctx);
  let names: Map<number, string>;
  if (ctx.options.overwrite.names) {
    names = uniqueNames(
      list,
      inCluster.filter((v) => !ownIds.has(v.id)).map((v) => String(v.name)),
      new Map([...owned].map(([vmid, vm]) => [vmid, String(vm.name)])),
    );
  } else {
    // The admin owns names: a synced VM keeps the name it has; only newcomers are named, around
    // every name the cluster holds.
    const kept = list.filter((g) => owned.has(g.vmid) && present.has(g.vmid));
    names = uniqueNames(
      list.filter((g) => !owned.has(g.vmid)),
      inCluster.map((v) => String(v.name)),
    );
    for (const g of kept) names.set(g.vmid, String(owned.get(g.vmid)!.name));
  }

  const tenantOf = await tenantAssignment(ctx, list, names, base.name);

  const existing = new Map<string, InventoryObject>();
  for (const [vmid, vm] of owned) existing.set(String(vmid), vm);
  const desired: Desired[] = list.map((g) => {
    const disk = guestDisks(g.type, g.config).reduce((sum, d) => sum + d.sizeMb, 0);
    // NetBox keeps `disk` equal to the sum of a VM's virtual disks and refuses any other value
    // (docs/netbox-rules.md): once the VM has disks, the vm-disks stage's writes set it.
    const hasDisks = Number(existing.get(String(g.vmid))?.virtual_disk_count ?? 0) > 0;
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
  });
  ctx.progress(0, list.length, `writing ${list.length} virtual machines`);
  // A VM taking a name another VM of the cluster still holds (it is being renamed in this run)
  // is written after that rename: the inventory checks names one write at a time.
  const holders = new Map(inCluster.map((v) => [String(v.name).toLowerCase(), v.id]));
  const waits = (d: Desired) => {
    const holder = holders.get(String(d.body.name).toLowerCase());
    return holder !== undefined && holder !== existing.get(d.key)?.id;
  };
  const firstPass = desired.filter((d) => !waits(d));
  const secondPass = desired.filter(waits);
  const vms = await reconcile(ctx, {
    path: PATHS.vms,
    existing: new Map(
      firstPass.filter((d) => existing.has(d.key)).map((d) => [d.key, existing.get(d.key)!]),
    ),
    desired: firstPass,
    managedTags: managed,
    createOnly,
    touch,
  });
  const wanted = new Set(firstPass.map((d) => d.key));
  const later = await reconcile(ctx, {
    path: PATHS.vms,
    existing: new Map([...existing].filter(([key]) => !wanted.has(key))),
    desired: secondPass,
    managedTags: managed,
    createOnly,
    touch,
    orphan: ctx.options.deleteOrphans
      ? "delete"
      : () => ({ status: "decommissioning", tags: [tags.synced, tags.missing] }),
  });
  for (const [key, vm] of later.objects) vms.objects.set(key, vm);
  // VMs created by this run: a later stage completing them (the primary IP, which needs the
  // address on the VM's interface first) does not count them again as updated.
  const made = createdThisRun(ctx);
  for (const [key, vm] of vms.objects) if (!existing.has(key)) made.add(vm.id);

  // The sidecar: identity and last-seen facts, one per guest ever synced.
  const now = new Date(ctx.now()).toISOString();
  const stateDesired: Desired[] = [];
  for (const g of list) {
    stateDesired.push({
      key: String(g.vmid),
      label: `VM sync-state ${g.type}/${g.vmid}`,
      body: {
        endpoint: base.pluginEndpoint,
        vmid: g.vmid,
        vm_type: g.type,
        virtual_machine: vms.objects.get(String(g.vmid))?.id ?? null,
        node_name: g.node,
        name: names.get(g.vmid),
        status: "present",
        config_digest: await configDigest(g.config),
      },
    });
  }
  const saved = await reconcile(ctx, {
    path: PATHS.syncState,
    existing: states.states,
    desired: stateDesired,
    touch: { last_seen: now },
    orphan: () => ({ status: "missing" }),
  });
  // Later stages of this run see what was just written.
  for (const [key, state] of saved.objects) {
    states.states.set(key, state);
    const vm = vms.objects.get(key);
    if (vm) {
      states.vms.set(Number(key), vm.id);
      owned.set(Number(key), vm);
    }
  }
  for (const vmid of [...owned.keys()]) if (!present.has(vmid)) owned.delete(vmid);
  forget(ctx, "cluster-vms");
  ctx.progress(list.length, list.length, `${list.length} virtual machines synced`);
}
