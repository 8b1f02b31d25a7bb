/**
 * Object rules NetBox clients rely on: nested references with unknown attributes are refused,
 * OPTIONS carries DRF's actions metadata, the VM filters clients use, a VM's site follows its
 * cluster, local_context_data is an object, and an interface's parent or bridge is a sibling.
 */
import assert from "node:assert/strict";
import { setup } from "./_setup.ts";
import { world } from "./_world.ts";

Deno.test("nested references: an unknown attribute is a 400, never a silent match", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    // NetBox resolves a reference's attributes with Django's ORM: what is not a field of the
    // model is refused with the ORM's text, naming the fields there are.
    const choices = "comments, description, group, id, name, owner, scope_id, scope_type, " +
      "status, tenant, type";
    const refused = async (cluster: unknown) => {
      const r = await inv.call("POST", "/api/virtualization/virtual-machines/", {
        name: "vm9",
        cluster,
      });
      return [r.status, r.body];
    };
    assert.deepEqual(await refused({ bogus: "x" }), [400, {
      cluster: [`Cannot resolve keyword 'bogus' into field. Choices are: ${choices}`],
    }]);
    // "<field>_id" names a relation only when <field> is one: on a text field it is unknown too
    // (the filter engine would ignore it and match the only cluster there is).
    assert.deepEqual(await refused({ name_id: 1 }), [400, {
      cluster: [`Cannot resolve keyword 'name_id' into field. Choices are: ${choices}`],
    }]);
    // The list filters' own names are no fields: tags, custom fields, custom filters.
    const tag = await inv.call("POST", "/api/extras/tags/", { name: "Gold", slug: "gold" });
    await inv.call("PATCH", `/api/virtualization/clusters/${w.cluster}/`, { tags: [tag.body.id] });
    for (const [attr, value] of [["tag", "gold"], ["tag_id", tag.body.id], ["cf_x", "1"]]) {
      assert.deepEqual(await refused({ [attr]: value }), [400, {
        cluster: [`Cannot resolve keyword '${attr}' into field. Choices are: ${choices}`],
      }], attr);
    }
    const scoped = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "vm9",
      cluster: { site_id: 1 },
    });
    assert.deepEqual(scoped.status, 400, JSON.stringify(scoped.body));
    // So are the filters' lookups (the ORM has its own); its comparisons work.
    assert.deepEqual(await refused({ name__ic: "c" }), [400, {
      cluster: ["Unsupported lookup 'ic' for CharField or join on the field not permitted."],
    }]);
    assert.deepEqual(await refused({ type__n: 1 }), [400, {
      cluster: ["Related Field got invalid lookup: n"],
    }]);
    assert.deepEqual(await refused({ id__ie: 1 }), [400, {
      cluster: ["Unsupported lookup 'ie' for BigAutoField or join on the field not permitted."],
    }]);
    const byLookup = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "vm8",
      cluster: { id__gte: w.cluster, name__regex: "^c" },
    });
    assert.equal(byLookup.status, 201, JSON.stringify(byLookup.body));
    assert.equal(byLookup.body.cluster.id, w.cluster);
    // Known attributes (fields, `<fk>_id`, nested dicts, joins across an FK) still resolve.
    const ok = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "vm9",
      cluster: { name: "c1", type: { slug: "pve" } },
    });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    assert.equal(ok.body.cluster.id, w.cluster);
    const byId = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "vm10",
      cluster: { name: "c1", type_id: 1 },
    });
    assert.equal(byId.status, 201, JSON.stringify(byId.body));
    const joined = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "vm11",
      cluster: { name: "c1", type__slug: "pve" },
    });
    assert.equal(joined.status, 201, JSON.stringify(joined.body));
    assert.equal(joined.body.cluster.id, w.cluster);
    const wrongJoin = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "vm12",
      cluster: { name: "c1", type__slug: "other" },
    });
    assert.equal(wrongJoin.status, 400, JSON.stringify(wrongJoin.body));
    // An empty value in a reference is a value (unlike in a list's URL): "" asks for "".
    const type = await inv.call("GET", "/api/virtualization/cluster-types/?slug=pve");
    const c2 = await inv.call("POST", "/api/virtualization/clusters/", {
      name: "c2",
      type: type.body.results[0].id,
      description: "the second",
    });
    assert.equal(c2.status, 201, JSON.stringify(c2.body));
    const empty = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "vm13",
      cluster: { description: "" },
    });
    assert.equal(empty.status, 201, JSON.stringify(empty.body));
    assert.equal(empty.body.cluster.id, w.cluster);
  } finally {
    inv.close();
  }
});

