/**
 * OpenAPI 3.1 document generated from a loaded Proxmox VE API-viewer schema tree.
 *
 * Two flavours over the same operations:
 * - `pve`: server `/pve`, responses are the bare payloads, errors `{detail, errors:[{field,message}]}`;
 * - `api2`: server `/api2/json`, responses wrapped in `{data: ...}` (the Proxmox wire format),
 *   errors as Proxmox answers them (`{data: null, errors: {<field>: <message>}}`).
 *
 * Proxmox booleans travel as 0/1 integers, so they are documented as `integer` with `enum [0, 1]`
 * (`x-proxmox-type: boolean` keeps the original type). Proxmox patterns are Perl regular
 * expressions matched against the whole value; they are converted to anchored ECMA-262 patterns,
 * and kept only as `x-proxmox-pattern` when no faithful conversion exists.
 */

import {
  HTTP_METHODS,
  type HttpMethod,
  isOptional,
  type Operation,
  type ParamSchema,
  pathParams,
  type SchemaNode,
  type SchemaTree,
} from "./schema.ts";
import { ecmaPattern } from "./ecma_pattern.ts";

export { ecmaPattern };

export type OpenApiFlavour = "pve" | "api2";

export interface OpenApiOptions {
  flavour: OpenApiFlavour;
  /** Label of the schema version (`9.2`, `9.1.11`, a generated version's label). */
  version: string;
  /** Document title; defaults to a descriptive one. */
  title?: string;
  /** Add the service's own routes (codegen, versions) to the `pve` flavour. Default true. */
  serviceRoutes?: boolean;
}

// deno-lint-ignore no-explicit-any
export type JsonSchema = Record<string, any>;
// deno-lint-ignore no-explicit-any
export type OpenApiDocument = Record<string, any>;

export const SERVER_BASE: Record<OpenApiFlavour, string> = { pve: "/pve", api2: "/api2/json" };

/** Marks operations that are this service's own, not the Proxmox schema's. */
export const SERVICE_EXTENSION = "x-bridgebox-service";

// ---------------------------------------------------------------- names

/** `GET` + `/nodes/{node}/qemu` → `GetNodesNodeQemu`. Stable; used by operationId and TS types. */
export function operationBaseName(method: HttpMethod, path: string): string {
  const words = [method.toLowerCase(), ...path.split(/[^A-Za-z0-9]+/).filter(Boolean)];
  return words.map((w) => w[0].toUpperCase() + w.slice(1)).join("");
}

/** Base names made unique over the tree (a numeric suffix on the rare collision). */
export function operationNames(
  ops: ReadonlyArray<{ method: HttpMethod; path: string }>,
): string[] {
  const seen = new Map<string, number>();
  return ops.map(({ method, path }) => {
    const base = operationBaseName(method, path);
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    return n === 1 ? base : `${base}${n}`;
  });
}

/** Flat list of the tree's operations, in tree order (methods GET, POST, PUT, DELETE). */
export function treeOperations(
  tree: SchemaTree,
): { method: HttpMethod; path: string; operation: Operation; group: string }[] {
  const out: { method: HttpMethod; path: string; operation: Operation; group: string }[] = [];
  const visit = (node: SchemaNode, group: string) => {
    if (node.info) {
      for (const method of HTTP_METHODS) {
        const operation = node.info[method];
        if (operation) out.push({ method, path: node.path, operation, group });
      }
    }
    for (const child of node.children ?? []) visit(child, group);
  };
  for (const top of tree) visit(top, top.path.split("/")[1] || "root");
  return out;
}

// ---------------------------------------------------------------- schema mapping

function truthy(value: unknown): boolean {
  if (typeof value === "string") return ["1", "yes", "on", "true"].includes(value.toLowerCase());
  return Boolean(value);
}

/** Which direction a schema describes: requests accept property strings and 0/1 booleans. */
type Direction = "request" | "response";

