/**
 * Push-on-save against the real backend surface (routes/backend) over a real socket.
 */
import assert from "node:assert/strict";
import { NO_BACKEND } from "../../../domain/plugin/service.ts";
import { addBackendEndpoint, harness, P, startBackend } from "./_harness.ts";
import { createBackendApp } from "../../../routes/backend/mod.ts";
import {
  KvHypervisorEndpointStore,
  KvInventoryEndpointStore,
} from "../../../storage/kv/endpoints.ts";
import { testDeps } from "../../_helpers.ts";
import { refusingListener } from "../../_net.ts";

type Backend = Awaited<ReturnType<typeof startBackend>>;

async function backendGet(backend: Backend, path: string, key: string) {
  const r = await backend.request(path, { headers: { "x-service-api-key": key } });
  return { status: r.status, body: await r.json() };
}

Deno.test("push: backend endpoint save registers its token only while the backend needs bootstrap", async () => {
  const backend = await startBackend();
  const h = await harness();
  try {
    const status0 = await (await backend.request("/auth/bootstrap-status")).json();
    assert.equal(status0.needs_bootstrap, true);
    const be = await h.call("POST", P + "endpoints/backend/", {
      name: "backend",
      domain: "127.0.0.1",
      port: backend.port,
      use_https: false,
    });
    assert.equal(be.status, 201);
    assert.deepEqual(
      {
        ok: be.body.last_push.ok,
        error: be.body.last_push.error,
        status: be.body.last_push.status,
      },
      { ok: true, error: null, status: 201 },
    );
    const status1 = await (await backend.request("/auth/bootstrap-status")).json();
    assert.deepEqual(status1, { needs_bootstrap: false, has_db_keys: true });
    // The generated token is the backend key now.
    const keys = await backendGet(backend, "/auth/keys", be.body.token);
    assert.equal(keys.status, 200);
    assert.equal(keys.body.keys.length, 1);

    // A second save only reads bootstrap-status: no second registration.
    const again = await h.call("PATCH", `${P}endpoints/backend/${be.body.id}/`, {
      name: "renamed",
    });
    assert.equal(again.body.last_push.ok, true);
    assert.equal(again.body.last_push.status, 200);
    assert.equal((await backendGet(backend, "/auth/keys", be.body.token)).body.keys.length, 1);
  } finally {
    await h.close();
    await backend.close();
  }
});

Deno.test("push: inventory endpoint POSTs the copy first, then PUTs the first entry (v1 and v2)", async () => {
  const backend = await startBackend();
  const h = await harness();
  const refusing = refusingListener();
  try {
    const be = await addBackendEndpoint(h, backend.port);
    const tok = await h.call("POST", "/api/users/tokens/", { version: 1 });
    assert.equal(tok.status, 201);
    // Every connection there is closed: the backend's own look-up of the plugin key fails fast.
    const inventoryPort = refusing.port;
    const inv = await h.call("POST", P + "endpoints/inventory/", {
      name: "netbox",
      domain: "127.0.0.1",
      port: inventoryPort,
      use_https: false,
      verify_ssl: false,
      token: tok.body.id,
    });
    assert.equal(inv.status, 201, JSON.stringify(inv.body));
    assert.equal(inv.body.last_push.ok, true, JSON.stringify(inv.body.last_push));
    assert.equal(inv.body.last_push.status, 201);
    let copies = await backendGet(backend, "/inventory/endpoint", be.token);
    assert.equal(copies.body.length, 1);
    assert.equal(copies.body[0].name, "netbox");
    assert.equal(copies.body[0].ip, "127.0.0.1");
    assert.equal(copies.body[0].port, inventoryPort);
    assert.equal(copies.body[0].use_https, false);
    assert.equal(copies.body[0].verify_ssl, false);
    assert.equal(copies.body[0].token_version, "v1");
    const firstId = copies.body[0].id;

    const v2 = await h.call("PATCH", `${P}endpoints/inventory/${inv.body.id}/`, {
      token_version: "v2",
      token_key: "k3y",
      token_secret: "s3cret",
      token: null,
    });
    assert.equal(v2.status, 200, JSON.stringify(v2.body));
    assert.equal(v2.body.last_push.ok, true, JSON.stringify(v2.body.last_push));
    assert.equal(v2.body.last_push.status, 200, "PUT to the first entry");
    copies = await backendGet(backend, "/inventory/endpoint", be.token);
    assert.equal(copies.body.length, 1);
    assert.equal(copies.body[0].id, firstId);
    assert.equal(copies.body[0].token_version, "v2");
    assert.equal(copies.body[0].token_key, "k3y");
  } finally {
    refusing.close();
    await h.close();
    await backend.close();
  }
});

