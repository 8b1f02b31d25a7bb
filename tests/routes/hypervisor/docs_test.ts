import assert from "node:assert/strict";
import { countOperations, peer, tooling } from "./_tooling.ts";
import { NEEDS_SCHEMAS } from "../../_schemas.ts";

Deno.test(
  "docs: Scalar and Redoc pages load their scripts from /pve/static",
  NEEDS_SCHEMAS,
  async () => {
    const { app, deps } = await tooling();
    try {
      const scalar = await app.request("/pve/docs");
      assert.equal(scalar.status, 200);
      assert.match(scalar.headers.get("content-type") ?? "", /text\/html/);
      const html = await scalar.text();
      assert.match(html, /\/pve\/static\/scalar\.js/);
      assert.match(html, /\/pve\/openapi\.json/);
      assert.doesNotMatch(html, /cdn\.jsdelivr|unpkg\.com/);

      const redoc = await app.request("/pve/redoc");
      assert.equal(redoc.status, 200);
      const redocHtml = await redoc.text();
      assert.match(redocHtml, /<script src="\/pve\/static\/redoc\.js">/);
      assert.match(redocHtml, /spec-url="\/pve\/openapi\.json"/);

      for (const asset of ["scalar.js", "redoc.js"]) {
        const js = await app.request(`/pve/static/${asset}`);
        assert.equal(js.status, 200);
        assert.match(js.headers.get("content-type") ?? "", /javascript/);
        assert.ok((await js.arrayBuffer()).byteLength > 100_000, `${asset} is the real bundle`);
      }
      const missing = await app.request("/pve/static/nope.js");
      assert.equal(missing.status, 404);
      await missing.body?.cancel();
    } finally {
      deps.kv.close();
    }
  },
);

Deno.test(
  "docs: /pve/openapi.json describes the loaded schema, any mount, any known version",
  NEEDS_SCHEMAS,
  async () => {
    const { app, deps } = await tooling();
    try {
      const res = await app.request("/pve/openapi.json");
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /application\/json/);
      const doc = await res.json();
      assert.equal(doc.openapi, "3.1.0");
      assert.equal(doc.info.version, "9.2");
      assert.equal(doc.servers[0].url, "/pve");
      assert.equal(countOperations(doc), 675);

      const wire = await (await app.request("/pve/openapi.json?mount=api2")).json();
      assert.equal(wire.servers[0].url, "/api2/json");
      assert.equal(
        wire.paths["/version"].get.responses["200"].content["application/json"].schema.properties
          .data
          .type,
        "object",
      );

      // The retained built-in version is read from the schema directory on demand.
      const old = await (await app.request("/pve/openapi.json?version=9.1.11")).json();
      assert.equal(old.info.version, "9.1.11");
      assert.equal(countOperations(old), 649);

      const unknown = await app.request("/pve/openapi.json?version=7.0");
      assert.equal(unknown.status, 404);
      assert.match((await unknown.json()).detail, /Unknown schema version 7\.0/);
      const badMount = await app.request("/pve/openapi.json?mount=xml");
      assert.equal(badMount.status, 400);
      assert.equal((await badMount.json()).errors[0].field, "mount");

      // The docs document is not rate limited (the pages read it on every load).
      for (let i = 0; i < 8; i++) {
        const r = await app.request("/pve/openapi.json", {}, peer("192.0.2.9"));
        assert.equal(r.status, 200);
        await r.body?.cancel();
      }
    } finally {
      deps.kv.close();
    }
  },
);

Deno.test("docs: served by the whole app (mock mode, built-in catalogue) with no internet", async () => {
  const { createApp } = await import("../../../app.ts");
  const { testDeps } = await import("../../_helpers.ts");
  const deps = await testDeps({ SERVICE_SURFACES: "hypervisor" });
  try {
    const app = await createApp(deps);
    const page = await app.request("/pve/docs");
    assert.equal(page.status, 200);
    assert.match(await page.text(), /\/pve\/static\/scalar\.js/);
    const js = await app.request("/pve/static/redoc.js");
    assert.equal(js.status, 200);
    await js.body?.cancel();
    const doc = await (await app.request("/pve/openapi.json")).json();
    assert.equal(doc.openapi, "3.1.0");
    for (const path of ["/version", "/nodes", "/nodes/{node}/qemu", "/cluster/resources"]) {
      assert.ok(doc.paths[path]?.get, `catalogue documents GET ${path}`);
    }
    const anonymous = await app.request("/pve/versions");
    assert.equal(anonymous.status, 401, "versions need a login");
    await anonymous.body?.cancel();
    const login = await app.request("/api2/json/access/ticket", {
      method: "POST",
      body: new URLSearchParams({
        username: deps.config.hypervisor.mockUser,
        password: deps.config.hypervisor.mockPassword,
      }),
    });
    const { data: ticket } = await login.json();
    const versions = await (await app.request("/pve/versions", {
      headers: { cookie: `PVEAuthCookie=${encodeURIComponent(ticket.ticket)}` },
    })).json();
    assert.equal(versions.versions[0].source, "built-in catalogue");
  } finally {
    deps.kv.close();
  }
});
