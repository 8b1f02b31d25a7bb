/**
 * Credential encryption at rest (README: "Which key protects which secret").
 *
 * Which key protects which secret, and why the order cannot go round in a circle:
 * - the inventory endpoint token: SERVICE_ENCRYPTION_KEY, else plaintext. It never uses the
 *   plugin's key, because that key is fetched from the inventory *with this token*;
 * - hypervisor passwords and token values: SERVICE_ENCRYPTION_KEY, else the plugin setting
 *   `encryption_key` (fetched with the inventory token), else plaintext.
 * Each record remembers the source of its key (`key_source`), so after a restart the service
 * knows which key to ask for; a value it cannot open is reported, never guessed at.
 */
import type { Logger } from "../infra/logger.ts";
import type { KeySource } from "../storage/ports.ts";
import {
  deriveFernetKey,
  fernetDecrypt,
  fernetEncrypt,
  FernetError,
  type FernetKey,
  importFernetKey,
} from "./fernet.ts";

export const ENC_PREFIX = "enc:";

export class CredentialError extends Error {
  constructor(readonly endpoint: string, readonly cause_: string) {
    super(`Stored credentials of ${endpoint} cannot be decrypted: ${cause_}`);
    this.name = "CredentialError";
  }
}

export class KeyUnavailableError extends Error {
  constructor(readonly cause_: string) {
    super(
      `Could not read the plugin setting encryption_key from the inventory (${cause_}); ` +
        "nothing was stored. Retry when the inventory answers, or set SERVICE_ENCRYPTION_KEY.",
    );
    this.name = "KeyUnavailableError";
  }
}

export interface VaultOptions {
  envKey: string | undefined;
  /** Reads the plugin's `encryption_key`; null when no inventory or no key is set there. */
  /**
   * `fresh` skips any cache: sealing always uses the key the plugin holds right now, so a
   * rotation never leaves a secret sealed under a key the plugin already dropped.
   */
  pluginKey: (options?: { fresh?: boolean }) => Promise<string | null>;
  logger: Logger;
}

export type Secrets = Record<string, string | null>;

export class CredentialVault {
  readonly #keys = new Map<string, Promise<FernetKey>>();
  #warnedPlaintext = false;

  constructor(private readonly options: VaultOptions) {}

  /** The inventory token may only use the environment key (see the module comment). */
  sealInventory(secrets: Secrets): Promise<{ secrets: Secrets; source: KeySource }> {
    return this.#seal(secrets, this.options.envKey ? "env" : "none", this.options.envKey);
  }

  async sealHypervisor(secrets: Secrets): Promise<{ secrets: Secrets; source: KeySource }> {
    if (this.options.envKey) return this.#seal(secrets, "env", this.options.envKey);
    let pluginKey: string | null;
    try {
      pluginKey = (await this.options.pluginKey({ fresh: true }))?.trim() || null;
    } catch (error) {
      // Unreachable is not "no key": storing plaintext now would silently downgrade a secret
      // the plugin may well have a key for. Refuse, and say what to do.
      throw new KeyUnavailableError(error instanceof Error ? error.message : String(error));
    }
    if (pluginKey) return this.#seal(secrets, "plugin", pluginKey);
    return this.#seal(secrets, "none", undefined);
  }

