/**
 * NetBox's own rules, enforced with NetBox's texts on create, update and bulk writes: the unique
 * IP space (ENFORCE_GLOBAL_UNIQUE, VRF enforce_unique), VM disk = sum of its virtual disks, a
 * primary IP on the object's own interfaces (or their NAT outside), a primary MAC not held by
 * another interface, a VM's site/cluster/device placement, VM names per cluster or device, and
 * unknown custom-field keys. docs/netbox-rules.md maps each rule to a test here.
 */
import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";
import { world } from "./_world.ts";

const IPS = "/api/ipam/ip-addresses/";
const PREFIXES = "/api/ipam/prefixes/";
const VMS = "/api/virtualization/virtual-machines/";

async function post(inv: Inv, path: string, body: unknown) {
  const r = await inv.call("POST", path, body);
  assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
  return r.body;
}

async function count(inv: Inv, path: string): Promise<number> {
  return (await inv.call("GET", path)).body.count;
}

Deno.test("IP addresses: one host per table (masks ignored), on create, update and bulk", async () => {
  const inv = await setup();
  try {
    const first = await post(inv, IPS, { address: "10.0.0.5/24" });
    const dup = await inv.call("POST", IPS, { address: "10.0.0.5/32" });
    assert.equal(dup.status, 400);
    assert.deepEqual(dup.body, {
      address: ["Duplicate IP address found in global table: 10.0.0.5/24"],
    });
    // Update: moving another address onto the taken host is refused too.
    const other = await post(inv, IPS, { address: "10.0.0.6/24" });
    const moved = await inv.call("PATCH", `${IPS}${other.id}/`, { address: "10.0.0.5/16" });
    assert.deepEqual(moved.body, {
      address: ["Duplicate IP address found in global table: 10.0.0.5/24"],
    });
    // Re-saving the holder itself is fine.
    const self = await inv.call("PATCH", `${IPS}${first.id}/`, { description: "kept" });
    assert.equal(self.status, 200, JSON.stringify(self.body));
    // Bulk: a duplicate of a stored address, and two copies inside the request; nothing written.
    const before = await count(inv, IPS);
    const bulk = await inv.call("POST", IPS, [{ address: "10.0.1.1/24" }, {
      address: "10.0.0.5/24",
    }]);
    assert.equal(bulk.status, 400);
    assert.deepEqual(bulk.body, [{}, {
      address: ["Duplicate IP address found in global table: 10.0.0.5/24"],
    }]);
    const inBatch = await inv.call("POST", IPS, [{ address: "10.0.1.1/24" }, {
      address: "10.0.1.1/25",
    }]);
    assert.deepEqual(inBatch.body, [{}, {
      address: ["Duplicate IP address found in global table: 10.0.1.1/24"],
    }]);
    assert.equal(await count(inv, IPS), before);
    // Bulk update onto a taken host.
    const bulkPatch = await inv.call("PATCH", IPS, [{ id: other.id, address: "10.0.0.5/24" }]);
    assert.equal(bulkPatch.status, 400);
    assert.equal((await inv.call("GET", `${IPS}${other.id}/`)).body.address, "10.0.0.6/24");
    // IPv6: compressed or not, the same host.
    await post(inv, IPS, { address: "2001:db8::1/64" });
    const v6 = await inv.call("POST", IPS, { address: "2001:0db8:0:0::1/128" });
    assert.deepEqual(v6.body, {
      address: ["Duplicate IP address found in global table: 2001:db8::1/64"],
    });
  } finally {
    inv.close();
  }
});

