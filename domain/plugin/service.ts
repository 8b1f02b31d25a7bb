/**
 * What the plugin models' hooks and the plugin routes need beyond the engine: settings, the
 * outbound fetch, the clock, and the push-on-save glue. Built once per app from injected
 * dependencies (no module singletons).
 */
import type {
  BackendApi,
  BackendClientOptions,
  BackendConnector,
  HypervisorProbe,
} from "./ports.ts";
import type { SyncPolicyRecord } from "../../storage/ports.ts";
import type { Logger } from "../../infra/logger.ts";
import type {
  CustomFilter,
  EngineApi,
  FieldErrors,
  HookContext,
  StoredObject,
} from "../netbox/types.ts";
import { CORE, MODELS, SSH_SECRET_FIELDS } from "./names.ts";
import {
  failed,
  hypervisorCopyName,
  type LastPush,
  pushHypervisorCopy,
  pushInventoryCopy,
  type PushOutcome,
  registerBackendKey,
} from "./push.ts";
import { generateBackendToken, type Opened, openWithKeyring, sealSecret } from "./secrets.ts";
import { keyring, type PluginSettings, type PluginSettingsStore } from "./settings.ts";
import { parseTenantRef, visibleTo } from "./tenants.ts";
import { backendUnconfirmed, baseUrl, moveSinceSaved } from "./destination.ts";
import { openAtRest, sealAtRest } from "./at_rest.ts";

/** Reads a v1 inventory token's plaintext (the core token model keeps it retrievable). */
export type TokenPlaintextReader = (engine: EngineApi, tokenId: number) => Promise<string | null>;

export interface PluginServiceDeps {
  settings: PluginSettingsStore;
  /** The backend service (clients/backend.ts over the guarded transport). */
  backend: BackendConnector;
  /** Keepalive probes of hypervisors (clients/hypervisor_probe.ts). */
  probe: HypervisorProbe;
  now: () => number;
  logger: Logger;
  tokenPlaintext: TokenPlaintextReader;
  /** Shorter timeouts for tests; defaults are 10 s / 15 s (docs/api-behaviour.md, Push on save). */
  backendTimeouts?: BackendClientOptions;
  /** SERVICE_ENCRYPTION_KEY: seals the backend endpoint's key at rest (domain/plugin/at_rest.ts). */
  atRestKey?: string;
}

/**
 * Where the stage streams go when the backend endpoint says `use_websocket` (docs/sync.md
 * "WebSocket streams"): its `websocket_domain` (else the endpoint's host) and `websocket_port`,
 * wss when it uses https. `server_side_websocket` changes nothing here: the plugin's server
 * always opens the socket (a browser never holds the backend key).
 */
export function socketUrl(backend: StoredObject, host: string): string | null {
  if (backend.use_websocket !== true) return null;
  const domain = present(backend.websocket_domain) ? backend.websocket_domain.trim() : host;
  const http = baseUrl(backend.use_https !== false, domain, Number(backend.websocket_port ?? 8800));
  return http.replace(/^http/, "ws");
}

export const NO_BACKEND =
  "No backend endpoint configured; add one at /api/plugins/service/endpoints/backend/.";

const present = (value: unknown): value is string => typeof value === "string" && value !== "";

/** Which fields a write touched (beyond the id): used to tell a flag toggle from an edit. */
function touched(ctx: HookContext): string[] {
  return Object.keys(ctx.input).filter((k) => k !== "id");
}

export class PluginServices {
  constructor(readonly deps: PluginServiceDeps) {}

  async encryptionKey(): Promise<string | null> {
    return (await this.deps.settings.get()).encryption_key;
  }

  /**
   * The key new secrets are sealed with: the plugin's `encryption_key`, else
   * SERVICE_ENCRYPTION_KEY (so with the env key set no secret is ever stored in plaintext,
   * SECURITY.md "What is sealed with which key"), else none.
   */
  async sealingKey(): Promise<string | null> {
    return (await this.encryptionKey()) || this.deps.atRestKey || null;
  }

  /** Every key a stored secret may be sealed with: current, replaced ones, then the env key. */
  keyringOf(settings: PluginSettings): string[] {
    const ring = keyring(settings);
    return this.deps.atRestKey ? [...ring, this.deps.atRestKey] : ring;
  }

