/**
 * The backend copies push-on-save keeps: a rename renames the copy, a delete removes it (even under
 * an older name), and verify_ssl=false reaches self-signed backends and hypervisors.
 */
import assert from "node:assert/strict";
import { createBackendApp } from "../../../routes/backend/mod.ts";
import { testDeps } from "../../_helpers.ts";
import { HAS_OPENSSL, selfSigned } from "../../_tls.ts";
import { addBackendEndpoint, harness, P, startBackend } from "./_harness.ts";

Deno.test("push: renaming a hypervisor endpoint renames its backend copy, never a second copy", async () => {
  const backend = await startBackend();
  const h = await harness();
  try {
    const be = await addBackendEndpoint(h, backend.port);
    const ep = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
      password: "x",
    });
    assert.equal(ep.body.last_push.ok, true, JSON.stringify(ep.body.last_push));
    const renamed = await h.call("PATCH", `${P}endpoints/hypervisor/${ep.body.id}/`, {
      name: "pve-lab",
    });
    assert.equal(renamed.body.last_push.ok, true, JSON.stringify(renamed.body.last_push));
    const r = await backend.request("/hypervisor/endpoints", {
      headers: { "x-service-api-key": be.token },
    });
    const copies = await r.json();
    assert.deepEqual(copies.map((c: { name: string }) => c.name), [
      `pve-lab (inv:${ep.body.id})`,
    ]);
  } finally {
    await h.close();
    await backend.close();
  }
});

Deno.test("push: deleting a hypervisor endpoint removes its backend copy even under an older name", async () => {
  const backend = await startBackend();
  const h = await harness();
  try {
    const be = await addBackendEndpoint(h, backend.port);
    const ep = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
      password: "x",
    });
    assert.equal(ep.body.last_push.ok, true);
    // Renamed while disabled: never pushed, so the copy keeps the old name.
    await h.call("PATCH", `${P}endpoints/hypervisor/${ep.body.id}/`, {
      name: "pve-new",
      enabled: false,
    });
    const copies = async () =>
      await (await backend.request("/hypervisor/endpoints", {
        headers: { "x-service-api-key": be.token },
      })).json();
    assert.equal((await copies()).length, 1);
    assert.equal((await h.call("DELETE", `${P}endpoints/hypervisor/${ep.body.id}/`)).status, 204);
    assert.deepEqual(await copies(), []);
  } finally {
    await h.close();
    await backend.close();
  }
});

const tls = HAS_OPENSSL ? await selfSigned("localhost") : null;

Deno.test({
  name: "keepalive: verify_ssl=false really accepts a self-signed hypervisor certificate",
  ignore: !HAS_OPENSSL,
  async fn() {
    const server = Deno.serve(
      { port: 0, hostname: "127.0.0.1", cert: tls!.cert, key: tls!.key, onListen() {} },
      (req) => {
        const path = new URL(req.url).pathname;
        if (path === "/api2/json/version") {
          return Response.json({ data: { version: "9.2", release: "9.2", repoid: "abc" } });
        }
        return new Response("nope", { status: 404 });
      },
    );
    const h = await harness();
    try {
      const create = (name: string, verify: boolean) =>
        h.call("POST", P + "endpoints/hypervisor/", {
          name,
          domain: "localhost",
          port: server.addr.port,
          token_name: "root@pam!probe",
          token_value: "secret",
          verify_ssl: verify,
        });
      const lax = await create("lax", false);
      assert.equal(lax.status, 201, JSON.stringify(lax.body));
      const status = await h.call("GET", `${P}endpoints/hypervisor/${lax.body.id}/status/`);
      assert.equal(status.body.status, "online", JSON.stringify(status.body));
      assert.equal(status.body.version, "9.2");
      // With verification on, the same certificate is refused.
      const strict = await create("strict", true);
      const refused = await h.call("GET", `${P}endpoints/hypervisor/${strict.body.id}/status/`);
      assert.equal(refused.body.status, "offline", JSON.stringify(refused.body));
    } finally {
      await h.close();
      await server.shutdown();
    }
  },
});

Deno.test({
  name: "push: a backend endpoint with verify_ssl=false reaches a self-signed https backend",
  ignore: !HAS_OPENSSL,
  async fn() {
    const backendDeps = await testDeps({ SERVICE_SURFACES: "backend" });
    const backendApp = await createBackendApp(backendDeps);
    const server = Deno.serve(
      { port: 0, hostname: "127.0.0.1", cert: tls!.cert, key: tls!.key, onListen() {} },
      (request, info) => backendApp.fetch(request, { remoteAddr: info.remoteAddr }),
    );
    const h = await harness();
    try {
      const be = await h.call("POST", P + "endpoints/backend/", {
        name: "backend",
        domain: "localhost",
        port: server.addr.port,
        use_https: true,
        verify_ssl: false,
      });
      assert.equal(be.status, 201);
      assert.equal(be.body.last_push.ok, true, JSON.stringify(be.body.last_push));
      const ep = await h.call("POST", P + "endpoints/hypervisor/", {
        name: "pve",
        domain: "pve.example.com",
        password: "x",
      });
      assert.equal(ep.body.last_push.ok, true, JSON.stringify(ep.body.last_push));
      // verify_ssl=true against the same certificate fails, and says so in last_push.
      const strict = await h.call("PATCH", `${P}endpoints/backend/${be.body.id}/`, {
        verify_ssl: true,
      });
      assert.equal(strict.body.last_push.ok, false);
    } finally {
      await h.close();
      await server.shutdown();
      backendDeps.kv.close();
    }
  },
});
