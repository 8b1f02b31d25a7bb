import assert from "node:assert/strict";
import { harness, login } from "./_hv.ts";

Deno.test("codegen generate and mock reset need a mock login (mock mode)", async () => {
  const h = await harness({}, { schemaUrl: null });
  try {
    // A source the allow-list refuses without any lookup (no DNS, no file read).
    const body = JSON.stringify({ source: "/etc/passwd" });
    for (const path of ["/pve/codegen/generate", "/pve/mock/reset"]) {
      const anonymous = await h.app.request(path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      assert.equal(anonymous.status, 401, path);
      await anonymous.body?.cancel();
    }
    const s = await login(h);
    // A ticket without its CSRF token is not enough for a write.
    const noCsrf = await h.app.request("/pve/codegen/generate", {
      method: "POST",
      headers: { "content-type": "application/json", cookie: s.headers.cookie },
      body,
    });
    assert.equal(noCsrf.status, 401);
    await noCsrf.body?.cancel();
    const logged = await h.app.request("/pve/codegen/generate", {
      method: "POST",
      headers: { "content-type": "application/json", ...s.headers },
      body,
    });
    // Past the login, the allow-list decides (its exact answer, so a crash cannot pass).
    assert.deepEqual([logged.status, await logged.json()], [400, {
      detail: "Source not allowed: a schema file must end in .json or .js",
      errors: [{ field: "source", message: "a schema file must end in .json or .js" }],
    }]);
    const reset = await h.app.request("/pve/mock/reset", {
      method: "POST",
      headers: { "content-type": "application/json", ...s.headers },
      body: "{}",
    });
    assert.equal(reset.status, 200);
    assert.equal((await reset.json()).detail, "Mock state restored to the seed.");
  } finally {
    h.close();
  }
});
