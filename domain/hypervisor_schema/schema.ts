/**
 * Proxmox VE API-viewer schema (`apidata.js`): types, loader and a flat index.
 *
 * The tree is the one the Proxmox API viewer renders: nodes `{path, text, leaf, info, children}`
 * where `info` maps an HTTP method to an operation `{parameters, returns, ...}`. The loader
 * accepts plain JSON or the `const apiSchema = [...];` JavaScript form, from a file path or a URL.
 */

export type HttpMethod = "GET" | "POST" | "PUT" | "DELETE";
export const HTTP_METHODS: readonly HttpMethod[] = ["GET", "POST", "PUT", "DELETE"];

/** Schema of one parameter, a property of a returned object, or an array's items. */
export interface ParamSchema {
  type?: "string" | "integer" | "number" | "boolean" | "array" | "object" | "null" | "any" | string;
  /** 1 (or true) when the parameter may be omitted; absent means required. */
  optional?: 0 | 1 | boolean;
  description?: string;
  verbose_description?: string;
  title?: string;
  typetext?: string;
  /** A named format (`pve-vmid`, `pve-node`, ...) or an inline property-string format. */
  format?: string | PropertyStringFormat;
  format_description?: string;
  enum?: readonly (string | number)[];
  pattern?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  items?: ParamSchema;
  properties?: Record<string, ParamSchema>;
  additionalProperties?: 0 | 1 | boolean | ParamSchema;
  requires?: string;
  renderer?: string;
  links?: unknown[];
  "type-property"?: string;
  "instance-types"?: readonly string[];
  oneOf?: readonly ParamSchema[];
  /** Property-string sub-key only: this key is an alias of another key. */
  alias?: string;
  /** Property-string sub-key only: the alias key's name goes into this key. */
  keyAlias?: string;
  /** Property-string sub-key only: this key may be given without `key=`. */
  default_key?: 0 | 1 | boolean;
  [extra: string]: unknown;
}

/** Inline property-string format: each sub-key (`bridge`, `macaddr`, ...) with its schema. */
export type PropertyStringFormat = Record<string, ParamSchema>;

export interface ParametersSchema {
  type?: "object" | string;
  additionalProperties?: 0 | 1 | boolean;
  properties?: Record<string, ParamSchema>;
  [extra: string]: unknown;
}

export interface Operation {
  method: HttpMethod;
  name?: string;
  description?: string;
  allowtoken?: 0 | 1;
  protected?: 0 | 1;
  proxyto?: string | null;
  permissions?: unknown;
  parameters?: ParametersSchema;
  returns?: ParamSchema;
  [extra: string]: unknown;
}

export interface SchemaNode {
  path: string;
  text: string;
  leaf: 0 | 1 | boolean;
  info?: Partial<Record<HttpMethod, Operation>>;
  children?: SchemaNode[];
}

export type SchemaTree = SchemaNode[];

/** One routed operation of the flat index. */
export interface IndexedOperation {
  method: HttpMethod;
  /** Templated path, e.g. `/nodes/{node}/qemu/{vmid}`. */
  path: string;
  operation: Operation;
}

export interface SchemaIndex {
  operations: IndexedOperation[];
  /** Number of tree nodes that carry at least one operation. */
  pathCount: number;
  /** All tree nodes, with or without operations. */
  nodeCount: number;
}

export class SchemaLoadError extends Error {
  constructor(readonly source: string, message: string) {
    super(`cannot load hypervisor schema from ${source}: ${message}`);
    this.name = "SchemaLoadError";
  }
}

/**
 * Parse schema text: plain JSON (`[...]`) or the API viewer's JS form
 * (`const apiSchema = [...];`, possibly followed by more script). Validates the tree's shape.
 */
