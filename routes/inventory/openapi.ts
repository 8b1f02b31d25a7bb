/** OpenAPI 3.1 document of the inventory surface, generated from the model definitions. */
import type { ModelEngine } from "../../domain/netbox/engine.ts";
import type { FieldDef, ModelDef } from "../../domain/netbox/types.ts";
import { API_VERSION } from "./context.ts";

type Schema = Record<string, unknown>;

function pascal(def: ModelDef): string {
  const base = `${def.app}_${def.model}`;
  return base.split(/[_.]/).map((s) => s.charAt(0).toUpperCase() + s.slice(1)).join("");
}

const NESTED: Schema = {
  type: "object",
  properties: {
    id: { type: "integer" },
    url: { type: "string", format: "uri" },
    display: { type: "string" },
  },
};

function readSchema(f: FieldDef): Schema {
  const nullable = (s: Schema): Schema => f.nullable ? { anyOf: [s, { type: "null" }] } : s;
  switch (f.type) {
    case "string":
      return nullable({ type: "string", ...(f.maxLength ? { maxLength: f.maxLength } : {}) });
    case "int":
      return nullable({ type: "integer" });
    case "float":
      return nullable({ type: "number" });
    case "bool":
      return { type: "boolean" };
    case "datetime":
      return nullable({ type: "string", format: "date-time" });
    case "date":
      return nullable({ type: "string", format: "date" });
    case "choice":
      if (f.contentType) {
        return nullable({ type: "string", enum: f.choices?.map(([v]) => v) });
      }
      return nullable({
        type: "object",
        properties: {
          value: { type: "string", enum: f.choices?.map(([v]) => v) },
          label: { type: "string" },
        },
      });
    case "fk":
    case "gfk":
      return f.nullable || f.type === "gfk" ? { anyOf: [NESTED, { type: "null" }] } : NESTED;
    case "m2m":
      return { type: "array", items: NESTED };
    case "list":
      return { type: "array", items: { type: f.of === "int" ? "integer" : "string" } };
    default:
      return {};
  }
}

function writeSchema(f: FieldDef): Schema {
  const nullable = (s: Schema): Schema => f.nullable ? { anyOf: [s, { type: "null" }] } : s;
  switch (f.type) {
    case "choice":
      return nullable({ type: "string", enum: f.choices?.map(([v]) => v) });
    case "fk":
      return nullable({
        oneOf: [{ type: "integer", description: "id" }, {
          type: "object",
          description: "attributes to look up",
        }],
      });
    case "m2m":
      return { type: "array", items: { oneOf: [{ type: "integer" }, { type: "object" }] } };
    default:
      return readSchema(f);
  }
}

function listParams(def: ModelDef): Schema[] {
  const params: Schema[] = [
    { name: "limit", in: "query", schema: { type: "integer", default: 50, maximum: 1000 } },
    { name: "offset", in: "query", schema: { type: "integer" } },
    { name: "q", in: "query", schema: { type: "string" } },
    { name: "ordering", in: "query", schema: { type: "string" } },
    { name: "brief", in: "query", schema: { type: "boolean" } },
    { name: "fields", in: "query", schema: { type: "string" } },
    { name: "omit", in: "query", schema: { type: "string" } },
    {
      name: "id",
      in: "query",
      schema: { type: "array", items: { type: "integer" } },
      explode: true,
    },
  ];
  for (const [name, f] of Object.entries(def.fields)) {
    if (f.writeOnly || f.hidden || f.compute || f.filter === false || f.type === "gfk") continue;
    if (f.type === "fk" || f.type === "m2m") {
      params.push({
        name: `${name}_id`,
        in: "query",
        schema: { type: "array", items: { type: "integer" } },
      });
    }
    params.push({ name, in: "query", schema: { type: "array", items: { type: "string" } } });
  }
  if (def.tags !== false) {
    params.push({ name: "tag", in: "query", schema: { type: "array", items: { type: "string" } } });
  }
  for (const name of Object.keys(def.filters ?? {})) {
    // A field's own filter a model answers its way (the change log's request_id) is listed once.
    if (params.some((p) => p.name === name)) continue;
    params.push({ name, in: "query", schema: { type: "array", items: { type: "string" } } });
  }
  for (const name of Object.keys(def.through ?? {})) {
    params.push({
      name: `${name}_id`,
      in: "query",
      schema: { type: "array", items: { type: "integer" } },
    });
    params.push({ name, in: "query", schema: { type: "array", items: { type: "string" } } });
  }
  return params;
}

