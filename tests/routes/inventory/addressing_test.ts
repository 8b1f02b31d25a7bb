/**
 * Addresses as NetBox keeps them: primary IPs (family, assignment), primary and read-only MAC
 * addresses of interfaces, canonical IP addresses, and the IPs and MACs an interface delete takes
 * with it.
 */
import assert from "node:assert/strict";
import { setup } from "./_setup.ts";
import { world } from "./_world.ts";

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

Deno.test("interface primary_mac_address may not be a MAC of another interface", async () => {
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
      primary_mac_address: [
        "MAC address AA:BB:CC:DD:EE:02 is assigned to a different interface (net0).",
      ],
    });
    const ok = await inv.call("PATCH", path, { primary_mac_address: mine });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.primary_mac_address.id, mine);
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
