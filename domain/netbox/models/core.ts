/**
 * The NetBox core models the sync stages write (NetBox 4.2 paths and field names):
 * tenancy, dcim, virtualization, ipam, extras, core jobs and users tokens.
 */
import { userPatternProblem } from "../user_patterns.ts";
import { checkCustomValue, CUSTOM_FIELD_TYPES } from "../custom_fields.ts";
import { QueryError } from "../engine.ts";
import {
  canonicalCidr,
  canonicalHost,
  type Cidr,
  formatHost,
  networkOf,
  parseCidr,
  within,
} from "../ip.ts";
import { configContextField } from "./config_context.ts";
import { applyTypeDefaults, VIRTUAL_MACHINE_TYPE, VM_TYPE_MODEL } from "./vm_types.ts";
import {
  ipAddressRule,
  prefixRule,
  syncVmDisks,
  uniqueSpaceConstraint,
  VM_NAME_UNIQUE,
  vmDiskRule,
  vmPlacementRule,
  vmRoleRule,
  vmSiteDefault,
} from "./rules.ts";
import {
  AIRFLOW,
  always,
  alwaysEmpty,
  alwaysNull,
  contentType,
  countOf,
  optionalChoice,
  WEIGHT_UNITS,
} from "./shapes.ts";
import type {
  CustomFilter,
  EngineApi,
  FieldDef,
  FieldErrors,
  HookContext,
  ModelDef,
  StoredObject,
} from "../types.ts";

// ------------------------------------------------------------------ field helpers

const SLUG_RE = /^[-a-zA-Z0-9_]+$/;
const SLUG_MESSAGE = "Enter a valid “slug” consisting of letters, numbers, underscores or hyphens.";
const COLOR_RE = /^[0-9a-f]{6}$/i;

export const str = (maxLength = 100, extra: Partial<FieldDef> = {}): FieldDef => ({
  type: "string",
  maxLength,
  ...extra,
});
export const name = (maxLength = 100, extra: Partial<FieldDef> = {}): FieldDef => ({
  type: "string",
  required: true,
  maxLength,
  index: true,
  ...extra,
});
export const slug = (): FieldDef => ({
  type: "string",
  required: true,
  maxLength: 100,
  pattern: SLUG_RE,
  patternMessage: SLUG_MESSAGE,
});
export const description = (): FieldDef => str(200);
export const comments = (): FieldDef => ({ type: "string" });
export const fk = (model: string, extra: Partial<FieldDef> = {}): FieldDef => ({
  type: "fk",
  model,
  nullable: true,
  onDelete: "set_null",
  ...extra,
});
export const reqFk = (model: string, onDelete: FieldDef["onDelete"] = "protect"): FieldDef => ({
  type: "fk",
  model,
  required: true,
  onDelete,
});
export const choice = (
  choices: ReadonlyArray<readonly [string, string]>,
  extra: Partial<FieldDef> = {},
): FieldDef => ({ type: "choice", choices, index: true, ...extra });
export const bool = (fallback: boolean): FieldDef => ({
  type: "bool",
  default: fallback,
  index: true,
});
export const color = (): FieldDef => ({
  type: "string",
  maxLength: 6,
  default: "9e9e9e",
  pattern: COLOR_RE,
  patternMessage: "Enter a valid hexadecimal RGB color code.",
});

export function withNameSlug(): Record<string, FieldDef> {
  return { name: name(100), slug: slug() };
}

export const NAME_SLUG_UNIQUE = [
  { fields: ["name"], ci: true },
  { fields: ["slug"], ci: true },
];

// ------------------------------------------------------------------ choices

export const SITE_STATUS = [
  ["planned", "Planned"],
  ["staging", "Staging"],
  ["active", "Active"],
  ["decommissioning", "Decommissioning"],
  ["retired", "Retired"],
] as const;
const DEVICE_STATUS = [
  ["offline", "Offline"],
  ["active", "Active"],
  ["planned", "Planned"],
  ["staged", "Staged"],
  ["failed", "Failed"],
  ["inventory", "Inventory"],
  ["decommissioning", "Decommissioning"],
] as const;
const VM_STATUS = [
  ["offline", "Offline"],
  ["active", "Active"],
  ["planned", "Planned"],
  ["staged", "Staged"],
  ["failed", "Failed"],
  ["decommissioning", "Decommissioning"],
  ["paused", "Paused"],
] as const;
/** NetBox 4.5's VirtualMachineStartOnBootChoices (Proxmox's `onboot`). */
const VM_START_ON_BOOT = [
  ["on", "On"],
  ["off", "Off"],
  ["laststate", "Last State"],
] as const;
const CLUSTER_STATUS = [
  ["planned", "Planned"],
  ["staging", "Staging"],
  ["active", "Active"],
  ["decommissioning", "Decommissioning"],
  ["offline", "Offline"],
] as const;
const INTERFACE_TYPES = [
  ["virtual", "Virtual"],
  ["bridge", "Bridge"],
  ["lag", "Link Aggregation Group (LAG)"],
  ["100base-tx", "100BASE-TX (10/100ME)"],
  ["1000base-t", "1000BASE-T (1GE)"],
  ["2.5gbase-t", "2.5GBASE-T (2.5GE)"],
  ["5gbase-t", "5GBASE-T (5GE)"],
  ["10gbase-t", "10GBASE-T (10GE)"],
  ["10gbase-x-sfpp", "SFP+ (10GE)"],
  ["25gbase-x-sfp28", "SFP28 (25GE)"],
  ["40gbase-x-qsfpp", "QSFP+ (40GE)"],
  ["100gbase-x-qsfp28", "QSFP28 (100GE)"],
  ["ieee802.11ac", "IEEE 802.11ac"],
  ["other", "Other"],
] as const;
const INTERFACE_MODES = [
  ["access", "Access"],
  ["tagged", "Tagged"],
  ["tagged-all", "Tagged (All)"],
  ["q-in-q", "Q-in-Q (802.1ad)"],
] as const;
const IP_STATUS = [
  ["active", "Active"],
  ["reserved", "Reserved"],
  ["deprecated", "Deprecated"],
  ["dhcp", "DHCP"],
  ["slaac", "SLAAC"],
] as const;
const IP_ROLES = [
  ["loopback", "Loopback"],
  ["secondary", "Secondary"],
  ["anycast", "Anycast"],
  ["vip", "VIP"],
  ["vrrp", "VRRP"],
  ["hsrp", "HSRP"],
  ["glbp", "GLBP"],
  ["carp", "CARP"],
] as const;
const VLAN_STATUS = [["active", "Active"], ["reserved", "Reserved"], [
  "deprecated",
  "Deprecated",
]] as const;
const PREFIX_STATUS = [
  ["container", "Container"],
  ["active", "Active"],
  ["reserved", "Reserved"],
  ["deprecated", "Deprecated"],
] as const;
const JOURNAL_KINDS = [["info", "Info"], ["success", "Success"], ["warning", "Warning"], [
  "danger",
  "Danger",
]] as const;
export const JOB_STATUS = [
  ["pending", "Pending"],
  ["scheduled", "Scheduled"],
  ["running", "Running"],
  ["completed", "Completed"],
  ["errored", "Errored"],
  ["failed", "Failed"],
] as const;
const INTERFACE_OWNERS = [["dcim.interface", "DCIM > Interface"], [
  "virtualization.vminterface",
  "Virtualization > Interface",
]] as const;
export const SCOPE_TYPES = [
  ["dcim.region", "DCIM > Region"],
  ["dcim.sitegroup", "DCIM > Site Group"],
  ["dcim.site", "DCIM > Site"],
  ["dcim.location", "DCIM > Location"],
] as const;

// ------------------------------------------------------------------ address checks

const MAC_RE = /^([0-9a-f]{2}[:-]){5}[0-9a-f]{2}$/i;

function ipv4Ok(text: string): boolean {
  const parts = text.split(".");
  return parts.length === 4 && parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255);
}

