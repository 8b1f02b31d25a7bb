/**
 * Validation of request parameters (path + query + body) against an operation's schema, the
 * way Proxmox checks them: types (booleans accept 0/1/true/false/yes/no/on/off), enum,
 * pattern, minimum/maximum, minLength/maxLength, required, named formats and inline
 * property-string formats. Values come back normalised: integers and numbers as numbers,
 * booleans as 0/1, arrays as arrays.
 */
import {
  isOptional,
  type Operation,
  type ParamSchema,
  type PropertyStringFormat,
} from "./schema.ts";
import { compileSafePattern } from "./pattern.ts";

export interface FieldError {
  field: string;
  message: string;
}

export interface ValidationResult {
  values: Record<string, unknown>;
  errors: FieldError[];
}

/** Raw input value: a string from a query or form, or anything from a JSON body. */
export type RawParams = Record<string, unknown>;

const BOOL_TRUE = new Set(["1", "true", "yes", "on"]);
const BOOL_FALSE = new Set(["0", "false", "no", "off"]);

/** Longest input handed to the backtracking engine (patterns the safe matcher cannot take). */
const MAX_BACKTRACKING_INPUT = 64;

/**
 * Compiled patterns (schemas repeat the same ones; compile once per process). Matching is
 * linear-time (pattern.ts): JavaScript's backtracking engine stalls the whole process on
 * some PVE patterns. The few patterns the safe matcher does not support use RegExp on short
 * inputs only; null means "cannot check", and the value is accepted rather than refused.
 */
