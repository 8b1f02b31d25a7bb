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

Deno.test("e2e sync, NetBox 4.6: qemu/lxc virtual machine types, onboot as start_on_boot, a changelog message naming the run", async () => {
  const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const guests = await world.hypervisor("GET", "/cluster/resources", { type: "vm" });
    const [qemu] = guests.filter((r: any) => r.type === "qemu")
      .sort((a: any, b: any) => a.vmid - b.vmid);
    await world.hypervisor("PUT", `/nodes/${qemu.node}/qemu/${qemu.vmid}/config`, { onboot: "1" });
    const done = completes(await world.stream("/full-update/stream"))[0].data;
    assert.equal(done.ok, true, JSON.stringify(done));
    const types = await world.inventory("virtualization/virtual-machine-types/");
    assert.deepEqual(types.map((t: any) => t.slug).sort(), [
      "lxc-container",
      "qemu-virtual-machine",
    ]);
    const states = await world.inventory("plugins/service/vm-sync-state/");
    const vms = await world.inventory("virtualization/virtual-machines/");
    for (const state of states) {
      const vm = vms.find((v: any) => v.id === state.virtual_machine.id);
      const type = state.vm_type?.value ?? state.vm_type;
      assert.equal(
        vm.virtual_machine_type?.slug,
        type === "lxc" ? "lxc-container" : "qemu-virtual-machine",
        JSON.stringify(state),
      );
      const guest = guests.find((g: any) => g.vmid === state.vmid);
      const config = await world.hypervisor(
        "GET",
        `/nodes/${guest.node}/${guest.type}/${guest.vmid}/config`,
      );
      const boot = Number(config.onboot) === 1 ? "on" : "off";
      if (state.vmid === qemu.vmid) assert.equal(boot, "on");
      assert.equal(vm.start_on_boot?.value ?? vm.start_on_boot, boot, `vmid ${state.vmid}`);
    }
    // Every change the run made is in the change log under its message.
    const changes = await world.inventory("core/object-changes/");
    const vmChanges = changes.filter((c: any) =>
      c.changed_object_type === "virtualization.virtualmachine"
    );
    assert.ok(vmChanges.length >= 3);
    for (const c of vmChanges) {
      assert.match(
        String(c.message),
        /^Bridgebox sync run \S+ \(/,
      );
    }
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync, an inventory answering API-Version 4.2: no 4.6 fields, no virtual machine types, no changelog message", async () => {
  // A recorded-answer double in front of the inventory: every answer says API-Version 4.2.
  const bodies: string[] = [];
  const paths: string[] = [];
  const as42: typeof fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (!url.includes("/api/")) return fetch(input, init);
    paths.push(`${init?.method ?? "GET"} ${new URL(url).pathname}`);
    if (typeof init?.body === "string") bodies.push(init.body);
    const res = await fetch(input, init);
    const headers = new Headers(res.headers);
    headers.set("API-Version", "4.2");
    return new Response(res.body, { status: res.status, headers });
  };
  const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", FAST_TASKS, { fetch: as42 });
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const done = completes(await world.stream("/full-update/stream"))[0].data;
    assert.equal(done.ok, true, JSON.stringify(done));
    assert.ok(bodies.length > 10, "the sync wrote through the double");
    assert.ok(!paths.some((p) => p.includes("virtual-machine-types")), "no 4.6 endpoint asked");
    for (const field of ["virtual_machine_type", "start_on_boot", "changelog_message"]) {
      assert.ok(!bodies.some((b) => b.includes(`"${field}"`)), `${field} not sent to 4.2`);
    }
    const vms = await world.inventory("virtualization/virtual-machines/");
    assert.equal(vms.length, 3);
    assert.ok(vms.every((v: any) => v.virtual_machine_type === null));
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync, NetBox 4.6: tag changes go as add_tags/remove_tags, so an admin's tags are never clobbered", async () => {
  const patches: string[] = [];
  const spy: typeof fetch = (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (init?.method === "PATCH" && url.includes("/api/virtualization/virtual-machines/")) {
      patches.push(String(init.body));
    }
    return fetch(input, init);
  };
  const world = await syncWorld("nodes=1,vms=1,cts=0,storages=1", FAST_TASKS, { fetch: spy });
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    assert.equal(completes(await world.stream("/full-update/stream"))[0].data.ok, true);
    const [vm] = await world.inventory("virtualization/virtual-machines/");
    const mark = await world.inventoryCall("POST", "extras/tags/", {
      name: "keep-me",
      slug: "keep-me",
    });
    await world.inventoryCall("PATCH", `virtualization/virtual-machines/${vm.id}/`, {
      add_tags: [mark.body.id],
    });
    const [guest] = await world.hypervisor("GET", "/cluster/resources", { type: "vm" });
    await world.hypervisor("PUT", `/nodes/${guest.node}/qemu/${guest.vmid}/config`, {
      tags: "fresh",
    });
    patches.length = 0;
    const done = completes(await world.stream("/full-update/stream"))[0].data;
    assert.equal(done.ok, true, JSON.stringify(done));
    const written = patches.map((p) => JSON.parse(p)).flat().filter((b: any) => b.id === vm.id);
    assert.ok(written.some((b: any) => Array.isArray(b.add_tags)), JSON.stringify(patches));
    assert.ok(written.every((b: any) => !("tags" in b)), JSON.stringify(patches));
    const after = (await world.inventoryCall("GET", `virtualization/virtual-machines/${vm.id}/`))
      .body;
    const slugs = after.tags.map((t: any) => t.slug).sort();
    assert.ok(slugs.includes("keep-me") && slugs.includes("fresh"), JSON.stringify(slugs));
  } finally {
    await world.close();
  }
});
