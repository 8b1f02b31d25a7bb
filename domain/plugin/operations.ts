/**
 * The plugin's own operations behind its custom routes (routes/plugin/mod.ts): keepalive,
 * SSH secrets, settings changes with key rotation, the bootstrap-status relay. Each answers
 * an outcome and a JSON body; the route only maps it to a Response.
 */
import { baseUrl, moveSinceSaved } from "./destination.ts";
import type { ModelEngine } from "../netbox/engine.ts";
import type {
  AuthInfo,
  EngineApi,
  FieldErrors,
  StoredObject,
  WriteRefusal,
  WriteResult,
} from "../netbox/types.ts";
import { objectNameOf } from "../netbox/types.ts";
import { sshFacts } from "./models.ts";
import { MODELS, SECRET_FIELDS } from "./names.ts";
import { isEncrypted, openWithKeyring, sealSecret } from "./secrets.ts";
import { NO_BACKEND, type PluginServices } from "./service.ts";
import {
  MAX_PREVIOUS_KEYS,
  type PluginSettings,
  publicSettings,
  type SettingsPatch,
} from "./settings.ts";
import { resolveSshSecrets } from "./ssh.ts";

/**
 * How an operation ended; routes/plugin maps each outcome to its status. `relayed` passes on
 * the backend's own answer (its status and body).
 */
export type OpOutcome =
  | "ok"
  | "not_found"
  | "conflict"
  | "invalid"
  | "unprocessable"
  | "backend_unreachable";

export type OpResult =
  | { outcome: OpOutcome; body: unknown; headers?: Record<string, string> }
  | { outcome: "relayed"; upstreamStatus: number; body: unknown; headers?: undefined };

/**
 * No record of `model` has the id: NetBox's text for a detail action's get_object ("No
 * HypervisorEndpoint matches the given query.", docs/api-behaviour.md, "Inventory: errors").
 */
function noObject(engine: EngineApi, model: string): OpResult {
  const name = objectNameOf(engine.definition(model));
  return { outcome: "not_found", body: { detail: `No ${name} matches the given query.` } };
}

/** Endpoint kinds whose records hold sealed secrets, and those fields. */
const SEALED = [
  [MODELS.hypervisor, SECRET_FIELDS[MODELS.hypervisor]],
  [MODELS.inventory, SECRET_FIELDS[MODELS.inventory]],
] as const;

async function hypervisor(engine: EngineApi, id: number): Promise<StoredObject | null> {
  return Number.isSafeInteger(id) ? await engine.get(MODELS.hypervisor, id) : null;
}

/**
 * Keepalive: a disabled endpoint answers `disabled` without contacting anything; an enabled
 * one is probed at `<http[s]://host:port>/api2/json/version` with its own credentials.
 */
export async function keepalive(
  services: PluginServices,
  engine: EngineApi,
  id: number,
  timeoutMs: number,
): Promise<OpResult> {
  const record = await hypervisor(engine, id);
  if (!record) return noObject(engine, MODELS.hypervisor);
  const base = {
    id: record.id,
    name: record.name,
    checked_at: new Date(services.deps.now()).toISOString(),
  };
  if (record.enabled === false) {
    return {
      outcome: "ok",
      body: {
        ...base,
        status: "disabled",
        detail: "The endpoint is disabled; it was not contacted.",
      },
    };
  }
  const host = await services.hostOf(engine, record);
  if (!host) {
    return {
      outcome: "ok",
      body: { ...base, status: "error", detail: "The endpoint has no host." },
    };
  }
  const moved = moveSinceSaved(record, host);
  if (moved) {
    return { outcome: "ok", body: { ...base, status: "error", detail: `The endpoint: ${moved}.` } };
  }
  const secrets: Record<string, string | null> = { password: null, token_value: null };
  for (const field of ["password", "token_value"] as const) {
    const stored = record[field];
    if (typeof stored !== "string" || !stored) continue;
    const opened = await services.open(stored);
    if (!opened.ok) {
      return {
        outcome: "ok",
        body: {
          ...base,
          status: "error",
          reason: "credential_undecryptable",
          detail: `${field}: ${opened.detail}`,
        },
      };
    }
    secrets[field] = opened.value;
  }
  const result = await services.deps.probe({
    baseUrl: baseUrl(record.use_https !== false, host, Number(record.port ?? 8006)),
    username: typeof record.username === "string" ? record.username : null,
    password: secrets.password,
    tokenName: typeof record.token_name === "string" && record.token_name
      ? record.token_name
      : null,
    tokenValue: secrets.token_value,
    verifySsl: record.verify_ssl === true,
  }, timeoutMs);
  return { outcome: "ok", body: { ...base, ...result } };
}

