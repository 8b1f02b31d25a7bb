/**
 * Schema-shaped deterministic data for routed operations the engine has no state for:
 * generated from the operation's `returns` schema, the same every time for the same path.
 */
import type { ParamSchema } from "../domain/hypervisor_schema/schema.ts";

export interface SampleContext {
  /** Concrete values for names that appear in the data (`node`, `vmid`, `storage`, ...). */
  known: Record<string, unknown>;
  /** Child segment names of the tree node (index endpoints list them). */
  children: string[];
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

const FORMAT_SAMPLES: Record<string, string> = {
  "pve-node": "pve1",
  "pve-storage-id": "local",
  "mac-addr": "BC:24:11:00:00:01",
  ip: "192.0.2.10",
  ipv4: "192.0.2.10",
  ipv6: "2001:db8::10",
  address: "192.0.2.10",
  CIDR: "192.0.2.0/24",
  IPorCIDR: "192.0.2.0/24",
  "pve-userid": "root@pam",
  "pve-realm": "pam",
  "pve-iface": "vmbr0",
  "dns-name": "pve1.example.invalid",
};

function sampleString(name: string, schema: ParamSchema, salt: string): string {
  if (schema.enum?.length) return String(schema.enum[0]);
  if (typeof schema.default === "string") return schema.default;
  if (typeof schema.format === "string" && FORMAT_SAMPLES[schema.format]) {
    return FORMAT_SAMPLES[schema.format];
  }
  if (name === "upid") return "UPID:pve1:00001000:00100000:69559F00:mock::root@pam:";
  if (name === "digest") return hash(salt).toString(16).padStart(8, "0").repeat(5);
  return name ? `${name}-${(hash(salt) % 1000).toString().padStart(3, "0")}` : "value";
}

function sampleNumber(schema: ParamSchema, salt: string, integer: boolean): number {
  if (typeof schema.default === "number") return schema.default;
  const min = schema.minimum ?? 0;
  const max = schema.maximum ?? min + 100;
  const span = Math.max(0, max - min);
  const v = min + (hash(salt) % 1000) / 1000 * Math.min(span, 100);
  return integer ? Math.round(v) : Math.round(v * 1000) / 1000;
}

/** Generate a value for `schema`; `name` is the property name, `salt` the stable path. */
export function sample(
  schema: ParamSchema | undefined,
  ctx: SampleContext,
  name = "",
  salt = name,
  depth = 0,
): unknown {
  if (!schema) return null;
  if (name && name in ctx.known) {
    const k = ctx.known[name];
    if (schema.type === "integer" || schema.type === "number") {
      const n = Number(k);
      if (Number.isFinite(n)) return n;
    } else if (schema.type === "string" || schema.type === undefined) return String(k);
  }
  switch (schema.type) {
    case "null":
      return null;
    case "boolean":
      return typeof schema.default === "number" ? schema.default : hash(salt) % 2;
    case "integer":
      return sampleNumber(schema, salt, true);
    case "number":
      return sampleNumber(schema, salt, false);
    case "array": {
      if (depth > 4) return [];
      const items = schema.items;
      const props = Object.keys(items?.properties ?? {});
      const href = (schema.links as Array<{ href?: string }> | undefined)?.[0]?.href;
      const linkKey = /^\{([\w-]+)\}$/.exec(href ?? "")?.[1];
      // Index endpoints (items with no properties but the child link's, e.g. `{subdir}` or
      // `{id}`) list their subdirectories.
      if (
        (items?.type === "object" || !items?.type) && ctx.children.length && depth === 0 &&
        props.every((p) => p === linkKey)
      ) {
        const key = linkKey ?? "subdir";
        return ctx.children.map((c) => ({ [key]: c }));
      }
      return [0, 1].map((i) => sample(items, ctx, "", `${salt}[${i}]`, depth + 1));
    }
    case "object": {
      const out: Record<string, unknown> = {};
      if (depth > 4) return out;
      for (const [k, v] of Object.entries(schema.properties ?? {})) {
        out[k] = sample(v, ctx, k, `${salt}.${k}`, depth + 1);
      }
      return out;
    }
    case "string":
      return sampleString(name, schema, salt);
    case undefined:
      if (schema.properties) return sample({ ...schema, type: "object" }, ctx, name, salt, depth);
      return null;
    default:
      return sampleString(name, schema, salt);
  }
}
