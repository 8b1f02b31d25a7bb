/** `?q=`: a case-insensitive substring search over a model's search fields (and FK names). */
import type { ModelDef, StoredObject } from "../types.ts";
import { cachedRecords, type EngineCore, readUncached, type RequestCache } from "./core.ts";
import type { Condition } from "./query.ts";

/**
 * The search as a condition. A search path across a foreign key (`virtual_machine__name`, as the
 * plugin's replications declare) is matched on the related objects the searched records name,
 * read when the records are known (the condition's `prepare`, batched, into the request's cache,
 * which the answer's nested forms reuse), never on the whole related model: a `?q=` on
 * replications read every VM of the inventory, 100,000 of them, per request
 * (SECURITY.md, "Limits": a search's cost).
 */
export function searchCondition(
  core: EngineCore,
  def: ModelDef,
  q: string,
  cache: RequestCache,
): Condition {
  const needle = q.toLowerCase();
  const direct: string[] = [];
  const related: Array<{ field: string; sub: string; model: string; matched: Set<number> }> = [];
  for (const path of def.search ?? ["name"]) {
    const [field, sub] = path.split("__");
    const f = def.fields[field];
    if (sub && f?.type === "fk" && f.model) {
      related.push({ field, sub, model: f.model, matched: new Set() });
    } else direct.push(field);
  }
  const contains = (v: unknown) =>
    v !== null && v !== undefined && String(v).toLowerCase().includes(needle);
  const directMatch = (r: StoredObject) =>
    direct.some((f) => {
      const v = r[f];
      return Array.isArray(v) ? v.some(contains) : contains(v);
    });
  return {
    kind: "predicate",
    prepare: async (records) => {
      for (const rel of related) {
        const ids = new Set<number>();
        for (const r of records) {
          const id = r[rel.field];
          if (typeof id === "number" && !directMatch(r)) ids.add(id);
        }
        await readUncached(core.store, cache, rel.model, ids);
        const known = cachedRecords(cache, rel.model);
        for (const id of ids) {
          const other = known.get(id);
          if (other && contains(other[rel.sub] ?? "")) rel.matched.add(id);
        }
      }
    },
    test: (r) =>
      directMatch(r) || related.some(({ field, matched }) => matched.has(r[field] as number)),
  };
}
