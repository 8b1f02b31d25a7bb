/**
 * The plugin settings singleton (docs/api-behaviour.md, Plugin settings): `encryption_key`
 * (write-only) and `custom_fields_enabled` (default false). Stored through `PluginSettingsStore`
 * (storage/ports.ts).
 */

import type { PluginSettings, PluginSettingsStore } from "../../storage/ports.ts";

export type { PluginSettings, PluginSettingsStore };

export const DEFAULT_SETTINGS: PluginSettings = {
  encryption_key: null,
  custom_fields_enabled: false,
  previous_keys: [],
  last_updated: null,
};

export const MAX_PREVIOUS_KEYS = 5;

/** Current key first, then the previous ones: the order secrets are tried in. */
export function keyring(s: PluginSettings): string[] {
  return [s.encryption_key, ...s.previous_keys].filter((k): k is string => Boolean(k));
}

/** The public view: the key itself is never shown, only whether one is set. */
export function publicSettings(s: PluginSettings): Record<string, unknown> {
  return {
    custom_fields_enabled: s.custom_fields_enabled,
    has_encryption_key: Boolean(s.encryption_key),
    last_updated: s.last_updated,
  };
}

export type SettingsPatch =
  | { ok: true; encryption_key?: string | null; custom_fields_enabled?: boolean }
  | { ok: false; errors: Record<string, string[]> };

const KNOWN = new Set(["encryption_key", "custom_fields_enabled"]);

/** Parses a PATCH body; unknown fields are rejected rather than silently dropped. */
export function parseSettingsPatch(body: unknown): SettingsPatch {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return { ok: false, errors: { non_field_errors: ["Invalid data. Expected a dictionary."] } };
  }
  const errors: Record<string, string[]> = {};
  const out: { encryption_key?: string | null; custom_fields_enabled?: boolean } = {};
  for (const [field, value] of Object.entries(body)) {
    if (!KNOWN.has(field)) {
      errors[field] = [`Unknown field; settings are ${[...KNOWN].join(", ")}.`];
      continue;
    }
    if (field === "encryption_key") {
      if (value === null || value === "") out.encryption_key = null;
      else if (typeof value !== "string") errors[field] = ["Not a valid string."];
      else if (value.trim().length < 16) {
        errors[field] = ["Use an encryption key of at least 16 characters."];
      } else out.encryption_key = value.trim();
    } else {
      if (typeof value !== "boolean") errors[field] = ["Must be a valid boolean."];
      else out.custom_fields_enabled = value;
    }
  }
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  return { ok: true, ...out };
}