/** SSH secrets of an enabled endpoint (a disabled one is excluded from operational reads). */
export async function sshSecrets(
  services: PluginServices,
  engine: EngineApi,
  id: number,
): Promise<OpResult> {
  const record = await hypervisor(engine, id);
  if (!record) return noObject(engine, MODELS.hypervisor);
  if (record.enabled === false) {
    return {
      outcome: "conflict",
      body: { reason: "endpoint_disabled", detail: "The endpoint is disabled." },
    };
  }
  const result = await resolveSshSecrets(
    sshFacts(record),
    services.keyringOf(await services.deps.settings.get()),
  );
  if (!result.ok) {
    return { outcome: result.outcome, body: { ...result.body, endpoint_id: record.id } };
  }
  return { outcome: "ok", body: result.secrets, headers: { "cache-control": "no-store" } };
}

/** Re-seals every stored secret under the new key (best-effort; the keyring covers gaps). */
async function reseal(engine: EngineApi, ring: string[], newKey: string) {
  let resealed = 0;
  let unreadable = 0;
  for (const [model, fields] of SEALED) {
    for (const record of await engine.find(model)) {
      const changes: Record<string, string> = {};
      for (const field of fields) {
        const stored = record[field];
        if (typeof stored !== "string" || !stored) continue;
        const opened = await openWithKeyring(stored, ring);
        if (!opened.ok) {
          unreadable++;
          continue;
        }
        changes[field] = await sealSecret(opened.value, newKey);
        resealed++;
      }
      if (Object.keys(changes).length) await engine.patchStored(model, record.id, changes);
    }
  }
  return { resealed, unreadable };
}

async function countEncrypted(engine: EngineApi): Promise<number> {
  let n = 0;
  for (const [model, fields] of SEALED) {
    for (const record of await engine.find(model)) {
      for (const field of fields) {
        const v = record[field];
        if (typeof v === "string" && isEncrypted(v)) n++;
      }
    }
  }
  return n;
}

/**
 * Applies a settings PATCH. A new encryption_key re-seals the stored secrets (the replaced
 * key stays in the keyring, so a rotation interrupted half-way strands nothing); clearing
 * the key is refused while secrets are sealed with it.
 */
export async function changeSettings(
  services: PluginServices,
  engine: EngineApi,
  patch: Extract<SettingsPatch, { ok: true }>,
): Promise<OpResult> {
  const store = services.deps.settings;
  const current = await store.get();
  const keyChange = patch.encryption_key !== undefined &&
    patch.encryption_key !== current.encryption_key;
  if (keyChange && patch.encryption_key === null) {
    const n = await countEncrypted(engine);
    if (n > 0) {
      return {
        outcome: "invalid",
        body: {
          encryption_key: [
            `${n} stored secrets are encrypted with this key; set a new key instead of clearing it.`,
          ],
        },
      };
    }
  }
  const stamp = new Date(services.deps.now()).toISOString();
  const next = await store.update((s): PluginSettings => {
    const out = { ...s, last_updated: stamp };
    if (patch.custom_fields_enabled !== undefined) {
      out.custom_fields_enabled = patch.custom_fields_enabled;
    }
    if (keyChange) {
      out.previous_keys = [s.encryption_key, ...s.previous_keys]
        .filter((k): k is string => Boolean(k) && k !== patch.encryption_key)
        .slice(0, MAX_PREVIOUS_KEYS);
      out.encryption_key = patch.encryption_key ?? null;
    }
    return out;
  });
  if (keyChange && next.encryption_key) {
    const { resealed, unreadable } = await reseal(
      engine,
      services.keyringOf(next),
      next.encryption_key,
    );
    services.deps.logger.log("info", "plugin encryption_key changed; stored secrets re-sealed", {
      resealed,
      unreadable,
    });
  }
  return { outcome: "ok", body: publicSettings(next) };
}

