/**
 * References at their edges, through HTTP as pynetbox and Ansible send them: a list ordered by a
 * foreign key whose targets tie on their first ordering field, a filter named like a reference
 * that names none, a many-to-many list holding an item that is no reference, and a reference by
 * attributes given as a list
 * (docs/api-behaviour.md, docs/netbox-rules.md).
 */
import assert from "node:assert/strict";
import { setup } from "./_setup.ts";
import { world } from "./_world.ts";

Deno.test("a list ordered by a foreign key breaks a tie of its targets' names by their id, as NetBox's related ordering (name, then pk) does", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const other = await w.post("/api/virtualization/clusters/", {
      name: "c2",
      type: (await inv.call("GET", "/api/virtualization/cluster-types/?slug=pve")).body.results[0]
        .id,
    });
    // Two VMs named alike in two clusters: the first made has the lower id.
    const low = await w.post("/api/virtualization/virtual-machines/", {
      name: "same",
      cluster: w.cluster,
    });
    const high = await w.post("/api/virtualization/virtual-machines/", {
      name: "same",
      cluster: other,
    });
    // The interface of the higher-id VM is made first, so its own id is the lower one: an
    // ordering that dropped the targets' id would answer it first.
    const onHigh = await w.post("/api/virtualization/interfaces/", {
      virtual_machine: high,
      name: "eth9",
    });
    const onLow = await w.post("/api/virtualization/interfaces/", {
      virtual_machine: low,
      name: "eth9",
    });
    for (
      const [ordering, want] of [
        ["virtual_machine", [onLow, onHigh]],
        ["-virtual_machine", [onHigh, onLow]],
      ] as const
    ) {
      const r = await inv.call(
        "GET",
        `/api/virtualization/interfaces/?name=eth9&ordering=${ordering}`,
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(
        r.body.results.map((i: { id: number }) => i.id),
        want,
        `ordering=${ordering}`,
      );
    }
  } finally {
    inv.close();
  }
});

Deno.test("a filter named like a reference's id that names no reference is ignored, as NetBox ignores unknown filters", async () => {
  const inv = await setup();
  try {
    await world(inv);
    const all = await inv.call("GET", "/api/virtualization/virtual-machines/");
    assert.equal(all.body.count, 2);
    for (const query of ["no_such_field_id=1", "nothing_id=abc", "status_id=1"]) {
      const r = await inv.call("GET", `/api/virtualization/virtual-machines/?${query}`);
      assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.count, 2, query);
      assert.deepEqual(
        r.body.results.map((vm: { name: string }) => vm.name),
        ["vm1", "vm2"],
        query,
      );
    }
  } finally {
    inv.close();
  }
});

Deno.test("a many-to-many list holding an item that is no reference is refused under its field, and nothing is written", async () => {
  const inv = await setup();
  try {
    const group = await inv.created("/api/tenancy/contact-groups/", { name: "ops", slug: "ops" });
    for (const item of ["abc", [group.id], 1.5e300]) {
      const r = await inv.call("POST", "/api/tenancy/contacts/", {
        name: "alice",
        groups: [group.id, item],
      });
      assert.equal(r.status, 400, `${JSON.stringify(item)}: ${JSON.stringify(r.body)}`);
      assert.deepEqual(Object.keys(r.body), ["groups"], JSON.stringify(r.body));
      assert.equal(typeof r.body.groups[0], "string", JSON.stringify(r.body));
    }
    const left = await inv.call("GET", "/api/tenancy/contacts/");
    assert.equal(left.body.count, 0);
  } finally {
    inv.close();
  }
});

