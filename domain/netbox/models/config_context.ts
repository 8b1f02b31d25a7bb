/**
 * A device's or VM's rendered `config_context`, as NetBox builds it: the active config contexts
 * whose assignment matches the object (every non-empty criterion must hold: region with its
 * ancestors, site group with its ancestors, site, location, device type, role, platform, cluster
 * type, cluster group, cluster, tenant group, tenant, tags), deep-merged in weight then name
 * order, then the object's own `local_context_data` on top.
 */
import type { EngineApi, FieldDef, StoredObject } from "../types.ts";

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json =>
  v !== null && typeof v === "object" && !Array.isArray(v);

/** NetBox's deepmerge: objects merge key by key, anything else is replaced. */
function deepMerge(base: Json, over: Json): Json {
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(over)) {
    out[k] = isObject(out[k]) && isObject(v) ? deepMerge(out[k] as Json, v) : v;
  }
  return out;
}

/** Reads records once per render. */
function reader(engine: EngineApi) {
  const cache = new Map<string, Promise<StoredObject | null>>();
  return (model: string, id: unknown): Promise<StoredObject | null> => {
    if (typeof id !== "number") return Promise.resolve(null);
    const key = `${model}:${id}`;
    let hit = cache.get(key);
    if (!hit) cache.set(key, hit = engine.get(model, id));
    return hit;
  };
}

/** The ids of a tree node and its ancestors (regions, site groups, tenant groups). */
async function withAncestors(
  read: ReturnType<typeof reader>,
  model: string,
  id: unknown,
): Promise<number[]> {
  const out: number[] = [];
  let current = await read(model, id);
  while (current && !out.includes(current.id) && out.length < 64) {
    out.push(current.id);
    current = await read(model, current.parent);
  }
  return out;
}

/** Criterion field of a config context → the ids the object has for it. */
async function attributes(
  r: StoredObject,
  read: ReturnType<typeof reader>,
): Promise<Record<string, number[]>> {
  const one = (v: unknown) => (typeof v === "number" ? [v] : []);
  const site = await read("dcim.site", r.site);
  const cluster = await read("virtualization.cluster", r.cluster);
  const tenant = await read("tenancy.tenant", r.tenant);
  return {
    regions: await withAncestors(read, "dcim.region", site?.region),
    site_groups: await withAncestors(read, "dcim.sitegroup", site?.group),
    sites: one(r.site),
    locations: one(r.location),
    device_types: one(r.device_type),
    roles: one(r.role),
    platforms: one(r.platform),
    cluster_types: one(cluster?.type),
    cluster_groups: one(cluster?.group),
    clusters: one(r.cluster),
    tenant_groups: await withAncestors(read, "tenancy.tenantgroup", tenant?.group),
    tenants: one(r.tenant),
    tags: Array.isArray(r.tags) ? r.tags.filter((t): t is number => typeof t === "number") : [],
  };
}

async function renderConfigContexts(
  records: StoredObject[],
  engine: EngineApi,
): Promise<unknown[]> {
  let active: StoredObject[] = [];
  try {
    active = await engine.find("extras.configcontext", { is_active: ["true"] });
  } catch {
    // An engine without config contexts registered: local data only.
  }
  const contexts = active.sort((a, b) =>
    Number(a.weight) - Number(b.weight) ||
    (String(a.name) < String(b.name) ? -1 : String(a.name) > String(b.name) ? 1 : 0)
  );
  const read = reader(engine);
  return await Promise.all(records.map(async (r) => {
    const local = isObject(r.local_context_data) ? r.local_context_data : {};
    if (contexts.length === 0) return { ...local };
    const has = await attributes(r, read);
    let merged: Json = {};
    for (const c of contexts) {
      const matches = Object.entries(has).every(([field, ids]) => {
        const wanted = c[field];
        return !Array.isArray(wanted) || wanted.length === 0 ||
          wanted.some((id) => ids.includes(id as number));
      });
      if (matches && isObject(c.data)) merged = deepMerge(merged, c.data);
    }
    return deepMerge(merged, local);
  }));
}

/** The `config_context` field of devices and VMs. */
export const configContextField = (): FieldDef => ({
  type: "json",
  readOnly: true,
  filter: false,
  resolve: renderConfigContexts,
});
