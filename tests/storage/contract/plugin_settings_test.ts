import assert from "node:assert/strict";
import type { PluginSettings } from "../../../storage/ports.ts";
import { type Case, contract } from "./_backends.ts";

const addKey = (key: string) => (s: PluginSettings): PluginSettings => ({
  ...s,
  previous_keys: [...s.previous_keys, key],
});

const cases: Record<string, Case> = {
  "unset settings read as the defaults": async ({ storage }) => {
    assert.deepEqual(await storage.pluginSettings.get(), {
      encryption_key: null,
      custom_fields_enabled: false,
      previous_keys: [],
      last_updated: null,
    });
  },

  "updates are atomic: concurrent changes all land": async ({ storage }) => {
    const settings = storage.pluginSettings;
    await Promise.all(["a", "b", "c", "d"].map((k) => settings.update(addKey(k))));
    assert.deepEqual((await settings.get()).previous_keys.sort(), ["a", "b", "c", "d"]);
  },

  "the stored key reads back as written, from another handle too": async (opened) => {
    const written = await opened.storage.pluginSettings.update((s) => ({
      ...s,
      encryption_key: "plugin-key",
      custom_fields_enabled: true,
      last_updated: "2026-01-01T00:00:00Z",
    }));
    assert.equal(written.encryption_key, "plugin-key");
    const other = await opened.reopen();
    assert.deepEqual(await other.pluginSettings.get(), written);
  },
};

contract("plugin settings", cases);
contract("plugin settings (sealed at rest)", cases, { atRestKey: "at-rest key" });
