/**
 * Records as the API shows them: full or brief, `fields`/`omit`, related objects nested in
 * their brief form (two levels deep, then id/url/display), choices as {value, label}, custom
 * fields (object ones nested too).
 */
import type { StoredObject } from "../../../storage/ports.ts";
import { type CustomFieldDef, renderCustomFields } from "../custom_fields.ts";
import type { ModelDef } from "../types.ts";
import { cachedRecords, type EngineCore, newCache, type RequestCache } from "./core.ts";
import { customFieldsFor } from "./custom_fields.ts";
import { TAG_MODEL, TAGS_FIELD } from "./registry.ts";

export interface RenderOptions {
  /** Scheme + host, e.g. "http://127.0.0.1:8800"; URLs are `${origin}/api/${path}${id}/`. */
  origin: string;
  brief?: boolean;
  fields?: string[];
  omit?: string[];
}

export function urlOf(def: ModelDef, id: number, origin: string): string {
  return `${origin}/api/${def.path}${id}/`;
}

export function displayOf(def: ModelDef, record: StoredObject): string {
  if (def.display) return def.display(record);
  if (typeof record.name === "string" && record.name) return record.name;
  return `${def.verbose} ${record.id}`;
}

/** Renders records as the API shows them (full, brief, fields/omit), nested objects resolved. */
export async function render(
  core: EngineCore,
  model: string,
  records: StoredObject[],
  options: RenderOptions,
): Promise<Record<string, unknown>[]> {
  const def = core.registry.definition(model);
  const cache = newCache();
  const names = outputFields(def, options);
  await preload(core, def, records, names, cache, 0);
  const cfs = def.customFields !== false && names.includes("custom_fields")
    ? await customFieldsFor(core, model, cache)
    : [];
  const out = records.map((r) => renderOne(core, def, r, names, cache, options.origin, cfs, 0));
  await renderObjectCustomFields(core, out, cfs, cache, options.origin);
  return out;
}

/** Object / multi-object custom fields render as nested objects, as NetBox shows them. */
async function renderObjectCustomFields(
  core: EngineCore,
  out: Record<string, unknown>[],
  cfs: CustomFieldDef[],
  cache: RequestCache,
  origin: string,
): Promise<void> {
  for (const cf of cfs) {
    if (cf.type !== "object" && cf.type !== "multiobject") continue;
    const target = (cf as CustomFieldDef & { related_object_type?: unknown }).related_object_type;
    if (typeof target !== "string" || !core.registry.has(target)) continue;
    const valuesOf = (o: Record<string, unknown>) => {
      const v = (o.custom_fields as Record<string, unknown> | undefined)?.[cf.name];
      return Array.isArray(v) ? v : v === null || v === undefined ? [] : [v];
    };
    const known = cachedRecords(cache, target);
    const ids = [...new Set(out.flatMap(valuesOf))].filter(
      (id): id is number => typeof id === "number" && !known.has(id),
    );
    if (ids.length > 0) {
      for (const id of ids) known.set(id, null);
      for (const r of await core.store.getMany(target, ids)) known.set(r.id, r);
      const tdef = core.registry.definition(target);
      await preload(
        core,
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
      const nested = valuesOf(o).map((id) => nestedOf(core, target, id, cache, origin, 1));
      data[cf.name] = cf.type === "object" ? nested[0] ?? null : nested.filter((x) => x !== null);
    }
  }
}

function outputFields(def: ModelDef, options: RenderOptions): string[] {
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

async function preload(
  core: EngineCore,
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
    const known = cachedRecords(cache, model);
    if (known.has(id)) return;
    let set = wanted.get(model);
    if (!set) wanted.set(model, set = new Set());
    set.add(id);
  };
  for (const name of names) {
    const f = name === "tags" ? TAGS_FIELD : def.fields[name];
    if (f?.type === "gfk") {
      for (const r of records) {
        const t = r[f.typeField!];
        if (typeof t === "string" && core.registry.has(t)) want(t, r[f.idField!]);
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
    const loaded = await core.store.getMany(model, [...ids]);
    const map = cachedRecords(cache, model);
    for (const id of ids) map.set(id, null);
    for (const r of loaded) map.set(r.id, r);
    if (core.registry.has(model)) {
      const target = core.registry.definition(model);
      await preload(core, target, loaded, target.brief, cache, depth + 1);
    }
  }
}

function renderOne(
  core: EngineCore,
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
        out.url = urlOf(def, r.id, origin);
        continue;
      case "display":
        out.display = displayOf(def, r);
        continue;
      case "tags":
        out.tags = nestedList(core, TAG_MODEL, r.tags, cache, origin, depth);
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
        ? nestedOf(core, f.model!, f.compute(r), cache, origin, depth)
        : f.compute(r);
      continue;
    }
    const v = r[name];
    if (f.type === "gfk") {
      const t = r[f.typeField!];
      out[name] = typeof t === "string"
        ? nestedOf(core, t, r[f.idField!], cache, origin, depth)
        : null;
    } else if (f.type === "fk") out[name] = nestedOf(core, f.model!, v, cache, origin, depth);
    else if (f.type === "m2m") out[name] = nestedList(core, f.model!, v, cache, origin, depth);
    else if (f.type === "choice") {
      if (v === null || v === undefined || v === "") {
        out[name] = f.nullable || v === null ? null : v;
      } else out[name] = { value: v, label: f.choices?.find(([c]) => c === v)?.[1] ?? String(v) };
    } else out[name] = v === undefined ? null : v;
  }
  return out;
}

function nestedOf(
  core: EngineCore,
  model: string,
  id: unknown,
  cache: RequestCache,
  origin: string,
  depth: number,
): unknown {
  if (typeof id !== "number") return null;
  const r = cachedRecords(cache, model).get(id);
  if (!r || !core.registry.has(model)) return null;
  const def = core.registry.definition(model);
  if (depth >= 2) {
    return { id: r.id, url: urlOf(def, r.id, origin), display: displayOf(def, r) };
  }
  return renderOne(
    core,
    def,
    r,
    ["id", "url", "display", ...def.brief],
    cache,
    origin,
    [],
    depth + 1,
  );
}

function nestedList(
  core: EngineCore,
  model: string,
  ids: unknown,
  cache: RequestCache,
  origin: string,
  depth: number,
): unknown[] {
  if (!Array.isArray(ids)) return [];
  return ids.map((id) => nestedOf(core, model, id, cache, origin, depth)).filter((x) => x !== null);
}
