/**
 * Choosing records: the candidate ids indexes give, the scan fallback, ordering, and pages.
 * A page is answered from indexes alone when it can be (see fastPage), else from the
 * candidates, else from a scan.
 */
import type { IndexValue, StoredObject } from "../../../storage/ports.ts";
import type { ModelDef } from "../types.ts";
import {
  cachedRecords,
  type EngineCore,
  newCache,
  readUncached,
  type RequestCache,
} from "./core.ts";
import { indexedString, indexShape, orderField, orderKey } from "./index_state.ts";
import { isPatternCondition, predicate } from "./lookups.ts";
import { type Condition, parseConditions, splitList, typedFilterValue } from "./query.ts";
import { searchCondition } from "./search.ts";

export const MAX_PAGE_SIZE = 1000;
export const DEFAULT_PAGE_SIZE = 50;

export interface ListPage {
  count: number;
  records: StoredObject[];
  limit: number;
  offset: number;
  /**
   * What choosing the page read besides its records (the objects a filter names, such as the
   * VMs of `virtual_machine_id=`): the rendering starts from it (RenderOptions.known), so an
   * object the answer nests is not read twice in one request.
   */
  read?: RequestCache;
}

type Ordering = Array<{ field: string; desc: boolean }>;

/** Records matching NetBox-style filters, e.g. { cluster_id: ["3"], name__ic: ["web"] }. */
export async function find(
  core: EngineCore,
  model: string,
  filters: Record<string, string[]>,
): Promise<StoredObject[]> {
  const params = new URLSearchParams();
  for (const [k, vs] of Object.entries(filters)) for (const v of vs) params.append(k, v);
  const def = core.registry.definition(model);
  const conditions = await parseConditions(core, def, params, newCache());
  return select(core, def, conditions);
}

/** A NetBox list: filters, q, ordering, limit/offset. Throws QueryError on bad filter values. */
export async function listPage(
  core: EngineCore,
  model: string,
  params: URLSearchParams,
): Promise<ListPage> {
  const cache = newCache();
  return { ...await choosePage(core, model, params, cache), read: cache };
}

async function choosePage(
  core: EngineCore,
  model: string,
  params: URLSearchParams,
  cache: RequestCache,
): Promise<ListPage> {
  const def = core.registry.definition(model);
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
  const ordering = orderingOf(def, params.get("ordering"));
  const conditions = await parseConditions(core, def, params, cache, { query: true });
  const q = params.get("q");
  if (q !== null && q.trim() !== "") conditions.push(searchCondition(core, def, q.trim(), cache));

  // An ordering led by id is by id: ids are unique, so the terms after it never break a tie.
  const byId = ordering[0].field === "id";
  const span = byId ? await spanPage(core, def, conditions, ordering[0].desc, offset, limit) : null;
  if (span !== null) return span;
  const keyset = byId && !ordering[0].desc
    ? await keysetPage(core, def, conditions, offset, limit)
    : null;
  if (keyset !== null) return keyset;
  const fast = await fastPage(core, def, conditions, ordering, offset, limit);
  if (fast !== null) return fast;
  if (conditions.length === 0 && byId) {
    const [count, records] = await Promise.all([
      core.store.count(model),
      core.store.page(model, offset, limit, ordering[0].desc),
    ]);
    return { count, records, limit, offset };
  }
  const plan = await candidates(core, def, conditions);
  if (plan.ids && plan.covered && byId) {
    const sorted = [...plan.ids].sort((a, b) => a - b);
    if (ordering[0].desc) sorted.reverse();
    const pageIds = sorted.slice(offset, offset + limit);
    return {
      count: sorted.length,
      records: await core.store.getMany(model, pageIds),
      limit,
      offset,
    };
  }
  const key = listKey(conditions, ordering);
  if (key === null) {
    const records = await filterRecords(core, def, conditions, plan.ids);
    await sortRecords(core, def, records, ordering, cache);
    return { count: records.length, records: records.slice(offset, offset + limit), limit, offset };
  }
  // The sorted ids are kept while the model is unchanged: the next pages of the same list
  // read their records only (a limit=1000 walk through 30,000 objects sorted them 30 times).
  const made: { records?: StoredObject[] } = {};
  const related = ordering.map((o) => relatedOrdering(core, def, o.field)?.model)
    .filter((m): m is string => m !== undefined);
  const ids = await core.store.derivedIds(model, key, async () => {
    const records = await filterRecords(core, def, conditions, plan.ids);
    await sortRecords(core, def, records, ordering, cache);
    made.records = records;
    return records.map((r) => r.id);
  }, related);
  const records = made.records
    ? made.records.slice(offset, offset + limit)
    : await core.store.getMany(model, ids.slice(offset, offset + limit));
  return { count: ids.length, records, limit, offset };
}

