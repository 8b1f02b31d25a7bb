/**
 * Custom fields (extras/custom-fields): definitions name the models they apply to in
 * `object_types` ("virtualization.virtualmachine"); objects of those models carry a
 * `custom_fields` object with one key per definition (null when unset).
 */
import {
  PATTERN_WORK_BUDGET,
  userPattern,
  WorkBudgetExceeded,
  type WorkMeter,
} from "./user_patterns.ts";
import { parseDate, parseDatetime } from "./fields.ts";

export const CUSTOM_FIELD_TYPES = [
  ["text", "Text"],
  ["longtext", "Text (long)"],
  ["integer", "Integer"],
  ["decimal", "Decimal"],
  ["boolean", "Boolean (true/false)"],
  ["date", "Date"],
  ["datetime", "Date & time"],
  ["url", "URL"],
  ["json", "JSON"],
  ["select", "Selection"],
  ["multiselect", "Multiple selection"],
  ["object", "Object"],
  ["multiobject", "Multiple objects"],
] as const;

export interface CustomFieldDef {
  id: number;
  name: string;
  type: string;
  object_types: string[];
  required: boolean;
  default: unknown;
  weight?: number;
  group_name?: string;
  validation_minimum?: number | null;
  validation_maximum?: number | null;
  validation_regex?: string;
  choices?: string[];
}

type Checked = { ok: true; value: unknown } | { ok: false; error: string };

function objectId(value: unknown): number | null {
  const v = value && typeof value === "object" && !Array.isArray(value)
    ? (value as { id?: unknown }).id
    : value;
  return Number.isInteger(v) && (v as number) > 0 ? v as number : null;
}

/**
 * `meter`: the request's pattern budget (user_patterns.ts), shared by every value a write
 * checks, so a bulk write cannot run a heavy validation_regex over a megabyte of values.
 */
export function checkCustomValue(cf: CustomFieldDef, value: unknown, meter?: WorkMeter): Checked {
  if (value === null || value === undefined || value === "") return { ok: true, value: null };
  switch (cf.type) {
    case "text":
    case "longtext":
    case "url": {
      if (typeof value !== "string") return { ok: false, error: "Value must be a string." };
      if (cf.type === "url" && !/^[a-z][a-z0-9+.-]*:\/\/\S+$/i.test(value)) {
        return { ok: false, error: "Enter a valid URL." };
      }
      if (cf.validation_regex) {
        const pattern = userPattern(cf.validation_regex);
        let matched = true;
        try {
          matched = !pattern.ok || pattern.test(value, meter);
        } catch (error) {
          if (!(error instanceof WorkBudgetExceeded)) throw error;
          return {
            ok: false,
            error: `checking validation_regex would take more than the ` +
              `${PATTERN_WORK_BUDGET.toLocaleString("en")} matching steps one request may take; ` +
              "send fewer or shorter values per request.",
          };
        }
        if (!matched) {
          return { ok: false, error: `Value must match regex '${cf.validation_regex}'` };
        }
      }
      return { ok: true, value };
    }
    case "integer":
    case "decimal": {
      if (
        typeof value !== "number" || !Number.isFinite(value) ||
        (cf.type === "integer" && !Number.isInteger(value))
      ) {
        return {
          ok: false,
          error: cf.type === "integer" ? "Value must be an integer." : "Value must be a decimal.",
        };
      }
      if (typeof cf.validation_minimum === "number" && value < cf.validation_minimum) {
        return { ok: false, error: `Value must be at least ${cf.validation_minimum}` };
      }
      if (typeof cf.validation_maximum === "number" && value > cf.validation_maximum) {
        return { ok: false, error: `Value must not exceed ${cf.validation_maximum}` };
      }
      if (Math.abs(value) > Number.MAX_SAFE_INTEGER) {
        return { ok: false, error: "Value is out of range." };
      }
      return { ok: true, value };
    }
    case "boolean":
      return typeof value === "boolean"
        ? { ok: true, value }
        : { ok: false, error: "Value must be true or false." };
    case "date": {
      const d = parseDate(value);
      return d
        ? { ok: true, value: d }
        : { ok: false, error: "Date values must be in ISO 8601 format (YYYY-MM-DD)." };
    }
    case "datetime": {
      const d = parseDatetime(value);
      return d ? { ok: true, value: d } : {
        ok: false,
        error: "Date and time values must be in ISO 8601 format (YYYY-MM-DD HH:MM:SS).",
      };
    }
    case "select":
      if (typeof value !== "string") return { ok: false, error: "Value must be a string." };
      if (cf.choices && cf.choices.length > 0 && !cf.choices.includes(value)) {
        return {
          ok: false,
          error: `Invalid choice (${value}). Available choices are: ${cf.choices.join(", ")}`,
        };
      }
      return { ok: true, value };
    case "multiselect": {
      if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) {
        return { ok: false, error: "Value must be a list of strings." };
      }
      const bad = cf.choices && cf.choices.length > 0
        ? value.find((v) => !cf.choices!.includes(v))
        : undefined;
      if (bad !== undefined) return { ok: false, error: `Invalid choice(s) (${bad}).` };
      return { ok: true, value };
    }
    case "object": {
      // As read back ({id, url, display, ...}) or as an id.
      const id = objectId(value);
      return id !== null
        ? { ok: true, value: id }
        : { ok: false, error: "Value must be an object ID." };
    }
    case "multiobject": {
      const ids = Array.isArray(value) ? value.map(objectId) : null;
      return ids && ids.every((v) => v !== null)
        ? { ok: true, value: ids }
        : { ok: false, error: "Value must be a list of object IDs." };
    }
    default:
      return { ok: true, value };
  }
}

/** Validates a `custom_fields` input against the definitions, merging into `current`. */
export function validateCustomFields(
  defs: CustomFieldDef[],
  input: unknown,
  current: Record<string, unknown>,
  meter?: WorkMeter,
):
  | { ok: true; value: Record<string, unknown> }
  | { ok: false; errors: string[] | Record<string, string> } {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return { ok: false, errors: ["Invalid data. Expected a dictionary."] };
  }
  const byName = new Map(defs.map((d) => [d.name, d]));
  // NetBox 4.6: unknown keys are refused first, each under its own name.
  const unknown = Object.keys(input as Record<string, unknown>).filter((n) => !byName.has(n))
    .sort();
  if (unknown.length > 0) {
    return {
      ok: false,
      errors: Object.fromEntries(
        unknown.map((n) => [n, `Custom field '${n}' does not exist for this object type.`]),
      ),
    };
  }
  const errors: string[] = [];
  const out = { ...current };
  for (const [name, value] of Object.entries(input as Record<string, unknown>)) {
    const cf = byName.get(name)!;
    const r = checkCustomValue(cf, value, meter);
    if (!r.ok) errors.push(`Invalid value for custom field '${name}': ${r.error}`);
    else out[name] = r.value;
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: out };
}

export function applyCustomFieldDefaults(
  defs: CustomFieldDef[],
  values: Record<string, unknown>,
): Record<string, unknown> {
  const out = { ...values };
  for (const cf of defs) {
    if (
      (out[cf.name] === undefined || out[cf.name] === null) && cf.default !== null &&
      cf.default !== undefined
    ) {
      out[cf.name] = structuredClone(cf.default);
    }
  }
  return out;
}

export function renderCustomFields(
  defs: CustomFieldDef[],
  values: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const cf of defs) out[cf.name] = values?.[cf.name] ?? null;
  return out;
}
