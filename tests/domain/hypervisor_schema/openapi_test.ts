import assert from "node:assert/strict";
import { loadSchema, type SchemaTree } from "../../../domain/hypervisor_schema/schema.ts";
import {
  buildOpenApi,
  ecmaPattern,
  type JsonSchema,
  OpenApiCache,
  type OpenApiDocument,
  SERVICE_EXTENSION,
} from "../../../domain/hypervisor_schema/openapi.ts";

import { NEEDS_SCHEMAS, SCHEMA_DIR as SHARED } from "../../_schemas.ts";
const FILES = [
  { file: "pve-9.2.json", version: "9.2", paths: 444, operations: 675 },
  { file: "pve-9.1.11.json", version: "9.1.11", paths: 431, operations: 649 },
];

const trees = new Map<string, SchemaTree>();
async function tree(file: string): Promise<SchemaTree> {
  let t = trees.get(file);
  if (!t) trees.set(file, t = await loadSchema(new URL(file, SHARED).pathname));
  return t;
}

const METHODS = ["get", "post", "put", "delete"];

function schemaOperations(doc: OpenApiDocument): [string, string, JsonSchema][] {
  const out: [string, string, JsonSchema][] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, JsonSchema>)) {
    for (const m of METHODS) {
      if (item[m] && !item[m][SERVICE_EXTENSION]) out.push([path, m, item[m]]);
    }
  }
  return out;
}

/** Structural checks of an OpenAPI 3.1 document (the parts a validator would reject). */
function assertValidOpenApi(doc: OpenApiDocument): void {
  assert.equal(doc.openapi, "3.1.0");
  assert.ok(doc.info.title && doc.info.version);
  assert.ok(Array.isArray(doc.servers) && doc.servers[0].url.startsWith("/"));
  const ids = new Set<string>();
  const tagNames = new Set((doc.tags as { name: string }[]).map((t) => t.name));
  const schemes = doc.components.securitySchemes;
  for (const [path, item] of Object.entries(doc.paths as Record<string, JsonSchema>)) {
    assert.ok(path.startsWith("/"), path);
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
    for (const m of Object.keys(item)) {
      assert.ok(METHODS.includes(m), `${path}: method ${m}`);
      const op = item[m];
      assert.ok(!ids.has(op.operationId), `duplicate operationId ${op.operationId}`);
      ids.add(op.operationId);
      for (const t of op.tags) assert.ok(tagNames.has(t), `undeclared tag ${t}`);
      const params = (op.parameters ?? []) as JsonSchema[];
      const inPath = params.filter((p) => p.in === "path").map((p) => p.name).sort();
      assert.deepEqual(inPath, templated, `${m} ${path}: path parameters`);
      for (const p of params) {
        assert.ok(["path", "query"].includes(p.in));
        if (p.in === "path") assert.equal(p.required, true);
        assert.equal(typeof p.schema, "object");
      }
      const seen = new Set(params.map((p) => `${p.in}:${p.name}`));
      assert.equal(seen.size, params.length, `${m} ${path}: duplicate parameter`);
      if (op.requestBody) {
        assert.ok(m === "post" || m === "put");
        assert.ok(op.requestBody.content["application/json"].schema);
        if (!op[SERVICE_EXTENSION]) {
          assert.ok(op.requestBody.content["application/x-www-form-urlencoded"].schema);
        }
      }
      assert.ok(op.responses["200"] || op.responses["201"], `${m} ${path}: no success response`);
      for (const req of op.security ?? []) {
        for (const name of Object.keys(req)) assert.ok(schemes[name], `unknown scheme ${name}`);
      }
    }
  }
  // Every pattern compiles as ECMA-262 with the u flag; every $ref resolves; required ⊆ properties.
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== "object") return;
    const o = node as JsonSchema;
    if (typeof o.pattern === "string") new RegExp(o.pattern, "u");
    if (typeof o.$ref === "string") {
      const target = o.$ref.replace("#/", "").split("/").reduce(
        (at: JsonSchema | undefined, k: string) => at?.[k],
        doc,
      );
      assert.ok(target, `dangling ${o.$ref}`);
    }
    if (Array.isArray(o.required) && o.properties && typeof o.type === "string") {
      for (const r of o.required) assert.ok(r in o.properties, `required ${r} not a property`);
    }
    Object.values(o).forEach(walk);
  };
  walk(doc);
}

