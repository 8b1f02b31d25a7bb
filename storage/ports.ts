/**
 * Narrow storage interfaces. Domain code and handlers depend on these, never on Deno KV
 * directly; storage/kv/ holds the Deno KV implementations.
 */

// ---------------------------------------------------------------- backend: API keys

export interface ApiKeyRecord {
  id: number;
  label: string;
  is_active: boolean;
  /** Seconds since the Unix epoch (float). */
  created_at: number;
  /** Hex SHA-256 of the key; the plaintext is never stored. */
  digest: string;
}

export type KeyChange =
  | { ok: true; record: ApiKeyRecord }
  | { ok: false; reason: "not_found" | "last_active" };

export interface ApiKeyStore {
  /** True once any key was ever registered; never goes back to false. */
  isClaimed(): Promise<boolean>;
  /** One read answering both questions an authenticated request asks. */
  lookup(digest: string): Promise<{ claimed: boolean; record: ApiKeyRecord | null }>;
  /** Atomically claims the registry with its first key; null when it was already claimed. */
  claimFirst(digest: string, label: string, createdAt: number): Promise<ApiKeyRecord | null>;
  create(digest: string, label: string, createdAt: number): Promise<ApiKeyRecord>;
  get(id: number): Promise<ApiKeyRecord | null>;
  /** Newest first. */
  list(): Promise<ApiKeyRecord[]>;
  setActive(id: number, active: boolean): Promise<KeyChange>;
  delete(id: number): Promise<KeyChange>;
  /**
   * Calls `onChange` whenever any process changes the key set (first call: right away).
   * Ends when the storage closes or the signal aborts.
   */
  watch(onChange: () => void, signal?: AbortSignal): Promise<void>;
}

// ---------------------------------------------------------------- backend: endpoint copies

/** Where the key that protects a stored secret came from (decides how to decrypt it later). */
export type KeySource = "env" | "plugin" | "none";

export interface InventoryEndpointRecord {
  id: number;
  name: string;
  ip: string;
  port: number;
  use_https: boolean;
  verify_ssl: boolean;
  token_version: "v1" | "v2";
  /** `enc:<fernet>` or plaintext, per key_source. */
  token: string;
  token_key: string | null;
  key_source: KeySource;
}

export interface HypervisorEndpointRecord {
  id: number;
  name: string;
  ip: string;
  port: number;
  use_https: boolean;
  verify_ssl: boolean;
  username: string | null;
  password: string | null;
  token_name: string | null;
  token_value: string | null;
  allow_writes: boolean;
  enabled: boolean;
  timeout: number;
  key_source: KeySource;
  /** Sync policy: run options this endpoint's runs default to (docs/sync.md, "Run options"). */
  sync_policy?: SyncPolicyRecord | null;
}

/** One tenant rule of a sync policy (docs/sync.md, "Roles and tenants"): first match wins. */
export interface TenantRuleRecord {
  /** What the rule looks at: the guest's name (a pattern), one of its tags, its cluster. */
  match: "name" | "tag" | "cluster";
  /** name: a regular expression (searched); tag and cluster: the value, case-insensitive. */
  pattern: string;
  /** The tenant's slug. */
  tenant: string;
}

/** A stored sync policy: run options as their query strings, and `tenant_rules`. */
/** Run options as booleans and strings (what the admin sent, read back as sent), plus tenant_rules. */
export type SyncPolicyRecord = Record<string, string | boolean | TenantRuleRecord[]>;

export type Conflict = { ok: false; reason: "conflict" | "not_found" };
export type Saved<T> = { ok: true; record: T } | Conflict;

export interface InventoryEndpointStore {
  list(): Promise<InventoryEndpointRecord[]>;
  get(id: number): Promise<InventoryEndpointRecord | null>;
  /** Fails with "conflict" when one already exists (the registry is a singleton). */
  create(data: Omit<InventoryEndpointRecord, "id">): Promise<Saved<InventoryEndpointRecord>>;
  update(
    id: number,
    data: Omit<InventoryEndpointRecord, "id">,
  ): Promise<Saved<InventoryEndpointRecord>>;
  delete(id: number): Promise<boolean>;
}

