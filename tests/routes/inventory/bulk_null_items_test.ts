/**
 * A bulk create holding items that are no objects (null, a number) beside valid ones is refused
 * with DRF's texts at those items, and nothing is written, on a model whose bulk writes look up
 * every item's value at once before preparing them (IP addresses: their hosts).
 */
import assert from "node:assert/strict";
import { setup } from "./_setup.ts";

const IPS = "/api/ipam/ip-addresses/";

Deno.test("a bulk create of IP addresses with null and a number among its items answers 400 at those items", async () => {
  const inv = await setup();
  try {
    const r = await inv.call("POST", IPS, [null, { address: "10.0.0.1/24" }, 7]);
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.deepEqual(r.body, [
      { non_field_errors: ["This field may not be null."] },
      {},
      { non_field_errors: ["Invalid data. Expected a dictionary, but got int."] },
    ]);
    assert.equal((await inv.call("GET", IPS)).body.count, 0);
  } finally {
    inv.close();
  }
});
