/**
 * NetBox's own validation rules that a sync hits, with NetBox's texts (4.6): the unique IP space
 * (ENFORCE_GLOBAL_UNIQUE and VRF `enforce_unique`), a VM's placement on a site, cluster or
 * device, its `disk` kept equal to the sum of its virtual disks, and VM name uniqueness per
 * cluster or per device. docs/netbox-rules.md maps each rule to the test that guards it.
 */
import { canonicalHost, type Cidr, formatHost, networkOf, parseCidr } from "../ip.ts";
import type { EngineApi, FieldErrors, HookContext, StoredObject, UniqueDef } from "../types.ts";

const IP_MODEL = "ipam.ipaddress";
const PREFIX_MODEL = "ipam.prefix";
const VRF_MODEL = "ipam.vrf";
const VM_MODEL = "virtualization.virtualmachine";
const DISK_MODEL = "virtualization.virtualdisk";

/** Roles exempt from unique IP enforcement (NetBox's IPADDRESS_ROLES_NONUNIQUE). */
export const NONUNIQUE_IP_ROLES: ReadonlySet<string> = new Set([
  "anycast",
  "vip",
  "vrrp",
  "hsrp",
  "glbp",
  "carp",
]);

// ------------------------------------------------------------------ unique IP space

/** How NetBox names a VRF in messages: "name (rd)" or "name". */
function vrfLabel(vrf: StoredObject | null, id: unknown): string {
  if (!vrf) return String(id);
  return vrf.rd ? `${vrf.name} (${vrf.rd})` : String(vrf.name);
}

/** "global table" or "VRF <name>", as NetBox's duplicate messages say. */
async function tableLabel(vrfId: unknown, engine: EngineApi): Promise<string> {
  if (typeof vrfId !== "number") return "global table";
  return `VRF ${vrfLabel(await engine.get(VRF_MODEL, vrfId), vrfId)}`;
}

/** Is the draft's table (global or its VRF) one where duplicates are refused? */
async function uniqueSpace(draft: StoredObject, ctx: HookContext): Promise<boolean> {
  if (typeof draft.vrf !== "number") return ctx.settings.enforceGlobalUnique;
  const vrf = await ctx.read(VRF_MODEL, draft.vrf);
  return vrf?.enforce_unique !== false;
}

/** The key a record claims in the store's unique index: its table and value. */
function spaceKey(vrf: unknown, value: string): string {
  return `${typeof vrf === "number" ? vrf : "global"} ${value}`;
}

function sameTable(a: unknown, b: unknown): boolean {
  return (typeof a === "number" ? a : null) === (typeof b === "number" ? b : null);
}

/**
 * The store-level backstop of the unique IP space: a record claims `unique_space` (its table
 * and host or prefix) while uniqueness applies to it, so two concurrent writers of the same
 * address cannot both commit. The validate rules below give the precise answer first.
 */
export function uniqueSpaceConstraint(
  kind: "IP address" | "prefix",
  field: "address" | "prefix",
): UniqueDef {
  return {
    fields: ["unique_space"],
    errorField: field,
    message: async (holder, engine) =>
      `Duplicate ${kind} found in ${await tableLabel(holder?.vrf, engine)}: ${
        holder?.[field] ?? "?"
      }`,
  };
}

/** The mask-length and network/broadcast rules of an IP address (NetBox's IPAddress.clean). */
function ipShapeRule(draft: StoredObject, c: Cidr): FieldErrors | null {
  if (c.length === 0) return { address: ["Cannot create IP address with /0 mask."] };
  if (typeof draft.assigned_object_id !== "number" || c.length === null) return null;
  const host = formatHost(c.family, c.value);
  const network = networkOf(c);
  const last = c.family === 4 ? 32 : 128;
  const hostBits = BigInt(last - c.length);
  const pointToPoint = c.length >= last - 1;
  if (c.value === network && !pointToPoint) {
    return { __all__: [`${host} is a network ID, which may not be assigned to an interface.`] };
  }
  const broadcast = network | ((1n << hostBits) - 1n);
  if (c.family === 4 && c.value === broadcast && !pointToPoint) {
    return {
      __all__: [`${host} is a broadcast address, which may not be assigned to an interface.`],
    };
  }
  return null;
}