Deno.test("IP addresses: exempt roles, VRFs with and without enforce_unique, the global setting", async () => {
  const inv = await setup();
  try {
    // anycast/vip/vrrp/hsrp/glbp/carp may repeat among themselves, never with a plain address.
    await post(inv, IPS, { address: "10.9.0.1/24", role: "vip" });
    await post(inv, IPS, { address: "10.9.0.1/24", role: "vrrp" });
    const plain = await inv.call("POST", IPS, { address: "10.9.0.1/24" });
    assert.deepEqual(plain.body, {
      address: ["Duplicate IP address found in global table: 10.9.0.1/24"],
    });
    await post(inv, IPS, { address: "10.9.0.2/24" });
    const vipOnPlain = await inv.call("POST", IPS, { address: "10.9.0.2/24", role: "anycast" });
    assert.equal(vipOnPlain.status, 400);
    // A VRF is its own table; one with enforce_unique refuses duplicates, naming it.
    const strict = await post(inv, "/api/ipam/vrfs/", { name: "blue", rd: "65000:1" });
    const loose = await post(inv, "/api/ipam/vrfs/", { name: "lab", enforce_unique: false });
    await post(inv, IPS, { address: "10.9.0.2/24", vrf: strict.id });
    const inStrict = await inv.call("POST", IPS, { address: "10.9.0.2/24", vrf: strict.id });
    assert.deepEqual(inStrict.body, {
      address: ["Duplicate IP address found in VRF blue (65000:1): 10.9.0.2/24"],
    });
    await post(inv, IPS, { address: "10.9.0.2/24", vrf: loose.id });
    await post(inv, IPS, { address: "10.9.0.2/24", vrf: loose.id });
    // Turning a VRF's enforcement off releases its addresses' claims at once.
    const off = await inv.call("PATCH", `/api/ipam/vrfs/${strict.id}/`, { enforce_unique: false });
    assert.equal(off.status, 200);
    await post(inv, IPS, { address: "10.9.0.2/24", vrf: strict.id });
    assert.equal(await count(inv, `${IPS}?vrf_id=${strict.id}&address=10.9.0.2`), 2);
  } finally {
    inv.close();
  }
  // INVENTORY_ENFORCE_GLOBAL_UNIQUE=false: the global table accepts duplicates (VRFs unchanged).
  const relaxed = await setup({ INVENTORY_ENFORCE_GLOBAL_UNIQUE: "false" });
  try {
    await post(relaxed, IPS, { address: "10.0.0.5/24" });
    await post(relaxed, IPS, { address: "10.0.0.5/24" });
    await post(relaxed, PREFIXES, { prefix: "10.0.0.0/24" });
    await post(relaxed, PREFIXES, { prefix: "10.0.0.0/24" });
    assert.equal(await count(relaxed, `${IPS}?address=10.0.0.5`), 2);
  } finally {
    relaxed.close();
  }
});

Deno.test("IP addresses: /0, and a network ID or broadcast on an interface, are refused", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const zero = await inv.call("POST", IPS, { address: "10.0.0.1/0" });
    assert.deepEqual(zero.body, { address: ["Cannot create IP address with /0 mask."] });
    const on = (address: string) =>
      inv.call("POST", IPS, {
        address,
        assigned_object_type: "virtualization.vminterface",
        assigned_object_id: w.if1,
      });
    assert.deepEqual((await on("10.1.0.0/24")).body, {
      __all__: ["10.1.0.0 is a network ID, which may not be assigned to an interface."],
    });
    assert.deepEqual((await on("10.1.0.255/24")).body, {
      __all__: ["10.1.0.255 is a broadcast address, which may not be assigned to an interface."],
    });
    assert.equal((await on("10.1.0.0/31")).status, 201);
    // Unassigned, a network ID is just an address.
    assert.equal((await inv.call("POST", IPS, { address: "10.2.0.0/24" })).status, 201);
  } finally {
    inv.close();
  }
});

