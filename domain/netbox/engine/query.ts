/**
 * NetBox filter parsing: query parameters (`name__ic=web`, `cluster_id=3`, `tag=prod`,
 * `cf_owner=x`, custom filters) become conditions; bad values are a QueryError listing every
 * offending parameter. Matching the conditions is lookups.ts; choosing records, paging.ts.
 */
import {
  MAX_PATTERN_FILTERS,
  PATTERN_COUNT_MESSAGE,
  patternMeter,
  userPatternProblem,
  type WorkMeter,
} from "../user_patterns.ts";
import type { IndexValue, StoredObject } from "../../../storage/ports.ts";
import { parseBool } from "../fields.ts";
import type { FieldDef, FieldErrors, ModelDef } from "../types.ts";
import {
  cachedRecords,
  constraintName,
  type EngineCore,
  readUncached,
  type RequestCache,
} from "./core.ts";
import { TAGS_FIELD } from "./registry.ts";

/** List parameters that are not filters. */
const RESERVED_PARAMS = new Set([
  "limit",
  "offset",
  "brief",
  "fields",
  "omit",
  "ordering",
  "q",
  "format",
  "exclude",
  "include",
  "brief_mode",
]);

/** Lookup suffixes (`__ic`, `__gte`, ...); a parameter without one is an exact match. */
export const LOOKUPS = new Set([
  "n",
  "ic",
  "nic",
  "ie",
  "nie",
  "isw",
  "nisw",
  "iew",
  "niew",
  "isnull",
  "empty",
  "in",
  "gt",
  "gte",
  "lt",
  "lte",
  "regex",
  "iregex",
  "any",
]);

export class QueryError extends Error {
  constructor(readonly errors: FieldErrors) {
    super("invalid query");
  }
}

/**
 * `meter`: the request's pattern budget, on `__regex` / `__iregex` conditions (one shared by
 * all of them; see user_patterns.ts).
 */
export type Condition =
  | { kind: "id"; lookup: string; values: string[]; param: string; meter?: WorkMeter }
  | {
    kind: "field";
    field: string;
    def: FieldDef;
    lookup: string;
    values: string[];
    param: string;
    meter?: WorkMeter;
  }
  | {
    kind: "rel";
    field: string;
    def: FieldDef;
    lookup: string;
    ids: (number | null)[];
    all: boolean;
  }
  | { kind: "cf"; name: string; lookup: string; values: string[]; param: string; meter?: WorkMeter }
  | { kind: "ids"; ids: Set<number> }
  | {
    kind: "predicate";
    test: (r: StoredObject) => boolean;
    /**
     * Run on the records left by the other conditions before `test` sees them: reads what the
     * test needs of other models for those records only (a search across a foreign key).
     */
    prepare?: (records: readonly StoredObject[]) => Promise<void>;
  };

export function splitList(values: string[]): string[] {
  return values.flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v !== "");
}

/**
 * Where the filter values come from. `query`: a list's URL, read as NetBox's filter forms read
 * it (docs/api-behaviour.md, "Inventory: filters"): an empty value is dropped, a filter left
 * with none filters nothing, text values lose surrounding blanks. Without it (the engine's own
 * look-ups: nested references, hooks) every value counts as given: `{"serial": ""}` asks for
 * an empty serial.
 */
export interface FilterSource {
  query?: boolean;
}

/**
 * The lookups NetBox 4.6's filter sets give each kind of filter (its char, numeric and negation
 * lookup maps): a boolean filter has none, a reference only `__n`. Another lookup on a known
 * filter names no filter of NetBox's, which ignores it as any unknown parameter, and so does a
 * list's URL here (`?enabled__gte=true` lists everything). `in` and `isnull` are the inventory's
 * own, on every kind (docs/api-behaviour.md, "Inventory: filters"). Tags also take `any` (any of
 * the tags named, where the plain filter asks for all of them).
 */
