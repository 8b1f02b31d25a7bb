/**
 * Refused writes as a table: each row a request, the status and the whole error body NetBox
 * answers (DRF's texts, keyed by field, one object per item of a bulk request), and the proof
 * that a refused write loses nothing and writes nothing: every VM, tenant, IP address and change
 * log entry reads back as before.
 */
import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";

const VMS = "/api/virtualization/virtual-machines/";
const IPS = "/api/ipam/ip-addresses/";
const TENANTS = "/api/tenancy/tenants/";

async function seed(inv: Inv) {
  const post = async (path: string, body: unknown) => {
    const r = await inv.call("POST", path, body);
    assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
  const c1 = await post("/api/virtualization/clusters/", { name: "c1", type: type.id });
  const acme = await post(TENANTS, { name: "Acme", slug: "acme" });
  const beta = await post(TENANTS, { name: "Beta", slug: "beta" });
  const prod = await post("/api/extras/tags/", { name: "Prod", slug: "prod" });
  await post("/api/extras/custom-fields/", {
    name: "vmid",
    object_types: ["virtualization.virtualmachine"],
    type: "integer",
    validation_minimum: 100,
  });
  const [vm1, vm2] = await post(VMS, [
    { name: "vm1", cluster: c1.id, tenant: acme.id, memory: 1024, tags: [prod.id] },
    { name: "vm2", cluster: c1.id, memory: 2048, custom_fields: { vmid: 101 } },
  ]);
  const eth0 = await post("/api/virtualization/interfaces/", {
    virtual_machine: vm1.id,
    name: "eth0",
  });
  await post(IPS, {
    address: "192.0.2.1/24",
    assigned_object_type: "virtualization.vminterface",
    assigned_object_id: eth0.id,
  });
  return {
    c1: c1.id,
    acme: acme.id,
    beta: beta.id,
    prod: prod.id,
    vm1: vm1.id,
    vm2: vm2.id,
    eth0: eth0.id,
  };
}

/** Everything a refused write must leave as it was. */
async function snapshot(inv: Inv) {
  const out: Record<string, unknown> = {};
  for (const path of [VMS, TENANTS, IPS, "/api/core/object-changes/"]) {
    const r = await inv.call("GET", `${path}?limit=1000&ordering=id`);
    assert.equal(r.status, 200);
    out[path] = r.body;
  }
  return out;
}

Deno.test("refused writes: DRF's texts per field and per item, and nothing written or lost (an empty bulk request neither)", async () => {
  const inv = await setup();
  try {
    const w = await seed(inv);
    const vm1 = `${VMS}${w.vm1}/`;
    const long = "x".repeat(65);
    const rows: Array<[string, string, unknown, number, unknown]> = [
      ["POST", VMS, "5", 400, {
        non_field_errors: ["Invalid data. Expected a dictionary, but got int."],
      }],
      ["POST", VMS, `[{"name": "ok", "cluster": ${w.c1}}, 2.5, "x", true, null, []]`, 400, [
        {},
        { non_field_errors: ["Invalid data. Expected a dictionary, but got float."] },
        { non_field_errors: ["Invalid data. Expected a dictionary, but got str."] },
        { non_field_errors: ["Invalid data. Expected a dictionary, but got bool."] },
        { non_field_errors: ["This field may not be null."] },
        { non_field_errors: ["Invalid data. Expected a dictionary, but got list."] },
      ]],
      ["POST", VMS, {}, 400, { name: ["This field is required."] }],
      // An empty bulk request writes nothing and is no error.
      ["POST", VMS, [], 201, []],
      ["POST", VMS, "[]", 201, []],
      // A nested reference whose own nested reference is no reference: refused as a whole.
      // Attributes that match nothing, or that the filters refuse (a bad choice, a bad id).
      ["POST", VMS, { name: "n", cluster: { name: "nope" } }, 400, {
        cluster: ["Related object not found using the provided attributes: {'name': 'nope'}"],
      }],
      ["POST", VMS, { name: "n", cluster: { status: "bogus" } }, 400, {
        cluster: ["Related object not found using the provided attributes: {'status': 'bogus'}"],
      }],
      ["POST", VMS, { name: "n", cluster: { type_id: "x" } }, 400, {
        cluster: ["Related object not found using the provided attributes: {'type_id': 'x'}"],
      }],
      ["POST", VMS, { name: "n", cluster: { type: [] } }, 400, {
        cluster: ["Related object not found using the provided attributes: {'type': []}"],
      }],
      // An empty nested dict adds no look-up (NetBox's flattening drops it).
      ["POST", VMS, { name: "n", cluster: { type: {}, name: "nope" } }, 400, {
        cluster: ["Related object not found using the provided attributes: {'name': 'nope'}"],
      }],
      ["POST", VMS, { name: "n", cluster: { type: { id: "x" } } }, 400, {
        cluster: ["Related object not found using the provided attributes: {'type__id': 'x'}"],
      }],
      ["POST", VMS, { name: "n", cluster: { type: { slug: "nope" } } }, 400, {
        cluster: [
          "Related object not found using the provided attributes: {'type__slug': 'nope'}",
        ],
      }],
      ["POST", VMS, { name: "n", cluster: 9999 }, 400, {
        cluster: ["Related object not found using the provided numeric ID: 9999"],
      }],
      ["POST", VMS, { name: "n", cluster: "c1" }, 400, {
        cluster: [
          "Related objects must be referenced by numeric ID or by dictionary of attributes. " +
          "Received an unrecognized value: c1",
        ],
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, status: "bogus" }, 400, {
        "status": ["bogus is not a valid choice."],
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, memory: -1, vcpus: 0 }, 400, {
        vcpus: ["Ensure this value is greater than or equal to 0.01."],
        memory: ["Ensure this value is greater than or equal to 0."],
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, vcpus: 100001, memory: "abc" }, 400, {
        vcpus: ["Ensure this value is less than or equal to 100000."],
        memory: ["A valid integer is required."],
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, memory: 1.5 }, 400, {
        memory: ["A valid integer is required."],
      }],
      ["POST", VMS, { name: "", cluster: w.c1 }, 400, { name: ["This field may not be blank."] }],
      ["POST", VMS, { name: null, cluster: w.c1 }, 400, {
        name: ["This field may not be null."],
      }],
      ["POST", VMS, { name: long, cluster: w.c1 }, 400, {
        name: ["Ensure this field has no more than 64 characters."],
      }],
      ["POST", VMS, { name: "VM2", cluster: w.c1 }, 400, {
        __all__: ["Virtual machine name must be unique per cluster."],
      }],
      ["POST", VMS, { name: "VM1", cluster: w.c1, tenant: w.acme }, 400, {
        __all__: ["Virtual machine name must be unique per cluster and tenant."],
      }],
      ["POST", VMS, [{ name: "n", cluster: w.c1 }, { name: "N", cluster: w.c1 }], 400, [{}, {
        __all__: ["Virtual machine name must be unique per cluster."],
      }]],
      ["POST", VMS, { name: "n", cluster: w.c1, tags: [9999] }, 400, {
        tags: ["Related object not found using the provided numeric ID: 9999"],
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, tags: "prod" }, 400, {
        "tags": ['Expected a list of items but got type "str".'],
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, tags: [w.prod], add_tags: [w.prod] }, 400, {
        "tags": ['Cannot specify "tags" together with "add_tags" or "remove_tags".'],
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, remove_tags: [w.prod] }, 400, {
        "remove_tags": ['Cannot use "remove_tags" when creating a new object.'],
      }],
      ["PATCH", vm1, { add_tags: [w.prod], remove_tags: [w.prod] }, 400, {
        "remove_tags": ['Tags may not be present in both "add_tags" and "remove_tags": Prod'],
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, local_context_data: [1] }, 400, {
        "local_context_data": ['JSON data must be in object form. Example: {"foo": 123}'],
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, custom_fields: { nope: 1 } }, 400, {
        "custom_fields": { "nope": "Custom field 'nope' does not exist for this object type." },
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, custom_fields: { vmid: 99 } }, 400, {
        "custom_fields": ["Invalid value for custom field 'vmid': Value must be at least 100"],
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, custom_fields: { vmid: "x" } }, 400, {
        "custom_fields": ["Invalid value for custom field 'vmid': Value must be an integer."],
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, changelog_message: "" }, 400, {
        changelog_message: ["This field may not be blank."],
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, changelog_message: null }, 400, {
        changelog_message: ["This field may not be null."],
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, changelog_message: {} }, 400, {
        changelog_message: ["Not a valid string."],
      }],
      ["POST", VMS, { name: "n", cluster: w.c1, changelog_message: "m".repeat(201) }, 400, {
        changelog_message: ["Ensure this field has no more than 200 characters."],
      }],
      ["PUT", vm1, {}, 400, { name: ["This field is required."] }],
      ["PUT", vm1, { name: "vm2", cluster: w.c1, tenant: null }, 400, {
        __all__: ["Virtual machine name must be unique per cluster."],
      }],
      ["PATCH", `${VMS}${w.vm2}/`, { name: "VM1", tenant: w.acme }, 400, {
        __all__: ["Virtual machine name must be unique per cluster and tenant."],
      }],
      ["PATCH", vm1, { tenant: 9999, memory: -2 }, 400, {
        tenant: ["Related object not found using the provided numeric ID: 9999"],
        memory: ["Ensure this value is greater than or equal to 0."],
      }],
      // A bulk update refused is the first refused object's errors alone, as NetBox 4.6's bulk
      // view answers (it validates and saves the objects in turn, in the model's ordering).
      ["PATCH", VMS, [{ id: w.vm1, name: "renamed" }, { id: w.vm2, memory: -5 }], 400, {
        memory: ["Ensure this value is greater than or equal to 0."],
      }],
      [
        "PATCH",
        VMS,
        [{ id: w.vm2, name: "vm1", tenant: w.acme }, { id: w.vm1, name: "x" }],
        400,
        { __all__: ["Virtual machine name must be unique per cluster and tenant."] },
      ],
      [
        "PATCH",
        VMS,
        [{ id: w.vm1, name: "same", tenant: null }, { id: w.vm2, name: "SAME" }],
        400,
        { __all__: ["Virtual machine name must be unique per cluster."] },
      ],
      ["PATCH", TENANTS, [{ id: w.acme, name: "Beta" }, { id: w.beta, name: "Gamma" }], 400, {
        name: ["tenant with this name already exists."],
      }],
      ["PATCH", TENANTS, [{ id: w.acme, name: "same" }, { id: w.beta, name: "SAME" }], 400, {
        name: ["tenant with this name already exists."],
      }],
      // An unknown id is passed over by a bulk write (bulk_unknown_ids_test.ts), not refused:
      // the other item's refusal still refuses the whole request.
      ["PATCH", VMS, [{ id: 99999, name: "x" }, { id: w.vm1, name: "" }], 400, {
        name: ["This field may not be blank."],
      }],
      ["PUT", VMS, [{ id: w.vm1, name: "renamed", cluster: w.c1 }, { id: w.vm2 }], 400, {
        name: ["This field is required."],
      }],
      ["DELETE", `${VMS}99999/`, undefined, 404, {
        detail: "No VirtualMachine matches the given query.",
      }],
      ["POST", TENANTS, { name: "Acme2", slug: "acme" }, 400, {
        slug: ["tenant with this slug already exists."],
      }],
      ["POST", TENANTS, { name: "acme", slug: "acme-2" }, 400, {
        name: ["tenant with this name already exists."],
      }],
      [
        "POST",
        IPS,
        {
          address: "192.0.2.2/24",
          assigned_object_type: "virtualization.vminterface",
        },
        400,
        { assigned_object_id: ["This field is required."] },
      ],
      ["POST", IPS, { address: "192.0.2.2/24", assigned_object_id: w.eth0 }, 400, {
        assigned_object_type: ["This field is required."],
      }],
      [
        "POST",
        IPS,
        {
          address: "192.0.2.2/24",
          assigned_object_type: "dcim.site",
          assigned_object_id: w.eth0,
        },
        400,
        { "assigned_object_type": ["Invalid content type: dcim.site"] },
      ],
      [
        "POST",
        IPS,
        {
          address: "192.0.2.2/24",
          assigned_object_type: "virtualization.vminterface",
          assigned_object_id: 9999,
        },
        400,
        { assigned_object_id: ["Related object not found using the provided numeric ID: 9999"] },
      ],
    ];
    const before = await snapshot(inv);
    for (const [method, path, body, status, expected] of rows) {
      const r = await inv.call(method, path, body);
      const what = `${method} ${path} ${typeof body === "string" ? body : JSON.stringify(body)}`;
      assert.deepEqual([r.status, r.body], [status, expected], what);
      assert.deepEqual(await snapshot(inv), before, `${what}: nothing written`);
    }
  } finally {
    inv.close();
  }
});

Deno.test("generic FK writes: a PATCH of one half keeps the other, a half left empty is required, a type of any model (journal) must exist", async () => {
  const inv = await setup();
  try {
    const w = await seed(inv);
    const eth1 = await inv.created("/api/virtualization/interfaces/", {
      virtual_machine: w.vm2,
      name: "eth1",
    });
    const ip = (await inv.call("GET", `${IPS}?address=192.0.2.1/24`)).body.results[0].id;
    const url = `${IPS}${ip}/`;
    const assigned = async () => {
      const r = await inv.call("GET", url);
      return [r.body.assigned_object_type, r.body.assigned_object_id];
    };
    const VMIF = "virtualization.vminterface";
    // Each row: the PATCH, its status and error body (null: 200), then what the address holds.
    const rows: Array<[Record<string, unknown>, number, unknown, unknown[]]> = [
      [{ assigned_object_id: eth1.id }, 200, null, [VMIF, eth1.id]],
      [{ assigned_object_id: null }, 400, {
        assigned_object_id: ["This field is required."],
      }, [VMIF, eth1.id]],
      [{ assigned_object_type: null }, 400, {
        assigned_object_type: ["This field is required."],
      }, [VMIF, eth1.id]],
      [{ assigned_object_type: "dcim.interface" }, 400, {
        assigned_object_id: [`Related object not found using the provided numeric ID: ${eth1.id}`],
      }, [VMIF, eth1.id]],
      [{ assigned_object_type: "dcim.site", assigned_object_id: 1 }, 400, {
        assigned_object_type: ["Invalid content type: dcim.site"],
      }, [VMIF, eth1.id]],
      [{ assigned_object_type: "ipam.ipaddress.x", assigned_object_id: 1 }, 400, {
        assigned_object_type: [
          "Invalid value. Specify a content type as '<app_label>.<model_name>'.",
        ],
      }, [VMIF, eth1.id]],
      [{ assigned_object_type: null, assigned_object_id: null }, 200, null, [null, null]],
      // A blank content type is none (a related field's blank is null): both halves empty.
      [{ assigned_object_type: VMIF, assigned_object_id: eth1.id }, 200, null, [VMIF, eth1.id]],
      [{ assigned_object_type: "", assigned_object_id: null }, 200, null, [null, null]],
      [{ assigned_object_type: VMIF, assigned_object_id: w.eth0 }, 200, null, [VMIF, w.eth0]],
    ];
    for (const [patch, status, error, holds] of rows) {
      const r = await inv.call("PATCH", url, patch);
      const what = JSON.stringify(patch);
      assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
      if (error !== null) assert.deepEqual(r.body, error, what);
      assert.deepEqual(await assigned(), holds, what);
    }
    // A required content type left blank is a null one (a related field's blank).
    const blankType = await inv.call("POST", "/api/tenancy/contact-assignments/", {
      object_type: "",
      object_id: 1,
    });
    assert.equal(blankType.status, 400);
    assert.deepEqual(blankType.body.object_type, ["This field may not be null."]);
    // A journal entry may name an object of any model that exists (a generic FK over "*").
    const JOURNAL = "/api/extras/journal-entries/";
    const journalRows: Array<[Record<string, unknown>, number, unknown]> = [
      [{ assigned_object_type: "dcim.nothing", assigned_object_id: 1 }, 400, {
        assigned_object_type: ["Invalid content type: dcim.nothing"],
      }],
      // NetBox's ContentTypeField: text that is no `<app_label>.<model_name>` has its own text.
      [{ assigned_object_type: "nothing", assigned_object_id: 1 }, 400, {
        assigned_object_type: [
          "Invalid value. Specify a content type as '<app_label>.<model_name>'.",
        ],
      }],
      [{ assigned_object_type: "virtualization.virtualmachine", assigned_object_id: 99999 }, 400, {
        assigned_object_id: ["Related object not found using the provided numeric ID: 99999"],
      }],
      [{ assigned_object_type: "tenancy.tenant", assigned_object_id: w.acme }, 201, null],
    ];
    for (const [target, status, error] of journalRows) {
      const r = await inv.call("POST", JOURNAL, { ...target, comments: "note" });
      const what = JSON.stringify(target);
      assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
      if (error !== null) assert.deepEqual(r.body, error, what);
    }
    const notes = await inv.call("GET", `${JOURNAL}?assigned_object_type=tenancy.tenant`);
    assert.deepEqual(
      notes.body.results.map((n: { assigned_object_id: number }) => n.assigned_object_id),
      [w.acme],
    );
  } finally {
    inv.close();
  }
});

Deno.test("a blank choice: taken and rendered null where NetBox's field allows a blank, refused elsewhere with NetBox's texts; the plugin keeps DRF's", async () => {
  const inv = await setup();
  try {
    const VMS = "/api/virtualization/virtual-machines/";
    const IFACES = "/api/virtualization/interfaces/";
    const type = await inv.created("/api/virtualization/cluster-types/", {
      name: "PVE",
      slug: "pve",
    });
    const cluster = await inv.created("/api/virtualization/clusters/", {
      name: "c1",
      type: type.id,
    });
    const vm = await inv.created(VMS, { name: "vm1", cluster: cluster.id });
    // An interface's mode and an address's role allow a blank (NetBox's allow_blank): it reads
    // back as null, as NetBox renders a blank choice.
    const eth0 = await inv.created(IFACES, { virtual_machine: vm.id, name: "eth0", mode: "" });
    assert.equal(eth0.mode, null);
    const access = await inv.call("PATCH", `${IFACES}${eth0.id}/`, { mode: "access" });
    assert.deepEqual(access.body.mode, { value: "access", label: "Access" });
    const blank = await inv.call("PATCH", `${IFACES}${eth0.id}/`, { mode: "" });
    assert.deepEqual([blank.status, blank.body.mode], [200, null]);
    assert.equal((await inv.call("GET", `${IFACES}${eth0.id}/`)).body.mode, null);
    const ip = await inv.created("/api/ipam/ip-addresses/", { address: "192.0.2.1/24", role: "" });
    assert.equal(ip.role, null);
    // A status allows none: NetBox's ChoiceField texts, the value named as Python prints it.
    for (
      const [status, text] of [
        ["", "This field may not be blank."],
        ["bogus", "bogus is not a valid choice."],
        [true, "True is not a valid choice."],
        [
          ["active"],
          'Value must be passed directly (e.g. "foo": 123); do not use a dictionary or list.',
        ],
        // The form a choice is rendered in is no input either (pynetbox sends the value).
        [
          { value: "active", label: "Active" },
          'Value must be passed directly (e.g. "foo": 123); do not use a dictionary or list.',
        ],
      ]
    ) {
      const r = await inv.call("POST", VMS, { name: "vm2", cluster: cluster.id, status });
      assert.deepEqual([r.status, r.body], [400, { status: [text] }], String(status));
    }
    assert.equal((await inv.call("GET", VMS)).body.count, 1);
    // The plugin's choices answer DRF's ChoiceField texts.
    const plugin = await inv.call("POST", "/api/plugins/service/endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
      mode: "",
    });
    assert.deepEqual([plugin.status, plugin.body], [400, {
      mode: ['"" is not a valid choice.'],
    }]);
  } finally {
    inv.close();
  }
});