/**
 * NetBox's IP address rules: no /0, no network ID or broadcast on an interface, and no
 * duplicate host (masks ignored) in a unique table unless every copy has an exempt role.
 * Sets the draft's `unique_space` claim.
 */
export async function ipAddressRule(
  draft: StoredObject,
  ctx: HookContext,
): Promise<FieldErrors | null> {
  const c = typeof draft.address === "string" ? parseCidr(draft.address) : null;
  const host = typeof draft.address === "string" ? canonicalHost(draft.address) : null;
  draft.unique_space = null;
  if (!c || host === null) return null;
  const shape = ipShapeRule(draft, c);
  if (shape) return shape;
  if (!(await uniqueSpace(draft, ctx))) return null;
  const exempt = (r: StoredObject) => typeof r.role === "string" && NONUNIQUE_IP_ROLES.has(r.role);
  // Through the request: a bulk write's hosts were read together (the IP model's
  // batchIndexReads).
  const same = ctx.byIndex
    ? await ctx.byIndex(IP_MODEL, "host", host)
    : await ctx.engine.find(IP_MODEL, { host: [host] });
  const duplicates = same
    .filter((r) => r.id !== draft.id && sameTable(r.vrf, draft.vrf))
    .sort((a, b) => a.id - b.id);
  if (duplicates.length > 0 && (!exempt(draft) || duplicates.some((d) => !exempt(d)))) {
    const table = await tableLabel(draft.vrf, ctx.engine);
    return {
      address: [`Duplicate IP address found in ${table}: ${duplicates[0].address}`],
    };
  }
  if (!exempt(draft)) draft.unique_space = spaceKey(draft.vrf, host);
  return null;
}

/** NetBox's prefix rules: no /0, no duplicate prefix in a unique table. Sets `unique_space`. */
export async function prefixRule(
  draft: StoredObject,
  ctx: HookContext,
): Promise<FieldErrors | null> {
  const prefix = typeof draft.prefix === "string" ? draft.prefix : null;
  draft.unique_space = null;
  if (prefix === null) return null;
  if (parseCidr(prefix)?.length === 0) return { prefix: ["Cannot create prefix with /0 mask."] };
  if (!(await uniqueSpace(draft, ctx))) return null;
  const duplicates = (await ctx.engine.find(PREFIX_MODEL, { prefix: [prefix] }))
    .filter((r) => r.id !== draft.id && sameTable(r.vrf, draft.vrf))
    .sort((a, b) => a.id - b.id);
  if (duplicates.length > 0) {
    const table = await tableLabel(draft.vrf, ctx.engine);
    return { prefix: [`Duplicate prefix found in ${table}: ${duplicates[0].prefix}`] };
  }
  draft.unique_space = spaceKey(draft.vrf, prefix);
  return null;
}

/**
 * After a VRF's `enforce_unique` changes, its addresses and prefixes claim (or release) their
 * place in the unique index, so the store-level backstop follows the VRF's setting.
 */
export async function rekeyVrfSpace(vrf: StoredObject, ctx: HookContext): Promise<void> {
  if (ctx.existing && ctx.existing.enforce_unique === vrf.enforce_unique) return;
  if (!ctx.existing) return;
  for (const [model, field] of [[IP_MODEL, "host"], [PREFIX_MODEL, "prefix"]] as const) {
    for (const r of await ctx.engine.find(model, { vrf_id: [String(vrf.id)] })) {
      const exempt = model === IP_MODEL && typeof r.role === "string" &&
        NONUNIQUE_IP_ROLES.has(r.role);
      const value = typeof r[field] === "string" ? r[field] as string : null;
      const claim = vrf.enforce_unique !== false && !exempt && value !== null
        ? spaceKey(vrf.id, value)
        : null;
      if (r.unique_space !== claim) {
        await ctx.engine.patchStored(model, r.id, { unique_space: claim });
      }
    }
  }
}

