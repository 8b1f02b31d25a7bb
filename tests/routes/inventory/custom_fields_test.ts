/**
 * Custom fields: definitions are validated, a rename keeps the data, a new field's default fills
 * existing objects, and object-type fields render nested and accept what they render.
 */
import assert from "node:assert/strict";
import { setup } from "./_setup.ts";
import { world } from "./_world.ts";

Deno.test("custom fields: a rename keeps the data, a new field's default fills existing objects", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const cf = await inv.call("POST", "/api/extras/custom-fields/", {
      name: "proxmox_vmid",
      object_types: ["virtualization.virtualmachine"],
      type: "integer",
    });
    assert.equal(cf.status, 201);
    const vm = `/api/virtualization/virtual-machines/${w.vm1}/`;
    await inv.call("PATCH", vm, { custom_fields: { proxmox_vmid: 101 } });
    const renamed = await inv.call("PATCH", `/api/extras/custom-fields/${cf.body.id}/`, {
      name: "vmid",
    });
    assert.equal(renamed.status, 200);
    assert.deepEqual((await inv.call("GET", vm)).body.custom_fields, { vmid: 101 });
    const filtered = await inv.call("GET", "/api/virtualization/virtual-machines/?cf_vmid=101");
    assert.deepEqual(filtered.body.results.map((r: { id: number }) => r.id), [w.vm1]);

    const withDefault = await inv.call("POST", "/api/extras/custom-fields/", {
      name: "managed",
      object_types: ["virtualization.virtualmachine"],
      type: "boolean",
      default: true,
    });
    assert.equal(withDefault.status, 201);
    const vm2 = await inv.call("GET", `/api/virtualization/virtual-machines/${w.vm2}/`);
    assert.deepEqual(vm2.body.custom_fields, { managed: true, vmid: null });
  } finally {
    inv.close();
  }
});

Deno.test("custom fields: an object's custom_fields come in the definitions' order, by weight (0 before the default 100), then name", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    // The same definitions for VMs and clusters, made in two orders that are neither the answer's
    // nor its reverse: a sort that took the weight-0 field's weight for the default 100 puts it
    // after "gamma" in one or the other (the weight read on either side of the comparison).
    const define = async (objectType: string, names: string[]) => {
      const weights: Record<string, number> = { zeta: 0, alpha: 200, beta: 200 };
      for (const name of names) {
        await inv.created("/api/extras/custom-fields/", {
          name: `${name}_${objectType.split(".")[1]}`,
          object_types: [objectType],
          type: "text",
          ...(name in weights ? { weight: weights[name] } : {}),
        });
      }
    };
    await define("virtualization.virtualmachine", ["zeta", "beta", "gamma", "alpha"]);
    await define("virtualization.cluster", ["beta", "gamma", "zeta", "alpha"]);
    const order = (suffix: string) =>
      ["zeta", "gamma", "alpha", "beta"].map((name) => `${name}_${suffix}`);
    const vm = await inv.call("GET", `/api/virtualization/virtual-machines/${w.vm1}/`);
    assert.deepEqual(Object.keys(vm.body.custom_fields), order("virtualmachine"));
    const listed = await inv.call("GET", "/api/virtualization/virtual-machines/?ordering=id");
    assert.equal(listed.body.results.length, 2);
    for (const r of listed.body.results) {
      assert.deepEqual(Object.keys(r.custom_fields), order("virtualmachine"));
    }
    const cluster = await inv.call("GET", `/api/virtualization/clusters/${w.cluster}/`);
    assert.deepEqual(Object.keys(cluster.body.custom_fields), order("cluster"));
  } finally {
    inv.close();
  }
});

