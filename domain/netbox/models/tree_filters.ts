/**
 * NetBox 4.6's tree filters (TreeNodeMultipleChoiceFilter) wherever its filter sets declare
 * them: a region, site group, location, tenant group or contact group named by id or slug
 * matches that node and every node below it, on the model's own reference (a site's
 * `region_id`), across one (a device's `region_id` through its site), or through a scope (a
 * cluster's or prefix's `region_id`). docs/api-behaviour.md, "Inventory: filters".
 */
import { QueryError } from "../engine.ts";
import type { CustomFilter, EngineApi, ModelDef, StoredObject } from "../types.ts";

/** Own references whose filters match the nodes below (NetBox declares these as tree filters). */
const TREE_FIELDS: Record<string, string[]> = {
  "dcim.site": ["region", "group"],
  "dcim.device": ["location"],
  "dcim.rack": ["location"],
  "tenancy.tenant": ["group"],
};

/** Filters across references, by model (besides the rules for `site`, `tenant` and trees). */
const THROUGH: Record<string, Record<string, readonly string[]>> = {
  "dcim.interface": {
    region: ["device", "site", "region"],
    site_group: ["device", "site", "group"],
  },
  "tenancy.contact": { group: ["groups"] },
};

const SCOPED = new Set(["virtualization.cluster", "ipam.prefix"]);

function withTreeFilters(def: ModelDef): ModelDef {
  const name = `${def.app}.${def.model}`;
  const fields = { ...def.fields };
  for (const field of TREE_FIELDS[name] ?? []) fields[field] = { ...fields[field], tree: true };
  const through: Record<string, readonly string[]> = { ...def.through, ...THROUGH[name] };
  if (fields.site?.type === "fk" && fields.site.model === "dcim.site") {
    through.region = ["site", "region"];
    through.site_group = ["site", "group"];
  }
  if (fields.tenant?.type === "fk" && fields.tenant.model === "tenancy.tenant") {
    through.tenant_group = ["tenant", "group"];
  }
  // A tree model (its own `parent` and `_depth`): `ancestor` names a node above.
  if (fields._depth && fields.parent?.model === name) through.ancestor = ["parent"];
  const filters = SCOPED.has(name) ? { ...def.filters, ...scopeFilters() } : def.filters;
  return {
    ...def,
    fields,
    ...(Object.keys(through).length > 0 ? { through } : {}),
    ...(filters ? { filters } : {}),
  };
}

export function treeFilters(models: ModelDef[]): ModelDef[] {
  return models.map(withTreeFilters);
}

const SCOPE_MODELS = {
  region: "dcim.region",
  site_group: "dcim.sitegroup",
  location: "dcim.location",
} as const;

/** Look-ups of one filter, their errors under that filter's name. */
async function named(
  engine: EngineApi,
  param: string,
  model: string,
  filters: Record<string, string[]>,
): Promise<Set<number>> {
  try {
    return new Set((await engine.find(model, filters)).map((r) => r.id));
  } catch (error) {
    if (error instanceof QueryError) {
      throw new QueryError({ [param]: Object.values(error.errors).flat() });
    }
    throw error;
  }
}

/**
 * A scoped object's (cluster, prefix) region, site group or location: NetBox matches the
 * region, site group, site and location its scope caches, so a cluster scoped to a site is
 * in that site's region, and one scoped to a location in its site's.
 */
function scopeFilter(kind: keyof typeof SCOPE_MODELS, byId: boolean, param: string): CustomFilter {
  const model = SCOPE_MODELS[kind];
  const by = (name: string) => byId ? `${name}_id` : name;
  const filter: CustomFilter = async (values, engine) => {
    const nodes = await named(engine, param, model, { [by("ancestor")]: values });
    const top = await named(engine, param, model, { [byId ? "id" : "slug"]: values });
    for (const id of top) nodes.add(id);
    const sites = kind === "location"
      ? new Set<number>()
      : await named(engine, param, "dcim.site", {
        [by(kind === "region" ? "region" : "group")]: values,
      });
    const locations = kind === "location"
      ? new Set<number>()
      : await named(engine, param, "dcim.location", { [by(kind)]: values });
    const reaches = (r: StoredObject) => {
      const id = r.scope_id as number;
      return r.scope_type === model
        ? nodes.has(id)
        : r.scope_type === "dcim.site"
        ? sites.has(id)
        : r.scope_type === "dcim.location" && locations.has(id);
    };
    return { predicate: param.endsWith("__n") ? (r) => !reaches(r) : reaches };
  };
  return Object.assign(filter, { keepsEmpty: true });
}

/** `region`, `region_id`, `site_group`, … on a scoped model, each with its `__n`. */
function scopeFilters(): Record<string, CustomFilter> {
  const out: Record<string, CustomFilter> = {};
  for (const kind of Object.keys(SCOPE_MODELS) as Array<keyof typeof SCOPE_MODELS>) {
    for (const byId of [true, false]) {
      const name = byId ? `${kind}_id` : kind;
      out[name] = scopeFilter(kind, byId, name);
      out[`${name}__n`] = scopeFilter(kind, byId, `${name}__n`);
    }
  }
  return out;
}
