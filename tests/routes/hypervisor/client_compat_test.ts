/**
 * What real Proxmox clients send (proxmoxer, the `proxmox-api` npm client, curl, the bpg
 * Terraform provider, the ExtJS UI) and how the mock must take it: HEAD, URL-encoded token
 * headers, `_dc` cache busters, multipart uploads, oversized bodies, index endpoints.
 */
import assert from "node:assert/strict";
import { call, harness, login } from "./_hv.ts";

Deno.test("client compat: HEAD answers like GET without a body on both mounts", async () => {
  const h = await harness();
  try {
    const s = await login(h);
    for (const path of ["/api2/json/nodes", "/pve/nodes", "/api2/json/version"]) {
      const res = await h.app.request(path, { method: "HEAD", headers: s.headers });
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get("content-type") ?? "", /application\/json/);
      assert.equal(await res.text(), "");
    }
    // Still authenticated and still 501 for what the schema lacks.
    assert.equal((await h.app.request("/api2/json/nodes", { method: "HEAD" })).status, 401);
    const unknown = await h.app.request("/api2/json/nodes/pve1/nothing", {
      method: "HEAD",
      headers: s.headers,
    });
    assert.equal(unknown.status, 501);
    await unknown.body?.cancel();
  } finally {
    h.close();
  }
});

Deno.test("client compat: a URL-encoded PVEAPIToken value is accepted (Proxmox unescapes it)", async () => {
  const h = await harness();
  try {
    const s = await login(h);
    const made = await call(h, s, "POST", "/api2/json/access/users/root@pam/token/ci", {
      privsep: 0,
    });
    assert.equal(made.status, 200);
    const secret = made.body.data.value as string;
    const variants = [
      `PVEAPIToken=root@pam!ci=${secret}`,
      `PVEAPIToken=root%40pam!ci=${secret}`,
      `PVEAPIToken=root%40pam%21ci%3D${secret}`,
      `PVEAPIToken root@pam!ci=${secret}`,
    ];
    for (const authorization of variants) {
      const res = await call(h, { authorization }, "GET", "/api2/json/nodes");
      assert.equal(res.status, 200, authorization);
    }
    const bad = await call(
      h,
      { authorization: "PVEAPIToken=root%40pam!ci=%E0%A4%A" },
      "GET",
      "/api2/json/nodes",
    );
    assert.equal(bad.status, 401);
  } finally {
    h.close();
  }
});

Deno.test("client compat: the ExtJS `_dc` cache buster is ignored, not a validation error", async () => {
  const h = await harness();
  try {
    const s = await login(h);
    const res = await call(h, s, "GET", "/api2/json/nodes?_dc=1767225600000");
    assert.equal(res.status, 200);
    assert.ok(Array.isArray(res.body.data));
    const pve = await call(h, s, "GET", "/pve/nodes/pve1/qemu?_dc=1");
    assert.equal(pve.status, 200);
  } finally {
    h.close();
  }
});