for (const { file, version, paths, operations } of FILES) {
  Deno.test(
    `openapi: ${file} has every operation (${operations}) in both flavours`,
    NEEDS_SCHEMAS,
    async () => {
      const t = await tree(file);
      for (const flavour of ["pve", "api2"] as const) {
        const doc = buildOpenApi(t, { flavour, version });
        const ops = schemaOperations(doc);
        assert.equal(ops.length, operations);
        assert.equal(new Set(ops.map(([p]) => p)).size, paths);
        assert.equal(doc.info.version, version);
        assert.equal(doc.servers[0].url, flavour === "pve" ? "/pve" : "/api2/json");
        assertValidOpenApi(doc);
        // The document survives a JSON round trip unchanged (no undefined, functions, cycles).
        assert.deepEqual(JSON.parse(JSON.stringify(doc)), doc);
      }
    },
  );
}

Deno.test(
  "openapi: parameters, bodies, responses and security map from the schema",
  NEEDS_SCHEMAS,
  async () => {
    const t = await tree("pve-9.2.json");
    const pve = buildOpenApi(t, { flavour: "pve", version: "9.2" });
    const api2 = buildOpenApi(t, { flavour: "api2", version: "9.2" });

    // GET list: path parameter, boolean as 0/1 query parameter, paging added.
    const list = pve.paths["/nodes/{node}/qemu"].get;
    assert.equal(list.operationId, "getNodesNodeQemu");
    assert.deepEqual(list.tags, ["nodes"]);
    const byName = Object.fromEntries(list.parameters.map((p: JsonSchema) => [p.name, p]));
    assert.equal(byName.node.in, "path");
    assert.equal(byName.node.schema.type, "string");
    assert.equal(byName.full.in, "query");
    assert.equal(byName.full.required, false);
    assert.deepEqual(byName.full.schema.enum, [0, 1]);
    assert.equal(byName.full.schema.type, "integer");
    assert.equal(byName.limit.schema.type, "integer");
    assert.equal(byName.start.schema.default, 0);
    // Bare array on /pve, {data: array} on /api2/json.
    const bare = list.responses["200"].content["application/json"].schema;
    assert.equal(bare.type, "array");
    assert.ok(bare.items.properties.vmid);
    const wrapped =
      api2.paths["/nodes/{node}/qemu"].get.responses["200"].content["application/json"]
        .schema;
    assert.deepEqual(wrapped.required, ["data"]);
    assert.equal(wrapped.properties.data.type, "array");
    assert.equal(wrapped.properties.total.type, "integer");

    // POST create: integer vmid with bounds, required list, net[n] as a pattern property.
    const create = pve.paths["/nodes/{node}/qemu"].post;
    const body = create.requestBody.content["application/x-www-form-urlencoded"].schema;
    assert.deepEqual(create.requestBody.content["application/json"].schema, body);
    assert.equal(create.requestBody.required, true);
    assert.ok(body.required.includes("vmid"));
    assert.ok(!("node" in body.properties), "path parameters stay out of the body");
    assert.equal(body.properties.vmid.type, "integer");
    assert.equal(body.properties.vmid.minimum, 100);
    assert.equal(body.properties.vmid.format, "pve-vmid");
    assert.ok(body.patternProperties["^net\\d+$"]);
    assert.equal(body.additionalProperties, false);
    assert.ok(body.properties.ostype.enum.includes("l26"));
    assert.equal(create.parameters.find((p: JsonSchema) => p.name === "node").in, "path");
    // Writes need the CSRF header with the ticket; tokens are accepted where allowtoken is 1.
    assert.deepEqual(create.security, [
      { PVEAuthCookie: [], CSRFPreventionToken: [] },
      { PVEAPIToken: [] },
    ]);
    assert.deepEqual(list.security, [{ PVEAuthCookie: [] }, { PVEAPIToken: [] }]);
    // Login is open to the world.
    assert.deepEqual(pve.paths["/access/ticket"].post.security, [{}]);
    assert.ok(pve.components.securitySchemes.PVEAuthCookie.in === "cookie");
    assert.equal(pve.components.securitySchemes.CSRFPreventionToken.name, "CSRFPreventionToken");
    assert.equal(pve.components.securitySchemes.PVEAPIToken.name, "Authorization");

    // On /pve a task action answers {success, task}; on /api2/json the UPID string.
    const start = "/nodes/{node}/qemu/{vmid}/status/start";
    const startPve = pve.paths[start].post.responses["200"].content["application/json"].schema;
    assert.deepEqual(startPve.oneOf[1], { $ref: "#/components/schemas/TaskStarted" });
    assert.deepEqual(pve.components.schemas.TaskStarted.required, ["success", "task"]);
    const startWire = api2.paths[start].post.responses["200"].content["application/json"].schema;
    assert.equal(startWire.properties.data.type, "string");

    // /version returns an object with required fields.
    const ver = pve.paths["/version"].get.responses["200"].content["application/json"].schema;
    assert.equal(ver.type, "object");
    assert.ok(ver.required.includes("version") && !ver.required.includes("console"));
    assert.deepEqual(
      new Set(pve.tags.map((x: JsonSchema) => x.name)),
      new Set([
        "cluster",
        "nodes",
        "storage",
        "access",
        "pools",
        "version",
        "codegen",
      ]),
    );

    // The /pve flavour documents the service's own routes; /api2/json does not.
    assert.ok(pve.paths["/codegen/generate"].post[SERVICE_EXTENSION]);
    assert.ok(pve.paths["/versions"].get);
    assert.equal(api2.paths["/codegen/generate"], undefined);
    assert.equal(pve.components.schemas.Error.properties.errors.type, "array");
    assert.equal(api2.components.schemas.Error.properties.errors.type, "object");
  },
);

