/** Schema loading (JSON, `const apiSchema = [...]`, file, URL), indexing and the catalogue. */
import assert from "node:assert/strict";
import {
  indexSchema,
  loadSchema,
  parseSchemaText,
  SchemaLoadError,
} from "../../../domain/hypervisor_schema/schema.ts";
import { builtinCatalogue } from "../../../domain/hypervisor_schema/catalogue.ts";
import { call, harness, login, SCHEMA_92, sharedSchema } from "../../routes/hypervisor/_hv.ts";
import { NEEDS_SCHEMAS, SCHEMA_DIR } from "../../_schemas.ts";

Deno.test(
  "schema: both shared files load and index to the documented counts",
  NEEDS_SCHEMAS,
  async () => {
    for (
      const [name, paths, ops, nodes] of [["pve-9.2.json", 444, 675, 449], [
        "pve-9.1.11.json",
        431,
        649,
        435,
      ]] as const
    ) {
      const tree = await loadSchema(new URL(name, SCHEMA_DIR).pathname);
      const index = indexSchema(tree);
      assert.equal(index.pathCount, paths, name);
      assert.equal(index.operations.length, ops, name);
      assert.equal(index.nodeCount, nodes, name);
    }
  },
);

Deno.test(
  "schema: the JS form `const apiSchema = [...];` loads from a file and from a URL",
  NEEDS_SCHEMAS,
  async () => {
    const text = await Deno.readTextFile(SCHEMA_92);
    const js = `// generated\nconst apiSchema = ${text};\n\nlet method2cmd = { GET: 'get' };\n`;
    const file = await Deno.makeTempFile({ suffix: ".js" });
    try {
      await Deno.writeTextFile(file, js);
      assert.equal(indexSchema(await loadSchema(file)).operations.length, 675);
      assert.equal(indexSchema(await loadSchema(`file://${file}`)).operations.length, 675);
    } finally {
      await Deno.remove(file);
    }
    const seen: string[] = [];
    const fakeFetch = ((input: string | URL | Request) => {
      seen.push(String(input));
      return Promise.resolve(
        new Response(js, { headers: { "content-type": "application/javascript" } }),
      );
    }) as typeof fetch;
    const tree = await loadSchema(
      "https://pve.example.invalid:8006/pve-docs/api-viewer/apidata.js",
      fakeFetch,
    );
    assert.equal(indexSchema(tree).operations.length, 675);
    assert.deepEqual(seen, ["https://pve.example.invalid:8006/pve-docs/api-viewer/apidata.js"]);
    // A string containing brackets inside the array does not confuse the JS-form parser.
    const tricky = parseSchemaText('const apiSchema = [{"path":"/a","text":"a ] }","leaf":1}];');
    assert.equal(tricky[0].text, "a ] }");
  },
);

Deno.test("schema: bad sources fail with a clear SchemaLoadError", async () => {
  assert.throws(() => parseSchemaText("hello"), SchemaLoadError);
  assert.throws(() => parseSchemaText("{}"), /expected a JSON array/);
  assert.throws(() => parseSchemaText("const apiSchema = {};"), /top level is not an array/);
  assert.throws(() => parseSchemaText('[{"text":"x"}]'), /no string `path`/);
  assert.throws(() => parseSchemaText("const apiSchema = [1, 2"), /unterminated/);
  await assert.rejects(() => loadSchema("/nonexistent/apidata.js"), SchemaLoadError);
  const notFound = (() => Promise.resolve(new Response("nope", { status: 404 }))) as typeof fetch;
  await assert.rejects(() => loadSchema("http://x.invalid/a.js", notFound), /HTTP 404/);
});

