/**
 * Behaviour a NetBox 4.2 client relies on that the review pass found missing: primary IP and
 * primary MAC rules, nested references with unknown attributes, custom-field renames and
 * defaults.
 */
import assert from "node:assert/strict";
import { createInventoryCore } from "../../../routes/inventory/mod.ts";
import { type Inv, setup } from "./_setup.ts";

/** A cluster, two VMs with one interface each; returns their ids. */
async function world(inv: Inv) {
  const post = async (path: string, body: unknown) => {
    const r = await inv.call("POST", path, body);
    assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
    return r.body.id as number;
  };
  const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
  const cluster = await post("/api/virtualization/clusters/", { name: "c1", type });
  const vm1 = await post("/api/virtualization/virtual-machines/", { name: "vm1", cluster });
  const vm2 = await post("/api/virtualization/virtual-machines/", { name: "vm2", cluster });
  const if1 = await post("/api/virtualization/interfaces/", { virtual_machine: vm1, name: "net0" });
  const if2 = await post("/api/virtualization/interfaces/", { virtual_machine: vm2, name: "net0" });
  const ip = (address: string, iface: number) =>
    post("/api/ipam/ip-addresses/", {
      address,
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: iface,
    });
  return { post, cluster, vm1, vm2, if1, if2, ip };
}

Deno.test("VM primary_ip4/primary_ip6: family and assignment are checked as NetBox does", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const v4 = await w.ip("10.0.0.5/24", w.if1);
    const v6 = await w.ip("fd00::5/64", w.if1);
    const other = await w.ip("10.0.0.6/24", w.if2);
    const vm = `/api/virtualization/virtual-machines/${w.vm1}/`;

    const notMine = await inv.call("PATCH", vm, { primary_ip4: other });
    assert.equal(notMine.status, 400);
    assert.deepEqual(notMine.body, {
      primary_ip4: ["The specified IP address (10.0.0.6/24) is not assigned to this VM."],
    });
    const wrongFamily = await inv.call("PATCH", vm, { primary_ip4: v6 });
    assert.equal(wrongFamily.status, 400);
    assert.deepEqual(wrongFamily.body, {
      primary_ip4: ["Must be an IPv4 address. (fd00::5/64 is an IPv6 address.)"],
    });
    const wrong6 = await inv.call("PATCH", vm, { primary_ip6: v4 });
    assert.deepEqual(wrong6.body, {
      primary_ip6: ["Must be an IPv6 address. (10.0.0.5/24 is an IPv4 address.)"],
    });
    // A VM being created has no interfaces, so no primary IP can be assigned to it yet.
    const create = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "vm3",
      cluster: w.cluster,
      primary_ip4: v4,
    });
    assert.equal(create.status, 400);

    const ok = await inv.call("PATCH", vm, { primary_ip4: v4, primary_ip6: v6 });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.primary_ip4.id, v4);
    assert.equal(ok.body.primary_ip6.id, v6);
    // `primary_ip` is the read-only convenience field NetBox renders (IPv6 first by default).
    assert.equal(ok.body.primary_ip.id, v6);
    assert.equal(ok.body.primary_ip.address, "fd00::5/64");
    const only4 = await inv.call("PATCH", vm, { primary_ip6: null });
    assert.equal(only4.body.primary_ip.id, v4);
    const brief = await inv.call("GET", `${vm}?fields=id,primary_ip`);
    assert.deepEqual(Object.keys(brief.body).sort(), ["id", "primary_ip"]);
    // Writing primary_ip is ignored (read-only), as DRF does.
    const ignored = await inv.call("PATCH", vm, { primary_ip: v6 });
    assert.equal(ignored.status, 200);
    assert.equal(ignored.body.primary_ip.id, v4);

    // Moving the primary IP to another interface's parent is refused while it is primary.
    const move = await inv.call("PATCH", `/api/ipam/ip-addresses/${v4}/`, {
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: w.if2,
    });
    assert.equal(move.status, 400);
    assert.deepEqual(move.body, {
      non_field_errors: ["Cannot reassign primary IP address for the parent device/VM"],
    });
    const unassign = await inv.call("PATCH", `/api/ipam/ip-addresses/${v4}/`, {
      assigned_object_type: null,
      assigned_object_id: null,
    });
    assert.equal(unassign.status, 400);
    // Other edits of a primary IP are fine.
    const desc = await inv.call("PATCH", `/api/ipam/ip-addresses/${v4}/`, { description: "x" });
    assert.equal(desc.status, 200);
    // Deleting the primary IP clears it on the VM (NetBox SET_NULL).
    assert.equal((await inv.call("DELETE", `/api/ipam/ip-addresses/${v4}/`)).status, 204);
    const after = await inv.call("GET", vm);
    assert.equal(after.body.primary_ip4, null);
    assert.equal(after.body.primary_ip, null);
  } finally {
    inv.close();
  }
});