Deno.test("openapi: Perl patterns become anchored ECMA-262 patterns", () => {
  assert.equal(ecmaPattern("(?^:[a-z]+)"), "^(?:(?:[a-z]+))$");
  const quantified = ecmaPattern("[A-Za-z0-9\\-_\\s]{,16}")!;
  assert.ok(new RegExp(quantified, "u").test("abc-_ x"));
  assert.ok(!new RegExp(quantified, "u").test("x".repeat(17)));
  const atomic = ecmaPattern("(?^u:^((?>[+-]?[\\w\\-\\._=]+,?)+)$)")!;
  assert.ok(new RegExp(atomic, "u").test("+a=b,-c"));
  assert.ok(!new RegExp(atomic, "u").test("a b"));
  // Anchoring: Proxmox matches the whole value.
  const anchored = ecmaPattern("\\d+[MG]?")!;
  assert.ok(new RegExp(anchored, "u").test("12M"));
  assert.ok(!new RegExp(anchored, "u").test("x12M"));
});

Deno.test("openapi: the cache builds once per tree and flavour", NEEDS_SCHEMAS, async () => {
  const t = await tree("pve-9.1.11.json");
  const cache = new OpenApiCache();
  const a = cache.get(t, { flavour: "pve", version: "9.1.11" });
  const b = cache.get(t, { flavour: "pve", version: "9.1.11" });
  const c = cache.get(t, { flavour: "api2", version: "9.1.11" });
  assert.equal(a, b);
  assert.notEqual(a, c);
  assert.deepEqual(JSON.parse(a.json), a.doc);
});
