import type {
  CommitResult,
  IndexEntry,
  IndexValue,
  ModelStore,
  ObjectWrite,
  OrderedEntry,
  StoredObject,
  UniqueEntry,
} from "../ports.ts";
import { keys } from "./keys.ts";
import { retryAtomic } from "./ids.ts";

/** Deno KV limits per atomic operation, with headroom for our own estimates. */
const MAX_CHECKS = 100;
const MAX_MUTATIONS = 1000;
// KV allows 80 KiB of keys per atomic; keyBytes() never undercounts KV's own measure.
const MAX_KEY_BYTES = 78 * 1024;
const MAX_TOTAL_BYTES = 640 * 1024; // KV allows 800 KiB of keys + values per atomic
/** KvU64 arithmetic wraps, so adding 2^64-1 subtracts one. */
const MINUS_ONE = 0xffff_ffff_ffff_ffffn;
/** Strings longer than this are not put in value indexes (2 KiB keys); lookups then scan. */
const MAX_INDEXED_LENGTH = 400;
/** Stored records must fit one KV value (64 KiB) with room to spare. */
const MAX_RECORD_BYTES = 60_000;

/**
 * Deno KV refuses to read a key over its size limit (2 KiB); nothing can have been stored under
 * such a key either, so a lookup by a value that long (a hostile filter) finds nothing.
 */
async function orNothing<T>(read: () => Promise<T>, nothing: T): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof TypeError && error.message.startsWith("Key too large")) return nothing;
    throw error;
  }
}

/** idsByIndexMany reads one range of the index for this many values or more… */
const RANGE_MIN_VALUES = 4;
/** …when the range holds at most this many values per value asked (ids made one after another). */
const RANGE_SPREAD = 4;
/** Strings read as one range of an index: printable ASCII, ordered alike by KV and by JS. */
const PLAIN = /^[\x20-\x7e]{1,400}$/;

/** One list of an index answering several values: from `start` to `end` (exclusive). */
interface IndexRange {
  start: IndexValue;
  end: IndexValue;
  /** Give up past this many entries (how far apart the values lie shows only by reading). */
  cap?: number;
}

/** The range of the index that answers `missing` in one list, when one should. */
function rangeOf(missing: readonly IndexValue[]): IndexRange | null {
  if (missing.length < RANGE_MIN_VALUES) return null;
  if (missing.every((v) => typeof v === "number" && Number.isSafeInteger(v))) {
    // A dense run of ids (a slice of guests made one after another): one range of the index.
    // Sparse values would read the keys of everything between them: those go one by one.
    const lo = Math.min(...(missing as number[]));
    const hi = Math.max(...(missing as number[]));
    return hi - lo + 1 <= RANGE_SPREAD * missing.length ? { start: lo, end: hi + 1 } : null;
  }
  if (missing.every((v) => typeof v === "string" && PLAIN.test(v))) {
    // Plain ASCII values (a batch's addresses): KV orders them as JS does, so the index from
    // the least to the greatest is one range. Read while it holds few other values; past
    // that (values far apart) one list each. `hi + "\0"` is the least string after `hi`:
    // every entry of `hi` sorts before it.
    const asked = [...(missing as string[])].sort();
    return {
      start: asked[0],
      end: `${asked[asked.length - 1]}\0`,
      cap: RANGE_SPREAD * asked.length,
    };
  }
  return null;
}

/** Records cached per model; past it the oldest go (memory bound; INVENTORY_CACHE_*, README). */
const MAX_CACHED_RECORDS = 40_000;
const MAX_CACHED_LISTS = 1_000;
/** Ids kept in one model's cached lists (a 100,000-object model's full id lists add up). */
const MAX_CACHED_LIST_IDS = 250_000;
/**
 * Characters of the keys of one model's cached lists. A key holds what a request filtered by (a
 * list's filter values, up to a URL's 64 KiB): 1,000 lists of a reader's long values kept 59 MB
 * per model, for every model a token may list (SECURITY.md, "Limits"). A key of a thousand ids
 * (the most paging.ts names, MAX_KEYED_IDS) is about 8,000 characters.
 */
const MAX_CACHED_LIST_KEY_CHARS = 1_000_000;
/**
 * Records cached over all models together: what the cache may cost, whatever the estate. Sized so
 * a 10,000-guest run's models (VMs, sync states, disks, interfaces, MACs, addresses) stay cached
 * between its stages: at 50,000 the cache started afresh mid-run and the unchanged re-run took
 * 32.7 s instead of 25.1 s (docs/sync.md, "Memory").
 */
const MAX_CACHED_RECORDS_TOTAL = 120_000;

/**
 * What was read of one model at one generation. Valid while the model's generation key
 * still holds that value: every commit that writes the model bumps it in the same atomic.
 */
interface ModelCache {
  generation: bigint;
  /** id → record (frozen) or null (absent). */
  records: Map<number, StoredObject | null>;
  /** Index reads (ids under a value, pages) by their arguments. */
  lists: Map<string, readonly number[]>;
  /** How many ids `lists` holds in all. */
  listIds: number;
  /** How many characters the keys of `lists` hold in all. */
  listKeyChars: number;
}

/**
 * Drops the `count` records cached first (a Map keeps insertion order); how many went. Full, the
 * cache used to start afresh: past about 40,000 records of a model (100,000 guests) a request then
 * lost the records it had read a moment before (a filter's parents, then the same parents nested
 * in its answer) and read them again. The oldest are the ones least likely to be read again: a
 * sync reads a slice of guests, then that slice's children, then the next slice.
 */
