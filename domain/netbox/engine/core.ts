/**
 * What every part of the model engine shares: the registry, the store port, the clock and
 * logger, the engine as hooks see it, and the per-request cache of records read.
 */
import type { ModelStore, StoredObject } from "../../../storage/ports.ts";
import type { Logger } from "../../../infra/logger.ts";
import type { CustomFieldDef } from "../custom_fields.ts";
import { patternMeter, type WorkMeter } from "../user_patterns.ts";
import type { EngineApi, FieldDef, InventorySettings, ModelDef } from "../types.ts";
import type { ModelRegistry } from "./registry.ts";

/** How long the change log is kept (config.ts `changelog`). */
export interface ChangelogBounds {
  retentionDays: number;
  maxEntries: number;
}

/** The change log's bounds and prune state per engine (the age sweep runs once a minute). */
export interface ChangelogState {
  bounds: ChangelogBounds;
  lastAgeSweep: number;
}

export interface EngineCore {
  readonly registry: ModelRegistry;
  readonly store: ModelStore;
  readonly logger: Logger;
  readonly now: () => number;
  readonly settings: InventorySettings;
  /** The engine as hooks and custom filters see it. */
  readonly api: EngineApi;
  /** The change log's bounds and prune state (absent: never pruned). */
  readonly changelog?: ChangelogState;
}

/** Records (null: known missing) and custom-field definitions read once per request. */
export interface RequestCache {
  records: Map<string, Map<number, StoredObject | null>>;
  customFields: Map<string, CustomFieldDef[]>;
  /** The request's budget for user patterns (custom-field validation_regex on writes). */
  patterns: WorkMeter;
  /** Ids under one index value (indexedKey), read once per request (HookContext.byIndex). */
  indexed: Map<string, readonly number[]>;
}

export function newCache(): RequestCache {
  return {
    records: new Map(),
    customFields: new Map(),
    patterns: patternMeter(),
    indexed: new Map(),
  };
}

/** The request cache's key of one index value. */
export function indexedKey(model: string, field: string, value: string): string {
  return `${model}\u0000${field}\u0000${value}`;
}

/**
 * Reads into the request cache the records of `model` among `ids` it does not hold yet, in one
 * batched read through the store (and its read cache), and answers those found; an id the store
 * does not have is cached as null, so the request never asks for it again.
 */
export async function readUncached(
  store: ModelStore,
  cache: RequestCache,
  model: string,
  ids: Iterable<number>,
): Promise<StoredObject[]> {
  const known = cachedRecords(cache, model);
  const missing = [...new Set(ids)].filter((id) => !known.has(id));
  if (missing.length === 0) return [];
  const found = await store.getMany(model, missing);
  for (const id of missing) known.set(id, null);
  for (const record of found) known.set(record.id, record);
  return found;
}

/** The cached records of one model (created empty on first use). */
export function cachedRecords(
  cache: RequestCache,
  model: string,
): Map<number, StoredObject | null> {
  let m = cache.records.get(model);
  if (!m) {
    m = new Map();
    cache.records.set(model, m);
  }
  return m;
}

const fieldEntryMemo = new WeakMap<ModelDef, ReadonlyArray<readonly [string, FieldDef]>>();

/**
 * `Object.entries(def.fields)`, made once per model: the loops every object of a bulk write
 * passes (prepare, stateOf, refsOf, prefetchRefs) each made the model's field pairs afresh, an
 * array per field each call (25 for a VM; docs/sync.md, "Writes: round 9"). A model's definition
 * is not changed once made (NetBox-version deltas make new ones).
 */
export function fieldEntries(def: ModelDef): ReadonlyArray<readonly [string, FieldDef]> {
  let entries = fieldEntryMemo.get(def);
  if (!entries) fieldEntryMemo.set(def, entries = Object.entries(def.fields));
  return entries;
}

export function isEmpty(value: unknown): boolean {
  return value === null || value === undefined || value === "";
}

/** The store's name of a unique constraint. */
export function constraintName(u: { fields: string[]; name?: string }): string {
  return u.name ?? u.fields.join("+");
}