Deno.test("device primary_ip4 must be assigned to one of the device's interfaces", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const site = await w.post("/api/dcim/sites/", { name: "s", slug: "s" });
    const mf = await w.post("/api/dcim/manufacturers/", { name: "m", slug: "m" });
    const dt = await w.post("/api/dcim/device-types/", { manufacturer: mf, model: "x", slug: "x" });
    const role = await w.post("/api/dcim/device-roles/", { name: "r", slug: "r" });
    const dev = await w.post("/api/dcim/devices/", {
      name: "n1",
      device_type: dt,
      role,
      site,
    });
    const iface = await w.post("/api/dcim/interfaces/", {
      device: dev,
      name: "vmbr0",
      type: "bridge",
    });
    const mine = await w.post("/api/ipam/ip-addresses/", {
      address: "192.0.2.1/24",
      assigned_object_type: "dcim.interface",
      assigned_object_id: iface,
    });
    const vmIp = await w.ip("10.0.0.9/24", w.if1);
    const bad = await inv.call("PATCH", `/api/dcim/devices/${dev}/`, { primary_ip4: vmIp });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, {
      primary_ip4: ["The specified IP address (10.0.0.9/24) is not assigned to this device."],
    });
    const ok = await inv.call("PATCH", `/api/dcim/devices/${dev}/`, { primary_ip4: mine });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.primary_ip.id, mine);
  } finally {
    inv.close();
  }
});

Deno.test("interface primary_mac_address must be a MAC assigned to that interface", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const mac = (value: string, iface: number) =>
      w.post("/api/dcim/mac-addresses/", {
        mac_address: value,
        assigned_object_type: "virtualization.vminterface",
        assigned_object_id: iface,
      });
    const mine = await mac("aa:bb:cc:dd:ee:01", w.if1);
    const theirs = await mac("aa:bb:cc:dd:ee:02", w.if2);
    const path = `/api/virtualization/interfaces/${w.if1}/`;
    const bad = await inv.call("PATCH", path, { primary_mac_address: theirs });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, {
      primary_mac_address: ["MAC address AA:BB:CC:DD:EE:02 is not assigned to this interface."],
    });
    const ok = await inv.call("PATCH", path, { primary_mac_address: mine });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.primary_mac_address.id, mine);
  } finally {
    inv.close();
  }
});

Deno.test("nested references: an unknown attribute is a 400, never a silent match", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const r = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "vm9",
      cluster: { bogus: "x" },
    });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, {
      cluster: ['Related object not found using the provided attributes: {"bogus":"x"}'],
    });
    // Known attributes (fields, `<fk>_id`, nested dicts) still resolve.
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
  } finally {
    inv.close();
  }
});

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
    assert.deepEqual(Object.keys(choices).sort(), ["status"]);
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
      `Token ${ro.body.token}`,
    );
    assert.equal(roOptions.status, 200);
    assert.equal(roOptions.body.actions, undefined);
  } finally {
    inv.close();
  }
});