Deno.test("custom fields: the group name leads the order (a blank one first), in the definitions' list and in an object's custom_fields", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    // Made in an order that is neither the answer nor its reverse; weights that would put them
    // the other way round if the group name did not come first.
    const defs: [string, string, number][] = [
      ["net_b", "Network", 10],
      ["plain", "", 500],
      ["hw_a", "Hardware", 900],
      ["net_a", "Network", 50],
      ["hw_b", "Hardware", 1],
    ];
    for (const [name, group_name, weight] of defs) {
      await inv.created("/api/extras/custom-fields/", {
        name,
        group_name,
        weight,
        object_types: ["virtualization.virtualmachine"],
        type: "text",
      });
    }
    const expected = ["plain", "hw_b", "hw_a", "net_b", "net_a"];
    const listed = await inv.call("GET", "/api/extras/custom-fields/");
    assert.deepEqual(listed.body.results.map((d: { name: string }) => d.name), expected);
    const vm = await inv.call("GET", `/api/virtualization/virtual-machines/${w.vm1}/`);
    assert.deepEqual(Object.keys(vm.body.custom_fields), expected);
    const reversed = await inv.call("GET", "/api/extras/custom-fields/?ordering=-group_name");
    assert.deepEqual(
      reversed.body.results.map((d: { group_name: string }) => d.group_name),
      ["Network", "Network", "Hardware", "Hardware", ""],
    );
  } finally {
    inv.close();
  }
});

Deno.test("custom field definitions: a broken regex or object type is a 400, not a silent no-op", async () => {
  const inv = await setup();
  try {
    const regex = await inv.call("POST", "/api/extras/custom-fields/", {
      name: "rx",
      object_types: ["dcim.site"],
      type: "text",
      validation_regex: "([",
    });
    assert.equal(regex.status, 400);
    assert.ok(regex.body.validation_regex);
    const noType = await inv.call("POST", "/api/extras/custom-fields/", {
      name: "ob",
      object_types: ["dcim.site"],
      type: "object",
    });
    assert.deepEqual(noType.body, {
      related_object_type: ["Object fields must define an object type."],
    });
    const badType = await inv.call("POST", "/api/extras/custom-fields/", {
      name: "ob",
      object_types: ["dcim.site"],
      type: "object",
      related_object_type: "dcim.nope",
    });
    assert.deepEqual(badType.body, { related_object_type: ["Invalid object type: dcim.nope"] });
    const ok = await inv.call("POST", "/api/extras/custom-fields/", {
      name: "ob",
      object_types: ["dcim.site"],
      type: "object",
      related_object_type: "dcim.device",
    });
    assert.equal(ok.status, 201);
    // Only object fields name a type (NetBox's CustomField.clean()), on a create or an update
    // that turns an object field into another type; nothing is written.
    const typed = await inv.call("POST", "/api/extras/custom-fields/", {
      name: "num",
      object_types: ["dcim.site"],
      type: "integer",
      related_object_type: "dcim.device",
    });
    assert.deepEqual([typed.status, typed.body], [400, {
      type: ["Integer fields may not define an object type."],
    }]);
    const retyped = await inv.call("PATCH", `/api/extras/custom-fields/${ok.body.id}/`, {
      type: "multiselect",
    });
    assert.deepEqual([retyped.status, retyped.body], [400, {
      type: ["Multiple selection fields may not define an object type."],
    }]);
    const cleared = await inv.call("POST", "/api/extras/custom-fields/", {
      name: "num",
      object_types: ["dcim.site"],
      type: "integer",
      related_object_type: null,
    });
    assert.equal(cleared.status, 201, JSON.stringify(cleared.body));
    const listed = await inv.call("GET", "/api/extras/custom-fields/?ordering=name");
    assert.deepEqual(
      listed.body.results.map((
        f: { name: string; type: { value: string } },
      ) => [f.name, f.type.value]),
      [["num", "integer"], ["ob", "object"]],
    );
  } finally {
    inv.close();
  }
});