function evictOldest(records: Map<number, unknown>, count: number): number {
  let dropped = 0;
  for (const id of records.keys()) {
    if (dropped >= count) break;
    records.delete(id);
    dropped++;
  }
  return dropped;
}

/** Freezes a record and everything in it: cached records are shared by every reader. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * The sort key of no value (null): after every other key, as PostgreSQL sorts NULL in an
 * ascending list (NULLS LAST) and so, read backwards, first in a descending one (NULLS FIRST),
 * which is what NetBox answers for `?ordering=<field>` and `-<field>` (docs/api-behaviour.md,
 * "Inventory: conventions"). A boolean sorts after strings and numbers in Deno KV's key order,
 * and no other value has a boolean key (booleans sort as 0 and 1).
 */
export const NULL_SORT_KEY: IndexValue = true;

/**
 * Sort key of a value, shared by in-memory sorting and the KV ordered index so both agree:
 * strings case-insensitive with digit runs zero-padded (natural order), an empty string first,
 * null last (NULL_SORT_KEY).
 */
export function sortKey(v: unknown): IndexValue {
  if (v === null || v === undefined) return NULL_SORT_KEY;
  if (typeof v === "number") return Number.isFinite(v) ? v : 0;
  if (typeof v === "boolean") return v ? 1 : 0;
  const text = (typeof v === "string" ? v : JSON.stringify(v)).toLowerCase().slice(0, 200);
  // Bounded so the ordered-index key stays far below KV's 2 KiB key limit.
  return text.replace(/\d+/g, (d) => {
    const t = d.replace(/^0+(?=\d)/, "");
    return t.length >= 20 ? t : t.padStart(20, "0");
  }).slice(0, 300);
}

/** Deno KV's order of key part types: strings, then numbers, then big integers, then booleans. */
const KEY_TYPE_RANK: Record<string, number> = { string: 0, number: 1, bigint: 2, boolean: 3 };

/** Compares sort keys in Deno KV's key order (strings, numbers, then null's key). */
export function compareSortKeys(a: IndexValue, b: IndexValue): number {
  if (typeof a !== typeof b) return KEY_TYPE_RANK[typeof a] - KEY_TYPE_RANK[typeof b];
  if (typeof a === "number" && typeof b === "number") return a - b;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Upper bound of a record's size as Deno KV stores it (V8 serialization keeps Latin-1
 * strings at one byte per character and every other string at two).
 */
export function storedSize(value: unknown): number {
  return jsonStoredSize(JSON.stringify(value) ?? "");
}

function jsonStoredSize(json: string): number {
  // deno-lint-ignore no-control-regex
  return /[^\x00-\xff]/.test(json) ? json.length * 2 : json.length;
}

/** UTF-8 length of a string without encoding it (planning a bulk write sizes thousands of keys). */
export function utf8Length(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        n += 2; // a pair: two UTF-16 units, four bytes
        i++;
      } else n += 2; // a lone surrogate is encoded as U+FFFD (three bytes)
    } else n += 2;
  }
  return n;
}

/** A key's size as KV measures it, or more (a NUL inside a string is escaped to two bytes). */
function keyBytes(key: Deno.KvKey): number {
  let n = 0;
  for (const part of key) {
    if (typeof part !== "string") n += 10;
    else n += utf8Length(part) + 2 + (part.includes("\0") ? part.split("\0").length - 1 : 0);
  }
  return n;
}

function uniqueId(entry: UniqueEntry): string {
  return JSON.stringify([entry[0], entry[1].map((v) => typeof v === "bigint" ? `${v}n` : v)]);
}

function orderedId(entry: OrderedEntry): string {
  const plain = (v: unknown) => typeof v === "bigint" ? `${v}n` : v;
  return JSON.stringify([
    entry[0],
    plain(entry[1]),
    typeof entry[1],
    plain(entry[2]),
    typeof entry[2],
  ]);
}

function indexId(entry: IndexEntry): string {
  const v = entry[1];
  return JSON.stringify([entry[0], typeof v === "bigint" ? `${v}n` : v, typeof v]);
}

const CHECK = 0;
const SET = 1;
const DELETE = 2;

/** One write's share of an atomic (KvModelStore.#diff). */
interface WriteDiff {
  steps: Array<
    | [typeof CHECK, Deno.KvKey, string | null]
    | [typeof SET, Deno.KvKey, unknown]
    | [typeof DELETE, Deno.KvKey]
  >;
  bumps: Array<{ id: string; model: string; field: string; value: IndexValue; delta: number }>;
  countDelta: number;
  cost: Cost;
}

interface Cost {
  checks: number;
  mutations: number;
  keyBytes: number;
  totalBytes: number;
  /** Value counters the write moves (id → key bytes): one sum each per atomic, however many. */
  counters?: Map<string, number>;
}

export interface KvModelStoreOptions {
  /**
   * Test hook, awaited at the start of every commit: lets a test hold writers after the
   * engine's unique checks and before their atomics, to race them deterministically.
   */
  beforeCommit?: (writes: readonly ObjectWrite[]) => Promise<void>;
  /** Records cached per model; past it the oldest go (default 40,000). */
  maxCachedRecords?: number;
  /** Records cached over all models together (default 120,000). */
  maxCachedRecordsTotal?: number;
}

/**
 * Deno KV storage of inventory objects: one entry per object, one empty entry per
 * (field, value, id) index item, one entry per unique value combination, a KvU64 count per
 * model. Every change is one atomic that also checks the object's versionstamp and that
 * each newly claimed unique entry is free.
 *
 * Reads of many records and of index pages are cached in memory per model and generation:
 * a KvU64 per model that every commit writing the model bumps. A cached read first reads
 * that one key, and uses the cache only when no commit (from any process) touched the model
 * since: one key read instead of one per record. Cached records are frozen.
 */