Deno.test("tokens: a caller-chosen v1 plaintext needs NetBox's 40 characters", async () => {
  const inv = await setup();
  try {
    const short = await inv.call("POST", "/api/users/tokens/", { version: 1, token: "short" });
    assert.equal(short.status, 400);
    assert.deepEqual(short.body, { token: ["Ensure this field has at least 40 characters."] });
    const long = await inv.call("POST", "/api/users/tokens/", {
      version: 1,
      token: "f".repeat(40),
    });
    assert.equal(long.status, 201);
    const works = await inv.call("GET", "/api/status/", undefined, `Token ${"f".repeat(40)}`);
    assert.equal(works.status, 200);
  } finally {
    inv.close();
  }
});

Deno.test("ipam: addresses are stored canonical, ?address= matches with or without a length", async () => {
  const inv = await setup();
  try {
    const post = (path: string, body: unknown) => inv.call("POST", path, body);
    const v6 = await post("/api/ipam/ip-addresses/", { address: "FD00:0:0::07/64" });
    assert.equal(v6.status, 201, JSON.stringify(v6.body));
    assert.equal(v6.body.address, "fd00::7/64");
    const bare = await post("/api/ipam/ip-addresses/", { address: "10.1.0.6" });
    assert.equal(bare.status, 201, JSON.stringify(bare.body));
    assert.equal(bare.body.address, "10.1.0.6/32");
    const v4 = await post("/api/ipam/ip-addresses/", { address: "10.1.0.5/24" });
    const ids = async (query: string) =>
      (await inv.call("GET", `/api/ipam/ip-addresses/?${query}`)).body.results?.map((
        r: { id: number },
      ) => r.id);
    assert.deepEqual(await ids("address=10.1.0.5"), [v4.body.id]);
    assert.deepEqual(await ids("address=10.1.0.5/24"), [v4.body.id]);
    assert.deepEqual(await ids("address=10.1.0.5/25"), []);
    assert.deepEqual(await ids("address=fd00::7/64"), [v6.body.id]);
    assert.deepEqual(await ids("address=FD00:0::7"), [v6.body.id]);
    assert.deepEqual(await ids("address=10.1.0.5&address=10.1.0.6"), [v4.body.id, bare.body.id]);
    assert.deepEqual(await ids("parent=10.1.0.0/16"), [v4.body.id, bare.body.id]);
    assert.deepEqual(await ids("parent=10.2.0.0/16"), []);
    assert.deepEqual(await ids("family=6"), [v6.body.id]);
    const bad = await inv.call("GET", "/api/ipam/ip-addresses/?parent=nonsense");
    assert.equal(bad.status, 400);
    assert.equal((await inv.call("GET", "/api/ipam/ip-addresses/?family=5")).status, 400);
    // Patching the address keeps the host index right.
    await inv.call("PATCH", `/api/ipam/ip-addresses/${v4.body.id}/`, { address: "10.1.0.9/24" });
    assert.deepEqual(await ids("address=10.1.0.5"), []);
    assert.deepEqual(await ids("address=10.1.0.9"), [v4.body.id]);

    // Prefixes: canonical, host bits refused with NetBox's hint, containment filters.
    const p = await post("/api/ipam/prefixes/", { prefix: "10.1.0.0/24" });
    assert.equal(p.status, 201);
    const hostBits = await post("/api/ipam/prefixes/", { prefix: "10.1.0.1/24" });
    assert.equal(hostBits.status, 400);
    assert.deepEqual(hostBits.body, {
      prefix: ["10.1.0.1/24 is not a valid prefix. Did you mean 10.1.0.0/24?"],
    });
    const p6 = await post("/api/ipam/prefixes/", { prefix: "FD00:0::/48" });
    assert.equal(p6.body.prefix, "fd00::/48");
    const pids = async (query: string) =>
      (await inv.call("GET", `/api/ipam/prefixes/?${query}`)).body.results.map((
        r: { id: number },
      ) => r.id);
    assert.deepEqual(await pids("within=10.0.0.0/8"), [p.body.id]);
    assert.deepEqual(await pids("within=10.1.0.0/24"), []);
    assert.deepEqual(await pids("within_include=10.1.0.0/24"), [p.body.id]);
    assert.deepEqual(await pids("contains=10.1.0.77"), [p.body.id]);
    assert.deepEqual(await pids("prefix=fd00:0:0::/48"), [p6.body.id]);
  } finally {
    inv.close();
  }
});

