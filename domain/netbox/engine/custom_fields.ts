/** The custom-field definitions that apply to a model (extras.customfield by object type). */
import type { CustomFieldDef } from "../custom_fields.ts";
import type { EngineCore, RequestCache } from "./core.ts";
import { sortByDefaultOrdering } from "./paging.ts";
import { CUSTOM_FIELD_MODEL } from "./registry.ts";

/**
 * Definitions whose `object_types` name `model`, in the custom-field list's default order (the
 * model's `ordering`: group name, a blank one first, then weight, then name; docs/netbox-rules.md),
 * sorted as that list sorts them; read once per request.
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
  const records = await core.store.getMany(CUSTOM_FIELD_MODEL, ids);
  await sortByDefaultOrdering(core, core.registry.definition(CUSTOM_FIELD_MODEL), records);
  const defs = records as unknown as CustomFieldDef[];
  cache?.customFields.set(model, defs);
  return defs;
}
