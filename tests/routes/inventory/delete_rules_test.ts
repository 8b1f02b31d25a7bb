/**
 * Deletes as NetBox's collector makes them, read back through HTTP: PROTECT dependents refuse
 * the whole request (named in the answer, nothing deleted, in bulk too), CASCADE takes
 * dependents along (an interface's IPs), SET_NULL clears the references that survive (a VM's
 * primary IP), and what is gone answers 404 and leaves no count or list entry behind.
 */
import assert from "node:assert/strict";
import { setup } from "./_setup.ts";

const VMS = "/api/virtualization/virtual-machines/";
const CLUSTERS = "/api/virtualization/clusters/";
const IFACES = "/api/virtualization/interfaces/";
const IPS = "/api/ipam/ip-addresses/";

Deno.test("delete rules: PROTECT refuses whole requests, CASCADE and SET_NULL read back", async () => {
  const inv = await setup();
  try {
    const post = inv.created;
    const get = async (path: string) => (await inv.call("GET", path)).body;
    const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
    const busy = await post(CLUSTERS, { name: "busy", type: type.id });
    const empty = await post(CLUSTERS, { name: "empty", type: type.id });
    const vmB = await post(VMS, { name: "vm-b", cluster: busy.id });
    const vmA = await post(VMS, { name: "vm-a", cluster: busy.id });

    // PROTECT: the VMs are named (display and id), and nothing is deleted, in bulk either.
    const refused = await inv.call("DELETE", `${CLUSTERS}${busy.id}/`);
    const detail = "Unable to delete object. 2 dependent objects were found: " +
      `vm-b (${vmB.id}), vm-a (${vmA.id})`;
    assert.deepEqual([refused.status, refused.body], [409, { detail }]);
    const bulk = await inv.call("DELETE", CLUSTERS, [{ id: empty.id }, { id: busy.id }]);
    assert.deepEqual([bulk.status, bulk.body], [409, { detail }]);
    // A cluster named twice is one object (NetBox's bulk view filters pk__in): its VMs are
    // named once each.
    const twice = await inv.call("DELETE", CLUSTERS, [{ id: busy.id }, { id: busy.id }]);
    assert.deepEqual([twice.status, twice.body], [409, { detail }]);
    const clusters = await get(`${CLUSTERS}?ordering=id`);
    assert.deepEqual(
      clusters.results.map((c: { name: string; virtualmachine_count: number }) => [
        c.name,
        c.virtualmachine_count,
      ]),
      [["busy", 2], ["empty", 0]],
    );

    // CASCADE and SET_NULL: deleting an interface takes its IPs along (NetBox's GenericRelation)
    // and clears the VM's primary IP; the VM's other interface and IP stay.
    const eth0 = await post(IFACES, { virtual_machine: vmA.id, name: "eth0" });
    const eth1 = await post(IFACES, { virtual_machine: vmA.id, name: "eth1" });
    const ip0 = await post(IPS, {
      address: "192.0.2.10/24",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: eth0.id,
    });
    const ip1 = await post(IPS, {
      address: "192.0.2.11/24",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: eth1.id,
    });
    const primary = await inv.call("PATCH", `${VMS}${vmA.id}/`, { primary_ip4: ip0.id });
    assert.equal(primary.body.primary_ip4.id, ip0.id);
    assert.equal((await inv.call("DELETE", `${IFACES}${eth0.id}/`)).status, 204);
    const vm = await get(`${VMS}${vmA.id}/`);
    assert.deepEqual([vm.primary_ip4, vm.primary_ip, vm.interface_count], [null, null, 1]);
    assert.deepEqual(await get(`${IPS}${ip0.id}/`), {
      detail: "No IPAddress matches the given query.",
    });
    const ips = await get(`${IPS}?virtual_machine_id=${vmA.id}`);
    assert.deepEqual(ips.results.map((i: { id: number }) => i.id), [ip1.id]);
    assert.equal(ips.count, 1);

    // Deleting the VM takes the rest along; then the cluster may go, and gone answers 404.
    const del = await inv.call("DELETE", VMS, [{ id: vmA.id }, { id: vmB.id }]);
    assert.equal(del.status, 204);
    for (
      const [path, name] of [
        [`${IFACES}${eth1.id}/`, "VMInterface"],
        [`${IPS}${ip1.id}/`, "IPAddress"],
        [`${VMS}${vmA.id}/`, "VirtualMachine"],
      ]
    ) {
      const gone = await inv.call("GET", path);
      assert.deepEqual(
        [gone.status, gone.body],
        [404, { detail: `No ${name} matches the given query.` }],
        path,
      );
    }
    assert.equal((await get(`${IPS}?address=192.0.2.11/24`)).count, 0);
    assert.deepEqual(await get(IFACES), { count: 0, next: null, previous: null, results: [] });
    assert.equal((await get(`${CLUSTERS}${busy.id}/`)).virtualmachine_count, 0);
    assert.equal((await inv.call("DELETE", `${CLUSTERS}${busy.id}/`)).status, 204);
    const again = await inv.call("DELETE", `${CLUSTERS}${busy.id}/`);
    assert.deepEqual([again.status, again.body], [404, {
      detail: "No Cluster matches the given query.",
    }]);
    const left = await get(`${CLUSTERS}?ordering=id`);
    assert.deepEqual(left.results.map((c: { id: number }) => c.id), [empty.id]);
    assert.equal(left.count, 1);
  } finally {
    inv.close();
  }
});