/** One Proxmox schema (parameter, property or items) as a JSON Schema 2020-12 object. */
export function mapSchema(s: ParamSchema | undefined, dir: Direction): JsonSchema {
  if (!s || typeof s !== "object") return {};
  const out: JsonSchema = {};
  const type = s.type;
  switch (type) {
    case "boolean":
      out.type = "integer";
      out.enum = [0, 1];
      out["x-proxmox-type"] = "boolean";
      if (s.default !== undefined) out.default = truthy(s.default) ? 1 : 0;
      break;
    case "integer":
    case "number":
      out.type = type;
      if (typeof s.minimum === "number") out.minimum = s.minimum;
      if (typeof s.maximum === "number") out.maximum = s.maximum;
      if (s.default !== undefined && s.default !== "" && !Number.isNaN(Number(s.default))) {
        out.default = Number(s.default);
      }
      if (s.enum) out.enum = s.enum.map(Number).filter((n) => !Number.isNaN(n));
      break;
    case "string":
      out.type = "string";
      if (s.enum) out.enum = s.enum.map(String);
      if (typeof s.minLength === "number") out.minLength = s.minLength;
      if (typeof s.maxLength === "number") out.maxLength = s.maxLength;
      if (typeof s.pattern === "string") {
        const p = ecmaPattern(s.pattern);
        if (p) out.pattern = p;
        else out["x-proxmox-pattern"] = s.pattern;
      }
      if (s.default !== undefined) out.default = String(s.default);
      break;
    case "array":
      out.type = "array";
      out.items = mapSchema(s.items, dir);
      break;
    case "object": {
      out.type = "object";
      Object.assign(out, mapObject(s.properties, s.additionalProperties, dir));
      break;
    }
    case "null":
      out.type = "null";
      break;
    default:
      // "any", missing type or oneOf-only schemas: anything goes (oneOf below narrows it).
      break;
  }
  if (typeof s.format === "string") out.format = s.format;
  else if (s.format && typeof s.format === "object") {
    // A property string `key=value,...`: document its keys; the value itself is a string.
    out["x-proxmox-property-string"] = Object.fromEntries(
      Object.entries(s.format).map(([k, sub]) => [k, mapSchema(sub, dir)]),
    );
  }
  if (s.oneOf?.length) out.oneOf = s.oneOf.map((alt) => mapSchema(alt, dir));
  if (s["type-property"]) out["x-proxmox-type-property"] = s["type-property"];
  if (s["instance-types"]) out["x-proxmox-instance-types"] = s["instance-types"];
  if (s.title) out.title = String(s.title);
  const description = describe(s);
  if (description) out.description = description;
  return out;
}

function describe(s: ParamSchema): string | undefined {
  const parts: string[] = [];
  const text = s.verbose_description ?? s.description;
  if (text) parts.push(String(text));
  if (s.typetext && s.format && typeof s.format === "object") parts.push(`Format: ${s.typetext}`);
  if (s.requires) parts.push(`Requires: ${s.requires}.`);
  return parts.length ? parts.join("\n\n") : undefined;
}

function mapObject(
  properties: Record<string, ParamSchema> | undefined,
  additional: ParamSchema["additionalProperties"],
  dir: Direction,
): JsonSchema {
  const out: JsonSchema = {};
  if (properties) {
    const props: JsonSchema = {};
    const patternProps: JsonSchema = {};
    const required: string[] = [];
    for (const [name, sub] of Object.entries(properties)) {
      const indexed = /^([A-Za-z0-9_-]+)\[n\]$/.exec(name);
      if (indexed) {
        // `net[n]` stands for net0, net1, ...
        patternProps[`^${indexed[1]}\\d+$`] = mapSchema(sub, dir);
        continue;
      }
      props[name] = mapSchema(sub, dir);
      if (!isOptional(sub)) required.push(name);
    }
    out.properties = props;
    if (Object.keys(patternProps).length) out.patternProperties = patternProps;
    if (required.length) out.required = required;
  }
  if (additional !== undefined) {
    if (typeof additional === "object" && additional !== null) {
      out.additionalProperties = mapSchema(additional as ParamSchema, dir);
    } else out.additionalProperties = truthy(additional);
  }
  return out;
}

