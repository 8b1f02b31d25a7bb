/**
 * The declarative NetBox-compatible model engine: validation, unique constraints, FKs with
 * PROTECT/CASCADE/SET_NULL, NetBox filters and lookups, `q`, ordering, paging, brief/nested
 * representations, custom fields, tags, hooks and bulk writes, over the ModelStore port.
 *
 * Register models with `engine.register(def)`; routes/inventory exposes every registered
 * model over REST. Plugin code uses the EngineApi methods (insert/update/patchStored/find).
 *
 * This class is the front; each concern is a module of engine/: registry.ts (models and
 * who points at whom), query.ts (filter parsing), lookups.ts (matching), search.ts (`q`),
 * paging.ts (candidates, ordering, pages), render.ts, custom_fields.ts, references.ts,
 * prepare.ts (drafts), write.ts (creates/updates), patch.ts (direct stored changes),
 * delete.ts (collect, then execute) and index_state.ts (a record's index entries).
 */
import type { IndexValue, ModelStore } from "../../storage/ports.ts";
import type { Logger } from "../../infra/logger.ts";
import type { CustomFieldDef } from "./custom_fields.ts";
import {
  type AuthInfo,
  DEFAULT_INVENTORY_SETTINGS,
  type EngineApi,
  type FieldDef,
  type InventorySettings,
  type ModelDef,
  type StoredObject,
  type WriteResult,
} from "./types.ts";
import { type EngineCore, type RequestCache } from "./engine/core.ts";
import { ModelRegistry } from "./engine/registry.ts";
import { find, type ListPage, listPage } from "./engine/paging.ts";
import { customFieldsFor } from "./engine/custom_fields.ts";
import { displayOf, Renderer, type RenderOptions, urlOf } from "./engine/render.ts";
import {
  countsByValue,
  firstOrderingField,
  indexedString,
  indexShape,
  type IndexState,
  orderField,
  stateOf,
} from "./engine/index_state.ts";
import { createMany, updateMany, type WriteOptions } from "./engine/write.ts";
import { patchStored, patchStoredMany } from "./engine/patch.ts";
import { deleteMany, type DeleteOptions } from "./engine/delete.ts";
import type { ChangelogBounds } from "./engine/changelog.ts";

export { DEFAULT_PAGE_SIZE, type ListPage, MAX_PAGE_SIZE } from "./engine/paging.ts";
export { QueryError } from "./engine/query.ts";
export { parseChangelogMessage } from "./engine/prepare.ts";
export type { ChangeRequest } from "./engine/changelog.ts";
export { CUSTOM_FIELD_MODEL, TAG_MODEL } from "./engine/registry.ts";
export type { RenderOptions } from "./engine/render.ts";

export interface ListQuery {
  /** Raw query parameters, repeated keys kept. */
  params: URLSearchParams;
}

export interface EngineDeps {
  store: ModelStore;
  logger: Logger;
  now: () => number;
  /** How long the change log is kept (config.ts `changelog`); absent: never pruned. */
  changelog?: ChangelogBounds;
  /** NetBox configuration parameters the rules read (default: NetBox's defaults). */
  settings?: Partial<InventorySettings>;
}

/**
 * The index layout this build writes (see dropUnusedIndexKeys): 2 dropped the twins and counters
 * of fields of few objects per value, 3 those of the plugin's per-guest records (a VM's sync
 * state, backups and snapshots, by VM, vmid and volume), 4 the ordered index of models whose
 * default ordering names two fields (orderField: VM interfaces, virtual disks, snapshot records),
 * 5 the counters of the change log's `request_id` (indexed once per request's batch of entries),
 * 6 the value index of the fields in UNINDEXED_FIELDS, 7 the ordered entries of a null value
 * (an unnamed device) under null's own sort key, after every value instead of before
 * (rewriteNullOrderedKeys), 8 the ordered entries of a field sorted by the database's collation
 * (a tag's name: FieldDef.collation) under that collation's key (rewriteTextOrderedKeys).
 */
