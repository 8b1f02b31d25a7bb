/** `?q=`: a case-insensitive substring search over a model's search fields (and FK names). */
import type { ModelDef } from "../types.ts";
import type { EngineCore } from "./core.ts";
import type { Condition } from "./query.ts";

export async function searchCondition(
  core: EngineCore,
  def: ModelDef,
  q: string,
): Promise<Condition> {
  const needle = q.toLowerCase();
  const direct: string[] = [];
  const related: Array<{ field: string; ids: Set<number> }> = [];
  for (const path of def.search ?? ["name"]) {
    const [field, sub] = path.split("__");
    const f = def.fields[field];
    if (sub && f?.type === "fk" && f.model) {
      const ids = new Set<number>();
      for (const r of await core.store.scan(f.model)) {
        if (String(r[sub] ?? "").toLowerCase().includes(needle)) ids.add(r.id);
      }
      related.push({ field, ids });
    } else direct.push(field);
  }
  return {
    kind: "predicate",
    test: (r) =>
      direct.some((f) => {
        const v = r[f];
        if (Array.isArray(v)) return v.some((x) => String(x).toLowerCase().includes(needle));
        return v !== null && v !== undefined && String(v).toLowerCase().includes(needle);
      }) || related.some(({ field, ids }) => ids.has(r[field] as number)),
  };
}
