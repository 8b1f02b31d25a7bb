/**
 * Every Deno KV key the app writes is built here, so the key space can be read in one place.
 * Each surface owns one top-level prefix.
 */

type Key = Deno.KvKey;

export const keys = {
  counter: (name: string): Key => ["counters", name],

  // backend surface
  apiKeyClaim: (): Key => ["backend", "api_keys", "claimed"],
  apiKeyByDigest: (digest: string): Key => ["backend", "api_keys", "by_digest", digest],
  apiKeyIdIndex: (id: number): Key => ["backend", "api_keys", "by_id", id],
  apiKeyIdIndexPrefix: (): Key => ["backend", "api_keys", "by_id"],
  apiKeyActiveCount: (): Key => ["backend", "api_keys", "active_count"],
  /** Changes with every key mutation; processes watch it to drop their authentication cache. */
  apiKeyGeneration: (): Key => ["backend", "api_keys", "generation"],
  inventoryEndpoint: (id: number): Key => ["backend", "inventory_endpoint", "by_id", id],
  inventoryEndpointPrefix: (): Key => ["backend", "inventory_endpoint", "by_id"],
  inventoryEndpointSingleton: (): Key => ["backend", "inventory_endpoint", "singleton"],
  hypervisorEndpoint: (id: number): Key => ["backend", "hypervisor_endpoints", "by_id", id],
  hypervisorEndpointPrefix: (): Key => ["backend", "hypervisor_endpoints", "by_id"],
  hypervisorEndpointName: (
    name: string,
  ): Key => ["backend", "hypervisor_endpoints", "by_name", name],

  /** A saved sync ledger (by the SHA-256 of its inventory and endpoint): which chunks hold it. */
  syncLedgerHead: (hash: string): Key => ["backend", "sync_ledger", "head", hash],
  /** Its gzip-compressed state in chunks under the 64 KiB limit, under a random blob id. */
  syncLedgerChunk: (hash: string, blob: string, index: number): Key => [
    "backend",
    "sync_ledger",
    "chunk",
    hash,
    blob,
    index,
  ],
  /** A request id of the sync's own writes on one inventory (by the SHA-256 of its key). */
  syncOwnRequest: (hash: string, requestId: string): Key => [
    "backend",
    "sync_own",
    hash,
    requestId,
  ],
  /** Every blob of one ledger (one blob's chunks with `blob`). */
  syncLedgerChunkPrefix: (hash: string, blob?: string): Key =>
    blob === undefined
      ? ["backend", "sync_ledger", "chunk", hash]
      : ["backend", "sync_ledger", "chunk", hash, blob],
  /** Verb audit records: the record by id, and one copy under each filterable field. */
  verbAudit: (id: number): Key => ["backend", "verb_audit", "by_id", id],
  verbAuditPrefix: (): Key => ["backend", "verb_audit", "by_id"],
  verbAuditIndex: (field: string, value: string | number, id: number): Key => [
    "backend",
    "verb_audit",
    "by",
    field,
    value,
    id,
  ],
  verbAuditIndexPrefix: (field: string, value: string | number): Key => [
    "backend",
    "verb_audit",
    "by",
    field,
    value,
  ],
  /** About how many audit records one endpoint has (a KvU64), to know when to prune. */
  verbAuditCount: (endpointId: number): Key => ["backend", "verb_audit", "count", endpointId],
  /** One Idempotency-Key's claim and, once finished, the answer it replays. */
  verbIdempotency: (key: string): Key => ["backend", "verb_idempotency", key],

  // hypervisor surface (rate limits, stored schema versions): see routes/hypervisor and mock/
  /** Fixed-window request counter of one client address on one rate-limited route. */
  hypervisorRateLimit: (route: string, ip: string): Key => ["hypervisor", "rate", route, ip],
  /** Manifest of a stored (generated) schema version; written last, after its chunks. */
  hypervisorSchemaVersion: (label: string): Key => ["hypervisor", "schema_versions", label],
  hypervisorSchemaVersionPrefix: (): Key => ["hypervisor", "schema_versions"],
  /** Gzip-compressed schema text of one stored version, in chunks under the 64 KiB limit. */
  hypervisorSchemaChunk: (blob: string, index: number): Key => [
    "hypervisor",
    "schema_chunks",
    blob,
    index,
  ],
  hypervisorSchemaChunkPrefix: (blob: string): Key => ["hypervisor", "schema_chunks", blob],

  // inventory plugin (plugin models themselves live in the inventory model engine's keys)
  pluginSettings: (): Key => ["plugin", "settings"],
  consoleSession: (id: string): Key => ["ui", "session", id],
  terminalTicket: (hash: string): Key => ["terminal", "ticket", hash],
  terminalSession: (id: string): Key => ["terminal", "session", id],
  /** Newest first: the key sorts by (MAX - created ms). */
  terminalSessionOrder: (
    inverted: string,
    id: string,
  ): Key => ["terminal", "by_time", inverted, id],

  // inventory surface (models, indexes, tokens, jobs): see domain/netbox and routes/inventory
  // Objects of every model live under ["inventory", "obj", <model>, <id>]; the model name is
  // the NetBox "app_label.model" form (e.g. "virtualization.virtualmachine").
  inventoryObject: (model: string, id: number): Key => ["inventory", "obj", model, id],
  inventoryObjectPrefix: (model: string): Key => ["inventory", "obj", model],
  inventoryCount: (model: string): Key => ["inventory", "count", model],
  /** Bumped by every commit that writes the model: what a cached read was taken at. */
  inventoryGeneration: (model: string): Key => ["inventory", "gen", model],
  inventorySequence: (model: string): Key => ["inventory", "seq", model],
  /** Per-field value index: one empty entry per (value, id); FK ids and m2m members included. */
  inventoryIndex: (model: string, field: string, value: Deno.KvKeyPart, id: number): Key => [
    "inventory",
    "idx",
    model,
    field,
    value,
    id,
  ],
  inventoryIndexPrefix: (model: string, field: string, value: Deno.KvKeyPart): Key => [
    "inventory",
    "idx",
    model,
    field,
    value,
  ],
  /** Unique constraint entry: the id holding the value combination. */
  inventoryUnique: (model: string, constraint: string, values: Deno.KvKeyPart[]): Key => [
    "inventory",
    "uniq",
    model,
    constraint,
    ...values,
  ],
  /** Random Fernet key protecting v1 token plaintexts when SERVICE_ENCRYPTION_KEY is unset. */
  inventoryLocalSecretKey: (): Key => ["inventory", "meta", "local_secret_key"],
  /**
   * Every ordered-index entry / value-index entry / value counter under one field of a model
   * (null: all fields).
   */
  inventoryOrderedFieldPrefix: (model: string, field: string | null): Key =>
    field === null ? ["inventory", "ord", model] : ["inventory", "ord", model, field],
  inventoryIndexFieldPrefix: (model: string, field: string | null): Key =>
    field === null ? ["inventory", "idx", model] : ["inventory", "idx", model, field],
  inventoryIndexCountFieldPrefix: (model: string, field: string | null): Key =>
    field === null ? ["inventory", "idx_count", model] : ["inventory", "idx_count", model, field],
  /** The index layout version the stored index keys follow (engine/index_state.ts). */
  inventoryIndexLayout: (): Key => ["inventory", "meta", "index_layout"],
  /** KvU64 number of ids under one (field, value) of the value index. */
  inventoryIndexCount: (model: string, field: string, value: Deno.KvKeyPart): Key => [
    "inventory",
    "idx_count",
    model,
    field,
    value,
  ],
  /** Ordered index: ids under one (field, value) sorted by the model's default ordering. */
  inventoryOrdered: (
    model: string,
    field: string,
    value: Deno.KvKeyPart,
    sort: Deno.KvKeyPart,
    id: number,
  ): Key => ["inventory", "ord", model, field, value, sort, id],
  inventoryOrderedPrefix: (model: string, field: string, value: Deno.KvKeyPart): Key => [
    "inventory",
    "ord",
    model,
    field,
    value,
  ],
};