Deno.test(
  "catalogue: a subset of the real 9.2 API, covering the documented endpoints and every sync read",
  NEEDS_SCHEMAS,
  async () => {
    const catalogue = indexSchema(builtinCatalogue());
    const real = indexSchema(await sharedSchema(SCHEMA_92));
    const realOps = new Set(real.operations.map((o) => `${o.method} ${o.path}`));
    for (const o of catalogue.operations) {
      assert.ok(
        realOps.has(`${o.method} ${o.path}`),
        `${o.method} ${o.path} is not a Proxmox operation`,
      );
    }
    const ops = new Set(catalogue.operations.map((o) => `${o.method} ${o.path}`));
    for (
      const op of [
        "GET /version",
        "POST /access/ticket",
        "GET /cluster/status",
        "GET /nodes",
        "GET /nodes/{node}/qemu",
        "POST /nodes/{node}/qemu",
        "GET /nodes/{node}/qemu/{vmid}/config",
        "POST /nodes/{node}/qemu/{vmid}/status/start",
        "POST /nodes/{node}/qemu/{vmid}/status/stop",
        "POST /nodes/{node}/qemu/{vmid}/status/reboot",
        "POST /nodes/{node}/qemu/{vmid}/status/shutdown",
        "GET /nodes/{node}/lxc",
        "GET /nodes/{node}/storage",
        "GET /nodes/{node}/tasks",
        "GET /nodes/{node}/tasks/{upid}/status",
        "GET /nodes/{node}/tasks/{upid}/log",
        "GET /storage",
        "GET /cluster/resources",
        "GET /nodes/{node}/lxc/{vmid}/config",
        "GET /nodes/{node}/storage/{storage}/content",
        "GET /nodes/{node}/qemu/{vmid}/snapshot",
        "GET /nodes/{node}/lxc/{vmid}/snapshot",
        "GET /nodes/{node}/network",
        "GET /cluster/sdn/zones",
        "GET /cluster/sdn/vnets",
        "GET /cluster/sdn/vnets/{vnet}/subnets",
        "GET /cluster/replication",
        "GET /cluster/backup",
        "GET /access/users",
        "POST /access/users/{userid}/token/{tokenid}",
        "GET /pools",
        "POST /nodes/{node}/qemu/{vmid}/migrate",
        "POST /nodes/{node}/qemu/{vmid}/clone",
        "POST /nodes/{node}/vzdump",
        "POST /nodes/{node}/qemu/{vmid}/snapshot",
        "DELETE /nodes/{node}/qemu/{vmid}/snapshot/{snapname}",
        "POST /nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback",
        "GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces",
      ]
    ) assert.ok(ops.has(op), `catalogue lacks ${op}`);
  },
);

Deno.test("catalogue: the default app (no HYPERVISOR_SCHEMA) serves every sync stage with data", async () => {
  const h = await harness({}, { schemaUrl: null });
  try {
    assert.equal(h.engine.operationCount, indexSchema(builtinCatalogue()).operations.length);
    const s = await login(h);
    const ct = [...h.engine.state.guests.values()].find((g) => g.type === "lxc")!;
    const agentVm = [...h.engine.state.guests.values()].find((g) =>
      g.type === "qemu" && g.status === "running"
    )!;
    for (
      const path of [
        "/cluster/status",
        "/nodes",
        "/storage",
        "/nodes/pve1/storage",
        "/cluster/resources?type=vm",
        "/nodes/pve1/qemu/100/config",
        `/nodes/${ct.node}/lxc/${ct.vmid}/config`,
        "/nodes/pve1/tasks",
        "/nodes/pve1/storage/local/content?content=backup",
        "/nodes/pve1/qemu/100/snapshot",
        "/nodes/pve1/network",
        "/cluster/sdn/zones",
        "/cluster/sdn/vnets",
        "/cluster/sdn/vnets/vnet10/subnets",
        "/cluster/replication",
        "/cluster/backup",
        `/nodes/${agentVm.node}/qemu/${agentVm.vmid}/agent/network-get-interfaces`,
        "/pools",
        "/version",
      ]
    ) {
      const res = await call(h, s, "GET", `/api2/json${path}`);
      assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
      const data = res.body.data;
      assert.ok(Array.isArray(data) ? data.length > 0 : data && typeof data === "object", path);
    }
    const agent = await call(
      h,
      s,
      "GET",
      `/pve/nodes/${agentVm.node}/qemu/${agentVm.vmid}/agent/network-get-interfaces`,
    );
    const eth0 = agent.body.result.find((i: { name: string }) => i.name === "eth0");
    assert.equal(eth0["ip-addresses"][0]["ip-address-type"], "ipv4");
    // Operations outside the catalogue are 501 until a full schema is loaded.
    assert.equal((await call(h, s, "GET", "/api2/json/nodes/pve1/disks/list")).status, 501);
  } finally {
    h.close();
  }
});

Deno.test(
  "catalogue: HYPERVISOR_SCHEMA pointing at a JS-form file is what the app routes",
  NEEDS_SCHEMAS,
  async () => {
    const file = await Deno.makeTempFile({ suffix: ".js" });
    try {
      await Deno.writeTextFile(file, `const apiSchema = ${await Deno.readTextFile(SCHEMA_92)};`);
      const h = await harness({ HYPERVISOR_SCHEMA: file }, { schemaUrl: null });
      try {
        assert.equal(h.engine.operationCount, 675);
        const s = await login(h);
        assert.equal((await call(h, s, "GET", "/api2/json/nodes/pve1/disks/list")).status, 200);
      } finally {
        h.close();
      }
    } finally {
      await Deno.remove(file);
    }
  },
);
