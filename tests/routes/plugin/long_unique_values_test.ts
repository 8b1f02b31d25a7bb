/**
 * A unique text value longer than the store indexes (400 characters, storage/kv/models.ts: KV keys are 2 KiB) is
 * refused with the field's length message, as its unique check could not run; one of exactly
 * 400 is kept and found again. A backup's `volid` (up to 1,024 characters in the model, unique
 * per endpoint) is the reachable case.
 */
import assert from "node:assert/strict";
import { harness, P } from "./_harness.ts";

Deno.test("a unique value of 400 characters is kept and unique; 401 is refused by length, nothing written", async () => {
  const h = await harness();
  try {
    const ep = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
    });
    assert.equal(ep.status, 201, JSON.stringify(ep.body));
    const volid = (n: number) => "local:backup/" + "v".repeat(n - 13);
    const kept = await h.call("POST", P + "backups/", { endpoint: ep.body.id, volid: volid(400) });
    assert.equal(kept.status, 201, JSON.stringify(kept.body));
    assert.equal(kept.body.volid.length, 400);
    const twin = await h.call("POST", P + "backups/", { endpoint: ep.body.id, volid: volid(400) });
    assert.equal(twin.status, 400, JSON.stringify(twin.body));
    const long = await h.call("POST", P + "backups/", { endpoint: ep.body.id, volid: volid(401) });
    assert.deepEqual([long.status, long.body], [400, {
      volid: ["Ensure this field has no more than 400 characters."],
    }]);
    const listed = await h.call("GET", P + "backups/");
    assert.deepEqual(listed.body.results.map((b: { id: number }) => b.id), [kept.body.id]);
  } finally {
    await h.close();
  }
});
