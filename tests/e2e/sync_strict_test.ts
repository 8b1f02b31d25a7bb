/**
 * The sync on an inventory as strict as NetBox (docs/netbox-rules.md): an address already there
 * unassigned is adopted instead of duplicated, a guest's address that moves follows it, and the
 * same private address in two clusters is a reported conflict that does not fail the run.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { addInventoryCopy, type SseFrame, syncWorld } from "./_sync_harness.ts";

const FAST_TASKS = { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" };

const completes = (frames: SseFrame[]) => frames.filter((f) => f.event === "complete");

/** The guests' static addresses, as the sync writes them: address → VM name. */
async function guestAddresses(world: Awaited<ReturnType<typeof syncWorld>>) {
  const ips = await world.inventory("ipam/ip-addresses/?assigned_to_interface=true");
  return ips.filter((ip: any) => ip.assigned_object_type === "virtualization.vminterface");
}

Deno.test("e2e sync, strict inventory: an unassigned (reserved) address is adopted, not duplicated", async () => {
  const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    // Learn a guest's address from a first run, then start over with it reserved by hand.
    assert.equal(completes(await world.stream("/full-update/stream"))[0].data.ok, true);
    const taken = (await guestAddresses(world))[0];
    const address = String(taken.address);
    assert.equal(
      (await world.inventoryCall("DELETE", `ipam/ip-addresses/${taken.id}/`)).status,
      204,
    );
    const mark = await world.inventoryCall("POST", "extras/tags/", {
      name: "ipam-team",
      slug: "ipam-team",
    });
    const reserved = await world.inventoryCall("POST", "ipam/ip-addresses/", {
      address,
      status: "reserved",
      description: "kept for the app",
      tags: [mark.body.id],
    });
    assert.equal(reserved.status, 201, JSON.stringify(reserved.body));

    const frames = await world.stream("/full-update/stream");
    const done = completes(frames)[0].data;
    assert.equal(done.ok, true, JSON.stringify(done));
    assert.equal(done.conflicts, undefined);
    const host = address.split("/")[0];
    const copies = await world.inventory(`ipam/ip-addresses/?address=${host}`);
    assert.equal(copies.length, 1, "adopted, not duplicated");
    const ip = copies[0];
    assert.equal(ip.id, reserved.body.id);
    assert.equal(ip.assigned_object_type, "virtualization.vminterface");
    assert.equal(ip.assigned_object_id, taken.assigned_object_id);
    assert.equal(ip.status.value, "active");
    assert.deepEqual(ip.tags.map((t: any) => t.slug).sort(), ["bridgebox-synced", "ipam-team"]);
    // Its VM's primary IP is the adopted address again.
    const vmId = ip.assigned_object.virtual_machine.id;
    const vm = (await world.inventoryCall("GET", `virtualization/virtual-machines/${vmId}/`)).body;
    if (!host.includes(":")) assert.equal(vm.primary_ip4?.id, ip.id);
    // Adopted once: the next run writes nothing.
    const again = completes(await world.stream("/full-update/stream"))[0].data;
    assert.equal(again.result.created, 0, JSON.stringify(again));
    assert.equal(again.result.updated, 0, JSON.stringify(again));
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync, strict inventory: the same private addresses in two clusters are conflicts, not failures", async () => {
  // Two endpoints on one mock: every node address, guest address and SDN subnet is the same.
  const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("east");
    const west = await world.addHypervisorCopy("west");
    const frames = await world.stream("/full-update/stream");
    const done = completes(frames)[0].data;
    assert.equal(done.ok, true, JSON.stringify(done));
    assert.equal(done.result.failed, 0);
    const conflicts = frames.filter((f) => f.event === "conflict").map((f) => f.data);
    assert.ok(conflicts.length > 0);
    assert.deepEqual(done.conflicts, conflicts);
    assert.match(done.message, / held by another owner \(see conflicts\)$/);
    for (const c of conflicts) assert.equal(c.endpoint_id, west, JSON.stringify(c));
    const guest = conflicts.find((c: any) => c.step === "ip-addresses");
    assert.ok(guest, JSON.stringify(conflicts));
    assert.match(guest.object, /^IP address \S+ of vmid \d+$/);
    assert.match(
      guest.detail,
      /^not written: Duplicate IP address found in global table: \S+ \(NetBox's unique IP space, ENFORCE_GLOBAL_UNIQUE\); it stays with \S+ \S+$/,
    );
    assert.ok(conflicts.some((c: any) => c.step === "sdn" && /Duplicate prefix/.test(c.detail)));
    assert.ok(conflicts.some((c: any) => c.step === "network-interfaces"));
    // Each address exists once, with the cluster that wrote it first.
    const hosts = (await world.inventory("ipam/ip-addresses/")).map((ip: any) =>
      String(ip.address).split("/")[0]
    );
    assert.deepEqual(hosts, [...new Set(hosts)]);
    // A rerun meets the same conflicts and writes nothing.
    const again = completes(await world.stream("/full-update/stream"))[0].data;
    assert.equal(again.ok, true);
    assert.equal(again.result.created + again.result.updated + again.result.failed, 0);
    assert.equal(again.conflicts.length, conflicts.length);
  } finally {
    await world.close();
  }
});