  /** Opens a stored secret with the current key, then any key a rotation replaced. */
  async open(stored: string): Promise<Opened> {
    return openWithKeyring(stored, this.keyringOf(await this.deps.settings.get()));
  }

  // ---------------------------------------------------------------- hooks used by models.ts

  /** The host of an IP address record: its address without the prefix length. */
  async ipHost(engine: EngineApi, ipId: unknown): Promise<string | null> {
    if (typeof ipId !== "number") return null;
    const ip = await engine.get(CORE.ipAddress, ipId);
    const address = ip?.address;
    return typeof address === "string" ? address.replace(/\/\d+$/, "") : null;
  }

  /** Seals every secret sent in this write (absent ones keep their stored value). */
  async sealInput(draft: StoredObject, ctx: HookContext, fields: readonly string[]): Promise<void> {
    const sent = fields.filter((f) => f in ctx.input);
    if (sent.length === 0) return;
    const key = await this.sealingKey();
    for (const field of sent) {
      const value = draft[field];
      if (typeof value !== "string" || value === "") {
        draft[field] = null;
        continue;
      }
      if (!key) {
        this.deps.logger.log(
          "critical",
          "neither the plugin encryption_key nor SERVICE_ENCRYPTION_KEY is set: storing an " +
            "endpoint secret in plaintext",
          { field },
        );
      }
      draft[field] = await sealSecret(value, key);
    }
  }

  /** Dedicated SSH secrets are only stored encrypted: without the key they are refused. */
  async sshSecretsNeedKey(draft: StoredObject, ctx: HookContext): Promise<FieldErrors> {
    const errors: FieldErrors = {};
    const sent = SSH_SECRET_FIELDS.filter((f) => f in ctx.input && present(draft[f]));
    if (sent.length === 0 || await this.sealingKey()) return errors;
    for (const field of sent) {
      errors[field] = [
        "Set the plugin encryption_key (PATCH /api/plugins/service/settings/) before storing SSH secrets.",
      ];
    }
    return errors;
  }

  /** A v1 token reference must point at a v1 token whose plaintext can be read back. */
  async checkV1TokenReadable(draft: StoredObject, ctx: HookContext): Promise<FieldErrors> {
    if (draft.token_version === "v2" || typeof draft.token !== "number") return {};
    if (!("token" in ctx.input) && ctx.existing?.token === draft.token) return {};
    // The referenced token's plaintext goes to the backend, which then writes the inventory
    // with it: a non-superuser may not hand over more than it holds itself (as with grants).
    const actor = ctx.auth;
    if (actor && !actor.isSuperuser) {
      const ref = await ctx.engine.get("users.token", draft.token);
      const perms = Array.isArray(ref?.permissions) ? ref.permissions as string[] : [];
      if (
        ref && (ref.is_superuser === true || perms.some((p) => !actor.permissions.has(p)) ||
          (ref.write_enabled !== false && !actor.writeEnabled))
      ) {
        return { token: ["Cannot reference a token with permissions this token does not hold."] };
      }
    }
    if (await this.deps.tokenPlaintext(ctx.engine, draft.token)) return {};
    return {
      token: [
        "Reference a v1 token whose plaintext is retrievable (v2 tokens use token_key and token_secret).",
      ],
    };
  }

  /**
   * `?ip_address=` on every endpoint kind: an IP address id, or the address itself with or
   * without its prefix length (`10.0.0.5` or `10.0.0.5/24`).
   */
  readonly endpointFilters: Record<string, CustomFilter> = {
    ip_address: (values) => {
      const ids = new Set<number>();
      const hosts = new Set<string>();
      for (const value of values.flatMap((v) => v.split(",")).map((v) => v.trim())) {
        if (/^\d+$/.test(value)) ids.add(Number(value));
        else if (value) hosts.add(value.replace(/\/\d+$/, "").toLowerCase());
      }
      return Promise.resolve({
        predicate: (r: StoredObject) =>
          (typeof r.ip_address === "number" && ids.has(r.ip_address)) ||
          (typeof r._host === "string" && hosts.has(r._host.toLowerCase())),
      });
    },
  };

