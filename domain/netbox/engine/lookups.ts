/**
 * Matching records against parsed conditions: NetBox's lookups (`exact`, `n`, `ic`, `isw`,
 * `gte`, `isnull`, `regex`, ...) on scalars, lists, custom fields and relations.
 */
import type { StoredObject } from "../../../storage/ports.ts";
import { parseBool } from "../fields.ts";
import {
  PATTERN_BUDGET_MESSAGE,
  userPattern,
  WorkBudgetExceeded,
  type WorkMeter,
} from "../user_patterns.ts";
import type { FieldDef } from "../types.ts";
import { type Condition, parseTimestamp, QueryError, splitList } from "./query.ts";

/** Lookups that compare a date/time field as instants (the rest read its ISO text). */
const TIMESTAMP_LOOKUPS = new Set(["exact", "in", "n", "gt", "gte", "lt", "lte"]);

/**
 * A stored value against a filter value for `__gt` and its kin: the caller compares numbers and
 * passes over null, so what reaches here is text (a date custom field's `2026-05-02`, a name):
 * case-insensitively with digit runs as numbers, then by code points.
 */
function naturalCompare(value: unknown, filter: string): number {
  const text = String(value);
  if (text === filter) return 0;
  return text.localeCompare(filter, "en", { numeric: true, sensitivity: "base" }) ||
    (text < filter ? -1 : 1);
}

/**
 * The test a record must pass for one condition. A pattern condition that runs out of the
 * request's budget stops the whole list with a QueryError naming its parameter (a 400).
 */
export function predicate(cond: Condition): (r: StoredObject) => boolean {
  const test = bareTest(cond);
  if (!("meter" in cond) || !cond.meter) return test;
  const param = cond.param;
  return (r) => {
    try {
      return test(r);
    } catch (error) {
      if (error instanceof WorkBudgetExceeded) {
        throw new QueryError({ [param]: [PATTERN_BUDGET_MESSAGE] });
      }
      throw error;
    }
  };
}

/** Whether a condition matches records by a user pattern (run those after the cheap ones). */
export function isPatternCondition(cond: Condition): boolean {
  return "meter" in cond && cond.meter !== undefined;
}

function bareTest(cond: Condition): (r: StoredObject) => boolean {
  switch (cond.kind) {
    case "ids":
      return (r) => cond.ids.has(r.id);
    case "predicate":
      return cond.test;
    case "id":
      return (r) => matchScalar({ type: "int" }, r.id, cond.lookup, cond.values, cond.meter);
    case "field":
      return (r) => matchScalar(cond.def, r[cond.field], cond.lookup, cond.values, cond.meter);
    case "cf":
      return (r) =>
        matchScalar(
          { type: "string" },
          (r.custom_fields as Record<string, unknown> | undefined)?.[cond.name] ?? null,
          cond.lookup,
          cond.values,
          cond.meter,
        );
    case "rel":
      return (r) => {
        const raw = r[cond.field];
        const members: number[] = cond.def.type === "m2m"
          ? (Array.isArray(raw) ? raw as number[] : [])
          : (raw === null || raw === undefined ? [] : [raw as number]);
        if (cond.lookup === "isnull" || cond.lookup === "empty") {
          const wantNull = cond.ids[0] === 1;
          return wantNull === (members.length === 0);
        }
        const hit = (id: number | null) =>
          id === null ? members.length === 0 : members.includes(id);
        if (cond.lookup === "n") return !cond.ids.some(hit);
        return cond.all ? cond.ids.every(hit) : cond.ids.some(hit);
      };
  }
}

export function matchScalar(
  def: FieldDef,
  value: unknown,
  lookup: string,
  rawValues: string[],
  meter?: WorkMeter,
): boolean {
  if (lookup === "isnull") {
    const want = parseBool(rawValues[0]) !== false;
    return want === (value === null || value === undefined);
  }
  if (lookup === "empty") {
    const want = parseBool(rawValues[0]) !== false;
    const empty = value === null || value === undefined || value === "" ||
      (Array.isArray(value) && value.length === 0);
    return want === empty;
  }
  let values = lookup === "in" ? splitList(rawValues) : rawValues;
  if (def.normalize && (lookup === "exact" || lookup === "in" || lookup === "n")) {
    values = values.map((v) => (v === "null" ? v : def.normalize!(v)));
  }
  const items = Array.isArray(value) ? value : [value];
  const text = (v: unknown) => v === null || v === undefined ? "" : String(v).toLowerCase();
  if (def.type === "datetime" && TIMESTAMP_LOOKUPS.has(lookup)) {
    return matchTimestamp(items, lookup === "in" ? "exact" : lookup, values);
  }
  const eq = (v: unknown, f: string) => {
    if (v === null || v === undefined) return f === "null";
    if (def.type === "bool") return parseBool(f) === v;
    if (typeof v === "number") return Number(f) === v;
    return String(v) === f;
  };
  const any = (fn: (v: unknown, f: string) => boolean) =>
    values.some((f) => items.some((v) => fn(v, f)));
  switch (lookup) {
    case "exact":
    case "in":
      return any(eq);
    case "n":
      return !any(eq);
    case "ic":
      return any((v, f) => text(v).includes(f.toLowerCase()));
    case "nic":
      return !any((v, f) => text(v).includes(f.toLowerCase()));
    case "ie":
      return any((v, f) => text(v) === f.toLowerCase());
    case "nie":
      return !any((v, f) => text(v) === f.toLowerCase());
    case "isw":
      return any((v, f) => text(v).startsWith(f.toLowerCase()));
    case "nisw":
      return !any((v, f) => text(v).startsWith(f.toLowerCase()));
    case "iew":
      return any((v, f) => text(v).endsWith(f.toLowerCase()));
    case "niew":
      return !any((v, f) => text(v).endsWith(f.toLowerCase()));
    case "regex":
    case "iregex":
      return any((v, f) => {
        const pattern = userPattern(f, lookup === "iregex");
        return pattern.ok && pattern.test(String(v ?? ""), meter);
      });
    case "gt":
    case "gte":
    case "lt":
    case "lte":
      return any((v, f) => {
        if (v === null || v === undefined) return false;
        const c = typeof v === "number" ? v - Number(f) : naturalCompare(v, f);
        return lookup === "gt"
          ? c > 0
          : lookup === "gte"
          ? c >= 0
          : lookup === "lt"
          ? c < 0
          : c <= 0;
      });
    default:
      return false; // never reached: each lookup query.ts accepts (LOOKUPS, exact) has its case
  }
}

/**
 * A date/time field against filter values as instants (the stored ISO text and a value such as
 * `2026-05-01` or `2026-05-01 10:00:00+02:00` compared as times, not as text). Several values of
 * one lookup: any matches, and `__n` excludes every one.
 */
function matchTimestamp(items: unknown[], lookup: string, values: string[]): boolean {
  const at = items.map((v) => typeof v === "string" ? Date.parse(v) : NaN).filter(Number.isFinite);
  const bounds = values.map(parseTimestamp).filter((t): t is number => t !== null);
  const hit = (test: (t: number, b: number) => boolean) =>
    bounds.some((b) => at.some((t) => test(t, b)));
  switch (lookup) {
    case "exact":
      return hit((t, b) => t === b);
    case "n":
      return !hit((t, b) => t === b);
    case "gt":
      return hit((t, b) => t > b);
    case "gte":
      return hit((t, b) => t >= b);
    case "lt":
      return hit((t, b) => t < b);
    case "lte":
      return hit((t, b) => t <= b);
    default:
      return false; // never reached: the caller passes TIMESTAMP_LOOKUPS only
  }
}