/** Relays the backend's `/extras/bootstrap-status`: its answer, or `backend_unreachable`. */
export async function bootstrapStatus(
  services: PluginServices,
  engine: EngineApi,
): Promise<OpResult> {
  // No backend is itself a bootstrap problem: answered in the backend's own shape, 200 with
  // ok false (docs/api-behaviour.md, Plugin: endpoints and validation rules), so the repair card
  // shows it instead of an error page.
  const notConfigured = (detail: string): OpResult => ({
    outcome: "ok",
    body: {
      ok: false,
      skipped: true,
      reason: "backend_not_configured",
      warnings: [{ object: "backend endpoint", error: detail }],
      created: 0,
      patched: 0,
      unchanged: 0,
    },
  });
  const backend = await services.backendEndpoint(engine);
  if (!backend) return notConfigured(NO_BACKEND);
  const client = await services.backendClient(engine, backend);
  if (!client) return notConfigured("backend endpoint has no host");
  const relayed = await client.relay("/extras/bootstrap-status");
  if (!relayed.reached) {
    return {
      outcome: "backend_unreachable",
      body: { reason: "backend_unreachable", detail: relayed.error },
    };
  }
  return { outcome: "relayed", upstreamStatus: relayed.status, body: relayed.body };
}

/** Pushes one endpoint now; a conflict for a disabled hypervisor endpoint (never pushed). */
export async function pushNow(
  services: PluginServices,
  engine: EngineApi,
  kind: "hypervisor" | "inventory" | "backend",
  id: number,
): Promise<OpResult> {
  const record = await engine.get(MODELS[kind], id);
  if (!record) return noObject(engine, MODELS[kind]);
  const lastPush = kind === "hypervisor"
    ? await services.pushHypervisor(engine, record)
    : kind === "inventory"
    ? await services.pushInventory(engine, record)
    : await services.pushBackend(engine, record);
  if (lastPush === null) {
    return {
      outcome: "conflict",
      body: {
        reason: "endpoint_disabled",
        detail: "The endpoint is disabled; disabled endpoints are never pushed.",
      },
    };
  }
  return { outcome: "ok", body: { id: record.id, last_push: lastPush } };
}

/**
 * Gives the backend endpoint a key created on the backend (POST /auth/keys there): the way
 * out when the backend's registry was claimed before this endpoint could register its own.
 */
export async function setBackendToken(
  services: PluginServices,
  engine: EngineApi,
  id: number,
  body: unknown,
): Promise<OpResult> {
  const token = body && typeof body === "object" && !Array.isArray(body)
    ? (body as Record<string, unknown>).token
    : undefined;
  if (typeof token !== "string" || token.length < 32 || token.length > 512 || /\s/.test(token)) {
    return {
      outcome: "invalid",
      body: { token: ["Give the backend API key: 32 to 512 characters, no whitespace."] },
    };
  }
  if (!Number.isSafeInteger(id) || !(await engine.get(MODELS.backend, id))) {
    return noObject(engine, MODELS.backend);
  }
  const lastPush = await services.setBackendToken(engine, id, token);
  if (!lastPush) return noObject(engine, MODELS.backend);
  return { outcome: "ok", body: { id, token, last_push: lastPush } };
}

// ------------------------------------------------------------------ upserts

/** The natural key of an input item (a unique constraint of the model), null when incomplete. */
export type NaturalKey = (
  item: Record<string, unknown>,
) => { constraint: string; values: Array<string | number> } | null;

/** An FK reference as written: 5, "5" or {id: 5}. */
function refId(value: unknown): number | null {
  if (typeof value === "number" && Number.isSafeInteger(value)) return value;
  if (typeof value === "string" && /^\d+$/.test(value.trim())) return Number(value.trim());
  if (value && typeof value === "object" && "id" in value) {
    return refId((value as { id: unknown }).id);
  }
  return null;
}

/** Plugin storage is identified by cluster + name. */
export const storageKey: NaturalKey = (item) => {
  const cluster = refId(item.cluster);
  const name = typeof item.name === "string" ? item.name.trim() : "";
  return cluster === null || !name ? null : { constraint: "cluster+name", values: [cluster, name] };
};

/** Task history is identified by its UPID. */
export const taskKey: NaturalKey = (item) => {
  const upid = typeof item.upid === "string" ? item.upid.trim() : "";
  return upid ? { constraint: "upid", values: [upid] } : null;
};

export const MAX_UPSERT_BATCH = 1000;