Deno.test("MAC addresses: any case or separator finds the stored (upper-case) value", async () => {
  const inv = await setup();
  try {
    const mac = await inv.call("POST", "/api/dcim/mac-addresses/", {
      mac_address: "aa-bb-cc-dd-ee-0f",
    });
    assert.equal(mac.body.mac_address, "AA:BB:CC:DD:EE:0F");
    for (const q of ["aa:bb:cc:dd:ee:0f", "AA-BB-CC-DD-EE-0F", "AA:BB:CC:DD:EE:0F"]) {
      const r = await inv.call("GET", `/api/dcim/mac-addresses/?mac_address=${q}`);
      assert.equal(r.body.count, 1, q);
    }
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

Deno.test("deleting an interface deletes its IPs and MACs (NetBox), clearing primary IPs", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const ip = await w.ip("10.0.0.5/24", w.if1);
    const mac = await w.post("/api/dcim/mac-addresses/", {
      mac_address: "aa:bb:cc:dd:ee:01",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: w.if1,
    });
    const other = await w.ip("10.0.0.6/24", w.if2);
    await inv.call("PATCH", `/api/virtualization/interfaces/${w.if1}/`, {
      primary_mac_address: mac,
    });
    await inv.call("PATCH", `/api/virtualization/virtual-machines/${w.vm1}/`, { primary_ip4: ip });
    const del = await inv.call("DELETE", `/api/virtualization/interfaces/${w.if1}/`);
    assert.equal(del.status, 204);
    assert.equal((await inv.call("GET", `/api/ipam/ip-addresses/${ip}/`)).status, 404);
    assert.equal((await inv.call("GET", `/api/dcim/mac-addresses/${mac}/`)).status, 404);
    assert.equal((await inv.call("GET", `/api/ipam/ip-addresses/${other}/`)).status, 200);
    const vm = await inv.call("GET", `/api/virtualization/virtual-machines/${w.vm1}/`);
    assert.equal(vm.body.primary_ip4, null);
    // Deleting the VM takes its interfaces and their addresses along.
    assert.equal(
      (await inv.call("DELETE", `/api/virtualization/virtual-machines/${w.vm2}/`)).status,
      204,
    );
    assert.equal((await inv.call("GET", "/api/ipam/ip-addresses/")).body.count, 0);
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

Deno.test("bulk PATCH spanning several atomics survives concurrent edits: never half written", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const created = await inv.call(
      "POST",
      "/api/virtualization/virtual-machines/",
      Array.from({ length: 400 }, (_, i) => ({ name: `bulk${i}`, cluster: w.cluster })),
    );
    assert.equal(created.status, 201);
    const ids: number[] = created.body.map((r: { id: number }) => r.id);
    // Edits of records in the later atomics land between the bulk's read and its commit.
    const tail = ids.filter((_, i) => i >= 150 && i % 5 === 0);
    const [bulk] = await Promise.all([
      inv.call(
        "PATCH",
        "/api/virtualization/virtual-machines/",
        ids.map((id) => ({ id, description: "bulk" })),
      ),
      ...tail.map(async (id, i) => {
        await new Promise((r) => setTimeout(r, i * 4));
        return inv.call("PATCH", `/api/virtualization/virtual-machines/${id}/`, {
          comments: "solo",
        });
      }),
    ]);
    assert.equal(bulk.status, 200, JSON.stringify(bulk.body).slice(0, 300));
    assert.equal(bulk.body.length, ids.length);
    const after = await inv.call(
      "GET",
      "/api/virtualization/virtual-machines/?name__isw=bulk&limit=0&fields=id,description,comments",
    );
    const stale = after.body.results.filter((r: { description: string }) =>
      r.description !== "bulk"
    );
    assert.deepEqual(stale, []);
    const solo = after.body.results.filter((r: { comments: string }) => r.comments === "solo");
    assert.equal(solo.length, tail.length);
  } finally {
    inv.close();
  }
});

Deno.test("a delete racing a create never leaves a reference to a deleted object", async () => {
  const inv = await setup();
  try {
    const engine = createInventoryCore(inv.deps).engine;
    await inv.call("POST", "/api/virtualization/cluster-types/", { name: "t", slug: "t" });
    const dangling: number[] = [];
    for (let i = 0; i < 40; i++) {
      const c = await inv.call("POST", "/api/virtualization/clusters/", { name: `c${i}`, type: 1 });
      const [vm] = await Promise.all([
        inv.call("POST", "/api/virtualization/virtual-machines/", {
          name: `v${i}`,
          cluster: c.body.id,
        }),
        (async () => {
          await new Promise((r) => setTimeout(r, i % 3));
          return inv.call("DELETE", `/api/virtualization/clusters/${c.body.id}/`);
        })(),
      ]);
      if (vm.status !== 201) {
        assert.equal(vm.status, 400, JSON.stringify(vm.body));
        continue;
      }
      const stored = await engine.get("virtualization.virtualmachine", vm.body.id);
      if (typeof stored?.cluster !== "number") continue;
      if (!(await engine.get("virtualization.cluster", stored.cluster))) dangling.push(i);
    }
    assert.deepEqual(dangling, []);
  } finally {
    inv.close();
  }
});

Deno.test("interfaces show NetBox 4.2's read-only mac_address, kept in step with the primary MAC", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const path = `/api/virtualization/interfaces/${w.if1}/`;
    assert.equal((await inv.call("GET", path)).body.mac_address, null);
    const mac = await w.post("/api/dcim/mac-addresses/", {
      mac_address: "aa:bb:cc:dd:ee:01",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: w.if1,
    });
    const set = await inv.call("PATCH", path, { primary_mac_address: mac });
    assert.equal(set.body.mac_address, "AA:BB:CC:DD:EE:01");
    // Written mac_address is ignored (read-only, as in NetBox 4.2).
    const ignored = await inv.call("PATCH", path, { mac_address: "00:00:00:00:00:01" });
    assert.equal(ignored.body.mac_address, "AA:BB:CC:DD:EE:01");
    const found = await inv.call(
      "GET",
      "/api/virtualization/interfaces/?mac_address=aa-bb-cc-dd-ee-01",
    );
    assert.deepEqual(found.body.results.map((r: { id: number }) => r.id), [w.if1]);
    await inv.call("PATCH", `/api/dcim/mac-addresses/${mac}/`, {
      mac_address: "aa:bb:cc:dd:ee:02",
    });
    assert.equal((await inv.call("GET", path)).body.mac_address, "AA:BB:CC:DD:EE:02");
    assert.equal((await inv.call("DELETE", `/api/dcim/mac-addresses/${mac}/`)).status, 204);
    const after = await inv.call("GET", path);
    assert.equal(after.body.primary_mac_address, null);
    assert.equal(after.body.mac_address, null);
  } finally {
    inv.close();
  }
});

