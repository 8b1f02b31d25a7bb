/** Permission holes the review pass closed on the plugin endpoints. */
import assert from "node:assert/strict";
import { createBackendApp } from "../../../routes/backend/mod.ts";
import { testDeps } from "../../_helpers.ts";
import { HAS_OPENSSL, selfSigned } from "../../_tls.ts";
import { addBackendEndpoint, harness, P, startBackend } from "./_harness.ts";

Deno.test("inventory endpoint: a non-superuser cannot hand a more powerful token to the backend", async () => {
  const h = await harness();
  try {
    const perms = [
      "service.add_inventoryendpoint",
      "service.view_inventoryendpoint",
      "service.change_inventoryendpoint",
      "dcim.view_site",
    ];
    const limited = await h.token({ permissions: perms });
    // The bootstrap token (id 1) is a superuser token with a retrievable plaintext.
    const su = await h.call("POST", P + "endpoints/inventory/", {
      name: "inv",
      domain: "inv.example.com",
      token_version: "v1",
      token: 1,
    }, { auth: limited });
    assert.equal(su.status, 400);
    assert.deepEqual(su.body, {
      token: ["Cannot reference a token with permissions this token does not hold."],
    });
    // A token with more permissions than the actor is refused too ...
    const wider = await h.call("POST", "/api/users/tokens/", {
      version: 1,
      permissions: ["dcim.add_site"],
    });
    const refused = await h.call("POST", P + "endpoints/inventory/", {
      name: "inv",
      domain: "inv.example.com",
      token: wider.body.id,
    }, { auth: limited });
    assert.equal(refused.status, 400);
    // ... while one within the actor's own permissions is fine, and so is a superuser's choice.
    const narrow = await h.call("POST", "/api/users/tokens/", {
      version: 1,
      permissions: ["dcim.view_site"],
    });
    const ok = await h.call("POST", P + "endpoints/inventory/", {
      name: "inv",
      domain: "inv.example.com",
      token: narrow.body.id,
    }, { auth: limited });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    const bySuperuser = await h.call("PATCH", `${P}endpoints/inventory/${ok.body.id}/`, {
      token: 1,
    });
    assert.equal(bySuperuser.status, 200, JSON.stringify(bySuperuser.body));
    // The limited token may still edit other fields of a record a superuser pointed at token 1.
    const rename = await h.call("PATCH", `${P}endpoints/inventory/${ok.body.id}/`, {
      name: "renamed",
    }, { auth: limited });
    assert.equal(rename.status, 200, JSON.stringify(rename.body));
  } finally {
    await h.close();
  }
});

Deno.test("upserts (storage, task history): concurrent writers of one new key never get a 400", async () => {
  const h = await harness();
  try {
    const ep = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
      password: "x",
    });
    const cluster = await h.call("POST", P + "clusters/", { name: "c", endpoint: ep.body.id });
    assert.equal(cluster.status, 201, JSON.stringify(cluster.body));
    const storage = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        h.call("POST", P + "storage/", {
          name: "nfs",
          cluster: cluster.body.id,
          content: i % 2 ? ["iso"] : ["backup"],
        })),
    );
    assert.deepEqual(
      storage.map((r) => r.status).filter((s) => s !== 200 && s !== 201),
      [],
      JSON.stringify(storage.map((r) => r.body)),
    );
    assert.equal((await h.call("GET", P + "storage/?name=nfs")).body.count, 1);
    const upid = "UPID:n1:00002:0001:00000001:qmstart:101:root@pam:";
    const tasks = await Promise.all(
      Array.from(
        { length: 8 },
        () => h.call("POST", P + "task-history/", { endpoint: ep.body.id, upid, status: "OK" }),
      ),
    );
    assert.deepEqual(tasks.map((r) => r.status).filter((s) => s !== 200 && s !== 201), []);
    assert.equal((await h.call("GET", P + "task-history/")).body.count, 1);
  } finally {
    await h.close();
  }
});

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

Deno.test("ssh-secrets: a write_enabled=false token never gets the plaintext secrets", async () => {
  const h = await harness();
  try {
    const ep = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
      password: "topsecret",
      ssh_credential_source: "reuse_endpoint",
      ssh_known_host_fingerprint: "SHA256:" + "A".repeat(43),
    });
    assert.equal(ep.status, 201, JSON.stringify(ep.body));
    const path = `${P}endpoints/hypervisor/${ep.body.id}/ssh-secrets/`;
    const readOnly = await h.token({ is_superuser: true, write_enabled: false });
    const denied = await h.call("GET", path, undefined, { auth: readOnly });
    assert.equal(denied.status, 403);
    assert.ok(!JSON.stringify(denied.body).includes("topsecret"));
    const writer = await h.token({
      permissions: ["service.view_hypervisorendpoint", "service.change_hypervisorendpoint"],
    });
    const ok = await h.call("GET", path, undefined, { auth: writer });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.password, "topsecret");
  } finally {
    await h.close();
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
