import assert from "node:assert/strict";
import { FP, harness, P, startBackend, startFakeHypervisor } from "./_harness.ts";
import { refusingListener } from "../../_net.ts";

Deno.test("settings singleton: defaults, encryption_key write-only, validation, permissions", async () => {
  const h = await harness();
  try {
    const first = await h.call("GET", P + "settings/");
    assert.equal(first.status, 200);
    assert.equal(first.body.custom_fields_enabled, false);
    assert.equal(first.body.has_encryption_key, false);
    assert.ok(!("encryption_key" in first.body));

    const bad = await h.call("PATCH", P + "settings/", { custom_fields_enabled: "maybe", foo: 1 });
    assert.equal(bad.status, 400);
    assert.ok(bad.body.custom_fields_enabled);
    assert.ok(bad.body.foo);
    assert.equal((await h.call("PATCH", P + "settings/", { encryption_key: "short" })).status, 400);
    assert.equal((await h.call("POST", P + "settings/", {})).status, 405);

    const set = await h.call("PATCH", P + "settings/", {
      encryption_key: "a sufficiently long key",
      custom_fields_enabled: true,
    });
    assert.equal(set.status, 200);
    assert.deepEqual([set.body.custom_fields_enabled, set.body.has_encryption_key], [true, true]);
    assert.ok(!("encryption_key" in set.body));

    // runtime: the key only for tokens allowed to change settings.
    const root = await h.call("GET", P + "settings/runtime/");
    assert.equal(root.body.encryption_key, "a sufficiently long key");
    const viewer = await h.token({ permissions: ["service.view_pluginsettings"] });
    const viewed = await h.call("GET", P + "settings/runtime/", undefined, { auth: viewer });
    assert.equal(viewed.status, 200);
    assert.ok(!("encryption_key" in viewed.body));
    const changer = await h.token({ permissions: ["service.change_pluginsettings"] });
    const changed = await h.call("GET", P + "settings/runtime/", undefined, { auth: changer });
    assert.equal(changed.body.encryption_key, "a sufficiently long key");
    const readOnly = await h.token({
      permissions: ["service.change_pluginsettings"],
      write_enabled: false,
    });
    const ro = await h.call("GET", P + "settings/runtime/", undefined, { auth: readOnly });
    assert.ok(!("encryption_key" in ro.body), "a read-only token cannot change settings");
    assert.equal(
      (await h.call("PATCH", P + "settings/", { custom_fields_enabled: false }, { auth: viewer }))
        .status,
      403,
    );
    const nobody = await h.token({ permissions: [] });
    assert.equal((await h.call("GET", P + "settings/", undefined, { auth: nobody })).status, 403);
    assert.equal((await h.call("GET", P + "settings/", undefined, { auth: null })).status, 403);

    // Clearing the key while secrets are sealed with it is refused.
    await h.call("POST", P + "endpoints/hypervisor/", {
      name: "x",
      domain: "x.local",
      password: "p",
    });
    const clear = await h.call("PATCH", P + "settings/", { encryption_key: null });
    assert.equal(clear.status, 400);
    assert.ok(clear.body.encryption_key);
  } finally {
    await h.close();
  }
});

Deno.test("bootstrap-status relay: view_backendendpoint required; status and body relayed; ok false without a backend; 502 when down", async () => {
  const backend = await startBackend();
  const h = await harness();
  const refusing = refusingListener();
  try {
    const none = await h.call("GET", P + "bootstrap-status/");
    assert.equal(none.status, 200, "no backend endpoint is a bootstrap problem, not an error");
    assert.equal(none.body.ok, false);
    assert.equal(none.body.reason, "backend_not_configured");
    const be = await h.call("POST", P + "endpoints/backend/", {
      name: "backend",
      domain: "127.0.0.1",
      port: backend.port,
      use_https: false,
    });
    assert.equal(be.status, 201);
    assert.equal(be.body.last_push.ok, true, JSON.stringify(be.body.last_push));

    const direct = await backend.request("/extras/bootstrap-status", {
      headers: { "x-service-api-key": be.body.token },
    });
    const directBody = await direct.json();
    const relayed = await h.call("GET", P + "bootstrap-status/");
    assert.equal(relayed.status, direct.status);
    assert.deepEqual(relayed.body, directBody);

    const viewer = await h.token({ permissions: ["service.view_backendendpoint"] });
    assert.equal(
      (await h.call("GET", P + "bootstrap-status/", undefined, { auth: viewer })).status,
      direct.status,
    );
    const jobs = await h.token({ permissions: ["core.add_job"] });
    assert.equal(
      (await h.call("GET", P + "bootstrap-status/", undefined, { auth: jobs })).status,
      403,
    );

    await h.call("PATCH", `${P}endpoints/backend/${be.body.id}/`, { port: refusing.port });
    const down = await h.call("GET", P + "bootstrap-status/");
    assert.equal(down.status, 502);
    assert.match(down.body.detail, /unreachable/);
  } finally {
    refusing.close();
    await h.close();
    await backend.close();
  }
});

