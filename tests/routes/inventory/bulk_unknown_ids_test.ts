/**
 * A bulk (list) PUT, PATCH or DELETE naming ids no object has: NetBox 4.6 filters the request's
 * ids through the queryset and passes over the rest, so pynetbox's and Ansible's bulk calls that
 * race a hand delete still succeed (docs/api-behaviour.md, Inventory: errors). One object's PUT,
 * PATCH or DELETE of an unknown id stays a 404.
 */
import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";

const VMS = "/api/virtualization/virtual-machines/";

async function seed(inv: Inv) {
  const post = inv.created;
  const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
  const cluster = await post("/api/virtualization/clusters/", { name: "c1", type: type.id });
  const [vm1, vm2, vm3] = await post(VMS, [
    { name: "vm1", cluster: cluster.id },
    { name: "vm2", cluster: cluster.id },
    { name: "vm3", cluster: cluster.id },
  ]);
  return { cluster: cluster.id, vm1: vm1.id, vm2: vm2.id, vm3: vm3.id };
}

async function names(inv: Inv): Promise<string[]> {
  const r = await inv.call("GET", `${VMS}?ordering=id`);
  assert.equal(r.status, 200);
  return r.body.results.map((v: { name: string }) => v.name);
}

async function changes(inv: Inv): Promise<Array<[string, string]>> {
  const r = await inv.call("GET", "/api/core/object-changes/?ordering=id&limit=100");
  assert.equal(r.status, 200);
  return r.body.results.map((c: { action: { value: string }; object_repr: string }) => [
    c.action.value,
    c.object_repr,
  ]);
}

Deno.test("a bulk PATCH or PUT passes over unknown ids and answers the objects it changed", async () => {
  const inv = await setup();
  try {
    const w = await seed(inv);
    const before = (await changes(inv)).length;
    const patched = await inv.call("PATCH", VMS, [
      { id: 99999, name: "ghost" },
      { id: w.vm2, name: "vm2-renamed" },
    ]);
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.deepEqual(
      patched.body.map((v: { id: number; name: string }) => [v.id, v.name]),
      [[w.vm2, "vm2-renamed"]],
    );
    const put = await inv.call("PUT", VMS, [
      { id: w.vm3, name: "vm3-put", cluster: w.cluster },
      { id: 88888, name: "ghost", cluster: w.cluster },
    ]);
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual(put.body.map((v: { name: string }) => v.name), ["vm3-put"]);
    const none = await inv.call("PATCH", VMS, [{ id: 99999, name: "ghost" }]);
    assert.equal(none.status, 200, JSON.stringify(none.body));
    assert.deepEqual(none.body, []);
    assert.deepEqual(await names(inv), ["vm1", "vm2-renamed", "vm3-put"]);
    // Only the objects that exist were logged; no object was made for the unknown ids.
    assert.deepEqual((await changes(inv)).slice(before), [
      ["update", "vm2-renamed"],
      ["update", "vm3-put"],
    ]);
    const one = await inv.call("PATCH", `${VMS}99999/`, { name: "ghost" });
    assert.equal(one.status, 404);
    assert.deepEqual(one.body, { detail: "No VirtualMachine matches the given query." });
  } finally {
    inv.close();
  }
});

Deno.test("a bulk DELETE passes over unknown ids and deletes the objects that exist", async () => {
  const inv = await setup();
  try {
    const w = await seed(inv);
    const before = (await changes(inv)).length;
    const gone = await inv.call("DELETE", VMS, [{ id: w.vm2 }, { id: 99999 }]);
    assert.equal(gone.status, 204, JSON.stringify(gone.body));
    assert.deepEqual(await names(inv), ["vm1", "vm3"]);
    assert.equal((await inv.call("GET", `${VMS}${w.vm2}/`)).status, 404);
    const none = await inv.call("DELETE", VMS, [{ id: 99999 }, { id: w.vm2 }]);
    assert.equal(none.status, 204, JSON.stringify(none.body));
    assert.deepEqual(await names(inv), ["vm1", "vm3"]);
    assert.deepEqual((await changes(inv)).slice(before), [["delete", "vm2"]]);
    const one = await inv.call("DELETE", `${VMS}99999/`);
    assert.equal(one.status, 404);
    assert.deepEqual(one.body, { detail: "No VirtualMachine matches the given query." });
  } finally {
    inv.close();
  }
});
