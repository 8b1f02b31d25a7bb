/**
 * An empty attribute in a nested reference is a value: `{"description": ""}` refers to the object
 * whose description is empty, as NetBox's `get(description="")` does. A query string drops an
 * empty filter value (docs/api-behaviour.md, "Inventory: filters"); a reference must not, or the
 * attribute would stop narrowing and the reference would land on another object.
 */
import assert from "node:assert/strict";
import { setup } from "./_setup.ts";

const VMS = "/api/virtualization/virtual-machines/";

Deno.test("a nested reference's empty attribute narrows the look-up as any value does", async () => {
  const inv = await setup();
  try {
    const pve = await inv.created("/api/virtualization/cluster-types/", {
      name: "PVE",
      slug: "pve",
    });
    const plain = await inv.created("/api/virtualization/clusters/", { name: "c1", type: pve.id });
    const lab = await inv.created("/api/virtualization/clusters/", {
      name: "c2",
      type: pve.id,
      description: "lab",
    });
    assert.equal(plain.description, "");

    const found = await inv.call("POST", VMS, { name: "a", cluster: { description: "" } });
    assert.equal(found.status, 201, JSON.stringify(found.body));
    assert.equal(found.body.cluster.id, plain.id);

    // c2's description is not empty: no object has both attributes.
    const none = await inv.call("POST", VMS, {
      name: "b",
      cluster: { name: "c2", description: "" },
    });
    assert.deepEqual([none.status, none.body], [400, {
      cluster: [
        "Related object not found using the provided attributes: {'name': 'c2', 'description': ''}",
      ],
    }]);
    const patched = await inv.call("PATCH", `${VMS}${found.body.id}/`, {
      cluster: { name: "c2", description: "lab" },
    });
    assert.equal(patched.body.cluster.id, lab.id, JSON.stringify(patched.body));
    const back = await inv.call("PATCH", `${VMS}${found.body.id}/`, {
      cluster: { description: "" },
    });
    assert.equal(back.body.cluster.id, plain.id, JSON.stringify(back.body));
    const listed = await inv.call("GET", `${VMS}?fields=name`);
    assert.deepEqual(listed.body.results.map((v: { name: string }) => v.name), ["a"]);
  } finally {
    inv.close();
  }
});