  readonly hypervisorFilters: Record<string, CustomFilter> = {
    /** `?cloud_tenant=<slug or id>` (also set from X-Cloud-Tenant): the allow-list rule. */
    cloud_tenant: async (values, engine) => {
      // Whether a tenant holds grants comes from the m2m index; when every named tenant has
      // some, the answer is those ids, else one predicate applies the rule per record.
      const rules: Array<(e: { allowed_tenants: readonly number[] }) => boolean> = [];
      const explicit = new Set<number>();
      let globalPool = false;
      for (const value of values) {
        const tenant = await this.resolveTenant(engine, value);
        if (tenant === null) continue;
        const granted = await engine.find(MODELS.hypervisor, {
          allowed_tenants_id: [String(tenant)],
        });
        for (const e of granted) explicit.add(e.id);
        if (granted.length === 0) globalPool = true;
        rules.push(visibleTo(tenant, granted.length > 0));
      }
      if (!globalPool) return { ids: explicit };
      return {
        predicate: (r: StoredObject) => {
          const scoped = { allowed_tenants: tenantIds(r) };
          return rules.some((rule) => rule(scoped));
        },
      };
    },
    allowed_tenants__isnull: (values) => {
      const wantNull = ["true", "1", "yes"].includes(String(values[0]).toLowerCase());
      return Promise.resolve({
        predicate: (r: StoredObject) => (tenantIds(r).length === 0) === wantNull,
      });
    },
    allowed_tenants__id__in: (values) => {
      const wanted = new Set(
        values.flatMap((v) => v.split(",")).map((v) => Number(v.trim())).filter(Number.isInteger),
      );
      return Promise.resolve({
        predicate: (r: StoredObject) => tenantIds(r).some((t) => wanted.has(t)),
      });
    },
  };

  readonly replicationFilters: Record<string, CustomFilter> = {};

  /** A tenant id from a slug or an id; null when unknown. */
  async resolveTenant(engine: EngineApi, ref: string): Promise<number | null> {
    const parsed = parseTenantRef(ref);
    if (parsed === null) return null;
    if ("id" in parsed) return (await engine.get(CORE.tenant, parsed.id)) ? parsed.id : null;
    const tenant = await engine.findOne(CORE.tenant, { slug: [parsed.slug] });
    return tenant?.id ?? null;
  }

  // ---------------------------------------------------------------- push on save