function ipv6Ok(text: string): boolean {
  if (!/^[0-9a-f:.]+$/i.test(text) || !text.includes(":")) return false;
  const doubles = text.split("::").length - 1;
  if (doubles > 1) return false;
  const groups = text.split(":").filter((g) => g !== "");
  const last = groups[groups.length - 1] ?? "";
  const v4Tail = last.includes(".");
  if (v4Tail && !ipv4Ok(last)) return false;
  const count = groups.length + (v4Tail ? 1 : 0);
  if (groups.some((g, i) => !(v4Tail && i === groups.length - 1) && !/^[0-9a-f]{1,4}$/i.test(g))) {
    return false;
  }
  return doubles === 1 ? count < 8 : count === 8;
}

/** "10.0.0.1/24" → family; null when not an address with a valid mask. */
export function cidrFamily(value: string): 4 | 6 | null {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(value);
  if (!m) return null;
  const bits = Number(m[2]);
  if (ipv4Ok(m[1])) return bits <= 32 ? 4 : null;
  if (ipv6Ok(m[1])) return bits <= 128 ? 6 : null;
  return null;
}

/** `?has_primary_ip=true|false` on devices and VMs. */
const hasPrimaryIp: CustomFilter = (values) => {
  const want = values[values.length - 1]?.trim().toLowerCase();
  if (!["true", "false", "1", "0", "yes", "no"].includes(want ?? "")) {
    throw new QueryError({ has_primary_ip: ["Select a valid choice."] });
  }
  const yes = want === "true" || want === "1" || want === "yes";
  return Promise.resolve({
    predicate: (r: StoredObject) =>
      yes === (typeof r.primary_ip4 === "number" || typeof r.primary_ip6 === "number"),
  });
};

/** NetBox's ConfigContextModel rule: local context data is a JSON object. */
export function contextDataRule(draft: StoredObject): FieldErrors | null {
  const v = draft.local_context_data;
  if (v === null || v === undefined || (typeof v === "object" && !Array.isArray(v))) return null;
  return {
    local_context_data: ['JSON data must be in object form. Example: {"foo": 123}'],
  };
}

/** `?cluster_type_id=` / `?cluster_type=<slug>` on VMs, through their cluster. */
function clusterTypeFilter(param: "type_id" | "type"): CustomFilter {
  return async (values, engine) => {
    const clusters = await engine.find("virtualization.cluster", { [param]: values });
    const ids = new Set<number>();
    if (clusters.length > 0) {
      const vms = await engine.find("virtualization.virtualmachine", {
        cluster_id: clusters.map((c) => String(c.id)),
      });
      for (const vm of vms) ids.add(vm.id);
    }
    return { ids };
  };
}

const MAC_NORMALIZE = (text: string) =>
  MAC_RE.test(text) ? text.toUpperCase().replaceAll("-", ":") : text;
const CIDR_NORMALIZE = (text: string) => canonicalCidr(text) ?? text;

/** Query values that must parse as addresses/prefixes (else an invalid query, as NetBox). */
function cidrValues(values: string[], param: string): Cidr[] {
  const out: Cidr[] = [];
  for (const v of values.flatMap((x) => x.split(",")).map((x) => x.trim()).filter(Boolean)) {
    const c = parseCidr(v);
    if (!c) throw new QueryError({ [param]: [`Invalid IP address or prefix: ${v}`] });
    out.push(c);
  }
  return out;
}

const familyFilter: CustomFilter = (values) => {
  const wanted = new Set(values.flatMap((v) => v.split(",")).map((v) => v.trim()));
  for (const v of wanted) {
    if (v !== "4" && v !== "6") {
      throw new QueryError({
        family: [`Select a valid choice. ${v} is not one of the available choices.`],
      });
    }
  }
  return Promise.resolve({
    predicate: (r: StoredObject) => {
      const text = String(r.address ?? r.prefix ?? "");
      const c = parseCidr(text);
      return c !== null && wanted.has(String(c.family));
    },
  });
};

/** `?address=` on IPs: with a length an exact match, without one any length (host match). */
const addressFilter: CustomFilter = async (values, engine) => {
  const ids = new Set<number>();
  for (const v of values.flatMap((x) => x.split(",")).map((x) => x.trim()).filter(Boolean)) {
    const host = canonicalHost(v);
    if (host === null) {
      throw new QueryError({ address: [`Invalid IP address: ${v}`] });
    }
    const exact = v.includes("/") ? canonicalCidr(v) : null;
    for (const r of await engine.find("ipam.ipaddress", { host: [host] })) {
      if (exact === null || r.address === exact) ids.add(r.id);
    }
  }
  return { ids };
};

/** `?parent=<prefix>` on IPs: addresses whose host lies in the prefix. */
const ipParentFilter: CustomFilter = (values) => {
  const parents = cidrValues(values, "parent");
  return Promise.resolve({
    predicate: (r: StoredObject) => {
      const c = parseCidr(String(r.address ?? ""));
      if (!c) return false;
      const host = { ...c, length: null };
      return parents.some((p) => within(host, p, true));
    },
  });
};

/** Prefix containment filters: within, within_include, contains. */
function prefixFilter(kind: "within" | "within_include" | "contains"): CustomFilter {
  return (values) => {
    const given = cidrValues(values, kind);
    return Promise.resolve({
      predicate: (r: StoredObject) => {
        const c = parseCidr(String(r.prefix ?? ""));
        if (!c) return false;
        return given.some((g) =>
          kind === "contains" ? within(g, c, true) : within(c, g, kind === "within_include")
        );
      },
    });
  };
}

// ------------------------------------------------------------------ primary IP / MAC rules

/** The interface model and its parent field for each owner of primary IPs. */
const PRIMARY_OWNERS = {
  "virtualization.virtualmachine": {
    iface: "virtualization.vminterface",
    parent: "virtual_machine",
    label: "VM",
  },
  "dcim.device": { iface: "dcim.interface", parent: "device", label: "device" },
} as const;

/** NetBox's `primary_ip`: IPv6 first, then IPv4 (PREFER_IPV4 false, the default). */
const primaryIp = (): FieldDef => ({
  type: "fk",
  model: "ipam.ipaddress",
  nullable: true,
  readOnly: true,
  compute: (r) => r.primary_ip6 ?? r.primary_ip4 ?? null,
  description: "Read-only: primary_ip6, else primary_ip4.",
});

/**
 * primary_ip4 / primary_ip6 (as NetBox's clean()): the right family, and assigned to one of
 * this object's interfaces. Checked when the field is written, so a stale value never blocks
 * an unrelated edit.
 */
function primaryIpRules(owner: keyof typeof PRIMARY_OWNERS) {
  const { iface, parent, label } = PRIMARY_OWNERS[owner];
  return async (draft: StoredObject, ctx: HookContext): Promise<FieldErrors | null> => {
    for (const fam of [4, 6] as const) {
      const field = `primary_ip${fam}`;
      const id = draft[field];
      if (typeof id !== "number" || !(field in ctx.input)) continue;
      if (ctx.existing && ctx.existing[field] === id) continue;
      // ctx.read: the bulk write read every FK target of the batch at once (prefetchRefs).
      const ip = await ctx.read("ipam.ipaddress", id);
      if (!ip) continue;
      const address = String(ip.address);
      const version = cidrFamily(address);
      if (version !== fam) {
        return {
          [field]: [
            `Must be an IPv${fam} address. (${address} is an IPv${version} address.)`,
          ],
        };
      }
      const ownsIp = async (candidate: StoredObject | null) => {
        if (
          candidate?.assigned_object_type !== iface ||
          typeof candidate.assigned_object_id !== "number"
        ) return false;
        return (await ctx.read(iface, candidate.assigned_object_id))?.[parent] === draft.id;
      };
      // NetBox also accepts the NAT outside address of one of the object's own IPs.
      const inside = typeof ip.nat_inside === "number"
        ? await ctx.read("ipam.ipaddress", ip.nat_inside)
        : null;
      if (!(await ownsIp(ip)) && !(await ownsIp(inside))) {
        return {
          [field]: [`The specified IP address (${address}) is not assigned to this ${label}.`],
        };
      }
    }
    return null;
  };
}