export function buildOpenApi(engine: ModelEngine): Schema {
  const paths: Record<string, Schema> = {};
  const schemas: Record<string, Schema> = {};
  const err = {
    description: "Error",
    content: { "application/json": { schema: { type: "object" } } },
  };
  for (const def of engine.models()) {
    const name = pascal(def);
    const props: Record<string, Schema> = {
      id: { type: "integer", readOnly: true },
      url: { type: "string", format: "uri", readOnly: true },
      display: { type: "string", readOnly: true },
    };
    const writeProps: Record<string, Schema> = {};
    const required: string[] = [];
    for (const [field, f] of Object.entries(def.fields)) {
      if (f.hidden) continue;
      if (!f.writeOnly) props[field] = readSchema(f);
      if (!f.readOnly && !f.compute && f.type !== "gfk") {
        writeProps[field] = writeSchema(f);
        if (f.required && f.default === undefined) required.push(field);
      }
    }
    if (def.tags !== false) {
      props.tags = { type: "array", items: NESTED };
      writeProps.tags = {
        type: "array",
        items: { oneOf: [{ type: "integer" }, { type: "object" }] },
      };
    }
    if (def.customFields !== false) {
      props.custom_fields = { type: "object" };
      writeProps.custom_fields = { type: "object" };
    }
    props.created = { type: ["string", "null"], format: "date-time", readOnly: true };
    props.last_updated = { type: ["string", "null"], format: "date-time", readOnly: true };
    schemas[name] = { type: "object", properties: props };
    schemas[`Writable${name}Request`] = { type: "object", properties: writeProps, required };
    schemas[`Paginated${name}List`] = {
      type: "object",
      properties: {
        count: { type: "integer" },
        next: { type: ["string", "null"], format: "uri" },
        previous: { type: ["string", "null"], format: "uri" },
        results: { type: "array", items: { $ref: `#/components/schemas/${name}` } },
      },
    };
    const ref = { $ref: `#/components/schemas/${name}` };
    const body = {
      required: true,
      content: {
        "application/json": { schema: { $ref: `#/components/schemas/Writable${name}Request` } },
      },
    };
    const tag = def.path.split("/").slice(0, def.path.startsWith("plugins/") ? 2 : 1).join("/");
    const ok = (schema: Schema, description = "OK") => ({
      description,
      content: { "application/json": { schema } },
    });
    const listOps: Schema = {
      get: {
        tags: [tag],
        operationId: `${def.app}_${def.model}_list`,
        parameters: listParams(def),
        responses: {
          200: ok({ $ref: `#/components/schemas/Paginated${name}List` }),
          400: err,
          403: err,
        },
      },
    };
    const detailOps: Schema = {
      get: {
        tags: [tag],
        operationId: `${def.app}_${def.model}_retrieve`,
        responses: { 200: ok(ref), 403: err, 404: err },
      },
    };
    if (!def.readOnly) {
      Object.assign(listOps, {
        post: {
          tags: [tag],
          operationId: `${def.app}_${def.model}_create`,
          requestBody: body,
          responses: { 201: ok(ref, "Created"), 400: err, 403: err },
        },
        put: {
          tags: [tag],
          operationId: `${def.app}_${def.model}_bulk_update`,
          responses: { 200: ok({ type: "array", items: ref }), 400: err },
        },
        patch: {
          tags: [tag],
          operationId: `${def.app}_${def.model}_bulk_partial_update`,
          responses: { 200: ok({ type: "array", items: ref }), 400: err },
        },
        delete: {
          tags: [tag],
          operationId: `${def.app}_${def.model}_bulk_destroy`,
          responses: { 204: { description: "Deleted" }, 409: err },
        },
      });
      Object.assign(detailOps, {
        put: {
          tags: [tag],
          operationId: `${def.app}_${def.model}_update`,
          requestBody: body,
          responses: { 200: ok(ref), 400: err, 404: err },
        },
        patch: {
          tags: [tag],
          operationId: `${def.app}_${def.model}_partial_update`,
          requestBody: body,
          responses: { 200: ok(ref), 400: err, 404: err },
        },
        delete: {
          tags: [tag],
          operationId: `${def.app}_${def.model}_destroy`,
          responses: { 204: { description: "Deleted" }, 404: err, 409: err },
        },
      });
    }
    // Summaries name what each operation does, so the docs' sidebar reads as a list of actions.
    const verbose = def.verbose;
    const summaries: Record<string, string> = {
      list: `List ${verbose} objects`,
      retrieve: `Read a ${verbose}`,
      create: `Create a ${verbose} (or several, from a list)`,
      bulk_update: `Replace several ${verbose} objects`,
      bulk_partial_update: `Update several ${verbose} objects`,
      bulk_destroy: `Delete several ${verbose} objects`,
      update: `Replace a ${verbose}`,
      partial_update: `Update a ${verbose}`,
      destroy: `Delete a ${verbose}`,
    };
    for (const op of [...Object.values(listOps), ...Object.values(detailOps)] as Schema[]) {
      const suffix = String(op.operationId).slice(`${def.app}_${def.model}_`.length);
      op.summary = summaries[suffix];
    }
    paths[`/api/${def.path}`] = listOps;
    paths[`/api/${def.path}{id}/`] = {
      parameters: [{ name: "id", in: "path", required: true, schema: { type: "integer" } }],
      ...detailOps,
    };
  }
  paths["/api/status/"] = {
    get: {
      tags: ["status"],
      operationId: "status_retrieve",
      responses: { 200: { description: "Status" } },
    },
  };
  return {
    openapi: "3.1.0",
    info: {
      title: "Bridgebox inventory API",
      version: API_VERSION,
      description:
        "NetBox-compatible REST API (core objects) and the inventory plugin API under /api/plugins/service/. " +
        "Authenticate with `Authorization: Token <token>` (v1) or `Authorization: Bearer nbt_<key>.<secret>` (v2).",
    },
    components: {
      securitySchemes: {
        tokenAuth: {
          type: "apiKey",
          in: "header",
          name: "Authorization",
          description: "`Token <token>` or `Bearer nbt_<key>.<secret>`",
        },
      },
      schemas,
    },
    security: [{ tokenAuth: [] }],
    paths,
  };
}
