/**
 * What NetBox 4.3-4.6 changed in the shapes of the models defined beside this file, applied as
 * one layer over them (docs/api-behaviour.md, Inventory: NetBox 4.6 shapes): `owner` on every
 * owned model and the `users/owners`, `users/owner-groups` endpoints; `comments` where 4.3/4.5
 * added them; hierarchical device roles and platforms (`parent`, `_depth`); a service's parent
 * as a generic `parent_object_type`/`parent_object_id` (its `device`/`virtual_machine` gone); a
 * contact's `groups`; tag `weight`; and the smaller fields of the table in
 * tests/routes/inventory/netbox46_fields_test.ts.
 */
import type { CustomFilter, EngineApi, FieldDef, ModelDef, StoredObject } from "../types.ts";
import { depthField, treeHooks } from "./dcim_extra.ts";
import { always, alwaysEmpty, alwaysNull, contentType, countOf } from "./shapes.ts";

export const OWNER_MODEL = "users.owner";
export const OWNER_GROUP_MODEL = "users.ownergroup";

const comments = (): FieldDef => ({ type: "string" });
const nullableFk = (model: string, onDelete: FieldDef["onDelete"]): FieldDef => ({
  type: "fk",
  model,
  nullable: true,
  onDelete,
});

export const OWNER_GROUP: ModelDef = {
  app: "users",
  model: "ownergroup",
  verbose: "owner group",
  path: "users/owner-groups/",
  fields: {
    name: { type: "string", required: true, maxLength: 100, index: true },
    description: { type: "string", maxLength: 200 },
    member_count: countOf(OWNER_MODEL, "group"),
  },
  brief: ["name", "description"],
  unique: [{ fields: ["name"], message: "owner group with this name already exists." }],
  tags: false,
  customFields: false,
  timestamps: false,
  search: ["name", "description"],
  ordering: ["name"],
};

export const OWNER: ModelDef = {
  app: "users",
  model: "owner",
  verbose: "owner",
  path: "users/owners/",
  fields: {
    name: { type: "string", required: true, maxLength: 100, index: true },
    group: nullableFk(OWNER_GROUP_MODEL, "protect"),
    description: { type: "string", maxLength: 200 },
    // The inventory has tokens, not user accounts or groups: always empty.
    user_groups: alwaysEmpty(),
    users: alwaysEmpty(),
  },
  brief: ["name", "description"],
  unique: [{ fields: ["name"], message: "owner with this name already exists." }],
  tags: false,
  customFields: false,
  timestamps: false,
  search: ["name", "description"],
  ordering: ["name"],
};

/** Models NetBox 4.5 gives no `owner` (besides the plugin's own and the owners themselves). */
const NOT_OWNED = new Set([
  "extras.tag",
  "extras.journalentry",
  "core.job",
  "core.objectchange",
  "users.token",
  "tenancy.contactassignment",
  OWNER_MODEL,
  OWNER_GROUP_MODEL,
]);

/** `owner_group` / `owner_group_id`: objects whose owner is in the group. */
function ownerGroupFilter(byId: boolean): CustomFilter {
  return async (values, engine) => {
    const groups = byId
      ? values.map(Number).filter(Number.isSafeInteger)
      : (await engine.find(OWNER_GROUP_MODEL, { name: values })).map((g) => g.id);
    const owners = groups.length === 0
      ? []
      : await engine.find(OWNER_MODEL, { group_id: groups.map(String) });
    const ids = new Set(owners.map((o) => o.id));
    return { predicate: (r: StoredObject) => typeof r.owner === "number" && ids.has(r.owner) };
  };
}

/** A service's parent: NetBox 4.3's SERVICE_ASSIGNMENT_MODELS (FHRP groups not modelled here). */
const SERVICE_PARENTS = [
  ["dcim.device", "dcim.device"],
  ["virtualization.virtualmachine", "virtualization.virtualmachine"],
] as const;

/** `device_id` / `virtual_machine_id` (and by name) kept as filters on a service's parent. */
function serviceParentFilter(type: string, byId: boolean): CustomFilter {
  return async (values, engine) => {
    const ids = byId
      ? values.map(Number)
      : (await engine.find(type, { name: values })).map((r) => r.id);
    return {
      predicate: (r: StoredObject) =>
        r.parent_object_type === type && ids.includes(r.parent_object_id as number),
    };
  };
}