Deno.test("delete rules: a deleted region, site group, site or location takes the clusters and prefixes scoped to it along, each logged; a cluster's VMs refuse it", async () => {
  // NetBox 4.6 caches a scope in keys that cascade (docs/netbox-rules.md "Deletes"), and a VM
  // protects its cluster: what is scoped to the object deleted goes, what is scoped to a site
  // of a deleted region stays (the site only loses its region).
  const inv = await setup();
  try {
    const post = inv.created;
    const PREFIXES = "/api/ipam/prefixes/";
    const scoped = (type: string, id: number) => ({ scope_type: type, scope_id: id });
    const region = await post("/api/dcim/regions/", { name: "EU", slug: "eu" });
    const child = await post("/api/dcim/regions/", { name: "NL", slug: "nl", parent: region.id });
    const group = await post("/api/dcim/site-groups/", { name: "Edge", slug: "edge" });
    const site = await post("/api/dcim/sites/", { name: "AMS1", slug: "ams1", region: region.id });
    const room = await post("/api/dcim/locations/", { name: "R1", slug: "r1", site: site.id });
    const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
    const onRegion = await post(CLUSTERS, {
      name: "eu",
      type: type.id,
      ...scoped("dcim.region", region.id),
    });
    const onGroup = await post(CLUSTERS, {
      name: "edge",
      type: type.id,
      ...scoped("dcim.sitegroup", group.id),
    });
    const onSite = await post(CLUSTERS, {
      name: "ams",
      type: type.id,
      ...scoped("dcim.site", site.id),
    });
    const onChild = await post(PREFIXES, {
      prefix: "10.1.0.0/16",
      ...scoped("dcim.region", child.id),
    });
    const onSitePrefix = await post(PREFIXES, {
      prefix: "10.2.0.0/16",
      ...scoped("dcim.site", site.id),
    });
    const onRoom = await post(PREFIXES, {
      prefix: "10.3.0.0/16",
      ...scoped("dcim.location", room.id),
    });
    const vm = await post(VMS, { name: "vm1", cluster: onRegion.id });

    // The region's cluster is protected by its VM: nothing is deleted, the child region and
    // its prefix neither.
    const refused = await inv.call("DELETE", `/api/dcim/regions/${region.id}/`);
    assert.deepEqual([refused.status, refused.body], [409, {
      detail: `Unable to delete object. 1 dependent objects were found: vm1 (${vm.id})`,
    }]);
    for (const path of [`/api/dcim/regions/${child.id}/`, `${CLUSTERS}${onRegion.id}/`]) {
      assert.equal((await inv.call("GET", path)).status, 200, path);
    }
    assert.equal((await inv.call("GET", `${PREFIXES}${onChild.id}/`)).body.scope_id, child.id);

    assert.equal((await inv.call("DELETE", `${VMS}${vm.id}/`)).status, 204);
    const deleted = await inv.call("DELETE", `/api/dcim/regions/${region.id}/`);
    assert.equal(deleted.status, 204);
    assert.equal((await inv.call("GET", `${CLUSTERS}${onRegion.id}/`)).status, 404);
    assert.equal((await inv.call("GET", `${PREFIXES}${onChild.id}/`)).status, 404);
    // Each object the delete took is logged under its request, the cascaded ones too.
    const logged = await inv.call(
      "GET",
      `/api/core/object-changes/?request_id=${deleted.headers.get("X-Request-ID")}&ordering=id`,
    );
    assert.deepEqual(
      logged.body.results.map((e: { action: { value: string }; object_repr: string }) =>
        `${e.action.value} ${e.object_repr}`
      ).sort(),
      ["delete 10.1.0.0/16", "delete EU", "delete NL", "delete eu"],
    );
    // The site was only in the region: it stays, without a region, and so does its prefix.
    const kept = await inv.call("GET", `/api/dcim/sites/${site.id}/`);
    assert.deepEqual([kept.status, kept.body.region], [200, null]);
    const sitePrefix = (await inv.call("GET", `${PREFIXES}${onSitePrefix.id}/`)).body;
    assert.deepEqual([sitePrefix.scope_type, sitePrefix.scope_id], ["dcim.site", site.id]);

    assert.equal((await inv.call("DELETE", `/api/dcim/site-groups/${group.id}/`)).status, 204);
    assert.equal((await inv.call("GET", `${CLUSTERS}${onGroup.id}/`)).status, 404);
    // A site takes its location along, and with both what is scoped to either.
    assert.equal((await inv.call("DELETE", `/api/dcim/sites/${site.id}/`)).status, 204);
    for (
      const path of [
        `${CLUSTERS}${onSite.id}/`,
        `${PREFIXES}${onSitePrefix.id}/`,
        `${PREFIXES}${onRoom.id}/`,
        `/api/dcim/locations/${room.id}/`,
      ]
    ) assert.equal((await inv.call("GET", path)).status, 404, path);
    assert.deepEqual((await inv.call("GET", `${CLUSTERS}?ordering=id`)).body.count, 0);
    assert.deepEqual((await inv.call("GET", PREFIXES)).body.count, 0);
  } finally {
    inv.close();
  }
});