/** The device or VM owning an interface ("dcim.interface", 3) → ["dcim.device", 7]. */
async function parentOf(
  ctx: HookContext,
  type: unknown,
  id: unknown,
): Promise<[string, number] | null> {
  if (typeof type !== "string" || typeof id !== "number") return null;
  for (const [owner, o] of Object.entries(PRIMARY_OWNERS)) {
    if (o.iface !== type) continue;
    const iface = await ctx.read(type, id);
    const parent = iface?.[o.parent];
    return typeof parent === "number" ? [owner, parent] : null;
  }
  return null;
}

/** An IP that is its parent's primary IP cannot move to another parent (NetBox's rule). */
async function primaryIpMoveRule(
  draft: StoredObject,
  ctx: HookContext,
): Promise<FieldErrors | null> {
  const before = ctx.existing;
  if (!before) return null;
  if (
    before.assigned_object_type === draft.assigned_object_type &&
    before.assigned_object_id === draft.assigned_object_id
  ) return null;
  const original = await parentOf(ctx, before.assigned_object_type, before.assigned_object_id);
  if (!original) return null;
  const fam = typeof before.address === "string" ? cidrFamily(before.address) : null;
  const owner = await ctx.engine.get(original[0], original[1]);
  if (!owner || fam === null || owner[`primary_ip${fam}`] !== draft.id) return null;
  const next = await parentOf(ctx, draft.assigned_object_type, draft.assigned_object_id);
  if (next && next[0] === original[0] && next[1] === original[1]) return null;
  return { non_field_errors: ["Cannot reassign primary IP address for the parent device/VM"] };
}

const IFACE_MODELS = ["dcim.interface", "virtualization.vminterface"] as const;

/** An interface's `mac_address` is its primary MAC's value. */
async function primaryMacValue(draft: StoredObject, ctx: HookContext): Promise<void> {
  const id = draft.primary_mac_address;
  const mac = typeof id === "number" ? await ctx.read("dcim.macaddress", id) : null;
  draft.mac_address = mac ? String(mac.mac_address) : null;
}

/** After a MAC changes (or is deleted: value null), the interfaces showing it follow. */
async function syncInterfaceMacs(engine: EngineApi, macId: number, value: unknown) {
  for (const model of IFACE_MODELS) {
    const shown = value === null
      ? await engine.find(model, {
        mac_address__isnull: ["false"],
        primary_mac_address_id: ["null"],
      })
      : await engine.find(model, { primary_mac_address_id: [String(macId)] });
    for (const iface of shown) {
      const next = value === null ? null : String(value);
      if (iface.mac_address === next) continue;
      if (value === null) {
        // Deleted MAC: the FK was already cleared; only interfaces that showed this MAC.
        const stale = await engine.get("dcim.macaddress", macId);
        if (stale) continue;
      }
      await engine.patchStored(
        model,
        iface.id,
        (cur) =>
          value === null && typeof cur.primary_mac_address === "number"
            ? {}
            : { mac_address: next },
      );
    }
  }
}

/** NetBox's interface rules: parent/bridge on the same owner (not itself), primary MAC its own. */
function interfaceRules(self: string, owner: string, ownerLabel: string) {
  const mac = primaryMacRule(self);
  return async (draft: StoredObject, ctx: HookContext): Promise<FieldErrors | null> => {
    for (
      const [field, selfMsg, what] of [
        ["parent", "An interface cannot be its own parent.", "parent"],
        ["bridge", "An interface cannot be bridged to itself.", "bridge"],
      ] as const
    ) {
      const id = draft[field];
      if (typeof id !== "number" || !(field in ctx.input)) continue;
      if (id === draft.id) return { [field]: [selfMsg] };
      const other = await ctx.read(self, id);
      if (other && other[owner] !== draft[owner]) {
        const ownerRec = await ctx.read(
          owner === "device" ? "dcim.device" : "virtualization.virtualmachine",
          other[owner] as number,
        );
        return {
          [field]: [
            `The selected ${what} interface (${other.name}) belongs to a different ${ownerLabel} (${
              ownerRec?.name ?? other[owner]
            }).`,
          ],
        };
      }
    }
    return await mac(draft, ctx);
  };
}

/**
 * An interface's primary MAC may not be assigned to another interface (NetBox 4.6: an unassigned
 * MAC is accepted, and on create it is assigned to the new interface; assignPrimaryMac).
 */
function primaryMacRule(self: string) {
  return async (draft: StoredObject, ctx: HookContext): Promise<FieldErrors | null> => {
    const id = draft.primary_mac_address;
    if (typeof id !== "number" || !("primary_mac_address" in ctx.input)) return null;
    if (ctx.existing && ctx.existing.primary_mac_address === id) return null;
    const mac = await ctx.read("dcim.macaddress", id);
    if (!mac || typeof mac.assigned_object_id !== "number") return null;
    if (mac.assigned_object_type === self && mac.assigned_object_id === draft.id) return null;
    const other = typeof mac.assigned_object_type === "string"
      ? await ctx.read(mac.assigned_object_type, mac.assigned_object_id)
      : null;
    return {
      primary_mac_address: [
        `MAC address ${mac.mac_address} is assigned to a different interface (${
          other?.name ?? mac.assigned_object_id
        }).`,
      ],
    };
  };
}

/** NetBox 4.6's signal: an interface created with an unassigned primary MAC takes it. */
function assignPrimaryMac(self: string) {
  return async (records: StoredObject[], engine: EngineApi, op: "create" | "update") => {
    if (op !== "create") return;
    for (const record of records) {
      if (typeof record.primary_mac_address !== "number") continue;
      const mac = await engine.get("dcim.macaddress", record.primary_mac_address);
      if (!mac || typeof mac.assigned_object_id === "number") continue;
      await engine.patchStored(
        "dcim.macaddress",
        mac.id,
        (cur) =>
          typeof cur.assigned_object_id === "number"
            ? {}
            : { assigned_object_type: self, assigned_object_id: record.id },
      );
    }
  };
}

const family = (field: string) => (r: StoredObject) => {
  const f = typeof r[field] === "string" ? cidrFamily(r[field] as string) : null;
  return f === null ? null : { value: f, label: `IPv${f}` };
};

// ------------------------------------------------------------------ filters

// ------------------------------------------------------------------ models

export const TENANT: ModelDef = {
  app: "tenancy",
  model: "tenant",
  verbose: "tenant",
  path: "tenancy/tenants/",
  fields: {
    ...withNameSlug(),
    // NetBox's Tenant.group is SET_NULL: a deleted group leaves its tenants without one.
    group: fk("tenancy.tenantgroup", { onDelete: "set_null" }),
    description: description(),
    comments: comments(),
    circuit_count: countOf("circuits.circuit", "tenant"),
    cluster_count: countOf("virtualization.cluster", "tenant"),
    device_count: countOf("dcim.device", "tenant"),
    ipaddress_count: countOf("ipam.ipaddress", "tenant"),
    prefix_count: countOf("ipam.prefix", "tenant"),
    rack_count: countOf("dcim.rack", "tenant"),
    site_count: countOf("dcim.site", "tenant"),
    virtualmachine_count: countOf("virtualization.virtualmachine", "tenant"),
    vlan_count: countOf("ipam.vlan", "tenant"),
    vrf_count: countOf("ipam.vrf", "tenant"),
  },
  brief: ["name", "slug", "description"],
  unique: NAME_SLUG_UNIQUE,
  search: ["name", "slug", "description", "comments"],
  ordering: ["name"],
};