export interface HypervisorEndpointStore {
  list(): Promise<HypervisorEndpointRecord[]>;
  get(id: number): Promise<HypervisorEndpointRecord | null>;
  /** Fails with "conflict" when the name is taken. */
  create(data: Omit<HypervisorEndpointRecord, "id">): Promise<Saved<HypervisorEndpointRecord>>;
  update(
    id: number,
    data: Omit<HypervisorEndpointRecord, "id">,
  ): Promise<Saved<HypervisorEndpointRecord>>;
  delete(id: number): Promise<boolean>;
}

/**
 * Compare-and-set on one endpoint record, for re-sealing its secrets: the write lands only if
 * the record is still the version that was read (an edit in between wins; the caller retries).
 */
export interface VersionedRecords<R> {
  getVersioned(id: number): Promise<{ record: R; version: string } | null>;
  replaceIfUnchanged(id: number, version: string, record: R): Promise<boolean>;
}

// ---------------------------------------------------------------- inventory: model objects
// (added for the inventory model engine, domain/netbox/; implementation in storage/kv/models.ts)

/** A stored object of any inventory model: FKs as ids, m2m as id arrays, choices as values. */
export interface StoredObject {
  id: number;
  [field: string]: unknown;
}

/** A scalar that can be part of an index or unique key. */
export type IndexValue = string | number | boolean | bigint;
/**
 * [field, value]: one value-index entry of an object. `counted: false` keeps no per-value
 * counter for it (the engine counts such a value's entries by listing them).
 */
export type IndexEntry = readonly [field: string, value: IndexValue, counted?: false];
/** [constraint name, values]: one unique-constraint entry of an object. */
export type UniqueEntry = readonly [constraint: string, values: readonly IndexValue[]];

/** [field, value, sort key]: one ordered-index entry (ids under a value in display order). */
export type OrderedEntry = readonly [field: string, value: IndexValue, sort: IndexValue];

export interface ObjectState {
  record: StoredObject;
  indexes: readonly IndexEntry[];
  uniques: readonly UniqueEntry[];
  ordered?: readonly OrderedEntry[];
}

/**
 * One object change. `prev` (with the versionstamp it was read at) is what is replaced or
 * removed; `next` is the new state (null deletes). The store diffs the two: stale index and
 * unique entries go, new ones are set, and every new unique entry is checked to be free.
 */
export interface ObjectWrite {
  model: string;
  id: number;
  prev: (ObjectState & { version: string }) | null;
  next: ObjectState | null;
}

export type CommitResult = { ok: true } | { ok: false };

