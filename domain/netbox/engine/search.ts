/** `?q=`: a case-insensitive substring search over a model's search fields. */
import type { ModelDef } from "../types.ts";
import type { Condition } from "./query.ts";

export function searchCondition(def: ModelDef, q: string): Condition {
  const needle = q.toLowerCase();
  const fields = def.search ?? ["name"];
  return {
    kind: "predicate",
    test: (r) =>
      fields.some((f) => {
        const v = r[f];
        if (Array.isArray(v)) return v.some((x) => String(x).toLowerCase().includes(needle));
        return v !== null && v !== undefined && String(v).toLowerCase().includes(needle);
      }),
  };
}
