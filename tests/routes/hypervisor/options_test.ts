import assert from "node:assert/strict";
import { harness } from "./_hv.ts";

Deno.test("OPTIONS lists a path's methods from the schema, on both mounts; unknown paths stay 501", async () => {
  const h = await harness({}, { schemaUrl: null });
  try {
    for (const prefix of ["/api2/json", "/pve"]) {
      const res = await h.app.request(`${prefix}/nodes/pve1/qemu`, { method: "OPTIONS" });
      assert.equal(res.status, 204, prefix);
      assert.deepEqual(res.headers.get("allow")?.split(", ").sort(), [
        "GET",
        "HEAD",
        "OPTIONS",
        "POST",
      ]);
      const unknown = await h.app.request(`${prefix}/no/such/path`, { method: "OPTIONS" });
      assert.equal(unknown.status, 501, prefix);
      await unknown.body?.cancel();
    }
  } finally {
    h.close();
  }
});
