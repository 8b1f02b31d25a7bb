/** The custom-field definitions that apply to a model (extras.customfield by object type). */
import type { CustomFieldDef } from "../custom_fields.ts";
import type { EngineCore, RequestCache } from "./core.ts";
import { CUSTOM_FIELD_MODEL } from "./registry.ts";

/**
 * Definitions whose `object_types` name `model`, in the custom-field list's default order (group
 * name, a blank one first, then weight, then name: docs/netbox-rules.md), compared as the list
 * compares them; read once per request.
 */
export async function customFieldsFor(
  core: EngineCore,
  model: string,
  cache?: RequestCache,
): Promise<CustomFieldDef[]> {
  const hit = cache?.customFields.get(model);
  if (hit) return hit;
  if (!core.registry.has(CUSTOM_FIELD_MODEL)) return [];
  const ids = await core.store.idsByIndex(CUSTOM_FIELD_MODEL, "object_types", model);
  const defs = (await core.store.getMany(CUSTOM_FIELD_MODEL, ids)) as unknown as CustomFieldDef[];
  const { store } = core;
  const keys = new Map(defs.map((d) => [d, [
    store.sortKey(d.group_name ?? ""),
    store.sortKey(d.weight ?? 100),
    store.sortKey(d.name),
  ]]));
  defs.sort((a, b) => {
    const ka = keys.get(a)!, kb = keys.get(b)!;
    return store.compareSortKeys(ka[0], kb[0]) || store.compareSortKeys(ka[1], kb[1]) ||
      store.compareSortKeys(ka[2], kb[2]);
  });
  cache?.customFields.set(model, defs);
  return defs;
}