Deno.test("prefixes: one per table, on create, update and bulk", async () => {
  const inv = await setup();
  try {
    await post(inv, PREFIXES, { prefix: "192.168.10.0/24" });
    const dup = await inv.call("POST", PREFIXES, { prefix: "192.168.10.0/24" });
    assert.deepEqual(dup.body, {
      prefix: ["Duplicate prefix found in global table: 192.168.10.0/24"],
    });
    const other = await post(inv, PREFIXES, { prefix: "192.168.11.0/24" });
    const moved = await inv.call("PATCH", `${PREFIXES}${other.id}/`, {
      prefix: "192.168.10.0/24",
    });
    assert.equal(moved.status, 400);
    const bulk = await inv.call("POST", PREFIXES, [
      { prefix: "172.16.0.0/16" },
      { prefix: "172.16.0.0/16" },
    ]);
    assert.deepEqual(bulk.body[1], {
      prefix: ["Duplicate prefix found in global table: 172.16.0.0/16"],
    });
    // Another length is another prefix; a VRF is another table.
    await post(inv, PREFIXES, { prefix: "192.168.10.0/25" });
    const vrf = await post(inv, "/api/ipam/vrfs/", { name: "blue" });
    await post(inv, PREFIXES, { prefix: "192.168.10.0/24", vrf: vrf.id });
    const inVrf = await inv.call("POST", PREFIXES, { prefix: "192.168.10.0/24", vrf: vrf.id });
    assert.deepEqual(inVrf.body, {
      prefix: ["Duplicate prefix found in VRF blue: 192.168.10.0/24"],
    });
    const zero = await inv.call("POST", PREFIXES, { prefix: "0.0.0.0/0" });
    assert.deepEqual(zero.body, { prefix: ["Cannot create prefix with /0 mask."] });
  } finally {
    inv.close();
  }
});

Deno.test("VM disk: kept equal to the sum of its virtual disks, as NetBox's rule and signal", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const disks = "/api/virtualization/virtual-disks/";
    const vm = `${VMS}${w.vm1}/`;
    // Any value while the VM has no disks.
    assert.equal((await inv.call("PATCH", vm, { disk: 999 })).body.disk, 999);
    // Creating disks (bulk) sets the VM's disk to their sum.
    await inv.call("POST", disks, [
      { virtual_machine: w.vm1, name: "scsi0", size: 32768 },
      { virtual_machine: w.vm1, name: "scsi1", size: 1024 },
    ]);
    assert.equal((await inv.call("GET", vm)).body.disk, 33792);
    const wrong = await inv.call("PATCH", vm, { disk: 40000 });
    assert.equal(wrong.status, 400);
    assert.deepEqual(wrong.body, {
      disk: [
        "The specified disk size (40000) must match the aggregate size of assigned virtual disks (33792).",
      ],
    });
    // The same in a bulk update and a PUT.
    const bulk = await inv.call("PATCH", VMS, [{ id: w.vm1, disk: 1 }]);
    assert.equal(bulk.status, 400);
    assert.match(JSON.stringify(bulk.body), /must match the aggregate size/);
    const put = await inv.call("PUT", vm, { name: "vm1", cluster: w.cluster, disk: 5 });
    assert.equal(put.status, 400);
    // The sum itself is accepted; null is filled with it.
    assert.equal((await inv.call("PATCH", vm, { disk: 33792 })).status, 200);
    assert.equal((await inv.call("PATCH", vm, { disk: null })).body.disk, 33792);
    // Resizing and deleting disks follow; none left → null.
    const list = (await inv.call("GET", `${disks}?virtual_machine_id=${w.vm1}`)).body.results;
    await inv.call("PATCH", `${disks}${list[0].id}/`, { size: 2048 });
    assert.equal((await inv.call("GET", vm)).body.disk, 3072);
    await inv.call("DELETE", `${disks}${list[0].id}/`);
    assert.equal((await inv.call("GET", vm)).body.disk, 1024);
    await inv.call("DELETE", `${disks}${list[1].id}/`);
    assert.equal((await inv.call("GET", vm)).body.disk, null);
  } finally {
    inv.close();
  }
});

