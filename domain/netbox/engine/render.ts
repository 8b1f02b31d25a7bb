/**
 * Records as the API shows them: full or brief, `fields`/`omit`, related objects nested in
 * their brief form (two levels deep, then id/url/display), choices as {value, label}, custom
 * fields (object ones nested too).
 *
 * What keeps a page cheap: the fields of a model are walked once per (model, field list)
 * into a render plan of small steps; the records a page refers to are loaded in one batch
 * per model (all models at once) before any row is rendered; and a related object is
 * rendered once per page and shared by every row that refers to it.
 */
import type { StoredObject } from "../../../storage/ports.ts";
import { type CustomFieldDef, renderCustomFields } from "../custom_fields.ts";
import type { FieldDef, ModelDef } from "../types.ts";
import { cachedRecords, type EngineCore, newCache, type RequestCache } from "./core.ts";
import { customFieldsFor } from "./custom_fields.ts";
import { countsByValue } from "./index_state.ts";
import { TAG_MODEL } from "./registry.ts";

export interface RenderOptions {
  /** Scheme + host, e.g. "http://127.0.0.1:8800"; URLs are `${origin}/api/${path}${id}/`. */
  origin: string;
  brief?: boolean;
  fields?: string[];
  omit?: string[];
  /**
   * Records the request has read already (ListPage.read): nested objects found there are not
   * read again. Only records read in the same request: they are as fresh as the page's own.
   */
  known?: RequestCache;
}

type Out = Record<string, unknown>;

export function urlOf(def: ModelDef, id: number, origin: string): string {
  return `${origin}/api/${def.path}${id}/`;
}

export function displayOf(def: ModelDef, record: StoredObject): string {
  if (def.display) return def.display(record);
  if (typeof record.name === "string" && record.name) return record.name;
  return `${def.verbose} ${record.id}`;
}

/** One output key of a plan: writes `out[name]` for a record. */
type Step = (
  r: StoredObject,
  out: Out,
  page: PageRender,
  depth: number,
  cfs: CustomFieldDef[],
) => void;

/** A relation a plan renders nested: what to batch-load before rendering. */
interface Reference {
  /** The target model; for a generic FK, the field holding it. */
  model?: string;
  typeField?: string;
  idField?: string;
  /** The referenced id(s) of a record. */
  read: (r: StoredObject) => unknown;
  /** Fields the nested form adds to the target's brief ones (FieldDef.nested). */
  nested?: string[];
}

/** The fields of a model walked once: one step per output key, and what they refer to. */
interface Plan {
  steps: Step[];
  references: Reference[];
  /** Related-object counts, filled in after the rows are built. */
  counts: Array<{ name: string; model: string; field: string }>;
  /** Values resolved from other records, filled in after the rows are built. */
  resolved: Array<{ name: string; resolve: NonNullable<FieldDef["resolve"]> }>;
}

/** One render call: its origin, the records it loaded, and the nested forms built so far. */
class PageRender {
  /** model → depth → id → nested form (only non-null forms are kept). */
  readonly #nested = new Map<string, Map<number, unknown>[]>();
  /** model|extra fields|depth → id → nested form with extra fields. */
  readonly #nestedWith = new Map<string, Map<number, unknown>>();

  constructor(
    readonly renderer: Renderer,
    readonly cache: RequestCache,
    readonly origin: string,
  ) {}

  /** Forget nested forms (records were loaded since: a form may now resolve further). */
  forgetNested(): void {
    this.#nested.clear();
    this.#nestedWith.clear();
  }

  nested(model: string, id: unknown, depth: number): unknown {
    if (typeof id !== "number") return null;
    let byDepth = this.#nested.get(model);
    if (!byDepth) this.#nested.set(model, byDepth = []);
    const known = byDepth[depth] ??= new Map();
    const hit = known.get(id);
    if (hit !== undefined) return hit;
    const form = this.#build(model, id, depth);
    if (form !== null) known.set(id, form);
    return form;
  }

