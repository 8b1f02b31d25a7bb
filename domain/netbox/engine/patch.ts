/**
 * Direct changes to stored fields (no validation, no hooks; index entries kept right): the
 * engine's own bookkeeping, and detaching a reference whose target goes away.
 */
import type { ObjectWrite, StoredObject } from "../../../storage/ports.ts";
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

/**
 * patchStored for many records of one model at once (fixed values per id): read together,
 * written in as few atomics as the store allows; a group that meets a concurrent change is
 * applied again one record at a time. Absent records are skipped; unchanged ones not written.
 */
export async function patchStoredMany(
  core: EngineCore,
  model: string,
  changes: ReadonlyMap<number, Record<string, unknown>>,
): Promise<void> {
  const def = core.registry.definition(model);
  const ids = [...changes.keys()];
  const current = await core.store.getVersioned(model, ids);
  const now = new Date(core.now()).toISOString();
  const writes: ObjectWrite[] = [];
  current.forEach((cur, i) => {
    if (!cur) return;
    const delta = changes.get(ids[i])!;
    if (Object.entries(delta).every(([k, v]) => cur.record[k] === v)) return;
    const next: StoredObject = { ...cur.record, ...delta, id: ids[i], last_updated: now };
    writes.push({
      model,
      id: ids[i],
      prev: { record: cur.record, ...stateOf(core.store, def, cur.record), version: cur.version },
      next: { record: next, ...stateOf(core.store, def, next) },
    });
  });
  for (const group of core.store.plan(writes)) {
    if ((await core.store.commit(group)).ok) continue;
    for (const w of group) await patchStored(core, model, w.id, changes.get(w.id)!);
  }
}

/** Removes one reference from a stored record (FK or generic FK to null, m2m member out). */
export async function dropRef(
  core: EngineCore,
  model: string,
  id: number,
  field: string,
  targetId: number,
): Promise<void> {
  // Callers name a field of the model (refsOf, the registry's referrers) or "tags".
  const f = field === "tags" ? TAGS_FIELD : core.registry.definition(model).fields[field]!;
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