Deno.test("tokens: a non-superuser can neither strip, disable nor delete a more powerful token", async () => {
  const inv = await setup();
  try {
    const make = async (body: Record<string, unknown>) => {
      const r = await inv.call("POST", "/api/users/tokens/", { version: 1, ...body });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body as { id: number; token: string };
    };
    const admin = await make({
      permissions: ["users.view_token", "users.change_token", "users.delete_token"],
    });
    const as = `Token ${admin.token}`;
    const peer = await make({ permissions: ["dcim.add_site", "dcim.view_site"] });
    const strip = await inv.call("PATCH", `/api/users/tokens/${peer.id}/`, { permissions: [] }, as);
    assert.equal(strip.status, 400);
    assert.deepEqual(strip.body, {
      non_field_errors: ["Cannot change a token with more permissions than this one."],
    });
    const disable = await inv.call(
      "PATCH",
      `/api/users/tokens/${peer.id}/`,
      { enabled: false },
      as,
    );
    assert.equal(disable.status, 400);
    assert.equal(
      (await inv.call("DELETE", `/api/users/tokens/${peer.id}/`, undefined, as)).status,
      403,
    );
    // The peer still works with its permissions.
    const peerAuth = `Token ${peer.token}`;
    assert.equal((await inv.call("GET", "/api/dcim/sites/", undefined, peerAuth)).status, 200);
    // A token within the actor's own permissions can be managed.
    const small = await make({ permissions: ["users.view_token"] });
    const ok = await inv.call("PATCH", `/api/users/tokens/${small.id}/`, { enabled: false }, as);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(
      (await inv.call("DELETE", `/api/users/tokens/${small.id}/`, undefined, as)).status,
      204,
    );
  } finally {
    inv.close();
  }
});

