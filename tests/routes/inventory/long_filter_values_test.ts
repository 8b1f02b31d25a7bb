/**
 * A filter value too long for a KV key (tag=<3,000 characters>) is a lookup that finds nothing,
 * never a 500 (found by the hostile-input suite, tests/reliability/hostile_test.ts).
 */
import assert from "node:assert/strict";
import { createApp } from "../../../app.ts";
import { testDeps } from "../../_helpers.ts";

const ROOT = "0123456789abcdef0123456789abcdef01234567";

Deno.test("inventory: over-long tag, unique and index filter values answer an empty list", async () => {
  const deps = await testDeps({ INVENTORY_BOOTSTRAP_TOKEN: ROOT });
  try {
    const app = await createApp(deps);
    const headers = { authorization: `Token ${ROOT}` };
    const long = "a".repeat(3000);
    for (
      const query of [`tag=${long}`, `tag__nic=${long}`, `tag__n=${long}`, `site=${long}`]
    ) {
      const res = await app.request(`/api/tenancy/tenants/?${query}`, { headers });
      const body = await res.json();
      assert.ok(res.status === 200 || res.status === 400, `${query.slice(0, 12)}: ${res.status}`);
      if (res.status === 200) assert.equal(body.count, 0);
    }
    const vms = await app.request(`/api/virtualization/virtual-machines/?site=${long}`, {
      headers,
    });
    assert.ok(vms.status < 500, `${vms.status}`);
    await vms.body?.cancel();
  } finally {
    deps.kv.close();
  }
});
