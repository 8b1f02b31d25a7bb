/**
 * References between records: resolving what a client sends for an FK or m2m (an id, a
 * nested id, or attributes that select exactly one object), listing the references a record
 * holds, and finding those whose target is gone.
 */
import type { StoredObject } from "../../../storage/ports.ts";
import { MESSAGES, parseRef, type RefInput } from "../fields.ts";
import type { AuthInfo, FieldDef, ModelDef } from "../types.ts";
import { cachedRecords, type EngineCore, fieldEntries, type RequestCache } from "./core.ts";
import { find } from "./paging.ts";
import { LOOKUPS, nestedAttrProblem } from "./query.ts";
import { TAG_MODEL } from "./registry.ts";

export type Resolved = { ok: true; id: number } | { ok: false; error: string };

/** One reference a record holds. */
export interface Ref {
  field: string;
  model: string;
  id: number;
}

/**
 * The object a reference names, as NetBox's get_related_object_by_attrs finds it: by id always;
 * by attributes only among the objects the token may view (`viewer`; null for the engine's own
 * writes): a token that may not list sites cannot probe them by slug, as NetBox restricts the
 * queryset to the user's view permission before the look-up. Errors name the attributes as NetBox
 * flattens them (`{'type__slug': 'pve'}`).
 */
export async function resolveRef(
  core: EngineCore,
  model: string,
  ref: RefInput,
  cache: RequestCache,
  viewer: AuthInfo | null = null,
): Promise<Resolved> {
  if ("id" in ref) {
    const map = cachedRecords(cache, model);
    let r = map.get(ref.id);
    if (r === undefined) {
      r = (await core.store.get(model, ref.id))?.record ?? null;
      map.set(ref.id, r);
    }
    return r ? { ok: true, id: ref.id } : { ok: false, error: MESSAGES.pk(ref.id) };
  }
  if (viewer !== null && !mayView(viewer, model)) {
    return { ok: false, error: MESSAGES.attrs(ref.attrs) };
  }
  const filters: Record<string, string[]> = {};
  const target = core.registry.definition(model);
  for (const [k, v] of Object.entries(joined(target, ref.attrs))) {
    // An empty nested dict adds no look-up (NetBox's flattening drops it).
    if (isEmptyDict(v)) continue;
    // Attributes must name something the model can be looked up by: an unknown one would be
    // ignored by the filter engine and match every object (NetBox refuses the query).
    const problem = nestedAttrProblem(target, k);
    if (problem !== null) return { ok: false, error: problem };
    if (v !== null && typeof v === "object") {
      // Nested attribute dicts ({"cluster": {"name": "c1"}}) resolve to the related id first.
      const f = target.fields[k];
      if (f?.type === "fk" && f.model) {
        const inner = parseRef(v);
        if (!inner.ok) return { ok: false, error: MESSAGES.attrs(ref.attrs) };
        const resolved = await resolveRef(core, f.model, inner.ref, cache);
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
    // No look-up at all (`{}`): NetBox's get() over the whole model; two ids tell "several".
    found = Object.keys(filters).length === 0
      ? await core.store.page(model, 0, 2, false)
      : await find(core, model, filters);
  } catch {
    return { ok: false, error: MESSAGES.attrs(ref.attrs) };
  }
  if (found.length === 0) return { ok: false, error: MESSAGES.attrs(ref.attrs) };
  if (found.length > 1) return { ok: false, error: MESSAGES.multiple(ref.attrs) };
  cachedRecords(cache, model).set(found[0].id, found[0]);
  return { ok: true, id: found[0].id };
}

function isEmptyDict(v: unknown): boolean {
  return v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0;
}

/** Whether the token may list `model` (NetBox's `restrict(user, "view")`). */
function mayView(viewer: AuthInfo, model: string): boolean {
  const [app, name] = model.split(".");
  return viewer.isSuperuser || viewer.permissions.has(`${app}.view_${name}`);
}

/**
 * `{"type__slug": "pve"}` as `{"type": {"slug": "pve"}}`: the ORM's join across an FK, the
 * form NetBox itself flattens a nested dict into. Lookups (`type__n`) and `<fk>__id` stay.
 */
function joined(def: ModelDef, attrs: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(attrs)) {
    const at = k.indexOf("__");
    const head = at > 0 ? k.slice(0, at) : k;
    const rest = k.slice(at + 2);
    const inner = out[head];
    if (
      at > 0 && def.fields[head]?.type === "fk" && rest !== "id" && !LOOKUPS.has(rest) &&
      (inner === undefined || (typeof inner === "object" && inner !== null))
    ) {
      out[head] = { ...(inner as Record<string, unknown> | undefined), [rest]: v };
    } else out[k] = v;
  }
  return out;
}

/** An FK value (id, nested, or null) or an m2m list, resolved to ids. */
export async function parseRelation(
  core: EngineCore,
  f: FieldDef,
  value: unknown,
  cache: RequestCache,
  viewer: AuthInfo | null = null,
): Promise<{ ok: true; value: unknown } | { ok: false; error: string }> {
  if (f.type === "fk") {
    if (value === null) {
      return f.nullable ? { ok: true, value: null } : { ok: false, error: MESSAGES.null };
    }
    const ref = parseRef(value);
    if (!ref.ok) return ref;
    const r = await resolveRef(core, f.model!, ref.ref, cache, viewer);
    return r.ok ? { ok: true, value: r.id } : r;
  }
  // A many-to-many field is not nullable in NetBox's serializers (DRF: "This field may not be
  // null."); `[]` clears it (docs/api-behaviour.md).
  if (value === null) return { ok: false, error: MESSAGES.null };
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
    const r = await resolveRef(core, f.model!, ref.ref, cache, viewer);
    if (!r.ok) return r;
    if (!ids.includes(r.id)) ids.push(r.id);
  }
  return { ok: true, value: ids };
}

/** Every reference a record holds: FKs, m2m members (tags too) and generic FKs. */
export function refsOf(core: EngineCore, def: ModelDef, r: StoredObject): Ref[] {
  const out: Ref[] = [];
  for (const [name, f] of fieldEntries(def)) {
    if (f.compute) continue;
    const v = r[name];
    if (f.type === "fk" && f.model && typeof v === "number") {
      out.push({ field: name, model: f.model, id: v });
    } else if (f.type === "m2m" && f.model && Array.isArray(v)) {
      for (const id of v) {
        if (typeof id === "number") out.push({ field: name, model: f.model, id });
      }
    } else if (f.type === "gfk" && !f.weak) {
      const t = r[f.typeField!];
      const i = r[f.idField!];
      if (typeof t === "string" && typeof i === "number" && core.registry.has(t)) {
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
export async function danglingRefs(
  core: EngineCore,
  def: ModelDef,
  records: Array<{ record: StoredObject; before: StoredObject | null }>,
): Promise<Map<number, Ref[]>> {
  const perRecord = records.map(({ record, before }) => {
    const had = new Set(
      before ? refsOf(core, def, before).map((x) => `${x.field}:${x.model}:${x.id}`) : [],
    );
    return {
      id: record.id,
      refs: refsOf(core, def, record).filter((x) => !had.has(`${x.field}:${x.model}:${x.id}`)),
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
    const found = await core.store.getMany(model, [...ids]);
    existing.set(model, new Set(found.map((r) => r.id)));
  }
  const out = new Map<number, Ref[]>();
  for (const { id, refs } of perRecord) {
    const missing = refs.filter((x) => !existing.get(x.model)?.has(x.id));
    if (missing.length > 0) out.set(id, missing);
  }
  return out;
}