  /**
   * Seals stored secrets again under the key a save would use now (a key set after they were
   * stored, or a rotated one). `changed` is false when they already are, or when no key is
   * available now: a sealed value is never downgraded to plaintext.
   */
  async reseal(
    kind: "inventory" | "hypervisor",
    stored: Secrets,
    source: KeySource,
    endpoint: string,
  ): Promise<{ changed: boolean; secrets: Secrets; source: KeySource }> {
    const unchanged = { changed: false, secrets: stored, source };
    if (!Object.values(stored).some((v) => v)) return unchanged;
    let target: KeySource = "none";
    let configured: string | null = null;
    if (this.options.envKey) [target, configured] = ["env", this.options.envKey];
    else if (kind === "hypervisor") {
      configured = await this.#currentPluginKey();
      if (configured) target = "plugin";
    }
    if (!configured) return unchanged;
    if (target === source && await this.#allSealedUnder(stored, configured)) return unchanged;
    const plain: Secrets = {};
    for (const [name, value] of Object.entries(stored)) {
      plain[name] = await this.open(value, source, endpoint);
    }
    return { changed: true, ...await this.#seal(plain, target, configured) };
  }

  async #currentPluginKey(): Promise<string | null> {
    try {
      return (await this.options.pluginKey({ fresh: true }))?.trim() || null;
    } catch (error) {
      throw new KeyUnavailableError(error instanceof Error ? error.message : String(error));
    }
  }

  async #allSealedUnder(stored: Secrets, configured: string): Promise<boolean> {
    const key = await this.#key(configured);
    for (const value of Object.values(stored)) {
      if (!value) continue;
      if (!value.startsWith(ENC_PREFIX)) return false;
      try {
        await fernetDecrypt(key, value.slice(ENC_PREFIX.length));
      } catch {
        return false;
      }
    }
    return true;
  }

  /** Opens one stored value; `endpoint` names the record in the error a user sees. */
  async open(value: string | null, source: KeySource, endpoint: string): Promise<string | null> {
    if (value === null || !value.startsWith(ENC_PREFIX)) return value;
    let configured: string | null | undefined;
    if (source === "env") configured = this.options.envKey;
    else if (source === "plugin") configured = await this.#pluginKeyOrNull();
    if (!configured) {
      const missing = source === "plugin"
        ? "the plugin setting encryption_key could not be read"
        : "SERVICE_ENCRYPTION_KEY is not set";
      throw new CredentialError(
        endpoint,
        `${missing}; it was stored encrypted (key source: ${source})`,
      );
    }
    try {
      return await fernetDecrypt(await this.#key(configured), value.slice(ENC_PREFIX.length));
    } catch (error) {
      // A cached plugin key may predate a rotation: ask once more before giving up.
      if (source === "plugin") {
        const current = await this.#pluginKeyOrNull(true);
        if (current && current !== configured) {
          try {
            return await fernetDecrypt(await this.#key(current), value.slice(ENC_PREFIX.length));
          } catch { /* reported below */ }
        }
      }
      const reason = error instanceof FernetError ? error.message : "decryption failed";
      throw new CredentialError(
        endpoint,
        `${reason}; was the encryption key changed? (key source: ${source})`,
      );
    }
  }

  async #seal(
    secrets: Secrets,
    source: KeySource,
    configured: string | undefined,
  ): Promise<{ secrets: Secrets; source: KeySource }> {
    if (!configured) {
      if (!this.#warnedPlaintext && Object.values(secrets).some((v) => v)) {
        this.#warnedPlaintext = true;
        this.options.logger.log(
          "critical",
          "No credential encryption key: storing endpoint credentials in PLAINTEXT. " +
            "Set SERVICE_ENCRYPTION_KEY or the plugin setting encryption_key.",
        );
      }
      return { secrets: { ...secrets }, source: "none" };
    }
    const key = await this.#key(configured);
    const sealed: Secrets = {};
    for (const [name, value] of Object.entries(secrets)) {
      sealed[name] = value ? ENC_PREFIX + await fernetEncrypt(key, value) : value;
    }
    return { secrets: sealed, source };
  }

  async #pluginKeyOrNull(fresh = false): Promise<string | null> {
    try {
      return (await this.options.pluginKey({ fresh }))?.trim() || null;
    } catch (error) {
      this.options.logger.log("warning", "Could not read the plugin encryption key", {
        error: error instanceof Error ? error.message : String(error),
      });
      return null;
    }
  }

  #key(configured: string): Promise<FernetKey> {
    let key = this.#keys.get(configured);
    if (!key) {
      key = deriveFernetKey(configured).then(importFernetKey);
      this.#keys.set(configured, key);
    }
    return key;
  }
}