export class KvModelStore implements ModelStore {
  /** Id allocations queued per model (see allocateIds). */
  readonly #allocating = new Map<string, Promise<void>>();
  readonly maxIndexedLength = MAX_INDEXED_LENGTH;
  readonly maxRecordBytes = MAX_RECORD_BYTES;
  readonly #caches = new Map<string, ModelCache>();
  /** Generation reads in flight per model: callers in the same moment share one read. */
  readonly #generations = new Map<string, Promise<bigint>>();
  readonly #maxCachedRecords: number;
  readonly #maxCachedRecordsTotal: number;
  /** Each planned write's atomic steps and cost (#diff), until the write is let go. */
  readonly #diffs = new WeakMap<ObjectWrite, WriteDiff>();
  /**
   * The JSON length of each object recordSize measured, taken (once) by the write storing it as
   * its record: the engine measures every record and change-log entry before it writes them
   * (their size check), and #diff made the same JSON string again (docs/sync.md, "Writes: round
   * 9"). Nothing changes a record between its size check and its write but to make it smaller
   * (a change-log entry over the limit loses its data), and a larger figure only plans smaller
   * atomics.
   */
  readonly #measured = new WeakMap<object, number>();

  constructor(
    private readonly kv: Deno.Kv,
    private readonly options: KvModelStoreOptions = {},
  ) {
    this.#maxCachedRecords = options.maxCachedRecords ?? MAX_CACHED_RECORDS;
    this.#maxCachedRecordsTotal = options.maxCachedRecordsTotal ?? MAX_CACHED_RECORDS_TOTAL;
  }

  recordSize(value: unknown): number {
    const json = JSON.stringify(value) ?? "";
    if (typeof value === "object" && value !== null) this.#measured.set(value, json.length);
    return jsonStoredSize(json);
  }

  sortKey(value: unknown): IndexValue {
    return sortKey(value);
  }

  compareSortKeys(a: IndexValue, b: IndexValue): number {
    return compareSortKeys(a, b);
  }