Deno.test("delete rules: a location or rack holding devices is not deleted (NetBox's PROTECT), and goes once they have moved", async () => {
  const inv = await setup();
  try {
    const post = inv.created;
    const site = await post("/api/dcim/sites/", { name: "AMS1", slug: "ams1" });
    const room = await post("/api/dcim/locations/", { name: "R1", slug: "r1", site: site.id });
    const rack = await post("/api/dcim/racks/", { name: "A1", site: site.id, location: room.id });
    const maker = await post("/api/dcim/manufacturers/", { name: "M", slug: "m" });
    const type = await post("/api/dcim/device-types/", {
      manufacturer: maker.id,
      model: "X",
      slug: "x",
    });
    const role = await post("/api/dcim/device-roles/", { name: "R", slug: "r" });
    const device = await post("/api/dcim/devices/", {
      name: "sw1",
      device_type: type.id,
      role: role.id,
      site: site.id,
      location: room.id,
      rack: rack.id,
    });
    const detail = `Unable to delete object. 1 dependent objects were found: sw1 (${device.id})`;
    const byRack = await inv.call("DELETE", `/api/dcim/racks/${rack.id}/`);
    assert.deepEqual([byRack.status, byRack.body], [409, { detail }]);
    // The location's own rack would go with it (SET_NULL there), but its device protects it.
    const byRoom = await inv.call("DELETE", `/api/dcim/locations/${room.id}/`);
    assert.deepEqual([byRoom.status, byRoom.body], [409, { detail }]);
    const kept = (await inv.call("GET", `/api/dcim/devices/${device.id}/`)).body;
    assert.deepEqual([kept.location?.id, kept.rack?.id], [room.id, rack.id]);
    assert.equal((await inv.call("GET", `/api/dcim/racks/${rack.id}/`)).body.location.id, room.id);

    const moved = await inv.call("PATCH", `/api/dcim/devices/${device.id}/`, {
      location: null,
      rack: null,
    });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    assert.equal((await inv.call("DELETE", `/api/dcim/racks/${rack.id}/`)).status, 204);
    assert.equal((await inv.call("DELETE", `/api/dcim/locations/${room.id}/`)).status, 204);
    assert.equal((await inv.call("GET", `/api/dcim/devices/${device.id}/`)).status, 200);
  } finally {
    inv.close();
  }
});

