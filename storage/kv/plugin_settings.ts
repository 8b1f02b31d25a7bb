import type { PluginSettings, PluginSettingsStore } from "../ports.ts";
import { DEFAULT_SETTINGS } from "../../domain/plugin/settings.ts";
import { openAtRest, sealAtRest } from "../../domain/plugin/at_rest.ts";
import { keys } from "./keys.ts";
import { retryAtomic } from "./ids.ts";

/**
 * The plugin settings singleton: one KV entry, changed under a versionstamp check. With an
 * at-rest key (SERVICE_ENCRYPTION_KEY) the encryption key and the previous keys are stored
 * sealed with it.
 */
export class KvPluginSettingsStore implements PluginSettingsStore {
  constructor(private readonly kv: Deno.Kv, private readonly atRestKey?: string) {}

  async #open(stored: PluginSettings | null): Promise<PluginSettings> {
    const s = { ...DEFAULT_SETTINGS, ...stored };
    return {
      ...s,
      encryption_key: s.encryption_key === null
        ? null
        : await openAtRest(s.encryption_key, this.atRestKey),
      previous_keys: await Promise.all(
        s.previous_keys.map((k) => openAtRest(k, this.atRestKey)),
      ),
    };
  }

  async #seal(s: PluginSettings): Promise<PluginSettings> {
    return {
      ...s,
      encryption_key: s.encryption_key === null
        ? null
        : await sealAtRest(s.encryption_key, this.atRestKey),
      previous_keys: await Promise.all(
        s.previous_keys.map((k) => sealAtRest(k, this.atRestKey)),
      ),
    };
  }

  async get(): Promise<PluginSettings> {
    const entry = await this.kv.get<PluginSettings>(keys.pluginSettings());
    return await this.#open(entry.value);
  }

  update(change: (current: PluginSettings) => PluginSettings): Promise<PluginSettings> {
    return retryAtomic(async () => {
      const entry = await this.kv.get<PluginSettings>(keys.pluginSettings());
      const next = await change(await this.#open(entry.value));
      const stored = await this.#seal(next);
      const result = await this.kv.atomic().check(entry).set(entry.key, stored).commit();
      return result.ok ? next : undefined;
    });
  }
}
