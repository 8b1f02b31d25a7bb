/**
 * Inventory API tokens, NetBox style (docs/api-behaviour.md, Inventory: authentication).
 *
 * - v1: `Authorization: Token <plaintext>`. Looked up by SHA-256 digest; the plaintext is also
 *   kept Fernet-encrypted so a plugin inventory endpoint can reference it (`token: {id}`).
 * - v2: `Authorization: Bearer nbt_<key>.<secret>`. Looked up by key; only SHA-256(secret)
 *   is stored.
 *
 * Encryption key of v1 plaintexts: SERVICE_ENCRYPTION_KEY (config.encryptionKey, derived as
 * docs/api-behaviour.md, Secrets) when set, else a random Fernet key generated once and kept in KV
 * (["inventory","meta","local_secret_key"]). Each token records which one sealed it
 * (`enc_source`), so setting the variable later does not strand older tokens.
 *
 * Permissions use NetBox's `app.action_model` names ("dcim.view_site", "core.add_job").
 */
import { deriveFernetKey, fernetDecrypt, fernetEncrypt, importFernetKey } from "../fernet.ts";
import type { ModelStore } from "../../storage/ports.ts";
import type {
  AuthInfo,
  EngineApi,
  FieldErrors,
  HookContext,
  ModelDef,
  StoredObject,
} from "./types.ts";

export type { AuthInfo };

export const TOKEN_MODEL = "users.token";
const V2_PREFIX = "nbt_";
const PERMISSION_RE = /^[a-z][a-z0-9_]*\.(view|add|change|delete)_[a-z][a-z0-9_]*$/;

export const AUTH_MESSAGES = {
  missing: "Authentication credentials were not provided.",
  invalid: "Invalid token",
  expired: "Token expired",
  denied: "You do not have permission to perform this action.",
};

const encoder = new TextEncoder();

export async function sha256Hex(text: string): Promise<string> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text))).toHex();
}

function randomHex(bytes: number): string {
  return crypto.getRandomValues(new Uint8Array(bytes)).toHex();
}

/** NetBox 4.5's TOKEN_CHARSET ([A-Za-z0-9]), key length (12) and default secret length (40). */
const TOKEN_CHARSET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
export const V2_KEY_LENGTH = 12;
const V2_SECRET_LENGTH = 40;
/** Pepper ids (NetBox's API_TOKEN_PEPPERS keys): the local secret, SERVICE_ENCRYPTION_KEY. */
export const LOCAL_PEPPER_ID = 1;
export const CONFIG_PEPPER_ID = 2;

/** `length` characters of TOKEN_CHARSET, uniformly (rejection sampling, no modulo bias). */
export function randomToken(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const b of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (b < 248 && out.length < length) out += TOKEN_CHARSET[b % 62];
    }
  }
  return out;
}

/** hex HMAC-SHA256(pepper, secret): the only form of a v2 secret kept (NetBox 4.5). */
async function hmacHex(pepper: CryptoKey, secret: string): Promise<string> {
  return new Uint8Array(await crypto.subtle.sign("HMAC", pepper, encoder.encode(secret))).toHex();
}

function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** True when the token may do `permission` ("service.view_backendendpoint"). */
export function can(auth: AuthInfo | null | undefined, permission: string): boolean {
  if (!auth) return false;
  const action = permission.split(".")[1]?.split("_")[0];
  if (action !== "view" && !auth.writeEnabled) return false;
  return auth.isSuperuser || auth.permissions.has(permission);
}

/** The permission a REST method needs on a model ("dcim.site" + POST → "dcim.add_site"). */
export function permissionFor(model: string, method: string): string {
  const [app, name] = model.split(".");
  const action = method === "GET" || method === "HEAD" || method === "OPTIONS"
    ? "view"
    : method === "POST"
    ? "add"
    : method === "DELETE"
    ? "delete"
    : "change";
  return `${app}.${action}_${name}`;
}

export function authInfo(record: StoredObject): AuthInfo {
  return {
    tokenId: record.id,
    isSuperuser: record.is_superuser === true,
    writeEnabled: record.write_enabled !== false,
    permissions: new Set((record.permissions as string[] | undefined) ?? []),
  };
}