  #build(model: string, id: number, depth: number): unknown {
    const r = cachedRecords(this.cache, model).get(id);
    const registry = this.renderer.core.registry;
    if (!r || !registry.has(model)) return null;
    const def = registry.definition(model);
    if (depth >= 2) {
      return { id: r.id, url: urlOf(def, r.id, this.origin), display: displayOf(def, r) };
    }
    return this.row(this.renderer.briefPlan(def), r, depth + 1, []);
  }

  /** The nested form with `extra` fields beyond the brief ones (FieldDef.nested). */
  nestedWith(model: string, id: unknown, depth: number, extra: string[]): unknown {
    if (typeof id !== "number") return null;
    const r = cachedRecords(this.cache, model).get(id);
    const registry = this.renderer.core.registry;
    if (!r || !registry.has(model) || depth >= 2) return this.nested(model, id, depth);
    const key = `${model}|${extra.join(",")}|${depth}`;
    let known = this.#nestedWith.get(key);
    if (!known) this.#nestedWith.set(key, known = new Map());
    const hit = known.get(id);
    if (hit !== undefined) return hit;
    const form = this.row(
      this.renderer.nestedPlan(registry.definition(model), extra),
      r,
      depth + 1,
      [],
    );
    known.set(id, form);
    return form;
  }

  nestedList(model: string, ids: unknown, depth: number): unknown[] {
    if (!Array.isArray(ids)) return [];
    const out: unknown[] = [];
    for (const id of ids) {
      const form = this.nested(model, id, depth);
      if (form !== null) out.push(form);
    }
    return out;
  }

  row(plan: Plan, r: StoredObject, depth: number, cfs: CustomFieldDef[]): Out {
    const out: Out = {};
    for (const step of plan.steps) step(r, out, this, depth, cfs);
    return out;
  }
}

/** Renders records; holds the render plans of the registered models. */
export class Renderer {
  /** def → field list (comma-joined) → plan. */
  readonly #plans = new WeakMap<ModelDef, Map<string, Plan>>();

  constructor(readonly core: EngineCore) {}

  /** Renders records as the API shows them (full, brief, fields/omit), nested objects resolved. */
  async render(
    model: string,
    records: StoredObject[],
    options: RenderOptions,
  ): Promise<Record<string, unknown>[]> {
    const def = this.core.registry.definition(model);
    const cache = options.known ?? newCache();
    const plan = this.plan(def, outputFields(def, options));
    // Counts and resolved values need only the records: read them while the page loads.
    const later = [
      ...this.#counts(def, plan, records),
      ...plan.resolved.map(async ({ name, resolve }) => ({
        name,
        values: await resolve(records, this.core.api, options.origin),
      })),
    ];
    // Awaited below; a failure before then must not count as an unhandled rejection.
    for (const p of later) p.catch(() => {});
    const [cfs] = await Promise.all([
      def.customFields !== false && plan.steps.includes(CUSTOM_FIELDS_STEP)
        ? customFieldsFor(this.core, model, cache)
        : [],
      this.#preload(plan, records, cache, 0),
    ]);
    const page = new PageRender(this, cache, options.origin);
    const out = records.map((r) => page.row(plan, r, 0, cfs));
    const [filled] = await Promise.all([
      Promise.all(later),
      this.#renderObjectCustomFields(out, cfs, page),
    ]);
    for (const { name, values } of filled) values.forEach((v, i) => out[i][name] = v);
    return out;
  }