export const SITE: ModelDef = {
  app: "dcim",
  model: "site",
  verbose: "site",
  path: "dcim/sites/",
  fields: {
    ...withNameSlug(),
    status: choice(SITE_STATUS, { default: "active" }),
    region: fk("dcim.region", { onDelete: "set_null" }),
    group: fk("dcim.sitegroup", { onDelete: "set_null" }),
    tenant: fk("tenancy.tenant", { onDelete: "protect" }),
    facility: str(50),
    time_zone: str(63, { nullable: true, default: null }),
    description: description(),
    physical_address: str(200),
    shipping_address: str(200),
    latitude: { type: "float", nullable: true, min: -90, max: 90 },
    longitude: { type: "float", nullable: true, min: -180, max: 180 },
    comments: comments(),
    asns: alwaysEmpty(),
    circuit_count: countOf("circuits.circuittermination", "site"),
    device_count: countOf("dcim.device", "site"),
    prefix_count: countOf("ipam.prefix", "scope"),
    rack_count: countOf("dcim.rack", "site"),
    virtualmachine_count: countOf("virtualization.virtualmachine", "site"),
    vlan_count: countOf("ipam.vlan", "site"),
  },
  brief: ["name", "slug", "description"],
  unique: NAME_SLUG_UNIQUE,
  search: ["name", "slug", "facility", "description", "physical_address", "comments"],
  ordering: ["name"],
};

/** NetBox's "organizational" models: a unique name and slug plus a description, nothing else. */
export function organizational(
  app: string,
  model: string,
  verbose: string,
  path: string,
): ModelDef {
  return {
    app,
    model,
    verbose,
    path,
    fields: { ...withNameSlug(), description: description() },
    brief: ["name", "slug", "description"],
    unique: NAME_SLUG_UNIQUE,
    search: ["name", "slug", "description"],
    ordering: ["name"],
  };
}

const MANUFACTURER_BASE = organizational(
  "dcim",
  "manufacturer",
  "manufacturer",
  "dcim/manufacturers/",
);
export const MANUFACTURER: ModelDef = {
  ...MANUFACTURER_BASE,
  fields: {
    ...MANUFACTURER_BASE.fields,
    devicetype_count: countOf("dcim.devicetype", "manufacturer"),
    inventoryitem_count: countOf("dcim.inventoryitem", "manufacturer"),
    platform_count: countOf("dcim.platform", "manufacturer"),
  },
};

export const DEVICE_TYPE: ModelDef = {
  app: "dcim",
  model: "devicetype",
  verbose: "device type",
  path: "dcim/device-types/",
  fields: {
    manufacturer: reqFk("dcim.manufacturer"),
    default_platform: fk("dcim.platform"),
    model: name(100),
    slug: slug(),
    part_number: str(50),
    u_height: { type: "float", default: 1, min: 0, max: 1000 },
    exclude_from_utilization: bool(false),
    is_full_depth: bool(true),
    subdevice_role: optionalChoice([["parent", "Parent"], ["child", "Child"]]),
    airflow: optionalChoice(AIRFLOW),
    weight: { type: "float", nullable: true, min: 0 },
    weight_unit: optionalChoice(WEIGHT_UNITS),
    front_image: alwaysNull(),
    rear_image: alwaysNull(),
    description: description(),
    comments: comments(),
    device_count: countOf("dcim.device", "device_type"),
    console_port_template_count: always(0),
    console_server_port_template_count: always(0),
    power_port_template_count: always(0),
    power_outlet_template_count: always(0),
    interface_template_count: always(0),
    front_port_template_count: always(0),
    rear_port_template_count: always(0),
    device_bay_template_count: always(0),
    module_bay_template_count: always(0),
    inventory_item_template_count: always(0),
  },
  brief: ["manufacturer", "model", "slug", "description"],
  display: (r) => String(r.model),
  unique: [
    {
      fields: ["manufacturer", "model"],
      ci: true,
      message: "Device type model must be unique per manufacturer.",
    },
    {
      fields: ["manufacturer", "slug"],
      ci: true,
      message: "Device type slug must be unique per manufacturer.",
    },
  ],
  naturalKey: "slug",
  search: ["model", "part_number", "description", "comments"],
  ordering: ["model"],
};

export const DEVICE_ROLE: ModelDef = {
  app: "dcim",
  model: "devicerole",
  verbose: "device role",
  path: "dcim/device-roles/",
  fields: {
    ...withNameSlug(),
    color: color(),
    vm_role: bool(true),
    config_template: alwaysNull(),
    description: description(),
    device_count: countOf("dcim.device", "role"),
    virtualmachine_count: countOf("virtualization.virtualmachine", "role"),
  },
  brief: ["name", "slug", "description"],
  unique: NAME_SLUG_UNIQUE,
  search: ["name", "slug", "description"],
  ordering: ["name"],
};

export const DEVICE: ModelDef = {
  app: "dcim",
  model: "device",
  verbose: "device",
  path: "dcim/devices/",
  sequentialBulkCreate: true,
  fields: {
    name: str(64, { nullable: true, default: null, index: true, fewPerValue: true }),
    device_type: reqFk("dcim.devicetype"),
    role: reqFk("dcim.devicerole"),
    tenant: fk("tenancy.tenant", { onDelete: "protect" }),
    platform: fk("dcim.platform"),
    serial: str(50, { index: true, fewPerValue: true }),
    asset_tag: str(50, { nullable: true, default: null }),
    site: reqFk("dcim.site"),
    // NetBox's Device.location and Device.rack are PROTECT: a location or rack holding devices
    // is not deleted (docs/netbox-rules.md "Deletes").
    location: fk("dcim.location", { onDelete: "protect" }),
    rack: fk("dcim.rack", { onDelete: "protect" }),
    position: { type: "float", nullable: true, min: 0.5, max: 1000 },
    face: optionalChoice([["front", "Front"], ["rear", "Rear"]]),
    latitude: { type: "float", nullable: true, min: -90, max: 90 },
    longitude: { type: "float", nullable: true, min: -180, max: 180 },
    parent_device: alwaysNull(),
    status: choice(DEVICE_STATUS, { default: "active" }),
    airflow: optionalChoice(AIRFLOW),
    primary_ip: primaryIp(),
    primary_ip4: fk("ipam.ipaddress", { fewPerValue: true }),
    primary_ip6: fk("ipam.ipaddress", { fewPerValue: true }),
    oob_ip: fk("ipam.ipaddress", { fewPerValue: true }),
    cluster: fk("virtualization.cluster"),
    virtual_chassis: fk("dcim.virtualchassis", { onDelete: "set_null" }),
    vc_position: { type: "int", nullable: true, min: 0, max: 255 },
    vc_priority: { type: "int", nullable: true, min: 0, max: 255 },
    description: description(),
    comments: comments(),
    config_template: alwaysNull(),
    config_context: configContextField(),
    local_context_data: { type: "json", nullable: true, default: null },
    console_port_count: always(0),
    console_server_port_count: always(0),
    power_port_count: always(0),
    power_outlet_count: always(0),
    interface_count: countOf("dcim.interface", "device"),
    front_port_count: always(0),
    rear_port_count: always(0),
    device_bay_count: always(0),
    module_bay_count: always(0),
    inventory_item_count: always(0),
  },
  brief: ["name", "description"],
  display: (r) => (r.name ? String(r.name) : `Unnamed device (${r.id})`),
  validate: (draft, ctx) => contextDataRule(draft) ?? primaryIpRules("dcim.device")(draft, ctx),
  filters: { has_primary_ip: hasPrimaryIp },
  unique: [
    // NetBox 4.6's two constraints over Lower(name): per site and tenant (no message of its
    // own: Django's default names the constraint), and per site among devices with no tenant.
    {
      fields: ["site", "tenant", "name"],
      name: "device-name:site+tenant",
      ci: true,
      errorField: "__all__",
      message: "Constraint \u201cdcim_device_unique_name_site_tenant\u201d is violated.",
    },
    {
      fields: ["site", "name"],
      name: "device-name:site",
      ci: true,
      when: (r) => r.tenant === null || r.tenant === undefined,
      errorField: "__all__",
      message: "Device name must be unique per site.",
    },
    { fields: ["asset_tag"], message: "device with this Asset tag already exists." },
  ],
  search: ["name", "serial", "asset_tag", "description", "comments"],
  ordering: ["name", "id"],
};