Deno.test("tokens: the last enabled superuser token cannot be deleted, disabled or demoted", async () => {
  const inv = await setup();
  try {
    const self = (await inv.call("GET", "/api/users/tokens/?is_superuser=true")).body.results[0];
    const last = "This is the last enabled superuser token; create another superuser token first.";
    const del = await inv.call("DELETE", `/api/users/tokens/${self.id}/`);
    assert.deepEqual([del.status, del.body], [409, { detail: last }]);
    for (const change of [{ enabled: false }, { is_superuser: false }, { expires: "2001-01-01" }]) {
      const r = await inv.call("PATCH", `/api/users/tokens/${self.id}/`, change);
      assert.deepEqual(
        [r.status, r.body],
        [400, { non_field_errors: [last] }],
        JSON.stringify(change),
      );
    }
    // Still usable, and other edits are fine.
    const edit = await inv.call("PATCH", `/api/users/tokens/${self.id}/`, { description: "root" });
    assert.equal(edit.status, 200);
    // With a second superuser token, the first may go.
    const second = await inv.call("POST", "/api/users/tokens/", { is_superuser: true });
    assert.equal(second.status, 201);
    assert.equal((await inv.call("DELETE", `/api/users/tokens/${self.id}/`)).status, 204);
    const nowLast = await inv.call(
      "DELETE",
      `/api/users/tokens/${second.body.id}/`,
      undefined,
      `Token ${second.body.token}`,
    );
    assert.equal(nowLast.status, 409);
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
  } finally {
    inv.close();
  }
});

Deno.test("an update racing the delete of its new target never leaves a dangling or null required FK", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const engine = createInventoryCore(inv.deps).engine;
    const bad: string[] = [];
    for (let i = 0; i < 30; i++) {
      const target = await w.post("/api/virtualization/virtual-machines/", {
        name: `t${i}`,
        cluster: w.cluster,
      });
      const iface = await w.post("/api/virtualization/interfaces/", {
        virtual_machine: w.vm1,
        name: `e${i}`,
      });
      await Promise.all([
        inv.call("PATCH", `/api/virtualization/interfaces/${iface}/`, { virtual_machine: target }),
        (async () => {
          await new Promise((r) => setTimeout(r, i % 3));
          return inv.call("DELETE", `/api/virtualization/virtual-machines/${target}/`);
        })(),
      ]);
      const stored = await engine.get("virtualization.vminterface", iface);
      if (!stored) continue; // went with the deleted VM (CASCADE)
      const vm = stored.virtual_machine;
      if (typeof vm !== "number") bad.push(`${i}: null virtual_machine`);
      else if (!(await engine.get("virtualization.virtualmachine", vm))) bad.push(`${i}: dangling`);
    }
    assert.deepEqual(bad, []);
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
