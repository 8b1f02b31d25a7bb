import assert from "node:assert/strict";
import { HeldLookup } from "../../_kv_api_keys.ts";
import { ReadCounter } from "../../_kv_reads.ts";
import { backend, KEY, registered } from "./_setup.ts";

const NO_KEY =
  "No API key configured. Register a key via POST /auth/register-key or use an existing key.";

Deno.test("auth: exempt routes answer without a key, everything else needs one", async () => {
  await using h = await backend();
  assert.deepEqual(await (await h.call("/")).json(), {
    name: "Bridgebox",
    version: "0.1.0",
    docs: "/docs",
  });
  assert.deepEqual(await (await h.call("/health")).json(), { status: "ready", init_ok: true });
  const meta = await (await h.call("/meta")).json();
  assert.deepEqual(Object.keys(meta).sort(), ["name", "runtime", "storage", "surfaces", "version"]);
  assert.equal((await h.call("/openapi.json")).status, 200);
  assert.equal((await h.call("/docs")).status, 200);
  assert.equal((await h.call("/redoc")).status, 200);
  assert.deepEqual(await (await h.call("/auth/bootstrap-status")).json(), {
    needs_bootstrap: true,
    has_db_keys: false,
  });
  // Exemption is exact: a POST to "/" or a sub-path of an exempt route is authenticated.
  for (
    const [method, path] of [["POST", "/"], ["GET", "/health/x"], ["GET", "/auth/keys"], [
      "GET",
      "/nope",
    ]]
  ) {
    const res = await h.call(path, { method });
    assert.equal(res.status, 401, `${method} ${path}`);
    assert.deepEqual(await res.json(), { detail: NO_KEY });
  }
});

Deno.test("auth: 'no key configured' is not counted as a failure", async () => {
  await using h = await backend();
  // More than the lockout threshold of attempts, presenting a key, before any key exists.
  for (let i = 0; i < 8; i++) {
    const res = await h.call("/auth/keys", { key: `guess-${i}`, ip: "192.0.2.77" });
    assert.equal(res.status, 401);
    assert.deepEqual(await res.json(), { detail: NO_KEY });
  }
  const registered = await h.call("/auth/register-key", {
    method: "POST",
    ip: "192.0.2.77",
    json: { api_key: KEY },
  });
  assert.equal(registered.status, 201);
  await registered.body?.cancel();
  // Not locked: the same address authenticates at once.
  const res = await h.call("/auth/keys", { key: KEY, ip: "192.0.2.77" });
  assert.equal(res.status, 200);
  await res.body?.cancel();
});

Deno.test("auth: register-key rules, exact texts, and it never reopens", async () => {
  await using h = await backend();
  const short = await h.call("/auth/register-key", {
    method: "POST",
    json: { api_key: "x".repeat(31) },
  });
  assert.equal(short.status, 400);
  assert.deepEqual(await short.json(), { detail: "API key must be at least 32 characters." });

  const ok = await h.call("/auth/register-key", {
    method: "POST",
    json: { api_key: KEY, label: "laptop" },
  });
  assert.equal(ok.status, 201);
  assert.deepEqual(await ok.json(), { detail: "API key registered." });
  assert.deepEqual(await (await h.call("/auth/bootstrap-status")).json(), {
    needs_bootstrap: false,
    has_db_keys: true,
  });

  const again = await h.call("/auth/register-key", {
    method: "POST",
    json: { api_key: "y".repeat(40) },
  });
  assert.equal(again.status, 409);
  assert.deepEqual(await again.json(), { detail: "An API key is already configured." });
  // The length check comes first, even once a key exists.
  const shortLater = await h.call("/auth/register-key", {
    method: "POST",
    json: { api_key: "short" },
  });
  assert.equal(shortLater.status, 400);

  // Rotate: create a second key, delete the first; registration stays closed.
  const created = await (await h.call("/auth/keys", { method: "POST", key: KEY })).json();
  assert.equal(
    (await h.call("/auth/keys/1", { method: "DELETE", key: created.raw_key })).status,
    204,
  );
  const reopened = await h.call("/auth/register-key", { method: "POST", json: { api_key: KEY } });
  assert.equal(reopened.status, 409);
  assert.equal(
    (await h.call("/auth/keys", { key: KEY })).status,
    401,
    "the deleted key no longer works",
  );
});

