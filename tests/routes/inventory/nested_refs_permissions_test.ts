/**
 * A nested reference by attributes (`{"cluster": {"name": "c1"}}`, `{"slug": "prod"}` for a
 * tag) looks only among the objects the token may view, as NetBox 4.6's
 * get_related_object_by_attrs restricts the queryset before the look-up: a token that may add VMs
 * but not list clusters cannot tell an existing cluster name from a missing one. By id (`5`,
 * `{"id": 5}`) a reference is always resolved, as there.
 */
import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";

const VMS = "/api/virtualization/virtual-machines/";

async function token(inv: Inv, permissions: string[]): Promise<string> {
  const r = await inv.call("POST", "/api/users/tokens/", {
    version: 1,
    write_enabled: true,
    permissions,
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.header ?? `Token ${r.body.token}`;
}

Deno.test("references by attributes look only among objects the token may view; by id always", async () => {
  const inv = await setup();
  try {
    const type = await inv.created("/api/virtualization/cluster-types/", { name: "P", slug: "p" });
    const c1 = await inv.created("/api/virtualization/clusters/", { name: "c1", type: type.id });
    const prod = await inv.created("/api/extras/tags/", { name: "Prod", slug: "prod" });
    const base = ["virtualization.add_virtualmachine", "virtualization.view_virtualmachine"];
    const blind = await token(inv, base);
    const seeing = await token(inv, [...base, "virtualization.view_cluster", "extras.view_tag"]);
    const post = (auth: string, name: string, extra: Record<string, unknown>) =>
      inv.call("POST", VMS, { name, ...extra }, auth);

    // Without view permission: an existing name answers as a missing one, nothing is written.
    const hidden = await post(blind, "a", { cluster: { name: "c1" } });
    const missing = await post(blind, "b", { cluster: { name: "c9" } });
    assert.deepEqual([hidden.status, hidden.body], [400, {
      cluster: ["Related object not found using the provided attributes: {'name': 'c1'}"],
    }]);
    assert.deepEqual([missing.status, missing.body], [400, {
      cluster: ["Related object not found using the provided attributes: {'name': 'c9'}"],
    }]);
    const tagged = await post(blind, "c", { cluster: c1.id, tags: [{ slug: "prod" }] });
    assert.deepEqual([tagged.status, tagged.body], [400, {
      tags: ["Related object not found using the provided attributes: {'slug': 'prod'}"],
    }]);
    // By id, with or without the nested form: resolved whatever the token may view.
    for (const [name, cluster] of [["d", c1.id], ["e", { id: c1.id }]] as const) {
      const r = await post(blind, name, { cluster, tags: [prod.id] });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.deepEqual([r.body.cluster.id, r.body.tags.map((t: { id: number }) => t.id)], [
        c1.id,
        [prod.id],
      ]);
    }
    // With view permission, the same attributes find the objects.
    const seen = await post(seeing, "f", { cluster: { name: "c1" }, tags: [{ slug: "prod" }] });
    assert.equal(seen.status, 201, JSON.stringify(seen.body));
    assert.equal(seen.body.cluster.id, c1.id);
    const names = (await inv.call("GET", `${VMS}?ordering=name`)).body.results.map((
      v: { name: string },
    ) => v.name);
    assert.deepEqual(names, ["d", "e", "f"]);
  } finally {
    inv.close();
  }
});