Deno.test("enabled flag: bulk PATCH toggles; keepalive answers disabled without contacting anything", async () => {
  const pve = startFakeHypervisor({ password: "pw", token: "root@pam!mon=tv" });
  const h = await harness();
  const refusing = refusingListener();
  try {
    const path = P + "endpoints/hypervisor/";
    const mk = async (name: string, extra: Record<string, unknown>) => {
      const r = await h.call("POST", path, {
        name,
        domain: "127.0.0.1",
        port: pve.port,
        use_https: false,
        ...extra,
      });
      assert.equal(r.status, 201);
      return r.body.id as number;
    };
    const byPassword = await mk("pw", { password: "pw" });
    const byToken = await mk("tok", { token_name: "mon", token_value: "tv" });
    const wrong = await mk("wrong", { password: "nope", ssh_known_host_fingerprint: FP });

    const online = await h.call("GET", `${path}${byPassword}/status/`);
    assert.equal(online.status, 200);
    assert.equal(online.body.status, "online");
    assert.equal(online.body.version, "9.2");
    assert.equal((await h.call("GET", `${path}${byToken}/status/`)).body.status, "online");
    assert.equal((await h.call("GET", `${path}${wrong}/status/`)).body.status, "unauthorized");

    const bulk = await h.call("PATCH", path, [
      { id: byPassword, enabled: false },
      { id: byToken, enabled: false },
    ]);
    assert.equal(bulk.status, 200, JSON.stringify(bulk.body));
    assert.deepEqual(bulk.body.map((e: { enabled: boolean }) => e.enabled), [false, false]);

    const before = pve.calls.length;
    const disabled = await h.call("GET", `${path}${byPassword}/status/`);
    assert.equal(disabled.status, 200);
    assert.equal(disabled.body.status, "disabled");
    assert.equal(pve.calls.length, before, "nothing was contacted");
    // Disabled endpoints stay listed and filterable.
    const listed = await h.call("GET", `${path}?enabled=false`);
    assert.equal(listed.body.count, 2);
    assert.equal((await h.call("GET", path)).body.count, 3);
    // SSH secrets are an operational read: refused for a disabled endpoint.
    assert.equal((await h.call("GET", `${path}${byPassword}/ssh-secrets/`)).status, 409);

    const back = await h.call("PATCH", path, [{ id: byPassword, enabled: true }]);
    assert.equal(back.body[0].enabled, true);
    assert.equal((await h.call("GET", `${path}${byPassword}/status/`)).body.status, "online");
    assert.equal((await h.call("GET", `${path}4242/status/`)).status, 404);

    await h.call("PATCH", `${path}${byToken}/`, {
      enabled: true,
      port: refusing.port,
      token_value: "tv",
    });
    const offline = await h.call("GET", `${path}${byToken}/status/`);
    assert.equal(offline.body.status, "offline");
  } finally {
    refusing.close();
    await h.close();
    await pve.close();
  }
});

Deno.test("every documented plugin route answers (OpenAPI fragment matches the router)", async () => {
  const { pluginOpenApiPaths } = await import("../../../routes/plugin/mod.ts");
  const h = await harness();
  try {
    const ep = await h.call("POST", P + "endpoints/hypervisor/", { name: "x", domain: "x.local" });
    // The exact answer each documented route gives here (a crash or a missing route would not
    // match): a fresh hypervisor endpoint without credentials, no backend endpoint.
    const expected: Record<string, [number, string]> = {
      "get endpoints/hypervisor/{id}/status/": [200, "status"],
      "get endpoints/hypervisor/{id}/ssh-secrets/": [422, "reason"],
      "post endpoints/{kind}/{id}/push/": [200, "last_push"],
      "post endpoints/backend/{id}/token/": [400, "token"],
      "get settings/": [200, "has_encryption_key"],
      "patch settings/": [200, "has_encryption_key"],
      "get settings/runtime/": [200, "encryption_key"],
      "get bootstrap-status/": [200, "reason"],
      // The job routes: a sync and a repair are queued (they end errored: no backend endpoint),
      // and the first job's stream (its id is the endpoint's, 1) runs to its end.
      "post sync/": [201, "job_id"],
      "post repair/": [201, "job_id"],
      "get jobs/{id}/stream": [200, "event: complete"],
    };
    const seen: string[] = [];
    for (const [template, ops] of Object.entries(pluginOpenApiPaths())) {
      const path = template.replace("{id}", String(ep.body.id)).replace("{kind}", "hypervisor");
      for (const method of Object.keys(ops as object)) {
        const name = `${method} ${template.slice(P.length)}`;
        seen.push(name);
        const r = await h.call(method.toUpperCase(), path, method === "patch" ? {} : undefined);
        const want = expected[name];
        assert.ok(want, `${name} is documented: add its expected answer here`);
        assert.equal(r.status, want[0], `${name}: ${JSON.stringify(r.body)}`);
        const has = typeof r.body === "string" ? r.body.includes(want[1]) : want[1] in r.body;
        assert.ok(r.body && has, `${name}: ${JSON.stringify(r.body)}`);
      }
    }
    assert.deepEqual(seen.sort(), Object.keys(expected).sort());
  } finally {
    await h.close();
  }
});
