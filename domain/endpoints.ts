/**
 * The backend's copies of the inventory and hypervisor endpoint settings (docs/api-behaviour.md,
 * Backend: endpoint copies):
 * field rules, secret sealing, and the public view that never carries a secret.
 */
import type {
  HypervisorEndpointRecord,
  HypervisorEndpointStore,
  InventoryEndpointRecord,
  InventoryEndpointStore,
  KeySource,
  SyncPolicyRecord,
} from "../storage/ports.ts";
import { CredentialError, type CredentialVault, KeyUnavailableError } from "./credentials.ts";

export const texts = {
  inventorySingleton: "Only one inventory endpoint is allowed",
  inventoryNotFound: "Inventory endpoint not found.",
  hypervisorNotFound: "Hypervisor endpoint not found.",
  hypervisorNameTaken: (name: string) => `A hypervisor endpoint named "${name}" already exists`,
} as const;

export interface FieldIssue {
  field: string;
  message: string;
  type: "missing" | "value_error";
}

/** A save's outcome; the backend's error mapper (routes/backend/endpoints.ts) picks the answer. */
export type SaveResult<T> =
  | { ok: true; record: T }
  | { ok: false; reason: "not_found" | "conflict"; detail: string }
  | { ok: false; reason: "invalid"; issues: FieldIssue[] };

// ---------------------------------------------------------------- inventory endpoint

export interface InventoryEndpointInput {
  name: string;
  ip: string;
  port: number;
  use_https: boolean;
  verify_ssl: boolean;
  token_version: "v1" | "v2";
  /** Omitted on update: keep the stored one (secrets are never returned, so a client cannot resend it). */
  token?: string;
  token_key?: string | null;
}

export type PublicInventoryEndpoint =
  & Omit<InventoryEndpointRecord, "token">
  & { has_token: boolean };

export function publicInventoryEndpoint(
  { token, ...rest }: InventoryEndpointRecord,
): PublicInventoryEndpoint {
  return { ...rest, has_token: Boolean(token) };
}

interface Destination {
  ip: string;
  port: number;
  use_https: boolean;
  verify_ssl: boolean;
  token_version?: string;
}

/**
 * Whether a write points a stored endpoint somewhere else (its secrets must not follow). Turning
 * certificate verification off counts too: the secret would then go to whoever answers on that
 * address, which is as good as a new destination (SECURITY.md).
 */
function movedFrom(
  current: Destination,
  input: Destination,
  extra: readonly "token_version"[],
): boolean {
  const host = (ip: string) => ip.trim().toLowerCase().replace(/\/\d+$/, "");
  return host(current.ip) !== host(input.ip) || current.port !== input.port ||
    current.use_https !== input.use_https ||
    (current.verify_ssl !== false && input.verify_ssl === false) ||
    extra.some((field) => current[field] !== input[field]);
}

export async function saveInventoryEndpoint(
  store: InventoryEndpointStore,
  vault: CredentialVault,
  id: number | null,
  input: InventoryEndpointInput,
): Promise<SaveResult<InventoryEndpointRecord>> {
  const current = id === null ? null : await store.get(id);
  if (id !== null && !current) {
    return { ok: false, reason: "not_found", detail: texts.inventoryNotFound };
  }
  if (id === null && (await store.list()).length > 0) {
    return { ok: false, reason: "conflict", detail: texts.inventorySingleton };
  }
  const tokenKey = input.token_version === "v2" ? (input.token_key ?? null) : null;
  const issues: FieldIssue[] = [];
  // A stored token stays with the destination it was saved for: a move must send it again.
  const moved = current !== null && movedFrom(current, input, ["token_version"]);
  const hasToken = Boolean(input.token) || (!moved && Boolean(current?.token));
  if (!hasToken) {
    issues.push({
      field: "token",
      type: "missing",
      message: moved && current?.token
        ? "token is required again: the endpoint's address, port, scheme or token version " +
          "changed (or certificate verification was turned off), and the stored token stays " +
          "with the old destination"
        : `token is required when token_version is ${input.token_version}`,
    });
  }
  if (input.token_version === "v2" && !tokenKey) {
    issues.push({
      field: "token_key",
      type: "missing",
      message: "token_key is required when token_version is v2",
    });
  }
  if (issues.length) return { ok: false, reason: "invalid", issues };

  let token = moved ? "" : current?.token ?? "";
  let keySource = current?.key_source ?? "none";
  if (input.token) {
    const sealed = await vault.sealInventory({ token: input.token });
    token = sealed.secrets.token ?? "";
    keySource = sealed.source;
  } else if (token && current) {
    const again = await resealKept(vault, "inventory", { token }, keySource, current);
    token = again.secrets.token ?? token;
    keySource = again.source;
  }
  const data = {
    name: input.name,
    ip: input.ip,
    port: input.port,
    use_https: input.use_https,
    verify_ssl: input.verify_ssl,
    token_version: input.token_version,
    token,
    token_key: tokenKey,
    key_source: keySource,
  };
  const saved = id === null ? await store.create(data) : await store.update(id, data);
  if (saved.ok) return saved;
  return saved.reason === "conflict"
    ? { ok: false, reason: "conflict", detail: texts.inventorySingleton }
    : { ok: false, reason: "not_found", detail: texts.inventoryNotFound };
}

// ---------------------------------------------------------------- hypervisor endpoints

