/**
 * What unchanged NetBox clients need beyond the models: pynetbox 7.0.0 (Debian bookworm, under
 * Ansible's netbox.netbox) probes the API root for its version without sending its token.
 */
import assert from "node:assert/strict";
import { setup } from "./_setup.ts";

Deno.test("the API root answers without a token (API-Version header, section names only); a wrong token and every other path stay 403", async () => {
  const inv = await setup();
  try {
    const root = await inv.call("GET", "/api/", undefined, null);
    assert.equal(root.status, 200);
    assert.equal(root.headers.get("API-Version"), "4.2");
    assert.equal(root.body.dcim, "http://inv.test/api/dcim/");
    assert.ok(Object.values(root.body).every((v) => typeof v === "string"));
    const wrong = await inv.call("GET", "/api/", undefined, "Token wrong");
    assert.equal(wrong.status, 403);
    assert.deepEqual(wrong.body, { detail: "Invalid token" });
    for (const path of ["/api/status/", "/api/dcim/", "/api/dcim/sites/", "/api/users/tokens/"]) {
      const r = await inv.call("GET", path, undefined, null);
      assert.equal(r.status, 403, path);
      assert.deepEqual(r.body, { detail: "Authentication credentials were not provided." });
    }
    const post = await inv.call("POST", "/api/", {}, null);
    assert.equal(post.status, 403);
  } finally {
    inv.close();
  }
});
