/**
 * Coercion of one input value to its stored form, with DRF's error texts. FK and m2m values
 * are only shaped here (to an id or an attribute lookup); the engine resolves them.
 */
import type { FieldDef } from "./types.ts";

export const INT32_MIN = -2147483648;
export const INT32_MAX = 2147483647;

export const MESSAGES = {
  required: "This field is required.",
  null: "This field may not be null.",
  blank: "This field may not be blank.",
  string: "Not a valid string.",
  int: "A valid integer is required.",
  float: "A valid number is required.",
  bool: "Must be a valid boolean.",
  datetime:
    "Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].",
  date: "Date has wrong format. Use one of these formats instead: YYYY-MM-DD.",
  json: "Value must be valid JSON.",
  list: (got: string) => `Expected a list of items but got type "${got}".`,
  choice: (value: unknown) => `"${String(value)}" is not a valid choice.`,
  /** NetBox's ContentTypeField: a content type it does not take, or text of no such form. */
  contentType: (value: unknown) =>
    typeof value === "string" && value.split(".").length === 2
      ? `Invalid content type: ${value}`
      : "Invalid value. Specify a content type as '<app_label>.<model_name>'.",
  maxLength: (n: number) => `Ensure this field has no more than ${n} characters.`,
  max: (n: number) => `Ensure this value is less than or equal to ${n}.`,
  min: (n: number) => `Ensure this value is greater than or equal to ${n}.`,
  pk: (id: unknown) => `Related object not found using the provided numeric ID: ${String(id)}`,
  pkType: (got: string) => `Incorrect type. Expected pk value, received ${got}.`,
  attrs: (attrs: Record<string, unknown>) =>
    `Related object not found using the provided attributes: ${pyRepr(filterParams(attrs))}`,
  multiple: (attrs: Record<string, unknown>) =>
    `Multiple objects match the provided attributes: ${pyRepr(filterParams(attrs))}`,
  unrecognized: (value: unknown) =>
    "Related objects must be referenced by numeric ID or by dictionary of attributes. " +
    `Received an unrecognized value: ${pyStr(value)}`,
};

/**
 * A nested reference's attributes as NetBox's `dict_to_filter_params` flattens them before the
 * look-up (and names them in its errors): `{"type": {"slug": "pve"}}` → `{type__slug: "pve"}`.
 */
export function filterParams(
  attrs: Record<string, unknown>,
  prefix = "",
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(attrs)) {
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      Object.assign(out, filterParams(v as Record<string, unknown>, `${prefix}${k}__`));
    } else out[`${prefix}${k}`] = v;
  }
  return out;
}