// ---------------------------------------------------------------- document

const ERROR_PVE: JsonSchema = {
  type: "object",
  required: ["detail"],
  properties: {
    detail: { type: "string" },
    errors: {
      type: "array",
      items: {
        type: "object",
        required: ["field", "message"],
        properties: { field: { type: "string" }, message: { type: "string" } },
      },
    },
  },
};

const ERROR_API2: JsonSchema = {
  type: "object",
  properties: {
    data: { type: "null" },
    message: { type: "string" },
    errors: { type: "object", additionalProperties: { type: "string" } },
  },
};

const TaskStarted: JsonSchema = {
  type: "object",
  required: ["success", "task"],
  properties: {
    success: { type: "boolean" },
    task: { type: "string", description: "UPID of the started task" },
    vmid: { type: "integer", description: "Set when a guest was created" },
  },
};

function errorResponses(flavour: OpenApiFlavour, method: HttpMethod): JsonSchema {
  const ref = { $ref: "#/components/schemas/Error" };
  const r = (description: string) => ({
    description,
    content: { "application/json": { schema: ref } },
  });
  const out: JsonSchema = {
    "400": r("Invalid parameters"),
    "401": r("Missing or invalid authentication"),
    "403": r("Insufficient permissions"),
    "404": r("The resource does not exist"),
    "501": r("Method not implemented"),
  };
  if (flavour === "pve" && method !== "GET") out["400"] = r("Invalid parameters or duplicate id");
  return out;
}

function security(op: Operation, method: HttpMethod): JsonSchema[] | undefined {
  const perms = op.permissions as { user?: string } | undefined;
  if (perms?.user === "world") return [{}];
  const ticket = method === "GET"
    ? { PVEAuthCookie: [] }
    : { PVEAuthCookie: [], CSRFPreventionToken: [] };
  if (op.allowtoken === 0) return [ticket];
  return [ticket, { PVEAPIToken: [] }];
}

function summaryOf(op: Operation, method: HttpMethod, path: string): string {
  const first = (op.description ?? "").split(/\n|(?<=\.)\s/)[0].trim();
  if (!first) return `${method} ${path}`;
  return first.length > 120 ? `${first.slice(0, 117)}...` : first;
}

/**
 * The mock and the proxy page every list with `limit` and `start` (docs/api-behaviour.md,
 * Hypervisor: schema and mock).
 */
export const PAGING: Readonly<Record<"limit" | "start", ParamSchema>> = {
  limit: { type: "integer", minimum: 0, optional: 1, description: "Maximum number of results." },
  start: {
    type: "integer",
    minimum: 0,
    optional: 1,
    default: 0,
    description: "Offset of the first result.",
  },
};

/** A GET whose result is an array: a list, paged by `limit`/`start`. */
export function isListOperation(method: HttpMethod, op: Operation): boolean {
  return method === "GET" && op.returns?.type === "array";
}

