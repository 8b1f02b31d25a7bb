/**
 * Declarative model definitions for the NetBox-compatible inventory engine (engine.ts).
 *
 * A model is named "app.model" (NetBox's app_label.model_name, e.g. "dcim.site",
 * "service.backendendpoint"); permissions are "app.view_model" etc. and custom fields name
 * models the same way in `object_types`. Records are stored with FKs as ids, m2m as id
 * arrays, choices as their value and datetimes as ISO 8601 UTC strings.
 */
import type { StoredObject } from "../../storage/ports.ts";
import type { Logger } from "../../infra/logger.ts";

export type { StoredObject };

export type FieldType =
  | "string"
  | "int"
  | "float"
  | "bool"
  | "datetime"
  | "date"
  | "json"
  | "choice"
  | "fk"
  | "m2m"
  | "list"
  /** Generic FK (NetBox assigned_object / scope): rendered nested from a type and an id field. */
  | "gfk";

export type OnDelete = "protect" | "cascade" | "set_null";

export interface FieldDef {
  type: FieldType;
  /** Must be present on create (and on PUT). */
  required?: boolean;
  /** null is accepted (FKs, choices, numbers and datetimes usually are). */
  nullable?: boolean;
  /** Value used on create when the field is absent; a function is called per record. */
  default?: unknown | (() => unknown);
  /** Returned, never written through the API (ignored on input, like DRF). */
  readOnly?: boolean;
  /** Written, never returned (secrets). */
  writeOnly?: boolean;
  /** Not part of the API at all (stored only; e.g. a token digest). */
  hidden?: boolean;
  /** Computed on output from the stored record (implies readOnly, not stored). */
  compute?: (record: StoredObject) => unknown;
  /**
   * Strings: a blank value is accepted (default: only when not required). Choices: `""` is
   * accepted and stored as null (NetBox's `allow_blank`; it renders a blank choice as null).
   */
  allowBlank?: boolean;
  /**
   * Choices: DRF's own ChoiceField texts (`"x" is not a valid choice.`, a blank is no choice),
   * as the plugin's serializers map their choices; NetBox's ChoiceField (the default) answers
   * `x is not a valid choice.` and `This field may not be blank.`.
   */
  drfChoice?: boolean;
  /**
   * Strings: "text" sorts by the database's collation, as PostgreSQL sorts a field NetBox gives
   * no `natural_sort` collation (a tag's name): without regard to case, digits as characters
   * (`n10` before `n2`). Default: natural order, as NetBox's names (docs/api-behaviour.md).
   */
  collation?: "text";
  maxLength?: number;
  /** Numbers: bounds (ints default to the 32-bit signed range). */
  min?: number;
  max?: number;
  /**
   * Strings: the canonical form of a valid value (MAC upper case, IP addresses compressed).
   * Applied on write and to exact/in/n filter values, so `?mac_address=aa:bb:..` matches.
   */
  normalize?: (text: string) => string;
  /** Strings: the value must match. */
  pattern?: RegExp;
  /** The error when the pattern fails (a function: the text names the value). */
  patternMessage?: string | ((value: string) => string);
  /** Choice fields: [value, label] pairs. */
  choices?: ReadonlyArray<readonly [string, string]>;
  /** fk / m2m: target model name ("dcim.site"). */
  model?: string;
  /**
   * fk to a tree model (its own `parent` fk): its filters, by id or natural key, also match the
   * nodes below the one asked for (NetBox's TreeNodeMultipleChoiceFilter).
   */
  tree?: boolean;
  /**
   * fk / m2m: `?<field>=<number>` names the object with that id when none has that natural
   * key. The plugin's filter sets list their references in `Meta.fields`, which Django filters
   * by primary key; NetBox's own name an object by slug or name only (`to_field_name`), where a
   * number is a slug like any other.
   */
  filterTakesIds?: boolean;
  /**
   * fk: fields the nested form shows beyond the target's brief ones (NetBox 4.6 renders a
   * device's primary IPs as the IP's brief plus `dns_name`, `nat_inside`, `nat_outside`).
   */
  nested?: string[];
  /** fk: what deleting the target does to this record (default protect). */
  onDelete?: OnDelete;
  /** gfk: the models it may point at ("*" for any registered model). */
  models?: readonly string[] | "*";
  /**
   * gfk: names its target without holding it: no PROTECT/CASCADE, no index, no dangling check
   * (a change-log entry outlives the object it names; rendered null once it is gone).
   */
  weak?: boolean;
  /** gfk: the stored fields holding the target model name ("app.model") and id. */
  typeField?: string;
  idField?: string;
  /** list: element type. */
  of?: "int" | "string";
  /** Keep a KV value index so `?field=value` never scans (FK and m2m are always indexed). */
  index?: boolean;
  /**
   * Indexed values each held by one object or a few (a serial, an address, a primary IP, which
   * NetBox keeps one-to-one): the index keeps no ordered twin and no per-value counter for the
   * field; a list filtered by one value is sorted in memory and counted by its index entries
   * (engine/index_state.ts, IndexShape). Only what a write costs changes, never an answer.
   */
  fewPerValue?: boolean;
  /**
   * Kept in the value index for the records this accepts only (the change log's `request_id`:
   * one entry per request's batch of entries, not one per entry; models/changes.ts). Such an
   * index is no answer to a filter by itself, so lists never read it as one: the model's own
   * filter does (through EngineApi.idsIndexed). No ordered twin, no per-value counter.
   */
  partialIndex?: (record: StoredObject) => boolean;
  /** Exposed as a filter (default true for stored scalar fields; false disables). */
  filter?: boolean;
  /** OpenAPI description. */
  description?: string;
  /**
   * A read-only related-object count (NetBox's `device_count`, `count_ipaddresses`...): the
   * records of `model` whose FK, or generic FK, `field` points at this record; model "*" counts
   * `field` over every registered model (a tag's `tagged_items`). Rendered for the records a
   * request asks for, not inside nested forms.
   */
  count?: { model: string; field: string };
  /** A choice holding a content type ("app.model"): rendered as the plain string, as NetBox. */
  contentType?: boolean;
  /**
   * A read-only value computed from other records (a device's merged `config_context`): one
   * value per record, for the records a request asks for (not inside nested forms).
   */
  resolve?: (records: StoredObject[], engine: EngineApi, origin: string) => Promise<unknown[]>;
}