Deno.test("OPTIONS carries DRF's actions metadata, so pynetbox's choices() works", async () => {
  const inv = await setup();
  try {
    const r = await inv.call("OPTIONS", "/api/virtualization/virtual-machines/");
    assert.equal(r.status, 200);
    const post = r.body.actions.POST;
    assert.deepEqual(post.status.choices.find((x: { value: string }) => x.value === "active"), {
      value: "active",
      display_name: "Active",
    });
    assert.equal(post.name.required, true);
    assert.equal(post.primary_ip.read_only, true);
    assert.equal(post.id.read_only, true);
    // Exactly what pynetbox does with it.
    const choices: Record<string, unknown[]> = {};
    for (const [prop, meta] of Object.entries(post as Record<string, { choices?: unknown[] }>)) {
      if (meta.choices) choices[prop] = meta.choices;
    }
    assert.deepEqual(Object.keys(choices).sort(), ["start_on_boot", "status"]);
    const detail = await inv.call("OPTIONS", "/api/virtualization/virtual-machines/1/");
    assert.ok(detail.body.actions.PUT);
    // Read-only resources describe no write action.
    assert.equal((await inv.call("OPTIONS", "/api/core/jobs/")).body.actions, undefined);
    // Nor does a token that may not write.
    const ro = await inv.call("POST", "/api/users/tokens/", {
      is_superuser: true,
      write_enabled: false,
    });
    const roOptions = await inv.call(
      "OPTIONS",
      "/api/virtualization/virtual-machines/",
      undefined,
      ro.body.header,
    );
    assert.equal(roOptions.status, 200);
    assert.equal(roOptions.body.actions, undefined);
  } finally {
    inv.close();
  }
});

Deno.test("VM filters NetBox clients use: has_primary_ip, cluster_type(_id)", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const ip = await w.ip("10.0.0.5/24", w.if1);
    await inv.call("PATCH", `/api/virtualization/virtual-machines/${w.vm1}/`, { primary_ip4: ip });
    const ids = async (q: string) => {
      const r = await inv.call("GET", `/api/virtualization/virtual-machines/?${q}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.results.map((x: { id: number }) => x.id);
    };
    assert.deepEqual(await ids("has_primary_ip=true"), [w.vm1]);
    assert.deepEqual(await ids("has_primary_ip=false"), [w.vm2]);
    assert.deepEqual(await ids("cluster_type=pve"), [w.vm1, w.vm2]);
    assert.deepEqual(await ids("cluster_type_id=1"), [w.vm1, w.vm2]);
    const other = await w.post("/api/virtualization/cluster-types/", { name: "X", slug: "x" });
    assert.deepEqual(await ids(`cluster_type_id=${other}`), []);
  } finally {
    inv.close();
  }
});

Deno.test("VM site: taken from the cluster's site, and a contradicting site is refused", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const site = await w.post("/api/dcim/sites/", { name: "dc1", slug: "dc1" });
    const other = await w.post("/api/dcim/sites/", { name: "dc2", slug: "dc2" });
    const scoped = await w.post("/api/virtualization/clusters/", {
      name: "c2",
      type: 1,
      scope_type: "dcim.site",
      scope_id: site,
    });
    const vm = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "a",
      cluster: scoped,
    });
    assert.equal(vm.status, 201);
    assert.equal(vm.body.site.id, site);
    const bad = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "b",
      cluster: scoped,
      site: other,
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, {
      cluster: ["The selected cluster (c2) is not assigned to this site (dc2)."],
    });
    const bySite = await inv.call("GET", `/api/virtualization/virtual-machines/?site_id=${site}`);
    assert.equal(bySite.body.count, 1);
    // A cluster without a site leaves the VM's site alone.
    const plain = await inv.call("GET", `/api/virtualization/virtual-machines/${w.vm1}/`);
    assert.equal(plain.body.site, null);
  } finally {
    inv.close();
  }
});

Deno.test("local_context_data must be a JSON object (devices, VMs)", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const path = `/api/virtualization/virtual-machines/${w.vm1}/`;
    for (const bad of ["str", [1, 2], 5]) {
      const r = await inv.call("PATCH", path, { local_context_data: bad });
      assert.equal(r.status, 400, JSON.stringify(bad));
      assert.deepEqual(r.body, {
        local_context_data: ['JSON data must be in object form. Example: {"foo": 123}'],
      });
    }
    const ok = await inv.call("PATCH", path, { local_context_data: { foo: 123 } });
    assert.deepEqual(ok.body.local_context_data, { foo: 123 });
  } finally {
    inv.close();
  }
});

Deno.test("interface parent/bridge: same virtual machine, never itself", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const path = `/api/virtualization/interfaces/${w.if1}/`;
    const foreign = await inv.call("PATCH", path, { bridge: w.if2 });
    assert.equal(foreign.status, 400);
    assert.deepEqual(foreign.body, {
      bridge: [
        "The selected bridge interface (net0) belongs to a different virtual machine (vm2).",
      ],
    });
    const self = await inv.call("PATCH", path, { parent: w.if1 });
    assert.deepEqual(self.body, { parent: ["An interface cannot be its own parent."] });
    const sibling = await w.post("/api/virtualization/interfaces/", {
      virtual_machine: w.vm1,
      name: "net1",
      parent: w.if1,
    });
    assert.ok(sibling > 0);
  } finally {
    inv.close();
  }
});