export interface HypervisorEndpointInput {
  name: string;
  ip: string;
  port: number;
  use_https: boolean;
  verify_ssl: boolean;
  username?: string | null;
  password?: string | null;
  token_name?: string | null;
  token_value?: string | null;
  allow_writes: boolean;
  enabled: boolean;
  timeout: number;
  /** Run options this endpoint's runs default to; undefined keeps the stored policy. */
  sync_policy?: SyncPolicyRecord | null;
}

export type PublicHypervisorEndpoint =
  & Omit<HypervisorEndpointRecord, "password" | "token_value">
  & { has_password: boolean; has_token_value: boolean };

export function publicHypervisorEndpoint(
  { password, token_value, ...rest }: HypervisorEndpointRecord,
): PublicHypervisorEndpoint {
  return { ...rest, has_password: Boolean(password), has_token_value: Boolean(token_value) };
}

export async function saveHypervisorEndpoint(
  store: HypervisorEndpointStore,
  vault: CredentialVault,
  id: number | null,
  input: HypervisorEndpointInput,
): Promise<SaveResult<HypervisorEndpointRecord>> {
  const current = id === null ? null : await store.get(id);
  if (id !== null && !current) {
    return { ok: false, reason: "not_found", detail: texts.hypervisorNotFound };
  }

  // An omitted secret keeps the stored one; an explicit null or "" clears it. A move (address,
  // port or scheme) clears every secret not sent again: it stays with the old destination.
  const moved = current !== null && movedFrom(current, input, []);
  const given = (value: string | null | undefined) =>
    value === undefined ? undefined : (value || null);
  const password = given(input.password) === undefined
    ? (moved ? null : current?.password ?? null)
    : given(input.password)!;
  const tokenValue = given(input.token_value) === undefined
    ? (moved ? null : current?.token_value ?? null)
    : given(input.token_value)!;
  const tokenName = input.token_name === undefined
    ? (current?.token_name ?? null)
    : (input.token_name || null);
  if (!password && !(tokenName && tokenValue)) {
    const issues: FieldIssue[] = [];
    const message = moved && (current?.password || current?.token_value)
      ? "either password or both token_name and token_value are required again: the " +
        "endpoint's address, port or scheme changed (or certificate verification was turned " +
        "off), and stored secrets stay with the old one"
      : "either password or both token_name and token_value are required";
    if (!password) issues.push({ field: "password", type: "missing", message });
    if (!tokenName) issues.push({ field: "token_name", type: "missing", message });
    if (!tokenValue) issues.push({ field: "token_value", type: "missing", message });
    return { ok: false, reason: "invalid", issues };
  }

  // One record has one key source, so when a secret changes both are sealed again together.
  let secrets = { password, token_value: tokenValue };
  let keySource = current?.key_source ?? "none";
  if (input.password !== undefined || input.token_value !== undefined) {
    const label = current ? endpointLabel(current) : `endpoint "${input.name}"`;
    const plain = {
      password: input.password !== undefined
        ? password
        : await vault.open(password, keySource, label),
      token_value: input.token_value !== undefined
        ? tokenValue
        : await vault.open(tokenValue, keySource, label),
    };
    const sealed = await vault.sealHypervisor(plain);
    secrets = { password: sealed.secrets.password, token_value: sealed.secrets.token_value };
    keySource = sealed.source;
  } else if ((password || tokenValue) && current) {
    const again = await resealKept(vault, "hypervisor", secrets, keySource, current);
    secrets = { password: again.secrets.password, token_value: again.secrets.token_value };
    keySource = again.source;
  }

  const data = {
    name: input.name,
    ip: input.ip,
    port: input.port,
    use_https: input.use_https,
    verify_ssl: input.verify_ssl,
    username: input.username === undefined ? (current?.username ?? null) : (input.username || null),
    password: secrets.password,
    token_name: tokenName,
    token_value: secrets.token_value,
    allow_writes: input.allow_writes,
    enabled: input.enabled,
    timeout: input.timeout,
    key_source: keySource,
  };
  // Kept only when set: a record without a policy looks as it always did.
  const policy = input.sync_policy === undefined ? current?.sync_policy : input.sync_policy;
  if (policy) Object.assign(data, { sync_policy: policy });
  const saved = id === null ? await store.create(data) : await store.update(id, data);
  if (saved.ok) return saved;
  return saved.reason === "conflict"
    ? { ok: false, reason: "conflict", detail: texts.hypervisorNameTaken(input.name) }
    : { ok: false, reason: "not_found", detail: texts.hypervisorNotFound };
}

/**
 * A save that keeps the stored secrets also re-seals them under the current key (one set since
 * they were stored, or rotated), so `key_source` does not stay `none` forever. Opportunistic:
 * secrets that cannot be opened, or a plugin key that cannot be read, leave them as they were
 * (the credentials check and `POST /credentials/rekey` report those).
 */
async function resealKept<S extends Record<string, string | null>>(
  vault: CredentialVault,
  kind: "inventory" | "hypervisor",
  stored: S,
  source: KeySource,
  current: { id: number; name: string },
): Promise<{ secrets: S; source: KeySource }> {
  try {
    const again = await vault.reseal(kind, stored, source, `${kind} ${endpointLabel(current)}`);
    return { secrets: again.secrets as S, source: again.source };
  } catch (error) {
    if (error instanceof CredentialError || error instanceof KeyUnavailableError) {
      return { secrets: stored, source };
    }
    throw error;
  }
}

export function endpointLabel(record: { id: number; name: string }): string {
  return `endpoint ${record.id} ("${record.name}")`;
}