export interface UniqueDef {
  fields: string[];
  /**
   * The store's name of the constraint (default: the fields joined). Constraints over the same
   * fields with different conditions need names of their own.
   */
  name?: string;
  /**
   * Only records for which this holds take part (NetBox's conditional UniqueConstraint, e.g.
   * "per cluster" only while the tenant is null). Must read the record alone.
   */
  when?: (record: StoredObject) => boolean;
  /** The error key (default: the last field). */
  errorField?: string;
  /** The error text; a function gets the record already holding the value (if still there). */
  message?:
    | string
    | ((holder: StoredObject | null, engine: EngineApi) => string | Promise<string>);
  /** Compare strings case-insensitively (NetBox's Lower() constraints). */
  ci?: boolean;
  /** Records where any of the fields is null or empty take no part (as SQL NULLs). */
}

export type FieldErrors = Record<string, string[]>;

/**
 * Deployment settings the inventory's rules read (NetBox's configuration parameters of the same
 * names; docs/netbox-rules.md).
 */
export interface InventorySettings {
  /** ENFORCE_GLOBAL_UNIQUE: IP addresses and prefixes outside a VRF are unique (default true). */
  enforceGlobalUnique: boolean;
}

export const DEFAULT_INVENTORY_SETTINGS: InventorySettings = { enforceGlobalUnique: true };

/** What hooks get: the engine (to read related records), the operation and the actor. */
export interface HookContext {
  engine: EngineApi;
  op: "create" | "update";
  /** The stored record before the change (update only). */
  existing: StoredObject | null;
  /** The input fields sent by the client (after parsing), to tell "absent" from "null". */
  input: Record<string, unknown>;
  /** Extra keys merged into this response only (e.g. a secret shown once). */
  responseExtras: Record<string, unknown>;
  /** Who is acting (null for internal writes). */
  auth: AuthInfo | null;
  logger: Logger;
  now: () => number;
  settings: InventorySettings;
  /**
   * A stored record, read at most once per request: hooks of a bulk write that all look up
   * the same cluster or site cost one storage read, not one per item.
   */
  read(model: string, id: number): Promise<StoredObject | null>;
  /**
   * The records of `model` whose indexed `field` holds `value`, read through the request: the
   * values a bulk write's items name in the model's `batchIndexReads` are read together before
   * the items are prepared (500 addresses looked up for duplicates made 500 index reads).
   * Absent where no write prepares the record.
   */
  byIndex?(model: string, field: string, value: string): Promise<StoredObject[]>;
}

export interface AuthInfo {
  tokenId: number;
  isSuperuser: boolean;
  writeEnabled: boolean;
  permissions: ReadonlySet<string>;
}