/** Id sets larger than this are not worth a cache key (they come from searches and nested filters). */
const MAX_KEYED_IDS = 1000;

/**
 * A list's identity for the derived-ids cache: conditions that read only the model's own
 * records, and the ordering. Null when a condition cannot be named (an opaque test).
 */
function listKey(conditions: Condition[], ordering: Ordering): string | null {
  const parts: unknown[] = [];
  for (const c of conditions) {
    switch (c.kind) {
      case "predicate":
        return null;
      case "ids":
        if (c.ids.size > MAX_KEYED_IDS) return null;
        parts.push(["ids", [...c.ids].sort((a, b) => a - b)]);
        break;
      case "id":
        parts.push(["id", c.lookup, c.values]);
        break;
      case "field":
        parts.push(["field", c.field, c.lookup, c.values]);
        break;
      case "rel":
        parts.push(["rel", c.field, c.lookup, c.ids, c.all]);
        break;
      case "cf":
        parts.push(["cf", c.name, c.lookup, c.values]);
        break;
    }
  }
  return JSON.stringify([parts, ordering]);
}

function orderingOf(def: ModelDef, raw: string | null): Ordering {
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
  if (!order.some((o) => o.field === "id")) {
    order.push({ field: "id", desc: order[0].desc });
  }
  return order;
}

/** Sorts records in place in the model's default ordering (its Meta.ordering, then id). */
export async function sortByDefaultOrdering(
  core: EngineCore,
  def: ModelDef,
  records: StoredObject[],
): Promise<void> {
  if (records.length > 1) await sortRecords(core, def, records, orderingOf(def, null), newCache());
}

/** One part of a record's place in a list: a sort key, compared descending when `desc`. */
type SortPart = { key: IndexValue; desc: boolean };

/**
 * Sorts records as PostgreSQL sorts NetBox's queryset: nulls last in an ascending list, first in
 * a descending one (the store's sortKey), and a foreign key by the related object's own default
 * ordering, as Django's `order_by("<fk>")` follows the related model's Meta.ordering (a
 * `?ordering=tenant` list is in tenant name order, the VMs without a tenant last), not by the
 * related id. The related records are read once per request into its cache (the answer nests
 * them anyway). docs/api-behaviour.md, "Inventory: conventions".
 */
async function sortRecords(
  core: EngineCore,
  def: ModelDef,
  records: StoredObject[],
  ordering: Ordering,
  cache: RequestCache,
): Promise<void> {
  const { store } = core;
  const partsOf: Array<(record: StoredObject) => SortPart[]> = [];
  for (const { field, desc } of ordering) {
    const target = relatedOrdering(core, def, field);
    if (target === null) {
      const f = def.fields[field];
      partsOf.push((r) => [{ key: orderKey(store, f, r[field]), desc }]);
      continue;
    }
    const related = cachedRecords(cache, target.model);
    const targetFields = core.registry.definition(target.model).fields;
    await readUncached(store, cache, target.model, fkIds(records, field));
    partsOf.push((r) => {
      const other = typeof r[field] === "number" ? related.get(r[field] as number) : null;
      if (!other) return [{ key: store.sortKey(null), desc }];
      return target.fields.map((o) => ({
        key: orderKey(store, targetFields[o.field], other[o.field]),
        desc: o.desc !== desc,
      }));
    });
  }
  const keys = new Map(records.map((r) => [r, partsOf.flatMap((parts) => parts(r))]));
  records.sort((a, b) => {
    const ka = keys.get(a)!, kb = keys.get(b)!;
    for (let i = 0; i < ka.length; i++) {
      const c = store.compareSortKeys(ka[i].key, kb[i].key);
      if (c !== 0) return ka[i].desc ? -c : c;
    }
    return 0;
  });
}

/** The ids a foreign key of these records names. */
function fkIds(records: readonly StoredObject[], field: string): Set<number> {
  const ids = new Set<number>();
  for (const r of records) if (typeof r[field] === "number") ids.add(r[field] as number);
  return ids;
}

/**
 * For a foreign key, the related model and the stored fields of its default ordering (Django
 * expands `order_by("<fk>")` into them); null for any other field, or a related model ordered
 * by id alone or by nothing (the stored id then sorts as the related id would).
 */