Deno.test("primary IP: the object's own interface, or the NAT outside of one of its IPs", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const inside = await w.ip("10.0.0.10/24", w.if1);
    const outside = (await post(inv, IPS, { address: "198.51.100.10/32", nat_inside: inside })).id;
    const theirs = await w.ip("10.0.0.20/24", w.if2);
    const bad = await inv.call("PATCH", `${VMS}${w.vm1}/`, { primary_ip4: theirs });
    assert.deepEqual(bad.body, {
      primary_ip4: ["The specified IP address (10.0.0.20/24) is not assigned to this VM."],
    });
    const nat = await inv.call("PATCH", `${VMS}${w.vm1}/`, { primary_ip4: outside });
    assert.equal(nat.status, 200, JSON.stringify(nat.body));
    assert.equal(nat.body.primary_ip4.id, outside);
    // vm2 has no IP whose NAT outside this is.
    const other = await inv.call("PATCH", VMS, [{ id: w.vm2, primary_ip4: outside }]);
    assert.equal(other.status, 400);
  } finally {
    inv.close();
  }
});

Deno.test("primary MAC: an unassigned MAC is accepted, and taken by an interface created with it", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const macs = "/api/dcim/mac-addresses/";
    const free = (await post(inv, macs, { mac_address: "02:00:00:00:00:01" })).id;
    const iface = await post(inv, "/api/virtualization/interfaces/", {
      virtual_machine: w.vm1,
      name: "net1",
      primary_mac_address: free,
    });
    const taken = (await inv.call("GET", `${macs}${free}/`)).body;
    assert.equal(taken.assigned_object_type, "virtualization.vminterface");
    assert.equal(taken.assigned_object_id, iface.id);
    assert.equal(iface.mac_address, "02:00:00:00:00:01");
    // A PATCH accepts an unassigned MAC but does not assign it (NetBox 4.6).
    const loose = (await post(inv, macs, { mac_address: "02:00:00:00:00:02" })).id;
    const patched = await inv.call("PATCH", `/api/virtualization/interfaces/${w.if2}/`, {
      primary_mac_address: loose,
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.equal((await inv.call("GET", `${macs}${loose}/`)).body.assigned_object_id, null);
    // The MAC now on net1 of vm1 cannot be another interface's primary.
    const stolen = await inv.call("POST", "/api/virtualization/interfaces/", [{
      virtual_machine: w.vm2,
      name: "net9",
      primary_mac_address: free,
    }]);
    assert.deepEqual(stolen.body, [{
      primary_mac_address: [
        "MAC address 02:00:00:00:00:01 is assigned to a different interface (net1).",
      ],
    }]);
  } finally {
    inv.close();
  }
});

async function placementWorld(inv: Inv) {
  const site = (name: string) =>
    post(inv, "/api/dcim/sites/", { name, slug: name.toLowerCase() }).then((r) => r.id);
  const a = await site("A");
  const b = await site("B");
  const type = (await post(inv, "/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" }))
    .id;
  const cluster = (await post(inv, "/api/virtualization/clusters/", {
    name: "c1",
    type,
    scope_type: "dcim.site",
    scope_id: a,
  })).id;
  const other = (await post(inv, "/api/virtualization/clusters/", { name: "c2", type })).id;
  const maker = (await post(inv, "/api/dcim/manufacturers/", { name: "M", slug: "m" })).id;
  const model = (await post(inv, "/api/dcim/device-types/", {
    manufacturer: maker,
    model: "X",
    slug: "x",
  })).id;
  const role = (await post(inv, "/api/dcim/device-roles/", { name: "R", slug: "r" })).id;
  const device = (name: string, site: number, cluster: number | null) =>
    post(inv, "/api/dcim/devices/", { name, site, device_type: model, role, cluster })
      .then((r) => r.id);
  const clustered = await device("pve1", a, cluster);
  const standalone = await device("pve9", b, null);
  const tenant = (await post(inv, "/api/tenancy/tenants/", { name: "T", slug: "t" })).id;
  return { a, b, cluster, other, clustered, standalone, tenant };
}