Deno.test("object custom fields render nested (as NetBox) and accept what they render", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const cf = await inv.call("POST", "/api/extras/custom-fields/", {
      name: "twin",
      object_types: ["virtualization.virtualmachine"],
      type: "object",
      related_object_type: "virtualization.virtualmachine",
    });
    assert.equal(cf.status, 201);
    const many = await inv.call("POST", "/api/extras/custom-fields/", {
      name: "peers",
      object_types: ["virtualization.virtualmachine"],
      type: "multiobject",
      related_object_type: "virtualization.virtualmachine",
    });
    assert.equal(many.status, 201);
    const path = `/api/virtualization/virtual-machines/${w.vm1}/`;
    const set = await inv.call("PATCH", path, { custom_fields: { twin: w.vm2, peers: [w.vm2] } });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.equal(set.body.custom_fields.twin.id, w.vm2);
    assert.equal(set.body.custom_fields.twin.name, "vm2");
    assert.match(set.body.custom_fields.twin.url, /virtual-machines\/\d+\/$/);
    assert.deepEqual(set.body.custom_fields.peers.map((p: { id: number }) => p.id), [w.vm2]);
    // Sending back what was read (pynetbox does) keeps the value.
    const again = await inv.call("PATCH", path, { custom_fields: set.body.custom_fields });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.custom_fields.twin.id, w.vm2);
    const listed = await inv.call("GET", "/api/virtualization/virtual-machines/?cf_twin=" + w.vm2);
    assert.equal(listed.body.count, 1);
    assert.equal(listed.body.results[0].custom_fields.twin.id, w.vm2);
    // Unset, or cleared: null, as NetBox serializes an empty object field (never [] or {}).
    const unset = await inv.call("GET", `/api/virtualization/virtual-machines/${w.vm2}/`);
    assert.deepEqual(unset.body.custom_fields, { twin: null, peers: null });
    const cleared = await inv.call("PATCH", path, { custom_fields: { twin: null, peers: null } });
    assert.equal(cleared.status, 200, JSON.stringify(cleared.body));
    assert.deepEqual(cleared.body.custom_fields, { twin: null, peers: null });
    const both = await inv.call("GET", "/api/virtualization/virtual-machines/?ordering=id");
    assert.deepEqual(
      both.body.results.map((r: { custom_fields: unknown }) => r.custom_fields),
      [{ twin: null, peers: null }, { twin: null, peers: null }],
    );
  } finally {
    inv.close();
  }
});

Deno.test("object custom fields whose target's brief nests a reference (a VM interface's VM) render it, in a detail and in a list", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    for (const [name, type] of [["uplink", "object"], ["links", "multiobject"]]) {
      await inv.created("/api/extras/custom-fields/", {
        name,
        object_types: ["virtualization.virtualmachine"],
        type,
        related_object_type: "virtualization.vminterface",
      });
    }
    const path = `/api/virtualization/virtual-machines/${w.vm1}/`;
    const set = await inv.call("PATCH", path, {
      custom_fields: { uplink: w.if2, links: [w.if1, w.if2] },
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    // Each interface in its brief form, its VM nested in its own brief form (name and
    // description too), as NetBox 4.6 nests an object custom field's target.
    const brief = (iface: number, vm: number, vmName: string) => ({
      id: iface,
      url: `http://inv.test/api/virtualization/interfaces/${iface}/`,
      display: "net0",
      virtual_machine: {
        id: vm,
        url: `http://inv.test/api/virtualization/virtual-machines/${vm}/`,
        display: vmName,
        name: vmName,
        description: "",
      },
      name: "net0",
      description: "",
    });
    const want = {
      uplink: brief(w.if2, w.vm2, "vm2"),
      links: [brief(w.if1, w.vm1, "vm1"), brief(w.if2, w.vm2, "vm2")],
    };
    assert.deepEqual(set.body.custom_fields, want);
    const detail = await inv.call("GET", path);
    assert.deepEqual(detail.body.custom_fields, want);
    const listed = await inv.call("GET", "/api/virtualization/virtual-machines/?ordering=id");
    assert.deepEqual(
      listed.body.results.map((r: { custom_fields: unknown }) => r.custom_fields),
      [want, { uplink: null, links: null }],
    );
  } finally {
    inv.close();
  }
});