function relatedOrdering(
  core: EngineCore,
  def: ModelDef,
  field: string,
): { model: string; fields: Array<{ field: string; desc: boolean }> } | null {
  const f = def.fields[field];
  if (f?.type !== "fk" || !f.model || !core.registry.has(f.model)) return null;
  const target = core.registry.definition(f.model);
  const fields = (target.ordering ?? []).map((item) => ({
    field: item.replace(/^-/, ""),
    desc: item.startsWith("-"),
  })).filter((o) =>
    o.field === "id" || o.field === "created" || o.field === "last_updated" ||
    (target.fields[o.field] && !target.fields[o.field].compute)
  );
  // True of an empty list too: a model with no ordering is ordered by id.
  if (fields.every((o) => o.field === "id")) return null;
  return { model: f.model, fields };
}

/**
 * Candidates this many or fewer are tested record by record against a condition whose index is
 * LARGER_INDEX times larger than they are, instead of reading that index.
 */
const FEW_CANDIDATES = 1000;
const LARGER_INDEX = 4;
/** Conditions with at most this many values are sized by their counters (one batched read). */
const SIZED_VALUES = 10;

/** A condition an index can answer: its field and the values to read under it. */
interface IndexRead {
  field: string;
  values: IndexValue[];
  /** All the values at once (tags given together), else any of them. */
  all: boolean;
  /** A value that names nothing was given (an unknown tag, given together): no match. */
  nothing: boolean;
}

function indexRead(core: EngineCore, cond: Condition): IndexRead | null {
  if (cond.kind === "rel" && cond.lookup === "exact" && !cond.ids.includes(null)) {
    const ids = cond.ids as number[];
    return {
      field: cond.field,
      values: ids.filter((id) => id >= 0),
      all: cond.all,
      nothing: cond.all && ids.some((id) => id < 0),
    };
  }
  if (
    cond.kind === "field" && cond.def.index && (cond.lookup === "exact" || cond.lookup === "in")
  ) {
    const list = cond.lookup === "in" ? splitList(cond.values) : cond.values;
    const typed = list.map((v) => typedFilterValue(cond.def, v));
    // Empty and over-long strings have no index entry (index_state.ts): those are scanned.
    if (
      typed.every((v) => v !== undefined && (typeof v !== "string" || indexedString(core.store, v)))
    ) {
      return { field: cond.field, values: typed as IndexValue[], all: false, nothing: false };
    }
  }
  return null;
}

/**
 * Id sets from indexes for positive conditions; covered when indexes answer everything.
 *
 * Indexes are read smallest first, and one much larger than the candidates found so far is not
 * read: its condition is tested on those candidates' records (filterRecords tests every
 * condition anyway). The sync's sliced reads name 100 parents and its tag
 * (`virtual_machine_id=…&tag=bridgebox-synced`): the tag's index holds every object the sync
 * made, so reading it made each request cost as much as the estate and a run grow with its
 * square (docs/sync.md, "At 100,000 guests").
 */
async function candidates(
  core: EngineCore,
  def: ModelDef,
  conditions: Condition[],
): Promise<{ ids: Set<number> | null; covered: boolean }> {
  const model = core.registry.nameOf(def);
  let ids: Set<number> | null = null;
  let covered = true;
  const intersect = (next: Set<number>) => {
    if (ids === null) ids = next;
    else ids = new Set([...ids].filter((id) => next.has(id)));
  };
  const reads: IndexRead[] = [];
  for (const cond of conditions) {
    if (cond.kind === "ids") {
      intersect(cond.ids);
      continue;
    }
    if (cond.kind === "id" && (cond.lookup === "exact" || cond.lookup === "in")) {
      const list = cond.lookup === "in" ? splitList(cond.values) : cond.values;
      intersect(new Set(list.map(Number)));
      continue;
    }
    const read = indexRead(core, cond);
    if (read) reads.push(read);
    else covered = false;
  }
  // Sizes of the conditions with few values on counted fields (one counter per value); the
  // others are read first, as named: a field of few objects per value, or many values given.
  const uncounted = indexShape(def).uncounted;
  const sized = await Promise.all(reads.map(async (read) => {
    if (uncounted.has(read.field) || read.values.length > SIZED_VALUES) return -1;
    const counts = await core.store.countsByIndex(model, read.field, read.values);
    return counts.reduce((a, b) => a + b, 0);
  }));
  const order = reads.map((read, i) => ({ read, size: sized[i] }))
    .sort((a, b) => a.size - b.size);
  for (const { read, size } of order) {
    const known = ids as Set<number> | null;
    if (
      size >= 0 && known !== null && known.size <= FEW_CANDIDATES &&
      size > LARGER_INDEX * known.size
    ) {
      covered = false;
      continue;
    }
    // Every value in one call: a filter naming 100 parents reads them together.
    const lists = await core.store.idsByIndexMany(model, read.field, read.values);
    if (read.nothing) intersect(new Set());
    if (read.all) { for (const list of lists) intersect(new Set(list)); }
    else intersect(new Set(lists.flat()));
  }
  return { ids, covered };
}

