/**
 * Direct changes to stored fields (no validation, no hooks; index entries kept right): the
 * engine's own bookkeeping, and detaching a reference whose target goes away.
 */
import type { StoredObject } from "../../../storage/ports.ts";
import type { EngineCore } from "./core.ts";
import { stateOf } from "./index_state.ts";
import { TAGS_FIELD } from "./registry.ts";

export async function patchStored(
  core: EngineCore,
  model: string,
  id: number,
  changes: Record<string, unknown> | ((current: StoredObject) => Record<string, unknown>),
): Promise<StoredObject | null> {
  const def = core.registry.definition(model);
  for (let attempt = 0; attempt < 50; attempt++) {
    const current = await core.store.get(model, id);
    if (!current) return null;
    const delta = typeof changes === "function" ? changes(current.record) : changes;
    const next: StoredObject = { ...current.record, ...delta, id };
    next.last_updated = new Date(core.now()).toISOString();
    const ok = await core.store.commit([{
      model,
      id,
      prev: {
        record: current.record,
        ...stateOf(core.store, def, current.record),
        version: current.version,
      },
      next: { record: next, ...stateOf(core.store, def, next) },
    }]);
    if (ok.ok) return next;
    await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(20, 2 ** attempt)));
  }
  throw new Error(`could not update ${model} ${id}: storage contention`);
}

/** Removes one reference from a stored record (FK or generic FK to null, m2m member out). */
export async function dropRef(
  core: EngineCore,
  model: string,
  id: number,
  field: string,
  targetId: number,
): Promise<void> {
  const f = field === "tags" ? TAGS_FIELD : core.registry.definition(model).fields[field];
  if (!f) return;
  await patchStored(core, model, id, (cur) => {
    if (f.type === "m2m") {
      const list = Array.isArray(cur[field]) ? cur[field] as number[] : [];
      return { [field]: list.filter((x) => x !== targetId) };
    }
    if (f.type === "gfk") {
      return cur[f.idField!] === targetId ? { [f.typeField!]: null, [f.idField!]: null } : {};
    }
    return cur[field] === targetId ? { [field]: null } : {};
  });
}