const patternCache = new Map<string, { test(s: string): boolean } | null>();
function compile(pattern: string): { test(s: string): boolean } | null {
  let re = patternCache.get(pattern);
  if (re === undefined) {
    re = compileSafePattern(pattern);
    if (!re) {
      try {
        const native = new RegExp(`^(?:${pattern})$`);
        re = { test: (s) => s.length > MAX_BACKTRACKING_INPUT || native.test(s) };
      } catch {
        re = null; // a Perl-only construct: skip rather than reject valid input
      }
    }
    patternCache.set(pattern, re);
  }
  return re;
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
function isIpv6(s: string): boolean {
  if (!/^[0-9a-fA-F:.]+$/.test(s) || !s.includes(":")) return false;
  try {
    new URL(`http://[${s}]/`);
    return true;
  } catch {
    return false;
  }
}
const isIp = (s: string) => IPV4.test(s) || isIpv6(s);
function isCidr(s: string, v?: 4 | 6): boolean {
  const [ip, len, extra] = s.split("/");
  if (extra !== undefined || len === undefined || !/^\d{1,3}$/.test(len)) return false;
  if (IPV4.test(ip) && v !== 6) return Number(len) <= 32;
  if (isIpv6(ip) && v !== 4) return Number(len) <= 128;
  return false;
}

/** Named formats checked here; any other named format is accepted as a plain string. */
const NAMED_FORMATS: Record<string, (s: string) => boolean> = {
  "pve-node": (s) => /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/.test(s),
  "pve-vmid": (s) => /^[1-9]\d{2,8}$/.test(s),
  "pve-storage-id": (s) => /^[a-z][a-z0-9\-_.]*[a-z0-9]$/i.test(s),
  "pve-configid": (s) => /^[a-z][a-z0-9_-]+$/i.test(s),
  "pve-poolid": (s) => /^[A-Za-z0-9_\-/]+$/.test(s),
  "pve-userid": (s) => /^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+$/.test(s),
  "pve-realm": (s) => /^[A-Za-z][A-Za-z0-9.\-_]+$/.test(s),
  "pve-iface": (s) => /^[a-zA-Z][a-zA-Z0-9_.:-]{1,20}$/.test(s),
  "mac-addr": (s) => /^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/.test(s),
  ip: isIp,
  ipv4: (s) => IPV4.test(s),
  ipv6: isIpv6,
  address: isIp,
  CIDR: (s) => isCidr(s),
  CIDRv4: (s) => isCidr(s, 4),
  CIDRv6: (s) => isCidr(s, 6),
  IPorCIDR: (s) => isIp(s) || isCidr(s),
  "dns-name": (s) =>
    /^([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)(\.([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?))*$/.test(
      s,
    ),
};

function checkNamedFormat(format: string, value: string): string | undefined {
  const list = format.endsWith("-list");
  const base = list ? format.slice(0, -5) : format;
  const check = NAMED_FORMATS[base];
  if (!check) return undefined;
  const items = list ? value.split(/[,;\s]+/).filter(Boolean) : [value];
  for (const item of items) {
    if (!check(item)) {
      return `value '${item}' does not look like a valid ${base.replace(/^pve-/, "")}`;
    }
  }
  return undefined;
}

function describe(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * Validate one value against its schema. Returns the normalised value or an error message.
 */
export function checkValue(schema: ParamSchema, raw: unknown): { value?: unknown; error?: string } {
  if (schema.oneOf?.length && schema.type === undefined) {
    // Composite parameter (e.g. SDN fabrics): valid when one variant accepts the value.
    let first: { value?: unknown; error?: string } | undefined;
    for (const variant of schema.oneOf) {
      const r = checkValue(variant, raw);
      if (!r.error) return r;
      first ??= r;
    }
    return first!;
  }
  const type = schema.type ?? "string";
  let value: unknown = raw;
  switch (type) {
    case "boolean": {
      if (raw === true || raw === 1) return { value: 1 };
      if (raw === false || raw === 0) return { value: 0 };
      const s = String(raw).toLowerCase();
      if (BOOL_TRUE.has(s)) return { value: 1 };
      if (BOOL_FALSE.has(s)) return { value: 0 };
      return { error: `type check ('boolean') failed - got '${describe(raw)}'` };
    }
    case "integer":
    case "number": {
      let n: number;
      if (typeof raw === "number") n = raw;
      else if (typeof raw === "string" && raw.trim() !== "") {
        const s = raw.trim();
        const ok = type === "integer"
          ? /^[+-]?\d+$/.test(s)
          : /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s);
        n = ok ? Number(s) : NaN;
      } else n = NaN;
      if (!Number.isFinite(n) || (type === "integer" && !Number.isInteger(n))) {
        return { error: `type check ('${type}') failed - got '${describe(raw)}'` };
      }
      if (schema.minimum !== undefined && n < schema.minimum) {
        return { error: `value must have a minimum value of ${schema.minimum}` };
      }
      if (schema.maximum !== undefined && n > schema.maximum) {
        return { error: `value must have a maximum value of ${schema.maximum}` };
      }
      value = n;
      break;
    }
    case "array": {
      const list = Array.isArray(raw) ? raw : [raw];
      const out: unknown[] = [];
      for (const item of list) {
        const r: { value?: unknown; error?: string } = schema.items
          ? checkValue(schema.items, item)
          : { value: item };
        if (r.error) return r;
        out.push(r.value);
      }
      return { value: out };
    }
    case "object":
    case "any":
      return { value: raw };
    default: {
      if (typeof raw === "object" && raw !== null) {
        return { error: `type check ('string') failed - got '${describe(raw)}'` };
      }
      const s = String(raw);
      if (schema.minLength !== undefined && s.length < schema.minLength) {
        return { error: `value must be at least ${schema.minLength} characters long` };
      }
      if (schema.maxLength !== undefined && s.length > schema.maxLength) {
        return { error: `value may only be ${schema.maxLength} characters long` };
      }
      if (schema.pattern) {
        const re = compile(schema.pattern);
        if (re && !re.test(s)) return { error: `value does not match the regex pattern` };
      }
      if (typeof schema.format === "string") {
        const e = checkNamedFormat(schema.format, s);
        if (e) return { error: e };
      } else if (schema.format && typeof schema.format === "object") {
        const e = checkPropertyString(schema.format, s);
        if (e) return { error: e };
      }
      value = s;
    }
  }
  if (schema.enum && !schema.enum.some((e) => String(e) === String(value))) {
    return {
      error: `value '${describe(raw)}' does not have a value in the enumeration '${
        schema.enum.join(", ")
      }'`,
    };
  }
  return { value };
}

/** Parse `key=value,key2=value2` (with an optional leading default key) and check each part. */
export function checkPropertyString(
  format: PropertyStringFormat,
  text: string,
): string | undefined {
  const defaultKey = Object.keys(format).find((k) => format[k].default_key);
  /** Own keys only (`toString=1` is an unknown key, not Object.prototype.toString). */
  const sub = (key: string) => Object.hasOwn(format, key) ? format[key] : undefined;
  const seen = new Set<string>();
  for (const part of text.split(",")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    let key: string;
    let val: string;
    if (eq < 0) {
      if (sub(part)?.keyAlias) {
        seen.add(sub(part)!.keyAlias!);
        continue;
      }
      if (!defaultKey) return `invalid format - missing key in '${part}'`;
      key = defaultKey;
      val = part;
    } else {
      key = part.slice(0, eq).trim();
      val = part.slice(eq + 1);
    }
    let entry = sub(key);
    if (!entry) return `invalid format - unknown key '${key}'`;
    if (entry.keyAlias) {
      // e.g. net0: `virtio=BC:24:11:..` sets model=virtio and macaddr=<value>.
      seen.add(entry.keyAlias);
      key = entry.alias ?? key;
      entry = sub(key) ?? {};
    } else if (entry.alias) {
      key = entry.alias;
      entry = sub(key) ?? {};
    }
    if (seen.has(key)) return `invalid format - duplicate key '${key}'`;
    seen.add(key);
    const r = checkValue(entry, val);
    if (r.error) return `invalid format - ${key}: ${r.error}`;
  }
  for (const [key, sub] of Object.entries(format)) {
    if (sub.alias || sub.keyAlias) continue;
    if (!isOptional(sub) && !seen.has(key) && sub.type !== undefined) {
      return `invalid format - ${key}: property is missing and it is not optional`;
    }
  }
  return undefined;
}

/** Parse a property string into a map (no validation); the default key is used for bare values. */
export function parsePropertyString(text: string, defaultKey?: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(",")) {
    if (!part) continue;
    const eq = part.indexOf("=");
    if (eq < 0) {
      if (defaultKey) out[defaultKey] = part;
      else out[part] = "";
    } else out[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return out;
}

/** Schema lookup that also resolves indexed properties such as `net[n]` for `net0`. */
export class ParamLookup {
  readonly #props: Record<string, ParamSchema>;
  readonly #indexed: Array<[prefix: string, schema: ParamSchema]> = [];

  constructor(props: Record<string, ParamSchema> | undefined) {
    this.#props = props ?? {};
    for (const [name, schema] of Object.entries(this.#props)) {
      const m = /^([a-z_-]+)\[n\]$/i.exec(name);
      if (m) this.#indexed.push([m[1], schema]);
    }
  }

  get(name: string): ParamSchema | undefined {
    // Own properties only: `toString` or `constructor` must not find Object.prototype members.
    if (Object.hasOwn(this.#props, name)) return this.#props[name];
    for (const [prefix, schema] of this.#indexed) {
      if (name.startsWith(prefix) && /^\d+$/.test(name.slice(prefix.length))) return schema;
    }
    return undefined;
  }
}

const lookups = new WeakMap<Operation, ParamLookup>();
function lookupFor(op: Operation): ParamLookup {
  let l = lookups.get(op);
  if (!l) lookups.set(op, l = new ParamLookup(op.parameters?.properties));
  return l;
}

/** Paging parameters every list answers to, whether or not its schema names them. */
export const PAGING_PARAMS = ["limit", "start"] as const;

/**
 * Validate all parameters of one request. `raw` merges path, query and body. Parameters the
 * schema does not define are errors unless it allows additional properties; `limit`/`start`
 * are always accepted (every list pages).
 */
export function validateParams(op: Operation, raw: RawParams): ValidationResult {
  const errors: FieldError[] = [];
  const values: Record<string, unknown> = {};
  const props = op.parameters?.properties ?? {};
  const lookup = lookupFor(op);
  const allowExtra = op.parameters?.additionalProperties === 1 ||
    op.parameters?.additionalProperties === true;
  for (const [name, input] of Object.entries(raw)) {
    // `_dc` is the ExtJS cache buster; Proxmox drops it before validation.
    if (input === undefined || name === "_dc") continue;
    const schema = lookup.get(name);
    if (!schema) {
      if ((PAGING_PARAMS as readonly string[]).includes(name)) {
        const r = checkValue({ type: "integer", minimum: 0 }, input);
        if (r.error) errors.push({ field: name, message: r.error });
        else values[name] = r.value;
        continue;
      }
      if (allowExtra) values[name] = input;
      else {
        errors.push({
          field: name,
          message:
            "property is not defined in schema and the schema does not allow additional properties",
        });
      }
      continue;
    }
    // A repeated form key for a non-array parameter: Proxmox takes one value; we reject.
    if (Array.isArray(input) && schema.type !== "array") {
      if (input.length === 1) {
        const r = checkValue(schema, input[0]);
        if (r.error) errors.push({ field: name, message: r.error });
        else values[name] = r.value;
      } else errors.push({ field: name, message: "parameter given more than once" });
      continue;
    }
    const r = checkValue(schema, input);
    if (r.error) errors.push({ field: name, message: r.error });
    else values[name] = r.value;
  }
  for (const [name, schema] of Object.entries(props)) {
    if (name.endsWith("[n]") || isOptional(schema)) continue;
    if (schema.oneOf?.some((v) => isOptional(v))) continue;
    if (values[name] === undefined && !errors.some((e) => e.field === name)) {
      errors.push({ field: name, message: "property is missing and it is not optional" });
    }
  }
  return { values, errors };
}