/** A refused upsert: `invalid` with field errors (one set per item), or why it was refused. */
export type UpsertResult =
  | { ok: true; records: StoredObject[]; updated: boolean[] }
  | { ok: false; reason: "invalid" | WriteRefusal; body: unknown };

/**
 * Creates the items whose natural key is new and updates (PATCH semantics) those whose key
 * exists, so the sync can write blindly. New items are created first, in one validated
 * batch: when any is invalid nothing at all is written.
 */
export async function upsertMany(
  engine: ModelEngine,
  auth: AuthInfo | null,
  model: string,
  key: NaturalKey,
  items: unknown[],
  options: { mayUpdate: boolean },
): Promise<UpsertResult> {
  // Two writers upserting the same new key race: the loser's create fails on the unique
  // constraint. The key then exists, so planning again turns that create into an update.
  for (let attempt = 0;; attempt++) {
    const result = await upsertOnce(engine, auth, model, key, items, options);
    if (result.ok || attempt >= 5) return result;
    // A conflict on the record itself: plan again (the engine already retried with backoff).
    if (result.reason === "conflict") continue;
    if (result.reason !== "invalid") return result;
    let raced = false;
    for (const item of result.creates) {
      if (!item || typeof item !== "object" || Array.isArray(item)) continue;
      const natural = key(item as Record<string, unknown>);
      if (natural && await engine.store.idByUnique(model, natural.constraint, natural.values)) {
        raced = true;
        break;
      }
    }
    if (!raced) return result;
  }
}

/** One planned pass; `creates` are the items it tried to create (for the race check). */
async function upsertOnce(
  engine: ModelEngine,
  auth: AuthInfo | null,
  model: string,
  key: NaturalKey,
  items: unknown[],
  options: { mayUpdate: boolean },
): Promise<UpsertResult & { creates: unknown[] }> {
  if (items.length === 0) return { ok: true, records: [], updated: [], creates: [] };
  if (items.length > MAX_UPSERT_BATCH) {
    return {
      ok: false,
      reason: "invalid",
      body: { non_field_errors: [`At most ${MAX_UPSERT_BATCH} objects per request.`] },
      creates: [],
    };
  }
  const creates: Array<{ index: number; data: unknown }> = [];
  const updates: Array<{ index: number; id: number; data: unknown }> = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    const natural = item && typeof item === "object" && !Array.isArray(item)
      ? key(item as Record<string, unknown>)
      : null;
    const existing = natural
      ? await engine.store.idByUnique(model, natural.constraint, natural.values)
      : null;
    if (existing !== null) updates.push({ index: i, id: existing, data: item });
    else creates.push({ index: i, data: item });
  }
  const tried = creates.map((c) => c.data);
  if (updates.length > 0 && !options.mayUpdate) {
    return { ok: false, reason: "forbidden", body: null, creates: tried };
  }
  const records = new Array<StoredObject | null>(items.length).fill(null);
  const errors: FieldErrors[] = items.map(() => ({}));
  const fail = (
    r: Extract<WriteResult<unknown>, { ok: false }>,
    at: number[],
  ): UpsertResult & { creates: unknown[] } => {
    if (r.reason !== "invalid") {
      return { ok: false, reason: r.reason, body: { detail: r.detail }, creates: tried };
    }
    const list = Array.isArray(r.errors) ? r.errors : [r.errors ?? {}];
    at.forEach((index, k) => (errors[index] = list[k] ?? {}));
    return { ok: false, reason: "invalid", body: errors, creates: tried };
  };
  if (creates.length > 0) {
    const r = await engine.createMany(model, creates.map((c) => c.data), auth);
    if (!r.ok) return fail(r, creates.map((c) => c.index));
    creates.forEach((c, k) => (records[c.index] = r.value[k]));
  }
  if (updates.length > 0) {
    const r = await engine.updateMany(
      model,
      updates.map((u) => ({ id: u.id, data: u.data })),
      true,
      auth,
    );
    if (!r.ok) return fail(r, updates.map((u) => u.index));
    const byId = new Map(r.value.map((v) => [v.id, v]));
    for (const u of updates) records[u.index] = byId.get(u.id) ?? null;
  }
  const updated = items.map((_, i) => updates.some((u) => u.index === i));
  return { ok: true, records: records as StoredObject[], updated, creates: tried };
}
