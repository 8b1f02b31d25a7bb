/**
 * Bulk writes are capped (SECURITY.md "Limits"): at most 1000 objects per request, so the
 * work and the error answer stay bounded.
 */
import assert from "node:assert/strict";
import { harness, P } from "../routes/plugin/_harness.ts";

Deno.test("bulk: more than 1000 objects answer 400 at once; the error answer stays small", async () => {
  const h = await harness();
  try {
    const many = Array.from({ length: 300_000 }, () => ({}));
    for (
      const [method, path] of [
        ["POST", "/api/dcim/sites/"],
        ["PATCH", "/api/dcim/sites/"],
        ["DELETE", "/api/dcim/sites/"],
        ["POST", P + "storage/"],
      ]
    ) {
      const res = await h.call(method, path, many);
      assert.equal(res.status, 400, `${method} ${path}`);
      assert.deepEqual(res.body, {
        detail: "A bulk request may hold at most 1000 objects (got 300000).",
      });
    }
    // At the cap, per-item validation errors are answered, bounded by the cap.
    const atCap = await h.call("POST", "/api/dcim/sites/", many.slice(0, 1000));
    assert.equal(atCap.status, 400);
    assert.equal(atCap.body.length, 1000);
    assert.ok(JSON.stringify(atCap.body).length < 200_000);
    assert.equal((await h.call("GET", "/api/dcim/sites/")).body.count, 0, "nothing written");
  } finally {
    await h.close();
  }
});