function buildOperation(
  flavour: OpenApiFlavour,
  method: HttpMethod,
  path: string,
  op: Operation,
  group: string,
  operationId: string,
): JsonSchema {
  const props = op.parameters?.properties ?? {};
  const inPath = new Set(pathParams(path));
  const parameters: JsonSchema[] = [];
  for (const name of inPath) {
    const schema = props[name];
    parameters.push({
      name,
      in: "path",
      required: true,
      schema: schema ? mapSchema(schema, "request") : { type: "string" },
      ...(schema?.description ? { description: String(schema.description) } : {}),
    });
  }
  const bodyProps: Record<string, ParamSchema> = {};
  for (const [name, schema] of Object.entries(props)) {
    if (!inPath.has(name)) bodyProps[name] = schema;
  }
  const out: JsonSchema = {
    operationId,
    summary: summaryOf(op, method, path),
    tags: [group],
  };
  if (op.description) out.description = String(op.description);
  if (method === "GET" || method === "DELETE") {
    if (isListOperation(method, op)) {
      for (const [name, schema] of Object.entries(PAGING)) bodyProps[name] ??= schema;
    }
    for (const [name, schema] of Object.entries(bodyProps)) {
      const mapped = mapSchema(schema, "request");
      parameters.push({
        name,
        in: "query",
        required: !isOptional(schema),
        schema: mapped,
        ...(mapped.description ? { description: mapped.description } : {}),
        ...(schema.type === "array" ? { style: "form", explode: true } : {}),
      });
    }
  } else if (Object.keys(bodyProps).length) {
    const schema: JsonSchema = {
      type: "object",
      ...mapObject(bodyProps, op.parameters?.additionalProperties, "request"),
    };
    const required = Array.isArray(schema.required) && schema.required.length > 0;
    out.requestBody = {
      required,
      content: {
        "application/json": { schema },
        "application/x-www-form-urlencoded": { schema },
      },
    };
  }
  if (parameters.length) out.parameters = parameters;
  let payload = mapSchema(op.returns, "response");
  if (flavour === "pve" && method !== "GET" && op.returns?.type === "string") {
    // On /pve an action that starts a task answers {success, task}, others the string
    // (docs/api-behaviour.md, Hypervisor).
    payload = { oneOf: [payload, { $ref: "#/components/schemas/TaskStarted" }] };
  }
  const body = flavour === "api2"
    ? {
      type: "object",
      required: ["data"],
      properties: isListOperation(method, op)
        ? { data: payload, total: { type: "integer", description: "Count before paging" } }
        : { data: payload },
    }
    : payload;
  out.responses = {
    "200": { description: "Success", content: { "application/json": { schema: body } } },
    ...errorResponses(flavour, method),
  };
  const sec = security(op, method);
  if (sec) out.security = sec;
  if (op.name) out["x-proxmox-name"] = op.name;
  if (op.permissions) out["x-proxmox-permissions"] = op.permissions;
  if (op.protected) out["x-proxmox-protected"] = 1;
  if (op.proxyto) out["x-proxmox-proxyto"] = op.proxyto;
  return out;
}

function serviceRoutes(): JsonSchema {
  const json = (schema: JsonSchema, description = "Success") => ({
    description,
    content: { "application/json": { schema } },
  });
  const err = (description: string) => json({ $ref: "#/components/schemas/Error" }, description);
  const limited = {
    "429": {
      ...err("Rate limit exceeded for this client address"),
      headers: { "Retry-After": { schema: { type: "integer" }, description: "Seconds to wait" } },
    },
  };
  const versionQuery = {
    name: "version",
    in: "query",
    required: false,
    schema: { type: "string" },
    description: "Schema version label (default: the active one)",
  };
  const mountQuery = {
    name: "mount",
    in: "query",
    required: false,
    schema: { type: "string", enum: ["pve", "api2"], default: "pve" },
    description: "Which mount the document describes: /pve (bare) or /api2/json (wire format)",
  };
  const tag = ["codegen"];
  const mark = { [SERVICE_EXTENSION]: true, security: [] };
  return {
    "/codegen/openapi": {
      get: {
        operationId: "codegenOpenapi",
        summary: "OpenAPI 3.1 document of a schema version (5 per hour per client)",
        tags: tag,
        parameters: [versionQuery, mountQuery],
        responses: { "200": json({ type: "object" }), "404": err("Unknown version"), ...limited },
        ...mark,
      },
    },
    "/codegen/models": {
      get: {
        operationId: "codegenModels",
        summary: "TypeScript types of every operation (5 per hour per client)",
        tags: tag,
        parameters: [versionQuery],
        responses: {
          "200": {
            description: "TypeScript module",
            content: { "application/typescript": { schema: { type: "string" } } },
          },
          "404": err("Unknown version"),
          ...limited,
        },
        ...mark,
      },
    },
    "/codegen/generate": {
      post: {
        operationId: "codegenGenerate",
        summary:
          "Load a schema from a file or URL into a new stored version (1 per hour per client)",
        tags: tag,
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["source"],
                additionalProperties: false,
                properties: {
                  source: { type: "string", description: "Allowed file path or http(s) URL" },
                  version: { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" },
                },
              },
            },
          },
        },
        responses: {
          "201": json({ type: "object" }, "Stored version"),
          "400": err("Invalid request or source not allowed"),
          "409": err("Version label already exists"),
          "502": err("The source could not be loaded"),
          ...limited,
        },
        ...mark,
      },
    },
    "/versions": {
      get: {
        operationId: "listVersions",
        summary: "Schema versions: built-in and generated, with the active one marked",
        tags: ["version"],
        responses: { "200": json({ type: "object" }) },
        ...mark,
      },
    },
  };
}