Deno.test("VM placement: a site, cluster or device, and they agree (NetBox 4.6 texts)", async () => {
  const inv = await setup();
  try {
    const p = await placementWorld(inv);
    const refuse = async (body: unknown, expected: unknown) => {
      const r = await inv.call("POST", VMS, body);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.deepEqual(r.body, expected);
    };
    await refuse({ name: "x" }, {
      __all__: ["A virtual machine must be assigned to a site, cluster, or device."],
    });
    await refuse({ name: "x", cluster: p.cluster, site: p.b }, {
      cluster: ["The selected cluster (c1) is not assigned to this site (B)."],
    });
    await refuse({ name: "x", device: p.standalone, site: p.a }, {
      site: ["The selected device (pve9) is not assigned to this site (A)."],
    });
    await refuse({ name: "x", device: p.clustered }, {
      cluster: ["Must specify the assigned device's cluster (c1) when assigning host device pve1."],
    });
    await refuse({ name: "x", device: p.clustered, cluster: p.other }, {
      device: ["The selected device (pve1) is not assigned to this cluster (c2)."],
    });
    // A standalone host: the VM takes the device's site; a clustered one, the cluster's.
    const alone = await post(inv, VMS, { name: "x", device: p.standalone });
    assert.equal(alone.site.id, p.b);
    const inCluster = await post(inv, VMS, { name: "y", device: p.clustered, cluster: p.cluster });
    assert.equal(inCluster.site.id, p.a);
    // The same rules on update and in bulk.
    const moved = await inv.call("PATCH", VMS, [{ id: inCluster.id, cluster: p.other }]);
    assert.deepEqual(moved.body, {
      device: ["The selected device (pve1) is not assigned to this cluster (c2)."],
    });
  } finally {
    inv.close();
  }
});

Deno.test("VM names: unique per cluster (and tenant), and per device without a cluster", async () => {
  const inv = await setup();
  try {
    const p = await placementWorld(inv);
    const create = (body: Record<string, unknown>) => inv.call("POST", VMS, body);
    assert.equal((await create({ name: "web", cluster: p.cluster })).status, 201);
    assert.deepEqual((await create({ name: "WEB", cluster: p.cluster })).body, {
      __all__: ["Virtual machine name must be unique per cluster."],
    });
    // With a tenant it is another constraint (NULL tenants never collide with it).
    assert.equal((await create({ name: "web", cluster: p.cluster, tenant: p.tenant })).status, 201);
    assert.deepEqual((await create({ name: "Web", cluster: p.cluster, tenant: p.tenant })).body, {
      __all__: ["Virtual machine name must be unique per cluster and tenant."],
    });
    // No cluster: per device (NetBox 4.6).
    assert.equal((await create({ name: "db", device: p.standalone })).status, 201);
    assert.deepEqual((await create({ name: "DB", device: p.standalone })).body, {
      __all__: ["Virtual machine name must be unique per device."],
    });
    assert.equal(
      (await create({ name: "db", device: p.standalone, tenant: p.tenant })).status,
      201,
    );
    assert.deepEqual(
      (await inv.call("POST", VMS, [{ name: "db", device: p.standalone, tenant: p.tenant }])).body,
      [{ __all__: ["Virtual machine name must be unique per device and tenant."] }],
    );
    // A VM on a site only has no name constraint.
    assert.equal((await create({ name: "solo", site: p.a })).status, 201);
    assert.equal((await create({ name: "solo", site: p.a })).status, 201);
    // Rename onto a taken name.
    const other = await post(inv, VMS, { name: "other", cluster: p.cluster });
    const clash = await inv.call("PATCH", `${VMS}${other.id}/`, { name: "web" });
    assert.deepEqual(clash.body, { __all__: ["Virtual machine name must be unique per cluster."] });
  } finally {
    inv.close();
  }
});

