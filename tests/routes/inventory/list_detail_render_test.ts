/**
 * A list page renders each object exactly as its own GET does, whatever else is on the page: a
 * page shares one cache of related records and nested forms (render.ts), so an object whose
 * references another row of the page already loaded, a reference repeated across rows, an
 * object custom field naming a row of the page, several rows or a deleted object, must come out
 * the same as when it is read alone — in full, brief, `fields=` and `omit=` forms.
 */
import assert from "node:assert/strict";
import { setup } from "./_setup.ts";

const VMS = "/api/virtualization/virtual-machines/";

Deno.test("list rows render as their detail reads: shared references, object custom fields, a deleted target", async () => {
  const inv = await setup();
  try {
    const post = async (path: string, body: unknown) =>
      (await inv.created(path, body)).id as number;
    const vmTypes = ["virtualization.virtualmachine"];
    await post("/api/extras/custom-fields/", {
      name: "twin",
      type: "object",
      object_types: vmTypes,
      related_object_type: "virtualization.virtualmachine",
    });
    await post("/api/extras/custom-fields/", {
      name: "peers",
      type: "multiobject",
      object_types: vmTypes,
      related_object_type: "virtualization.virtualmachine",
    });
    await post("/api/extras/custom-fields/", {
      name: "home",
      type: "object",
      object_types: vmTypes,
      related_object_type: "virtualization.cluster",
    });
    const site = await post("/api/dcim/sites/", { name: "AMS1", slug: "ams1" });
    const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
    const c1 = await post("/api/virtualization/clusters/", {
      name: "c1",
      type,
      scope_type: "dcim.site",
      scope_id: site,
    });
    const c2 = await post("/api/virtualization/clusters/", { name: "c2", type });
    const acme = await post("/api/tenancy/tenants/", { name: "Acme", slug: "acme" });
    const [gold, prod] = [
      await post("/api/extras/tags/", { name: "Gold", slug: "gold", weight: 5 }),
      await post("/api/extras/tags/", { name: "Prod", slug: "prod" }),
    ];
    const doomed = await post(VMS, { name: "doomed", cluster: c2 });
    const vm = (name: string, extra: Record<string, unknown>) =>
      post(VMS, { name, cluster: c1, ...extra });
    const a = await vm("a", { tenant: acme, tags: [prod, gold] });
    const b = await vm("b", { tags: [prod], custom_fields: { twin: a, peers: [a], home: c2 } });
    const c = await vm("c", {
      cluster: c2,
      custom_fields: { twin: doomed, peers: [doomed, a, b], home: c1 },
    });
    const d = await vm("d", { tenant: acme, custom_fields: { twin: b, peers: [b, b], home: c1 } });
    const eth = await post("/api/virtualization/interfaces/", { virtual_machine: a, name: "eth0" });
    const ip = await post("/api/ipam/ip-addresses/", {
      address: "192.0.2.1/24",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: eth,
    });
    await inv.call("PATCH", `${VMS}${a}/`, { primary_ip4: ip, custom_fields: { twin: d } });
    const gone = await inv.call("DELETE", `${VMS}${doomed}/`);
    assert.equal(gone.status, 204);

    // The deleted object is no longer shown, alone or in a list.
    const cAlone = (await inv.call("GET", `${VMS}${c}/`)).body;
    assert.deepEqual(cAlone.custom_fields.twin, null);
    assert.deepEqual(cAlone.custom_fields.peers.map((p: { id: number }) => p.id), [a, b]);
    assert.equal(cAlone.custom_fields.home.id, c1);

    const forms = ["", "brief=1", "fields=id,name,custom_fields,tags,tenant", "omit=comments"];
    const orders = ["", "ordering=-name", "ordering=id"];
    for (const form of forms) {
      const alone = new Map<number, unknown>();
      for (const id of [a, b, c, d]) {
        const r = await inv.call("GET", `${VMS}${id}/${form ? `?${form}` : ""}`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        alone.set(id, r.body);
      }
      for (const order of orders) {
        for (const limit of [1, 2, 50]) {
          const query = [form, order, `limit=${limit}`].filter((x) => x).join("&");
          for (let offset = 0; offset < 4; offset += limit) {
            const page = await inv.call("GET", `${VMS}?${query}&offset=${offset}`);
            assert.equal(page.status, 200, JSON.stringify(page.body));
            for (const row of page.body.results) {
              assert.deepEqual(row, alone.get(row.id), `${query}&offset=${offset}: ${row.id}`);
            }
          }
        }
      }
    }
    // And through a filter that reads indexes, and a search.
    for (const query of [`cluster_id=${c1}`, "tag=prod", "q=b", `tenant_id=${acme}`]) {
      const page = await inv.call("GET", `${VMS}?${query}`);
      for (const row of page.body.results) {
        assert.deepEqual(row, (await inv.call("GET", `${VMS}${row.id}/`)).body, query);
      }
    }
  } finally {
    inv.close();
  }
});