// ------------------------------------------------------------------ virtual machines

/** The VM name constraints of NetBox 4.6 (case-insensitive; per cluster, or per device). */
export const VM_NAME_UNIQUE: UniqueDef[] = [
  {
    fields: ["cluster", "tenant", "name"],
    name: "vm-name:cluster+tenant",
    ci: true,
    errorField: "__all__",
    message: "Virtual machine name must be unique per cluster and tenant.",
  },
  {
    fields: ["cluster", "name"],
    name: "vm-name:cluster",
    ci: true,
    when: (r) => r.tenant === null || r.tenant === undefined,
    errorField: "__all__",
    message: "Virtual machine name must be unique per cluster.",
  },
  {
    fields: ["device", "tenant", "name"],
    name: "vm-name:device+tenant",
    ci: true,
    when: (r) => r.cluster === null || r.cluster === undefined,
    errorField: "__all__",
    message: "Virtual machine name must be unique per device and tenant.",
  },
  {
    fields: ["device", "name"],
    name: "vm-name:device",
    ci: true,
    when: (r) =>
      (r.cluster === null || r.cluster === undefined) &&
      (r.tenant === null || r.tenant === undefined),
    errorField: "__all__",
    message: "Virtual machine name must be unique per device.",
  },
];

/** The site a cluster is scoped to, if any. */
async function siteOfCluster(cluster: unknown, ctx: HookContext): Promise<StoredObject | null> {
  if (typeof cluster !== "number") return null;
  const c = await ctx.read("virtualization.cluster", cluster);
  if (!c || c.scope_type !== "dcim.site" || typeof c.scope_id !== "number") return null;
  return await ctx.read("dcim.site", c.scope_id);
}

/**
 * NetBox 4.6's placement rules of a VM: a site, cluster or device; the cluster's site, the
 * device's site and the device's cluster agree with the VM's.
 */
/**
 * NetBox's `VirtualMachine.role` takes only device roles with "VM role" on (its
 * `limit_choices_to`, enforced by the model's full_clean on every API write). Checked when the
 * role is written, so a role switched off later never blocks an unrelated edit.
 */
export async function vmRoleRule(
  draft: StoredObject,
  ctx: HookContext,
): Promise<FieldErrors | null> {
  const id = draft.role;
  if (typeof id !== "number" || !("role" in ctx.input)) return null;
  if (ctx.existing && ctx.existing.role === id) return null;
  const role = await ctx.read("dcim.devicerole", id);
  if (!role || role.vm_role !== false) return null;
  return { role: [`device role instance with id ${id} is not a valid choice.`] };
}

export async function vmPlacementRule(
  draft: StoredObject,
  ctx: HookContext,
): Promise<FieldErrors | null> {
  const cluster = typeof draft.cluster === "number"
    ? await ctx.read("virtualization.cluster", draft.cluster)
    : null;
  const device = typeof draft.device === "number"
    ? await ctx.read("dcim.device", draft.device)
    : null;
  const site = typeof draft.site === "number" ? await ctx.read("dcim.site", draft.site) : null;
  if (draft.site == null && draft.cluster == null && draft.device == null) {
    return { __all__: ["A virtual machine must be assigned to a site, cluster, or device."] };
  }
  if (cluster && site) {
    const clusterSite = await siteOfCluster(cluster.id, ctx);
    if (clusterSite && clusterSite.id !== site.id) {
      return {
        cluster: [
          `The selected cluster (${cluster.name}) is not assigned to this site (${site.name}).`,
        ],
      };
    }
  }
  if (device && site && typeof device.site === "number" && device.site !== site.id) {
    return {
      site: [`The selected device (${device.name}) is not assigned to this site (${site.name}).`],
    };
  }
  if (device && !cluster && typeof device.cluster === "number") {
    const own = await ctx.read("virtualization.cluster", device.cluster);
    return {
      cluster: [
        `Must specify the assigned device's cluster (${own?.name}) when assigning host device ${device.name}.`,
      ],
    };
  }
  if (device && cluster && device.cluster !== cluster.id) {
    return {
      device: [
        `The selected device (${device.name}) is not assigned to this cluster (${cluster.name}).`,
      ],
    };
  }
  return null;
}

