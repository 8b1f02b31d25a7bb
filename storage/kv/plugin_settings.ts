import type { PluginSettings, PluginSettingsStore } from "../../domain/plugin/settings.ts";
import { DEFAULT_SETTINGS } from "../../domain/plugin/settings.ts";
import { keys } from "./keys.ts";
import { retryAtomic } from "./ids.ts";

/** The plugin settings singleton: one KV entry, changed under a versionstamp check. */
export class KvPluginSettingsStore implements PluginSettingsStore {
  constructor(private readonly kv: Deno.Kv) {}

  async get(): Promise<PluginSettings> {
    const entry = await this.kv.get<PluginSettings>(keys.pluginSettings());
    return { ...DEFAULT_SETTINGS, ...entry.value };
  }

  update(change: (current: PluginSettings) => PluginSettings): Promise<PluginSettings> {
    return retryAtomic(async () => {
      const entry = await this.kv.get<PluginSettings>(keys.pluginSettings());
      const next = change({ ...DEFAULT_SETTINGS, ...entry.value });
      const result = await this.kv.atomic().check(entry).set(entry.key, next).commit();
      return result.ok ? next : undefined;
    });
  }
}