export interface ModelStore {
  /** Reserves `count` consecutive ids of a model; returns the first. */
  allocateIds(model: string, count: number): Promise<number>;
  /**
   * Creates `count` new objects under fresh consecutive ids without an atomic of their own:
   * the first atomic writing the objects (`make(first)`, planned and committed as `plan` and
   * `commit` would) also moves the model's sequence, checked. `make` may run again with
   * another first id when another process took those ids meanwhile. Meant for writes that
   * claim no unique value (the change log); ok false when a commit fails for another reason.
   */
  createWithFreshIds(
    model: string,
    count: number,
    make: (first: number) => ObjectWrite[],
  ): Promise<CommitResult & { first: number }>;
  get(model: string, id: number): Promise<{ record: StoredObject; version: string } | null>;
  /** Records in the order of `ids`; missing ones are skipped. */
  getMany(model: string, ids: readonly number[]): Promise<StoredObject[]>;
  /** get() for many ids at once, aligned with `ids` (null: absent); never cached. */
  getVersioned(
    model: string,
    ids: readonly number[],
  ): Promise<Array<{ record: StoredObject; version: string } | null>>;
  /** Every record of a model in id order (the fallback for filters without an index). */
  scan(model: string): Promise<StoredObject[]>;
  /** `limit` records in id order after skipping `offset` (ascending unless reverse). */
  page(model: string, offset: number, limit: number, reverse: boolean): Promise<StoredObject[]>;
  count(model: string): Promise<number>;
  /** Ids having `value` in the index of `field`, ascending. */
  idsByIndex(model: string, field: string, value: IndexValue, limit?: number): Promise<number[]>;
  /**
   * idsByIndex for several values of one field (a filter naming 100 parents), in their order:
   * values close together are read as one range of the index rather than one list each.
   */
  idsByIndexMany(model: string, field: string, values: readonly IndexValue[]): Promise<number[][]>;
  idByUnique(
    model: string,
    constraint: string,
    values: readonly IndexValue[],
  ): Promise<number | null>;
  /** idByUnique for many value combinations at once, aligned with `lookups`. */
  idsByUnique(
    model: string,
    lookups: ReadonlyArray<{ constraint: string; values: readonly IndexValue[] }>,
  ): Promise<Array<number | null>>;
  /** How many ids the value index holds under (field, value), without listing them. */
  countByIndex(model: string, field: string, value: IndexValue): Promise<number>;
  /** countByIndex for several values of one field, in their order, in few reads. */
  countsByIndex(model: string, field: string, values: readonly IndexValue[]): Promise<number[]>;
  /**
   * An id list derived from `model` (a filtered, sorted list result), kept under `key` while no
   * commit touches the model, nor any of `alsoReads` (a list sorted by a related object's name
   * reads that model too): `make` runs only on a miss. Paged reads of one list then sort it
   * once, not once per page.
   */
  derivedIds(
    model: string,
    key: string,
    make: () => Promise<number[]>,
    alsoReads?: readonly string[],
  ): Promise<number[]>;
  /** One page of ids under (field, value): by id, or by the ordered index when `ordered`. */
  pageByIndex(
    model: string,
    field: string,
    value: IndexValue,
    page: { offset: number; limit: number; reverse: boolean; ordered: boolean },
  ): Promise<number[]>;
  /**
   * Keyset page: up to `limit` ids above `after` (ascending) under (field, value), or of every
   * object when field is "*". Stable while others write: an id never moves.
   */
  idsAfter(
    model: string,
    field: string,
    value: IndexValue,
    after: number,
    limit: number,
  ): Promise<number[]>;
  /** How many ids up to `upTo` (inclusive) are under (field, value), or "*" for all objects. */
  countUpTo(model: string, field: string, value: IndexValue, upTo: number): Promise<number>;
  /**
   * Splits writes into groups that each fit one atomic operation (mutation, check and size
   * limits of the backing store).
   */
  plan(writes: readonly ObjectWrite[]): ObjectWrite[][];
  /** Commits writes that fit one atomic (see plan): all or nothing; ok false on a conflict. */
  commit(writes: readonly ObjectWrite[]): Promise<CommitResult>;
  /**
   * Deletes every ordered-index entry (`ordered`), value counter (`counters`) or value-index
   * entry (`index`) kept under `field` of `model` (every field of it when null), a few hundred
   * per atomic; returns how many went. For keys the index layout no longer keeps that an earlier
   * build wrote (see indexLayout).
   */
  dropIndexKeys(
    model: string,
    field: string | null,
    what: "ordered" | "counters" | "index",
  ): Promise<number>;
  /** The index layout the stored keys follow (0 when never recorded: an earlier build's). */
  indexLayout(): Promise<number>;
  setIndexLayout(version: number): Promise<void>;
  /** The inventory's local secret (token encryption key): created once, atomically. */
  localSecret(generate: () => string): Promise<string>;

  // What the backing store can hold and how it orders keys: the engine asks, never assumes.
  /** Longest string kept in a value index or unique key; longer values are found by scan. */
  readonly maxIndexedLength: number;
  /** Largest record the store accepts, as `recordSize` measures it. */
  readonly maxRecordBytes: number;
  /**
   * Upper bound of a value's size as the store keeps it. A store may keep the measure for the
   * write that stores the same object as its record: a record measured here is then not made
   * larger before that write (the engine measures its drafts last, docs/sync.md "Writes: round 9").
   */
  recordSize(value: unknown): number;
  /**
   * Sort key of a value as the ordered index keeps it, shared with in-memory sorting so both
   * agree: strings case-insensitive in natural order (digit runs compare as numbers), bounded;
   * null after every value (PostgreSQL's NULLS LAST, so NULLS FIRST read backwards).
   */
  sortKey(value: unknown): IndexValue;
  /** Compares two sort keys in the store's key order. */
  compareSortKeys(a: IndexValue, b: IndexValue): number;
}

// ---------------------------------------------------------------- backend: verb audit, idempotency

export type VerbName = "start" | "stop" | "snapshot" | "migrate";
export type GuestType = "qemu" | "lxc";
export type VerbResult = "ok" | "already_running" | "already_stopped" | "accepted" | "failed";

