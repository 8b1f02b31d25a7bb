/**
 * NetBox 4.2 dcim models beyond the ones the sync writes: regions, site groups, locations,
 * racks and rack roles, platforms, virtual chassis. Clients such as Ansible's nb_inventory
 * read them; devices, sites and VMs point at them.
 */
import type { FieldDef, FieldErrors, HookContext, ModelDef, StoredObject } from "../types.ts";
import {
  bool,
  choice,
  color,
  comments,
  description,
  fk,
  name,
  NAME_SLUG_UNIQUE,
  reqFk,
  SITE_STATUS,
  str,
  withNameSlug,
} from "./core.ts";
import { AIRFLOW, alwaysNull, countOf, optionalChoice, WEIGHT_UNITS } from "./shapes.ts";

/** `_depth` of a nested-group record: its parent's plus one (0 at the top). */
export const depthField = (): FieldDef => ({
  type: "int",
  readOnly: true,
  filter: false,
  default: 0,
});

/** Tree models: the parent is not the record itself, and `_depth` follows the parent. */
export function treeHooks(model: string): Pick<ModelDef, "validate" | "beforeSave"> {
  return {
    validate: (draft: StoredObject): FieldErrors | null =>
      typeof draft.parent === "number" && draft.parent === draft.id
        ? { parent: ["Cannot assign self as parent."] }
        : null,
    beforeSave: async (draft: StoredObject, ctx: HookContext) => {
      const parent = typeof draft.parent === "number" ? await ctx.read(model, draft.parent) : null;
      draft._depth = parent ? Number(parent._depth ?? 0) + 1 : 0;
    },
  };
}

/** Region and site group: a named tree of sites. */
function siteTree(model: string, verbose: string, path: string): ModelDef {
  const self = `dcim.${model}`;
  return {
    app: "dcim",
    model,
    verbose,
    path,
    fields: {
      ...withNameSlug(),
      parent: fk(self, { onDelete: "cascade" }),
      description: description(),
      site_count: countOf("dcim.site", model === "region" ? "region" : "group"),
      _depth: depthField(),
    },
    brief: ["name", "slug", "description", "site_count", "_depth"],
    unique: NAME_SLUG_UNIQUE,
    ...treeHooks(self),
    search: ["name", "slug", "description"],
    ordering: ["name"],
  };
}

export const REGION = siteTree("region", "region", "dcim/regions/");
export const SITE_GROUP = siteTree("sitegroup", "site group", "dcim/site-groups/");

export const LOCATION: ModelDef = {
  app: "dcim",
  model: "location",
  verbose: "location",
  path: "dcim/locations/",
  fields: {
    ...withNameSlug(),
    site: reqFk("dcim.site", "cascade"),
    parent: fk("dcim.location", { onDelete: "cascade" }),
    status: choice(SITE_STATUS, { default: "active" }),
    tenant: fk("tenancy.tenant", { onDelete: "protect" }),
    facility: str(50),
    description: description(),
    rack_count: countOf("dcim.rack", "location"),
    device_count: countOf("dcim.device", "location"),
    _depth: depthField(),
  },
  brief: ["name", "slug", "description", "rack_count", "_depth"],
  unique: [
    {
      fields: ["site", "parent", "name"],
      ci: true,
      message: "Location name must be unique per site.",
    },
    {
      fields: ["site", "parent", "slug"],
      ci: true,
      message: "Location slug must be unique per site.",
    },
  ],
  ...treeHooks("dcim.location"),
  search: ["name", "slug", "facility", "description"],
  ordering: ["name"],
};

export const RACK_ROLE: ModelDef = {
  app: "dcim",
  model: "rackrole",
  verbose: "rack role",
  path: "dcim/rack-roles/",
  fields: {
    ...withNameSlug(),
    color: color(),
    description: description(),
    rack_count: countOf("dcim.rack", "role"),
  },
  brief: ["name", "slug", "description", "rack_count"],
  unique: NAME_SLUG_UNIQUE,
  search: ["name", "slug", "description"],
  ordering: ["name"],
};

const RACK_STATUS = [
  ["reserved", "Reserved"],
  ["available", "Available"],
  ["planned", "Planned"],
  ["active", "Active"],
  ["deprecated", "Deprecated"],
] as const;
const RACK_FORM_FACTORS = [
  ["2-post-frame", "2-post frame"],
  ["4-post-frame", "4-post frame"],
  ["4-post-cabinet", "4-post cabinet"],
  ["wall-frame", "Wall-mounted frame"],
  ["wall-frame-vertical", "Wall-mounted frame (vertical)"],
  ["wall-cabinet", "Wall-mounted cabinet"],
  ["wall-cabinet-vertical", "Wall-mounted cabinet (vertical)"],
] as const;
const LENGTH_UNITS = [["mm", "Millimeters"], ["in", "Inches"]] as const;
const dimension = (): FieldDef => ({ type: "int", nullable: true, min: 1, max: 32767 });

