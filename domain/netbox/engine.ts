/**
 * The declarative NetBox-compatible model engine: validation, unique constraints, FKs with
 * PROTECT/CASCADE/SET_NULL, NetBox filters and lookups, `q`, ordering, paging, brief/nested
 * representations, custom fields, tags, hooks and bulk writes, over the ModelStore port.
 *
 * Register models with `engine.register(def)`; routes/inventory exposes every registered
 * model over REST. Plugin code uses the EngineApi methods (insert/update/patchStored/find).
 */
import type {
  IndexEntry,
  IndexValue,
  ModelStore,
  ObjectWrite,
  OrderedEntry,
  UniqueEntry,
} from "../../storage/ports.ts";
import type { Logger } from "../logger.ts";
import { coerce, defaultValue, MESSAGES, parseBool, parseRef, type RefInput } from "./fields.ts";
import {
  applyCustomFieldDefaults,
  type CustomFieldDef,
  renderCustomFields,
  validateCustomFields,
} from "./custom_fields.ts";
import type {
  AuthInfo,
  EngineApi,
  FieldDef,
  FieldErrors,
  HookContext,
  ModelDef,
  StoredObject,
  WriteResult,
} from "./types.ts";

export const MAX_PAGE_SIZE = 1000;
export const DEFAULT_PAGE_SIZE = 50;
/** Strings longer than this are not put in value indexes (key size); lookups then scan. */
const MAX_INDEXED_LENGTH = 400;
/** Stored records must fit one KV value (64 KiB) with room to spare. */
const MAX_RECORD_BYTES = 60_000;

export const TAG_MODEL = "extras.tag";
export const CUSTOM_FIELD_MODEL = "extras.customfield";

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