/**
 * One operational verb, written `in_progress` before the hypervisor is called and finalised
 * after. A record still `in_progress` long after `created_at` is a verb whose outcome is
 * unknown (the process stopped between the two writes).
 */
export interface VerbAuditRecord {
  id: number;
  verb: VerbName;
  vm_type: GuestType;
  vmid: number;
  endpoint_id: number;
  /** Free text from `X-Service-Actor`: who the caller says it acts for. */
  actor: string;
  /** The backend API key that made the request (null on records written before it was kept). */
  api_key_id: number | null;
  result: VerbResult | null;
  status: "in_progress" | "finalized";
  task_upid: string | null;
  idempotency_key: string | null;
  /** ISO 8601. */
  created_at: string;
  finished_at: string | null;
  /** Why a verb failed (the hypervisor's message), or what it did instead. */
  detail: string | null;
}

export type VerbAuditStart = Pick<
  VerbAuditRecord,
  | "verb"
  | "vm_type"
  | "vmid"
  | "endpoint_id"
  | "actor"
  | "api_key_id"
  | "idempotency_key"
  | "created_at"
>;

export interface VerbAuditFilter {
  endpoint_id?: number;
  vmid?: number;
  actor?: string;
  verb?: VerbName;
  status?: VerbAuditRecord["status"];
}

export interface VerbAuditStore {
  /** Writes the `in_progress` record; rejects when it cannot be stored. */
  begin(start: VerbAuditStart): Promise<VerbAuditRecord>;
  /** Finalises a record; null when it does not exist. */
  finish(
    id: number,
    outcome: Pick<VerbAuditRecord, "result" | "task_upid" | "detail" | "finished_at">,
  ): Promise<VerbAuditRecord | null>;
  /** Newest first. */
  list(
    filter: VerbAuditFilter,
    page: { limit: number; offset: number },
  ): Promise<{ count: number; results: VerbAuditRecord[] }>;
}

/** What an Idempotency-Key holds: the request it was first used for and, once done, its answer. */
export interface IdempotencyEntry {
  fingerprint: string;
  /** Epoch ms after which the key may be used afresh. */
  expires_at: number;
  answer: { status: number; body: unknown } | null;
}

export type IdempotencyClaim = { claimed: true } | { claimed: false; entry: IdempotencyEntry };

export interface IdempotencyStore {
  /** Atomically takes the key unless a live entry holds it (then returns that entry). */
  claim(key: string, fingerprint: string, now: number, ttlMs: number): Promise<IdempotencyClaim>;
  /** Stores the answer a repeat replays. */
  complete(key: string, answer: { status: number; body: unknown }): Promise<void>;
  /** Gives the key up (nothing was done, so a repeat must run afresh). */
  release(key: string): Promise<void>;
  /** Resolves with the entry once it has an answer or is gone (null), or on abort. */
  settled(key: string, signal: AbortSignal): Promise<IdempotencyEntry | null>;
}

/** A web console session as stored: the token's Authorization value sealed (see domain/). */
export interface ConsoleSessionRecord {
  sealed: string;
  iv: string;
  csrf: string;
  token_id: number;
  created: number;
  expires: number;
}

export interface ConsoleSessionStore {
  /** Stores a new session; the entry disappears by itself after `ttlMs`. */
  put(id: string, record: ConsoleSessionRecord, ttlMs: number): Promise<void>;
  get(id: string): Promise<ConsoleSessionRecord | null>;
  delete(id: string): Promise<void>;
}

// ---------------------------------------------------------------- inventory plugin: settings

/** The plugin settings singleton (docs/api-behaviour.md, "Plugin settings"). */
export interface PluginSettings {
  /** Plaintext; the inventory database is the key's home (docs/api-behaviour.md, "Secrets"). */
  encryption_key: string | null;
  custom_fields_enabled: boolean;
  /** Keys replaced by rotations (newest first, at most 5), still tried when decrypting. */
  previous_keys: string[];
  /** ISO 8601 UTC, null until first changed. */
  last_updated: string | null;
}

export interface PluginSettingsStore {
  get(): Promise<PluginSettings>;
  /**
   * Applies `change` to the current settings atomically. `change` may be async (it runs
   * between the read and the checked write and may run again on contention).
   */
  update(change: (current: PluginSettings) => PluginSettings): Promise<PluginSettings>;
}