function interfaceFields(owner: "device" | "virtual_machine"): Record<string, FieldDef> {
  const self = owner === "device" ? "dcim.interface" : "virtualization.vminterface";
  const fields: Record<string, FieldDef> = owner === "device"
    ? { device: reqFk("dcim.device", "cascade") }
    : { virtual_machine: reqFk("virtualization.virtualmachine", "cascade") };
  Object.assign(fields, {
    name: name(64),
    ...(owner === "device"
      ? { label: str(64), type: choice(INTERFACE_TYPES, { required: true }) }
      : {}),
    enabled: bool(true),
    // NetBox's BaseInterface.parent is RESTRICT: an interface with child interfaces is not
    // deleted alone (with its device or VM, both go). docs/netbox-rules.md "Deletes".
    parent: fk(self, { onDelete: "protect" }),
    bridge: fk(self),
    mtu: { type: "int", nullable: true, min: 1, max: 65536 },
    primary_mac_address: fk("dcim.macaddress", { fewPerValue: true }),
    /** NetBox 4.2's read-only `mac_address`: the primary MAC's value (kept in step). */
    mac_address: {
      type: "string",
      readOnly: true,
      nullable: true,
      index: true,
      fewPerValue: true,
      normalize: MAC_NORMALIZE,
    },
    ...(owner === "device" ? { mgmt_only: bool(false) } : {}),
    description: description(),
    mode: choice(INTERFACE_MODES, { nullable: true, default: null, allowBlank: true }),
    untagged_vlan: fk("ipam.vlan"),
    tagged_vlans: { type: "m2m", model: "ipam.vlan" },
    /** The MACs of the interface as far as it shows them: its primary MAC. */
    mac_addresses: {
      type: "m2m",
      model: "dcim.macaddress",
      compute: (r: StoredObject) =>
        typeof r.primary_mac_address === "number" ? [r.primary_mac_address] : [],
    },
    qinq_svlan: alwaysNull(),
    vlan_translation_policy: alwaysNull(),
    vrf: fk("ipam.vrf"),
    l2vpn_termination: alwaysNull(),
    count_ipaddresses: countOf("ipam.ipaddress", "assigned_object"),
    count_fhrp_groups: always(0),
  });
  if (owner === "device") {
    Object.assign(fields, {
      vdcs: alwaysEmpty(),
      module: alwaysNull(),
      lag: fk(self),
      speed: { type: "int", nullable: true, min: 0 },
      duplex: optionalChoice([["half", "Half"], ["full", "Full"], ["auto", "Auto"]]),
      wwn: str(23, { nullable: true, default: null }),
      rf_role: alwaysNull(),
      rf_channel: alwaysNull(),
      poe_mode: alwaysNull(),
      poe_type: alwaysNull(),
      rf_channel_frequency: alwaysNull(),
      rf_channel_width: alwaysNull(),
      tx_power: alwaysNull(),
      mark_connected: bool(false),
      cable: alwaysNull(),
      cable_end: always(""),
      wireless_link: alwaysNull(),
      link_peers: alwaysEmpty(),
      link_peers_type: alwaysNull(),
      wireless_lans: alwaysEmpty(),
      connected_endpoints: alwaysNull(),
      connected_endpoints_type: alwaysNull(),
      connected_endpoints_reachable: alwaysNull(),
      _occupied: always(false),
    });
  }
  return fields;
}

export const INTERFACE: ModelDef = {
  app: "dcim",
  model: "interface",
  verbose: "interface",
  path: "dcim/interfaces/",
  fields: interfaceFields("device"),
  brief: ["device", "name", "description"],
  unique: [{ fields: ["device", "name"], message: "Interface name must be unique per device." }],
  validate: interfaceRules("dcim.interface", "device", "device"),
  beforeSave: primaryMacValue,
  afterSaveBatch: assignPrimaryMac("dcim.interface"),
  search: ["name", "label", "description"],
  ordering: ["device", "name"],
};

export const MAC_ADDRESS: ModelDef = {
  app: "dcim",
  model: "macaddress",
  verbose: "MAC address",
  path: "dcim/mac-addresses/",
  fields: {
    mac_address: {
      type: "string",
      required: true,
      maxLength: 17,
      fewPerValue: true,
      pattern: MAC_RE,
      patternMessage: "Enter a valid MAC address (e.g. 00:1A:2B:3C:4D:5E).",
      normalize: MAC_NORMALIZE,
      index: true,
    },
    assigned_object_type: contentType(INTERFACE_OWNERS, { nullable: true, default: null }),
    assigned_object_id: { type: "int", nullable: true, min: 1, index: true },
    assigned_object: {
      type: "gfk",
      models: ["dcim.interface", "virtualization.vminterface"],
      typeField: "assigned_object_type",
      idField: "assigned_object_id",
      onDelete: "cascade", // NetBox: GenericRelation on the interface deletes its MACs
    },
    description: description(),
    comments: comments(),
  },
  brief: ["mac_address", "description"],
  display: (r) => String(r.mac_address),
  beforeSave: (draft) => {
    if (typeof draft.mac_address === "string") {
      draft.mac_address = draft.mac_address.toUpperCase().replaceAll("-", ":");
    }
  },
  // Interfaces show their primary MAC's value: follow edits and deletes of the MAC. A new MAC is
  // no interface's primary MAC yet, and an edit that keeps the value changes nothing shown (a
  // bulk create of 500 MACs looked for their interfaces 1,000 times).
  afterSave: (record, ctx) =>
    ctx.op === "update" && ctx.existing?.mac_address !== record.mac_address
      ? syncInterfaceMacs(ctx.engine, record.id, record.mac_address)
      : undefined,
  afterDelete: (record, { engine }) => syncInterfaceMacs(engine, record.id, null),
  // NetBox's `primary_mac_address` filters name a MAC by its address (`to_field_name`).
  naturalKey: "mac_address",
  search: ["mac_address", "description"],
  ordering: ["mac_address", "id"],
};

const CLUSTER_TYPE_BASE = organizational(
  "virtualization",
  "clustertype",
  "cluster type",
  "virtualization/cluster-types/",
);
export const CLUSTER_TYPE: ModelDef = {
  ...CLUSTER_TYPE_BASE,
  fields: {
    ...CLUSTER_TYPE_BASE.fields,
    cluster_count: countOf("virtualization.cluster", "type"),
  },
};

export const CLUSTER: ModelDef = {
  app: "virtualization",
  model: "cluster",
  verbose: "cluster",
  path: "virtualization/clusters/",
  fields: {
    name: name(100),
    type: reqFk("virtualization.clustertype"),
    // NetBox's Cluster.group is PROTECT (docs/netbox-rules.md "Deletes").
    group: fk("virtualization.clustergroup", { onDelete: "protect" }),
    status: choice(CLUSTER_STATUS, { default: "active" }),
    tenant: fk("tenancy.tenant", { onDelete: "protect" }),
    scope_type: contentType(SCOPE_TYPES, { nullable: true, default: null }),
    scope_id: { type: "int", nullable: true, min: 1 },
    scope: {
      type: "gfk",
      models: SCOPE_TYPES.map(([t]) => t),
      typeField: "scope_type",
      idField: "scope_id",
      // NetBox caches the scope in keys that cascade: deleting the region, site group, site
      // or location takes the object along (docs/netbox-rules.md "Deletes").
      onDelete: "cascade",
    },
    description: description(),
    comments: comments(),
    device_count: countOf("dcim.device", "cluster"),
    virtualmachine_count: countOf("virtualization.virtualmachine", "cluster"),
  },
  brief: ["name", "description"],
  unique: [{
    fields: ["scope_type", "scope_id", "name"],
    ci: true,
    message: "Cluster name must be unique per site.",
  }],
  filters: {
    site_id: (values) =>
      Promise.resolve({
        predicate: (r) => r.scope_type === "dcim.site" && values.includes(String(r.scope_id)),
      }),
  },
  search: ["name", "description", "comments"],
  ordering: ["name"],
};

