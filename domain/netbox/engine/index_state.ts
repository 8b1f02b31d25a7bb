/**
 * The index entries a record has in the store: value indexes (FKs, m2m members, tags,
 * indexed fields, generic FKs as `model:id`), unique-constraint entries, and ordered-index
 * entries following the model's default ordering.
 */
import type {
  IndexEntry,
  IndexValue,
  ModelStore,
  OrderedEntry,
  StoredObject,
  UniqueEntry,
} from "../../../storage/ports.ts";
import type { FieldDef, ModelDef } from "../types.ts";
import { constraintName, fieldEntries, isEmpty } from "./core.ts";

export interface IndexState {
  indexes: IndexEntry[];
  uniques: UniqueEntry[];
  ordered: OrderedEntry[];
}

/**
 * Whether a string value has entries in the value index: empty and over-long strings get none
 * (their filters scan), so a read of the index for them would miss what they match.
 */
export function indexedString(store: Pick<ModelStore, "maxIndexedLength">, v: string): boolean {
  return v !== "" && v.length <= store.maxIndexedLength;
}

export function stateOf(store: ModelStore, def: ModelDef, record: StoredObject): IndexState {
  const indexes: IndexEntry[] = [];
  const shape = indexShape(def);
  const add = (field: string, v: unknown) => {
    if (v === null || v === undefined) return;
    if (typeof v === "string" && !indexedString(store, v)) return;
    if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") {
      indexes.push(shape.uncounted.has(field) ? [field, v, false] : [field, v]);
    }
  };
  for (const [name, f] of fieldEntries(def)) {
    if (f.compute) continue;
    const v = record[name];
    if (f.type === "fk") add(name, v);
    else if (f.type === "gfk") {
      if (f.weak) continue;
      const t = record[f.typeField!];
      const i = record[f.idField!];
      if (typeof t === "string" && typeof i === "number") add(name, `${t}:${i}`);
    } else if (f.type === "m2m" || (f.type === "list" && f.index)) {
      if (Array.isArray(v)) { for (const x of new Set(v)) add(name, x); }
    } else if (f.index || f.partialIndex?.(record)) add(name, v);
  }
  if (def.tags !== false && Array.isArray(record.tags)) {
    for (const t of new Set(record.tags)) add("tags", t);
  }
  const uniques: UniqueEntry[] = [];
  for (const u of def.unique ?? []) {
    const values = u.fields.map((f) =>
      u.ci && typeof record[f] === "string" ? (record[f] as string).toLowerCase() : record[f]
    );
    if (values.some(isEmpty) || (u.when && !u.when(record))) continue;
    uniques.push([constraintName(u), values as IndexValue[]]);
  }
  const ordered: OrderedEntry[] = [];
  const order = orderField(def);
  if (order) {
    const key = orderKey(store, def.fields[order.field], record[order.field]);
    ordered.push(["*", 0, key]);
    for (const [field, value] of indexes) {
      if (field !== order.field && !shape.fewPerValue.has(field)) ordered.push([field, value, key]);
    }
  }
  return { indexes, uniques, ordered };
}

/**
 * Index fields whose values each hold one object or the few children of one parent: a field
 * unique on its own (a tag's name), one marked `fewPerValue` (a serial, an IP's address, a
 * primary IP), a generic FK (`assigned_object`: one interface's IPs) and the id field of one
 * (`assigned_object_id`, the change log's `changed_object_id`). They get no
 * ordered twin (a list filtered by one is sorted in memory: a few records), and those holding
 * plain values no per-value counter (counting the value's few index entries reads as little as
 * the counter would). A generic FK keeps its counter: related counts (`count_ipaddresses`) read
 * it for a whole page at once (docs/sync.md, "Writes: mutations per object").
 */
export interface IndexShape {
  fewPerValue: ReadonlySet<string>;
  uncounted: ReadonlySet<string>;
}

const shapes = new WeakMap<ModelDef, IndexShape>();

export function indexShape(def: ModelDef): IndexShape {
  let shape = shapes.get(def);
  if (shape) return shape;
  const fewPerValue = new Set<string>();
  const uncounted = new Set<string>();
  for (const u of def.unique ?? []) {
    if (u.fields.length === 1 && !u.when) {
      fewPerValue.add(u.fields[0]);
      uncounted.add(u.fields[0]);
    }
  }
  for (const [name, f] of Object.entries(def.fields)) {
    // A partial index holds the few objects its condition picks (the change log's request_id:
    // one entry per request).
    if (f.fewPerValue || f.partialIndex) {
      fewPerValue.add(name);
      if (f.type !== "gfk") uncounted.add(name);
    }
    if (f.type !== "gfk") continue;
    if (!f.weak) fewPerValue.add(name);
    if (f.idField && def.fields[f.idField] && !def.fields[f.idField].compute) {
      fewPerValue.add(f.idField);
      uncounted.add(f.idField);
    }
  }
  shapes.set(def, shape = { fewPerValue, uncounted });
  return shape;
}

/**
 * How many objects of `def` (named `model` in the store) hold each of `values` under `field`:
 * the per-value counters, or for a field kept without them (IndexShape) its few index entries
 * listed. One batched read for all the values.
 */
export async function countsByValue(
  store: ModelStore,
  model: string,
  def: ModelDef,
  field: string,
  values: readonly IndexValue[],
): Promise<number[]> {
  if (!indexShape(def).uncounted.has(field)) {
    return await store.countsByIndex(model, field, values);
  }
  return (await store.idsByIndexMany(model, field, values)).map((found) => found.length);
}

/**
 * The stored field of the model's default ordering that the ordered index follows, or null when
 * the model keeps no ordered index. A default ordering of two fields or more (a VM's interfaces
 * and disks: by VM, then name; snapshot records: by vmid, then name) gets none unless the model
 * names one (`orderedIndex`): its default lists tie-break by the second field, so the index (one
 * field, then id) never answers them, and an ordered entry and a twin per indexed value cost
 * every write for an explicit `?ordering=<first field>` alone (docs/sync.md, "Writes: round 5").
 */
export function orderField(def: ModelDef): { field: string; desc: boolean } | null {
  if (!def.orderedIndex && orderingFields(def) > 1) return null;
  return firstOrderingField(def);
}

/** How many fields the model's default ordering names before its id tie-break. */
function orderingFields(def: ModelDef): number {
  return (def.ordering ?? []).filter((f) => f.replace(/^-/, "") !== "id").length;
}

/**
 * The stored field an ordered index would follow (the named `orderedIndex`, else the default
 * ordering's first field), whatever the ordering's length: what index layouts before 4 kept an
 * ordered index by (engine.ts, dropUnusedIndexKeys).
 */
export function firstOrderingField(def: ModelDef): { field: string; desc: boolean } | null {
  const first = def.orderedIndex ?? def.ordering?.[0];
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
 * A value's sort key for a field: the store's (natural order) unless the field sorts by the
 * database's collation (FieldDef.collation "text": lower case, digits as characters), shared by
 * the ordered index and in-memory sorting so both agree.
 */
export function orderKey(
  store: Pick<ModelStore, "sortKey">,
  field: FieldDef | undefined,
  value: unknown,
): IndexValue {
  if (field?.collation === "text" && typeof value === "string") {
    return value.toLowerCase().slice(0, 300);
  }
  return store.sortKey(value);
}
