/**
 * The whole loop on one real socket, as deployed: the app (createApp) serves the backend and
 * the plugin; the plugin pushes to the backend over HTTP, and the backend reads the plugin's
 * encryption key back from settings/runtime with the inventory token it was given.
 */
import assert from "node:assert/strict";
import { createApp } from "../../../app.ts";
import { testDeps } from "../../_helpers.ts";
import { P, ROOT_TOKEN } from "./_harness.ts";

Deno.test("e2e: plugin pushes to the backend of the same app; backend seals with the plugin key; keepalive reaches the hypervisor API", async () => {
  const deps = await testDeps({
    SERVICE_SURFACES: "backend,plugin,hypervisor",
    INVENTORY_BOOTSTRAP_TOKEN: ROOT_TOKEN,
  });
  const app = await createApp(deps);
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (request, info) => app.fetch(request, { remoteAddr: info.remoteAddr }),
  );
  // As main.ts does: calls to the app's own port are answered in-process (loopback targets
  // stay refused).
  deps.self = {
    port: server.addr.port,
    fetch: (request) => app.fetch(request, { internal: true }),
  };
  const base = `http://127.0.0.1:${server.addr.port}`;
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    auth = `Token ${ROOT_TOKEN}`,
  ) => {
    const r = await fetch(base + path, {
      method,
      headers: { authorization: auth, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
  };
  try {
    assert.equal(
      (await call("PATCH", P + "settings/", { encryption_key: "shared plugin key 123" })).status,
      200,
    );
    const be = await call("POST", P + "endpoints/backend/", {
      name: "backend",
      domain: "127.0.0.1",
      port: server.addr.port,
      use_https: false,
    });
    assert.equal(be.status, 201);
    assert.equal(be.body.last_push.ok, true, JSON.stringify(be.body.last_push));
    assert.equal(be.body.last_push.status, 201, "the first key was registered");

    // The token the backend will use to read settings/runtime: allowed to change settings.
    const tok = await call("POST", "/api/users/tokens/", {
      version: 1,
      write_enabled: true,
      permissions: ["service.change_pluginsettings"],
    });
    assert.equal(tok.status, 201);
    const inv = await call("POST", P + "endpoints/inventory/", {
      name: "self",
      domain: "127.0.0.1",
      port: server.addr.port,
      use_https: false,
      token: tok.body.id,
    });
    assert.equal(inv.status, 201, JSON.stringify(inv.body));
    assert.equal(inv.body.last_push.ok, true, JSON.stringify(inv.body.last_push));

    // The hypervisor endpoint is this app's own hypervisor API (mock mode, its documented login).
    const hv = await call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "127.0.0.1",
      port: server.addr.port,
      use_https: false,
      username: deps.config.hypervisor.mockUser,
      password: deps.config.hypervisor.mockPassword,
    });
    assert.equal(hv.status, 201);
    assert.equal(hv.body.last_push.ok, true, JSON.stringify(hv.body.last_push));

    const copies = await fetch(`${base}/hypervisor/endpoints`, {
      headers: { "x-service-api-key": be.body.token },
    });
    const list = await copies.json();
    assert.equal(list.length, 1);
    assert.equal(list[0].name, `pve (inv:${hv.body.id})`);
    assert.equal(list[0].key_source, "plugin", "the backend sealed it with the plugin's key");

    // Keepalive straight to the hypervisor API (no backend involved).
    const alive = await call("GET", `${P}endpoints/hypervisor/${hv.body.id}/status/`);
    assert.equal(alive.status, 200);
    assert.equal(alive.body.status, "online", JSON.stringify(alive.body));
    assert.equal(typeof alive.body.version, "string");
  } finally {
    await server.shutdown();
    deps.kv.close();
  }
});