/** Build the OpenAPI 3.1 document of a schema tree. */
export function buildOpenApi(tree: SchemaTree, options: OpenApiOptions): OpenApiDocument {
  const { flavour, version } = options;
  const ops = treeOperations(tree);
  const ids = operationNames(ops);
  const paths: JsonSchema = {};
  const tags = new Set<string>();
  ops.forEach(({ method, path, operation, group }, i) => {
    tags.add(group);
    const id = ids[i][0].toLowerCase() + ids[i].slice(1);
    (paths[path] ??= {})[method.toLowerCase()] = buildOperation(
      flavour,
      method,
      path,
      operation,
      group,
      id,
    );
  });
  if (flavour === "pve" && options.serviceRoutes !== false) {
    for (const [path, item] of Object.entries(serviceRoutes())) paths[path] = item;
    tags.add("codegen");
  }
  const base = SERVER_BASE[flavour];
  return {
    openapi: "3.1.0",
    info: {
      title: options.title ?? `Proxmox VE API ${version} (${base})`,
      version,
      description: flavour === "api2"
        ? 'Proxmox VE wire format: every response is wrapped in `{"data": ...}`, booleans are 0/1.'
        : "Bare payloads; errors are `{detail, errors:[{field, message}]}`.",
    },
    servers: [{ url: base }],
    tags: [...tags].map((name) => ({ name })),
    paths,
    components: {
      schemas: flavour === "api2" ? { Error: ERROR_API2 } : { Error: ERROR_PVE, TaskStarted },
      securitySchemes: {
        PVEAuthCookie: {
          type: "apiKey",
          in: "cookie",
          name: "PVEAuthCookie",
          description: "Ticket from POST /access/ticket",
        },
        CSRFPreventionToken: {
          type: "apiKey",
          in: "header",
          name: "CSRFPreventionToken",
          description: "CSRF token from POST /access/ticket; required with the ticket on writes",
        },
        PVEAPIToken: {
          type: "apiKey",
          in: "header",
          name: "Authorization",
          description: "`PVEAPIToken=user@realm!tokenid=secret`",
        },
      },
    },
  };
}

/**
 * Per-tree cache of generated documents (and their JSON text). Keyed by the tree object, so a
 * newly loaded schema gets new documents and a dropped one is collected.
 */
export class OpenApiCache {
  #docs = new WeakMap<SchemaTree, Map<string, { doc: OpenApiDocument; json: string }>>();

  get(tree: SchemaTree, options: OpenApiOptions): { doc: OpenApiDocument; json: string } {
    let perTree = this.#docs.get(tree);
    if (!perTree) this.#docs.set(tree, perTree = new Map());
    const key = `${options.flavour}|${options.version}|${options.title ?? ""}|${
      options.serviceRoutes !== false
    }`;
    let hit = perTree.get(key);
    if (!hit) {
      const doc = buildOpenApi(tree, options);
      hit = { doc, json: JSON.stringify(doc) };
      perTree.set(key, hit);
    }
    return hit;
  }
}
