/** The custom-field definitions that apply to a model (extras.customfield by object type). */
import type { CustomFieldDef } from "../custom_fields.ts";
import type { EngineCore, RequestCache } from "./core.ts";
import { CUSTOM_FIELD_MODEL } from "./registry.ts";

/** Definitions whose `object_types` name `model`, by weight then name; read once per request. */
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
  defs.sort((a, b) => (a.weight ?? 100) - (b.weight ?? 100) || a.name.localeCompare(b.name));
  cache?.customFields.set(model, defs);
  return defs;
}
