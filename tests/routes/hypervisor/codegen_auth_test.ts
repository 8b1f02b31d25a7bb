import assert from "node:assert/strict";
import { harness, login } from "./_hv.ts";

Deno.test("codegen generate and mock reset need a mock login (mock mode)", async () => {
  const h = await harness({}, { schemaUrl: null });
  try {
    const body = JSON.stringify({ source: "https://example.invalid/apidata.js" });
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
    assert.notEqual(logged.status, 401, "past the login, the allow-list decides");
    await logged.body?.cancel();
  } finally {
    h.close();
  }
});