export function parseSchemaText(text: string, source = "<text>"): SchemaTree {
  let body = text.trim();
  if (!body.startsWith("[")) {
    const m = /^(?:\/\/[^\n]*\n|\/\*[\s\S]*?\*\/|\s)*(?:const|let|var)\s+apiSchema\s*=\s*/.exec(
      body,
    );
    if (!m) {
      throw new SchemaLoadError(source, "expected a JSON array or `const apiSchema = [...];`");
    }
    body = body.slice(m[0].length);
    const end = matchingBracket(body);
    if (end < 0) throw new SchemaLoadError(source, "unterminated apiSchema array");
    body = body.slice(0, end + 1);
  }
  let tree: unknown;
  try {
    tree = JSON.parse(body);
  } catch (err) {
    throw new SchemaLoadError(source, `invalid JSON (${(err as Error).message})`);
  }
  assertTree(tree, source);
  return tree;
}

/** Index of the `]` closing the array that starts at body[0]; skips strings. -1 if none. */
function matchingBracket(body: string): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const ch = body.charCodeAt(i);
    if (inString) {
      if (ch === 92 /* \ */) i++;
      else if (ch === 34 /* " */) inString = false;
      continue;
    }
    if (ch === 34) inString = true;
    else if (ch === 91 /* [ */ || ch === 123 /* { */) depth++;
    else if (ch === 93 /* ] */ || ch === 125 /* } */) {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

function assertTree(tree: unknown, source: string): asserts tree is SchemaTree {
  if (!Array.isArray(tree)) throw new SchemaLoadError(source, "top level is not an array");
  const stack: unknown[] = [...tree];
  while (stack.length) {
    const node = stack.pop() as Record<string, unknown>;
    if (!node || typeof node !== "object" || typeof node.path !== "string") {
      throw new SchemaLoadError(source, "a tree node has no string `path`");
    }
    if (!node.path.startsWith("/")) {
      throw new SchemaLoadError(source, `path "${node.path}" does not start with /`);
    }
    if (node.info !== undefined && (typeof node.info !== "object" || node.info === null)) {
      throw new SchemaLoadError(source, `info of ${node.path} is not an object`);
    }
    if (node.children !== undefined) {
      if (!Array.isArray(node.children)) {
        throw new SchemaLoadError(source, `children of ${node.path} is not an array`);
      }
      stack.push(...node.children);
    }
  }
}

function isUrl(source: string): boolean {
  return /^https?:\/\//i.test(source);
}

/**
 * Load a schema from a file path (or `file:` URL) or an http(s) URL. `fetchImpl` is used for
 * URLs only (inject the app's fetch). Throws SchemaLoadError with a clear message.
 */
export async function loadSchema(
  source: string,
  fetchImpl: typeof fetch = globalThis.fetch,
): Promise<SchemaTree> {
  let text: string;
  if (isUrl(source)) {
    let res: Response;
    try {
      res = await fetchImpl(source, { headers: { accept: "application/json, text/javascript" } });
    } catch (err) {
      throw new SchemaLoadError(source, `fetch failed (${(err as Error).message})`);
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new SchemaLoadError(source, `HTTP ${res.status}`);
    }
    text = await res.text();
  } else {
    try {
      text = await Deno.readTextFile(source.startsWith("file:") ? new URL(source) : source);
    } catch (err) {
      throw new SchemaLoadError(source, (err as Error).message);
    }
  }
  return parseSchemaText(text, source);
}

/** Flatten the tree into operations (tree order, methods GET, POST, PUT, DELETE). */
export function indexSchema(tree: SchemaTree): SchemaIndex {
  const operations: IndexedOperation[] = [];
  let pathCount = 0;
  let nodeCount = 0;
  const stack: SchemaNode[] = [...tree].reverse();
  while (stack.length) {
    const node = stack.pop()!;
    nodeCount++;
    let has = false;
    if (node.info) {
      for (const method of HTTP_METHODS) {
        const operation = node.info[method];
        if (!operation) continue;
        has = true;
        operations.push({ method, path: node.path, operation });
      }
    }
    if (has) pathCount++;
    if (node.children) {
      for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]);
    }
  }
  return { operations, pathCount, nodeCount };
}

/** True when the parameter may be omitted. */
export function isOptional(schema: ParamSchema): boolean {
  return schema.optional === 1 || schema.optional === true;
}

/** Names of the `{param}` placeholders of a templated path, in order. */
export function pathParams(path: string): string[] {
  const out: string[] = [];
  for (const m of path.matchAll(/\{([^}]+)\}/g)) out.push(m[1]);
  return out;
}