Deno.test("push: hypervisor endpoint copy named '<name> (inv:<pk>)', POST then PUT by name; disabled never pushed", async () => {
  const backend = await startBackend();
  const h = await harness();
  try {
    const path = P + "endpoints/hypervisor/";
    // No backend endpoint yet: the save succeeds, last_push says why nothing was pushed.
    const early = await h.call("POST", path, { name: "early", domain: "e.local", password: "pw" });
    assert.equal(early.status, 201);
    assert.deepEqual(
      [early.body.last_push.ok, early.body.last_push.error, early.body.last_push.status],
      [false, NO_BACKEND, null],
    );

    const be = await addBackendEndpoint(h, backend.port);
    const ip = await h.ip("192.0.2.10/24");
    const hv = await h.call("POST", path, {
      name: "pve",
      ip_address: ip,
      port: 8007,
      use_https: false,
      username: "root@pam",
      password: "pw",
      allow_writes: true,
    });
    assert.equal(hv.status, 201);
    assert.equal(hv.body.last_push.ok, true, JSON.stringify(hv.body.last_push));
    assert.equal(hv.body.last_push.status, 201);
    let copies = (await backendGet(backend, "/hypervisor/endpoints", be.token)).body;
    const copy = copies.find((c: { name: string }) => c.name === `pve (inv:${hv.body.id})`);
    assert.ok(copy, JSON.stringify(copies));
    assert.equal(copy.ip, "192.0.2.10");
    assert.equal(copy.port, 8007);
    assert.equal(copy.use_https, false);
    assert.equal(copy.allow_writes, true);
    assert.equal(copy.has_password, true);

    const updated = await h.call("PATCH", `${path}${hv.body.id}/`, { allow_writes: false });
    assert.equal(updated.body.last_push.status, 200, "PUT to the matching copy");
    copies = (await backendGet(backend, "/hypervisor/endpoints", be.token)).body;
    assert.equal(copies.filter((c: { name: string }) => c.name.startsWith("pve (inv:")).length, 1);
    assert.equal(copies.find((c: { id: number }) => c.id === copy.id).allow_writes, false);

    // The IP address record is read fresh at push time: an edited address is followed, but
    // the stored password stays with the old address until it is sent again (SECURITY.md).
    const moved = await h.call("PATCH", `/api/ipam/ip-addresses/${ip}/`, {
      address: "192.0.2.11/24",
    });
    assert.equal(moved.status, 200);
    const withheld = await h.call("POST", `${path}${hv.body.id}/push/`);
    assert.equal(withheld.body.last_push.ok, false);
    assert.match(withheld.body.last_push.error, /address changed to http:\/\/192\.0\.2\.11:8007/);
    const repushed = await h.call("PATCH", `${path}${hv.body.id}/`, { password: "pw" });
    assert.equal(repushed.body.last_push.ok, true);
    copies = (await backendGet(backend, "/hypervisor/endpoints", be.token)).body;
    assert.equal(copies.find((c: { id: number }) => c.id === copy.id).ip, "192.0.2.11");

    // The backend refuses a copy without credentials: the save still succeeds, with the reason.
    const noCreds = await h.call("POST", path, { name: "nocreds", domain: "n.local" });
    assert.equal(noCreds.status, 201);
    assert.equal(noCreds.body.last_push.ok, false);
    assert.equal(noCreds.body.last_push.status, 422);
    assert.match(noCreds.body.last_push.error, /HTTP 422/);

    // A disabled endpoint is never pushed.
    const count = copies.length;
    const off = await h.call("POST", path, {
      name: "off",
      domain: "off.local",
      password: "pw",
      enabled: false,
    });
    assert.equal(off.status, 201);
    assert.equal(off.body.last_push, null);
    const patchedOff = await h.call("PATCH", `${path}${off.body.id}/`, { port: 9000 });
    assert.equal(patchedOff.body.last_push, null);
    copies = (await backendGet(backend, "/hypervisor/endpoints", be.token)).body;
    assert.equal(copies.length, count);
  } finally {
    await h.close();
    await backend.close();
  }
});

