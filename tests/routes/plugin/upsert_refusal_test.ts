/**
 * A list upsert whose updates are refused after preparation (here a record past the store's size
 * limit) answers each refusal at its item's place and writes nothing: the plugin's upserts are
 * no NetBox bulk view, whose answer is the first refused object alone (docs/api-behaviour.md).
 */
import assert from "node:assert/strict";
import { harness, P } from "./_harness.ts";

Deno.test("a list upsert refused at its second item's update (prepared or checked) answers the error at that item, nothing written", async () => {
  const h = await harness();
  try {
    const ep = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
    });
    const cluster = await h.call("POST", P + "clusters/", { name: "c", endpoint: ep.body.id });
    assert.equal(cluster.status, 201, JSON.stringify(cluster.body));
    const made = await h.call("POST", P + "storage/", [
      { name: "a", cluster: cluster.body.id, path: "/a" },
      { name: "b", cluster: cluster.body.id, path: "/b" },
    ]);
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const refused = await h.call("POST", P + "storage/", [
      { name: "a", cluster: cluster.body.id, path: "/a2" },
      { name: "b", cluster: cluster.body.id, raw_config: { big: "x".repeat(70_000) } },
    ]);
    assert.equal(refused.status, 400, JSON.stringify(refused.body).slice(0, 300));
    assert.equal(refused.body.length, 2, JSON.stringify(refused.body).slice(0, 300));
    assert.deepEqual(refused.body[0], {});
    assert.notDeepEqual(refused.body[1], {});
    // Refused while prepared (a value of the wrong type), the same: at the item's place.
    const invalid = await h.call("POST", P + "storage/", [
      { name: "a", cluster: cluster.body.id, path: "/a3" },
      { name: "b", cluster: cluster.body.id, total: "lots" },
    ]);
    assert.equal(invalid.status, 400, JSON.stringify(invalid.body));
    assert.deepEqual(invalid.body, [{}, { total: ["A valid number is required."] }]);
    const listed = await h.call("GET", P + "storage/?ordering=name");
    assert.deepEqual(listed.body.results.map((s: { path: string }) => s.path), ["/a", "/b"]);
  } finally {
    await h.close();
  }
});