  #stamp(outcome: PushOutcome): LastPush {
    return { ...outcome, at: new Date(this.deps.now()).toISOString() };
  }

  async #record(engine: EngineApi, model: string, id: number, outcome: PushOutcome) {
    const lastPush = this.#stamp(outcome);
    await engine.patchStored(model, id, { last_push: lastPush });
    if (!outcome.ok) {
      this.deps.logger.log("warning", "push to the backend failed", {
        model,
        id,
        error: outcome.error,
        status: outcome.status,
      });
    }
    return lastPush;
  }

  /** The single backend endpoint (docs/api-behaviour.md, Push on save). */
  async backendEndpoint(engine: EngineApi): Promise<StoredObject | null> {
    const all = await engine.find(MODELS.backend);
    return all[0] ?? null;
  }

  /**
   * Where an endpoint is reached: its domain, else its IP address record's current address
   * (read fresh, so an edited IP address is followed; `_host` is only the display copy).
   */
  async hostOf(engine: EngineApi, record: StoredObject): Promise<string | null> {
    if (present(record.domain)) return record.domain;
    const fresh = await this.ipHost(engine, record.ip_address);
    if (fresh) return fresh;
    return present(record._host) ? record._host : null;
  }

  /** The backend endpoint's key in plaintext (stored sealed with the at-rest key). */
  async backendKey(backend: StoredObject): Promise<string | null> {
    return present(backend.token) ? await openAtRest(backend.token, this.deps.atRestKey) : null;
  }

  /** A backend key as it is stored. */
  sealBackendKey(token: string): Promise<string> {
    return sealAtRest(token, this.deps.atRestKey);
  }

  async backendClient(engine: EngineApi, backend: StoredObject): Promise<BackendApi | null> {
    const host = await this.hostOf(engine, backend);
    if (!host) return null;
    // The key goes only to the address it was made for (an edited IP address record moves
    // the endpoint without a save).
    const keyMayGo = moveSinceSaved(backend, host) === null;
    return this.deps.backend(
      {
        baseUrl: baseUrl(backend.use_https !== false, host, Number(backend.port ?? 8800)),
        token: keyMayGo ? await this.backendKey(backend) : null,
        verifySsl: backend.verify_ssl !== false,
        websocketUrl: socketUrl(backend, host),
      },
      this.deps.backendTimeouts,
    );
  }

  async afterBackendSave(record: StoredObject, ctx: HookContext): Promise<void> {
    await this.pushBackend(ctx.engine, record);
  }

  /**
   * Why nothing may be pushed to this backend now, or null: its key was saved for another
   * address, or (`carriesSecrets`) its address was not confirmed by a superuser.
   */
  async backendBlocked(
    engine: EngineApi,
    backend: StoredObject,
    carriesSecrets: boolean,
  ): Promise<string | null> {
    const host = await this.hostOf(engine, backend);
    const moved = moveSinceSaved(backend, host);
    if (moved) return `backend endpoint: ${moved}`;
    return carriesSecrets ? backendUnconfirmed(backend, host) : null;
  }

  /** Registers the backend endpoint's token when the backend has no key yet. */
  async pushBackend(engine: EngineApi, record: StoredObject): Promise<LastPush> {
    const blocked = await this.backendBlocked(engine, record, false);
    if (blocked) return this.#record(engine, MODELS.backend, record.id, failed(blocked));
    const client = await this.backendClient(engine, record);
    if (!client || !present(record.token)) {
      return this.#record(
        engine,
        MODELS.backend,
        record.id,
        failed("backend endpoint has no host"),
      );
    }
    return this.#record(
      engine,
      MODELS.backend,
      record.id,
      await registerBackendKey(client, (await this.backendKey(record))!, { verify: true }),
    );
  }

  /**
   * Sets the backend key this endpoint uses (a key created on the backend with
   * POST /auth/keys, for a backend whose registry was claimed by someone else), then pushes.
   */
  async setBackendToken(engine: EngineApi, id: number, token: string): Promise<LastPush | null> {
    const record = await engine.patchStored(MODELS.backend, id, {
      token: await this.sealBackendKey(token),
    });
    return record ? await this.pushBackend(engine, record) : null;
  }

  /** The backend client with a token that is generated and registered when needed. */
  async #readyBackend(
    engine: EngineApi,
  ): Promise<{ client: BackendApi } | { outcome: PushOutcome }> {
    let backend = await this.backendEndpoint(engine);
    if (!backend) return { outcome: failed(NO_BACKEND) };
    // Every caller pushes secrets (inventory token, hypervisor passwords).
    const blocked = await this.backendBlocked(engine, backend, true);
    if (blocked) return { outcome: failed(blocked) };
    if (!present(backend.token)) {
      backend = await engine.patchStored(MODELS.backend, backend.id, {
        token: await this.sealBackendKey(generateBackendToken()),
      }) ?? backend;
    }
    const client = await this.backendClient(engine, backend);
    if (!client) return { outcome: failed("backend endpoint has no host") };
    const registered = await registerBackendKey(client, (await this.backendKey(backend))!);
    if (!registered.ok) return { outcome: registered };
    return { client };
  }

  async afterInventorySave(record: StoredObject, ctx: HookContext): Promise<void> {
    await this.pushInventory(ctx.engine, record);
  }

  async pushInventory(engine: EngineApi, record: StoredObject): Promise<LastPush> {
    const save = (o: PushOutcome) => this.#record(engine, MODELS.inventory, record.id, o);
    const backend = await this.backendEndpoint(engine);
    if (!backend) return save(failed(NO_BACKEND));
    const blocked = await this.backendBlocked(engine, backend, true);
    if (blocked) return save(failed(blocked));
    const client = await this.backendClient(engine, backend);
    if (!client) return save(failed("backend endpoint has no host"));
    const host = await this.hostOf(engine, record);
    if (!host) return save(failed("inventory endpoint has no host"));
    const moved = moveSinceSaved(record, host);
    if (moved) return save(failed(`inventory endpoint: ${moved}`));
    let token: string | null;
    if (record.token_version === "v2") {
      const opened = present(record.token_secret) ? await this.open(record.token_secret) : null;
      if (opened && !opened.ok) {
        return save(failed(`credential_undecryptable: token_secret: ${opened.detail}`));
      }
      token = opened?.value ?? null;
    } else {
      token = typeof record.token === "number"
        ? await this.deps.tokenPlaintext(engine, record.token)
        : null;
    }
    if (!token) {
      return save(failed(
        record.token_version === "v2"
          ? "token_secret is not set"
          : "the referenced v1 token has no readable plaintext",
      ));
    }
    return save(
      await pushInventoryCopy(client, {
        name: String(record.name),
        ip: host,
        port: Number(record.port),
        use_https: record.use_https !== false,
        verify_ssl: record.verify_ssl !== false,
        token_version: record.token_version === "v2" ? "v2" : "v1",
        token,
        token_key: record.token_version === "v2" && present(record.token_key)
          ? record.token_key
          : null,
      }),
    );
  }

  /** Removes the backend copy of a deleted endpoint (best-effort; logged when it fails). */
  async afterHypervisorDelete(record: StoredObject, engine: EngineApi): Promise<void> {
    const backend = await this.backendEndpoint(engine);
    const client = backend ? await this.backendClient(engine, backend) : null;
    if (!client) return;
    const name = hypervisorCopyName(String(record.name), record.id);
    const list = await client.listHypervisorEndpoints();
    // By name, else by the " (inv:<pk>)" suffix (a copy left under an older name).
    const suffix = ` (inv:${record.id})`;
    const match = list.ok
      ? list.body!.find((entry) => entry.name === name) ??
        list.body!.find((entry) => typeof entry.name === "string" && entry.name.endsWith(suffix))
      : undefined;
    const outcome = match ? await client.deleteHypervisorEndpoint(match.id) : list;
    if (!outcome.ok) {
      this.deps.logger.log("warning", "could not remove the backend copy of a deleted endpoint", {
        id: record.id,
        error: outcome.error,
        status: outcome.status,
      });
    }
  }

  async afterHypervisorSave(record: StoredObject, ctx: HookContext): Promise<void> {
    // Toggling `enabled` (the bulk Enable/Disable actions) only changes the flag
    // (docs/api-behaviour.md, Plugin: endpoints and validation rules).
    const fields = touched(ctx);
    if (ctx.op === "update" && fields.length > 0 && fields.every((f) => f === "enabled")) return;
    await this.pushHypervisor(ctx.engine, record);
  }

  /** Pushes one hypervisor endpoint; a disabled endpoint is never pushed (null). */
  async pushHypervisor(engine: EngineApi, record: StoredObject): Promise<LastPush | null> {
    if (record.enabled === false) return null;
    const save = (o: PushOutcome) => this.#record(engine, MODELS.hypervisor, record.id, o);
    const host = await this.hostOf(engine, record);
    if (!host) return save(failed("hypervisor endpoint has no host"));
    const moved = moveSinceSaved(record, host);
    if (moved) return save(failed(`hypervisor endpoint: ${moved}`));
    const ready = await this.#readyBackend(engine);
    if ("outcome" in ready) return save(ready.outcome);
    const secrets: Record<string, string | null> = {};
    for (const field of ["password", "token_value"]) {
      const stored = record[field];
      if (!present(stored)) {
        secrets[field] = null;
        continue;
      }
      const opened = await this.open(stored);
      if (!opened.ok) return save(failed(`credential_undecryptable: ${field}: ${opened.detail}`));
      secrets[field] = opened.value;
    }
    return save(
      await pushHypervisorCopy(ready.client, {
        name: hypervisorCopyName(String(record.name), record.id),
        ip: host,
        port: Number(record.port),
        use_https: record.use_https !== false,
        verify_ssl: record.verify_ssl === true,
        username: present(record.username) ? record.username : null,
        password: secrets.password,
        token_name: present(record.token_name) ? record.token_name : null,
        token_value: secrets.token_value,
        allow_writes: record.allow_writes === true,
        enabled: true,
        sync_policy: record.sync_policy && typeof record.sync_policy === "object"
          ? record.sync_policy as SyncPolicyRecord
          : null,
      }),
    );
  }
}

export function tenantIds(record: StoredObject): number[] {
  return Array.isArray(record.allowed_tenants) ? record.allowed_tenants as number[] : [];
}