Deno.test("auth: N concurrent first registrations give exactly one 201", async () => {
  await using h = await backend();
  const results = await Promise.all(
    Array.from(
      { length: 25 },
      (_, i) =>
        h.call("/auth/register-key", {
          method: "POST",
          json: { api_key: `${i}`.padStart(40, "z") },
        }),
    ),
  );
  const statuses = results.map((r) => r.status).sort();
  assert.equal(statuses.filter((s) => s === 201).length, 1);
  assert.equal(statuses.filter((s) => s === 409).length, 24);
  await Promise.all(results.map((r) => r.body?.cancel()));
  assert.equal(
    (await h.call("/auth/keys")).status,
    401,
    "a key now exists, so a missing one is invalid",
  );
});

Deno.test("auth: wrong, missing and whitespace-altered keys are invalid", async () => {
  await using h = await registered();
  // Leading/trailing blanks are stripped by HTTP itself; an inner space still changes the key.
  for (
    const key of [
      undefined,
      "nope",
      `${KEY.slice(0, 20)} ${KEY.slice(20)}`,
      KEY.slice(1),
      `${KEY}x`,
    ]
  ) {
    const res = await h.call("/auth/keys", {
      key,
      ip: `198.51.100.${Math.floor(Math.random() * 200)}`,
    });
    assert.equal(res.status, 401);
    const hint = key === undefined
      ? { hint: "Send the backend API key in the X-Service-API-Key header." }
      : {};
    assert.deepEqual(await res.json(), { detail: "Invalid API key", ...hint });
  }
  assert.equal((await h.call("/auth/keys", { key: KEY })).status, 200);
});

Deno.test("auth: with a key cached, its prefix, its extension and its other case are still refused", async () => {
  const held = new HeldLookup(await Deno.openKv(":memory:"));
  await using h = await registered({}, { kv: held.kv });
  await held.settled();
  // Verified once: from now on the key is answered from the cache, which must match it whole.
  assert.equal((await h.call("/auth/keys", { key: KEY })).status, 200);
  for (
    const key of [KEY.slice(0, -1), `${KEY}x`, KEY.toUpperCase(), `${KEY.slice(0, 20)} ${KEY}`]
  ) {
    const res = await h.call("/auth/keys", { key, ip: "198.51.100.61" });
    assert.equal(res.status, 401, key);
    assert.deepEqual(await res.json(), { detail: "Invalid API key" });
  }
  assert.equal((await h.call("/auth/keys", { key: KEY, ip: "198.51.100.62" })).status, 200);
});

Deno.test("auth: 5 failures lock the IP for 300 s with Retry-After; other IPs unaffected", async () => {
  let now = 1_000_000;
  await using h = await registered({}, { now: () => now });
  const ip = "203.0.113.7";
  for (let i = 0; i < 5; i++) {
    assert.equal((await h.call("/auth/keys", { key: "bad", ip })).status, 401);
  }
  const locked = await h.call("/auth/keys", { key: KEY, ip });
  assert.equal(locked.status, 429);
  assert.equal(locked.headers.get("retry-after"), "300");
  assert.deepEqual(await locked.json(), { detail: "Too many failed authentication attempts" });
  assert.equal((await h.call("/auth/keys", { key: KEY, ip: "203.0.113.8" })).status, 200);
  assert.equal((await h.call("/health", { ip })).status, 200, "exempt routes still answer");

  now += 299_000;
  const later = await h.call("/auth/keys", { key: KEY, ip });
  assert.equal(later.status, 429);
  assert.equal(later.headers.get("retry-after"), "1");
  now += 1_000;
  assert.equal((await h.call("/auth/keys", { key: KEY, ip })).status, 200, "lock expired");
});

Deno.test("auth: a success clears the failure count", async () => {
  await using h = await registered();
  const ip = "203.0.113.20";
  for (let i = 0; i < 4; i++) await h.call("/auth/keys", { key: "bad", ip });
  assert.equal((await h.call("/auth/keys", { key: KEY, ip })).status, 200);
  for (let i = 0; i < 4; i++) {
    assert.equal((await h.call("/auth/keys", { key: "bad", ip })).status, 401);
  }
  assert.equal((await h.call("/auth/keys", { key: KEY, ip })).status, 200);
});

Deno.test("auth: unknown paths are authenticated before routing (no 404 leak)", async () => {
  await using h = await registered();
  assert.equal((await h.call("/secret/thing")).status, 401);
  const found = await h.call("/secret/thing", { key: KEY });
  assert.equal(found.status, 404);
  assert.deepEqual(await found.json(), { detail: "Not Found" });
});

