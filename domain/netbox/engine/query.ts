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
import { constraintName, type EngineCore, type RequestCache } from "./core.ts";
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
  | { kind: "predicate"; test: (r: StoredObject) => boolean }
  | { kind: "none" };

export function splitList(values: string[]): string[] {
  return values.flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v !== "");
}

export async function parseConditions(
  core: EngineCore,
  def: ModelDef,
  params: URLSearchParams,
  cache: RequestCache,
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
  for (const [param, values] of grouped) {
    const custom = def.filters?.[param];
    if (custom) {
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
      const cond = await condition(core, def, name, lookup, values, param, cache);
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

async function condition(
  core: EngineCore,
  def: ModelDef,
  name: string,
  lookup: string,
  values: string[],
  param: string,
  cache: RequestCache,
): Promise<Condition | null> {
  if (name === "id") {
    for (const v of lookup === "in" ? splitList(values) : values) {
      if (lookup !== "isnull" && lookup !== "empty" && !/^\d+$/.test(v.trim())) {
        throw new QueryError({ [param]: ["Enter a number."] });
      }
    }
    return { kind: "id", lookup, values, param };
  }
  if (name.startsWith("cf_") && def.customFields !== false) {
    return { kind: "cf", name: name.slice(3), lookup, values, param };
  }
  if (def.tags !== false && (name === "tag" || name === "tag_id")) {
    return relCondition(
      core,
      "tags",
      TAGS_FIELD,
      lookup,
      values,
      param,
      name === "tag_id",
      true,
      cache,
    );
  }
  const fieldDef = def.fields[name];
  if (
    fieldDef && !fieldDef.writeOnly && (!fieldDef.hidden || fieldDef.filter === true) &&
    !fieldDef.compute && fieldDef.filter !== false && fieldDef.type !== "gfk"
  ) {
    if (fieldDef.type === "fk" || fieldDef.type === "m2m") {
      return await relCondition(core, name, fieldDef, lookup, values, param, false, false, cache);
    }
    if (lookup !== "isnull" && lookup !== "empty") {
      checkFilterValues(fieldDef, lookup, values, param);
    }
    return { kind: "field", field: name, def: fieldDef, lookup, values, param };
  }
  if (name.endsWith("_id")) {
    const base = name.slice(0, -3);
    const rel = def.fields[base];
    if (
      rel && (rel.type === "fk" || rel.type === "m2m") && rel.filter !== false && !rel.compute
    ) {
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
      if (!/^\d+$/.test(v.trim()) || Number(v) > Number.MAX_SAFE_INTEGER) {
        throw new QueryError({
          [param]: [`Select a valid choice. ${v} is not one of the available choices.`],
        });
      }
      ids.push(Number(v));
      continue;
    }
    const found = await resolveNatural(core, def.model!, v, cache);
    if (found.length === 0 && !conjoined) {
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
    const existing = new Set((await core.store.getMany(def.model!, wanted)).map((r) => r.id));
    const missing = wanted.find((id) => !existing.has(id));
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
 * NetBox's TreeNodeMultipleChoiceFilter: a node matches itself and every node below it (its
 * `parent` chain). The tree is read level by level through the parent index.
 */
async function withDescendants(
  core: EngineCore,
  model: string,
  ids: (number | null)[],
): Promise<(number | null)[]> {
  const seen = new Set(ids.filter((id): id is number => typeof id === "number" && id > 0));
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
  return [...ids.filter((id) => typeof id !== "number" || id <= 0), ...seen];
}

/** Ids of `model` whose natural key (slug, else name) equals value; numbers also match ids. */
async function resolveNatural(
  core: EngineCore,
  model: string,
  value: string,
  _cache: RequestCache,
): Promise<number[]> {
  const def = core.registry.definition(model);
  const key = core.registry.naturalKey(def);
  const out = new Set<number>();
  if (key) {
    const single = def.unique?.find((u) => u.fields.length === 1 && u.fields[0] === key && !u.when);
    if (single) {
      const id = await core.store.idByUnique(model, constraintName(single), [
        single.ci ? value.toLowerCase() : value,
      ]);
      if (id !== null) out.add(id);
    } else if (def.fields[key]?.index) {
      for (const id of await core.store.idsByIndex(model, key, value)) out.add(id);
    } else {
      for (const r of await core.store.scan(model)) if (r[key] === value) out.add(r.id);
    }
  }
  if (/^\d+$/.test(value) && out.size === 0) {
    const id = Number(value);
    if (await core.store.get(model, id)) out.add(id);
  }
  return [...out];
}

/** Can `attr` select objects of `def` in a nested reference ({"name": ...}, {"type_id": 1})? */
export function isLookupAttr(def: ModelDef, attr: string): boolean {
  if (def.filters?.[attr]) return true;
  let name = attr;
  const parts = attr.split("__");
  if (parts.length > 1 && LOOKUPS.has(parts[parts.length - 1])) {
    parts.pop();
    name = parts.join("__");
  }
  if (name.endsWith("__id")) name = name.slice(0, -4) + "_id";
  if (name === "id") return true;
  if (name.startsWith("cf_") && def.customFields !== false) return true;
  if (def.tags !== false && (name === "tag" || name === "tag_id")) return true;
  const usable = (f: FieldDef | undefined) =>
    f !== undefined && !f.writeOnly && !f.hidden && !f.compute && f.type !== "gfk" &&
    f.filter !== false;
  if (usable(def.fields[name])) return true;
  if (name.endsWith("_id")) {
    const rel = def.fields[name.slice(0, -3)];
    return usable(rel) && (rel!.type === "fk" || rel!.type === "m2m");
  }
  return false;
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
