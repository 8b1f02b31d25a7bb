/**
 * What changes upstream reaches the inventory on the next run, read back as a NetBox client
 * would: addresses and disks that vanish are removed, the primary IPv4 is the first address in
 * interface order (link-local ones never arrive), updated records carry their new last-seen
 * time, and a hypervisor password fixed through the API is used at once (no restart).
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { addInventoryCopy, type SseFrame, syncWorld } from "./_sync_harness.ts";

const FAST_TASKS = { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" };

function done(frames: SseFrame[]) {
  const complete = frames.filter((f) => f.event === "complete");
  assert.equal(complete.length, 1);
  return complete[0].data;
}

function stageResult(frames: SseFrame[], step: string) {
  return frames.find((f) =>
    f.event === "step" && f.data.step === step && f.data.status === "completed"
  )!.data.result;
}

Deno.test("e2e sync upstream: vanished addresses and disks go, the primary IPv4 is the first, link-local never arrives, updates touch last_seen", async () => {
  let offset = 0;
  const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", FAST_TASKS, {
    now: () => Date.now() + offset,
  });
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const [guest] = (await world.hypervisor("GET", "/cluster/resources", { type: "vm" }))
      .filter((r: any) => r.type === "qemu").sort((a: any, b: any) => a.vmid - b.vmid);
    const configPath = `/nodes/${guest.node}/qemu/${guest.vmid}/config`;
    const before = await world.hypervisor("GET", configPath);
    const firstIp = /ip=([^,]+)/.exec(before.ipconfig0)![1];
    // Two more NICs: a second IPv4 (listed after the first), a link-local one; one more disk.
    await world.hypervisor("PUT", configPath, {
      net1: "virtio=BC:24:11:00:00:A1,bridge=vmbr0",
      ipconfig1: "ip=10.9.1.10/24",
      net2: "virtio=BC:24:11:00:00:A2,bridge=vmbr0",
      ipconfig2: "ip=169.254.7.7/16",
      scsi1: "local-lvm:vm-" + guest.vmid + "-disk-9,size=4G",
    });

    const first = await world.stream("/full-update/stream");
    assert.equal(done(first).ok, true, JSON.stringify(done(first)));
    const state = async () =>
      (await world.inventory(`plugins/service/vm-sync-state/?vmid=${guest.vmid}`))[0];
    const vmId = (await state()).virtual_machine.id;
    const addressesOf = async () =>
      (await world.inventory(`ipam/ip-addresses/?virtual_machine_id=${vmId}`))
        .map((ip: any) => ip.address).sort();
    const disksOf = async () =>
      (await world.inventory(`virtualization/virtual-disks/?virtual_machine_id=${vmId}`))
        .map((d: any) => d.name).sort();
    assert.deepEqual(await addressesOf(), [firstIp, "10.9.1.10/24"].sort());
    // The seeded guest's CD-ROM drive (ide2) is recorded as a size-0 disk and stays.
    assert.deepEqual(await disksOf(), ["ide2", "scsi0", "scsi1"]);
    const vm = async () =>
      (await world.inventoryCall("GET", `virtualization/virtual-machines/${vmId}/`)).body;
    assert.equal((await vm()).primary_ip4?.address, firstIp, "the first IPv4, in NIC order");
    const seenFirst = (await state()).last_seen;

    // Upstream, later: the second address and the extra disk go, the memory changes.
    offset = 3_600_000;
    await world.hypervisor("PUT", configPath, { delete: "ipconfig1,scsi1", memory: "3072" });
    const second = await world.stream("/full-update/stream");
    assert.equal(done(second).ok, true, JSON.stringify(done(second)));
    assert.deepEqual(await addressesOf(), [firstIp]);
    assert.deepEqual(await disksOf(), ["ide2", "scsi0"]);
    // NetBox keeps the VM's disk equal to the sum of its virtual disks (docs/netbox-rules.md).
    const sizes =
      (await world.inventory(`virtualization/virtual-disks/?virtual_machine_id=${vmId}`))
        .reduce((sum: number, d: any) => sum + d.size, 0);
    assert.equal((await vm()).disk, sizes);
    assert.equal(stageResult(second, "ip-addresses").deleted, 1);
    assert.equal(stageResult(second, "vm-disks").deleted, 1);
    assert.equal((await vm()).primary_ip4?.address, firstIp);
    assert.equal((await vm()).memory, 3072);
    // The changed guest's record says when it was seen: this run, an hour after the first.
    const seenSecond = (await state()).last_seen;
    assert.ok(
      Date.parse(seenSecond) - Date.parse(seenFirst) >= 3_600_000,
      `${seenFirst} → ${seenSecond}`,
    );
    // Nowhere in the inventory: the link-local address.
    const all = await world.inventory("ipam/ip-addresses/");
    assert.ok(all.every((ip: any) => !ip.address.startsWith("169.254.")), JSON.stringify(all));
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync upstream: a hypervisor password changed through the API is used by the next run (no restart)", async () => {
  const world = await syncWorld("nodes=1,vms=1,cts=0,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    const id = await world.addHypervisorCopy("lab", { password: "a-typo" });
    const endpoint = {
      name: "lab",
      ip: "127.0.0.1",
      port: world.port,
      use_https: false,
      username: "root@pam",
    };
    const nodes = "/dcim/devices/create/stream";
    const typo = done(await world.stream(nodes));
    assert.equal(typo.ok, false, JSON.stringify(typo));
    assert.ok(!JSON.stringify(typo).includes("a-typo"));
    // The user fixes the password: the next run logs in with it.
    const fixed = await world.backend("PUT", `/hypervisor/endpoints/${id}`, {
      ...endpoint,
      password: "bridgebox",
    });
    assert.equal(fixed.status, 200, JSON.stringify(fixed.body));
    const good = done(await world.stream(nodes));
    assert.equal(good.ok, true, JSON.stringify(good));
    // A password revoked (changed to one the cluster refuses) stops working at once as well:
    // the ticket the old password earned is not used any more.
    const revoked = await world.backend("PUT", `/hypervisor/endpoints/${id}`, {
      ...endpoint,
      password: "no-longer-valid",
    });
    assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
    assert.equal(done(await world.stream(nodes)).ok, false);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync upstream: a rerun sees its objects past the first page of 1,000", async () => {
  const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    // 1,000 addresses carrying the sync's tag that sort before the guests' (IP addresses list
    // in address order): the sync's own come on the second page of every list it reads.
    const tag = await world.inventoryCall("POST", "extras/tags/", {
      name: "bridgebox-synced",
      slug: "bridgebox-synced",
    });
    assert.equal(tag.status, 201, JSON.stringify(tag.body));
    const filler = Array.from({ length: 1000 }, (_, i) => ({
      address: `9.250.${i >> 8}.${i & 255}/32`,
      status: "reserved",
      tags: [tag.body.id],
    }));
    const made = await world.inventoryCall("POST", "ipam/ip-addresses/", filler);
    assert.equal(made.status, 201, JSON.stringify(made.body).slice(0, 300));

    const first = await world.stream("/full-update/stream");
    assert.equal(done(first).ok, true, JSON.stringify(done(first)));
    const ours = (await world.inventory("ipam/ip-addresses/?tag=bridgebox-synced"))
      .filter((ip: any) => ip.assigned_object_id !== null);
    assert.ok(ours.length >= 3, JSON.stringify(ours));
    const page1 = await world.inventoryCall(
      "GET",
      "ipam/ip-addresses/?tag=bridgebox-synced&limit=1000",
    );
    assert.ok(page1.body.results.every((ip: any) => ip.assigned_object_id === null));

    // The rerun finds them all (on page two) and writes nothing.
    const second = await world.stream("/full-update/stream");
    assert.equal(done(second).ok, true, JSON.stringify(done(second)));
    const r = stageResult(second, "ip-addresses");
    assert.deepEqual([r.created, r.updated, r.deleted, r.failed], [0, 0, 0, 0], JSON.stringify(r));
    const again = (await world.inventory("ipam/ip-addresses/?tag=bridgebox-synced"))
      .filter((ip: any) => ip.assigned_object_id !== null);
    assert.deepEqual(again.map((ip: any) => ip.id), ours.map((ip: any) => ip.id));
    // The filler is left as it was (not the sync's: assigned to nothing).
    assert.equal((await world.inventory("ipam/ip-addresses/?status=reserved")).length, 1000);
  } finally {
    await world.close();
  }
});