async function filterRecords(
  core: EngineCore,
  def: ModelDef,
  conditions: Condition[],
  ids: Set<number> | null,
): Promise<StoredObject[]> {
  const model = core.registry.nameOf(def);
  const records = ids === null
    ? await core.store.scan(model)
    : await core.store.getMany(model, [...ids].sort((a, b) => a - b));
  // Conditions that read other records next, on the records the others left; patterns last:
  // a record another filter already refused costs no related read and no pattern work.
  const reading = (c: Condition) => c.kind === "predicate" && c.prepare !== undefined;
  const plain = conditions.filter((c) => !reading(c) && !isPatternCondition(c));
  const tests = plain.map((c) => predicate(c));
  let kept = records.filter((r) => tests.every((t) => t(r)));
  for (const c of conditions.filter(reading)) {
    if (c.kind === "predicate") await c.prepare!(kept);
    const test = predicate(c);
    kept = kept.filter((r) => test(r));
  }
  const patterns = conditions.filter((c) => !reading(c) && isPatternCondition(c)).map((c) =>
    predicate(c)
  );
  return kept.filter((r) => patterns.every((t) => t(r)));
}

async function select(
  core: EngineCore,
  def: ModelDef,
  conditions: Condition[],
): Promise<StoredObject[]> {
  const plan = await candidates(core, def, conditions);
  return filterRecords(core, def, conditions, plan.ids);
}

/**
 * Pages answered from indexes alone: no filter or one exact filter on an indexed field or
 * FK, ordered by id or by the model's default ordering. Reads offset+limit index keys and
 * one counter, however many objects the store holds.
 */
async function fastPage(
  core: EngineCore,
  def: ModelDef,
  conditions: Condition[],
  ordering: Ordering,
  offset: number,
  limit: number,
): Promise<ListPage | null> {
  const model = core.registry.nameOf(def);
  const target = indexTarget(core, conditions);
  if (target === null) return null;
  const { field, value } = target;
  const primary = ordering[0];
  const byId = primary.field === "id" && ordering.length === 1;
  const order = orderField(def);
  const byOrder = !byId && order !== null && ordering.length === 2 &&
    primary.field === order.field &&
    ordering[1].field === "id" && ordering[1].desc === primary.desc;
  if (!byId && !byOrder) return null;
  if (field === order?.field) return null;
  if (field === "*" && byId) return null;
  // No ordered twin for a value holding a few objects: those are sorted in memory.
  if (byOrder && indexShape(def).fewPerValue.has(field)) return null;
  const [count, ids] = await Promise.all([
    indexCount(core, def, field, value),
    core.store.pageByIndex(model, field, value, {
      offset,
      limit,
      reverse: primary.desc,
      ordered: byOrder,
    }),
  ]);
  return { count, records: await core.store.getMany(model, ids), limit, offset };
}

/**
 * How many objects the index holds under (field, value), or all of the model's for "*": the
 * value's counter, or for a field kept without counters (index_state.ts, IndexShape) its few
 * index entries listed.
 */
export async function indexCount(
  core: EngineCore,
  def: ModelDef,
  field: string,
  value: IndexValue,
): Promise<number> {
  const model = core.registry.nameOf(def);
  if (field === "*") return await core.store.count(model);
  if (!indexShape(def).uncounted.has(field)) {
    return await core.store.countByIndex(model, field, value);
  }
  return (await core.store.idsByIndex(model, field, value)).length;
}

/**
 * The one index a list reads: every object ("*") for no condition, else one exact FK or
 * indexed-field value. Null when the conditions need more than one index.
 */
