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