export const INDEX_LAYOUT = 8;

/**
 * Fields an earlier layout kept a value index for and this one does not (no read used it): their
 * index entries are dropped at start. An IP's `address` (`?address=` reads `host`).
 */
const UNINDEXED_FIELDS: ReadonlyArray<{ model: string; field: string }> = [
  { model: "ipam.ipaddress", field: "address" },
];

function isNullish(value: unknown): boolean {
  return value === null || value === undefined;
}

export class ModelEngine implements EngineApi {
  readonly store: ModelStore;
  readonly logger: Logger;
  readonly now: () => number;
  readonly #registry = new ModelRegistry();
  readonly #core: EngineCore;
  readonly #renderer: Renderer;

  constructor(deps: EngineDeps) {
    this.store = deps.store;
    this.logger = deps.logger;
    this.now = deps.now;
    this.#core = {
      registry: this.#registry,
      store: deps.store,
      logger: deps.logger,
      now: deps.now,
      settings: { ...DEFAULT_INVENTORY_SETTINGS, ...deps.settings },
      api: this,
      changelog: deps.changelog ? { bounds: deps.changelog, lastAgeSweep: 0 } : undefined,
    };
    this.#renderer = new Renderer(this.#core);
  }

  // ------------------------------------------------------------------ registry

  /**
   * Removes the index keys this layout no longer keeps (no ordered twin or counter for a field
   * of few objects per value, IndexShape; no ordered index for a model ordered by two fields,
   * orderField) that an earlier build wrote, once per store:
   * run at start, after every model is registered. Idempotent, and safe with two processes
   * starting at once (they delete the same keys; nothing writes there any more).
   */
  async dropUnusedIndexKeys(): Promise<number> {
    const layout = await this.store.indexLayout();
    if (layout >= INDEX_LAYOUT) return 0;
    let dropped = 0;
    for (const def of this.#registry.models()) {
      const model = this.#registry.nameOf(def);
      const shape = indexShape(def);
      const order = orderField(def);
      if (!order && firstOrderingField(def)) {
        // Layout 4: no ordered index at all (its "*" entries and every twin) for this model.
        dropped += await this.store.dropIndexKeys(model, null, "ordered");
      }
      for (const field of order ? shape.fewPerValue : []) {
        if (field !== order!.field) {
          dropped += await this.store.dropIndexKeys(model, field, "ordered");
        }
      }
      for (const field of shape.uncounted) {
        dropped += await this.store.dropIndexKeys(model, field, "counters");
      }
    }
    for (const { model, field } of UNINDEXED_FIELDS) {
      if (this.#registry.has(model)) {
        dropped += await this.store.dropIndexKeys(model, field, "index");
      }
    }
    if (layout < 7) await this.#rewriteNullOrderedKeys();
    await this.#rewriteTextOrderedKeys();
    await this.store.setIndexLayout(INDEX_LAYOUT);
    return dropped;
  }

  /**
   * Layout 7: a record whose ordered field is null (a device without a name) had its ordered
   * entries under the empty string's sort key, first in an ascending list; they move under null's
   * own key (the store's sortKey), last, as PostgreSQL sorts NULL. Only models whose ordered
   * field may be null are read.
   */
  #rewriteNullOrderedKeys(): Promise<void> {
    return this.#moveOrderedKeys(
      (field) => !(field.required && !field.nullable),
      (value) => isNullish(value) ? "" : null,
    );
  }

  /**
   * Layout 8: a field sorted by the database's collation (FieldDef.collation: a tag's name) had
   * its ordered entries under the natural-order key (`n2` before `n10`); they move under the
   * collation's key (orderKey). Only models whose ordered field has such a collation are read
   * (tags: a few).
   */
  #rewriteTextOrderedKeys(): Promise<void> {
    return this.#moveOrderedKeys(
      (field) => field.collation === "text",
      (value) => this.store.sortKey(value),
    );
  }

  /**
   * Moves the ordered entries of the records of the models whose ordered field `applies` to
   * from the key an earlier layout gave them (`earlierKey` of the field's value; null: the
   * record had today's) to today's. Each record is one version-checked commit: a record written
   * meanwhile already has today's keys (its retry finds nothing to move).
   */
  async #moveOrderedKeys(
    applies: (field: FieldDef) => boolean,
    earlierKey: (value: unknown) => IndexValue | null,
  ): Promise<void> {
    for (const def of this.#registry.models()) {
      const order = orderField(def);
      const field = order ? def.fields[order.field] : undefined;
      if (!order || !field || !applies(field)) continue;
      const model = this.#registry.nameOf(def);
      for (const found of await this.store.scan(model)) {
        if (earlierKey(found[order.field]) === null) continue;
        for (let attempt = 0; attempt < 3; attempt++) {
          const current = await this.store.get(model, found.id);
          const key = current ? earlierKey(current.record[order.field]) : null;
          if (!current || key === null) break;
          const state = stateOf(this.store, def, current.record);
          const earlier = state.ordered.map(([f, v]) => [f, v, key] as const);
          if (earlier.every(([, , k], n) => k === state.ordered[n][2])) break;
          const result = await this.store.commit([{
            model,
            id: found.id,
            prev: { ...state, record: current.record, ordered: earlier, version: current.version },
            next: { ...state, record: current.record },
          }]);
          if (result.ok) break;
        }
      }
    }
  }

  register(...defs: ModelDef[]): this {
    this.#registry.register(...defs);
    return this;
  }

  models(): ModelDef[] {
    return this.#registry.models();
  }

  has(model: string): boolean {
    return this.#registry.has(model);
  }

  definition(model: string): ModelDef {
    return this.#registry.definition(model);
  }

  nameOf(def: ModelDef): string {
    return this.#registry.nameOf(def);
  }

  /** The model served at an /api/ sub-path ("dcim/sites/"), if any. */
  byPath(path: string): ModelDef | undefined {
    return this.#registry.byPath(path);
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

  find(model: string, filters: Record<string, string[]> = {}): Promise<StoredObject[]> {
    return find(this.#core, model, filters);
  }

  async findOne(model: string, filters: Record<string, string[]>): Promise<StoredObject | null> {
    return (await this.find(model, filters))[0] ?? null;
  }

  countReferences(model: string, field: string, ids: readonly number[]): Promise<number[]> {
    return countsByValue(this.store, model, this.#registry.definition(model), field, ids);
  }

  idsReferring(model: string, field: string, ids: readonly number[]): Promise<number[][]> {
    const f = this.#registry.definition(model).fields[field];
    if (f?.type !== "fk") throw new Error(`${model}.${field} is not a foreign key`);
    return ids.length ? this.store.idsByIndexMany(model, field, ids) : Promise.resolve([]);
  }

  idsIndexed(
    model: string,
    field: string,
    values: readonly string[],
  ): Promise<number[][] | null> {
    const f = this.#registry.definition(model).fields[field];
    if (!f?.index && !f?.partialIndex) throw new Error(`${model}.${field} is not indexed`);
    if (!values.every((v) => indexedString(this.store, v))) return Promise.resolve(null);
    return this.store.idsByIndexMany(model, field, values);
  }

  /** A NetBox list: filters, q, ordering, limit/offset. Throws QueryError on bad filter values. */
  list(model: string, params: URLSearchParams): Promise<ListPage> {
    return listPage(this.#core, model, params);
  }

  /** Size of a value as the store counts it (for size budgets such as a job's log). */
  recordSize(value: unknown): number {
    return this.store.recordSize(value);
  }

  // ------------------------------------------------------------------ rendering

  customFieldsFor(model: string, cache?: RequestCache): Promise<CustomFieldDef[]> {
    return customFieldsFor(this.#core, model, cache);
  }

  urlOf(def: ModelDef, id: number, origin: string): string {
    return urlOf(def, id, origin);
  }

  displayOf(def: ModelDef, record: StoredObject): string {
    return displayOf(def, record);
  }

  /** Renders records as the API shows them (full, brief, fields/omit), nested objects resolved. */
  render(
    model: string,
    records: StoredObject[],
    options: RenderOptions,
  ): Promise<Record<string, unknown>[]> {
    return this.#renderer.render(model, records, options);
  }

  // ------------------------------------------------------------------ writes

  stateOf(def: ModelDef, record: StoredObject): IndexState {
    return stateOf(this.store, def, record);
  }

  /** The stored field of the model's default ordering that the ordered index follows. */
  orderField(def: ModelDef): { field: string; desc: boolean } | null {
    return orderField(def);
  }

  /**
   * Creates one or many objects, all-or-nothing. Many objects are written in as few atomics
   * as the store's limits allow (one per batch, not per object or field).
   */
  createMany(
    model: string,
    inputs: unknown[],
    auth: AuthInfo | null = null,
    options: WriteOptions = {},
  ): Promise<WriteResult<StoredObject[]>> {
    return createMany(this.#core, model, inputs, auth, options);
  }

  async create(
    model: string,
    input: unknown,
    auth: AuthInfo | null = null,
    options: WriteOptions = {},
  ): Promise<WriteResult<StoredObject>> {
    const r = await this.createMany(model, [input], auth, options);
    if (!r.ok) {
      if (r.reason === "invalid" && Array.isArray(r.errors)) {
        return { ok: false, reason: "invalid", errors: r.errors[0] };
      }
      return r as WriteResult<StoredObject>;
    }
    return { ok: true, value: r.value[0], extras: r.extras };
  }

  insert(model: string, input: Record<string, unknown>): Promise<WriteResult<StoredObject>> {
    return this.create(model, input, null);
  }

  /** Updates many objects (bulk PUT/PATCH: each input carries its id), all validated first. */
  updateMany(
    model: string,
    inputs: Array<{ id: number; data: unknown }>,
    partial: boolean,
    auth: AuthInfo | null = null,
    options: WriteOptions = {},
  ): Promise<WriteResult<StoredObject[]>> {
    return updateMany(this.#core, model, inputs, partial, auth, options);
  }

  async updateOne(
    model: string,
    id: number,
    data: unknown,
    partial: boolean,
    auth: AuthInfo | null = null,
    options: WriteOptions = {},
  ): Promise<WriteResult<StoredObject>> {
    const r = await this.updateMany(model, [{ id, data }], partial, auth, options);
    if (!r.ok) {
      if (r.reason === "invalid" && Array.isArray(r.errors)) {
        return { ok: false, reason: "invalid", errors: r.errors[0] };
      }
      return r as WriteResult<StoredObject>;
    }
    if (r.value.length === 0) return { ok: false, reason: "not_found", detail: "Not found." };
    return { ok: true, value: r.value[0], extras: r.extras };
  }

  update(
    model: string,
    id: number,
    input: Record<string, unknown>,
    options: WriteOptions = {},
  ): Promise<WriteResult<StoredObject>> {
    return this.updateOne(model, id, input, true, null, options);
  }

  patchStored(
    model: string,
    id: number,
    changes: Record<string, unknown> | ((current: StoredObject) => Record<string, unknown>),
  ): Promise<StoredObject | null> {
    return patchStored(this.#core, model, id, changes);
  }

  patchStoredMany(
    model: string,
    changes: ReadonlyMap<number, Record<string, unknown>>,
  ): Promise<void> {
    return patchStoredMany(this.#core, model, changes);
  }

  // ------------------------------------------------------------------ deletes

  /** Deletes objects (and their CASCADE dependents); a conflict when PROTECT dependents exist. */
  deleteMany(
    model: string,
    ids: number[],
    auth: AuthInfo | null = null,
    options: DeleteOptions = {},
  ): Promise<WriteResult<null>> {
    return deleteMany(this.#core, model, ids, auth, options);
  }

  remove(model: string, id: number): Promise<WriteResult<null>> {
    return this.deleteMany(model, [id]);
  }
}