Deno.test("push: unreachable or rejecting backend never fails the save", async () => {
  const backend = await startBackend();
  const h = await harness();
  const refusing = refusingListener();
  try {
    // Someone else claimed the backend first: our token is not registered, pushes get 401.
    const other = "x".repeat(64);
    const claim = await backend.request("/auth/register-key", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ api_key: other, label: "other" }),
    });
    assert.equal(claim.status, 201);
    const be = await h.call("POST", P + "endpoints/backend/", {
      name: "backend",
      domain: "127.0.0.1",
      port: backend.port,
      use_https: false,
    });
    assert.equal(be.status, 201);
    // Registration is skipped (the backend has keys) and the check says ours is not accepted.
    assert.equal(be.body.last_push.ok, false);
    assert.equal(be.body.last_push.status, 401);
    assert.match(be.body.last_push.error, /endpoints\/backend\/\{id\}\/token/);
    const hv = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.local",
      password: "pw",
    });
    assert.equal(hv.status, 201);
    assert.equal(hv.body.last_push.ok, false);
    assert.equal(hv.body.last_push.status, 401);
    assert.match(hv.body.last_push.error, /Invalid API key/);

    // The way out: give the endpoint a key the backend knows.
    const short = await h.call("POST", `${P}endpoints/backend/${be.body.id}/token/`, {
      token: "x",
    });
    assert.equal(short.status, 400);
    const set = await h.call("POST", `${P}endpoints/backend/${be.body.id}/token/`, {
      token: other,
    });
    assert.equal(set.status, 200);
    assert.deepEqual([set.body.last_push.ok, set.body.last_push.status], [true, 200]);
    assert.equal((await h.call("GET", `${P}endpoints/backend/${be.body.id}/`)).body.token, other);
    const retried = await h.call("POST", `${P}endpoints/hypervisor/${hv.body.id}/push/`);
    assert.equal(retried.body.last_push.ok, true, JSON.stringify(retried.body));

    await h.call("PATCH", `${P}endpoints/backend/${be.body.id}/`, { port: refusing.port });
    const down = await h.call("PATCH", `${P}endpoints/hypervisor/${hv.body.id}/`, { port: 8010 });
    assert.equal(down.status, 200);
    assert.equal(down.body.port, 8010);
    assert.equal(down.body.last_push.ok, false);
    assert.equal(down.body.last_push.status, null);
    assert.match(down.body.last_push.error, /unreachable/);
  } finally {
    refusing.close();
    await h.close();
    await backend.close();
  }
});

Deno.test("push route re-pushes on demand; deleting an endpoint removes its backend copy", async () => {
  const backend = await startBackend();
  const h = await harness();
  try {
    const path = P + "endpoints/hypervisor/";
    const hv = await h.call("POST", path, { name: "pve", domain: "pve.local", password: "pw" });
    assert.equal(hv.body.last_push.ok, false, "no backend yet");
    const be = await addBackendEndpoint(h, backend.port);
    const pushed = await h.call("POST", `${path}${hv.body.id}/push/`);
    assert.equal(pushed.status, 200);
    assert.equal(pushed.body.last_push.ok, true, JSON.stringify(pushed.body));
    assert.equal((await h.call("GET", `${path}${hv.body.id}/`)).body.last_push.ok, true);
    let copies = (await backendGet(backend, "/hypervisor/endpoints", be.token)).body;
    assert.deepEqual(copies.map((c: { name: string }) => c.name), [`pve (inv:${hv.body.id})`]);

    const viewer = await h.token({ permissions: ["service.view_hypervisorendpoint"] });
    assert.equal(
      (await h.call("POST", `${path}${hv.body.id}/push/`, undefined, { auth: viewer })).status,
      403,
    );
    assert.equal((await h.call("GET", `${path}${hv.body.id}/push/`)).status, 405);
    assert.equal((await h.call("POST", `${path}999/push/`)).status, 404);

    // Bulk Disable/Enable only change the flag: nothing is pushed (last_push stays as it was).
    const stamp = pushed.body.last_push.at;
    await h.call("PATCH", path, [{ id: hv.body.id, enabled: false }]);
    const disabled = await h.call("POST", `${path}${hv.body.id}/push/`);
    assert.equal(disabled.status, 409);
    const reenabled = await h.call("PATCH", path, [{ id: hv.body.id, enabled: true }]);
    assert.equal(reenabled.body[0].last_push.at, stamp);
    await h.call("PATCH", path, [{ id: hv.body.id, enabled: false }]);

    assert.equal((await h.call("DELETE", `${path}${hv.body.id}/`)).status, 204);
    copies = (await backendGet(backend, "/hypervisor/endpoints", be.token)).body;
    assert.deepEqual(copies, []);
  } finally {
    await h.close();
    await backend.close();
  }
});