export type AuthResult = { ok: true; auth: AuthInfo; record: StoredObject } | {
  ok: false;
  detail: string;
};

export interface TokenServiceDeps {
  store: ModelStore;
  encryptionKey: string | undefined;
  now: () => number;
  /**
   * Permissions beyond the four model actions that a token may hold (as a NetBox model
   * declares extra ones in its Meta): the plugin's `service.open_ssh_terminal`.
   */
  customPermissions?: readonly string[];
}

const LAST_SUPERUSER =
  "This is the last enabled superuser token; create another superuser token first.";

function isLiveSuperuser(token: StoredObject, now: number): boolean {
  if (token.is_superuser !== true || token.enabled === false) return false;
  return typeof token.expires !== "string" || Date.parse(token.expires) > now;
}

/** Enabled, unexpired superuser tokens other than `except`. */
async function liveSuperusers(engine: EngineApi, now: number, except: Set<number>) {
  const all = await engine.find("users.token", { is_superuser: ["true"] });
  return all.filter((t) => !except.has(t.id) && isLiveSuperuser(t, now)).length;
}

/** Is `token` (superuser flag, permissions, write access) within what `actor` holds? */
function withinPowerOf(token: StoredObject, actor: AuthInfo): boolean {
  if (actor.isSuperuser) return true;
  if (token.is_superuser === true) return false;
  if (token.write_enabled !== false && !actor.writeEnabled) return false;
  const perms = Array.isArray(token.permissions) ? token.permissions as string[] : [];
  return perms.every((p) => actor.permissions.has(p));
}

export class TokenService {
  #keys = new Map<string, Promise<Awaited<ReturnType<typeof importFernetKey>>>>();
  #peppers = new Map<number, Promise<CryptoKey>>();