Deno.test("integers as DRF's IntegerField reads them: a trailing .0 and digit underscores are taken, other decimals refused; stored and answered as the number", async () => {
  const inv = await setup();
  try {
    const VMS = "/api/virtualization/virtual-machines/";
    const type = await inv.created("/api/virtualization/cluster-types/", {
      name: "PVE",
      slug: "pve",
    });
    const cluster = await inv.created("/api/virtualization/clusters/", {
      name: "c1",
      type: type.id,
    });
    const rows: Array<[unknown, number | null]> = [
      ["099", 99],
      ["1.0", 1],
      ["5.", 5],
      [" 7.00 ", 7],
      ["+12", 12],
      ["1_024", 1024],
      ["5.5", null],
      ["1e3", null],
      ["1__0", null],
      ["0x10", null],
      [true, null],
    ];
    for (const [i, [memory, stored]] of rows.entries()) {
      const r = await inv.call("POST", VMS, { name: `vm${i}`, cluster: cluster.id, memory });
      if (stored === null) {
        assert.deepEqual([r.status, r.body], [400, {
          memory: ["A valid integer is required."],
        }], String(memory));
        continue;
      }
      assert.equal(r.status, 201, `${memory}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.memory, stored, String(memory));
      const read = await inv.call("GET", `${VMS}${r.body.id}/`);
      assert.equal(read.body.memory, stored, String(memory));
    }
  } finally {
    inv.close();
  }
});