/** A custom filter: returns a predicate over stored records, or the matching ids. */
export type CustomFilter =
  & ((
    values: string[],
    engine: EngineApi,
  ) => Promise<{ ids: Set<number> } | { predicate: (record: StoredObject) => boolean }>)
  & {
    /**
     * A filter naming other objects (NetBox's ModelMultipleChoiceFilter): an empty value in a
     * list's URL reaches it (to be refused) instead of being dropped.
     */
    keepsEmpty?: boolean;
  };

export interface ModelDef {
  /** NetBox app label: "dcim", "virtualization", "service" for the plugin... */
  app: string;
  /** Lower-case model name: "virtualmachine". */
  model: string;
  /** Human name (singular), used in messages: "virtual machine". */
  verbose: string;
  /**
   * The Django class name ("VirtualMachine"), which NetBox's 404 names: "No VirtualMachine
   * matches the given query." Default: the verbose name's words capitalised and joined
   * (objectNameOf); set where that is not the class (a VM interface is "VMInterface").
   */
  objectName?: string;
  /** Path under /api/, with slashes: "virtualization/virtual-machines/". */
  path: string;
  fields: Record<string, FieldDef>;
  /** Fields of the brief / nested representation besides id, url and display. */
  brief: string[];
  /** `display` text; default the `name` field, else "<verbose> <id>". */
  display?: (record: StoredObject) => string;
  unique?: UniqueDef[];
  /** Records carry `created` / `last_updated` (default true; a change-log entry has `time`). */
  timestamps?: boolean;
  /** Full renderings carry `display_url` (default true; NetBox 4.6's contact assignments do not). */
  displayUrl?: boolean;
  /** Creates, updates and deletes through the API are recorded in the change log (default true). */
  changelog?: boolean;
  /**
   * A bulk create validates and saves the items one after another, and a refusal is the first
   * refused item's errors alone, not a list (NetBox 4.6's SequentialBulkCreatesMixin: devices).
   */
  sequentialBulkCreate?: boolean;
  /** Fields searched (case-insensitive substring) by `?q=`. */
  search?: string[];
  /**
   * The stored field the ordered index follows (default: the first of `ordering`). Set when the
   * default ordering changed after records were stored keyed by another field (tags: `name`,
   * while 4.6 lists them by `weight`, then `name`, sorted in memory).
   */
  orderedIndex?: string;
  /** Default ordering, e.g. ["name", "id"]; "-" prefix for descending. Default ["id"]. */
  ordering?: string[];
  /** Field used to resolve `?<fk>=<value>` filters pointing here (default slug, else name). */
  naturalKey?: string;
  /** GET only: API writes are refused. Internal code can still write (engine.insert/patch). */
  readOnly?: boolean;
  /** Records carry tags / custom_fields (default true). */
  tags?: boolean;
  customFields?: boolean;
  /** Extra filters by query name (`?<name>=`), e.g. plugin-specific ones. */
  filters?: Record<string, CustomFilter>;
  /**
   * Filters across references, as NetBox's TreeNodeMultipleChoiceFilter over a path: the name
   * (`region`, with `region_id` by id and `__n`) to the FK path from this model
   * (["site", "region"]). A record matches when the node at the path's end is one named or
   * below one (docs/api-behaviour.md, "Inventory: filters").
   */
  through?: Record<string, readonly string[]>;
  /** Cross-field validation on the complete draft; errors keyed by field. */
  validate?: (
    draft: StoredObject,
    ctx: HookContext,
  ) => FieldErrors | null | Promise<FieldErrors | null>;
  /**
   * Index values the model's rules look up for every item of a write (an address's host, for
   * duplicates): read for a whole bulk write at once, before its items are prepared, and served
   * to the rules by HookContext.byIndex. `value` gets the item's input (null: nothing to read).
   */
  batchIndexReads?: ReadonlyArray<{
    model: string;
    field: string;
    value: (input: Record<string, unknown>) => string | null;
  }>;
  /** Last change to the draft before it is stored (encrypt secrets, generate tokens...). */
  beforeSave?: (draft: StoredObject, ctx: HookContext) => void | Promise<void>;
  /**
   * After a whole batch is stored and its afterSave hooks ran (best-effort, like afterSave): one
   * call per create/update request, so bookkeeping shared by many records is done once. It
   * changes other records only: the answer is not re-read for it.
   */
  afterSaveBatch?: (
    records: StoredObject[],
    engine: EngineApi,
    op: "create" | "update",
  ) => void | Promise<void>;
  /**
   * After the record is stored (best-effort: errors are logged, never fail the save). The
   * response is read after it returns, so fields it writes (engine.patch) are included.
   */
  afterSave?: (record: StoredObject, ctx: HookContext) => void | Promise<void>;
  /**
   * Last change to a rendered record before it is answered to `auth` (fields only some
   * readers may see). Applied by the REST layer to every record it renders.
   */
  redact?: (rendered: Record<string, unknown>, auth: AuthInfo | null) => void | Promise<void>;
  /** May `auth` delete this record? (false → forbidden; checked for API deletes only). */
  canDelete?: (record: StoredObject, auth: AuthInfo) => boolean;
  /** API deletes only: a reason to refuse (a conflict), or null to go ahead. */
  beforeDelete?: (
    records: StoredObject[],
    ctx: { engine: EngineApi; auth: AuthInfo; now: () => number },
  ) => Promise<string | null>;
  /** After delete (best-effort). */
  afterDelete?: (
    record: StoredObject,
    ctx: { engine: EngineApi; logger: Logger },
  ) => void | Promise<void>;
}