// ---------------------------------------------------------------- hypervisor: schema versions

export interface StoredSchemaVersion {
  /** Version label, e.g. `9.3-beta`. */
  version: string;
  /** Where it was loaded from (file path or URL). */
  source: string;
  /** Hex SHA-256 of the stored (uncompressed) JSON text. */
  sha256: string;
  /** Uncompressed JSON text size in bytes. */
  bytes: number;
  /** Compressed size in bytes. */
  stored_bytes: number;
  chunks: number;
  blob: string;
  operations: number;
  paths: number;
  /** ISO 8601. */
  created_at: string;
}

export type SaveResult =
  | { ok: true; record: StoredSchemaVersion }
  | { ok: false; reason: "conflict" | "limit" };

/** How many generated versions a store keeps before `save` answers `limit`. */
export const MAX_STORED_VERSIONS = 50;

export interface SchemaVersionStore {
  list(): Promise<StoredSchemaVersion[]>;
  get(version: string): Promise<StoredSchemaVersion | null>;
  /** Stores the text under a new label; fails when the label exists or the store is full. */
  save(
    meta: Omit<StoredSchemaVersion, "sha256" | "bytes" | "stored_bytes" | "chunks" | "blob">,
    text: string,
  ): Promise<SaveResult>;
  /** The stored JSON text, verified against its digest; null when the version is unknown. */
  loadText(version: string): Promise<string | null>;
  delete(version: string): Promise<boolean>;
}

// ---------------------------------------------------------------- hypervisor: request limits

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Epoch milliseconds when the window closes. */
  resetAt: number;
  /** Whole seconds until the window closes (at least 1); for `Retry-After`. */
  retryAfter: number;
}

/** A fixed window per (route, client) opened by the client's first request; never over-admits. */
export interface RateLimiter {
  hit(route: string, client: string, limit: number, windowMs: number): Promise<RateDecision>;
}

// ---------------------------------------------------------------- inventory plugin: sync jobs

export type JobKind = "sync" | "repair";

/** What a job was asked to do; kept beside the NetBox job record (which has no room for it). */
export interface JobSpec {
  kind: JobKind;
  /** Stage sync types in table order (never "all": expanded when the job is made). */
  sync_types: string[];
  /** Plugin hypervisor endpoint ids; null = every enabled endpoint at run time. */
  endpoint_ids: number[] | null;
  /** Minutes between runs (NetBox `interval`), or null for a one-off. */
  interval_minutes: number | null;
  /** Who asked: the token's id and description, for the log. */
  requested_by: string;
  /** The token that asked; re-checked before every run (older specs lack it). */
  token_id?: number;
  /** Run options passed to every backend stream as query parameters (docs/sync.md). */
  sync_options?: Record<string, string>;
}

/** Who holds the run lease: one job of one process, until `expires_at` (epoch ms). */
export interface Lease {
  job_id: number;
  owner: string;
  expires_at: number;
}

/**
 * One hypervisor endpoint of a running job that covers several (docs/jobs.md, "Several
 * processes"): any process sharing the store may claim it, run it and record its outcome. A claim
 * lapses at `expires_at` unless renewed, so another process takes over the part of one that died.
 */
export interface JobPart {
  job_id: number;
  endpoint_id: number;
  state: "open" | "claimed" | "done";
  /** The process that claimed it last (null while open). */
  owner: string | null;
  /** When the claim lapses (epoch ms); 0 while open. */
  expires_at: number;
  /** Claims so far (more than one: a process took over another's part). */
  claims: number;
  outcome: JobPartOutcome | null;
}

/** How a part ended: its stages' verdict, or `skipped` (not run: another endpoint errored). */
export interface JobPartOutcome {
  status: "completed" | "failed" | "errored" | "skipped";
  error: string;
  /** The process that ran it. */
  by: string | null;
}

/** The job queue and the ownership rules, all in one KV. */
export interface JobStore {
  saveSpec(jobId: number, spec: JobSpec): Promise<void>;
  spec(jobId: number): Promise<JobSpec | null>;
  deleteSpec(jobId: number): Promise<void>;