/** NetBox: a VM without a site takes its cluster's site, else its device's. */
export async function vmSiteDefault(draft: StoredObject, ctx: HookContext): Promise<void> {
  if (draft.site !== null && draft.site !== undefined) return;
  const site = await siteOfCluster(draft.cluster, ctx);
  if (site) {
    draft.site = site.id;
    return;
  }
  if (typeof draft.device === "number") {
    const device = await ctx.read("dcim.device", draft.device);
    if (typeof device?.site === "number") draft.site = device.site;
  }
}

async function diskTotal(engine: EngineApi, vm: number): Promise<number> {
  let total = 0;
  for (const d of await engine.find(DISK_MODEL, { virtual_machine_id: [String(vm)] })) {
    total += typeof d.size === "number" ? d.size : 0;
  }
  return total;
}

/**
 * NetBox's aggregate disk rule, on update only: with virtual disks, a null `disk` becomes their
 * sum and any other value is refused. Checked when `disk` is written: otherwise the stored
 * value is the one the disks themselves keep (syncVmDisks), as NetBox's signal does.
 */
export async function vmDiskRule(
  draft: StoredObject,
  ctx: HookContext,
): Promise<FieldErrors | null> {
  // Only when `disk` is written: otherwise it holds what the disk signal last set (the sum, or
  // null without disks), so the look-up would find nothing to change.
  if (ctx.op !== "update" || !("disk" in ctx.input)) return null;
  const total = await diskTotal(ctx.engine, draft.id);
  if (total === 0) return null;
  if (draft.disk === null || draft.disk === undefined) {
    draft.disk = total;
    return null;
  }
  if (draft.disk !== total) {
    return {
      disk: [
        `The specified disk size (${draft.disk}) must match the aggregate size of assigned virtual disks (${total}).`,
      ],
    };
  }
  return null;
}

/**
 * NetBox's signal after virtual disks are saved or deleted: each VM concerned gets `disk` = the
 * sum of its disks (null once none remain), as a one-field write with no change record (NetBox's
 * queryset update). `saved` are the disks the caller just committed: the VMs' disks are found
 * in the index and only those not among them are read (a 500-disk create read its own 500 disks
 * back before, 50 reads). The changed VMs are written together; unchanged ones not at all.
 */
export async function syncVmDisks(
  engine: EngineApi,
  vmIds: Iterable<unknown>,
  saved: readonly StoredObject[] = [],
): Promise<void> {
  const ids = [...new Set(vmIds)].filter((v): v is number => typeof v === "number");
  if (ids.length === 0) return;
  const known = new Map(saved.map((d) => [d.id, d]));
  const held = await engine.idsReferring(DISK_MODEL, "virtual_machine", ids);
  const unread = [...new Set(held.flat())].filter((id) => !known.has(id));
  for (const d of unread.length ? await engine.getMany(DISK_MODEL, unread) : []) known.set(d.id, d);
  const totals = new Map<number, number | null>();
  ids.forEach((vm, i) => {
    let total: number | null = null;
    for (const id of held[i]) {
      const d = known.get(id);
      // A disk moved or deleted since the index was read counts where its record says.
      if (!d || d.virtual_machine !== vm) continue;
      total = (total ?? 0) + (typeof d.size === "number" ? d.size : 0);
    }
    totals.set(vm, total);
  });
  const changes = new Map<number, Record<string, unknown>>();
  for (const vm of await engine.getMany(VM_MODEL, ids)) {
    const total = totals.get(vm.id) ?? null;
    if (vm.disk !== total) changes.set(vm.id, { disk: total });
  }
  if (changes.size > 0) await engine.patchStoredMany(VM_MODEL, changes);
}