type FilterKind = FieldDef["type"] | "id" | "tag";
const CHAR_LOOKUPS = ["n", "ic", "nic", "iew", "niew", "isw", "nisw", "ie", "nie", "empty"];
const URL_LOOKUPS: Partial<Record<FilterKind, ReadonlySet<string>>> = {
  string: new Set([...CHAR_LOOKUPS, "regex", "iregex", "exact", "in", "isnull"]),
  choice: new Set([...CHAR_LOOKUPS, "regex", "iregex", "exact", "in", "isnull"]),
  int: new Set(["n", "lt", "lte", "gt", "gte", "empty", "exact", "in", "isnull"]),
  float: new Set(["n", "lt", "lte", "gt", "gte", "empty", "exact", "in", "isnull"]),
  id: new Set(["n", "lt", "lte", "gt", "gte", "empty", "exact", "in", "isnull"]),
  fk: new Set(["n", "exact", "in", "isnull"]),
  m2m: new Set(["n", "exact", "in", "isnull"]),
  tag: new Set(["n", "any", "exact", "in", "isnull"]),
  bool: new Set(["exact", "in", "isnull"]),
};

/** Whether a list's URL may use `lookup` on a filter of this kind (else it is ignored). */
function offered(kind: FilterKind, lookup: string, source: FilterSource): boolean {
  return !source.query || (URL_LOOKUPS[kind]?.has(lookup) ?? true);
}