/**
 * Why a write was refused (each surface's error mapper picks the answer): the object does not
 * exist, the model is read-only, it clashes with stored data, or the caller may not do it.
 */
export type WriteRefusal =
  | "not_found"
  | "not_allowed"
  | "conflict"
  | "forbidden"
  /** An If-Match the object's current ETag does not satisfy. */
  | "precondition_failed";

/** Result of an engine write: `invalid` carries NetBox-style field errors (one set per item). */
export type WriteResult<T> =
  | { ok: true; value: T; extras?: Record<string, unknown> }
  | { ok: false; reason: "invalid"; errors: FieldErrors | FieldErrors[] }
  | { ok: false; reason: WriteRefusal; detail: string };

/** The part of the engine that hooks and plugin code use (see engine.ts for the rest). */
export interface EngineApi {
  get(model: string, id: number): Promise<StoredObject | null>;
  getMany(model: string, ids: readonly number[]): Promise<StoredObject[]>;
  /** Records matching NetBox-style filters, e.g. { cluster_id: ["3"], name__ic: ["web"] }. */
  find(model: string, filters?: Record<string, string[]>): Promise<StoredObject[]>;
  findOne(model: string, filters: Record<string, string[]>): Promise<StoredObject | null>;
  /**
   * Per id, how many records of `model` have their FK `field` pointing at it: one batched read of
   * counters (a page's reverse relations look only where the count is not 0).
   */
  countReferences(model: string, field: string, ids: readonly number[]): Promise<number[]>;
  /**
   * Per id, the ids of the records of `model` whose FK `field` points at it: one batched read of
   * the index, no record read (a caller that holds some of those records reads only the rest).
   */
  idsReferring(model: string, field: string, ids: readonly number[]): Promise<number[][]>;
  /**
   * Per value, the ids the value index of `field` (a field with `index` or `partialIndex`) holds
   * under it: one batched read. Null when a value can have no index entry (an empty or
   * over-long string): the caller tests the records instead.
   */
  idsIndexed(model: string, field: string, values: readonly string[]): Promise<number[][] | null>;
  /** Creates through validation and hooks but bypassing readOnly and permissions. */
  insert(model: string, input: Record<string, unknown>): Promise<WriteResult<StoredObject>>;
  /** Validated partial update bypassing readOnly and permissions, hooks run. */
  update(
    model: string,
    id: number,
    input: Record<string, unknown>,
  ): Promise<WriteResult<StoredObject>>;
  /**
   * Sets stored fields directly (no validation, no hooks; indexes kept right). For
   * engine-owned bookkeeping such as `last_push` or job progress.
   */
  patchStored(
    model: string,
    id: number,
    changes: Record<string, unknown> | ((current: StoredObject) => Record<string, unknown>),
  ): Promise<StoredObject | null>;
  /** patchStored for many records of one model (fixed values per id), written in few atomics. */
  patchStoredMany(
    model: string,
    changes: ReadonlyMap<number, Record<string, unknown>>,
  ): Promise<void>;
  remove(model: string, id: number): Promise<WriteResult<null>>;
  definition(model: string): ModelDef;
  /** Size of a value as the store counts it (for size budgets such as a job's log). */
  recordSize(value: unknown): number;
}

/**
 * A model's Django class name (its `objectName`, else the verbose name's words with their first
 * letter upper-cased, joined: "IP address" → "IPAddress"). Its lower case is the model name.
 */
export function objectNameOf(def: ModelDef): string {
  return def.objectName ??
    def.verbose.split(/\s+/).map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join("");
}