function indexTarget(
  core: EngineCore,
  conditions: Condition[],
): { field: string; value: IndexValue } | null {
  if (conditions.length === 0) return { field: "*", value: 0 };
  if (conditions.length !== 1) return null;
  const c = conditions[0];
  if (
    c.kind === "rel" && c.lookup === "exact" && !c.all && c.ids.length === 1 &&
    typeof c.ids[0] === "number" && c.ids[0] > 0
  ) {
    return { field: c.field, value: c.ids[0] };
  }
  if (c.kind === "field" && c.def.index && c.lookup === "exact" && c.values.length === 1) {
    const typed = typedFilterValue(c.def, c.values[0]);
    if (
      typed === undefined ||
      (typeof typed === "string" && !indexedString(core.store, typed))
    ) {
      return null;
    }
    return { field: c.field, value: typed };
  }
  return null;
}

/** The widest id range a span page reads whole (one page's worth of ids). */
const MAX_SPAN = MAX_PAGE_SIZE;

/**
 * The ids a list is bounded to from both sides (`id__gte=a&id__lte=b`, each bound one value),
 * `[low, high]`; null without both bounds.
 */
function idSpan(conditions: Condition[]): [number, number] | null {
  let low = -Infinity;
  let high = Infinity;
  for (const c of conditions) {
    if (c.kind !== "id" || c.values.length !== 1 || !/^\d{1,15}$/.test(c.values[0].trim())) {
      continue;
    }
    const v = Number(c.values[0].trim());
    if (c.lookup === "gt") low = Math.max(low, v + 1);
    else if (c.lookup === "gte") low = Math.max(low, v);
    else if (c.lookup === "lt") high = Math.min(high, v - 1);
    else if (c.lookup === "lte") high = Math.min(high, v);
  }
  return Number.isFinite(low) && Number.isFinite(high) ? [low, high] : null;
}

/**
 * A page of an id range at most a page wide (`id__gte=a&id__lte=b`, how the sync reads the
 * change log since its cursor: docs/sync.md, "Re-runs"): the range's records are read by id
 * and every condition tested on them, so the count is exact and nothing outside the range is
 * listed (a keyset page's count lists the ids below its bound). Null for a wider range.
 */
async function spanPage(
  core: EngineCore,
  def: ModelDef,
  conditions: Condition[],
  desc: boolean,
  offset: number,
  limit: number,
): Promise<ListPage | null> {
  const span = idSpan(conditions);
  if (span === null) return null;
  const [low, high] = span;
  if (high < low) return { count: 0, records: [], limit, offset };
  if (high - low + 1 > MAX_SPAN) return null;
  const ids = new Set<number>();
  for (let id = low; id <= high; id++) ids.add(id);
  const records = await filterRecords(core, def, conditions, ids);
  records.sort((a, b) => desc ? b.id - a.id : a.id - b.id);
  return { count: records.length, records: records.slice(offset, offset + limit), limit, offset };
}

/**
 * A keyset page (`ordering=id&id__gt=<last id seen>`, how the sync walks a list): the ids
 * above the last one seen under one index, read from there. Offset paging over a list being
 * written skips or repeats objects when an earlier one comes or goes, and reads every key
 * before the offset; a keyset walk sees each object present throughout exactly once and
 * reads one page of keys per page.
 */
async function keysetPage(
  core: EngineCore,
  def: ModelDef,
  conditions: Condition[],
  offset: number,
  limit: number,
): Promise<ListPage | null> {
  const at = conditions.findIndex((c) =>
    c.kind === "id" && (c.lookup === "gt" || c.lookup === "gte") && c.values.length === 1 &&
    /^\d{1,15}$/.test(c.values[0].trim())
  );
  if (at < 0) return null;
  const bound = conditions[at] as Extract<Condition, { kind: "id" }>;
  const target = indexTarget(core, conditions.filter((_, i) => i !== at));
  if (target === null) return null;
  const model = core.registry.nameOf(def);
  const after = Number(bound.values[0].trim()) - (bound.lookup === "gte" ? 1 : 0);
  const { field, value } = target;
  const ids = await core.store.idsAfter(model, field, value, after, offset + limit);
  // A page that is not full holds every id after the bound: that is the count, and the ids up
  // to the bound are not listed (a walk's last page, or a reader polling the end of a long
  // list such as the change log: docs/sync.md, "Re-runs").
  let count = ids.length;
  if (ids.length >= offset + limit) {
    const [total, before] = await Promise.all([
      indexCount(core, def, field, value),
      core.store.countUpTo(model, field, value, after),
    ]);
    count = Math.max(0, total - before);
  }
  const records = await core.store.getMany(model, ids.slice(offset));
  return { count, records, limit, offset };
}