export const VIRTUAL_MACHINE: ModelDef = {
  app: "virtualization",
  model: "virtualmachine",
  verbose: "virtual machine",
  path: "virtualization/virtual-machines/",
  fields: {
    name: name(64, { fewPerValue: true }),
    virtual_machine_type: fk(VM_TYPE_MODEL, { onDelete: "protect" }),
    status: choice(VM_STATUS, { default: "active" }),
    start_on_boot: choice(VM_START_ON_BOOT, { default: "off" }),
    site: fk("dcim.site", { onDelete: "protect" }),
    cluster: fk("virtualization.cluster", { onDelete: "protect" }),
    device: fk("dcim.device", { onDelete: "protect" }),
    serial: str(50, { index: true, fewPerValue: true }),
    role: fk("dcim.devicerole", { onDelete: "protect" }),
    tenant: fk("tenancy.tenant", { onDelete: "protect" }),
    platform: fk("dcim.platform"),
    primary_ip: primaryIp(),
    primary_ip4: fk("ipam.ipaddress", { fewPerValue: true }),
    primary_ip6: fk("ipam.ipaddress", { fewPerValue: true }),
    vcpus: { type: "float", nullable: true, min: 0.01, max: 100000 },
    memory: { type: "int", nullable: true, min: 0 },
    disk: { type: "int", nullable: true, min: 0 },
    description: description(),
    comments: comments(),
    config_template: alwaysNull(),
    config_context: configContextField(),
    local_context_data: { type: "json", nullable: true, default: null },
    interface_count: countOf("virtualization.vminterface", "virtual_machine"),
    virtual_disk_count: countOf("virtualization.virtualdisk", "virtual_machine"),
  },
  brief: ["name", "description"],
  unique: VM_NAME_UNIQUE,
  validate: async (draft, ctx) =>
    (await vmPlacementRule(draft, ctx)) ?? (await vmRoleRule(draft, ctx)) ??
      contextDataRule(draft) ??
      (await vmDiskRule(draft, ctx)) ??
      primaryIpRules("virtualization.virtualmachine")(draft, ctx),
  // NetBox's save(): a VM without a site takes its cluster's (else its device's) site; a new VM
  // takes its type's defaults.
  beforeSave: async (draft, ctx) => {
    await vmSiteDefault(draft, ctx);
    if (ctx.op === "create") await applyTypeDefaults(draft, ctx.read);
  },
  filters: {
    has_primary_ip: hasPrimaryIp,
    cluster_type_id: clusterTypeFilter("type_id"),
    cluster_type: clusterTypeFilter("type"),
  },
  search: ["name", "description", "comments", "serial"],
  ordering: ["name", "id"],
};

export const VM_INTERFACE: ModelDef = {
  app: "virtualization",
  model: "vminterface",
  verbose: "interface",
  objectName: "VMInterface",
  path: "virtualization/interfaces/",
  fields: interfaceFields("virtual_machine"),
  brief: ["virtual_machine", "name", "description"],
  unique: [{
    fields: ["virtual_machine", "name"],
    message: "Interface name must be unique per virtual machine.",
  }],
  validate: interfaceRules("virtualization.vminterface", "virtual_machine", "virtual machine"),
  beforeSave: primaryMacValue,
  afterSaveBatch: assignPrimaryMac("virtualization.vminterface"),
  search: ["name", "description"],
  ordering: ["virtual_machine", "name"],
};

export const VIRTUAL_DISK: ModelDef = {
  app: "virtualization",
  model: "virtualdisk",
  verbose: "virtual disk",
  path: "virtualization/virtual-disks/",
  fields: {
    virtual_machine: reqFk("virtualization.virtualmachine", "cascade"),
    name: name(64),
    size: { type: "int", required: true, min: 0 },
    description: description(),
  },
  brief: ["virtual_machine", "name", "size", "description"],
  unique: [{
    fields: ["virtual_machine", "name"],
    message: "Virtual disk name must be unique per virtual machine.",
  }],
  // NetBox's signal: the VM's `disk` follows the sum of its virtual disks.
  afterSaveBatch: (disks, engine) =>
    syncVmDisks(engine, disks.flatMap((d) => [d.virtual_machine]), disks),
  afterDelete: (disk, { engine }) => syncVmDisks(engine, [disk.virtual_machine]),
  search: ["name", "description"],
  ordering: ["virtual_machine", "name"],
};

/** ?vminterface_id= / ?interface_id= / ?virtual_machine_id= / ?device_id= on IPs and MACs. */
function ownerFilters(): Record<string, CustomFilter> {
  const byOwner = (type: string): CustomFilter => (values) =>
    Promise.resolve({
      predicate: (r: StoredObject) =>
        r.assigned_object_type === type &&
        values.flatMap((v) => v.split(",")).includes(String(r.assigned_object_id)),
    });
  const byParent =
    (type: string, ifaceModel: string, parentField: string): CustomFilter =>
    async (values, engine) => {
      const ifaceIds = new Set<number>();
      for (const v of values.flatMap((x) => x.split(","))) {
        for (const i of await engine.find(ifaceModel, { [`${parentField}_id`]: [v] })) {
          ifaceIds.add(i.id);
        }
      }
      return {
        predicate: (r: StoredObject) =>
          r.assigned_object_type === type && ifaceIds.has(r.assigned_object_id as number),
      };
    };
  return {
    vminterface_id: byOwner("virtualization.vminterface"),
    interface_id: byOwner("dcim.interface"),
    virtual_machine_id: byParent(
      "virtualization.vminterface",
      "virtualization.vminterface",
      "virtual_machine",
    ),
    device_id: byParent("dcim.interface", "dcim.interface", "device"),
  };
}

export const IP_ADDRESS: ModelDef = {
  app: "ipam",
  model: "ipaddress",
  verbose: "IP address",
  path: "ipam/ip-addresses/",
  fields: {
    // No index of its own: `?address=` is answered through `host` (addressFilter), and no other
    // read looked the address up (index layout 6; docs/sync.md, "Writes: round 5").
    address: {
      type: "string",
      required: true,
      maxLength: 64,
      pattern: /^[0-9a-fA-F:.]+(\/\d{1,3})?$/,
      // NetBox 4.6.6's IPAddressField text (4.2 answered a 500 here).
      patternMessage: (value) => `Invalid IP address format: ${value}`,
      normalize: CIDR_NORMALIZE,
    },
    /** The canonical host part, indexed for `?address=<ip>` without a length. */
    host: { type: "string", hidden: true, index: true, filter: true, fewPerValue: true },
    /** Its claim in the unique IP space (rules.ts), null where duplicates are allowed. */
    unique_space: { type: "string", hidden: true, filter: false },
    family: { type: "json", compute: family("address") },
    vrf: fk("ipam.vrf", { onDelete: "protect" }),
    status: choice(IP_STATUS, { default: "active" }),
    role: choice(IP_ROLES, { nullable: true, default: null, allowBlank: true }),
    tenant: fk("tenancy.tenant", { onDelete: "protect" }),
    assigned_object_type: contentType(INTERFACE_OWNERS, { nullable: true, default: null }),
    assigned_object_id: { type: "int", nullable: true, min: 1, index: true },
    assigned_object: {
      type: "gfk",
      models: ["dcim.interface", "virtualization.vminterface"],
      typeField: "assigned_object_type",
      idField: "assigned_object_id",
      onDelete: "cascade", // NetBox: GenericRelation on the interface deletes its IPs
    },
    nat_inside: fk("ipam.ipaddress"),
    nat_outside: alwaysEmpty(),
    dns_name: str(255),
    description: description(),
    comments: comments(),
  },
  brief: ["family", "address", "description"],
  display: (r) => String(r.address),
  unique: [uniqueSpaceConstraint("IP address", "address")],
  validate: async (draft, ctx) =>
    typeof draft.address === "string" && cidrFamily(draft.address) === null
      ? { address: [`Invalid IP address format: ${draft.address}`] }
      : (await ipAddressRule(draft, ctx)) ?? primaryIpMoveRule(draft, ctx),
  // The duplicate check's look-up of each address's host, for a whole bulk write at once.
  batchIndexReads: [{
    model: "ipam.ipaddress",
    field: "host",
    value: (input) => typeof input.address === "string" ? canonicalHost(input.address) : null,
  }],
  beforeSave: (draft) => {
    draft.host = typeof draft.address === "string" ? canonicalHost(draft.address) : null;
  },
  filters: {
    ...ownerFilters(),
    address: addressFilter,
    parent: ipParentFilter,
    family: familyFilter,
  },
  // NetBox's `primary_ip4`/`primary_ip6` filters name an address by its text (`to_field_name`).
  naturalKey: "address",
  search: ["address", "dns_name", "description"],
  ordering: ["address", "id"],
};