/** The sum of a VLAN group's ranges (NetBox 4.6's `total_vlan_ids`). */
function totalVlanIds(r: StoredObject): number {
  const ranges = Array.isArray(r.vid_ranges) ? r.vid_ranges as unknown[] : [];
  let total = 0;
  for (const range of ranges) {
    if (Array.isArray(range) && typeof range[0] === "number" && typeof range[1] === "number") {
      total += range[1] - range[0] + 1;
    }
  }
  return total;
}

type Delta = (def: ModelDef) => ModelDef;

const withFields = (fields: Record<string, FieldDef>, brief?: string[]): Delta => (def) => ({
  ...def,
  fields: { ...def.fields, ...fields },
  brief: brief ?? def.brief,
});

/** A role or platform becomes a tree: `parent`, `_depth` (also in its brief), comments. */
const tree = (model: string): Delta => (def) => ({
  ...def,
  fields: {
    ...def.fields,
    parent: nullableFk(model, "cascade"),
    comments: comments(),
    _depth: depthField(),
  },
  brief: [...def.brief, "_depth"],
  ...treeHooks(model),
});

/**
 * The VMs of a page's clusters, read once for the three `allocated_*` fields of one rendering:
 * they are resolved with the same records, so the page's array keys the read (three finds of
 * every VM of a 100,000-guest cluster became one; docs/sync.md, "Re-runs").
 */
const clusterVmsOfPage = new WeakMap<readonly StoredObject[], Promise<StoredObject[]>>();

/** A cluster's `allocated_vcpus`/`_memory`/`_disk` (NetBox 4.6): sums over its VMs. */
function allocated(field: "vcpus" | "memory" | "disk"): FieldDef {
  return {
    type: "json",
    readOnly: true,
    filter: false,
    resolve: async (records, engine) => {
      if (records.length === 0) return [];
      let read = clusterVmsOfPage.get(records);
      if (!read) {
        read = engine.find("virtualization.virtualmachine", {
          cluster_id: records.map((r) => String(r.id)),
        });
        clusterVmsOfPage.set(records, read);
      }
      const vms = await read;
      const sums = new Map<number, number>();
      for (const vm of vms) {
        const v = vm[field];
        if (typeof v === "number" && typeof vm.cluster === "number") {
          sums.set(vm.cluster, (sums.get(vm.cluster) ?? 0) + v);
        }
      }
      return records.map((r) => sums.get(r.id) ?? null);
    },
  };
}

/** A device as NetBox's NestedDeviceSerializer renders it (4.6: `members`, nested interfaces). */
function legacyNestedDevice(device: StoredObject, origin: string) {
  return {
    id: device.id,
    url: `${origin}/api/dcim/devices/${device.id}/`,
    display_url: `${origin}/dcim/devices/${device.id}/`,
    display: device.name ? String(device.name) : `Unnamed device (${device.id})`,
    name: device.name ?? null,
  };
}

/** Name order as NetBox lists devices and interfaces (natural: "eth2" before "eth10"), then id. */
const NATURAL = new Intl.Collator("en", { numeric: true });
const byName = (a: StoredObject, b: StoredObject) =>
  NATURAL.compare(String(a.name ?? ""), String(b.name ?? "")) || a.id - b.id;

/**
 * The records of `model` whose FK `field` points at each record of the page, rendered by
 * `form`, in name order: a read-only reverse relation NetBox serializes nested (`members`,
 * `bridge_interfaces`). One batched find per page.
 */
function reverseNested(
  model: string,
  field: string,
  form: (child: StoredObject, engine: EngineApi, origin: string) => Promise<unknown> | unknown,
): FieldDef {
  return {
    type: "json",
    readOnly: true,
    filter: false,
    resolve: async (records, engine, origin) => {
      if (records.length === 0) return [];
      // Most rows have none: count first (one batched read), then find only where there are.
      const counts = await engine.countReferences(model, field, records.map((r) => r.id));
      const parents = records.filter((_, i) => counts[i] > 0).map((r) => String(r.id));
      const children = parents.length ? await engine.find(model, { [`${field}_id`]: parents }) : [];
      const byParent = new Map<number, StoredObject[]>();
      for (const child of children.sort(byName)) {
        const parent = child[field];
        if (typeof parent !== "number") continue;
        const list = byParent.get(parent) ?? [];
        list.push(child);
        byParent.set(parent, list);
      }
      return await Promise.all(
        records.map((r) =>
          Promise.all((byParent.get(r.id) ?? []).map((c) => form(c, engine, origin)))
        ),
      );
    },
  };
}