  /** Related-object counts, one batched counter read per (model, field) for the whole page. */
  #counts(
    def: ModelDef,
    plan: Plan,
    records: StoredObject[],
  ): Array<Promise<{ name: string; values: unknown[] }>> {
    if (plan.counts.length === 0) return [];
    const { registry, store } = this.core;
    const self = registry.nameOf(def);
    const ids = records.map((r) => r.id);
    /** One batched read per (model, field): the counters of every record of the page. */
    const countAll = async (model: string, field: string): Promise<number[]> => {
      if (!registry.has(model)) return ids.map(() => 0);
      const counted = registry.definition(model);
      const gfk = counted.fields[field]?.type === "gfk";
      return await countsByValue(
        store,
        model,
        counted,
        field,
        gfk ? ids.map((id) => `${self}:${id}`) : ids,
      );
    };
    return plan.counts.map(async ({ name, model, field }) => {
      if (model !== "*") return { name, values: await countAll(model, field) };
      const models = registry.models().filter((m) => m.tags !== false);
      const perModel = await Promise.all(models.map((m) => countAll(registry.nameOf(m), field)));
      return { name, values: ids.map((_, i) => perModel.reduce((sum, c) => sum + c[i], 0)) };
    });
  }

  briefPlan(def: ModelDef): Plan {
    return this.plan(def, ["id", "url", "display", ...def.brief]);
  }

  /** The brief plan plus `extra` fields (FieldDef.nested). */
  nestedPlan(def: ModelDef, extra: string[]): Plan {
    return this.plan(def, ["id", "url", "display", ...def.brief, ...extra]);
  }

  plan(def: ModelDef, names: string[]): Plan {
    let plans = this.#plans.get(def);
    if (!plans) this.#plans.set(def, plans = new Map());
    const key = names.join(",");
    let plan = plans.get(key);
    if (!plan) plans.set(key, plan = compilePlan(def, names));
    return plan;
  }

  /**
   * Loads what the records refer to, every model in one batch (all models at once), then
   * what those refer to in their brief form, down to the depth nesting reaches.
   */
  async #preload(
    plan: Plan,
    records: StoredObject[],
    cache: RequestCache,
    depth: number,
  ): Promise<void> {
    if (depth > 2) return;
    const registry = this.core.registry;
    const wanted = new Map<string, Set<number>>();
    const want = (model: string, id: unknown) => {
      if (typeof id !== "number") return;
      if (cachedRecords(cache, model).has(id)) return;
      let set = wanted.get(model);
      if (!set) wanted.set(model, set = new Set());
      set.add(id);
    };
    for (const ref of plan.references) {
      if (ref.typeField) {
        for (const r of records) {
          const t = r[ref.typeField];
          if (typeof t === "string" && registry.has(t)) want(t, r[ref.idField!]);
        }
        continue;
      }
      for (const r of records) {
        const v = ref.read(r);
        if (Array.isArray(v)) { for (const id of v) want(ref.model!, id); }
        else want(ref.model!, v);
      }
    }
    // A model some reference shows with extra fields: preload what those refer to as well.
    const extraOf = new Map<string, string[]>();
    for (const ref of plan.references) {
      if (ref.model && ref.nested) extraOf.set(ref.model, ref.nested);
    }
    await Promise.all([...wanted].map(async ([model, ids]) => {
      const loaded = await this.core.store.getMany(model, [...ids]);
      const map = cachedRecords(cache, model);
      for (const id of ids) map.set(id, null);
      for (const r of loaded) map.set(r.id, r);
      if (registry.has(model)) {
        const target = registry.definition(model);
        const extra = extraOf.get(model);
        const next = extra ? this.nestedPlan(target, extra) : this.briefPlan(target);
        await this.#preload(next, loaded, cache, depth + 1);
      }
    }));
  }

  /** Object / multi-object custom fields render as nested objects, as NetBox shows them. */
  async #renderObjectCustomFields(
    out: Record<string, unknown>[],
    cfs: CustomFieldDef[],
    page: PageRender,
  ): Promise<void> {
    const { registry, store } = this.core;
    for (const cf of cfs) {
      if (cf.type !== "object" && cf.type !== "multiobject") continue;
      const target = (cf as CustomFieldDef & { related_object_type?: unknown })
        .related_object_type;
      if (typeof target !== "string" || !registry.has(target)) continue;
      const valuesOf = (o: Record<string, unknown>) => {
        const v = (o.custom_fields as Record<string, unknown> | undefined)?.[cf.name];
        return Array.isArray(v) ? v : v === null || v === undefined ? [] : [v];
      };
      const known = cachedRecords(page.cache, target);
      const ids = [...new Set(out.flatMap(valuesOf))].filter(
        (id): id is number => typeof id === "number" && !known.has(id),
      );
      if (ids.length > 0) {
        for (const id of ids) known.set(id, null);
        for (const r of await store.getMany(target, ids)) known.set(r.id, r);
        const tdef = registry.definition(target);
        await this.#preload(
          this.briefPlan(tdef),
          [...known.values()].filter((r) => r !== null) as StoredObject[],
          page.cache,
          0,
        );
        page.forgetNested();
      }
      for (const o of out) {
        const data = o.custom_fields as Record<string, unknown> | undefined;
        if (!data || data[cf.name] === null || data[cf.name] === undefined) continue;
        // Nested as a reference of the row itself (depth 0): NetBox 4.6 renders an object
        // custom field as the target's brief form, whose own references (a VM interface's VM)
        // show their brief forms too, not only id/url/display.
        const nested = valuesOf(o).map((id) => page.nested(target, id, 0));
        data[cf.name] = cf.type === "object" ? nested[0] ?? null : nested.filter((x) => x !== null);
      }
    }
  }
}

