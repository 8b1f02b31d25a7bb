/**
 * NetBox 4.2 grouping models of tenancy and virtualization (tenant groups, cluster groups)
 * and config contexts (extras).
 */
import type { FieldDef, ModelDef } from "../types.ts";
import { bool, description, fk, name, NAME_SLUG_UNIQUE, withNameSlug } from "./core.ts";
import { depthField, treeHooks } from "./dcim_extra.ts";
import { always, alwaysNull, countOf } from "./shapes.ts";

export const TENANT_GROUP: ModelDef = {
  app: "tenancy",
  model: "tenantgroup",
  verbose: "tenant group",
  path: "tenancy/tenant-groups/",
  fields: {
    ...withNameSlug(),
    parent: fk("tenancy.tenantgroup", { onDelete: "cascade" }),
    description: description(),
    tenant_count: countOf("tenancy.tenant", "group"),
    _depth: depthField(),
  },
  brief: ["name", "slug", "description", "tenant_count", "_depth"],
  unique: NAME_SLUG_UNIQUE,
  ...treeHooks("tenancy.tenantgroup"),
  search: ["name", "slug", "description"],
  ordering: ["name"],
};

export const CLUSTER_GROUP: ModelDef = {
  app: "virtualization",
  model: "clustergroup",
  verbose: "cluster group",
  path: "virtualization/cluster-groups/",
  fields: {
    ...withNameSlug(),
    description: description(),
    cluster_count: countOf("virtualization.cluster", "group"),
  },
  brief: ["name", "slug", "description", "cluster_count"],
  unique: NAME_SLUG_UNIQUE,
  search: ["name", "slug", "description"],
  ordering: ["name"],
};

const m2m = (model: string): FieldDef => ({ type: "m2m", model });

export const CONFIG_CONTEXT: ModelDef = {
  app: "extras",
  model: "configcontext",
  verbose: "config context",
  path: "extras/config-contexts/",
  fields: {
    name: name(100),
    weight: { type: "int", default: 1000, min: 0, max: 32767 },
    description: description(),
    is_active: bool(true),
    regions: m2m("dcim.region"),
    site_groups: m2m("dcim.sitegroup"),
    sites: m2m("dcim.site"),
    locations: m2m("dcim.location"),
    device_types: m2m("dcim.devicetype"),
    roles: m2m("dcim.devicerole"),
    platforms: m2m("dcim.platform"),
    cluster_types: m2m("virtualization.clustertype"),
    cluster_groups: m2m("virtualization.clustergroup"),
    clusters: m2m("virtualization.cluster"),
    tenant_groups: m2m("tenancy.tenantgroup"),
    tenants: m2m("tenancy.tenant"),
    // Assignment by tag: the model's own tags, as NetBox's config contexts have no others.
    tags: m2m("extras.tag"),
    data_source: alwaysNull(),
    data_path: always(""),
    data_file: alwaysNull(),
    data_synced: alwaysNull(),
    data: { type: "json", required: true },
  },
  brief: ["name", "description"],
  unique: [{ fields: ["name"], message: "config context with this Name already exists." }],
  tags: false,
  customFields: false,
  validate: (draft) =>
    draft.data !== null && typeof draft.data === "object" && !Array.isArray(draft.data)
      ? null
      : { data: ['JSON data must be in object form. Example: {"foo": 123}'] },
  search: ["name", "description"],
  ordering: ["weight", "name"],
};

export const ORG_EXTRA_MODELS: ModelDef[] = [TENANT_GROUP, CLUSTER_GROUP, CONFIG_CONTEXT];
