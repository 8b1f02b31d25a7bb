/**
 * References in writes as a table: every spelling a client sends for an FK (an id, its text, a
 * nested `{"id"}`, attributes, a nested dict, a join across an FK) and for an m2m (tags by id,
 * slug or name, repeated, empty), each sent four ways — a single create, a bulk create
 * beside a valid item, a single PATCH and a bulk PATCH — and each must answer the same: the object
 * referred to, read back; or NetBox's text for the reference (none found, several found, no such
 * id, no pk) at the item's place, with nothing written.
 */
import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";

const VMS = "/api/virtualization/virtual-machines/";
// NetBox's texts name the attributes as its dict_to_filter_params flattened them, in Python's
// repr (utilities/api.py, get_related_object_by_attrs).
const notFound = (params: string) =>
  `Related object not found using the provided attributes: ${params}`;
const several = (params: string) => `Multiple objects match the provided attributes: ${params}`;
const noId = (id: unknown) => `Related object not found using the provided numeric ID: ${id}`;
const noPk = (type: string) => `Incorrect type. Expected pk value, received ${type}.`;
const unrecognized = (value: string) =>
  "Related objects must be referenced by numeric ID or by dictionary of attributes. " +
  `Received an unrecognized value: ${value}`;

async function seed(inv: Inv) {
  const pve = await inv.created("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
  const lxc = await inv.created("/api/virtualization/cluster-types/", { name: "LXC", slug: "lxc" });
  const acme = await inv.created("/api/tenancy/tenants/", { name: "Acme", slug: "acme" });
  const c1 = await inv.created("/api/virtualization/clusters/", { name: "c1", type: pve.id });
  const c2 = await inv.created("/api/virtualization/clusters/", { name: "c2", type: pve.id });
  const c3 = await inv.created("/api/virtualization/clusters/", {
    name: "c3",
    type: lxc.id,
    tenant: acme.id,
  });
  const prod = await inv.created("/api/extras/tags/", { name: "Prod", slug: "prod" });
  const gold = await inv.created("/api/extras/tags/", { name: "Gold", slug: "gold" });
  const vm = await inv.created(VMS, { name: "base", cluster: c1.id, tags: [prod.id] });
  return {
    pve: pve.id,
    lxc: lxc.id,
    c1: c1.id,
    c2: c2.id,
    c3: c3.id,
    prod: prod.id,
    gold: gold.id,
    vm: vm.id,
  };
}

type World = Awaited<ReturnType<typeof seed>>;

/** A write's field and value → the ids it refers to, or the field's error. */
type Row = [field: "cluster" | "tags", value: unknown, want: number | number[] | string];

function rows(w: World): Row[] {
  return [
    ["cluster", w.c2, w.c2],
    ["cluster", String(w.c2), w.c2],
    ["cluster", { id: w.c2 }, w.c2],
    ["cluster", { name: "c2" }, w.c2],
    ["cluster", { type: { slug: "lxc" } }, w.c3],
    ["cluster", { type__slug: "lxc" }, w.c3],
    ["cluster", { type_id: w.lxc }, w.c3],
    ["cluster", { type__id: w.lxc }, w.c3],
    ["cluster", { tenant: { slug: "acme" } }, w.c3],
    ["cluster", { name: "c2", tenant: null }, w.c2],
    ["cluster", { name: "c2", type: { slug: "pve" } }, w.c2],
    ["cluster", { type: { slug: "pve" } }, several("{'type__slug': 'pve'}")],
    ["cluster", { type__slug: "pve" }, several("{'type__slug': 'pve'}")],
    ["cluster", { tenant: null }, several("{'tenant': None}")],
    ["cluster", { name: "c9" }, notFound("{'name': 'c9'}")],
    // An empty value is looked up as given (no cluster has an empty name), not dropped as a
    // list's filter drops it.
    ["cluster", { name: "" }, notFound("{'name': ''}")],
    // The ORM compares a reference's attributes as sent: blanks are not stripped as a list's
    // text filters strip them.
    ["cluster", { name: " c2 " }, notFound("{'name': ' c2 '}")],
    [
      "cluster",
      { name: "c3", type: { slug: "pve" } },
      notFound("{'name': 'c3', 'type__slug': 'pve'}"),
    ],
    ["cluster", { type: { slug: "nope" } }, notFound("{'type__slug': 'nope'}")],
    ["cluster", { name: "it's" }, notFound(`{'name': "it's"}`)],
    // No look-up at all: NetBox's get() over every cluster (three of them).
    ["cluster", {}, several("{}")],
    ["cluster", { name: "c2", type: {} }, w.c2],
    ["cluster", 9999, noId(9999)],
    ["cluster", { id: 9999 }, noId(9999)],
    ["cluster", 0, noId(0)],
    ["cluster", { id: "x" }, noPk("str")],
    // Python's int(): true is 1, a fraction is dropped; what int() refuses is unrecognized.
    ["cluster", `${w.c2}.0`, unrecognized(`${w.c2}.0`)],
    ["cluster", w.c2 + 0.5, w.c2],
    ["cluster", "c2", unrecognized("c2")],
    ["cluster", [], unrecognized("[]")],
    ["cluster", [w.c2, "x"], unrecognized(`[${w.c2}, 'x']`)],
    ["tags", [w.gold, { slug: "gold" }, { name: "Gold" }], [w.gold]],
    ["tags", [{ slug: "prod" }, w.gold], [w.gold, w.prod]],
    ["tags", [], []],
    ["tags", [{ slug: "nope" }], notFound("{'slug': 'nope'}")],
    ["tags", [w.gold, 9999], noId(9999)],
    ["tags", [{ name: "Gold" }, {}], several("{}")],
    ["tags", { slug: "gold" }, 'Expected a list of items but got type "dict".'],
    // DRF's many-related field is not nullable in NetBox's serializers: `[]` clears the tags.
    ["tags", null, "This field may not be null."],
  ];
}

/** What a written VM refers to through `field`, as rendered. */
function refOf(body: Record<string, unknown>, field: "cluster" | "tags"): number | number[] {
  if (field === "cluster") return (body.cluster as { id: number }).id;
  return (body.tags as Array<{ id: number }>).map((t) => t.id);
}

Deno.test("references in writes: each spelling resolves the same in single and bulk creates and updates", async () => {
  const inv = await setup();
  try {
    const w = await seed(inv);
    const base = `${VMS}${w.vm}/`;
    const before = (await inv.call("GET", base)).body;
    let n = 0;
    for (const [field, value, want] of rows(w)) {
      const label = `${field}: ${JSON.stringify(value)}`;
      const item = (name: string) => ({ name, cluster: w.c1, [field]: value });
      const count = (await inv.call("GET", `${VMS}?limit=1`)).body.count;
      const single = await inv.call("POST", VMS, item(`s${++n}`));
      const bulk = await inv.call("POST", VMS, [{ name: `ok${n}`, cluster: w.c1 }, item(`b${n}`)]);
      const patch = await inv.call("PATCH", base, { [field]: value });
      const bulkPatch = await inv.call("PATCH", VMS, [{ id: w.vm, [field]: value }]);
      if (typeof want === "string") {
        const error = { [field]: [want] };
        assert.deepEqual([single.status, single.body], [400, error], `single ${label}`);
        assert.deepEqual([bulk.status, bulk.body], [400, [{}, error]], `bulk ${label}`);
        assert.deepEqual([patch.status, patch.body], [400, error], `patch ${label}`);
        assert.deepEqual([bulkPatch.status, bulkPatch.body], [400, error], `bulk patch ${label}`);
        assert.equal((await inv.call("GET", `${VMS}?limit=1`)).body.count, count, label);
        const now = (await inv.call("GET", base)).body;
        assert.deepEqual([now.cluster, now.tags, now.last_updated], [
          before.cluster,
          before.tags,
          before.last_updated,
        ], label);
        continue;
      }
      assert.equal(single.status, 201, `single ${label}: ${JSON.stringify(single.body)}`);
      assert.deepEqual(refOf(single.body, field), want, `single ${label}`);
      const read = (await inv.call("GET", `${VMS}${single.body.id}/`)).body;
      assert.deepEqual(refOf(read, field), want, `single ${label}, read back`);
      assert.equal(bulk.status, 201, `bulk ${label}: ${JSON.stringify(bulk.body)}`);
      assert.deepEqual(refOf(bulk.body[1], field), want, `bulk ${label}`);
      assert.equal(patch.status, 200, `patch ${label}: ${JSON.stringify(patch.body)}`);
      assert.deepEqual(refOf(patch.body, field), want, `patch ${label}`);
      assert.equal(bulkPatch.status, 200, `bulk patch ${label}: ${JSON.stringify(bulkPatch.body)}`);
      assert.deepEqual(refOf(bulkPatch.body[0], field), want, `bulk patch ${label}`);
      const after = (await inv.call("GET", base)).body;
      assert.deepEqual(refOf(after, field), want, `patch ${label}, read back`);
      // Back as it was, for the next row's "nothing written".
      const reset = await inv.call("PATCH", base, { cluster: w.c1, tags: [w.prod] });
      assert.equal(reset.status, 200, JSON.stringify(reset.body));
      Object.assign(before, reset.body);
    }
  } finally {
    inv.close();
  }
});