  /**
   * Admission: claims the `kind` slot for `jobId` unless one of `blocking` slots names a job
   * that `isActive` says is still pending or running (that job's id is returned instead).
   * Atomic (one check per slot): two concurrent claims never both win.
   */
  claimSlot(
    kind: JobKind,
    jobId: number,
    blocking: readonly JobKind[],
    isActive: (jobId: number) => Promise<boolean>,
  ): Promise<{ ok: true } | { ok: false; holder: number }>;
  /** Frees the slot if it still names `jobId`. */
  releaseSlot(kind: JobKind, jobId: number): Promise<void>;
  /** The job a slot names, if any. */
  slotHolder(kind: JobKind): Promise<number | null>;

  /** Takes the run lease (free or expired) for `jobId`; the holder when it is taken. */
  takeLease(
    jobId: number,
    owner: string,
    ttlMs: number,
  ): Promise<{ ok: true } | { ok: false; lease: Lease }>;
  /** Extends our lease; false when it is no longer ours (expired and taken by another). */
  renewLease(jobId: number, owner: string, ttlMs: number): Promise<boolean>;
  releaseLease(jobId: number, owner: string): Promise<void>;
  lease(): Promise<Lease | null>;

  /** Opens one part per endpoint of a running job (docs/jobs.md, "Several processes"). */
  openParts(jobId: number, endpointIds: readonly number[]): Promise<void>;
  /** The parts of one job, or of every running job. */
  parts(jobId?: number): Promise<JobPart[]>;
  /** Claims an open part, or one whose claim lapsed; null when it is not claimable. Atomic. */
  claimPart(
    jobId: number,
    endpointId: number,
    owner: string,
    ttlMs: number,
  ): Promise<JobPart | null>;
  /** Extends our claim; false when it is no longer ours (it lapsed and was taken over). */
  renewPart(jobId: number, endpointId: number, owner: string, ttlMs: number): Promise<boolean>;
  /**
   * Records a part's outcome: by its claimant (`owner`), or, with `owner` null, for a part still
   * open (skipped). False when the part is not in that state any more.
   */
  finishPart(
    jobId: number,
    endpointId: number,
    owner: string | null,
    outcome: JobPartOutcome,
  ): Promise<boolean>;
  clearParts(jobId: number): Promise<void>;

  /** True for the one caller that may settle `jobId` (end it), false for any later one. */
  claimSettlement(jobId: number): Promise<boolean>;

  /** Queues a run message for `jobId`, delivered after `delayMs`. */
  enqueue(jobId: number, delayMs: number): Promise<void>;

  /** Latest live progress frame of a running job (not kept after the job). */
  setProgress(jobId: number, frame: unknown): Promise<void>;
  progress(jobId: number): Promise<unknown>;
  clearProgress(jobId: number): Promise<void>;

  /** Finished jobs per kind, oldest first (retention). */
  markFinished(kind: JobKind, jobId: number): Promise<void>;
  finished(kind: JobKind): Promise<number[]>;
  forgetFinished(kind: JobKind, jobIds: number[]): Promise<void>;

  /**
   * Delivers queued job ids to `handler` (at least once; a message whose handler was cut
   * off by a dead process comes back). Resolves when the store closes.
   */
  listen(handler: (jobId: number) => Promise<void>): Promise<void>;

  /** Ticks whenever the job record or its progress changes (ends when `signal` aborts). */
  watch(jobId: number, signal: AbortSignal): AsyncIterable<void>;
}

/**
 * Who is syncing one hypervisor endpoint right now (docs/sync.md, "One run per endpoint"). A
 * hold lives until `expires_at` (epoch ms) unless renewed, so a process that died frees its
 * endpoints by itself.
 */
export interface SyncRunHold {
  run_id: string;
  /** The process holding it (one id per running app). */
  owner: string;
  endpoint_id: number;
  /** What runs: `full-update` or a stage's type. */
  what: string;
  started_at: number;
  expires_at: number;
}

/** Endpoints one run may hold (KV checks every key of one atomic step, at most 100). */
export const MAX_RUN_ENDPOINTS = 100;