/**
 * The names a request renders. NetBox 4.5's precedence: `fields` beats `omit`, which beats
 * `brief` (each picks from the full field list; the others are then ignored).
 */
function outputFields(def: ModelDef, options: RenderOptions): string[] {
  const full = () => {
    const names = def.displayUrl === false ? ["id", "url", "display"] : [
      "id",
      "url",
      "display_url",
      "display",
    ];
    for (const [k, f] of Object.entries(def.fields)) if (!f.writeOnly && !f.hidden) names.push(k);
    if (def.tags !== false) names.push("tags");
    if (def.customFields !== false) names.push("custom_fields");
    if (def.timestamps !== false) names.push("created", "last_updated");
    return names;
  };
  if (options.fields && options.fields.length > 0) {
    const allowed = new Set(options.fields);
    return full().filter((n) => allowed.has(n));
  }
  if (options.omit && options.omit.length > 0) {
    const omitted = new Set(options.omit);
    return full().filter((n) => !omitted.has(n));
  }
  if (options.brief) return ["id", "url", "display", ...def.brief];
  return full();
}

const CUSTOM_FIELDS_STEP: Step = (r, out, _page, _depth, cfs) => {
  out.custom_fields = renderCustomFields(
    cfs,
    r.custom_fields as Record<string, unknown> | undefined,
  );
};

/** Walks the fields of `def` once: the step for each output name, and what it refers to. */
function compilePlan(def: ModelDef, names: string[]): Plan {
  const steps: Step[] = [];
  const references: Reference[] = [];
  const counts: Plan["counts"] = [];
  const resolved: Plan["resolved"] = [];
  for (const name of names) {
    switch (name) {
      case "id":
        steps.push((r, out) => out.id = r.id);
        continue;
      case "url":
        steps.push((r, out, page) => out.url = urlOf(def, r.id, page.origin));
        continue;
      case "display_url":
        // The record's page in NetBox's web UI: the API path without /api.
        steps.push((r, out, page) => out.display_url = `${page.origin}/${def.path}${r.id}/`);
        continue;
      case "display":
        steps.push((r, out) => out.display = displayOf(def, r));
        continue;
      case "tags":
        references.push({ model: TAG_MODEL, read: (r) => r.tags });
        steps.push((r, out, page, depth) =>
          out.tags = page.nestedList(TAG_MODEL, tagOrder(page.cache, r.tags), depth)
        );
        continue;
      case "custom_fields":
        steps.push(CUSTOM_FIELDS_STEP);
        continue;
      case "created":
      case "last_updated":
        steps.push((r, out) => out[name] = r[name] ?? null);
        continue;
    }
    const f = def.fields[name];
    if (!f) continue;
    if (f.count || f.resolve) {
      if (f.count) counts.push({ name, ...f.count });
      else resolved.push({ name, resolve: f.resolve! });
      // The key keeps its place; nested forms (depth > 0) leave these out.
      steps.push((_r, out, _page, depth) => {
        if (depth === 0) out[name] = null;
      });
      continue;
    }
    const reference = referenceOf(name, f);
    if (reference) references.push(reference);
    steps.push(fieldStep(name, f));
  }
  return { steps, references, counts, resolved };
}