/** Python's repr() of a JSON value (NetBox's error texts format its dicts): `{'slug': 'x'}`. */
export function pyRepr(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (typeof value === "boolean") return value ? "True" : "False";
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return pyStringRepr(value);
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(", ")}]`;
  const entries = Object.entries(value as Record<string, unknown>);
  return `{${entries.map(([k, v]) => `${pyStringRepr(k)}: ${pyRepr(v)}`).join(", ")}}`;
}

/** Python's str(): a string as itself, anything else as its repr. */
function pyStr(value: unknown): string {
  return typeof value === "string" ? value : pyRepr(value);
}

/** Python's repr() of a str: single quotes unless it holds one and no double quote. */
function pyStringRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (ch === "\\") out += "\\\\";
    else if (ch === quote) out += `\\${ch}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, "0")}`;
    else out += ch;
  }
  return out + quote;
}

export type Coerced = { ok: true; value: unknown } | { ok: false; error: string };

/** A related-object reference as sent: an id or a dict of attributes to look up. */
export type RefInput = { id: number } | { attrs: Record<string, unknown> };

/** The Python type name DRF's messages give a JSON value ("int", "str", "list", ...). */
export function pyType(value: unknown): string {
  if (value === null) return "NoneType";
  if (Array.isArray(value)) return "list";
  if (typeof value === "string") return "str";
  if (typeof value === "boolean") return "bool";
  if (typeof value === "number") return Number.isInteger(value) ? "int" : "float";
  if (typeof value === "object") return "dict";
  return typeof value;
}

const TRUE = new Set(["true", "1", "yes", "y", "on", "t"]);
const FALSE = new Set(["false", "0", "no", "n", "off", "f"]);

export function parseBool(value: unknown): boolean | undefined {
  if (value === true || value === false) return value;
  if (value === 1) return true;
  if (value === 0) return false;
  if (typeof value === "string") {
    const v = value.trim().toLowerCase();
    if (TRUE.has(v)) return true;
    if (FALSE.has(v)) return false;
  }
  return undefined;
}

export function parseInt32ish(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isInteger(value) ? value : undefined;
  if (typeof value === "string" && /^\s*[-+]?\d+\s*$/.test(value)) return Number(value.trim());
  return undefined;
}

/**
 * DRF's IntegerField: `int(re.sub(r"\.0*\s*$", "", str(value)))`. A trailing `.`, `.0` or
 * `.00` goes, then Python's int() takes blanks around, a sign and `_` between digits:
 * "1.0", "5." and "1_000" are numbers, "5.5" and "1e3" are not.
 */
function parseDrfInteger(value: unknown): number | undefined {
  if (typeof value !== "string") return parseInt32ish(value);
  const text = value.replace(/\.0*\s*$/, "").trim();
  return /^[-+]?\d+(_\d+)*$/.test(text) ? Number(text.replaceAll("_", "")) : undefined;
}

function parseNumber(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value === "string" && /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(value)) {
    const n = Number(value);
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

const ISO_DATETIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** ISO 8601 in, ISO 8601 UTC out (undefined when invalid). */
export function parseDatetime(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const text = value.trim();
  const m = ISO_DATETIME.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h = "00", mi = "00", s = "00", frac = "", zone] = m;
  let iso = `${y}-${mo}-${d}T${h}:${mi}:${s}${frac ? "." + frac.padEnd(3, "0").slice(0, 3) : ""}`;
  if (!zone || zone === "Z") iso += "Z";
  else iso += zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone;
  const time = Date.parse(iso);
  if (Number.isNaN(time)) return undefined;
  const date = new Date(time);
  if (date.getUTCFullYear() < 1 || date.getUTCFullYear() > 9999) return undefined;
  return date.toISOString();
}

export function parseDate(value: unknown): string | undefined {
  if (typeof value !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(value.trim())) return undefined;
  const t = Date.parse(value.trim() + "T00:00:00Z");
  if (Number.isNaN(t)) return undefined;
  return new Date(t).toISOString().slice(0, 10);
}

/**
 * Shapes a related-object reference: 5, "5", {id: 5} or {name: "x"}. As NetBox's
 * get_related_object_by_attrs: anything else is cast with Python's int() (a boolean is 1 or 0, a
 * number loses its fraction), and what int() refuses is an unrecognized value.
 */
export function parseRef(
  value: unknown,
): { ok: true; ref: RefInput } | { ok: false; error: string } {
  const id = typeof value === "boolean"
    ? Number(value)
    : typeof value === "number" && Number.isFinite(value)
    ? Math.trunc(value)
    : parseInt32ish(value);
  if (id !== undefined) {
    if (id < 1 || id > Number.MAX_SAFE_INTEGER) return { ok: false, error: MESSAGES.pk(id) };
    return { ok: true, ref: { id } };
  }
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    if ("id" in obj) {
      const inner = parseInt32ish(obj.id);
      if (inner === undefined || inner < 1) {
        return { ok: false, error: MESSAGES.pkType(pyType(obj.id)) };
      }
      return { ok: true, ref: { id: inner } };
    }
    return { ok: true, ref: { attrs: obj } };
  }
  return { ok: false, error: MESSAGES.unrecognized(value) };
}

/** Coerces a scalar, choice, json or list value. FK/m2m are handled by the engine. */
export function coerce(def: FieldDef, value: unknown): Coerced {
  if (value === null) {
    if (def.nullable) return { ok: true, value: null };
    return { ok: false, error: MESSAGES.null };
  }
  switch (def.type) {
    case "string": {
      if (typeof value !== "string" && (typeof value !== "number" || !Number.isFinite(value))) {
        return { ok: false, error: MESSAGES.string };
      }
      const text = String(value).trim();
      const allowBlank = def.allowBlank ?? !def.required;
      if (text === "" && !allowBlank) return { ok: false, error: MESSAGES.blank };
      if (def.maxLength !== undefined && text.length > def.maxLength) {
        return { ok: false, error: MESSAGES.maxLength(def.maxLength) };
      }
      if (def.pattern && text !== "" && !def.pattern.test(text)) {
        const message = def.patternMessage ?? "Enter a valid value.";
        return { ok: false, error: typeof message === "function" ? message(text) : message };
      }
      return { ok: true, value: def.normalize && text !== "" ? def.normalize(text) : text };
    }
    case "int": {
      if (typeof value === "boolean") return { ok: false, error: MESSAGES.int };
      const n = parseDrfInteger(value);
      if (n === undefined) return { ok: false, error: MESSAGES.int };
      const max = def.max ?? INT32_MAX;
      const min = def.min ?? INT32_MIN;
      if (n > max) return { ok: false, error: MESSAGES.max(max) };
      if (n < min) return { ok: false, error: MESSAGES.min(min) };
      return { ok: true, value: n };
    }
    case "float": {
      if (typeof value === "boolean") return { ok: false, error: MESSAGES.float };
      const n = parseNumber(value);
      if (n === undefined) return { ok: false, error: MESSAGES.float };
      if (def.max !== undefined && n > def.max) return { ok: false, error: MESSAGES.max(def.max) };
      if (def.min !== undefined && n < def.min) return { ok: false, error: MESSAGES.min(def.min) };
      return { ok: true, value: n };
    }
    case "bool": {
      const b = parseBool(value);
      return b === undefined ? { ok: false, error: MESSAGES.bool } : { ok: true, value: b };
    }
    case "datetime": {
      const d = parseDatetime(value);
      return d === undefined ? { ok: false, error: MESSAGES.datetime } : { ok: true, value: d };
    }
    case "date": {
      const d = parseDate(value);
      return d === undefined ? { ok: false, error: MESSAGES.date } : { ok: true, value: d };
    }
    case "json":
      return { ok: true, value };
    case "choice": {
      // NetBox's ChoiceField (netbox/api/fields.py): a blank is a value only where the field
      // allows it, and it is stored as null here (rendered null either way); a value is given
      // directly, never as the `{value, label}` a choice renders as.
      const netbox = !def.drfChoice && !def.contentType;
      const raw = !netbox && value && typeof value === "object" && "value" in (value as object)
        ? (value as { value: unknown }).value
        : value;
      // NetBox's ContentTypeField is a related field: a blank is no content type (null).
      if (def.contentType && raw === "") {
        return def.nullable ? { ok: true, value: null } : { ok: false, error: MESSAGES.null };
      }
      if (raw === "" && netbox) {
        return def.allowBlank ? { ok: true, value: null } : { ok: false, error: MESSAGES.blank };
      }
      const hit = def.choices?.find(([v]) =>
        v === raw || (typeof raw === "number" && v === String(raw))
      );
      if (!hit) {
        if (netbox && raw !== null && typeof raw === "object") {
          return {
            ok: false,
            error:
              'Value must be passed directly (e.g. "foo": 123); do not use a dictionary or list.',
          };
        }
        if (netbox) return { ok: false, error: `${pyStr(raw)} is not a valid choice.` };
        if (def.contentType) return { ok: false, error: MESSAGES.contentType(raw) };
        return {
          ok: false,
          error: MESSAGES.choice(typeof raw === "object" ? JSON.stringify(raw) : raw),
        };
      }
      return { ok: true, value: hit[0] };
    }
    case "list": {
      if (!Array.isArray(value)) return { ok: false, error: MESSAGES.list(pyType(value)) };
      const out: unknown[] = [];
      for (const item of value) {
        const r = coerce({
          type: def.of === "int" ? "int" : "string",
          required: true,
          min: def.min,
          max: def.max,
        }, item);
        if (!r.ok) return r;
        out.push(r.value);
      }
      return { ok: true, value: out };
    }
    default:
      return { ok: false, error: "Unsupported field." };
  }
}

/** The value a field takes on create when absent and without a default. */
export function emptyValue(def: FieldDef): unknown {
  if (def.nullable) return null;
  switch (def.type) {
    case "string":
      return "";
    case "m2m":
    case "list":
      return [];
    case "bool":
      return false;
    case "json":
      return null;
    default:
      return null;
  }
}

export function defaultValue(def: FieldDef): unknown {
  if (def.default === undefined) return emptyValue(def);
  const value = typeof def.default === "function" ? (def.default as () => unknown)() : def.default;
  return structuredClone(value);
}