/** NetBox's NestedInterfaceSerializer (4.6's `bridge_interfaces`): the device nested too. */
async function legacyNestedInterface(iface: StoredObject, engine: EngineApi, origin: string) {
  const device = typeof iface.device === "number"
    ? await engine.get("dcim.device", iface.device)
    : null;
  return {
    id: iface.id,
    url: `${origin}/api/dcim/interfaces/${iface.id}/`,
    display_url: `${origin}/dcim/interfaces/${iface.id}/`,
    display: engine.definition("dcim.interface").display?.(iface) ?? String(iface.name ?? ""),
    device: device ? legacyNestedDevice(device, origin) : null,
    name: iface.name ?? null,
    cable: null,
    _occupied: false,
  };
}

/** NetBox 4.6.0/4.6.4: a device's or VM's primary and OOB IPs nest with these beyond the brief. */
const PRIMARY_IP_EXTRA = ["dns_name", "nat_inside", "nat_outside"];

/** The primary-IP fields of a device or VM, rendered with PRIMARY_IP_EXTRA. */
const primaryIpShape: Delta = (def) => {
  const fields = { ...def.fields };
  for (const name of ["primary_ip", "primary_ip4", "primary_ip6", "oob_ip"]) {
    if (fields[name]) fields[name] = { ...fields[name], nested: PRIMARY_IP_EXTRA };
  }
  return { ...def, fields };
};

/**
 * NetBox 4.3/4.4: device roles and platforms are trees, and a device's or VM's `role`,
 * `role_id`, `platform`, `platform_id` filters match the nodes below the one asked for.
 */
const treeRolesAndPlatforms: Delta = (def) => {
  const fields = { ...def.fields };
  for (const name of ["role", "platform"]) {
    if (fields[name]) fields[name] = { ...fields[name], tree: true };
  }
  return { ...def, fields };
};

