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
}

export type Conflict = { ok: false; reason: "conflict" | "not_found" };
export type Saved<T> = { ok: true; record: T } | Conflict;

export interface InventoryEndpointStore {
  list(): Promise<InventoryEndpointRecord[]>;
  get(id: number): Promise<InventoryEndpointRecord | null>;
  /** Fails with "conflict" when one already exists (the registry is a singleton). */
  create(data: Omit<InventoryEndpointRecord, "id">): Promise<Saved<InventoryEndpointRecord>>;
  update(id: number, data: Omit<InventoryEndpointRecord, "id">): Promise<Saved<InventoryEndpointRecord>>;
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
