/**
 * The README's quick start as a test: every surface on one real socket, wired to itself the way
 * `deno task start` runs on a laptop. The plugin pushes to the backend, the backend reads the
 * plugin's encryption key, the keepalive reaches the mock hypervisor.
 */
import assert from "node:assert/strict";
import { createApp } from "../../app.ts";
import { testDeps } from "../_helpers.ts";

const ROOT = "e2e0123456789abcdef0123456789abcdef0123";

Deno.test("e2e: inventory, backend and hypervisor work together on one port", async () => {
  const deps = await testDeps({ INVENTORY_BOOTSTRAP_TOKEN: ROOT });
  const app = await createApp(deps);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (r, i) => app.fetch(r, i),
  );
  // As main.ts does: the app's own port is answered in-process (loopback stays refused).
  deps.self = { port: server.addr.port, fetch: (r) => app.fetch(r, { internal: true }) };
  const base = `http://127.0.0.1:${server.addr.port}`;
  const inv = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}/api/plugins/service/${path}`, {
      method,
      headers: { authorization: `Token ${ROOT}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  try {
    // Every surface answers, and each has its own docs.
    for (
      const path of [
        "/health",
        "/docs",
        "/api/docs",
        "/pve/docs",
      ]
    ) {
      const res = await fetch(base + path);
      assert.equal(res.status, 200, path);
      await res.body?.cancel();
    }
    // The hypervisor API needs a login, /version included (only the login itself is public).
    const anonymous = await fetch(base + "/api2/json/version");
    assert.equal(anonymous.status, 401);
    await anonymous.body?.cancel();

    // Plugin: the encryption key first, so every secret below is stored encrypted.
    assert.equal(
      (await inv("PATCH", "settings/", { encryption_key: "e2e plugin encryption key" })).status,
      200,
    );
    const backend = await inv("POST", "endpoints/backend/", {
      name: "local",
      domain: "127.0.0.1",
      port: server.addr.port,
      use_https: false,
    });
    assert.equal(backend.status, 201);
    assert.equal(backend.body.last_push.ok, true, JSON.stringify(backend.body.last_push));
    const apiKey = backend.body.token as string;
    assert.equal(apiKey.length, 64);

    const inventory = await inv("POST", "endpoints/inventory/", {
      name: "self",
      domain: "127.0.0.1",
      port: server.addr.port,
      use_https: false,
      token_version: "v1",
      token: 1,
    });
    assert.equal(inventory.body.last_push.ok, true, JSON.stringify(inventory.body.last_push));

    const hypervisor = await inv("POST", "endpoints/hypervisor/", {
      name: "lab",
      domain: "127.0.0.1",
      port: server.addr.port,
      use_https: false,
      username: "root@pam",
      password: "bridgebox",
    });
    assert.equal(hypervisor.status, 201);
    assert.equal(hypervisor.body.last_push.ok, true, JSON.stringify(hypervisor.body.last_push));
    const keepalive = await inv("GET", `endpoints/hypervisor/${hypervisor.body.id}/status/`);
    assert.equal(keepalive.body.status, "online");

    // Backend: the key the plugin registered works; the copies are there, secrets protected by
    // the plugin's key (fetched with the inventory token) and never returned.
    const backendGet = async (path: string) => {
      const res = await fetch(base + path, { headers: { "X-Service-API-Key": apiKey } });
      return { status: res.status, body: await res.json() };
    };
    const copies = await backendGet("/hypervisor/endpoints");
    assert.deepEqual(copies.body.map((c: { name: string }) => c.name), [
      `lab (inv:${hypervisor.body.id})`,
    ]);
    assert.equal(copies.body[0].key_source, "plugin");
    assert.ok(!JSON.stringify(copies.body).includes("bridgebox"));
    const check = await backendGet(`/hypervisor/endpoints/${copies.body[0].id}/credentials/check`);
    assert.deepEqual(check.body, { ok: true, key_source: "plugin" });
    const invCopy = await backendGet("/inventory/endpoint");
    assert.equal(invCopy.body.length, 1);
    assert.equal(invCopy.body[0].port, server.addr.port);

    // The mock hypervisor accepts the credentials the copy holds.
    const login = await fetch(`${base}/api2/json/access/ticket`, {
      method: "POST",
      body: new URLSearchParams({ username: "root@pam", password: "bridgebox" }),
    });
    assert.equal(login.status, 200);
    await login.body?.cancel();
  } finally {
    await server.shutdown();
    deps.kv.close();
  }
});