// Every strength: names that differ only in accents or case still take one order (unaccented and
// lower case first, as a Postgres collation sorts them), never the order they were written in;
// digits as characters (`n10` before `n2`), as the tag list sorts them (FieldDef.collation).
const TAG_NAMES = new Intl.Collator("en", { sensitivity: "variant" });

/**
 * An object's tags in NetBox 4.6's order (Tag.Meta.ordering: weight, then name), whatever order
 * they were written in. Tags not loaded keep their place at the end.
 */
function tagOrder(cache: RequestCache, ids: unknown): unknown {
  if (!Array.isArray(ids) || ids.length < 2) return ids;
  const known = cachedRecords(cache, TAG_MODEL);
  const weight = (id: unknown) => Number(known.get(id as number)?.weight ?? 1000);
  const name = (id: unknown) => String(known.get(id as number)?.name ?? "");
  return [...ids].sort((a, b) => weight(a) - weight(b) || TAG_NAMES.compare(name(a), name(b)));
}

/** What a field refers to (fk, m2m, computed fk, generic fk), for batch-loading. */
function referenceOf(name: string, f: FieldDef): Reference | null {
  if (f.type === "gfk") {
    return { typeField: f.typeField!, idField: f.idField!, read: () => null };
  }
  if ((f.type !== "fk" && f.type !== "m2m") || !f.model) return null;
  const compute = f.compute;
  return {
    model: f.model,
    read: compute ? (r) => compute(r) : (r) => r[name],
    nested: f.type === "fk" ? f.nested : undefined,
  };
}

function fieldStep(name: string, f: FieldDef): Step {
  const compute = f.compute;
  if (compute) {
    // A computed FK (e.g. `primary_ip`) renders nested like a stored one.
    if (f.type === "fk") {
      const model = f.model!;
      const extra = f.nested;
      if (extra) {
        return (r, out, page, depth) =>
          out[name] = page.nestedWith(model, compute(r), depth, extra);
      }
      return (r, out, page, depth) => out[name] = page.nested(model, compute(r), depth);
    }
    if (f.type === "m2m") {
      const model = f.model!;
      return (r, out, page, depth) => out[name] = page.nestedList(model, compute(r), depth);
    }
    return (r, out) => out[name] = compute(r);
  }
  switch (f.type) {
    case "gfk": {
      const typeField = f.typeField!;
      const idField = f.idField!;
      return (r, out, page, depth) => {
        const t = r[typeField];
        out[name] = typeof t === "string" ? page.nested(t, r[idField], depth) : null;
      };
    }
    case "fk": {
      const model = f.model!;
      const extra = f.nested;
      if (extra) {
        return (r, out, page, depth) => out[name] = page.nestedWith(model, r[name], depth, extra);
      }
      return (r, out, page, depth) => out[name] = page.nested(model, r[name], depth);
    }
    case "m2m": {
      const model = f.model!;
      return (r, out, page, depth) => out[name] = page.nestedList(model, r[name], depth);
    }
    case "choice": {
      const labels = new Map<unknown, string>();
      // The first label of a value wins, as a linear search would find it.
      for (const [value, label] of f.choices ?? []) {
        if (!labels.has(value)) labels.set(value, label);
      }
      const nullable = f.nullable;
      if (f.contentType) {
        return (r, out) => out[name] = r[name] === undefined || r[name] === "" ? null : r[name];
      }
      return (r, out) => {
        const v = r[name];
        if (v === null || v === undefined || v === "") {
          out[name] = nullable || v === null ? null : v;
        } else out[name] = { value: v, label: labels.get(v) ?? String(v) };
      };
    }
    default:
      return (r, out) => {
        const v = r[name];
        out[name] = v === undefined ? null : v;
      };
  }
}