const TIMESTAMPS = new Set(["created", "last_updated"]);
const TIMESTAMP_LOOKUPS = new Set(["exact", "n", "gt", "gte", "lt", "lte"]);
const TIMESTAMP_FIELD: FieldDef = { type: "datetime" };
const DATETIME_MESSAGE = "Enter a valid date/time.";
const DATETIME =
  /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?))?(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * A date/time as Django's DateTimeField reads a filter value (a date alone is its midnight; no
 * zone is UTC, the inventory's time zone), in epoch milliseconds; null when it is none.
 */
export function parseTimestamp(text: string): number | null {
  const m = DATETIME.exec(text.trim());
  if (!m) return null;
  const zone = m[3] === undefined
    ? "Z"
    : m[3].length === 5
    ? `${m[3].slice(0, 3)}:${m[3].slice(3)}`
    : m[3];
  const t = Date.parse(`${m[1]}T${m[2] ?? "00:00"}${zone}`);
  return Number.isFinite(t) ? t : null;
}

/** Django's IntegerField: digits, a sign, blanks around, and a `.0` tail ("3.0" is 3). */
const WHOLE_NUMBER = /^\s*[-+]?\d+(\.0*)?\s*$/;
const WHOLE_NUMBER_MESSAGE = "Enter a whole number.";

/** Django's ModelMultipleChoiceField on an id that is no number (an empty one included). */
export function notAValidValue(value: string): string {
  return `\u201c${value}\u201d is not a valid value.`;
}

export async function parseConditions(
  core: EngineCore,
  def: ModelDef,
  params: URLSearchParams,
  cache: RequestCache,
  source: FilterSource = {},
): Promise<Condition[]> {
  const conditions: Condition[] = [];
  const errors: FieldErrors = {};
  const grouped = new Map<string, string[]>();
  const meter = patternMeter();
  let patternValues = 0;
  for (const [k, v] of params) {
    if (RESERVED_PARAMS.has(k)) continue;
    const list = grouped.get(k) ?? [];
    list.push(v);
    grouped.set(k, list);
  }
  for (const [param, given] of grouped) {
    const custom = def.filters?.[param];
    if (custom) {
      const values = source.query && !custom.keepsEmpty ? given.filter((v) => v !== "") : given;
      if (values.length === 0) continue;
      const result = await custom(values, core.api);
      conditions.push(
        "ids" in result
          ? { kind: "ids", ids: result.ids }
          : { kind: "predicate", test: result.predicate },
      );
      continue;
    }
    let name = param;
    let lookup = "exact";
    const parts = param.split("__");
    if (parts.length > 1 && LOOKUPS.has(parts[parts.length - 1])) {
      lookup = parts.pop()!;
      name = parts.join("__");
    }
    // "allowed_tenants__id" is the same as "allowed_tenants_id".
    if (name.endsWith("__id")) name = name.slice(0, -4) + "_id";
    let values = given;
    if (lookup === "isnull" || lookup === "empty") {
      // A BooleanFilter: it reads the last value given, and one that is no boolean (an empty
      // one too) filters nothing.
      const last = given[given.length - 1];
      if (parseBool(last) === undefined) continue;
      values = [last];
    }
    const isPattern = lookup === "regex" || lookup === "iregex";
    if (isPattern) {
      patternValues += values.length;
      if (patternValues > MAX_PATTERN_FILTERS) {
        errors[param] = [PATTERN_COUNT_MESSAGE];
        continue;
      }
      const problems = values.map(userPatternProblem).filter((p): p is string => p !== null);
      if (problems.length) {
        errors[param] = problems;
        continue;
      }
    }
    try {
      const cond = await condition(core, def, name, lookup, values, param, cache, source);
      if (
        cond && isPattern && (cond.kind === "id" || cond.kind === "field" || cond.kind === "cf")
      ) {
        cond.meter = meter;
      }
      if (cond) conditions.push(cond);
    } catch (error) {
      if (error instanceof QueryError) Object.assign(errors, error.errors);
      else throw error;
    }
  }
  if (Object.keys(errors).length > 0) throw new QueryError(errors);
  return conditions;
}

/**
 * A query's values as NetBox's multi-value filters read them: empty ones dropped (an `__in`
 * list of nothing but commas is empty too). Null when nothing is left: no filter at all.
 * `isnull`/`empty` values arrive here as the one last value, a boolean (parseConditions), so
 * they pass unchanged.
 */
function givenValues(lookup: string, values: string[], source: FilterSource): string[] | null {
  if (!source.query) return values;
  const kept = values.filter((v) => v !== "");
  if (kept.length === 0 || (lookup === "in" && splitList(kept).length === 0)) return null;
  return kept;
}

async function condition(
  core: EngineCore,
  def: ModelDef,
  name: string,
  lookup: string,
  given: string[],
  param: string,
  cache: RequestCache,
  source: FilterSource,
): Promise<Condition | null> {
  // Only the tag filters take `any` (NetBox's TagFilter): on any other it names no filter.
  if (lookup === "any" && name !== "tag" && name !== "tag_id") return null;
  if (name === "id") {
    if (!offered("id", lookup, source)) return null;
    const values = givenValues(lookup, given, source);
    if (values === null) return null;
    for (const v of lookup === "in" ? splitList(values) : values) {
      if (lookup !== "isnull" && lookup !== "empty" && !WHOLE_NUMBER.test(v)) {
        throw new QueryError({ [param]: [WHOLE_NUMBER_MESSAGE] });
      }
    }
    return { kind: "id", lookup, values, param };
  }
  if (name.startsWith("cf_") && def.customFields !== false) {
    const values = givenValues(lookup, given, source);
    if (values === null) return null;
    return { kind: "cf", name: name.slice(3), lookup, values, param };
  }
  if (TIMESTAMPS.has(name) && def.timestamps !== false && def.fields[name] === undefined) {
    // NetBox's MultiValueDateTimeFilter on every model's created / last_updated: exact, `__n`
    // and the comparisons; other lookups are no filter of its (ignored, as unknown filters).
    if (!TIMESTAMP_LOOKUPS.has(lookup)) return null;
    const values = givenValues(lookup, given, source);
    if (values === null) return null;
    if (values.some((v) => parseTimestamp(v) === null)) {
      throw new QueryError({ [param]: [DATETIME_MESSAGE] });
    }
    return { kind: "field", field: name, def: TIMESTAMP_FIELD, lookup, values, param };
  }
  const values = given;
  if (def.tags !== false && (name === "tag" || name === "tag_id")) {
    if (!offered("tag", lookup, source)) return null;
    // `tag=a&tag=b` asks for both tags; `tag__any=a&tag__any=b` for either (NetBox's TagFilter).
    return relCondition(
      core,
      "tags",
      TAGS_FIELD,
      lookup === "any" ? "exact" : lookup,
      values,
      param,
      name === "tag_id",
      lookup !== "any",
      cache,
    );
  }
  const via = def.through?.[name] ??
    (name.endsWith("_id") ? def.through?.[name.slice(0, -3)] : undefined);
  if (via) {
    const byId = def.through?.[name] === undefined;
    return await throughCondition(core, def, via, lookup, values, param, byId, cache);
  }
  const fieldDef = def.fields[name];
  if (
    fieldDef && !fieldDef.writeOnly && (!fieldDef.hidden || fieldDef.filter === true) &&
    !fieldDef.compute && fieldDef.filter !== false && fieldDef.type !== "gfk"
  ) {
    if (!offered(fieldDef.type, lookup, source)) return null;
    if (fieldDef.type === "fk" || fieldDef.type === "m2m") {
      return await relCondition(core, name, fieldDef, lookup, values, param, false, false, cache);
    }
    // A choice filter keeps an empty value, to refuse it as NetBox's MultipleChoiceFilter does.
    const kept = fieldDef.type === "choice" ? values : givenValues(lookup, values, source);
    if (kept === null) return null;
    // Django's CharField strips what it is given (" web " finds "web"; " " finds "").
    const typed = source.query && fieldDef.type === "string" ? kept.map((v) => v.trim()) : kept;
    if (lookup !== "isnull" && lookup !== "empty") {
      checkFilterValues(fieldDef, lookup, typed, param);
    }
    return { kind: "field", field: name, def: fieldDef, lookup, values: typed, param };
  }
  if (name.endsWith("_id")) {
    const base = name.slice(0, -3);
    const rel = def.fields[base];
    if (
      rel && (rel.type === "fk" || rel.type === "m2m") && rel.filter !== false && !rel.compute
    ) {
      if (!offered(rel.type, lookup, source)) return null;
      return relCondition(core, base, rel, lookup, values, param, true, false, cache);
    }
  }
  return null; // unknown filters are ignored, as NetBox does
}

function checkFilterValues(def: FieldDef, lookup: string, values: string[], param: string): void {
  const list = lookup === "in" ? splitList(values) : values;
  if (def.type === "int" || def.type === "float") {
    if (
      ["ic", "nic", "isw", "nisw", "iew", "niew", "ie", "nie", "regex", "iregex"].includes(lookup)
    ) return;
    for (const v of list) {
      // NetBox's integer filters are Django IntegerFields; decimals and floats take any number.
      if (def.type === "int" && !WHOLE_NUMBER.test(v)) {
        throw new QueryError({ [param]: [WHOLE_NUMBER_MESSAGE] });
      }
      if (!Number.isFinite(Number(v)) || v.trim() === "") {
        throw new QueryError({ [param]: ["Enter a number."] });
      }
    }
  } else if (def.type === "bool") {
    for (const v of list) {
      if (parseBool(v) === undefined) {
        throw new QueryError({ [param]: ["Select a valid choice."] });
      }
    }
  } else if (def.type === "choice" && (lookup === "exact" || lookup === "n" || lookup === "in")) {
    for (const v of list) {
      if (!def.choices?.some(([c]) => c === v)) {
        throw new QueryError({
          [param]: [`Select a valid choice. ${v} is not one of the available choices.`],
        });
      }
    }
  }
}

async function relCondition(
  core: EngineCore,
  field: string,
  def: FieldDef,
  lookup: string,
  values: string[],
  param: string,
  byId: boolean,
  conjoined: boolean,
  cache: RequestCache,
): Promise<Condition> {
  if (lookup === "isnull" || lookup === "empty") {
    return {
      kind: "rel",
      field,
      def,
      lookup,
      ids: values.map((v) => parseBool(v) === false ? 0 : 1),
      all: false,
    };
  }
  const list = lookup === "in" ? splitList(values) : values;
  const ids: (number | null)[] = [];
  for (const v of list) {
    if (v === "null") {
      ids.push(null);
      continue;
    }
    if (byId) {
      // An empty id is refused too: NetBox's model filters never drop a value.
      if (!/^\d+$/.test(v.trim())) throw new QueryError({ [param]: [notAValidValue(v)] });
      if (Number(v) > Number.MAX_SAFE_INTEGER) {
        throw new QueryError({
          [param]: [`Select a valid choice. ${v} is not one of the available choices.`],
        });
      }
      ids.push(Number(v));
      continue;
    }
    const found = v === "" ? [] : await resolveNatural(core, def, v, cache);
    if (found.length === 0 && (!conjoined || v === "")) {
      throw new QueryError({
        [param]: [`Select a valid choice. ${v} is not one of the available choices.`],
      });
    }
    if (found.length === 0) ids.push(-1);
    ids.push(...found);
  }
  if (byId) {
    // As NetBox's ModelMultipleChoiceFilter: an id that names no object is an invalid query.
    const wanted = [...new Set(ids.filter((id): id is number => typeof id === "number"))];
    // Into the request's cache: a list's answer nests these very objects (an interface's VM for
    // `virtual_machine_id=`), and its rendering takes them from there instead of reading them
    // again (docs/sync.md, "Re-runs").
    await readUncached(core.store, cache, def.model!, wanted);
    const known = cachedRecords(cache, def.model!);
    const missing = wanted.find((id) => !known.get(id));
    if (missing !== undefined) {
      throw new QueryError({
        [param]: [`Select a valid choice. ${missing} is not one of the available choices.`],
      });
    }
  }
  const mode = lookup === "n" ? "n" : "exact";
  const matched = def.tree ? await withDescendants(core, def.model!, ids) : ids;
  return { kind: "rel", field, def, lookup: mode, ids: matched, all: conjoined && lookup !== "n" };
}

/**
 * A filter across references (ModelDef.through): the nodes named, with every node below
 * them, then back along the path to the records that reach one. NetBox's tree filters take
 * no lookup but `__n`: others filter nothing, as unknown filters do.
 */
async function throughCondition(
  core: EngineCore,
  def: ModelDef,
  path: readonly string[],
  lookup: string,
  values: string[],
  param: string,
  byId: boolean,
  cache: RequestCache,
): Promise<Condition | null> {
  if (lookup !== "exact" && lookup !== "n") return null;
  const hops: Array<{ model: string; field: string }> = [];
  let at = def;
  for (const field of path) {
    hops.push({ model: core.registry.nameOf(at), field });
    at = core.registry.definition(at.fields[field].model!);
  }
  const end = hops[hops.length - 1];
  const endDef = core.registry.definition(end.model).fields[end.field];
  const named = await relCondition(
    core,
    end.field,
    { ...endDef, tree: true },
    "exact",
    values,
    param,
    byId,
    false,
    cache,
  ) as Extract<Condition, { kind: "rel" }>;
  let ids = named.ids;
  for (const hop of hops.reverse()) {
    const found = new Set<number>();
    const nodes = ids.filter((id): id is number => id !== null);
    for (const list of await core.store.idsByIndexMany(hop.model, hop.field, nodes)) {
      for (const id of list) found.add(id);
    }
    // `null` asks for no node at the end: a record whose reference anywhere along the path
    // is empty (the SQL join's null) matches.
    const none = ids.includes(null);
    if (none) {
      for (const r of await core.store.scan(hop.model)) {
        if (r[hop.field] === null || r[hop.field] === undefined) found.add(r.id);
      }
    }
    ids = none ? [...found, null] : [...found];
  }
  const matched = new Set(ids.filter((id): id is number => id !== null));
  return lookup === "n"
    ? { kind: "predicate", test: (r) => !matched.has(r.id) }
    : { kind: "ids", ids: matched };
}

/**
 * NetBox's TreeNodeMultipleChoiceFilter: a node matches itself and every node below it (its
 * `parent` chain). The tree is read level by level through the parent index.
 */
async function withDescendants(
  core: EngineCore,
  model: string,
  ids: (number | null)[],
): Promise<(number | null)[]> {
  // The ids name existing nodes (relCondition refused any other; -1, an unknown name, only
  // comes from a conjoined tag filter, which is no tree): null asks for no node.
  const seen = new Set(ids.filter((id): id is number => id !== null));
  let level = [...seen];
  while (level.length > 0) {
    const next: number[] = [];
    for (const id of level) {
      for (const child of await core.store.idsByIndex(model, "parent", id)) {
        if (!seen.has(child)) {
          seen.add(child);
          next.push(child);
        }
      }
    }
    level = next;
  }
  return [...ids.filter((id) => id === null), ...seen];
}

/**
 * Ids of the objects `ref` points to whose natural key (slug, else name, or the model's own: a
 * VRF's `rd`) equals value, as NetBox's `to_field_name`: a number is a slug like any other, not
 * an id (the `_id` filter takes ids), unless the field says so (FieldDef.filterTakesIds) or the
 * model has no natural key.
 */
async function resolveNatural(
  core: EngineCore,
  ref: FieldDef,
  value: string,
  _cache: RequestCache,
): Promise<number[]> {
  const model = ref.model!;
  const def = core.registry.definition(model);
  const key = core.registry.naturalKey(def);
  const out = new Set<number>();
  if (key) {
    // The value as the key is stored (an IP's canonical CIDR, a MAC in capitals), as NetBox's
    // model field reads a filter value before comparing.
    const normalize = def.fields[key]?.normalize;
    if (normalize) value = normalize(value);
    const single = def.unique?.find((u) => u.fields.length === 1 && u.fields[0] === key && !u.when);
    if (single) {
      const id = await core.store.idByUnique(model, constraintName(single), [
        single.ci ? value.toLowerCase() : value,
      ]);
      // The index folds case (no two may differ only by it), but the filter compares exactly,
      // as NetBox's `to_field_name` does: `?cluster_type=PVE` names no type whose slug is "pve".
      const exact = id !== null &&
        (!single.ci || (await core.store.get(model, id))?.record[key] === value);
      if (exact) out.add(id);
    } else if (def.fields[key]?.index) {
      for (const id of await core.store.idsByIndex(model, key, value)) out.add(id);
    } else {
      for (const r of await core.store.scan(model)) if (r[key] === value) out.add(r.id);
    }
  }
  if ((!key || ref.filterTakesIds) && out.size === 0 && /^\d+$/.test(value)) {
    const id = Number(value);
    if (await core.store.get(model, id)) out.add(id);
  }
  return [...out];
}

/**
 * Lookups a nested reference may use ({"vid__gte": 10}). NetBox resolves a reference's
 * attributes with Django's ORM, not its filters: the ORM knows these (with the same meaning
 * here), not the filters' own (`__ic`, `__n`, `__ie`...).
 */
const ATTR_LOOKUPS = new Set(["gt", "gte", "lt", "lte", "isnull", "regex", "iregex", "empty"]);

/** The Django field class NetBox's model has for a field of this type (in the ORM's texts). */
const DJANGO_FIELDS: Partial<Record<FieldDef["type"], string>> = {
  string: "CharField",
  choice: "CharField",
  int: "IntegerField",
  float: "DecimalField",
  bool: "BooleanField",
  datetime: "DateTimeField",
  date: "DateField",
  json: "JSONField",
  list: "ArrayField",
};

/**
 * Why `attr` cannot select objects of `def` in a nested reference ({"name": ...},
 * {"type_id": 1}), in the ORM's words as NetBox answers them; null when it can. Only the
 * model's own fields, `id` and `<fk>_id` name something: NetBox's filter names (`tag`,
 * `tag_id`, `cf_<name>`, `q`, custom filters such as `site_id` on a cluster) do not.
 */
export function nestedAttrProblem(def: ModelDef, attr: string): string | null {
  let name = attr;
  let lookup: string | null = null;
  const parts = attr.split("__");
  if (parts.length > 1 && parts[parts.length - 1] !== "id") {
    lookup = parts.pop()!;
    name = parts.join("__");
  }
  if (name.endsWith("__id")) name = name.slice(0, -4) + "_id";
  const usable = (f: FieldDef | undefined) =>
    f !== undefined && !f.writeOnly && !f.hidden && !f.compute && f.type !== "gfk" &&
    f.filter !== false;
  const own = def.fields[name];
  const rel = name.endsWith("_id") ? def.fields[name.slice(0, -3)] : undefined;
  const known = name === "id" || usable(own) ||
    (usable(rel) && (rel!.type === "fk" || rel!.type === "m2m"));
  if (!known) {
    const choices = [
      "id",
      ...Object.entries(def.fields).filter(([, f]) => usable(f)).map(([k]) => k),
    ].sort();
    return `Cannot resolve keyword '${name}' into field. Choices are: ${choices.join(", ")}`;
  }
  if (lookup === null || ATTR_LOOKUPS.has(lookup)) return null;
  const field = name === "id" ? null : own ?? rel!;
  if (field && (field.type === "fk" || field.type === "m2m")) {
    return `Related Field got invalid lookup: ${lookup}`;
  }
  const cls = field ? DJANGO_FIELDS[field.type] ?? "Field" : "BigAutoField";
  return `Unsupported lookup '${lookup}' for ${cls} or join on the field not permitted.`;
}

/** A filter value as the field's value index holds it (undefined: not a valid value). */
export function typedFilterValue(def: FieldDef, value: string): IndexValue | undefined {
  switch (def.type) {
    case "int":
    case "float": {
      const n = Number(value);
      return Number.isFinite(n) ? n : undefined;
    }
    case "bool":
      return parseBool(value);
    default:
      return def.normalize ? def.normalize(value) : value;
  }
}
