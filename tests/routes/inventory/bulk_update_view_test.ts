/**
 * A bulk (list) PUT or PATCH answers as NetBox 4.6's bulk view does (docs/api-behaviour.md,
 * Inventory: errors): the items are mapped by id (an id given twice is updated once, with its
 * last item), the answer lists the objects in the model's default ordering whatever order the
 * request named them in, and a refusal is the first refused object's errors alone. A client
 * that pairs the answer with its request by position would pair the wrong objects on NetBox;
 * the sync pairs by id (tests/domain/sync/bulk_update_answers_test.ts).
 */
import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";

const VMS = "/api/virtualization/virtual-machines/";
const TENANTS = "/api/tenancy/tenants/";

async function seed(inv: Inv) {
  const post = inv.created;
  const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
  const cluster = await post("/api/virtualization/clusters/", { name: "c1", type: type.id });
  // Created in an order that is neither the name order nor its reverse.
  const [b, c, a] = await post(VMS, [
    { name: "vm-b", cluster: cluster.id, memory: 1 },
    { name: "vm-c", cluster: cluster.id, memory: 1 },
    { name: "vm-a", cluster: cluster.id, memory: 1 },
  ]);
  return { cluster: cluster.id, a: a.id, b: b.id, c: c.id };
}

const pairs = (body: Array<{ name: string; memory: number }>) =>
  body.map((v) => [v.name, v.memory]);

Deno.test("a bulk PATCH answers in the model's ordering, not the request's", async () => {
  const inv = await setup();
  try {
    const w = await seed(inv);
    const r = await inv.call("PATCH", VMS, [
      { id: w.c, memory: 30 },
      { id: w.a, memory: 10 },
      { id: w.b, memory: 20 },
    ]);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    // VirtualMachine.Meta.ordering is (name, pk).
    assert.deepEqual(pairs(r.body), [["vm-a", 10], ["vm-b", 20], ["vm-c", 30]]);
    // Descending by name after a rename: the ordering is the objects' new names.
    const renamed = await inv.call("PUT", VMS, [
      { id: w.a, name: "vm-z", cluster: w.cluster, memory: 11 },
      { id: w.c, name: "vm-c", cluster: w.cluster, memory: 31 },
    ]);
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    assert.deepEqual(pairs(renamed.body), [["vm-c", 31], ["vm-z", 11]]);
  } finally {
    inv.close();
  }
});

Deno.test("an id given twice in a bulk update is updated once, with its last item", async () => {
  const inv = await setup();
  try {
    const w = await seed(inv);
    const before = (await inv.call("GET", "/api/core/object-changes/?limit=1")).body.count;
    const r = await inv.call("PATCH", VMS, [
      { id: w.b, memory: 5, description: "first" },
      { id: w.a, memory: 7 },
      { id: w.b, memory: 6 },
    ]);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(
      r.body.map((v: { name: string; memory: number; description: string }) => [
        v.name,
        v.memory,
        v.description,
      ]),
      // The first item of vm-b is dropped whole (its description too), as a dict keyed by id
      // keeps the last value.
      [["vm-a", 7, ""], ["vm-b", 6, ""]],
    );
    const read = (await inv.call("GET", `${VMS}${w.b}/`)).body;
    assert.deepEqual([read.memory, read.description], [6, ""]);
    const log = await inv.call("GET", `/api/core/object-changes/?ordering=id&limit=100`);
    const added = log.body.results.slice(before);
    assert.deepEqual(
      added.map((c: { object_repr: string; action: { value: string } }) => [
        c.object_repr,
        c.action.value,
      ]).sort(),
      [["vm-a", "update"], ["vm-b", "update"]],
      "one change per object",
    );
  } finally {
    inv.close();
  }
});

Deno.test("a refused bulk update answers the first refused object in the model's ordering", async () => {
  const inv = await setup();
  try {
    const w = await seed(inv);
    // vm-c's and vm-b's items are both refused; vm-b comes first by name, whatever the request's
    // order, and its errors alone are the answer. Nothing is written.
    const r = await inv.call("PATCH", VMS, [
      { id: w.c, memory: -3 },
      { id: w.a, memory: 99 },
      { id: w.b, status: "bogus" },
    ]);
    assert.deepEqual([r.status, r.body], [400, { status: ["bogus is not a valid choice."] }]);
    const now = await inv.call("GET", `${VMS}?ordering=name`);
    assert.deepEqual(pairs(now.body.results), [["vm-a", 1], ["vm-b", 1], ["vm-c", 1]]);
    // A uniqueness refusal found across the batch is answered the same way.
    const post = inv.created;
    const [t1, t2] = await post(TENANTS, [
      { name: "Zulu", slug: "zulu" },
      { name: "Alpha", slug: "alpha" },
    ]);
    const clash = await inv.call("PATCH", TENANTS, [
      { id: t1.id, slug: "same" },
      { id: t2.id, slug: "same" },
    ]);
    assert.deepEqual([clash.status, clash.body], [400, {
      slug: ["tenant with this slug already exists."],
    }]);
    const tenants = await inv.call("GET", `${TENANTS}?ordering=name`);
    assert.deepEqual(
      tenants.body.results.map((t: { slug: string }) => t.slug),
      ["alpha", "zulu"],
    );
    // The item that is no object is still named by position: the request's shape is checked
    // before any object is read, as NetBox's BulkOperationSerializer does.
    const shape = await inv.call("PATCH", VMS, [{ id: w.a, memory: 2 }, { memory: 3 }]);
    assert.deepEqual([shape.status, shape.body], [400, [{}, { id: ["This field is required."] }]]);
  } finally {
    inv.close();
  }
});