Deno.test("push: concurrent saves of one endpoint leave exactly one backend copy", async () => {
  const backend = await startBackend();
  const h = await harness();
  try {
    const be = await addBackendEndpoint(h, backend.port);
    const path = P + "endpoints/hypervisor/";
    const hv = await h.call("POST", path, {
      name: "pve",
      domain: "pve.local",
      password: "pw",
      enabled: false,
    });
    await h.call("PATCH", path, [{ id: hv.body.id, enabled: true }]); // flag only: no push
    assert.deepEqual((await backendGet(backend, "/hypervisor/endpoints", be.token)).body, []);
    const saves = await Promise.all([
      h.call("PATCH", `${path}${hv.body.id}/`, { port: 8101, password: "pw" }),
      h.call("PATCH", `${path}${hv.body.id}/`, { verify_ssl: true }),
    ]);
    for (const save of saves) {
      assert.equal(save.status, 200, JSON.stringify(save.body));
      assert.equal(save.body.last_push.ok, true, JSON.stringify(save.body.last_push));
    }
    const copies = (await backendGet(backend, "/hypervisor/endpoints", be.token)).body;
    assert.equal(copies.length, 1);
    assert.equal(copies[0].name, `pve (inv:${hv.body.id})`);
    // Both edits landed: neither save overwrote the other's field.
    const stored = (await h.call("GET", `${path}${hv.body.id}/`)).body;
    assert.deepEqual([stored.port, stored.verify_ssl], [8101, true]);
    // Each push sends the record as its own save left it, so the two pushes may land in either
    // order; a re-push sends the stored record, which has both.
    const repushed = await h.call("POST", `${path}${hv.body.id}/push/`);
    assert.equal(repushed.body.last_push.ok, true, JSON.stringify(repushed.body));
    const [copy] = (await backendGet(backend, "/hypervisor/endpoints", be.token)).body;
    assert.deepEqual([copy.port, copy.verify_ssl], [8101, true], JSON.stringify(copy));
  } finally {
    await h.close();
    await backend.close();
  }
});

Deno.test("push: the backend copy holds the plaintext secrets and verify_ssl as set (read from the backend's storage)", async () => {
  // A backend of our own, so its storage can be read back (it has no key: it stores what it got).
  const backendDeps = await testDeps({ SERVICE_SURFACES: "backend" });
  const backendApp = await createBackendApp(backendDeps);
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (request, info) => backendApp.fetch(request, { remoteAddr: info.remoteAddr }),
  );
  const h = await harness();
  try {
    // The plugin seals its secrets at rest: a push of the stored value would send ciphertext.
    const key = await h.call("PATCH", P + "settings/", {
      encryption_key: "a sufficiently long key",
    });
    assert.equal(key.status, 200);
    await addBackendEndpoint(h, server.addr.port);
    const path = P + "endpoints/hypervisor/";
    const hv = await h.call("POST", path, {
      name: "pve",
      domain: "pve.local",
      username: "root@pam",
      password: "pw-plain",
      token_name: "sync",
      token_value: "tv-plain",
      verify_ssl: true,
    });
    assert.equal(hv.status, 201, JSON.stringify(hv.body));
    assert.equal(hv.body.last_push.ok, true, JSON.stringify(hv.body.last_push));
    const atRest = await h.deps.kv.list({ prefix: [] });
    for await (const entry of atRest) {
      const text = JSON.stringify(entry.value, (_k, v) => typeof v === "bigint" ? `${v}` : v);
      assert.ok(!text?.includes("pw-plain"), "the plugin seals at rest");
    }
    const backendStore = new KvHypervisorEndpointStore(backendDeps.kv);
    const copyOf = async () =>
      (await backendStore.list()).find((c) => c.name === `pve (inv:${hv.body.id})`)!;
    let copy = await copyOf();
    assert.deepEqual(
      [copy.key_source, copy.username, copy.password, copy.token_name, copy.token_value],
      ["none", "root@pam", "pw-plain", "sync", "tv-plain"],
    );
    assert.equal(copy.verify_ssl, true);
    // Turning verification off needs the secrets again (SECURITY.md), then the copy follows.
    const off = await h.call("PATCH", `${path}${hv.body.id}/`, {
      verify_ssl: false,
      password: "pw-plain",
      token_value: "tv-plain",
    });
    assert.equal(off.body.last_push.ok, true, JSON.stringify(off.body.last_push));
    copy = await copyOf();
    assert.equal(copy.verify_ssl, false);
    assert.equal(copy.password, "pw-plain");

    // The inventory copy: the token as the plugin issued it, verify_ssl as set.
    const refusing = refusingListener();
    try {
      const tok = await h.call("POST", "/api/users/tokens/", { version: 1 });
      const inv = await h.call("POST", P + "endpoints/inventory/", {
        name: "netbox",
        domain: "127.0.0.1",
        port: refusing.port,
        use_https: true,
        verify_ssl: true,
        token: tok.body.id,
      });
      assert.equal(inv.body.last_push.ok, true, JSON.stringify(inv.body.last_push));
      const [invCopy] = await new KvInventoryEndpointStore(backendDeps.kv).list();
      assert.deepEqual(
        [invCopy.token, invCopy.verify_ssl, invCopy.use_https],
        [tok.body.token, true, true],
      );
    } finally {
      refusing.close();
    }
  } finally {
    await h.close();
    await server.shutdown();
    backendDeps.kv.close();
  }
});