export const VLAN: ModelDef = {
  app: "ipam",
  model: "vlan",
  verbose: "VLAN",
  path: "ipam/vlans/",
  fields: {
    site: fk("dcim.site", { onDelete: "protect" }),
    group: fk("ipam.vlangroup", { onDelete: "protect" }),
    vid: { type: "int", required: true, min: 1, max: 4094, index: true },
    name: name(64),
    tenant: fk("tenancy.tenant", { onDelete: "protect" }),
    status: choice(VLAN_STATUS, { default: "active" }),
    role: fk("ipam.role"),
    description: description(),
    qinq_role: optionalChoice([["svlan", "Service"], ["cvlan", "Customer"]]),
    qinq_svlan: alwaysNull(),
    comments: comments(),
    l2vpn_termination: alwaysNull(),
    prefix_count: countOf("ipam.prefix", "vlan"),
  },
  brief: ["vid", "name", "description"],
  search: ["name", "description", "comments"],
  ordering: ["vid", "id"],
};

export const PREFIX: ModelDef = {
  app: "ipam",
  model: "prefix",
  verbose: "prefix",
  path: "ipam/prefixes/",
  fields: {
    prefix: {
      type: "string",
      required: true,
      maxLength: 64,
      index: true,
      pattern: /^[0-9a-fA-F:.]+(\/\d{1,3})?$/,
      patternMessage: (value) => `Invalid IP prefix format: ${value}`,
      normalize: CIDR_NORMALIZE,
    },
    family: { type: "json", compute: family("prefix") },
    vrf: fk("ipam.vrf", { onDelete: "protect" }),
    status: choice(PREFIX_STATUS, { default: "active" }),
    role: fk("ipam.role"),
    // NetBox's Prefix.vlan is PROTECT (docs/netbox-rules.md "Deletes").
    vlan: fk("ipam.vlan", { onDelete: "protect" }),
    tenant: fk("tenancy.tenant", { onDelete: "protect" }),
    scope_type: contentType(SCOPE_TYPES, { nullable: true, default: null }),
    scope_id: { type: "int", nullable: true, min: 1 },
    scope: {
      type: "gfk",
      models: SCOPE_TYPES.map(([t]) => t),
      typeField: "scope_type",
      idField: "scope_id",
      // NetBox caches the scope in keys that cascade: deleting the region, site group, site
      // or location takes the object along (docs/netbox-rules.md "Deletes").
      onDelete: "cascade",
    },
    is_pool: bool(false),
    mark_utilized: bool(false),
    description: description(),
    comments: comments(),
    children: always(0),
    _depth: always(0),
    /** Its claim in the unique IP space (rules.ts), null where duplicates are allowed. */
    unique_space: { type: "string", hidden: true, filter: false },
  },
  brief: ["family", "prefix", "description"],
  display: (r) => String(r.prefix),
  unique: [uniqueSpaceConstraint("prefix", "prefix")],
  validate: (draft, ctx) => {
    const c = typeof draft.prefix === "string" ? parseCidr(draft.prefix) : null;
    if (!c || cidrFamily(String(draft.prefix)) === null) {
      return { prefix: [`Invalid IP prefix format: ${draft.prefix}`] };
    }
    const network = networkOf(c);
    if (network !== c.value) {
      const suggestion = canonicalCidr(`${formatHost(c.family, network)}/${c.length}`);
      return {
        prefix: [`${draft.prefix} is not a valid prefix. Did you mean ${suggestion}?`],
      };
    }
    return prefixRule(draft, ctx);
  },
  filters: {
    within: prefixFilter("within"),
    within_include: prefixFilter("within_include"),
    contains: prefixFilter("contains"),
    family: familyFilter,
  },
  search: ["prefix", "description", "comments"],
  ordering: ["prefix", "id"],
};

export const TAG: ModelDef = {
  app: "extras",
  model: "tag",
  verbose: "tag",
  path: "extras/tags/",
  fields: {
    ...withNameSlug(),
    color: color(),
    description: description(),
    object_types: { type: "list", of: "string", index: true },
    tagged_items: countOf("*", "tags"),
  },
  brief: ["name", "slug", "color"],
  unique: NAME_SLUG_UNIQUE,
  naturalKey: "slug",
  tags: false,
  customFields: false,
  search: ["name", "slug", "description"],
  ordering: ["name"],
};

/**
 * Keeps object data in step with a custom field definition, as NetBox does: a rename moves the
 * stored values to the new name (no data loss), and a field with a default fills the objects
 * it newly applies to.
 */
async function migrateCustomFieldData(record: StoredObject, ctx: HookContext): Promise<void> {
  const types = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
  const now = types(record.object_types);
  const before = ctx.existing ? types(ctx.existing.object_types) : [];
  const name = String(record.name);
  const oldName = ctx.existing ? String(ctx.existing.name) : name;
  const known = (t: string) => {
    try {
      return ctx.engine.definition(t).customFields !== false;
    } catch {
      return false;
    }
  };
  if (oldName !== name) {
    for (const model of new Set([...before, ...now].filter(known))) {
      for (const r of await ctx.engine.find(model)) {
        const data = r.custom_fields as Record<string, unknown> | undefined;
        if (!data || !(oldName in data)) continue;
        await ctx.engine.patchStored(model, r.id, (current) => {
          const next = { ...(current.custom_fields as Record<string, unknown> ?? {}) };
          if (oldName in next) {
            if (!(name in next) || next[name] === null) next[name] = next[oldName];
            delete next[oldName];
          }
          return { custom_fields: next };
        });
      }
    }
  }
  if (record.default === null || record.default === undefined) return;
  for (const model of now.filter((t) => known(t) && !before.includes(t))) {
    for (const r of await ctx.engine.find(model)) {
      const data = r.custom_fields as Record<string, unknown> | undefined;
      if (data && data[name] !== null && data[name] !== undefined) continue;
      await ctx.engine.patchStored(model, r.id, (current) => {
        const next = { ...(current.custom_fields as Record<string, unknown> ?? {}) };
        if (next[name] === null || next[name] === undefined) next[name] = record.default;
        return { custom_fields: next };
      });
    }
  }
}