Deno.test("delete rules: a tenant group's tenants lose it; a cluster group, a prefix's VLAN, a chassis' master and an assigned contact are protected, as NetBox 4.6's on_delete", async () => {
  const inv = await setup();
  try {
    const post = inv.created;
    const refused = async (path: string, dependent: string, id: number) => {
      const r = await inv.call("DELETE", path);
      assert.deepEqual([r.status, r.body], [409, {
        detail: `Unable to delete object. 1 dependent objects were found: ${dependent} (${id})`,
      }], path);
      assert.equal((await inv.call("GET", path)).status, 200, path);
    };
    // Tenant.group is SET_NULL.
    const tgroup = await post("/api/tenancy/tenant-groups/", { name: "Customers", slug: "cust" });
    const acme = await post("/api/tenancy/tenants/", {
      name: "Acme",
      slug: "acme",
      group: tgroup.id,
    });
    assert.equal(
      (await inv.call("DELETE", `/api/tenancy/tenant-groups/${tgroup.id}/`)).status,
      204,
    );
    assert.equal((await inv.call("GET", `/api/tenancy/tenants/${acme.id}/`)).body.group, null);
    // Cluster.group is PROTECT.
    const cgroup = await post("/api/virtualization/cluster-groups/", { name: "Lab", slug: "lab" });
    const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
    const cluster = await post("/api/virtualization/clusters/", {
      name: "c1",
      type: type.id,
      group: cgroup.id,
    });
    await refused(`/api/virtualization/cluster-groups/${cgroup.id}/`, "c1", cluster.id);
    // Prefix.vlan is PROTECT.
    const vlan = await post("/api/ipam/vlans/", { vid: 10, name: "ten" });
    const prefix = await post("/api/ipam/prefixes/", { prefix: "10.0.0.0/24", vlan: vlan.id });
    await refused(`/api/ipam/vlans/${vlan.id}/`, "10.0.0.0/24", prefix.id);
    // VirtualChassis.master is PROTECT.
    const site = await post("/api/dcim/sites/", { name: "AMS1", slug: "ams1" });
    const maker = await post("/api/dcim/manufacturers/", { name: "M", slug: "m" });
    const dtype = await post("/api/dcim/device-types/", {
      manufacturer: maker.id,
      model: "X",
      slug: "x",
    });
    const role = await post("/api/dcim/device-roles/", { name: "R", slug: "r" });
    const sw = await post("/api/dcim/devices/", {
      name: "sw1",
      device_type: dtype.id,
      role: role.id,
      site: site.id,
    });
    const chassis = await post("/api/dcim/virtual-chassis/", { name: "stack", master: sw.id });
    await refused(`/api/dcim/devices/${sw.id}/`, "stack", chassis.id);
    // ContactAssignment.contact is PROTECT.
    const contact = await post("/api/tenancy/contacts/", { name: "Ops" });
    const assignment = await post("/api/tenancy/contact-assignments/", {
      object_type: "dcim.site",
      object_id: site.id,
      contact: contact.id,
    });
    const byContact = await inv.call("DELETE", `/api/tenancy/contacts/${contact.id}/`);
    assert.equal(byContact.status, 409, JSON.stringify(byContact.body));
    assert.match(
      byContact.body.detail,
      new RegExp(
        `^Unable to delete object\\. 1 dependent objects were found: .* \\(${assignment.id}\\)$`,
      ),
    );
    const kept = await inv.call("GET", `/api/tenancy/contact-assignments/${assignment.id}/`);
    assert.equal(kept.status, 200);
  } finally {
    inv.close();
  }
});

Deno.test("delete rules: an interface with child interfaces is not deleted alone (NetBox's RESTRICT on parent); with its VM, both go", async () => {
  const inv = await setup();
  try {
    const post = inv.created;
    const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
    const cluster = await post(CLUSTERS, { name: "c1", type: type.id });
    const vm = await post(VMS, { name: "vm1", cluster: cluster.id });
    const eth0 = await post(IFACES, { virtual_machine: vm.id, name: "eth0" });
    const vlan10 = await post(IFACES, { virtual_machine: vm.id, name: "eth0.10", parent: eth0.id });
    const alone = await inv.call("DELETE", `${IFACES}${eth0.id}/`);
    assert.deepEqual([alone.status, alone.body], [409, {
      detail: `Unable to delete object. 1 dependent objects were found: eth0.10 (${vlan10.id})`,
    }]);
    assert.equal((await inv.call("GET", `${IFACES}${vlan10.id}/`)).body.parent.id, eth0.id);
    // The VM's delete takes both: the restricted child goes in the same delete.
    assert.equal((await inv.call("DELETE", `${VMS}${vm.id}/`)).status, 204);
    for (const id of [eth0.id, vlan10.id]) {
      assert.equal((await inv.call("GET", `${IFACES}${id}/`)).status, 404);
    }
  } finally {
    inv.close();
  }
});