  allocateIds(model: string, count: number): Promise<number> {
    return this.#oneReservationAtATime(model, () =>
      retryAtomic(async () => {
        const key = keys.inventorySequence(model);
        const entry = await this.kv.get<number>(key);
        const first = (entry.value ?? 0) + 1;
        const result = await this.kv.atomic().check(entry).set(key, first + count - 1).commit();
        return result.ok ? first : undefined;
      }));
  }

  /**
   * Runs `reserve` after every earlier reservation of `model`'s ids in this process has settled:
   * 200 concurrent creators racing one sequence key starved some of them for seconds (500s under
   * load); other processes sharing the KV still race, and the atomic check settles that.
   */
  #oneReservationAtATime<T>(model: string, reserve: () => Promise<T>): Promise<T> {
    const previous = this.#allocating.get(model) ?? Promise.resolve();
    const next = previous.then(reserve);
    const settled = next.then(() => {}, () => {});
    this.#allocating.set(model, settled);
    void settled.then(() => {
      if (this.#allocating.get(model) === settled) this.#allocating.delete(model);
    });
    return next;
  }

  async get(model: string, id: number): Promise<{ record: StoredObject; version: string } | null> {
    const entry = await this.kv.get<StoredObject>(keys.inventoryObject(model, id));
    if (entry.value === null || entry.versionstamp === null) return null;
    return { record: entry.value, version: entry.versionstamp };
  }

  async getVersioned(
    model: string,
    ids: readonly number[],
  ): Promise<Array<{ record: StoredObject; version: string } | null>> {
    const batches: Promise<Deno.KvEntryMaybe<StoredObject>[]>[] = [];
    for (let i = 0; i < ids.length; i += 10) {
      const slice = ids.slice(i, i + 10).map((id) => keys.inventoryObject(model, id));
      batches.push(this.kv.getMany<StoredObject[]>(slice));
    }
    return (await Promise.all(batches)).flat().map((entry) =>
      entry.value === null || entry.versionstamp === null
        ? null
        : { record: entry.value, version: entry.versionstamp }
    );
  }

  async idsByUnique(
    model: string,
    lookups: ReadonlyArray<{ constraint: string; values: readonly IndexValue[] }>,
  ): Promise<Array<number | null>> {
    const chunks: Promise<Array<number | null>>[] = [];
    for (let i = 0; i < lookups.length; i += 10) {
      const chunk = lookups.slice(i, i + 10);
      const read = async () =>
        (await this.kv.getMany<number[]>(
          chunk.map((l) => keys.inventoryUnique(model, l.constraint, [...l.values])),
        )).map((e) => e.value ?? null);
      // A value too long for a key cannot be held: look those up one by one (null each).
      chunks.push(
        orNothing(read, null).then((found) =>
          found ?? Promise.all(chunk.map((l) => this.idByUnique(model, l.constraint, l.values)))
        ),
      );
    }
    return (await Promise.all(chunks)).flat();
  }

  async getMany(model: string, ids: readonly number[]): Promise<StoredObject[]> {
    if (ids.length === 0) return [];
    const cache = await this.#cacheOf(model);
    // Hits are taken now: another call may empty the cache while this one awaits its reads.
    const hits = new Map<number, StoredObject | null>();
    for (const id of ids) {
      const record = cache.records.get(id);
      if (record !== undefined) hits.set(id, record);
    }
    const missing = [...new Set(ids.filter((id) => !hits.has(id)))];
    const batches: Promise<Deno.KvEntryMaybe<StoredObject>[]>[] = [];
    for (let i = 0; i < missing.length; i += 10) {
      const slice = missing.slice(i, i + 10).map((id) => keys.inventoryObject(model, id));
      batches.push(this.kv.getMany<StoredObject[]>(slice));
    }
    const fetched = new Map<number, StoredObject | null>();
    let at = 0;
    for (const batch of await Promise.all(batches)) {
      for (const entry of batch) fetched.set(missing[at++], deepFreeze(entry.value));
    }
    // The answer never reads the cache after the awaits: emptying it first lost every record
    // this call had found there (pages of 1,000 past 20,000 cached records came back short,
    // and a bulk write's reference check then took live objects for deleted ones).
    const out: StoredObject[] = [];
    for (const id of ids) {
      const record = fetched.has(id) ? fetched.get(id) : hits.get(id);
      if (record) out.push(record);
    }
    // One huge read is not kept (nor anything, with a bound of 0).
    if (fetched.size > Math.min(this.#maxCachedRecords, this.#maxCachedRecordsTotal)) return out;
    evictOldest(cache.records, cache.records.size + fetched.size - this.#maxCachedRecords);
    this.#roomForRecords(fetched.size);
    for (const [id, record] of fetched) cache.records.set(id, record);
    return out;
  }

  /** The cache of `model` at its current generation (read first: see the class comment). */
  async #cacheOf(model: string): Promise<ModelCache> {
    const generation = await this.#generation(model);
    const cached = this.#caches.get(model);
    if (cached && cached.generation === generation) return cached;
    const fresh: ModelCache = {
      generation,
      records: new Map(),
      lists: new Map(),
      listIds: 0,
      listKeyChars: 0,
    };
    // A reader that saw an older generation than the cache holds keeps its reads to itself.
    if (!cached || cached.generation < generation) this.#caches.set(model, fresh);
    return fresh;
  }

  /**
   * The model's generation. Calls made in the same moment (one synchronous run, before any other
   * I/O completes) share one read: a filter naming 100 parents made 100 reads of this one key. A
   * call made later reads afresh, so it never shares a read issued before a commit it has seen
   * complete (its own, or another process's that a client then asks this one about).
   */
  #generation(model: string): Promise<bigint> {
    const pending = this.#generations.get(model);
    if (pending) return pending;
    const read = this.kv.get<Deno.KvU64>(keys.inventoryGeneration(model))
      .then((entry) => entry.value?.value ?? 0n);
    this.#generations.set(model, read);
    queueMicrotask(() => {
      if (this.#generations.get(model) === read) this.#generations.delete(model);
    });
    return read;
  }

  /** What the read cache holds now, over all models (memory is bounded by these). */
  cacheSize(): { records: number; listIds: number; listKeyChars: number } {
    let records = 0;
    let listIds = 0;
    let listKeyChars = 0;
    for (const c of this.#caches.values()) {
      records += c.records.size;
      listIds += c.listIds;
      listKeyChars += c.listKeyChars;
    }
    return { records, listIds, listKeyChars };
  }

  /**
   * Keeps one list in a model's cache. Past the bounds the lists least recently used go first
   * (a Map keeps insertion order and a hit moves its list to the end): a list every request of a
   * run reads (the ids under the sync's tag, 10,000 at 10,000 guests) stays cached while the
   * one-off lists of each slice's parents come and go. Emptying every list at the bound made
   * each sliced request read the tag's whole index again (docs/sync.md, "Re-runs").
   */
  #keepList(cache: ModelCache, key: string, ids: readonly number[]): void {
    if (ids.length > MAX_CACHED_LIST_IDS || key.length > MAX_CACHED_LIST_KEY_CHARS) return;
    const old = cache.lists.get(key);
    if (old) {
      cache.lists.delete(key);
      cache.listIds -= old.length;
      cache.listKeyChars -= key.length;
    }
    for (const [k, v] of cache.lists) {
      if (
        cache.lists.size < MAX_CACHED_LISTS && cache.listIds + ids.length <= MAX_CACHED_LIST_IDS &&
        cache.listKeyChars + key.length <= MAX_CACHED_LIST_KEY_CHARS
      ) break;
      cache.lists.delete(k);
      cache.listIds -= v.length;
      cache.listKeyChars -= k.length;
    }
    cache.lists.set(key, ids);
    cache.listIds += ids.length;
    cache.listKeyChars += key.length;
  }

  /** A cached list, moved to the most recently used end. */
  #listHit(cache: ModelCache, key: string): readonly number[] | undefined {
    const hit = cache.lists.get(key);
    if (hit) {
      cache.lists.delete(key);
      cache.lists.set(key, hit);
    }
    return hit;
  }

  /**
   * Makes room for `adding` records over all models: past the bound, the oldest records of the
   * largest model go first, as many as needed (docs/sync.md, "Re-runs").
   */
  #roomForRecords(adding: number): void {
    let total = 0;
    for (const c of this.#caches.values()) total += c.records.size;
    while (total + adding > this.#maxCachedRecordsTotal) {
      let largest: ModelCache | undefined;
      for (const c of this.#caches.values()) {
        if (!largest || c.records.size > largest.records.size) largest = c;
      }
      if (!largest || largest.records.size === 0) return;
      total -= evictOldest(largest.records, total + adding - this.#maxCachedRecordsTotal);
    }
  }

  /** An index read through the model's cache, keyed by its arguments. */
  async #cachedList(
    model: string,
    args: readonly unknown[],
    read: () => Promise<number[]>,
  ): Promise<number[]> {
    const cache = await this.#cacheOf(model);
    const key = JSON.stringify(args, (_k, v) => typeof v === "bigint" ? `${v}n` : v);
    const hit = this.#listHit(cache, key);
    if (hit) return [...hit];
    const ids = await read();
    this.#keepList(cache, key, [...ids]);
    return ids;
  }

  async scan(model: string): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    const iter = this.kv.list<StoredObject>(
      { prefix: keys.inventoryObjectPrefix(model) },
      { batchSize: 500 },
    );
    for await (const entry of iter) out.push(entry.value);
    return out;
  }

  async page(
    model: string,
    offset: number,
    limit: number,
    reverse: boolean,
  ): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    if (limit <= 0) return out;
    let skipped = 0;
    const iter = this.kv.list<StoredObject>(
      { prefix: keys.inventoryObjectPrefix(model) },
      { reverse, limit: offset + limit, batchSize: Math.min(500, offset + limit) },
    );
    for await (const entry of iter) {
      if (skipped < offset) {
        skipped++;
        continue;
      }
      out.push(entry.value);
    }
    return out;
  }

  async count(model: string): Promise<number> {
    const entry = await this.kv.get<Deno.KvU64>(keys.inventoryCount(model));
    return entry.value ? Number(entry.value.value) : 0;
  }

  idsByIndex(
    model: string,
    field: string,
    value: IndexValue,
    limit?: number,
  ): Promise<number[]> {
    return this.#cachedList(
      model,
      ["ids", field, typeof value, value, limit ?? null],
      () => this.#idsByIndex(model, field, value, limit),
    );
  }

  async idsByIndexMany(
    model: string,
    field: string,
    values: readonly IndexValue[],
  ): Promise<number[][]> {
    const cache = await this.#cacheOf(model);
    const keyOf = (v: IndexValue) =>
      JSON.stringify(
        ["ids", field, typeof v, v, null],
        (_k, x) => typeof x === "bigint" ? `${x}n` : x,
      );
    const found = new Map<IndexValue, readonly number[]>();
    for (const v of values) {
      const hit = this.#listHit(cache, keyOf(v));
      if (hit) found.set(v, hit);
    }
    const missing = [...new Set(values.filter((v) => !found.has(v)))];
    const range = rangeOf(missing);
    const ranged = range && await this.#listRange(model, field, missing, range);
    if (ranged) {
      for (const [v, ids] of ranged) {
        found.set(v, ids);
        this.#keepList(cache, keyOf(v), [...ids]);
      }
    } else {
      const lists = await Promise.all(missing.map((v) => this.idsByIndex(model, field, v)));
      missing.forEach((v, i) => found.set(v, lists[i]));
    }
    return values.map((v) => [...found.get(v)!]);
  }

  /**
   * The ids under each of `values` from one list of the index between `range.start` and
   * `range.end`; null when the range held more than `range.cap` entries (values far apart).
   */
  async #listRange(
    model: string,
    field: string,
    values: readonly IndexValue[],
    range: IndexRange,
  ): Promise<Map<IndexValue, number[]> | null> {
    const wanted = new Map(values.map((v) => [v, [] as number[]]));
    const prefix = keys.inventoryIndexPrefix(model, field, range.start).slice(0, -1);
    const limit = range.cap === undefined ? undefined : range.cap + 1;
    const iter = this.kv.list({ start: [...prefix, range.start], end: [...prefix, range.end] }, {
      limit,
      batchSize: Math.min(1000, limit ?? 1000),
    });
    let read = 0;
    for await (const entry of iter) {
      read++;
      wanted.get(entry.key[entry.key.length - 2] as IndexValue)
        ?.push(entry.key[entry.key.length - 1] as number);
    }
    return range.cap !== undefined && read > range.cap ? null : wanted;
  }

  async #idsByIndex(
    model: string,
    field: string,
    value: IndexValue,
    limit?: number,
  ): Promise<number[]> {
    const out: number[] = [];
    const iter = this.kv.list(
      { prefix: keys.inventoryIndexPrefix(model, field, value) },
      { limit, batchSize: limit ? Math.min(limit, 1000) : 1000 },
    );
    return await orNothing(async () => {
      for await (const entry of iter) out.push(entry.key[entry.key.length - 1] as number);
      return out;
    }, []);
  }

  async idByUnique(
    model: string,
    constraint: string,
    values: readonly IndexValue[],
  ): Promise<number | null> {
    const key = keys.inventoryUnique(model, constraint, [...values]);
    return await orNothing(async () => (await this.kv.get<number>(key)).value, null);
  }

  async countByIndex(model: string, field: string, value: IndexValue): Promise<number> {
    const key = keys.inventoryIndexCount(model, field, value);
    const entry = await orNothing(() => this.kv.get<Deno.KvU64>(key), null);
    return entry?.value ? Number(entry.value.value) : 0;
  }

  async countsByIndex(
    model: string,
    field: string,
    values: readonly IndexValue[],
  ): Promise<number[]> {
    // Through the model's cache (the counters change only with the model's generation), then
    // getMany for the misses: at most 10 keys per call, the chunks sent together.
    const cache = await this.#cacheOf(model);
    const keyOf = (v: IndexValue) => JSON.stringify(["count", field, typeof v, String(v)]);
    const out: number[] = values.map((v) => this.#listHit(cache, keyOf(v))?.[0] ?? -1);
    const missing = values.filter((_, i) => out[i] < 0);
    const chunks: IndexValue[][] = [];
    for (let i = 0; i < missing.length; i += 10) chunks.push(missing.slice(i, i + 10));
    const counts = (await Promise.all(chunks.map(async (chunk) => {
      const read = () =>
        this.kv.getMany<Deno.KvU64[]>(chunk.map((v) => keys.inventoryIndexCount(model, field, v)));
      const entries = await orNothing(read, null);
      // A value too long for a key has no counter: count each alone (0 for that one).
      if (!entries) return Promise.all(chunk.map((v) => this.countByIndex(model, field, v)));
      return entries.map((e) => (e.value ? Number(e.value.value) : 0));
    }))).flat();
    missing.forEach((v, i) => this.#keepList(cache, keyOf(v), [counts[i]]));
    let next = 0;
    return out.map((c) => (c >= 0 ? c : counts[next++]));
  }

  async derivedIds(
    model: string,
    key: string,
    make: () => Promise<number[]>,
    alsoReads: readonly string[] = [],
  ): Promise<number[]> {
    // The other models' generations are part of the key: a commit to one of them misses.
    const generations = await Promise.all(alsoReads.map((m) => this.#generation(m)));
    return this.#cachedList(model, ["derived", key, generations.map(String)], make);
  }

  pageByIndex(
    model: string,
    field: string,
    value: IndexValue,
    page: { offset: number; limit: number; reverse: boolean; ordered: boolean },
  ): Promise<number[]> {
    return this.#cachedList(
      model,
      ["page", field, typeof value, value, page.offset, page.limit, page.reverse, page.ordered],
      () => this.#pageByIndex(model, field, value, page),
    );
  }

  async #pageByIndex(
    model: string,
    field: string,
    value: IndexValue,
    page: { offset: number; limit: number; reverse: boolean; ordered: boolean },
  ): Promise<number[]> {
    const out: number[] = [];
    if (page.limit <= 0) return out;
    const prefix = page.ordered
      ? keys.inventoryOrderedPrefix(model, field, value)
      : keys.inventoryIndexPrefix(model, field, value);
    const want = page.offset + page.limit;
    let seen = 0;
    const iter = this.kv.list({ prefix }, {
      reverse: page.reverse,
      limit: want,
      batchSize: Math.min(1000, want),
    });
    return await orNothing(async () => {
      for await (const entry of iter) {
        if (seen++ < page.offset) continue;
        out.push(entry.key[entry.key.length - 1] as number);
      }
      return out;
    }, []);
  }

  #walkPrefix(model: string, field: string, value: IndexValue): Deno.KvKey {
    return field === "*"
      ? keys.inventoryObjectPrefix(model)
      : keys.inventoryIndexPrefix(model, field, value);
  }

  /** The cache key of "how many ids up to `id`" (a walk's position, kept per generation). */
  #rankKey(field: string, value: IndexValue, id: number): string {
    return JSON.stringify(["rank", field, typeof value, String(value), id]);
  }

  async idsAfter(
    model: string,
    field: string,
    value: IndexValue,
    after: number,
    limit: number,
  ): Promise<number[]> {
    const out: number[] = [];
    if (limit <= 0) return out;
    const cache = await this.#cacheOf(model);
    const prefix = this.#walkPrefix(model, field, value);
    const start = Math.max(0, Math.floor(after)) + 1;
    const iter = this.kv.list({ prefix, start: [...prefix, start] }, {
      limit,
      batchSize: Math.min(1000, limit),
    });
    await orNothing(async () => {
      for await (const entry of iter) out.push(entry.key[entry.key.length - 1] as number);
    }, undefined);
    // A walk reads its pages in order: the position after this page follows from the one
    // before it, so counting what is left (NetBox's `count`) never rescans the list.
    const before = start <= 1 ? [0] : this.#listHit(cache, this.#rankKey(field, value, start - 1));
    if (before && out.length > 0) {
      this.#keepList(cache, this.#rankKey(field, value, out[out.length - 1]), [
        before[0] + out.length,
      ]);
    }
    return out;
  }

  async countUpTo(
    model: string,
    field: string,
    value: IndexValue,
    upTo: number,
  ): Promise<number> {
    const last = Math.floor(upTo);
    if (last <= 0) return 0;
    const cache = await this.#cacheOf(model);
    const known = this.#listHit(cache, this.#rankKey(field, value, last));
    if (known) return known[0];
    const prefix = this.#walkPrefix(model, field, value);
    let n = 0;
    const iter = this.kv.list({ prefix, end: [...prefix, last + 1] }, { batchSize: 1000 });
    await orNothing(async () => {
      for await (const _ of iter) n++;
    }, undefined);
    this.#keepList(cache, this.#rankKey(field, value, last), [n]);
    return n;
  }

  async dropIndexKeys(
    model: string,
    field: string | null,
    what: "ordered" | "counters" | "index",
  ): Promise<number> {
    const prefix = what === "ordered"
      ? keys.inventoryOrderedFieldPrefix(model, field)
      : what === "counters"
      ? keys.inventoryIndexCountFieldPrefix(model, field)
      : keys.inventoryIndexFieldPrefix(model, field);
    let dropped = 0;
    for (;;) {
      const page: Deno.KvKey[] = [];
      for await (const e of this.kv.list({ prefix }, { limit: 500, batchSize: 500 })) {
        page.push(e.key);
      }
      if (page.length === 0) return dropped;
      const op = this.kv.atomic();
      for (const key of page) op.delete(key);
      // Another process sweeping the same keys at once deletes some twice: harmless.
      await op.commit();
      dropped += page.length;
    }
  }

  async indexLayout(): Promise<number> {
    return (await this.kv.get<number>(keys.inventoryIndexLayout())).value ?? 0;
  }

  async setIndexLayout(version: number): Promise<void> {
    await this.kv.set(keys.inventoryIndexLayout(), version);
  }

  async localSecret(generate: () => string): Promise<string> {
    const key = keys.inventoryLocalSecretKey();
    const existing = await this.kv.get<string>(key);
    if (existing.value) return existing.value;
    const fresh = generate();
    const result = await this.kv.atomic().check({ key, versionstamp: null }).set(key, fresh)
      .commit();
    if (result.ok) return fresh;
    return (await this.kv.get<string>(key)).value!;
  }

  plan(writes: readonly ObjectWrite[]): ObjectWrite[][] {
    return this.#plan(writes, null);
  }

  /** plan(), leaving room in the first group for a sequence's check and set (`sequence`). */
  #plan(writes: readonly ObjectWrite[], sequence: Deno.KvKey | null): ObjectWrite[][] {
    const groups: ObjectWrite[][] = [];
    let current: ObjectWrite[] = [];
    // Room for the per-model count and generation updates of a group.
    const models = [...new Set(writes.map((w) => w.model))];
    const reserved = (): Cost => {
      let bytes = 0;
      for (const m of models) {
        bytes += keyBytes(keys.inventoryCount(m)) + keyBytes(keys.inventoryGeneration(m)) + 16;
      }
      const room = { checks: 0, mutations: models.length * 2, keyBytes: bytes, totalBytes: bytes };
      if (sequence && groups.length === 0) {
        room.checks++;
        room.mutations++;
        room.keyBytes += 2 * keyBytes(sequence);
        room.totalBytes += 2 * keyBytes(sequence) + 16;
      }
      return room;
    };
    let total: Cost = reserved();
    // Counters already summed in the current group: writes sharing a value (one cluster, one
    // tag) add one mutation for all of them, not one each.
    let counters = new Set<string>();
    for (const write of writes) {
      const cost = this.#cost(write);
      const extra = { mutations: 0, keyBytes: 0 };
      const add = (into: { mutations: number; keyBytes: number }, known: Set<string>) => {
        for (const [id, bytes] of cost.counters ?? []) {
          if (known.has(id)) continue;
          into.mutations++;
          into.keyBytes += bytes;
        }
      };
      add(extra, counters);
      const fits = total.checks + cost.checks <= MAX_CHECKS &&
        total.mutations + cost.mutations + extra.mutations <= MAX_MUTATIONS &&
        total.keyBytes + cost.keyBytes + extra.keyBytes <= MAX_KEY_BYTES &&
        total.totalBytes + cost.totalBytes + extra.keyBytes + 16 * extra.mutations <=
          MAX_TOTAL_BYTES;
      if (!fits && current.length > 0) {
        groups.push(current);
        current = [];
        total = reserved();
        counters = new Set();
        extra.mutations = extra.keyBytes = 0;
        add(extra, counters);
      }
      current.push(write);
      for (const id of cost.counters?.keys() ?? []) counters.add(id);
      total = {
        checks: total.checks + cost.checks,
        mutations: total.mutations + cost.mutations + extra.mutations,
        keyBytes: total.keyBytes + cost.keyBytes + extra.keyBytes,
        totalBytes: total.totalBytes + cost.totalBytes + extra.keyBytes + 16 * extra.mutations,
      };
    }
    if (current.length > 0) groups.push(current);
    return groups;
  }

  async commit(writes: readonly ObjectWrite[]): Promise<CommitResult> {
    if (writes.length === 0) return { ok: true };
    await this.options.beforeCommit?.(writes);
    return { ok: (await this.#operation(writes).commit()).ok };
  }

  createWithFreshIds(
    model: string,
    count: number,
    make: (first: number) => ObjectWrite[],
  ): Promise<CommitResult & { first: number }> {
    // Queued with allocateIds (one reservation per model at a time in this process); another
    // process sharing the KV moves the sequence between the read and the commit: the check
    // fails and the writes are made again from the new first id.
    let rest: ObjectWrite[][] = [];
    const key = keys.inventorySequence(model);
    const reserved = this.#oneReservationAtATime(
      model,
      () =>
        retryAtomic<{ first: number; ok: boolean }>(async () => {
          const entry = await this.kv.get<number>(key);
          const first = (entry.value ?? 0) + 1;
          const groups = this.#plan(make(first), key);
          const head = groups[0] ?? [];
          await this.options.beforeCommit?.(head);
          const op = this.#operation(head).check(entry).set(key, first + count - 1);
          if ((await op.commit()).ok) {
            rest = groups.slice(1);
            return { first, ok: true };
          }
          // Not the sequence (a unique claim taken): no retry makes that succeed.
          const now = await this.kv.get<number>(key);
          return now.versionstamp === entry.versionstamp ? { first, ok: false } : undefined;
        }),
    );
    return reserved.then(async ({ first, ok }) => {
      if (!ok) return { ok: false, first };
      for (const group of rest) {
        if (!(await this.commit(group)).ok) return { ok: false, first };
      }
      return { ok: true, first };
    });
  }

  /** The atomic writing `writes` (see commit): version checks, index diffs, counters. */
  #operation(writes: readonly ObjectWrite[]): Deno.AtomicOperation {
    const op = this.kv.atomic();
    const counts = new Map<string, number>();
    const valueCounts = new Map<string, { key: Deno.KvKey; delta: number }>();
    for (const write of writes) {
      const diff = this.#diff(write);
      for (const step of diff.steps) {
        if (step[0] === CHECK) op.check({ key: step[1], versionstamp: step[2] });
        else if (step[0] === SET) op.set(step[1], step[2]);
        else op.delete(step[1]);
      }
      for (const { id, model, field, value, delta } of diff.bumps) {
        let counter = valueCounts.get(id);
        if (!counter) {
          counter = { key: keys.inventoryIndexCount(model, field, value), delta: 0 };
          valueCounts.set(id, counter);
        }
        counter.delta += delta;
      }
      if (diff.countDelta !== 0) {
        counts.set(write.model, (counts.get(write.model) ?? 0) + diff.countDelta);
      }
    }
    const sum = (key: Deno.KvKey, delta: number) => {
      if (delta === 0) return;
      const amount = delta > 0 ? BigInt(delta) : (MINUS_ONE * BigInt(-delta)) & MINUS_ONE;
      op.sum(key, amount);
    };
    for (const [model, delta] of counts) sum(keys.inventoryCount(model), delta);
    // Cached reads of these models (in every process) are stale from this commit on.
    for (const model of new Set(writes.map((w) => w.model))) {
      op.sum(keys.inventoryGeneration(model), 1n);
    }
    for (const { key, delta } of valueCounts.values()) sum(key, delta);
    return op;
  }

  #cost(write: ObjectWrite): Cost {
    return this.#diff(write).cost;
  }

  /**
   * What one write puts in an atomic, in order (the object's version check, index, ordered and
   * unique-claim changes, the record), the value counters it moves, and its cost against KV's
   * limits. Computed once per write: planning sizes it and the commit replays it (each index
   * entry's id, key and size were built twice, docs/sync.md "Writes: round 6"). A write is not
   * changed between plan() and commit().
   */
  #diff(write: ObjectWrite): WriteDiff {
    const known = this.#diffs.get(write);
    if (known) return known;
    const { model, id, prev, next } = write;
    const steps: WriteDiff["steps"] = [];
    const bumps: WriteDiff["bumps"] = [];
    const counters = new Map<string, number>();
    const objectKey = keys.inventoryObject(model, id);
    let checks = prev ? 1 : 0;
    let mutations = 1;
    // The object's key is set, and checked too when it replaces a version.
    const objectBytes = keyBytes(objectKey) * (prev ? 2 : 1);
    let kb = objectBytes;
    // New objects get ids reserved by allocateIds, so only replacements need a check.
    if (prev) steps.push([CHECK, objectKey, prev.version]);
    const prevIndexes = new Map((prev?.indexes ?? []).map((e) => [indexId(e), e]));
    const nextIndexes = new Map((next?.indexes ?? []).map((e) => [indexId(e), e]));
    const prevUniques = new Map((prev?.uniques ?? []).map((e) => [uniqueId(e), e]));
    const nextUniques = new Map((next?.uniques ?? []).map((e) => [uniqueId(e), e]));
    // Each index change also moves its value's counter (plan counts each counter once a group).
    const indexChange = (entry: string, [field, value, counted]: IndexEntry, delta: number) => {
      const key = keys.inventoryIndex(model, field, value, id);
      if (delta < 0) steps.push([DELETE, key]);
      else steps.push([SET, key, null]);
      mutations++;
      kb += keyBytes(key);
      if (counted === false) return;
      // A counter is named by its model and index entry (no key serialised per entry).
      const counter = `${model}\u0000${entry}`;
      bumps.push({ id: counter, model, field, value, delta });
      if (!counters.has(counter)) {
        counters.set(counter, keyBytes(keys.inventoryIndexCount(model, field, value)) + 16);
      }
    };
    for (const [k, e] of prevIndexes) if (!nextIndexes.has(k)) indexChange(k, e, -1);
    const orderedChange = ([field, value, sort]: OrderedEntry, set: boolean) => {
      const key = keys.inventoryOrdered(model, field, value, sort, id);
      steps.push(set ? [SET, key, null] : [DELETE, key]);
      mutations++;
      kb += keyBytes(key);
    };
    if (!prev && next) {
      // A new object: nothing to compare its ordered entries with.
      for (const e of next.ordered ?? []) orderedChange(e, true);
    } else {
      const prevOrdered = new Map((prev?.ordered ?? []).map((e) => [orderedId(e), e]));
      const nextOrdered = new Map((next?.ordered ?? []).map((e) => [orderedId(e), e]));
      for (const [k, e] of prevOrdered) if (!nextOrdered.has(k)) orderedChange(e, false);
      if (next) {
        for (const [k, e] of nextOrdered) if (!prevOrdered.has(k)) orderedChange(e, true);
      }
    }
    for (const [k, [constraint, values]] of prevUniques) {
      if (nextUniques.has(k)) continue;
      const key = keys.inventoryUnique(model, constraint, [...values]);
      steps.push([DELETE, key]);
      mutations++;
      kb += keyBytes(key);
    }
    if (next) {
      steps.push([SET, objectKey, next.record]);
      for (const [k, e] of nextIndexes) if (!prevIndexes.has(k)) indexChange(k, e, 1);
      for (const [k, [constraint, values]] of nextUniques) {
        if (prevUniques.has(k)) continue;
        const key = keys.inventoryUnique(model, constraint, [...values]);
        steps.push([CHECK, key, null]);
        steps.push([SET, key, id]);
        mutations++;
        checks++;
        kb += 2 * keyBytes(key) + 16;
      }
    } else {
      steps.push([DELETE, objectKey]);
    }
    const recordBytes = next ? this.#jsonLength(next.record) * 2 : 0;
    const diff: WriteDiff = {
      steps,
      bumps,
      countDelta: (prev ? 0 : 1) - (next ? 0 : 1),
      cost: {
        checks,
        mutations,
        keyBytes: kb,
        totalBytes: objectBytes + recordBytes + kb,
        counters,
      },
    };
    this.#diffs.set(write, diff);
    return diff;
  }

  /** A record's JSON length: as recordSize measured it (once), else measured now. */
  #jsonLength(record: StoredObject): number {
    const measured = this.#measured.get(record);
    if (measured === undefined) return JSON.stringify(record).length;
    this.#measured.delete(record);
    return measured;
  }
}
