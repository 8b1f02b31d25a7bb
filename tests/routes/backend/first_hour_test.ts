/** The small validation gaps a new user hit in the first hour (each planted bug named inline). */
import assert from "node:assert/strict";
import { createApp } from "../../../app.ts";
import { testDeps } from "../../_helpers.ts";
import { allowedMethods } from "../../../routes/_lib/allowed_methods.ts";
import { KEY, registered } from "./_setup.ts";

Deno.test("405: a known path asked with another method says which methods it serves", async () => {
  await using h = await registered();
  const res = await h.call("/auth/register-key", { key: KEY });
  assert.equal(res.status, 405);
  assert.equal(res.headers.get("allow"), "POST");
  assert.deepEqual(await res.json(), { detail: "Method Not Allowed" });

  const item = await h.call("/hypervisor/endpoints/7", { method: "PATCH", key: KEY });
  assert.equal(item.status, 405);
  assert.equal(item.headers.get("allow"), "DELETE, GET, HEAD, PUT");

  const unknown = await h.call("/no/such/path", { key: KEY });
  assert.equal(unknown.status, 404);
  assert.equal(unknown.headers.get("allow"), null);

  // Still authenticated first: no method list leaks to a caller without a key.
  assert.equal((await h.call("/auth/keys", { method: "DELETE" })).status, 401);
});

Deno.test("405: route patterns match parameters and nothing more", () => {
  const routes = [
    { method: "GET", path: "/a/:id" },
    { method: "PUT", path: "/a/:id" },
    { method: "ALL", path: "/a/:id" },
    { method: "POST", path: "/a/:id/run" },
    { method: "GET", path: "/static/*" },
  ];
  assert.deepEqual(allowedMethods(routes, "/a/1"), ["GET", "HEAD", "PUT"]);
  assert.deepEqual(allowedMethods(routes, "/a/1/run"), ["POST"]);
  assert.deepEqual(allowedMethods(routes, "/a/1/2"), []);
  assert.deepEqual(allowedMethods(routes, "/a"), []);
});

Deno.test("a bad path id names the parameter (not 'expected number, received NaN')", async () => {
  await using h = await registered();
  for (
    const path of ["/hypervisor/endpoints/abc", "/inventory/endpoint/0", "/auth/keys/x/activate"]
  ) {
    const res = await h.call(path, {
      key: KEY,
      method: path.endsWith("activate") ? "POST" : "GET",
    });
    assert.equal(res.status, 422, path);
    const [issue] = (await res.json()).detail;
    assert.deepEqual([issue.loc, issue.msg], [
      ["path", "id"],
      "path parameter id must be a positive integer",
    ], path);
  }
});

Deno.test("endpoint ip: an IP address or a DNS name; URLs, ports, spaces and bad addresses are 422 naming ip", async () => {
  await using h = await registered();
  const save = (ip: string, name: string) =>
    h.call("/hypervisor/endpoints", {
      method: "POST",
      key: KEY,
      json: { name, ip, username: "root@pam", password: "x" },
    });
  for (const ip of ["192.0.2.10", "2001:db8::1", "pve1", "pve1.lab.example"]) {
    const res = await save(ip, `ok ${ip}`);
    assert.equal(res.status, 201, `${ip}: ${await res.text()}`);
  }
  for (const ip of ["not an ip", "http://pve1", "pve1:8006", "999.1.1.1", "10.0.0", ":::::", ""]) {
    const res = await save(ip, `bad ${ip}`);
    const body = await res.json();
    assert.equal(res.status, 422, `${ip}: ${JSON.stringify(body)}`);
    assert.deepEqual(body.detail[0].loc, ["body", "ip"], ip);
    // One message per bad value: "pve1:8006" is not also "not a valid IPv6 address".
    assert.equal(body.detail.length, 1, `${ip}: ${JSON.stringify(body)}`);
  }
});

Deno.test("POST /auth/keys: no body, an empty body with a JSON content type, and {} all mean the default label ''", async () => {
  await using h = await registered();
  const bodies: RequestInit[] = [
    {},
    { headers: { "content-type": "application/json" }, body: "" },
    { headers: { "content-type": "application/json" }, body: "{}" },
  ];
  for (const init of bodies) {
    const res = await h.call("/auth/keys", { method: "POST", key: KEY, ...init });
    const body = await res.json();
    assert.equal(res.status, 201, JSON.stringify(body));
    assert.equal(body.label, "");
    assert.equal(body.raw_key.length, 64);
  }
  // A body that is there but not an object is still refused.
  const bad = await h.call("/auth/keys", {
    method: "POST",
    key: KEY,
    headers: { "content-type": "application/json" },
    body: "null",
  });
  assert.equal(bad.status, 422);
});

Deno.test("/api2/json: a wrong password or a missing CSRF token stays a bare 401, and the log says why", async () => {
  const deps = await testDeps({ SERVICE_SURFACES: "hypervisor" });
  try {
    const app = await createApp(deps);
    const login = (password: string) =>
      app.request("/api2/json/access/ticket", {
        method: "POST",
        body: new URLSearchParams({ username: "root@pam", password }),
      });
    const wrong = await login("wrong");
    assert.equal(wrong.status, 401);
    assert.deepEqual(await wrong.json(), { data: null });
    const ticket = (await (await login("bridgebox")).json()).data.ticket;
    const noCsrf = await app.request("/api2/json/nodes/pve1/qemu/100/status/start", {
      method: "POST",
      headers: { cookie: `PVEAuthCookie=${ticket}` },
    });
    assert.equal(noCsrf.status, 401);
    await noCsrf.body?.cancel();
    const logged = deps.logger.at("warning").filter((l) => l.message.includes("401"));
    assert.deepEqual(logged.map((l) => [l.path, l.reason]), [
      ["/api2/json/access/ticket", "authentication failure"],
      ["/api2/json/nodes/pve1/qemu/100/status/start", "Permission denied - invalid csrf token"],
    ]);
    assert.ok(!JSON.stringify(deps.logger.lines).includes("wrong"), "no password in the log");
  } finally {
    deps.kv.close();
  }
});