Deno.test("custom fields: each unknown key is refused under its own name; stale keys are dropped", async () => {
  const inv = await setup();
  try {
    await post(inv, "/api/extras/custom-fields/", {
      name: "vmid",
      type: "integer",
      object_types: ["virtualization.virtualmachine"],
    });
    const w = await world(inv);
    const bad = await inv.call("PATCH", `${VMS}${w.vm1}/`, {
      custom_fields: { vmid: 100, zeta: 1, alpha: "x" },
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, {
      custom_fields: {
        alpha: "Custom field 'alpha' does not exist for this object type.",
        zeta: "Custom field 'zeta' does not exist for this object type.",
      },
    });
    assert.equal((await inv.call("GET", `${VMS}${w.vm1}/`)).body.custom_fields.vmid, null);
    const bulk = await inv.call("POST", VMS, [
      { name: "n1", cluster: w.cluster, custom_fields: { vmid: 1 } },
      { name: "n2", cluster: w.cluster, custom_fields: { nope: 1 } },
    ]);
    assert.deepEqual(bulk.body, [{}, {
      custom_fields: { nope: "Custom field 'nope' does not exist for this object type." },
    }]);
    assert.equal(await count(inv, `${VMS}?name=n1`), 0);
  } finally {
    inv.close();
  }
});

/** A site, a device type and role, two tenants: what a device needs. */
async function deviceWorld(inv: Inv) {
  const site = (await post(inv, "/api/dcim/sites/", { name: "AMS1", slug: "ams1" })).id;
  const other = (await post(inv, "/api/dcim/sites/", { name: "FRA1", slug: "fra1" })).id;
  const maker = await post(inv, "/api/dcim/manufacturers/", { name: "Generic", slug: "generic" });
  const type = (await post(inv, "/api/dcim/device-types/", {
    manufacturer: maker.id,
    model: "Server",
    slug: "server",
  })).id;
  const role = (await post(inv, "/api/dcim/device-roles/", { name: "Node", slug: "node" })).id;
  const t1 = (await post(inv, "/api/tenancy/tenants/", { name: "Blue", slug: "blue" })).id;
  const t2 = (await post(inv, "/api/tenancy/tenants/", { name: "Red", slug: "red" })).id;
  return { site, other, type, role, t1, t2 };
}

const DEVICES = "/api/dcim/devices/";

Deno.test("device names: unique per site among untenanted devices, and per site and tenant", async () => {
  const inv = await setup();
  try {
    const w = await deviceWorld(inv);
    const device = (name: string, extra: Record<string, unknown> = {}) => ({
      name,
      site: w.site,
      device_type: w.type,
      role: w.role,
      ...extra,
    });
    const create = (body: unknown) => inv.call("POST", DEVICES, body);
    assert.equal((await create(device("pve1"))).status, 201);
    // Case-insensitive, per site (NetBox's Lower(name) constraints).
    assert.deepEqual((await create(device("PVE1"))).body, {
      __all__: ["Device name must be unique per site."],
    });
    assert.equal((await create(device("pve1", { site: w.other }))).status, 201);
    // A tenant puts a device under the other constraint: a name an untenanted device holds is
    // free for it, and free again under another tenant.
    assert.equal((await create(device("pve1", { tenant: w.t1 }))).status, 201);
    assert.equal((await create(device("pve1", { tenant: w.t2 }))).status, 201);
    assert.deepEqual((await create(device("Pve1", { tenant: w.t1 }))).body, {
      __all__: ["Constraint \u201cdcim_device_unique_name_site_tenant\u201d is violated."],
    });
    // Bulk: NetBox 4.6 creates devices one after another (SequentialBulkCreatesMixin), so a
    // refusal is the first refused device's errors alone; nothing written.
    const before = await count(inv, DEVICES);
    const bulk = await create([device("pve2"), device("pve1")]);
    assert.equal(bulk.status, 400);
    assert.deepEqual(bulk.body, { __all__: ["Device name must be unique per site."] });
    assert.equal(await count(inv, DEVICES), before);
    // Update: dropping the tenant of a device named as an untenanted one is refused; unnamed
    // devices never collide.
    const tenanted = (await inv.call("GET", `${DEVICES}?name=pve1&tenant_id=${w.t2}`)).body
      .results[0];
    const moved = await inv.call("PATCH", `${DEVICES}${tenanted.id}/`, { tenant: null });
    assert.deepEqual(moved.body, { __all__: ["Device name must be unique per site."] });
    assert.equal((await create(device(""))).status, 201);
    assert.equal((await create(device(""))).status, 201);
  } finally {
    inv.close();
  }
});

Deno.test("device and VM role/platform filters match the roles and platforms below (NetBox 4.6 trees)", async () => {
  const inv = await setup();
  try {
    const w = await deviceWorld(inv);
    const servers = await post(inv, "/api/dcim/device-roles/", {
      name: "Servers",
      slug: "servers",
    });
    const hv = await post(inv, "/api/dcim/device-roles/", {
      name: "Hypervisors",
      slug: "hypervisors",
      parent: servers.id,
    });
    const pve = await post(inv, "/api/dcim/device-roles/", {
      name: "PVE",
      slug: "pve",
      parent: hv.id,
    });
    const linux = await post(inv, "/api/dcim/platforms/", { name: "Linux", slug: "linux" });
    const debian = await post(inv, "/api/dcim/platforms/", {
      name: "Debian",
      slug: "debian",
      parent: linux.id,
    });
    const device = (name: string, role: number, platform: number | null) =>
      post(inv, DEVICES, { name, site: w.site, device_type: w.type, role, platform });
    await device("top", servers.id, linux.id);
    await device("mid", hv.id, debian.id);
    await device("leaf", pve.id, null);
    await device("other", w.role, null);
    const names = async (path: string, query: string) =>
      (await inv.call("GET", `${path}?${query}&ordering=name`)).body.results.map((
        r: { name: string },
      ) => r.name);
    assert.deepEqual(await names(DEVICES, "role=servers"), ["leaf", "mid", "top"]);
    assert.deepEqual(await names(DEVICES, `role_id=${hv.id}`), ["leaf", "mid"]);
    assert.deepEqual(await names(DEVICES, "role=pve"), ["leaf"]);
    assert.deepEqual(await names(DEVICES, "role__n=hypervisors"), ["other", "top"]);
    assert.deepEqual(await names(DEVICES, "platform=linux"), ["mid", "top"]);
    assert.deepEqual(await names(DEVICES, `platform_id=${debian.id}`), ["mid"]);
    // Several values: the union of their subtrees; an unknown slug is still a 400.
    assert.deepEqual(await names(DEVICES, `role=pve&role=node`), ["leaf", "other"]);
    const unknown = await inv.call("GET", `${DEVICES}?role=nope`);
    assert.equal(unknown.status, 400);
    // VMs too.
    await post(inv, VMS, { name: "vm-a", site: w.site, role: pve.id, platform: debian.id });
    await post(inv, VMS, { name: "vm-b", site: w.site, role: w.role });
    assert.deepEqual(await names(VMS, "role=servers"), ["vm-a"]);
    assert.deepEqual(await names(VMS, `platform_id=${linux.id}`), ["vm-a"]);
    // Roles' own parent filter is not widened (only devices' and VMs' filters are trees).
    assert.deepEqual(
      await names("/api/dcim/device-roles/", `parent_id=${servers.id}`),
      ["Hypervisors"],
    );
  } finally {
    inv.close();
  }
});

Deno.test("tags are listed by weight, then name, on the tag list and on every object", async () => {
  const inv = await setup();
  try {
    const tag = (name: string, weight?: number) =>
      post(inv, "/api/extras/tags/", {
        name,
        slug: name,
        ...(weight === undefined ? {} : { weight }),
      });
    const zeta = await tag("zeta", 10);
    const alpha = await tag("alpha");
    const beta = await tag("beta");
    const heavy = await tag("aardvark", 5000);
    const listed = (await inv.call("GET", "/api/extras/tags/")).body.results.map((
      t: { name: string },
    ) => t.name);
    assert.deepEqual(listed, ["zeta", "alpha", "beta", "aardvark"]);
    const site = await post(inv, "/api/dcim/sites/", {
      name: "AMS1",
      slug: "ams1",
      tags: [heavy.id, beta.id, zeta.id, alpha.id],
    });
    assert.deepEqual(site.tags.map((t: { name: string }) => t.name), [
      "zeta",
      "alpha",
      "beta",
      "aardvark",
    ]);
    // A weight change reorders both.
    await inv.call("PATCH", `/api/extras/tags/${heavy.id}/`, { weight: 0 });
    const again = (await inv.call("GET", `/api/dcim/sites/${site.id}/`)).body;
    assert.deepEqual(again.tags.map((t: { name: string }) => t.name), [
      "aardvark",
      "zeta",
      "alpha",
      "beta",
    ]);
    const byName = (await inv.call("GET", "/api/extras/tags/?ordering=name")).body.results;
    assert.deepEqual(byName.map((t: { name: string }) => t.name), [
      "aardvark",
      "alpha",
      "beta",
      "zeta",
    ]);
  } finally {
    inv.close();
  }
});

Deno.test("tags' names sort as the database sorts them, not naturally: n10 before n2, on the tag list (every ordering, every page) and on every object", async () => {
  // NetBox gives Tag.name no natural_sort collation: PostgreSQL compares it as text
  // (docs/netbox-rules.md), where a site's or VM's name sorts naturally.
  const inv = await setup();
  try {
    const ids: Record<string, number> = {};
    for (const name of ["n2", "N3", "n10", "n1", "m20"]) {
      ids[name] = (await post(inv, "/api/extras/tags/", { name, slug: name.toLowerCase() })).id;
    }
    const names = async (query: string) =>
      (await inv.call("GET", `/api/extras/tags/?${query}`)).body.results.map((
        t: { name: string },
      ) => t.name);
    const order = ["m20", "n1", "n10", "n2", "N3"];
    assert.deepEqual(await names(""), order);
    assert.deepEqual(await names("ordering=name"), order);
    assert.deepEqual(await names("ordering=-name"), [...order].reverse());
    // Two a page: the ordered index's pages follow the same order.
    const paged: string[] = [];
    for (let offset = 0; offset < 5; offset += 2) {
      paged.push(...await names(`ordering=name&limit=2&offset=${offset}`));
    }
    assert.deepEqual(paged, order);
    const site = await post(inv, "/api/dcim/sites/", {
      name: "AMS1",
      slug: "ams1",
      tags: Object.values(ids),
    });
    assert.deepEqual(site.tags.map((t: { name: string }) => t.name), order);
    // Renamed: the tag takes its new place.
    await inv.call("PATCH", `/api/extras/tags/${ids.m20}/`, { name: "n11" });
    assert.deepEqual(await names("ordering=name"), ["n1", "n10", "n11", "n2", "N3"]);
    // A site's name has NetBox's natural_sort: n2 before n10 there.
    for (const name of ["n10", "n2"]) await post(inv, "/api/dcim/sites/", { name, slug: name });
    for (const query of ["", "?ordering=name"]) {
      const sites = (await inv.call("GET", `/api/dcim/sites/${query}`)).body.results;
      assert.deepEqual(sites.map((x: { name: string }) => x.name), ["AMS1", "n2", "n10"], query);
    }
  } finally {
    inv.close();
  }
});
