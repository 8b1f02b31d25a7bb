/**
 * What counts as a failed login (SECURITY.md "Lockout"): only a presented wrong, deactivated or
 * deleted key. Missing keys, the favicon and the app's own in-process calls never lock anyone out.
 */
import assert from "node:assert/strict";
import { KEY, registered } from "../routes/backend/_setup.ts";
import { createApp } from "../../app.ts";
import { testDeps } from "../_helpers.ts";

Deno.test("lockout: requests without a key answer 401 'Invalid API key' and are never counted", async () => {
  await using h = await registered();
  const ip = "203.0.113.70";
  for (let i = 0; i < 8; i++) {
    const res = await h.call("/auth/keys", { ip });
    assert.equal(res.status, 401);
    assert.deepEqual(await res.json(), {
      detail: "Invalid API key",
      hint: "Send the backend API key in the X-Service-API-Key header.",
    });
  }
  assert.equal((await h.call("/auth/keys", { key: KEY, ip })).status, 200, "not locked out");
  // A presented wrong key still counts: the fifth locks the address.
  for (let i = 0; i < 5; i++) {
    await (await h.call("/auth/keys", { key: "wrong", ip })).body?.cancel();
  }
  assert.equal((await h.call("/auth/keys", { key: KEY, ip })).status, 429);
});

Deno.test("lockout: GET /favicon.ico is exempt and answers an icon", async () => {
  await using h = await registered();
  const ip = "203.0.113.71";
  for (let i = 0; i < 6; i++) {
    const res = await h.call("/favicon.ico", { ip });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "image/svg+xml");
    assert.match(await res.text(), /^<svg /);
  }
  assert.equal((await h.call("/auth/keys", { key: KEY, ip })).status, 200);
});

Deno.test("lockout: the app's in-process calls to itself are never counted, even with a wrong key", async () => {
  const deps = await testDeps();
  try {
    const app = await createApp(deps);
    const register = await app.request("/auth/register-key", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ api_key: KEY }),
    }, { remoteAddr: { hostname: "127.0.0.1" } });
    assert.equal(register.status, 201);
    for (let i = 0; i < 7; i++) {
      const res = await app.request("/auth/keys", { headers: { "x-service-api-key": "stale" } }, {
        internal: true,
      });
      assert.equal(res.status, 401);
      await res.body?.cancel();
    }
    // The app's own calls are not locked out either.
    const own = await app.request("/auth/keys", { headers: { "x-service-api-key": KEY } }, {
      internal: true,
    });
    assert.equal(own.status, 200);
    await own.body?.cancel();
    // The browser on the same machine (127.0.0.1) is not locked by the app's own calls.
    const browser = await app.request("/auth/keys", { headers: { "x-service-api-key": KEY } }, {
      remoteAddr: { hostname: "127.0.0.1" },
    });
    assert.equal(browser.status, 200);
    await browser.body?.cancel();
  } finally {
    deps.kv.close();
  }
});

Deno.test("static assets: inherited names (constructor, toString, valueOf) are 404, not 500", async () => {
  const deps = await testDeps();
  try {
    const app = await createApp(deps);
    for (const base of ["/static", "/pve/static", "/api/static"]) {
      for (const name of ["constructor", "toString", "valueOf", "__proto__", "hasOwnProperty"]) {
        const res = await app.request(`${base}/${name}`);
        assert.equal(res.status, 404, `${base}/${name}`);
        assert.deepEqual(await res.json(), { detail: "Not Found" });
      }
    }
    assert.equal(deps.logger.lines.filter((l) => l.level === "error").length, 0);
  } finally {
    deps.kv.close();
  }
});

Deno.test("lockout: wrong keys sent through the plugin's own relay never lock the machine out", async () => {
  const { ROOT_TOKEN, P } = await import("../routes/plugin/_harness.ts");
  const deps = await testDeps({
    SERVICE_SURFACES: "backend,plugin",
    INVENTORY_BOOTSTRAP_TOKEN: ROOT_TOKEN,
  });
  const app = await createApp(deps);
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (request, info) => app.fetch(request, info),
  );
  // As main.ts: calls to the app's own port are answered in-process.
  deps.self = { port: server.addr.port, fetch: (r) => app.fetch(r, { internal: true }) };
  const base = `http://127.0.0.1:${server.addr.port}`;
  const inv = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Token ${ROOT_TOKEN}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  try {
    const be = await inv("POST", P + "endpoints/backend/", {
      name: "self",
      domain: "127.0.0.1",
      port: server.addr.port,
      use_https: false,
    });
    assert.equal(be.body.last_push.ok, true, JSON.stringify(be.body.last_push));
    const goodKey = be.body.token;
    // The plugin now holds a key the backend does not know.
    await inv("POST", `${P}endpoints/backend/${be.body.id}/token/`, { token: "w".repeat(64) });
    for (let i = 0; i < 7; i++) {
      const relayed = await inv("GET", P + "bootstrap-status/");
      assert.equal(relayed.status, 401, JSON.stringify(relayed.body));
    }
    // A browser on the same machine, with the right key, is not locked out.
    const browser = await fetch(`${base}/auth/keys`, { headers: { "x-service-api-key": goodKey } });
    assert.equal(browser.status, 200);
    await browser.body?.cancel();
  } finally {
    await server.shutdown();
    deps.kv.close();
  }
});