/** Holds one sync run per hypervisor endpoint at a time, across every process on one store. */
export interface SyncRunLockStore {
  /**
   * Takes every endpoint of `endpointIds` (at most MAX_RUN_ENDPOINTS, else a RangeError) for
   * `hold.run_id` in one atomic step (all or none); on refusal, the live hold in the way.
   */
  take(
    endpointIds: readonly number[],
    hold: Omit<SyncRunHold, "endpoint_id" | "expires_at">,
    ttlMs: number,
  ): Promise<{ ok: true } | { ok: false; held: SyncRunHold }>;
  /** Extends the holds of `runId`; false when one is no longer ours. */
  renew(endpointIds: readonly number[], runId: string, ttlMs: number): Promise<boolean>;
  /** Frees the holds that still name `runId`. */
  release(endpointIds: readonly number[], runId: string): Promise<void>;
}

/**
 * The sync's ledgers saved between runs (docs/sync.md, "The ledger across restarts and
 * processes"), by a key naming the inventory and the endpoint. A save is seen whole or not at
 * all; each save gets a new tag.
 */
export interface SyncLedgerStore {
  /**
   * The saved state of `key` and its tag; "unchanged" when its tag is still `known`; null when
   * none is saved (or what is saved is damaged).
   */
  load(
    key: string,
    known: string | null,
  ): Promise<{ tag: string; state: Uint8Array } | "unchanged" | null>;
  /**
   * Saves `state` for `key` if the saved one's tag is still `previous` (null: none is saved):
   * the new tag, or null when another save came first (nothing written).
   */
  save(key: string, state: Uint8Array, previous: string | null): Promise<string | null>;
  /** Notes a request id of the sync's own writes on `inventory`, kept OWN_REQUEST_DAYS. */
  noteOwn(inventory: string, requestId: string): Promise<void>;
  /** Which of `requestIds` were noted on `inventory` (by any process). */
  ownOf(inventory: string, requestIds: readonly string[]): Promise<string[]>;
}

/** How long a noted request id of the sync's own writes is kept (a ledger reads the log later). */
export const OWN_REQUEST_DAYS = 30;

// ---------------------------------------------------------------- browser terminal

/** One opened terminal session, as recorded for admins. */
export interface TerminalSessionRecord {
  id: string;
  endpoint_id: number;
  endpoint_name: string;
  /** The cluster node (plugin node record) a node terminal opened; null for the endpoint's own. */
  node_id?: number | null;
  node_name?: string | null;
  host: string;
  port: number;
  ssh_username: string;
  /** The inventory token the console user signed in with. */
  token_id: number;
  user: string;
  console_session: string;
  created: string;
  attached: string | null;
  ended: string | null;
  duration_seconds: number | null;
  end_reason: string | null;
}

export interface TerminalTicket {
  session_id: string;
  console_session: string;
  endpoint_id: number;
}

/** Browser terminal sessions and their one-time tickets (domain/terminal.ts). */
export interface TerminalSessionStore {
  putTicket(hash: string, ticket: TerminalTicket, ttlMs: number): Promise<void>;
  /** Returns and deletes the ticket in one checked step: a second take gets null. */
  takeTicket(hash: string): Promise<TerminalTicket | null>;
  put(record: TerminalSessionRecord): Promise<void>;
  get(id: string): Promise<TerminalSessionRecord | null>;
  /** Newest first. */
  list(limit: number): Promise<TerminalSessionRecord[]>;
}

// ---------------------------------------------------------------- everything, wired once

/**
 * Every store the app uses, built once (main.ts: `createKvStorage(kv)`) and carried in
 * `AppDeps.storage`. A second backend implements this and passes tests/storage/contract/.
 */
export interface Storage {
  apiKeys: ApiKeyStore;
  inventoryEndpoints: InventoryEndpointStore & VersionedRecords<InventoryEndpointRecord>;
  hypervisorEndpoints: HypervisorEndpointStore & VersionedRecords<HypervisorEndpointRecord>;
  models: ModelStore;
  verbAudit: VerbAuditStore;
  idempotency: IdempotencyStore;
  consoleSessions: ConsoleSessionStore;
  pluginSettings: PluginSettingsStore;
  schemaVersions: SchemaVersionStore;
  rateLimits: RateLimiter;
  /** Sync jobs: requests, admission slots, the run lease, the queue. */
  jobs: JobStore;
  /** One sync run per hypervisor endpoint at a time (backend routes). */
  syncRuns: SyncRunLockStore;
  /** Browser terminal sessions (recorded) and their one-time tickets. */
  terminalSessions: TerminalSessionStore;
  /** The sync's ledgers, saved at the end of each run (backend routes). */
  syncLedgers: SyncLedgerStore;
}