Deno.test("auth: a key verified a moment ago is not read from the store again, on a route or an unknown path", async () => {
  const reads = new ReadCounter((key) => key[0] === "backend" && key[1] === "api_keys");
  reads.counting = true;
  const held = new HeldLookup(reads.wrap(await Deno.openKv(":memory:")));
  await using h = await registered({}, { kv: held.kv });
  // The key-set watch has cleared the cache for the registration: a clear during a look-up keeps
  // that look-up's verdict out of the cache (SECURITY.md, "Retiring a backend key").
  await held.settled();
  const readsOf = async (path: string, status: number) => {
    const before = reads.total();
    const res = await h.call(path, { key: KEY });
    assert.equal(res.status, status);
    return { body: await res.json(), reads: reads.total() - before };
  };
  // The first request looks the key up (its claim and its digest's entry: two entries read),
  // then lists the keys.
  const first = await readsOf("/auth/keys", 200);
  for (let i = 0; i < 3; i++) {
    const unknown = await readsOf(`/no-such-route-${i}`, 404);
    assert.deepEqual(unknown.body, { detail: "Not Found" });
    assert.equal(unknown.reads, 0, `an authenticated 404 read the keys ${unknown.reads} times`);
  }
  const again = await readsOf("/auth/keys", 200);
  assert.deepEqual(again.body, first.body);
  assert.equal(again.body.keys[0].label, "first");
  assert.equal("digest" in again.body.keys[0], false);
  assert.equal(again.reads, first.reads - 2, `first ${first.reads}, again ${again.reads}`);
});

Deno.test("auth: X-Forwarded-For is believed only from a trusted proxy", async () => {
  await using h = await registered({ SERVICE_TRUSTED_PROXIES: "10.0.0.1" });
  // Untrusted peer: its forwarded header is ignored, so the peer itself gets locked.
  for (let i = 0; i < 5; i++) {
    await h.call("/auth/keys", {
      key: "bad",
      ip: "192.0.2.50",
      headers: { "x-forwarded-for": `198.51.100.${i}` },
    });
  }
  assert.equal((await h.call("/auth/keys", { key: KEY, ip: "192.0.2.50" })).status, 429);
  // Trusted proxy: the client named in the header is locked, the proxy is not.
  for (let i = 0; i < 5; i++) {
    await h.call("/auth/keys", {
      key: "bad",
      ip: "10.0.0.1",
      headers: { "x-forwarded-for": "198.51.100.99" },
    });
  }
  const viaProxy = await h.call("/auth/keys", {
    key: KEY,
    ip: "10.0.0.1",
    headers: { "x-forwarded-for": "198.51.100.99" },
  });
  assert.equal(viaProxy.status, 429);
  const other = await h.call("/auth/keys", {
    key: KEY,
    ip: "10.0.0.1",
    headers: { "x-forwarded-for": "198.51.100.98" },
  });
  assert.equal(other.status, 200);
});

Deno.test("auth: a call without any key is told which header carries it; a wrong key is not", async () => {
  await using h = await registered();
  const missing = await h.call("/auth/keys");
  assert.equal(missing.status, 401);
  assert.deepEqual(await missing.json(), {
    detail: "Invalid API key",
    hint: "Send the backend API key in the X-Service-API-Key header.",
  });
  const wrong = await h.call("/auth/keys", { key: `${KEY}x`, ip: "198.51.100.77" });
  assert.deepEqual(await wrong.json(), { detail: "Invalid API key" });
});

Deno.test("GET /: a browser is sent to the console, an API client gets the JSON", async () => {
  const html = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" };
  {
    // Without the inventory surface there is no console to send it to.
    await using alone = await backend();
    assert.equal((await (await alone.call("/", { headers: html })).json()).docs, "/docs");
  }
  await using h = await backend({ SERVICE_SURFACES: "backend,plugin" });
  const browser = await h.call("/", { headers: html });
  assert.equal(browser.status, 302);
  assert.equal(browser.headers.get("location"), "/ui/");
  for (const accept of [undefined, "application/json", "*/*"]) {
    const api = await h.call("/", accept ? { headers: { accept } } : {});
    assert.equal(api.status, 200, accept);
    assert.equal((await api.json()).docs, "/docs");
  }
});