export const RACK: ModelDef = {
  app: "dcim",
  model: "rack",
  verbose: "rack",
  path: "dcim/racks/",
  fields: {
    name: name(100),
    facility_id: str(50, { nullable: true, default: null }),
    site: reqFk("dcim.site"),
    location: fk("dcim.location", { onDelete: "set_null" }),
    tenant: fk("tenancy.tenant", { onDelete: "protect" }),
    status: choice(RACK_STATUS, { default: "active" }),
    role: fk("dcim.rackrole", { onDelete: "protect" }),
    serial: str(50),
    asset_tag: str(50, { nullable: true, default: null }),
    rack_type: alwaysNull(),
    form_factor: optionalChoice(RACK_FORM_FACTORS),
    width: choice([["10", "10 inches"], ["19", "19 inches"], ["21", "21 inches"], [
      "23",
      "23 inches",
    ]], { default: "19" }),
    u_height: { type: "int", default: 42, min: 1, max: 100 },
    starting_unit: { type: "int", default: 1, min: 1, max: 32767 },
    weight: { type: "float", nullable: true, min: 0 },
    max_weight: { type: "int", nullable: true, min: 0 },
    weight_unit: optionalChoice(WEIGHT_UNITS),
    desc_units: bool(false),
    outer_width: dimension(),
    outer_height: dimension(),
    outer_depth: dimension(),
    outer_unit: optionalChoice(LENGTH_UNITS),
    mounting_depth: dimension(),
    airflow: optionalChoice(AIRFLOW),
    description: description(),
    comments: comments(),
    device_count: countOf("dcim.device", "rack"),
    powerfeed_count: countOf("dcim.powerfeed", "rack"),
  },
  brief: ["name", "description", "device_count"],
  unique: [
    { fields: ["location", "name"], ci: true, message: "Rack name must be unique per location." },
    { fields: ["asset_tag"], message: "rack with this Asset tag already exists." },
  ],
  search: ["name", "facility_id", "serial", "asset_tag", "description", "comments"],
  ordering: ["name", "id"],
};

export const PLATFORM: ModelDef = {
  app: "dcim",
  model: "platform",
  verbose: "platform",
  path: "dcim/platforms/",
  fields: {
    ...withNameSlug(),
    manufacturer: fk("dcim.manufacturer", { onDelete: "protect" }),
    config_template: alwaysNull(),
    description: description(),
    device_count: countOf("dcim.device", "platform"),
    virtualmachine_count: countOf("virtualization.virtualmachine", "platform"),
  },
  brief: ["name", "slug", "description", "device_count", "virtualmachine_count"],
  unique: NAME_SLUG_UNIQUE,
  search: ["name", "slug", "description"],
  ordering: ["name"],
};

export const VIRTUAL_CHASSIS: ModelDef = {
  app: "dcim",
  model: "virtualchassis",
  verbose: "virtual chassis",
  path: "dcim/virtual-chassis/",
  fields: {
    name: name(64),
    domain: str(30),
    // NetBox's VirtualChassis.master is PROTECT: the master device is not deleted.
    master: fk("dcim.device", { onDelete: "protect" }),
    description: description(),
    comments: comments(),
    member_count: countOf("dcim.device", "virtual_chassis"),
  },
  brief: ["name", "master", "description", "member_count"],
  validate: async (draft, ctx) => {
    // As NetBox: checked once the chassis exists (a new chassis has no members yet).
    if (!ctx.existing || typeof draft.master !== "number" || !("master" in ctx.input)) {
      return null;
    }
    const master = await ctx.engine.get("dcim.device", draft.master);
    if (master && master.virtual_chassis !== draft.id) {
      return {
        master: [`The selected master (${master.name}) is not assigned to this virtual chassis.`],
      };
    }
    return null;
  },
  search: ["name", "domain", "description", "comments"],
  ordering: ["name"],
};

export const DCIM_EXTRA_MODELS: ModelDef[] = [
  REGION,
  SITE_GROUP,
  LOCATION,
  RACK_ROLE,
  RACK,
  PLATFORM,
  VIRTUAL_CHASSIS,
];
