/**
 * What an anonymous caller learns about versions (SECURITY.md "Who may read what"): `/meta`
 * names no version or runtime without an API key, `/pve/versions` needs a hypervisor login, and
 * the public `/pve/openapi.json` (read by the docs pages) does not say which schema runs.
 */
import assert from "node:assert/strict";
import { createApp } from "../../app.ts";
import { testDeps } from "../_helpers.ts";

const KEY = "disclosure-test-key-0123456789abcdef0123456789";

Deno.test("disclosure: anonymous /meta, /pve/versions and /pve/openapi.json tell no version; a signed-in caller sees them", async () => {
  const deps = await testDeps();
  try {
    const app = await createApp(deps);
    const peer = { remoteAddr: { hostname: "203.0.113.5" } };
    const registered = await app.request("/auth/register-key", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ api_key: KEY }),
    }, peer);
    assert.equal(registered.status, 201);
    await registered.body?.cancel();

    const meta = await (await app.request("/meta", {}, peer)).json();
    assert.equal(meta.version, null);
    assert.equal(meta.runtime, null);
    assert.ok(!JSON.stringify(meta).includes(Deno.version.deno), JSON.stringify(meta));
    const keyed =
      await (await app.request("/meta", { headers: { "x-service-api-key": KEY } }, peer))
        .json();
    assert.match(keyed.version, /^\d+\.\d+\.\d+/);
    assert.equal(keyed.runtime, `deno ${Deno.version.deno}`);

    const versions = await app.request("/pve/versions", {}, peer);
    assert.equal(versions.status, 401);
    const refused = await versions.json();
    assert.match(refused.detail, /Log in/);
    assert.ok(!JSON.stringify(refused).includes("9.2"));
    const doc = await (await app.request("/pve/openapi.json", {}, peer)).json();
    assert.equal(doc.info.version, "unspecified");
    assert.ok(!doc.info.title.includes("9.2"), doc.info.title);
    // The docs page itself stays public and points at that document.
    const page = await app.request("/pve/docs", {}, peer);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /\/pve\/openapi\.json/);

    // Signed in to the hypervisor (a ticket): versions are listed and named.
    const login = await app.request("/api2/json/access/ticket", {
      method: "POST",
      body: new URLSearchParams({
        username: deps.config.hypervisor.mockUser,
        password: deps.config.hypervisor.mockPassword,
      }),
    }, peer);
    const { data } = await login.json();
    const cookie = { cookie: `PVEAuthCookie=${encodeURIComponent(data.ticket)}` };
    const listed = await (await app.request("/pve/versions", { headers: cookie }, peer)).json();
    assert.ok(listed.versions.some((v: { version: string }) => v.version === "9.2"));
    const named = await (await app.request("/pve/openapi.json", { headers: cookie }, peer)).json();
    assert.equal(named.info.version, listed.active);
  } finally {
    deps.kv.close();
  }
});