  /**
   * The v2 peppers (NetBox 4.5's API_TOKEN_PEPPERS), never stored themselves: id 1 is derived
   * from the inventory's local secret (kept in KV, created once), id 2 from
   * SERVICE_ENCRYPTION_KEY. New tokens use 2 when the variable is set: a copy of the store alone
   * then cannot check a secret. Changing the variable retires the tokens signed under it, as
   * removing a pepper does in NetBox.
   */
  #pepperKey(id: number): Promise<CryptoKey> {
    let pending = this.#peppers.get(id);
    if (!pending) {
      pending = (async () => {
        if (id === CONFIG_PEPPER_ID && !this.deps.encryptionKey) {
          throw new Error("SERVICE_ENCRYPTION_KEY is not set");
        }
        const material = id === CONFIG_PEPPER_ID
          ? `config:${this.deps.encryptionKey}`
          : `local:${await this.deps.store.localSecret(() =>
            crypto.getRandomValues(new Uint8Array(32)).toBase64({ alphabet: "base64url" })
          )}`;
        const raw = await crypto.subtle.digest(
          "SHA-256",
          encoder.encode(`token-pepper:${material}`),
        );
        return crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, [
          "sign",
        ]);
      })();
      pending.catch(() => this.#peppers.delete(id));
      this.#peppers.set(id, pending);
    }
    return pending;
  }

  /** The pepper new v2 tokens are signed with. */
  #currentPepper(): number {
    return this.deps.encryptionKey ? CONFIG_PEPPER_ID : LOCAL_PEPPER_ID;
  }

  /** The stored digest of a v2 secret under the record's pepper (none: the SHA-256 of older ones). */
  async #v2Digest(record: StoredObject, secret: string): Promise<string | null> {
    if (typeof record.pepper_id !== "number") return await sha256Hex(secret);
    try {
      return await hmacHex(await this.#pepperKey(record.pepper_id), secret);
    } catch {
      return null; // its pepper is gone (SERVICE_ENCRYPTION_KEY unset or changed)
    }
  }

  constructor(private readonly deps: TokenServiceDeps) {}

  #key(source: "config" | "local") {
    let pending = this.#keys.get(source);
    if (!pending) {
      pending = (async () => {
        if (source === "config") {
          if (!this.deps.encryptionKey) throw new Error("SERVICE_ENCRYPTION_KEY is not set");
          return importFernetKey(await deriveFernetKey(this.deps.encryptionKey));
        }
        const raw = await this.deps.store.localSecret(() =>
          crypto.getRandomValues(new Uint8Array(32)).toBase64({ alphabet: "base64url" })
        );
        return importFernetKey(raw);
      })();
      pending.catch(() => this.#keys.delete(source));
      this.#keys.set(source, pending);
    }
    return pending;
  }

  async seal(plaintext: string): Promise<{ encrypted: string; enc_source: "config" | "local" }> {
    const source = this.deps.encryptionKey ? "config" : "local";
    const key = await this.#key(source);
    return {
      encrypted: await fernetEncrypt(key, plaintext, { now: this.deps.now() }),
      enc_source: source,
    };
  }

  /** The plaintext of a v1 token (null for v2, unknown ids or an unavailable key). */
  async plaintext(id: number): Promise<string | null> {
    const found = await this.deps.store.get(TOKEN_MODEL, id);
    const record = found?.record;
    if (!record || record.version !== 1 || typeof record.encrypted !== "string") return null;
    try {
      const key = await this.#key(record.enc_source === "config" ? "config" : "local");
      return await fernetDecrypt(key, record.encrypted);
    } catch {
      return null;
    }
  }

  /** Resolves an Authorization header; null when no credentials were given. */
  async authenticate(header: string | null | undefined): Promise<AuthResult | null> {
    if (!header) return null;
    const match = /^\s*(Token|Bearer)\s+(\S+)\s*$/i.exec(header);
    if (!match) return null;
    const value = match[2];
    let record: StoredObject | null = null;
    // NetBox 4.5: the version is told by the `nbt_` prefix, not the keyword (`Token nbt_…` is
    // v2, `Bearer <plain>` is v1).
    if (value.startsWith(V2_PREFIX)) {
      const [key, secret] = value.slice(V2_PREFIX.length).split(".", 2);
      if (!key || !secret || key.length > 64) return { ok: false, detail: AUTH_MESSAGES.invalid };
      const id = await this.deps.store.idByUnique(TOKEN_MODEL, "key", [key]);
      const found = id === null ? null : await this.deps.store.get(TOKEN_MODEL, id);
      if (!found || found.record.version !== 2) return { ok: false, detail: AUTH_MESSAGES.invalid };
      const digest = await this.#v2Digest(found.record, secret);
      if (digest === null || !constantTimeEqual(digest, String(found.record.digest))) {
        return { ok: false, detail: AUTH_MESSAGES.invalid };
      }
      record = found.record;
    } else {
      if (value.length > 512) return { ok: false, detail: AUTH_MESSAGES.invalid };
      const id = await this.deps.store.idByUnique(TOKEN_MODEL, "digest", [await sha256Hex(value)]);
      const found = id === null ? null : await this.deps.store.get(TOKEN_MODEL, id);
      if (!found || found.record.version !== 1) return { ok: false, detail: AUTH_MESSAGES.invalid };
      record = found.record;
    }
    if (record.enabled === false) return { ok: false, detail: AUTH_MESSAGES.invalid };
    if (typeof record.expires === "string" && Date.parse(record.expires) <= this.deps.now()) {
      return { ok: false, detail: AUTH_MESSAGES.expired };
    }
    return { ok: true, auth: authInfo(record), record };
  }

  /** Hooks for the users.token model: secrets are generated/sealed here, shown once. */
  hooks(): Pick<ModelDef, "validate" | "beforeSave" | "canDelete" | "beforeDelete"> {
    return {
      // Without users or passwords, the last working superuser token is the only way in.
      beforeDelete: async (records, { engine, now }) => {
        const leaving = new Set(records.filter((r) => isLiveSuperuser(r, now())).map((r) => r.id));
        if (leaving.size === 0) return null;
        return (await liveSuperusers(engine, now(), leaving)) > 0 ? null : LAST_SUPERUSER;
      },
      // A non-superuser may delete only tokens with no more power than its own.
      canDelete: (record, auth) => auth.isSuperuser || withinPowerOf(record, auth),
      validate: async (draft: StoredObject, ctx: HookContext): Promise<FieldErrors | null> => {
        const errors: FieldErrors = {};
        if (
          ctx.auth && ctx.existing && isLiveSuperuser(ctx.existing, ctx.now()) &&
          !isLiveSuperuser(draft, ctx.now()) &&
          (await liveSuperusers(ctx.engine, ctx.now(), new Set([draft.id]))) === 0
        ) {
          return { non_field_errors: [LAST_SUPERUSER] };
        }
        const perms = (draft.permissions as string[]) ?? [];
        const custom = this.deps.customPermissions ?? [];
        const bad = perms.filter((p) => !PERMISSION_RE.test(p) && !custom.includes(p));
        if (bad.length > 0) {
          const also = custom.length ? ` (or one of: ${custom.join(", ")})` : "";
          errors.permissions = bad.map((p) =>
            `Invalid permission "${p}": use the app.action_model form, e.g. "dcim.view_site"${also}.`
          );
        }
        if (
          ctx.op === "update" && ctx.input.version !== undefined &&
          ctx.input.version !== ctx.existing?.version
        ) {
          errors.version = ["The version of an existing token cannot be changed."];
        }
        // NetBox 4.6.3: a client may choose a v2 secret; it is a credential, so at least 40
        // characters of the token charset.
        if (
          draft.version === 2 && ctx.op === "create" && typeof ctx.input.token === "string" &&
          ctx.input.token !== "" && !/^[A-Za-z0-9]{40,}$/.test(ctx.input.token)
        ) {
          errors.token = [
            "Ensure this field has at least 40 characters of letters and digits.",
          ];
        }
        // A caller-chosen v1 plaintext is a credential: NetBox's 40-character minimum applies
        // (the INVENTORY_BOOTSTRAP_TOKEN value, written internally, is the operator's choice).
        if (
          draft.version !== 2 && ctx.op === "create" && ctx.auth !== null &&
          typeof ctx.input.token === "string" && ctx.input.token !== "" &&
          ctx.input.token.length < 40
        ) {
          errors.token = ["Ensure this field has at least 40 characters."];
        }
        // The prefix marks a v2 token on the wire, so a v1 plaintext carrying it could never be
        // presented.
        if (
          draft.version !== 2 && ctx.op === "create" && typeof ctx.input.token === "string" &&
          ctx.input.token.startsWith(V2_PREFIX)
        ) {
          errors.token = [`A v1 token cannot begin with "${V2_PREFIX}" (that marks a v2 token).`];
        }
        const actor = ctx.auth;
        if (actor && !actor.isSuperuser) {
          // Editing a more powerful token (stripping or disabling it) is not allowed either.
          if (ctx.existing && !withinPowerOf(ctx.existing, actor)) {
            return {
              non_field_errors: ["Cannot change a token with more permissions than this one."],
            };
          }
          if (draft.is_superuser === true) {
            errors.is_superuser = ["Only a superuser token can grant superuser."];
          }
          const beyond = perms.filter((p) => !actor.permissions.has(p));
          if (beyond.length > 0) {
            errors.permissions = [
              `Cannot grant permissions this token does not hold: ${beyond.join(", ")}`,
            ];
          }
        }
        return Object.keys(errors).length > 0 ? errors : null;
      },
      beforeSave: async (draft: StoredObject, ctx: HookContext) => {
        const supplied = typeof draft.token === "string" && draft.token !== "" ? draft.token : null;
        delete draft.token;
        if (ctx.op !== "create") return;
        if (draft.version === 2) {
          const key = randomToken(V2_KEY_LENGTH);
          const secret = supplied ?? randomToken(V2_SECRET_LENGTH);
          draft.key = key;
          const pepper = this.#currentPepper();
          draft.pepper_id = pepper;
          draft.digest = await hmacHex(await this.#pepperKey(pepper), secret);
          draft.encrypted = null;
          draft.enc_source = null;
          ctx.responseExtras.key = key;
          ctx.responseExtras.token = secret;
          ctx.responseExtras.header = `Bearer ${V2_PREFIX}${key}.${secret}`;
        } else {
          const plaintext = supplied ?? randomHex(20);
          draft.key = null;
          draft.digest = await sha256Hex(plaintext);
          Object.assign(draft, await this.seal(plaintext));
          ctx.responseExtras.token = plaintext;
          ctx.responseExtras.header = `Token ${plaintext}`;
        }
      },
    };
  }
}