const LOOKUPS = new Set([
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

export interface ListQuery {
  /** Raw query parameters, repeated keys kept. */
  params: URLSearchParams;
}

export interface ListPage {
  count: number;
  records: StoredObject[];
  limit: number;
  offset: number;
}

export interface RenderOptions {
  /** Scheme + host, e.g. "http://127.0.0.1:8800"; URLs are `${origin}/api/${path}${id}/`. */
  origin: string;
  brief?: boolean;
  fields?: string[];
  omit?: string[];
}

export class QueryError extends Error {
  constructor(readonly errors: FieldErrors) {
    super("invalid query");
  }
}

type Condition =
  | { kind: "id"; lookup: string; values: string[]; param: string }
  | { kind: "field"; field: string; def: FieldDef; lookup: string; values: string[]; param: string }
  | {
    kind: "rel";
    field: string;
    def: FieldDef;
    lookup: string;
    ids: (number | null)[];
    all: boolean;
  }
  | { kind: "cf"; name: string; lookup: string; values: string[] }
  | { kind: "ids"; ids: Set<number> }
  | { kind: "predicate"; test: (r: StoredObject) => boolean }
  | { kind: "none" };

interface Relation {
  model: string;
  field: string;
  def: FieldDef;
}

interface Prepared {
  draft: StoredObject;
  ctx: HookContext;
}

interface RequestCache {
  records: Map<string, Map<number, StoredObject | null>>;
  customFields: Map<string, CustomFieldDef[]>;
}

function newCache(): RequestCache {
  return { records: new Map(), customFields: new Map() };
}

export interface EngineDeps {
  store: ModelStore;
  logger: Logger;
  now: () => number;
}

function isEmpty(value: unknown): boolean {
  return value === null || value === undefined || value === "";
}

function naturalCompare(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  return String(a).localeCompare(String(b), "en", { numeric: true, sensitivity: "base" }) ||
    (String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0);
}

/**
 * Sort key of a value, shared by in-memory sorting and the KV ordered index so both agree:
 * strings case-insensitive with digit runs zero-padded (natural order), null/empty first.
 */
export function sortKey(v: unknown): IndexValue {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") return Number.isFinite(v) ? v : 0;
  if (typeof v === "boolean") return v ? 1 : 0;
  const text = (typeof v === "string" ? v : JSON.stringify(v)).toLowerCase().slice(0, 200);
  // Bounded so the ordered-index key stays far below KV's 2 KiB key limit.
  return text.replace(/\d+/g, (d) => {
    const t = d.replace(/^0+(?=\d)/, "");
    return t.length >= 20 ? t : t.padStart(20, "0");
  }).slice(0, 300);
}

/** Compares sort keys in Deno KV's key order (strings before numbers). */
export function compareSortKeys(a: IndexValue, b: IndexValue): number {
  if (typeof a !== typeof b) return typeof a === "string" ? -1 : typeof b === "string" ? 1 : 0;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Upper bound of a record's size as Deno KV stores it (V8 serialization keeps Latin-1
 * strings at one byte per character and every other string at two).
 */
export function storedSize(value: unknown): number {
  const json = JSON.stringify(value) ?? "";
  // deno-lint-ignore no-control-regex
  return /[^\x00-\xff]/.test(json) ? json.length * 2 : json.length;
}

function splitList(values: string[]): string[] {
  return values.flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v !== "");
}

export class ModelEngine implements EngineApi {
  readonly #models = new Map<string, ModelDef>();
  readonly #byPath = new Map<string, ModelDef>();
  /** target model → fields elsewhere that point at it. */
  readonly #reverse = new Map<string, Relation[]>();
  readonly store: ModelStore;
  readonly logger: Logger;
  readonly now: () => number;

  constructor(deps: EngineDeps) {
    this.store = deps.store;
    this.logger = deps.logger;
    this.now = deps.now;
  }

  // ------------------------------------------------------------------ registry

  register(...defs: ModelDef[]): this {
    for (const def of defs) {
      const name = `${def.app}.${def.model}`;
      if (this.#models.has(name)) throw new Error(`model ${name} registered twice`);
      const path = def.path.replace(/^\/+/, "").replace(/\/?$/, "/");
      const normalized: ModelDef = { ...def, path };
      this.#models.set(name, normalized);
      this.#byPath.set(path, normalized);
      for (const [field, f] of Object.entries(def.fields)) {
        if ((f.type === "fk" || f.type === "m2m") && f.model && !f.compute) {
          const list = this.#reverse.get(f.model) ?? [];
          list.push({ model: name, field, def: f });
          this.#reverse.set(f.model, list);
        }
        if (f.type === "gfk") {
          if (f.models === "*") this.#wildcard.push({ model: name, field, def: f });
          else {
            for (const target of f.models ?? []) {
              const list = this.#reverse.get(target) ?? [];
              list.push({ model: name, field, def: f });
              this.#reverse.set(target, list);
            }
          }
        }
      }
      if (def.tags !== false) {
        const list = this.#reverse.get(TAG_MODEL) ?? [];
        list.push({ model: name, field: "tags", def: this.#tagsField });
        this.#reverse.set(TAG_MODEL, list);
      }
    }
    return this;
  }

  readonly #tagsField: FieldDef = { type: "m2m", model: TAG_MODEL };
  /** Generic FKs that may point at any model. */
  readonly #wildcard: Relation[] = [];

  models(): ModelDef[] {
    return [...this.#models.values()];
  }

  has(model: string): boolean {
    return this.#models.has(model);
  }

  definition(model: string): ModelDef {
    const def = this.#models.get(model);
    if (!def) throw new Error(`unknown model ${model}`);
    return def;
  }

  nameOf(def: ModelDef): string {
    return `${def.app}.${def.model}`;
  }

  /** The model served at an /api/ sub-path ("dcim/sites/"), if any. */
  byPath(path: string): ModelDef | undefined {
    return this.#byPath.get(path);
  }

  /** Fields as seen by the API, including the implicit tags and custom_fields. */
  fieldsOf(def: ModelDef): Array<[string, FieldDef]> {
    return Object.entries(def.fields);
  }

  // ------------------------------------------------------------------ reads

  async get(model: string, id: number): Promise<StoredObject | null> {
    return (await this.store.get(model, id))?.record ?? null;
  }

  getMany(model: string, ids: readonly number[]): Promise<StoredObject[]> {
    return this.store.getMany(model, ids);
  }

  async find(model: string, filters: Record<string, string[]> = {}): Promise<StoredObject[]> {
    const params = new URLSearchParams();
    for (const [k, vs] of Object.entries(filters)) for (const v of vs) params.append(k, v);
    const def = this.definition(model);
    const conditions = await this.#parseConditions(def, params, newCache());
    return this.#select(def, conditions);
  }

  async findOne(model: string, filters: Record<string, string[]>): Promise<StoredObject | null> {
    return (await this.find(model, filters))[0] ?? null;
  }

  /** A NetBox list: filters, q, ordering, limit/offset. Throws QueryError on bad filter values. */
  async list(model: string, params: URLSearchParams): Promise<ListPage> {
    const def = this.definition(model);
    const cache = newCache();
    const limitRaw = params.get("limit");
    let limit = DEFAULT_PAGE_SIZE;
    if (limitRaw !== null && /^\d+$/.test(limitRaw.trim())) {
      const n = Number(limitRaw);
      limit = n === 0 ? MAX_PAGE_SIZE : Math.min(n, MAX_PAGE_SIZE);
    }
    const offsetRaw = params.get("offset");
    const offset = offsetRaw !== null && /^\d+$/.test(offsetRaw.trim())
      ? Math.min(Number(offsetRaw), Number.MAX_SAFE_INTEGER)
      : 0;
    const ordering = this.#ordering(def, params.get("ordering"));
    const conditions = await this.#parseConditions(def, params, cache);
    const q = params.get("q");
    if (q !== null && q.trim() !== "") conditions.push(await this.#searchCondition(def, q.trim()));

    const byId = ordering.length === 1 && ordering[0].field === "id";
    const fast = await this.#fastPage(def, conditions, ordering, offset, limit);
    if (fast) return fast;
    if (conditions.length === 0 && byId) {
      const [count, records] = await Promise.all([
        this.store.count(model),
        this.store.page(model, offset, limit, ordering[0].desc),
      ]);
      return { count, records, limit, offset };
    }
    const plan = await this.#candidates(def, conditions);
    if (plan.ids && plan.covered && byId) {
      const sorted = [...plan.ids].sort((a, b) => a - b);
      if (ordering[0].desc) sorted.reverse();
      const pageIds = sorted.slice(offset, offset + limit);
      return {
        count: sorted.length,
        records: await this.store.getMany(model, pageIds),
        limit,
        offset,
      };
    }
    const records = await this.#filterRecords(def, conditions, plan.ids);
    this.#sort(records, ordering);
    return { count: records.length, records: records.slice(offset, offset + limit), limit, offset };
  }

  #ordering(def: ModelDef, raw: string | null): Array<{ field: string; desc: boolean }> {
    const known = new Set([
      "id",
      "created",
      "last_updated",
      ...Object.entries(def.fields).filter(([, f]) => !f.writeOnly && !f.hidden && !f.compute).map((
        [k],
      ) => k),
    ]);
    const parse = (items: string[]) =>
      items.map((s) => s.trim()).filter(Boolean).map((s) => ({
        field: s.replace(/^-/, ""),
        desc: s.startsWith("-"),
      })).filter((o) => known.has(o.field));
    let order = raw ? parse(raw.split(",")) : [];
    if (order.length === 0) order = parse(def.ordering ?? ["id"]);
    if (order.length === 0) order = [{ field: "id", desc: false }];
    // Ties break by id in the direction of the first field (as the ordered index reads them).
    if (!order.some((o) => o.field === "id") && order.length > 0) {
      order.push({ field: "id", desc: order[0].desc });
    }
    return order;
  }

  #sort(records: StoredObject[], ordering: Array<{ field: string; desc: boolean }>): void {
    records.sort((a, b) => {
      for (const { field, desc } of ordering) {
        const c = compareSortKeys(sortKey(a[field]), sortKey(b[field]));
        if (c !== 0) return desc ? -c : c;
      }
      return 0;
    });
  }

  // ------------------------------------------------------------------ filters

  async #parseConditions(
    def: ModelDef,
    params: URLSearchParams,
    cache: RequestCache,
  ): Promise<Condition[]> {
    const conditions: Condition[] = [];
    const errors: FieldErrors = {};
    const grouped = new Map<string, string[]>();
    for (const [k, v] of params) {
      if (RESERVED_PARAMS.has(k)) continue;
      const list = grouped.get(k) ?? [];
      list.push(v);
      grouped.set(k, list);
    }
    for (const [param, values] of grouped) {
      const custom = def.filters?.[param];
      if (custom) {
        const result = await custom(values, this);
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
      try {
        const cond = await this.#condition(def, name, lookup, values, param, cache);
        if (cond) conditions.push(cond);
      } catch (error) {
        if (error instanceof QueryError) Object.assign(errors, error.errors);
        else throw error;
      }
    }
    if (Object.keys(errors).length > 0) throw new QueryError(errors);
    return conditions;
  }

  async #condition(
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
      return { kind: "cf", name: name.slice(3), lookup, values };
    }
    if (def.tags !== false && (name === "tag" || name === "tag_id")) {
      return this.#relCondition(
        name === "tag" ? "tags" : "tags",
        this.#tagsField,
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
        return await this.#relCondition(name, fieldDef, lookup, values, param, false, false, cache);
      }
      if (lookup !== "isnull" && lookup !== "empty") {
        this.#checkFilterValues(fieldDef, lookup, values, param);
      }
      return { kind: "field", field: name, def: fieldDef, lookup, values, param };
    }
    if (name.endsWith("_id")) {
      const base = name.slice(0, -3);
      const rel = def.fields[base];
      if (
        rel && (rel.type === "fk" || rel.type === "m2m") && rel.filter !== false && !rel.compute
      ) {
        return this.#relCondition(base, rel, lookup, values, param, true, false, cache);
      }
    }
    return null; // unknown filters are ignored, as NetBox does
  }

  #checkFilterValues(def: FieldDef, lookup: string, values: string[], param: string): void {
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

  async #relCondition(
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
      const found = await this.#resolveNatural(def.model!, v, cache);
      if (found.length === 0 && !conjoined) {
        throw new QueryError({
          [param]: [`Select a valid choice. ${v} is not one of the available choices.`],
        });
      }
      if (found.length === 0) ids.push(-1);
      ids.push(...found);
    }
    if (byId) {
      // As NetBox's ModelMultipleChoiceFilter: an id that names no object is a 400.
      const wanted = [...new Set(ids.filter((id): id is number => typeof id === "number"))];
      const existing = new Set((await this.store.getMany(def.model!, wanted)).map((r) => r.id));
      const missing = wanted.find((id) => !existing.has(id));
      if (missing !== undefined) {
        throw new QueryError({
          [param]: [`Select a valid choice. ${missing} is not one of the available choices.`],
        });
      }
    }
    const mode = lookup === "n" ? "n" : "exact";
    return { kind: "rel", field, def, lookup: mode, ids, all: conjoined && lookup !== "n" };
  }

  /** Ids of `model` whose natural key (slug, else name) equals value; numbers also match ids. */
  async #resolveNatural(model: string, value: string, _cache: RequestCache): Promise<number[]> {
    const def = this.definition(model);
    const key = this.#naturalKey(def);
    const out = new Set<number>();
    if (key) {
      const single = def.unique?.find((u) => u.fields.length === 1 && u.fields[0] === key);
      if (single) {
        const id = await this.store.idByUnique(model, this.#constraintName(single.fields), [
          single.ci ? value.toLowerCase() : value,
        ]);
        if (id !== null) out.add(id);
      } else if (def.fields[key]?.index) {
        for (const id of await this.store.idsByIndex(model, key, value)) out.add(id);
      } else {
        for (const r of await this.store.scan(model)) if (r[key] === value) out.add(r.id);
      }
    }
    if (/^\d+$/.test(value) && out.size === 0) {
      const id = Number(value);
      if (await this.get(model, id)) out.add(id);
    }
    return [...out];
  }

  #naturalKey(def: ModelDef): string | null {
    if (def.naturalKey) return def.naturalKey;
    if (def.fields.slug) return "slug";
    if (def.fields.name) return "name";
    return null;
  }

  async #searchCondition(def: ModelDef, q: string): Promise<Condition> {
    const needle = q.toLowerCase();
    const direct: string[] = [];
    const related: Array<{ field: string; ids: Set<number> }> = [];
    for (const path of def.search ?? ["name"]) {
      const [field, sub] = path.split("__");
      const f = def.fields[field];
      if (sub && f?.type === "fk" && f.model) {
        const ids = new Set<number>();
        for (const r of await this.store.scan(f.model)) {
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

  /** Id sets from indexes for positive conditions; covered when indexes answer everything. */
  async #candidates(
    def: ModelDef,
    conditions: Condition[],
  ): Promise<{ ids: Set<number> | null; covered: boolean }> {
    const model = this.nameOf(def);
    let ids: Set<number> | null = null;
    let covered = true;
    const intersect = (next: Set<number>) => {
      if (ids === null) ids = next;
      else ids = new Set([...ids].filter((id) => next.has(id)));
    };
    for (const cond of conditions) {
      if (cond.kind === "none") return { ids: new Set(), covered: true };
      if (cond.kind === "ids") {
        intersect(cond.ids);
        continue;
      }
      if (cond.kind === "id" && (cond.lookup === "exact" || cond.lookup === "in")) {
        const list = cond.lookup === "in" ? splitList(cond.values) : cond.values;
        intersect(new Set(list.map(Number)));
        continue;
      }
      if (cond.kind === "rel" && cond.lookup === "exact" && !cond.ids.includes(null)) {
        const sets = await Promise.all(
          (cond.ids as number[]).map(async (id) =>
            new Set(id < 0 ? [] : await this.store.idsByIndex(model, cond.field, id))
          ),
        );
        if (cond.all) { for (const s of sets) intersect(s); }
        else intersect(new Set(sets.flatMap((s) => [...s])));
        continue;
      }
      if (
        cond.kind === "field" && cond.def.index && (cond.lookup === "exact" || cond.lookup === "in")
      ) {
        const list = cond.lookup === "in" ? splitList(cond.values) : cond.values;
        const typed = list.map((v) => this.#typedFilterValue(cond.def, v));
        if (
          typed.every((v) =>
            v !== undefined && (typeof v !== "string" || v.length <= MAX_INDEXED_LENGTH)
          )
        ) {
          const sets = await Promise.all(
            typed.map((v) => this.store.idsByIndex(model, cond.field, v!)),
          );
          intersect(new Set(sets.flat()));
          continue;
        }
      }
      covered = false;
    }
    return { ids, covered };
  }

  #typedFilterValue(def: FieldDef, value: string): IndexValue | undefined {
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

  async #filterRecords(
    def: ModelDef,
    conditions: Condition[],
    ids: Set<number> | null,
  ): Promise<StoredObject[]> {
    const model = this.nameOf(def);
    const records = ids === null
      ? await this.store.scan(model)
      : await this.store.getMany(model, [...ids].sort((a, b) => a - b));
    const tests = conditions.map((c) => this.#predicate(c));
    return records.filter((r) => tests.every((t) => t(r)));
  }

  async #select(def: ModelDef, conditions: Condition[]): Promise<StoredObject[]> {
    const plan = await this.#candidates(def, conditions);
    return this.#filterRecords(def, conditions, plan.ids);
  }

  #predicate(cond: Condition): (r: StoredObject) => boolean {
    switch (cond.kind) {
      case "none":
        return () => false;
      case "ids":
        return (r) => cond.ids.has(r.id);
      case "predicate":
        return cond.test;
      case "id":
        return (r) => this.#matchScalar({ type: "int" }, r.id, cond.lookup, cond.values);
      case "field":
        return (r) => this.#matchScalar(cond.def, r[cond.field], cond.lookup, cond.values);
      case "cf":
        return (r) =>
          this.#matchScalar(
            { type: "string" },
            (r.custom_fields as Record<string, unknown> | undefined)?.[cond.name] ?? null,
            cond.lookup,
            cond.values,
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

  #matchScalar(def: FieldDef, value: unknown, lookup: string, rawValues: string[]): boolean {
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
          try {
            return new RegExp(f, lookup === "iregex" ? "i" : "").test(String(v ?? ""));
          } catch {
            return false;
          }
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
        return false;
    }
  }

  // ------------------------------------------------------------------ rendering

  async customFieldsFor(model: string, cache?: RequestCache): Promise<CustomFieldDef[]> {
    const hit = cache?.customFields.get(model);
    if (hit) return hit;
    if (!this.has(CUSTOM_FIELD_MODEL)) return [];
    const ids = await this.store.idsByIndex(CUSTOM_FIELD_MODEL, "object_types", model);
    const defs = (await this.store.getMany(CUSTOM_FIELD_MODEL, ids)) as unknown as CustomFieldDef[];
    defs.sort((a, b) => (a.weight ?? 100) - (b.weight ?? 100) || a.name.localeCompare(b.name));
    cache?.customFields.set(model, defs);
    return defs;
  }

  urlOf(def: ModelDef, id: number, origin: string): string {
    return `${origin}/api/${def.path}${id}/`;
  }

  displayOf(def: ModelDef, record: StoredObject): string {
    if (def.display) return def.display(record);
    if (typeof record.name === "string" && record.name) return record.name;
    return `${def.verbose} ${record.id}`;
  }

  /** Renders records as the API shows them (full, brief, fields/omit), nested objects resolved. */
  async render(
    model: string,
    records: StoredObject[],
    options: RenderOptions,
  ): Promise<Record<string, unknown>[]> {
    const def = this.definition(model);
    const cache = newCache();
    const names = this.#outputFields(def, options);
    await this.#preload(def, records, names, cache, 0);
    const cfs = def.customFields !== false && names.includes("custom_fields")
      ? await this.customFieldsFor(model, cache)
      : [];
    const out = records.map((r) => this.#renderOne(def, r, names, cache, options.origin, cfs, 0));
    await this.#renderObjectCustomFields(out, cfs, cache, options.origin);
    return out;
  }

  /** Object / multi-object custom fields render as nested objects, as NetBox shows them. */
  async #renderObjectCustomFields(
    out: Record<string, unknown>[],
    cfs: CustomFieldDef[],
    cache: RequestCache,
    origin: string,
  ): Promise<void> {
    for (const cf of cfs) {
      if (cf.type !== "object" && cf.type !== "multiobject") continue;
      const target = (cf as CustomFieldDef & { related_object_type?: unknown }).related_object_type;
      if (typeof target !== "string" || !this.has(target)) continue;
      const valuesOf = (o: Record<string, unknown>) => {
        const v = (o.custom_fields as Record<string, unknown> | undefined)?.[cf.name];
        return Array.isArray(v) ? v : v === null || v === undefined ? [] : [v];
      };
      const known = this.#cached(cache, target);
      const ids = [...new Set(out.flatMap(valuesOf))].filter(
        (id): id is number => typeof id === "number" && !known.has(id),
      );
      if (ids.length > 0) {
        for (const id of ids) known.set(id, null);
        for (const r of await this.store.getMany(target, ids)) known.set(r.id, r);
        const tdef = this.definition(target);
        await this.#preload(
          tdef,
          [...known.values()].filter((r) => r !== null) as StoredObject[],
          tdef.brief,
          cache,
          1,
        );
      }
      for (const o of out) {
        const data = o.custom_fields as Record<string, unknown> | undefined;
        if (!data || data[cf.name] === null || data[cf.name] === undefined) continue;
        const nested = valuesOf(o).map((id) => this.#nested(target, id, cache, origin, 1));
        data[cf.name] = cf.type === "object" ? nested[0] ?? null : nested.filter((x) => x !== null);
      }
    }
  }

  #outputFields(def: ModelDef, options: RenderOptions): string[] {
    let names: string[];
    if (options.brief) names = ["id", "url", "display", ...def.brief];
    else {
      names = ["id", "url", "display"];
      for (const [k, f] of Object.entries(def.fields)) if (!f.writeOnly && !f.hidden) names.push(k);
      if (def.tags !== false) names.push("tags");
      if (def.customFields !== false) names.push("custom_fields");
      names.push("created", "last_updated");
    }
    if (options.fields && options.fields.length > 0) {
      const allowed = new Set(options.fields);
      names = names.filter((n) => allowed.has(n));
    }
    if (options.omit && options.omit.length > 0) {
      const omitted = new Set(options.omit);
      names = names.filter((n) => !omitted.has(n));
    }
    return names;
  }

  #cached(cache: RequestCache, model: string): Map<number, StoredObject | null> {
    let m = cache.records.get(model);
    if (!m) {
      m = new Map();
      cache.records.set(model, m);
    }
    return m;
  }

  async #preload(
    def: ModelDef,
    records: StoredObject[],
    names: string[],
    cache: RequestCache,
    depth: number,
  ) {
    if (depth > 2) return;
    const wanted = new Map<string, Set<number>>();
    const want = (model: string, id: unknown) => {
      if (typeof id !== "number") return;
      const known = this.#cached(cache, model);
      if (known.has(id)) return;
      let set = wanted.get(model);
      if (!set) wanted.set(model, set = new Set());
      set.add(id);
    };
    for (const name of names) {
      const f = name === "tags" ? this.#tagsField : def.fields[name];
      if (f?.type === "gfk") {
        for (const r of records) {
          const t = r[f.typeField!];
          if (typeof t === "string" && this.has(t)) want(t, r[f.idField!]);
        }
        continue;
      }
      if (!f || (f.type !== "fk" && f.type !== "m2m") || !f.model) continue;
      for (const r of records) {
        const v = name === "tags" ? r.tags : f.compute ? f.compute(r) : r[name];
        if (Array.isArray(v)) { for (const id of v) want(f.model, id); }
        else want(f.model, v);
      }
    }
    for (const [model, ids] of wanted) {
      const loaded = await this.store.getMany(model, [...ids]);
      const map = this.#cached(cache, model);
      for (const id of ids) map.set(id, null);
      for (const r of loaded) map.set(r.id, r);
      if (this.has(model)) {
        const target = this.definition(model);
        await this.#preload(target, loaded, target.brief, cache, depth + 1);
      }
    }
  }

  #renderOne(
    def: ModelDef,
    r: StoredObject,
    names: string[],
    cache: RequestCache,
    origin: string,
    cfs: CustomFieldDef[],
    depth: number,
  ): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const name of names) {
      switch (name) {
        case "id":
          out.id = r.id;
          continue;
        case "url":
          out.url = this.urlOf(def, r.id, origin);
          continue;
        case "display":
          out.display = this.displayOf(def, r);
          continue;
        case "tags":
          out.tags = this.#nestedList(TAG_MODEL, r.tags, cache, origin, depth);
          continue;
        case "custom_fields":
          out.custom_fields = renderCustomFields(
            cfs,
            r.custom_fields as Record<string, unknown> | undefined,
          );
          continue;
        case "created":
        case "last_updated":
          out[name] = r[name] ?? null;
          continue;
      }
      const f = def.fields[name];
      if (!f) continue;
      if (f.compute) {
        // A computed FK (e.g. `primary_ip`) renders nested like a stored one.
        out[name] = f.type === "fk"
          ? this.#nested(f.model!, f.compute(r), cache, origin, depth)
          : f.compute(r);
        continue;
      }
      const v = r[name];
      if (f.type === "gfk") {
        const t = r[f.typeField!];
        out[name] = typeof t === "string"
          ? this.#nested(t, r[f.idField!], cache, origin, depth)
          : null;
      } else if (f.type === "fk") out[name] = this.#nested(f.model!, v, cache, origin, depth);
      else if (f.type === "m2m") out[name] = this.#nestedList(f.model!, v, cache, origin, depth);
      else if (f.type === "choice") {
        if (v === null || v === undefined || v === "") {
          out[name] = f.nullable || v === null ? null : v;
        } else out[name] = { value: v, label: f.choices?.find(([c]) => c === v)?.[1] ?? String(v) };
      } else out[name] = v === undefined ? null : v;
    }
    return out;
  }

  #nested(model: string, id: unknown, cache: RequestCache, origin: string, depth: number): unknown {
    if (typeof id !== "number") return null;
    const r = this.#cached(cache, model).get(id);
    if (!r || !this.has(model)) return null;
    const def = this.definition(model);
    if (depth >= 2) {
      return { id: r.id, url: this.urlOf(def, r.id, origin), display: this.displayOf(def, r) };
    }
    return this.#renderOne(
      def,
      r,
      ["id", "url", "display", ...def.brief],
      cache,
      origin,
      [],
      depth + 1,
    );
  }

  #nestedList(
    model: string,
    ids: unknown,
    cache: RequestCache,
    origin: string,
    depth: number,
  ): unknown[] {
    if (!Array.isArray(ids)) return [];
    return ids.map((id) => this.#nested(model, id, cache, origin, depth)).filter((x) => x !== null);
  }

  // ------------------------------------------------------------------ writes

  #constraintName(fields: string[]): string {
    return fields.join("+");
  }

  stateOf(
    def: ModelDef,
    record: StoredObject,
  ): { indexes: IndexEntry[]; uniques: UniqueEntry[]; ordered: OrderedEntry[] } {
    const indexes: IndexEntry[] = [];
    const add = (field: string, v: unknown) => {
      if (v === null || v === undefined) return;
      if (typeof v === "string" && (v.length > MAX_INDEXED_LENGTH || v === "")) return;
      if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") {
        indexes.push([field, v]);
      }
    };
    for (const [name, f] of Object.entries(def.fields)) {
      if (f.compute) continue;
      const v = record[name];
      if (f.type === "fk") add(name, v);
      else if (f.type === "gfk") {
        const t = record[f.typeField!];
        const i = record[f.idField!];
        if (typeof t === "string" && typeof i === "number") add(name, `${t}:${i}`);
      } else if (f.type === "m2m" || (f.type === "list" && f.index)) {
        if (Array.isArray(v)) { for (const x of new Set(v)) add(name, x); }
      } else if (f.index) add(name, v);
    }
    if (def.tags !== false && Array.isArray(record.tags)) {
      for (const t of new Set(record.tags)) add("tags", t);
    }
    const uniques: UniqueEntry[] = [];
    for (const u of def.unique ?? []) {
      const values = u.fields.map((f) =>
        u.ci && typeof record[f] === "string" ? (record[f] as string).toLowerCase() : record[f]
      );
      if (values.some(isEmpty)) continue;
      uniques.push([this.#constraintName(u.fields), values as IndexValue[]]);
    }
    const ordered: OrderedEntry[] = [];
    const order = this.orderField(def);
    if (order) {
      const key = sortKey(record[order.field]);
      ordered.push(["*", 0, key]);
      for (const [field, value] of indexes) {
        if (field !== order.field) ordered.push([field, value, key]);
      }
    }
    return { indexes, uniques, ordered };
  }

  /** The stored field of the model's default ordering that the ordered index follows. */
  orderField(def: ModelDef): { field: string; desc: boolean } | null {
    const first = def.ordering?.[0];
    if (!first) return null;
    const field = first.replace(/^-/, "");
    if (field === "id") return null;
    const f = def.fields[field];
    const stored = field === "created" || field === "last_updated" ||
      (f && !f.compute && !f.hidden &&
        ["string", "int", "float", "bool", "datetime", "date", "choice", "fk"].includes(f.type));
    return stored ? { field, desc: first.startsWith("-") } : null;
  }

  /**
   * Pages answered from indexes alone: no filter or one exact filter on an indexed field or
   * FK, ordered by id or by the model's default ordering. Reads offset+limit index keys and
   * one counter, however many objects the store holds.
   */
  async #fastPage(
    def: ModelDef,
    conditions: Condition[],
    ordering: Array<{ field: string; desc: boolean }>,
    offset: number,
    limit: number,
  ): Promise<ListPage | null> {
    const model = this.nameOf(def);
    let field: string;
    let value: IndexValue;
    if (conditions.length === 0) {
      field = "*";
      value = 0;
    } else if (conditions.length === 1) {
      const c = conditions[0];
      if (
        c.kind === "rel" && c.lookup === "exact" && !c.all && c.ids.length === 1 &&
        typeof c.ids[0] === "number" && c.ids[0] > 0
      ) {
        field = c.field;
        value = c.ids[0];
      } else if (
        c.kind === "field" && c.def.index && c.lookup === "exact" && c.values.length === 1
      ) {
        const typed = this.#typedFilterValue(c.def, c.values[0]);
        if (
          typed === undefined ||
          (typeof typed === "string" && (typed.length > MAX_INDEXED_LENGTH || typed === ""))
        ) {
          return null;
        }
        field = c.field;
        value = typed;
      } else return null;
    } else return null;
    const primary = ordering[0];
    const byId = primary.field === "id" && ordering.length === 1;
    const order = this.orderField(def);
    const byOrder = !byId && order !== null && ordering.length === 2 &&
      primary.field === order.field &&
      ordering[1].field === "id" && ordering[1].desc === primary.desc;
    if (!byId && !byOrder) return null;
    if (field === order?.field) return null;
    if (field === "*" && byId) return null;
    const [count, ids] = await Promise.all([
      field === "*" ? this.store.count(model) : this.store.countByIndex(model, field, value),
      this.store.pageByIndex(model, field, value, {
        offset,
        limit,
        reverse: primary.desc,
        ordered: byOrder,
      }),
    ]);
    return { count, records: await this.store.getMany(model, ids), limit, offset };
  }

  #uniqueMessage(def: ModelDef, u: { fields: string[]; message?: string }): string {
    if (u.message) return u.message;
    if (u.fields.length === 1) {
      return `${def.verbose} with this ${u.fields[0].replaceAll("_", " ")} already exists.`;
    }
    return `The fields ${u.fields.join(", ")} must make a unique set.`;
  }

  async #resolveRef(
    model: string,
    ref: RefInput,
    cache: RequestCache,
  ): Promise<{ ok: true; id: number } | { ok: false; error: string }> {
    if ("id" in ref) {
      const map = this.#cached(cache, model);
      let r = map.get(ref.id);
      if (r === undefined) {
        r = await this.get(model, ref.id);
        map.set(ref.id, r);
      }
      return r ? { ok: true, id: ref.id } : { ok: false, error: MESSAGES.pk(ref.id) };
    }
    const filters: Record<string, string[]> = {};
    const target = this.definition(model);
    for (const [k, v] of Object.entries(ref.attrs)) {
      // Attributes must name something the model can be looked up by: an unknown one would be
      // ignored by the filter engine and match every object (NetBox answers 400).
      if (!this.#isLookupAttr(target, k)) return { ok: false, error: MESSAGES.attrs(ref.attrs) };
      if (v !== null && typeof v === "object") {
        // Nested attribute dicts ({"cluster": {"name": "c1"}}) resolve to the related id first.
        const f = this.definition(model).fields[k];
        if (f?.type === "fk" && f.model) {
          const inner = parseRef(v);
          if (!inner.ok) return { ok: false, error: MESSAGES.attrs(ref.attrs) };
          const resolved = await this.#resolveRef(f.model, inner.ref, cache);
          if (!resolved.ok) return { ok: false, error: MESSAGES.attrs(ref.attrs) };
          filters[`${k}_id`] = [String(resolved.id)];
          continue;
        }
        return { ok: false, error: MESSAGES.attrs(ref.attrs) };
      }
      filters[k] = [v === null ? "null" : String(v)];
    }
    let found: StoredObject[];
    try {
      found = await this.find(model, filters);
    } catch {
      return { ok: false, error: MESSAGES.attrs(ref.attrs) };
    }
    if (found.length === 0) return { ok: false, error: MESSAGES.attrs(ref.attrs) };
    if (found.length > 1) return { ok: false, error: MESSAGES.multiple(ref.attrs) };
    this.#cached(cache, model).set(found[0].id, found[0]);
    return { ok: true, id: found[0].id };
  }

  /** Can `attr` select objects of `def` in a nested reference ({"name": ...}, {"type_id": 1})? */
  #isLookupAttr(def: ModelDef, attr: string): boolean {
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

  async #parseRelation(
    f: FieldDef,
    value: unknown,
    cache: RequestCache,
  ): Promise<{ ok: true; value: unknown } | { ok: false; error: string }> {
    if (f.type === "fk") {
      if (value === null) {
        return f.nullable ? { ok: true, value: null } : { ok: false, error: MESSAGES.null };
      }
      const ref = parseRef(value);
      if (!ref.ok) return ref;
      const r = await this.#resolveRef(f.model!, ref.ref, cache);
      return r.ok ? { ok: true, value: r.id } : r;
    }
    if (value === null) return { ok: true, value: [] };
    if (!Array.isArray(value)) {
      return {
        ok: false,
        error: MESSAGES.list(
          typeof value === "string" ? "str" : typeof value === "object" ? "dict" : "int",
        ),
      };
    }
    const ids: number[] = [];
    for (const item of value) {
      const ref = parseRef(item);
      if (!ref.ok) return ref;
      const r = await this.#resolveRef(f.model!, ref.ref, cache);
      if (!r.ok) return r;
      if (!ids.includes(r.id)) ids.push(r.id);
    }
    return { ok: true, value: ids };
  }

  /**
   * Builds the complete draft for a create (existing null) or update, validating input.
   * `partial` is PATCH semantics; PUT and create require every required field.
   */
  async #prepare(
    def: ModelDef,
    input: unknown,
    existing: StoredObject | null,
    partial: boolean,
    auth: AuthInfo | null,
    cache: RequestCache,
    id: number,
  ): Promise<{ ok: true; prepared: Prepared } | { ok: false; errors: FieldErrors }> {
    const errors: FieldErrors = {};
    if (input === null || typeof input !== "object" || Array.isArray(input)) {
      return {
        ok: false,
        errors: {
          non_field_errors: [
            `Invalid data. Expected a dictionary, but got ${
              Array.isArray(input) ? "list" : typeof input
            }.`,
          ],
        },
      };
    }
    const data = input as Record<string, unknown>;
    const nowIso = new Date(this.now()).toISOString();
    const draft: StoredObject = existing ? structuredClone(existing) : { id };
    const accepted: Record<string, unknown> = {};
    for (const [name, f] of Object.entries(def.fields)) {
      if (f.type === "gfk") continue;
      if (f.readOnly || f.hidden || f.compute) {
        if (!existing && !(name in draft)) draft[name] = f.compute ? undefined : defaultValue(f);
        if (f.compute) delete draft[name];
        continue;
      }
      if (name in data && data[name] !== undefined) {
        const value = data[name];
        const r = f.type === "fk" || f.type === "m2m"
          ? await this.#parseRelation(f, value, cache)
          : coerce(f, value);
        if (!r.ok) errors[name] = [r.error];
        else {
          draft[name] = r.value;
          accepted[name] = r.value;
        }
        continue;
      }
      if (!existing) {
        if (f.required && f.default === undefined) errors[name] = [MESSAGES.required];
        else draft[name] = defaultValue(f);
      } else if (!partial && f.required && f.default === undefined) {
        errors[name] = [MESSAGES.required];
      }
    }
    for (const [, f] of Object.entries(def.fields)) {
      if (f.type !== "gfk") continue;
      const t = draft[f.typeField!];
      const i = draft[f.idField!];
      if (isEmpty(t) && isEmpty(i)) continue;
      if (isEmpty(t) || isEmpty(i)) {
        const missing = isEmpty(t) ? f.typeField! : f.idField!;
        if (!errors[missing]) errors[missing] = [MESSAGES.required];
        continue;
      }
      const allowed = f.models === "*" ? this.has(String(t)) : (f.models ?? []).includes(String(t));
      if (!allowed) {
        errors[f.typeField!] ??= [MESSAGES.choice(t)];
        continue;
      }
      const found = await this.#resolveRef(String(t), { id: i as number }, cache);
      if (!found.ok) errors[f.idField!] ??= [found.error];
    }
    if (def.tags !== false) {
      if ("tags" in data && data.tags !== undefined) {
        const r = await this.#parseRelation(this.#tagsField, data.tags, cache);
        if (!r.ok) errors.tags = [r.error];
        else draft.tags = r.value;
      } else if (!existing) draft.tags = [];
    }
    if (def.customFields !== false) {
      const model = this.nameOf(def);
      const cfs = await this.customFieldsFor(model, cache);
      const current = (existing?.custom_fields as Record<string, unknown> | undefined) ?? {};
      let next = { ...current };
      if (
        "custom_fields" in data && data.custom_fields !== undefined && data.custom_fields !== null
      ) {
        const r = validateCustomFields(cfs, data.custom_fields, current);
        if (!r.ok) errors.custom_fields = r.errors;
        else next = r.value;
      }
      if (!existing) next = applyCustomFieldDefaults(cfs, next);
      const missing = cfs.filter((cf) => cf.required && isEmpty(next[cf.name]));
      if (missing.length > 0 && !errors.custom_fields) {
        errors.custom_fields = missing.map((cf) => `Required field cannot be empty: ${cf.name}`);
      }
      draft.custom_fields = next;
    }
    if (!existing) draft.created = nowIso;
    draft.last_updated = nowIso;
    const ctx: HookContext = {
      engine: this,
      op: existing ? "update" : "create",
      existing,
      input: accepted,
      responseExtras: {},
      auth,
      logger: this.logger,
      now: this.now,
      read: async (model, id) => {
        const known = this.#cached(cache, model);
        if (known.has(id)) return known.get(id)!;
        const found = await this.get(model, id);
        known.set(id, found);
        return found;
      },
    };
    if (Object.keys(errors).length > 0) return { ok: false, errors };
    if (def.validate) {
      const more = await def.validate(draft, ctx);
      if (more && Object.keys(more).length > 0) return { ok: false, errors: more };
    }
    return { ok: true, prepared: { draft, ctx } };
  }

  /** Unique checks against the store (and the batch itself) before committing. */
  async #checkUnique(def: ModelDef, drafts: StoredObject[]): Promise<Array<FieldErrors | null>> {
    const model = this.nameOf(def);
    const seen = new Map<string, number>();
    const out: Array<FieldErrors | null> = [];
    for (const draft of drafts) {
      let errors: FieldErrors | null = null;
      for (const u of def.unique ?? []) {
        const values = u.fields.map((f) =>
          u.ci && typeof draft[f] === "string" ? (draft[f] as string).toLowerCase() : draft[f]
        );
        if (values.some(isEmpty)) continue;
        const long = u.fields.find((_f, i) =>
          typeof values[i] === "string" && (values[i] as string).length > MAX_INDEXED_LENGTH
        );
        if (long) {
          // Unique values are KV key parts (2 KiB keys): refuse rather than fail in storage.
          errors ??= {};
          (errors[long] ??= []).push(MESSAGES.maxLength(MAX_INDEXED_LENGTH));
          continue;
        }
        const key = JSON.stringify([u.fields, values]);
        const other = seen.get(key);
        const holder = other ??
          await this.store.idByUnique(
            model,
            this.#constraintName(u.fields),
            values as IndexValue[],
          );
        if (holder !== null && holder !== draft.id) {
          errors ??= {};
          const field = u.errorField ?? u.fields[u.fields.length - 1];
          (errors[field] ??= []).push(this.#uniqueMessage(def, u));
        }
        seen.set(key, draft.id);
      }
      out.push(errors);
    }
    return out;
  }

  #sizeError(draft: StoredObject): FieldErrors | null {
    if (storedSize(draft) > MAX_RECORD_BYTES) {
      return { non_field_errors: ["The object is too large to store (limit 60000 bytes)."] };
    }
    return null;
  }

  /**
   * Creates one or many objects, all-or-nothing. Many objects are written in as few atomics
   * as the store's limits allow (one per batch, not per object or field).
   */
  async createMany(
    model: string,
    inputs: unknown[],
    auth: AuthInfo | null = null,
    options: { hooks?: boolean } = {},
  ): Promise<WriteResult<StoredObject[]>> {
    const def = this.definition(model);
    const cache = newCache();
    if (inputs.length === 0) return { ok: true, value: [] };
    const first = await this.store.allocateIds(model, inputs.length);
    const prepared: Prepared[] = [];
    const errors: FieldErrors[] = [];
    let failed = false;
    for (let i = 0; i < inputs.length; i++) {
      const r = await this.#prepare(def, inputs[i], null, false, auth, cache, first + i);
      if (!r.ok) {
        failed = true;
        errors.push(r.errors);
        continue;
      }
      prepared.push(r.prepared);
      errors.push({});
    }
    if (failed) {
      return {
        ok: false,
        status: 400,
        errors: inputs.length === 1 && !Array.isArray(inputs) ? errors[0] : errors,
      };
    }
    const uniq = await this.#checkUnique(def, prepared.map((p) => p.draft));
    if (uniq.some((e) => e !== null)) {
      return { ok: false, status: 400, errors: uniq.map((e) => e ?? {}) };
    }
    if (options.hooks !== false && def.beforeSave) {
      for (const p of prepared) await def.beforeSave(p.draft, p.ctx);
    }
    const sizes = prepared.map((p) => this.#sizeError(p.draft));
    if (sizes.some((e) => e !== null)) {
      return {
        ok: false,
        status: 400,
        errors: sizes.map((e) => e ?? {}),
      };
    }
    const writes: ObjectWrite[] = prepared.map((p) => ({
      model,
      id: p.draft.id,
      prev: null,
      next: { record: p.draft, ...this.stateOf(def, p.draft) },
    }));
    const committed: ObjectWrite[] = [];
    for (const group of this.store.plan(writes)) {
      const result = await this.store.commit(group);
      if (!result.ok) {
        await this.#rollbackCreates(committed);
        // A concurrent writer took a unique value (or an id): report it like a validation error.
        const again = await this.#checkUnique(def, prepared.map((p) => p.draft));
        if (again.some((e) => e !== null)) {
          return {
            ok: false,
            status: 400,
            errors: again.map((e) => e ?? {}),
          };
        }
        return {
          ok: false,
          status: 409,
          detail: "The object was changed concurrently; please retry.",
        };
      }
      committed.push(...group);
    }
    // A target deleted between validation and commit: undo, and answer as validation would.
    const dangling = await this.#danglingRefs(
      def,
      prepared.map((p) => ({ record: p.draft, before: null })),
    );
    if (dangling.size > 0) {
      await this.#rollbackCreates(committed);
      return {
        ok: false,
        status: 400,
        errors: prepared.map((p) => {
          const e: FieldErrors = {};
          for (const x of dangling.get(p.draft.id) ?? []) {
            const f = def.fields[x.field];
            const key = f?.type === "gfk" ? f.idField! : x.field;
            (e[key] ??= []).push(MESSAGES.pk(x.id));
          }
          return e;
        }),
      };
    }
    const out: StoredObject[] = [];
    const extras: Record<string, unknown> = {};
    for (const p of prepared) {
      if (options.hooks !== false) await this.#afterSave(def, p.draft, p.ctx);
      Object.assign(extras, p.ctx.responseExtras);
    }
    const fresh = await this.store.getMany(model, prepared.map((p) => p.draft.id));
    const byId = new Map(fresh.map((r) => [r.id, r]));
    for (const p of prepared) out.push(byId.get(p.draft.id) ?? p.draft);
    return {
      ok: true,
      value: out,
      extras: prepared.length === 1 ? prepared[0].ctx.responseExtras : undefined,
    };
  }

  /** Every reference a record holds: FKs, m2m members (tags too) and generic FKs. */
  #refsOf(def: ModelDef, r: StoredObject): Array<{ field: string; model: string; id: number }> {
    const out: Array<{ field: string; model: string; id: number }> = [];
    for (const [name, f] of Object.entries(def.fields)) {
      if (f.compute) continue;
      const v = r[name];
      if (f.type === "fk" && f.model && typeof v === "number") {
        out.push({ field: name, model: f.model, id: v });
      } else if (f.type === "m2m" && f.model && Array.isArray(v)) {
        for (const id of v) {
          if (typeof id === "number") out.push({ field: name, model: f.model, id });
        }
      } else if (f.type === "gfk") {
        const t = r[f.typeField!];
        const i = r[f.idField!];
        if (typeof t === "string" && typeof i === "number" && this.has(t)) {
          out.push({ field: name, model: t, id: i });
        }
      }
    }
    if (def.tags !== false && Array.isArray(r.tags)) {
      for (const id of r.tags) {
        if (typeof id === "number") out.push({ field: "tags", model: TAG_MODEL, id });
      }
    }
    return out;
  }

  /**
   * References (new since `before`, when given) whose target does not exist. Checked after a
   * commit: validation saw the target, but a concurrent delete may have removed it since.
   */
  async #danglingRefs(
    def: ModelDef,
    records: Array<{ record: StoredObject; before: StoredObject | null }>,
  ): Promise<Map<number, Array<{ field: string; model: string; id: number }>>> {
    const perRecord = records.map(({ record, before }) => {
      const had = new Set(
        before ? this.#refsOf(def, before).map((x) => `${x.field}:${x.model}:${x.id}`) : [],
      );
      return {
        id: record.id,
        refs: this.#refsOf(def, record).filter((x) => !had.has(`${x.field}:${x.model}:${x.id}`)),
      };
    });
    const wanted = new Map<string, Set<number>>();
    for (const { refs } of perRecord) {
      for (const x of refs) {
        if (!wanted.has(x.model)) wanted.set(x.model, new Set());
        wanted.get(x.model)!.add(x.id);
      }
    }
    const existing = new Map<string, Set<number>>();
    for (const [model, ids] of wanted) {
      const found = await this.store.getMany(model, [...ids]);
      existing.set(model, new Set(found.map((r) => r.id)));
    }
    const out = new Map<number, Array<{ field: string; model: string; id: number }>>();
    for (const { id, refs } of perRecord) {
      const missing = refs.filter((x) => !existing.get(x.model)?.has(x.id));
      if (missing.length > 0) out.set(id, missing);
    }
    return out;
  }

  /** Removes one reference from a stored record (FK or generic FK to null, m2m member out). */
  async #dropRef(model: string, id: number, field: string, targetId: number): Promise<void> {
    const f = field === "tags" ? this.#tagsField : this.definition(model).fields[field];
    if (!f) return;
    await this.patchStored(model, id, (cur) => {
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

  async #rollbackCreates(committed: ObjectWrite[]): Promise<void> {
    if (committed.length === 0) return;
    const deletes: ObjectWrite[] = [];
    for (const w of committed) {
      const cur = await this.store.get(w.model, w.id);
      if (!cur || !w.next) continue;
      deletes.push({
        model: w.model,
        id: w.id,
        prev: { ...w.next, record: cur.record, version: cur.version },
        next: null,
      });
    }
    for (const group of this.store.plan(deletes)) await this.store.commit(group);
  }

  async #afterSave(def: ModelDef, record: StoredObject, ctx: HookContext): Promise<void> {
    if (!def.afterSave) return;
    try {
      await def.afterSave(record, ctx);
    } catch (error) {
      this.logger.log("error", "after-save hook failed", {
        model: this.nameOf(def),
        id: record.id,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  async create(
    model: string,
    input: unknown,
    auth: AuthInfo | null = null,
  ): Promise<WriteResult<StoredObject>> {
    const r = await this.createMany(model, [input], auth);
    if (!r.ok) {
      if (r.status === 400 && Array.isArray(r.errors)) {
        return { ok: false, status: 400, errors: r.errors[0] };
      }
      return r as WriteResult<StoredObject>;
    }
    return { ok: true, value: r.value[0], extras: r.extras };
  }

  insert(model: string, input: Record<string, unknown>): Promise<WriteResult<StoredObject>> {
    return this.create(model, input, null);
  }

  /**
   * Updates many objects (bulk PUT/PATCH: each input carries its id), all validated first.
   */
  async updateMany(
    model: string,
    inputs: Array<{ id: number; data: unknown }>,
    partial: boolean,
    auth: AuthInfo | null = null,
    options: { hooks?: boolean } = {},
  ): Promise<WriteResult<StoredObject[]>> {
    const def = this.definition(model);
    // Groups (atomics) already committed by an earlier attempt: a conflict in a later group
    // retries only the items not yet written, so a bulk update is never left half done.
    const done: Prepared[] = [];
    let pending = inputs;
    // Attempts that wrote nothing are bounded; one that made progress shrinks `pending`.
    for (let attempt = 0; attempt < 8;) {
      const cache = newCache();
      const prepared: Array<
        Prepared & { version: string; prevState: ReturnType<ModelEngine["stateOf"]> }
      > = [];
      const errors: FieldErrors[] = [];
      let failed = false;
      for (const { id, data } of pending) {
        const current = await this.store.get(model, id);
        if (!current) {
          if (inputs.length === 1) return { ok: false, status: 404, detail: "Not found." };
          if (done.length > 0) {
            return {
              ok: false,
              status: 409,
              detail: "The objects were changed concurrently; please retry.",
            };
          }
          failed = true;
          errors.push({ id: [`Object with id ${id} does not exist.`] });
          continue;
        }
        const r = await this.#prepare(def, data, current.record, partial, auth, cache, id);
        if (!r.ok) {
          failed = true;
          errors.push(r.errors);
          continue;
        }
        errors.push({});
        prepared.push({
          ...r.prepared,
          version: current.version,
          prevState: this.stateOf(def, current.record),
        });
      }
      if (failed) return { ok: false, status: 400, errors };
      const uniq = await this.#checkUnique(def, prepared.map((p) => p.draft));
      if (uniq.some((e) => e !== null)) {
        return {
          ok: false,
          status: 400,
          errors: uniq.map((e) => e ?? {}),
        };
      }
      if (options.hooks !== false && def.beforeSave) {
        for (const p of prepared) await def.beforeSave(p.draft, p.ctx);
      }
      const sizes = prepared.map((p) => this.#sizeError(p.draft));
      if (sizes.some((e) => e !== null)) {
        return {
          ok: false,
          status: 400,
          errors: sizes.map((e) => e ?? {}),
        };
      }
      const writes: ObjectWrite[] = prepared.map((p) => ({
        model,
        id: p.draft.id,
        prev: { record: p.ctx.existing!, ...p.prevState, version: p.version },
        next: { record: p.draft, ...this.stateOf(def, p.draft) },
      }));
      const groups = this.store.plan(writes);
      let conflict = false;
      const committed = new Set<number>();
      for (const group of groups) {
        if (!(await this.store.commit(group)).ok) {
          conflict = true;
          break;
        }
        for (const w of group) committed.add(w.id);
      }
      done.push(...prepared.filter((p) => committed.has(p.draft.id)));
      if (conflict) {
        if (committed.size === 0) {
          attempt++;
          // Writers contending for one record: back off a little (jittered) before retrying.
          await new Promise((r) => setTimeout(r, Math.random() * Math.min(25, 2 ** attempt)));
        }
        pending = pending.filter((i) => !committed.has(i.id));
        continue;
      }
      // References to objects a concurrent delete removed after validation are dropped,
      // as that delete's own follow-up would (no dangling references, ever).
      const dangling = await this.#danglingRefs(
        def,
        done.map((p) => ({ record: p.draft, before: p.ctx.existing })),
      );
      for (const [id, refs] of dangling) {
        // What the delete would have done to this record: CASCADE (or a required FK) takes
        // the record along, anything else loses the reference.
        const goes = refs.some((x) => {
          const f = def.fields[x.field];
          if (!f || f.type === "m2m") return false;
          return f.onDelete === "cascade" || (f.type === "fk" && f.nullable !== true);
        });
        if (goes) await this.deleteMany(model, [id]);
        else for (const x of refs) await this.#dropRef(model, id, x.field, x.id);
        this.logger.log("warning", "dropped references to objects deleted concurrently", {
          model,
          id,
          refs,
        });
      }
      for (const p of done) {
        if (options.hooks !== false) await this.#afterSave(def, p.draft, p.ctx);
      }
      const order = inputs.map((i) => i.id);
      const fresh = await this.store.getMany(model, order);
      return {
        ok: true,
        value: fresh,
        extras: done.length === 1 ? done[0].ctx.responseExtras : undefined,
      };
    }
    return { ok: false, status: 409, detail: "The object was changed concurrently; please retry." };
  }

  async updateOne(
    model: string,
    id: number,
    data: unknown,
    partial: boolean,
    auth: AuthInfo | null = null,
    options: { hooks?: boolean } = {},
  ): Promise<WriteResult<StoredObject>> {
    const r = await this.updateMany(model, [{ id, data }], partial, auth, options);
    if (!r.ok) {
      if (r.status === 400 && Array.isArray(r.errors)) {
        return { ok: false, status: 400, errors: r.errors[0] };
      }
      return r as WriteResult<StoredObject>;
    }
    if (r.value.length === 0) return { ok: false, status: 404, detail: "Not found." };
    return { ok: true, value: r.value[0], extras: r.extras };
  }

  update(
    model: string,
    id: number,
    input: Record<string, unknown>,
    options: { hooks?: boolean } = {},
  ): Promise<WriteResult<StoredObject>> {
    return this.updateOne(model, id, input, true, null, options);
  }

  async patchStored(
    model: string,
    id: number,
    changes: Record<string, unknown> | ((current: StoredObject) => Record<string, unknown>),
  ): Promise<StoredObject | null> {
    const def = this.definition(model);
    for (let attempt = 0; attempt < 50; attempt++) {
      const current = await this.store.get(model, id);
      if (!current) return null;
      const delta = typeof changes === "function" ? changes(current.record) : changes;
      const next: StoredObject = { ...current.record, ...delta, id };
      next.last_updated = new Date(this.now()).toISOString();
      const ok = await this.store.commit([{
        model,
        id,
        prev: {
          record: current.record,
          ...this.stateOf(def, current.record),
          version: current.version,
        },
        next: { record: next, ...this.stateOf(def, next) },
      }]);
      if (ok.ok) return next;
      await new Promise((resolve) =>
        setTimeout(resolve, Math.random() * Math.min(20, 2 ** attempt))
      );
    }
    throw new Error(`could not update ${model} ${id}: storage contention`);
  }

  // ------------------------------------------------------------------ deletes

  /**
   * A reference created concurrently with a delete (after its dependents scan, before its
   * commit) would dangle: look again once deleted, and remove or detach what appeared.
   */
  async #followUpDeletes(toDelete: Map<string, Map<number, StoredObject>>): Promise<void> {
    for (const [m, records] of toDelete) {
      for (const record of records.values()) {
        for (const rel of [...(this.#reverse.get(m) ?? []), ...this.#wildcard]) {
          const ids = (await this.store.idsByIndex(
            rel.model,
            rel.field,
            rel.def.type === "gfk" ? `${m}:${record.id}` : record.id,
          )).filter((id) => !toDelete.get(rel.model)?.has(id));
          if (ids.length === 0) continue;
          this.logger.log("warning", "references created during a delete were cleaned up", {
            model: m,
            id: record.id,
            referrer: rel.model,
            ids,
          });
          const action = rel.def.onDelete ?? "protect";
          const detach = rel.def.type === "m2m" || action === "set_null" ||
            (action === "protect" && rel.def.nullable === true);
          if (detach) {
            for (const id of ids) await this.#dropRef(rel.model, id, rel.field, record.id);
          } else {
            await this.deleteMany(rel.model, ids);
          }
        }
      }
    }
  }

  /** Deletes objects (and their CASCADE dependents); 409 when PROTECT dependents exist. */
  async deleteMany(
    model: string,
    ids: number[],
    auth: AuthInfo | null = null,
  ): Promise<WriteResult<null>> {
    const def = this.definition(model);
    const toDelete = new Map<string, Map<number, StoredObject>>();
    const protectedBy: Array<{ model: string; record: StoredObject }> = [];
    const queue: Array<{ model: string; record: StoredObject }> = [];
    for (const id of ids) {
      const r = await this.get(model, id);
      if (!r) return { ok: false, status: 404, detail: "Not found." };
      if (auth && def.canDelete && !def.canDelete(r, auth)) {
        return {
          ok: false,
          status: 403,
          detail: "You do not have permission to perform this action.",
        };
      }
      queue.push({ model, record: r });
    }
    if (auth && def.beforeDelete) {
      const refusal = await def.beforeDelete(queue.map((q) => q.record), {
        engine: this,
        auth,
        now: this.now,
      });
      if (refusal) return { ok: false, status: 409, detail: refusal };
    }
    const mark = (m: string, r: StoredObject) => {
      let map = toDelete.get(m);
      if (!map) toDelete.set(m, map = new Map());
      if (map.has(r.id)) return false;
      map.set(r.id, r);
      return true;
    };
    const nullify: Array<{ model: string; id: number; field: string; remove?: number }> = [];
    while (queue.length > 0) {
      const { model: m, record } = queue.shift()!;
      if (!mark(m, record)) continue;
      for (const rel of [...(this.#reverse.get(m) ?? []), ...this.#wildcard]) {
        const dependents = await this.store.idsByIndex(
          rel.model,
          rel.field,
          rel.def.type === "gfk" ? `${m}:${record.id}` : record.id,
        );
        if (dependents.length === 0) continue;
        if (rel.def.type === "m2m") {
          for (const d of dependents) {
            nullify.push({ model: rel.model, id: d, field: rel.field, remove: record.id });
          }
          continue;
        }
        const action = rel.def.onDelete ?? "protect";
        if (action === "set_null" && rel.def.type === "gfk") {
          for (const d of dependents) {
            nullify.push({ model: rel.model, id: d, field: rel.def.typeField! });
            nullify.push({ model: rel.model, id: d, field: rel.def.idField! });
          }
        } else if (action === "set_null") {
          for (const d of dependents) nullify.push({ model: rel.model, id: d, field: rel.field });
        } else if (action === "cascade") {
          for (const r of await this.store.getMany(rel.model, dependents)) {
            queue.push({ model: rel.model, record: r });
          }
        } else {
          for (const r of await this.store.getMany(rel.model, dependents)) {
            protectedBy.push({ model: rel.model, record: r });
          }
        }
      }
    }
    const blocking = protectedBy.filter((p) => !toDelete.get(p.model)?.has(p.record.id));
    if (blocking.length > 0) {
      const names = blocking.map((p) =>
        `${this.displayOf(this.definition(p.model), p.record)} (${p.record.id})`
      );
      return {
        ok: false,
        status: 409,
        detail: `Unable to delete object. ${blocking.length} dependent objects were found: ${
          names.join(", ")
        }`,
      };
    }
    // Detach references that survive (SET_NULL and m2m memberships), then delete.
    for (const n of nullify) {
      if (toDelete.get(n.model)?.has(n.id)) continue;
      const current = await this.get(n.model, n.id);
      if (!current) continue;
      const value = n.remove !== undefined
        ? ((current[n.field] as number[] | undefined) ?? []).filter((x) => x !== n.remove)
        : null;
      await this.patchStored(n.model, n.id, { [n.field]: value });
    }
    const writes: ObjectWrite[] = [];
    for (const [m, records] of toDelete) {
      const mdef = this.definition(m);
      for (const r of records.values()) {
        const cur = await this.store.get(m, r.id);
        if (!cur) continue;
        writes.push({
          model: m,
          id: r.id,
          prev: { record: cur.record, ...this.stateOf(mdef, cur.record), version: cur.version },
          next: null,
        });
      }
    }
    // Dependents first, so a failure half-way never leaves a dangling reference.
    writes.reverse();
    for (const group of this.store.plan(writes)) {
      if (!(await this.store.commit(group)).ok) {
        return {
          ok: false,
          status: 409,
          detail: "The object was changed concurrently; please retry.",
        };
      }
    }
    await this.#followUpDeletes(toDelete);
    for (const [m, records] of toDelete) {
      const mdef = this.definition(m);
      if (!mdef.afterDelete) continue;
      for (const r of records.values()) {
        try {
          await mdef.afterDelete(r, { engine: this, logger: this.logger });
        } catch (error) {
          this.logger.log("error", "after-delete hook failed", {
            model: m,
            id: r.id,
            error: error instanceof Error ? error.message : String(error),
          });
        }
      }
    }
    return { ok: true, value: null };
  }

  remove(model: string, id: number): Promise<WriteResult<null>> {
    return this.deleteMany(model, [id]);
  }
}