export const CUSTOM_FIELD: ModelDef = {
  app: "extras",
  model: "customfield",
  verbose: "custom field",
  path: "extras/custom-fields/",
  fields: {
    object_types: { type: "list", of: "string", required: true, index: true },
    type: choice(CUSTOM_FIELD_TYPES, { default: "text" }),
    related_object_type: str(100, { nullable: true, default: null }),
    name: {
      type: "string",
      required: true,
      maxLength: 50,
      pattern: /^[a-z0-9_]+$/,
      patternMessage: "Only alphanumeric characters and underscores are allowed.",
    },
    label: str(50),
    group_name: str(50),
    description: description(),
    required: bool(false),
    search_weight: { type: "int", default: 1000, min: 0, max: 32767 },
    filter_logic: choice([["disabled", "Disabled"], ["loose", "Loose"], ["exact", "Exact"]], {
      default: "loose",
    }),
    ui_visible: choice([["always", "Always"], ["if-set", "If set"], ["hidden", "Hidden"]], {
      default: "always",
    }),
    ui_editable: choice([["yes", "Yes"], ["no", "No"], ["hidden", "Hidden"]], { default: "yes" }),
    is_cloneable: bool(false),
    default: { type: "json", nullable: true, default: null },
    weight: { type: "int", default: 100, min: 0, max: 32767 },
    validation_minimum: {
      type: "int",
      nullable: true,
      min: -Number.MAX_SAFE_INTEGER,
      max: Number.MAX_SAFE_INTEGER,
    },
    validation_maximum: {
      type: "int",
      nullable: true,
      min: -Number.MAX_SAFE_INTEGER,
      max: Number.MAX_SAFE_INTEGER,
    },
    validation_regex: str(500),
    /** Extension: allowed values of select/multiselect fields (NetBox uses choice sets). */
    choices: { type: "list", of: "string", nullable: true, default: null },
  },
  brief: ["name", "description"],
  unique: [{ fields: ["name"] }],
  tags: false,
  customFields: false,
  validate: (draft, ctx): FieldErrors | null => {
    const unknown = (draft.object_types as string[]).filter((t) => {
      try {
        ctx.engine.definition(t);
        return false;
      } catch {
        return true;
      }
    });
    if (unknown.length > 0) {
      return { object_types: unknown.map((t) => `Invalid object type: ${t}`) };
    }
    if ((draft.object_types as string[]).length === 0) {
      return { object_types: ["This list may not be empty."] };
    }
    if (typeof draft.validation_regex === "string" && draft.validation_regex !== "") {
      const problem = userPatternProblem(draft.validation_regex);
      if (problem) return { validation_regex: [problem] };
    }
    if (draft.type === "object" || draft.type === "multiobject") {
      const target = draft.related_object_type;
      if (typeof target !== "string" || target === "") {
        return { related_object_type: ["Object fields must define an object type."] };
      }
      try {
        ctx.engine.definition(target);
      } catch {
        return { related_object_type: [`Invalid object type: ${target}`] };
      }
    } else if (typeof draft.related_object_type === "string" && draft.related_object_type !== "") {
      // As NetBox's CustomField.clean(): only object fields name a type (an integer field naming
      // one would otherwise be kept, and read by nothing).
      const label = CUSTOM_FIELD_TYPES.find(([value]) => value === draft.type)?.[1] ?? draft.type;
      return { type: [`${label} fields may not define an object type.`] };
    }
    if (draft.default !== null && draft.default !== undefined) {
      const r = checkCustomValue(draft as never, draft.default);
      if (!r.ok) {
        return {
          default: [`Invalid default value "${JSON.stringify(draft.default)}": ${r.error}`],
        };
      }
    }
    return null;
  },
  afterSave: migrateCustomFieldData,
  search: ["name", "label", "description"],
  // NetBox's CustomField.Meta.ordering; the ordered index stays keyed by weight, as stored before
  // the group name led the order (the list sorts its page in memory: there are few definitions).
  ordering: ["group_name", "weight", "name"],
  orderedIndex: "weight",
};

export const JOURNAL_ENTRY: ModelDef = {
  app: "extras",
  model: "journalentry",
  verbose: "journal entry",
  path: "extras/journal-entries/",
  fields: {
    assigned_object_type: { type: "string", required: true, maxLength: 100, index: true },
    assigned_object_id: { type: "int", required: true, min: 1, index: true },
    assigned_object: {
      type: "gfk",
      models: "*",
      typeField: "assigned_object_type",
      idField: "assigned_object_id",
      onDelete: "cascade",
    },
    created_by: alwaysNull(),
    kind: choice(JOURNAL_KINDS, { default: "info" }),
    comments: { type: "string", required: true },
  },
  brief: ["created"],
  display: (r) => `${String(r.created ?? "").slice(0, 16).replace("T", " ")} (${r.kind})`,
  search: ["comments"],
  ordering: ["-created"],
};

export const JOB: ModelDef = {
  app: "core",
  model: "job",
  verbose: "job",
  path: "core/jobs/",
  readOnly: true,
  fields: {
    object_type: str(100, { nullable: true, default: null }),
    object_id: { type: "int", nullable: true, min: 1 },
    name: str(200, { index: true }),
    status: choice(JOB_STATUS, { default: "pending" }),
    scheduled: { type: "datetime", nullable: true },
    interval: { type: "int", nullable: true, min: 1 },
    started: { type: "datetime", nullable: true },
    completed: { type: "datetime", nullable: true },
    data: { type: "json", nullable: true, default: null },
    error: str(1000),
    job_id: { type: "string", maxLength: 36, index: true, default: () => crypto.randomUUID() },
    log_entries: { type: "json", default: () => [] },
    /** Alias of log_entries (the jobs API documents it as `log`). */
    log: { type: "json", compute: (r) => r.log_entries ?? [] },
    /**
     * Who asked for the job. NetBox names a user here; this server's callers are API tokens, so
     * it holds the token: `{display, token_id, description}` (docs/jobs.md).
     */
    user: { type: "json", nullable: true, default: null },
  },
  brief: ["name", "status"],
  display: (r) => String(r.name || `job ${r.id}`),
  unique: [{ fields: ["job_id"] }],
  tags: false,
  customFields: false,
  search: ["name", "error"],
  ordering: ["-created"],
};

/** users.token; secrets and checks come from TokenService.hooks() (tokens.ts). */
export function tokenModel(
  hooks: Pick<ModelDef, "validate" | "beforeSave" | "canDelete" | "beforeDelete">,
): ModelDef {
  return {
    app: "users",
    model: "token",
    verbose: "token",
    path: "users/tokens/",
    fields: {
      // NetBox 4.5: new tokens are v2 unless v1 (deprecated) is asked for.
      version: { type: "int", default: 2, min: 1, max: 2 },
      key: { type: "string", readOnly: true, nullable: true, index: false },
      /** NetBox 4.5: which pepper signed a v2 digest (null: v1, or a v2 token from before). */
      pepper_id: { type: "int", readOnly: true, nullable: true, default: null },
      token: { type: "string", writeOnly: true, maxLength: 256, allowBlank: true },
      description: description(),
      expires: { type: "datetime", nullable: true },
      last_used: { type: "datetime", nullable: true, readOnly: true },
      enabled: bool(true),
      write_enabled: bool(true),
      is_superuser: bool(false),
      permissions: { type: "list", of: "string", default: () => [] },
      digest: { type: "string", hidden: true },
      encrypted: { type: "string", hidden: true, nullable: true },
      enc_source: { type: "string", hidden: true, nullable: true },
    },
    brief: ["version", "key", "write_enabled", "description"],
    // NetBox 4.5: a v2 token shows as its key; a v1 token (deprecated) by id and description.
    display: (r) =>
      r.version === 2
        ? String(r.key)
        : `v1 token ${r.id}` + (r.description ? ` (${r.description})` : ""),
    unique: [
      {
        fields: ["digest"],
        errorField: "token",
        message: "A token with this value already exists.",
      },
      { fields: ["key"] },
    ],
    tags: false,
    customFields: false,
    // Token changes stay out of the change log: its data would sit next to secrets' metadata.
    changelog: false,
    ...hooks,
    search: ["description", "key"],
    ordering: ["id"],
  };
}

/** Every core model except tokens (which need the TokenService hooks). */
export const CORE_MODELS: ModelDef[] = [
  TENANT,
  SITE,
  MANUFACTURER,
  DEVICE_TYPE,
  DEVICE_ROLE,
  DEVICE,
  INTERFACE,
  MAC_ADDRESS,
  CLUSTER_TYPE,
  CLUSTER,
  VIRTUAL_MACHINE_TYPE,
  VIRTUAL_MACHINE,
  VM_INTERFACE,
  VIRTUAL_DISK,
  IP_ADDRESS,
  VLAN,
  PREFIX,
  TAG,
  CUSTOM_FIELD,
  JOURNAL_ENTRY,
  JOB,
];