const DELTAS: Record<string, Delta> = {
  "dcim.device": (def) => treeRolesAndPlatforms(primaryIpShape(def)),
  "virtualization.virtualmachine": (def) => treeRolesAndPlatforms(primaryIpShape(def)),
  "dcim.region": withFields({
    comments: comments(),
    prefix_count: countOf("ipam.prefix", "scope"),
  }),
  "dcim.sitegroup": withFields({
    comments: comments(),
    prefix_count: countOf("ipam.prefix", "scope"),
  }),
  "virtualization.cluster": withFields({
    allocated_vcpus: allocated("vcpus"),
    allocated_memory: allocated("memory"),
    allocated_disk: allocated("disk"),
  }),
  "tenancy.tenantgroup": withFields({ comments: comments() }),
  "tenancy.contactgroup": (def) => ({
    ...def,
    fields: {
      ...def.fields,
      comments: comments(),
      contact_count: countOf("tenancy.contact", "groups"),
    },
  }),
  "tenancy.contactrole": withFields({ comments: comments() }),
  "tenancy.contact": (def) => {
    const { group: _removed, ...rest } = def.fields;
    return {
      ...def,
      fields: { groups: { type: "m2m", model: "tenancy.contactgroup" }, ...rest },
    };
  },
  "dcim.location": withFields({
    comments: comments(),
    prefix_count: countOf("ipam.prefix", "scope"),
  }),
  "dcim.rackrole": withFields({ comments: comments() }),
  "dcim.rack": withFields({ group: alwaysNull() }),
  "dcim.virtualchassis": withFields({
    members: reverseNested(
      "dcim.device",
      "virtual_chassis",
      (d, _e, o) => legacyNestedDevice(d, o),
    ),
  }),
  "dcim.interface": (def) => {
    // After `bridge`, where NetBox puts it.
    const fields: Record<string, FieldDef> = {};
    for (const [name, f] of Object.entries(def.fields)) {
      fields[name] = f;
      if (name === "bridge") {
        fields.bridge_interfaces = reverseNested("dcim.interface", "bridge", legacyNestedInterface);
      }
    }
    return { ...def, fields };
  },
  "tenancy.contactassignment": (def) => ({ ...def, displayUrl: false }),
  "dcim.manufacturer": withFields({ comments: comments(), moduletype_count: always(0) }),
  "dcim.devicerole": tree("dcim.devicerole"),
  "dcim.platform": tree("dcim.platform"),
  "virtualization.clustertype": withFields({ comments: comments() }),
  "virtualization.clustergroup": withFields({ comments: comments() }),
  "ipam.role": (def) =>
    withFields({ comments: comments(), asn_count: always(0) }, [...def.brief, "asn_count"])(def),
  "ipam.vlangroup": withFields({
    tenant: nullableFk("tenancy.tenant", "protect"),
    total_vlan_ids: { type: "int", compute: totalVlanIds },
  }),
  "ipam.service": (def) => {
    const { device: _d, virtual_machine: _v, ...rest } = def.fields;
    return {
      ...def,
      fields: {
        parent_object_type: contentType(SERVICE_PARENTS, { required: true }),
        parent_object_id: { type: "int", required: true, min: 1, index: true },
        parent: {
          type: "gfk",
          models: SERVICE_PARENTS.map(([t]) => t),
          typeField: "parent_object_type",
          idField: "parent_object_id",
          onDelete: "cascade",
        },
        ...rest,
      },
      validate: (draft) =>
        !Array.isArray(draft.ports) || draft.ports.length === 0
          ? { ports: ["This list may not be empty."] }
          : null,
      filters: {
        ...def.filters,
        device_id: serviceParentFilter("dcim.device", true),
        device: serviceParentFilter("dcim.device", false),
        virtual_machine_id: serviceParentFilter("virtualization.virtualmachine", true),
        virtual_machine: serviceParentFilter("virtualization.virtualmachine", false),
      },
    };
  },
  // Listed by weight, then name (NetBox 4.3's Tag.Meta.ordering); the ordered index stays keyed
  // by name, as stored tags have it (a tag list is small and sorted in memory). The name sorts
  // by the database's collation: NetBox gives it no natural_sort (docs/netbox-rules.md).
  "extras.tag": (def) => {
    const shaped = withFields({ weight: { type: "int", default: 1000, min: 0, max: 32767 } })(def);
    return {
      ...shaped,
      fields: { ...shaped.fields, name: { ...shaped.fields.name, collation: "text" } },
      ordering: ["weight", "name"],
      orderedIndex: "name",
    };
  },
  "extras.customfield": withFields({ validation_schema: { type: "json", nullable: true } }),
  "extras.configcontext": withFields({ profile: alwaysNull() }),
  "core.job": withFields({
    object: alwaysNull(),
    queue_name: always("default"),
    notifications: alwaysEmpty(),
  }),
};

/** NetBox 4.6.8's brief_fields where they differ from the models' own (besides id, url, display). */
const BRIEFS: Record<string, string[]> = {
  "dcim.devicetype": ["manufacturer", "model", "slug", "description", "device_count"],
  "dcim.devicerole": [
    "name",
    "slug",
    "description",
    "device_count",
    "virtualmachine_count",
    "_depth",
  ],
  "dcim.interface": ["device", "name", "description", "cable", "_occupied"],
  "virtualization.clustertype": ["name", "slug", "description", "cluster_count"],
  "virtualization.cluster": ["name", "description", "virtualmachine_count"],
  "ipam.prefix": ["family", "prefix", "description", "_depth"],
  "extras.tag": ["name", "slug", "color", "description"],
};

/** `owner` (writable, nullable; PROTECTs the owner) and its filters, on an owned model. */
function withOwner(def: ModelDef): ModelDef {
  return {
    ...def,
    fields: { ...def.fields, owner: nullableFk(OWNER_MODEL, "protect") },
    filters: {
      ...def.filters,
      owner_group: ownerGroupFilter(false),
      owner_group_id: ownerGroupFilter(true),
    },
  };
}

/** The models with NetBox 4.6's shapes, plus the owner models. */
export function netbox46Shapes(models: ModelDef[]): ModelDef[] {
  const out = models.map((def) => {
    const name = `${def.app}.${def.model}`;
    const shaped = DELTAS[name]?.(def) ?? def;
    const changed = BRIEFS[name] ? { ...shaped, brief: BRIEFS[name] } : shaped;
    return NOT_OWNED.has(name) ? changed : withOwner(changed);
  });
  return [...out, OWNER_GROUP, OWNER];
}