Deno.test("a list ordered by a foreign key to a model ordered by id alone (an inventory endpoint's token) is in the targets' id order, those without one last", async () => {
  const inv = await setup();
  try {
    const tokens: number[] = [];
    for (const description of ["t1", "t2", "t3"]) {
      tokens.push((await inv.created("/api/users/tokens/", { version: 1, description })).id);
    }
    const path = "/api/plugins/service/endpoints/inventory/";
    // Made in an order that is neither the tokens' nor the names': ids, names and tokens each
    // give another list. A v2 endpoint names no token.
    const tokenOf: Record<string, number | null> = {
      "nb-b": tokens[2],
      "nb-c": tokens[0],
      "nb-a": tokens[1],
      "nb-v2": null,
    };
    const idOf: Record<string, number> = {};
    for (const [name, token] of Object.entries(tokenOf)) {
      const v2 = { token_version: "v2", token_key: "abc", token_secret: "s".repeat(40) };
      idOf[name] = (await inv.created(path, {
        name,
        domain: "nb.local",
        ...(token === null ? v2 : { token }),
      })).id;
    }
    for (
      const [ordering, want] of [
        ["token", ["nb-c", "nb-a", "nb-b", "nb-v2"]],
        ["-token", ["nb-v2", "nb-b", "nb-a", "nb-c"]],
      ] as const
    ) {
      const r = await inv.call("GET", `${path}?ordering=${ordering}`);
      assert.equal(r.status, 200, `ordering=${ordering}: ${JSON.stringify(r.body)}`);
      assert.deepEqual(
        r.body.results.map((e: { id: number; name: string; token: { id: number } | null }) => [
          e.name,
          e.id,
          e.token?.id ?? null,
        ]),
        want.map((name) => [name, idOf[name], tokenOf[name]]),
        `ordering=${ordering}`,
      );
    }
  } finally {
    inv.close();
  }
});

Deno.test("a reference by attributes that no object can match is a 400 under its field, nothing written: a list compared as its text, a dict under a non-FK key, an unknown related object", async () => {
  const inv = await setup();
  try {
    await world(inv);
    const notFound = (shown: string) =>
      `Related object not found using the provided attributes: ${shown}`;
    for (
      const [cluster, error] of [
        // NetBox's ORM compares a list as its text: it matches no name, no type.
        [{ name: ["c1"] }, notFound("{'name': ['c1']}")],
        [{ type: { slug: ["pve"] } }, notFound("{'type__slug': ['pve']}")],
        [{ type: ["pve"] }, notFound("{'type': ['pve']}")],
        // A nested dict under a key that is no FK (a lookup, a relation's id) selects nothing.
        [{ name__gt: { x: 1 } }, notFound("{'name__gt__x': 1}")],
        [{ type_id: { x: 1 } }, notFound("{'type_id__x': 1}")],
        // The related object the nested dict names does not exist.
        [{ type: { slug: "nope" } }, notFound("{'type__slug': 'nope'}")],
        // A pattern the look-up cannot compile matches nothing (a 400, never a 500).
        [{ name__regex: "(" }, notFound("{'name__regex': '('}")],
      ] as const
    ) {
      const r = await inv.call("POST", "/api/virtualization/virtual-machines/", {
        name: "vm9",
        cluster,
      });
      assert.deepEqual([r.status, r.body], [400, { cluster: [error] }], JSON.stringify(cluster));
    }
    const left = await inv.call("GET", "/api/virtualization/virtual-machines/?name=vm9");
    assert.equal(left.body.count, 0);
  } finally {
    inv.close();
  }
});

