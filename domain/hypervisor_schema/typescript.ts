/**
 * TypeScript types for every operation of a loaded Proxmox VE API-viewer schema, as one module
 * text: `<Name>Params` (path, query and body parameters together, as Proxmox treats them) and
 * `<Name>Returns` per operation, plus `Operations`, a map keyed by `"GET /nodes/{node}/qemu"`.
 * Names come from `operationNames` so they match the OpenAPI operationIds.
 */

import { isListOperation, operationNames, PAGING, treeOperations } from "./openapi.ts";
import { isOptional, type ParamSchema, pathParams, type SchemaTree } from "./schema.ts";

export interface TypeScriptOptions {
  /** Label of the schema version, written into the header. */
  version: string;
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const MAX_DOC = 600;

function key(name: string): string {
  return IDENT.test(name) ? name : JSON.stringify(name);
}

function doc(text: string | undefined, indent: string): string {
  if (!text) return "";
  let t = text.trim();
  if (!t) return "";
  if (t.length > MAX_DOC) t = `${t.slice(0, MAX_DOC - 3)}...`;
  t = t.replaceAll("*/", "*\\/");
  const lines = t.split("\n");
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${
    lines.map((l) => `${indent} * ${l}`.trimEnd()).join("\n")
  }\n${indent} */\n`;
}

type Direction = "params" | "returns";

function literal(value: string | number): string {
  return typeof value === "number" ? String(value) : JSON.stringify(value);
}

/** The TypeScript type of one Proxmox schema. `indent` is the current nesting's indentation. */
export function tsType(s: ParamSchema | undefined, dir: Direction, indent = ""): string {
  if (!s || typeof s !== "object") return "unknown";
  if (s.oneOf?.length) {
    const alts = [...new Set(s.oneOf.map((alt) => tsType(alt, dir, indent)))];
    return alts.length === 1 ? alts[0] : alts.map((a) => `(${a})`).join(" | ");
  }
  switch (s.type) {
    case "boolean":
      return dir === "params" ? "PveBooleanInput" : "PveBoolean";
    case "integer":
    case "number":
      if (s.enum?.length) return s.enum.map((v) => literal(Number(v))).join(" | ");
      return "number";
    case "string":
      if (s.enum?.length) return s.enum.map((v) => literal(String(v))).join(" | ");
      return "string";
    case "null":
      return "null";
    case "array": {
      const item = tsType(s.items, dir, indent);
      return /^[A-Za-z0-9_<>]+$/.test(item) ? `${item}[]` : `Array<${item}>`;
    }
    case "object":
      return objectType(s.properties, s.additionalProperties, dir, indent);
    default:
      return "unknown";
  }
}

function objectType(
  properties: Record<string, ParamSchema> | undefined,
  additional: ParamSchema["additionalProperties"],
  dir: Direction,
  indent: string,
): string {
  const inner = `${indent}  `;
  const members: string[] = [];
  const indexTypes: string[] = [];
  for (const [name, sub] of Object.entries(properties ?? {})) {
    const t = tsType(sub, dir, inner);
    const indexed = /^([A-Za-z0-9_-]+)\[n\]$/.exec(name);
    const comment = doc(sub.description ? String(sub.description) : undefined, inner);
    if (indexed) {
      // `net[n]` stands for net0, net1, ...: a template-literal index signature.
      members.push(`${comment}${inner}[key: \`${indexed[1]}\${number}\`]: ${t} | undefined;`);
      indexTypes.push(t);
      continue;
    }
    members.push(`${comment}${inner}${key(name)}${isOptional(sub) ? "?" : ""}: ${t};`);
  }
  if (additional && typeof additional === "object") {
    // Named properties must fit the index signature, so it widens to unknown next to them.
    const t = members.length ? "unknown" : tsType(additional as ParamSchema, dir, inner);
    members.push(`${inner}[key: string]: ${t};`);
  } else if (additional === 1 || additional === true) {
    members.push(`${inner}[key: string]: unknown;`);
  }
  if (!members.length) {
    return properties === undefined ? "Record<string, unknown>" : "Record<string, never>";
  }
  return `{\n${members.join("\n")}\n${indent}}`;
}

/** Generate the module text for a schema tree. */
export function generateTypeScript(tree: SchemaTree, options: TypeScriptOptions): string {
  const ops = treeOperations(tree);
  const names = operationNames(ops);
  const out: string[] = [
    `// TypeScript types of the Proxmox VE API, schema version ${options.version}.`,
    `// Generated from the loaded API-viewer schema: ${ops.length} operations. Do not edit.`,
    "",
    "/** Booleans as Proxmox returns them. */",
    "export type PveBoolean = 0 | 1;",
    "/** Booleans as Proxmox accepts them in parameters. */",
    "export type PveBooleanInput = 0 | 1 | boolean;",
    "/** The /api2/json envelope; `total` is set on paged lists. */",
    "export interface PveEnvelope<T> {",
    "  data: T;",
    "  total?: number;",
    "}",
    "",
  ];
  const map: string[] = [];
  ops.forEach(({ method, path, operation }, i) => {
    const name = names[i];
    const props: Record<string, ParamSchema> = { ...(operation.parameters?.properties ?? {}) };
    for (const p of pathParams(path)) props[p] ??= { type: "string" };
    if (isListOperation(method, operation)) {
      for (const [k, schema] of Object.entries(PAGING)) props[k] ??= schema;
    }
    const header = `${method} ${path}`;
    const params = objectType(props, undefined, "params", "");
    out.push(doc(`${header}${operation.description ? `\n\n${operation.description}` : ""}`, ""));
    out.push(
      params.startsWith("{")
        ? `export interface ${name}Params ${params}\n`
        : `export type ${name}Params = ${params};\n`,
    );
    out.push(`/** Result of ${header}. */`);
    out.push(`export type ${name}Returns = ${tsType(operation.returns, "returns")};\n`);
    map.push(
      `  ${JSON.stringify(header)}: { params: ${name}Params; returns: ${name}Returns };`,
    );
  });
  out.push("/** Every operation, keyed by `METHOD /path/{template}`. */");
  out.push("export interface Operations {");
  out.push(...map);
  out.push("}", "");
  out.push("export type OperationKey = keyof Operations;");
  out.push('export type ParamsOf<K extends OperationKey> = Operations[K]["params"];');
  out.push('export type ReturnsOf<K extends OperationKey> = Operations[K]["returns"];');
  out.push("");
  return out.join("\n");
}

/** Per-tree cache of generated module texts. */
export class TypeScriptCache {
  #texts = new WeakMap<SchemaTree, Map<string, string>>();

  get(tree: SchemaTree, options: TypeScriptOptions): string {
    let perTree = this.#texts.get(tree);
    if (!perTree) this.#texts.set(tree, perTree = new Map());
    let text = perTree.get(options.version);
    if (text === undefined) {
      text = generateTypeScript(tree, options);
      perTree.set(options.version, text);
    }
    return text;
  }
}