Deno.test("a reference by attributes across one FK both nested and flattened (`type` and `type__name`) joins them, as NetBox's ORM look-up does", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const spellings = [
      { type: { slug: "pve" }, type__name: "PVE" },
      { type__name: "PVE", type: { slug: "pve" } },
      { type__slug: "pve", type__name: "PVE" },
    ];
    for (const [i, cluster] of spellings.entries()) {
      const r = await inv.call("POST", "/api/virtualization/virtual-machines/", {
        name: `vm9-${i}`,
        cluster,
      });
      assert.equal(r.status, 201, `${JSON.stringify(cluster)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.cluster.id, w.cluster);
    }
    // Both parts must hold: a name the type does not have finds nothing.
    const wrong = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "vm9",
      cluster: { type: { slug: "pve" }, type__name: "Other" },
    });
    assert.deepEqual([wrong.status, wrong.body], [400, {
      cluster: [
        "Related object not found using the provided attributes: {'type__slug': 'pve', 'type__name': 'Other'}",
      ],
    }]);
    const made = await inv.call("GET", "/api/virtualization/virtual-machines/?name__isw=vm9");
    assert.deepEqual(made.body.results.map((vm: { name: string }) => vm.name), [
      "vm9-0",
      "vm9-1",
      "vm9-2",
    ]);
  } finally {
    inv.close();
  }
});

Deno.test("lists filtered through a reference (VMs by their cluster's type) each answer their own objects, in turn on an unchanged store", async () => {
  const inv = await setup();
  try {
    const typeIds: Record<string, number> = {};
    for (const type of ["pve", "kvm"]) {
      typeIds[type] = (await inv.created("/api/virtualization/cluster-types/", {
        name: type,
        slug: type,
      })).id;
      const cluster = (await inv.created("/api/virtualization/clusters/", {
        name: type,
        type: typeIds[type],
      })).id;
      for (const n of [1, 2]) {
        await inv.created("/api/virtualization/virtual-machines/", {
          name: `${type}-${n}`,
          cluster,
        });
      }
    }
    // The same lists again, in turn: the later ones may be answered from what the first kept.
    for (const type of ["pve", "kvm", "pve", "kvm"]) {
      for (const query of [`cluster_type=${type}`, `cluster_type_id=${typeIds[type]}`]) {
        const r = await inv.call("GET", `/api/virtualization/virtual-machines/?${query}`);
        assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
        assert.deepEqual(
          [r.body.count, r.body.results.map((vm: { name: string }) => vm.name)],
          [2, [`${type}-1`, `${type}-2`]],
          query,
        );
      }
    }
    const all = await inv.call("GET", "/api/virtualization/virtual-machines/");
    assert.equal(all.body.count, 4);
  } finally {
    inv.close();
  }
});

Deno.test("null for a reference that may not be null (a VM interface's VM) is refused under its field, in a create and an update, and nothing changes", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const path = "/api/virtualization/interfaces/";
    const refused = { virtual_machine: ["This field may not be null."] };
    const create = await inv.call("POST", path, { virtual_machine: null, name: "net9" });
    assert.deepEqual([create.status, create.body], [400, refused]);
    for (const method of ["PATCH", "PUT"]) {
      const r = await inv.call(method, `${path}${w.if1}/`, { virtual_machine: null, name: "net0" });
      assert.deepEqual([r.status, r.body], [400, refused], method);
    }
    const after = await inv.call("GET", `${path}?ordering=id`);
    assert.deepEqual(
      after.body.results.map((i: { id: number; virtual_machine: { id: number } | null }) => [
        i.id,
        i.virtual_machine?.id ?? null,
      ]),
      [[w.if1, w.vm1], [w.if2, w.vm2]],
    );
  } finally {
    inv.close();
  }
});

Deno.test("a write that sends a generic FK's rendered object back (assigned_object, as read) ignores it: its type and id decide", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const path = "/api/ipam/ip-addresses/";
    const other = { id: w.if2, url: `http://inv.test/api/virtualization/interfaces/${w.if2}/` };
    const made = await inv.call("POST", path, {
      address: "192.0.2.7/24",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: w.if1,
      assigned_object: other,
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal(made.body.assigned_object.id, w.if1);
    const patched = await inv.call("PATCH", `${path}${made.body.id}/`, {
      description: "round trip",
      assigned_object: made.body.assigned_object,
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const read = await inv.call("GET", `${path}${made.body.id}/`);
    assert.deepEqual(
      [read.body.description, read.body.assigned_object_id, read.body.assigned_object.id],
      ["round trip", w.if1, w.if1],
    );
  } finally {
    inv.close();
  }
});
