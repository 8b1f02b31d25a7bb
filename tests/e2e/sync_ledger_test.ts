/**
 * The ledger (docs/sync.md, "Re-runs: guests that did not change"): a re-run skips the reads of
 * guests whose objects would be written from the same as before and that nobody touched since
 * (the change log tells), and compares them in full whenever something else may have changed
 * them: a hand edit or delete, an upstream change, a policy, a log that lost entries.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { addInventoryCopy, type SyncWorld, syncWorld } from "./_sync_harness.ts";

const FAST = { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" };

/**
 * Runs a full update; the result, and the inventory paths the run read ("GET /api/…") as
 * `inventory` (the app its inventory copy points at: `world` unless another app's) saw them.
 */
async function run(world: SyncWorld, query = "", inventory = world) {
  const from = inventory.seen.length;
  const r = await world.backend("GET", `/full-update${query}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.result.failed, 0, JSON.stringify(r.body));
  const reads = inventory.seen.slice(from).filter((s) => s.startsWith("GET /api/"));
  return {
    result: r.body.result,
    /** Requests of the stages that read a slice's disks and MAC addresses (only those stages). */
    guestReads:
      reads.filter((s) =>
        s === "GET /api/virtualization/virtual-disks/" || s === "GET /api/dcim/mac-addresses/"
      ).length,
  };
}

/** Both endpoint copies added, then `runs` full updates (the second one the ledger's first skip). */
async function settled(world: SyncWorld, runs: number): Promise<void> {
  await addInventoryCopy(world);
  await world.addHypervisorCopy("lab");
  for (let i = 0; i < runs; i++) await run(world);
}

/** The cluster's QEMU guest of the lowest vmid. */
async function firstQemu(world: SyncWorld): Promise<{ node: string; vmid: number }> {
  const guests = await world.hypervisor("GET", "/cluster/resources", { type: "vm" });
  return guests.filter((r: any) => r.type === "qemu").sort((a: any, b: any) => a.vmid - b.vmid)[0];
}

async function synced(world: SyncWorld) {
  const [vm] = (await world.inventory("virtualization/virtual-machines/?tag=bridgebox-synced"))
    .sort((a: any, b: any) => a.id - b.id);
  const [disk] = await world.inventory(`virtualization/virtual-disks/?virtual_machine_id=${vm.id}`);
  const macs = await world.inventory("dcim/mac-addresses/?tag=bridgebox-synced");
  return { vm, disk, macs };
}

Deno.test("e2e sync ledger: an unchanged re-run skips every guest's reads; hand edits and deletes of the sync's objects are still put back, then skipped again", async () => {
  const world = await syncWorld("nodes=1,vms=8,cts=2,storages=1", FAST);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const first = await run(world);
    assert.ok(first.result.created > 20, JSON.stringify(first.result));
    // Nor does a first run read the disks and MAC addresses of the VMs it has just made
    // (docs/sync.md, "Writes: round 8"); the planned run below reads them.
    assert.equal(first.guestReads, 0);

    const again = await run(world);
    assert.deepEqual(
      { created: again.result.created, updated: again.result.updated },
      { created: 0, updated: 0 },
    );
    assert.equal(again.guestReads, 0, "no guest's disks or MAC addresses read");
    // Skipped objects count as unchanged, as a compare counts them: a planned run keeps no
    // ledger and reads every guest.
    const compared = await run(world, "?plan=true");
    assert.ok(compared.guestReads > 0, "a planned run reads every guest");
    assert.equal(again.result.unchanged, compared.result.unchanged);

    // Hand edits of fields the sync owns (the same token as the sync's: the request tells).
    const before = await synced(world);
    const edits = [
      await world.inventoryCall("PATCH", `virtualization/virtual-machines/${before.vm.id}/`, {
        vcpus: 77,
      }),
      await world.inventoryCall("PATCH", `virtualization/virtual-disks/${before.disk.id}/`, {
        size: 1,
      }),
      await world.inventoryCall("DELETE", `dcim/mac-addresses/${before.macs[0].id}/`),
    ];
    assert.deepEqual(edits.map((e) => e.status), [200, 200, 204]);
    const fixed = await run(world);
    assert.ok(fixed.guestReads > 0, "the edited guests are read");
    const after = await synced(world);
    assert.equal(after.vm.vcpus, before.vm.vcpus, "the VM's vCPUs put back");
    assert.equal(after.disk.size, before.disk.size, "the disk's size put back");
    assert.deepEqual(
      after.macs.map((m: any) => m.mac_address).sort(),
      before.macs.map((m: any) => m.mac_address).sort(),
      "the deleted MAC address made again",
    );
    assert.ok(fixed.result.created >= 1 && fixed.result.updated >= 2, JSON.stringify(fixed.result));

    const quiet = await run(world);
    assert.equal(quiet.result.created + quiet.result.updated, 0, JSON.stringify(quiet.result));
    assert.equal(quiet.guestReads, 0, "skipped again once put back");
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync ledger: an upstream change and a changed policy are written though nothing was edited in the inventory", async () => {
  const world = await syncWorld("nodes=1,vms=3,cts=1,storages=1", FAST);
  try {
    await settled(world, 2);
    const guest = await firstQemu(world);
    await world.hypervisor("PUT", `/nodes/${guest.node}/qemu/${guest.vmid}/config`, {
      memory: "3333",
      scsi1: `local-lvm:vm-${guest.vmid}-disk-9,size=4G`,
      net1: "virtio=BC:24:11:00:00:B1,bridge=vmbr0",
    });
    const upstream = await run(world);
    assert.ok(upstream.result.updated >= 1, JSON.stringify(upstream.result));
    const state = (await world.inventory(`plugins/service/vm-sync-state/?vmid=${guest.vmid}`))[0];
    const vm =
      (await world.inventory(`virtualization/virtual-machines/?id=${state.virtual_machine.id}`))[0];
    assert.equal(vm.memory, 3333);
    const children = async (path: string) =>
      (await world.inventory(`${path}?virtual_machine_id=${vm.id}`)).map((o: any) => o.name);
    assert.ok((await children("virtualization/virtual-disks/")).includes("scsi1"));
    assert.ok((await children("virtualization/interfaces/")).includes("net1"));
    const macs = await world.inventory("dcim/mac-addresses/?mac_address=BC:24:11:00:00:B1");
    assert.equal(macs.length, 1, "the new NIC's MAC address");

    // A role policy: every QEMU VM takes the role the run names.
    const role = await world.inventoryCall("POST", "dcim/device-roles/", {
      name: "Ledger role",
      slug: "ledger-role",
      vm_role: true,
    });
    assert.equal(role.status, 201, JSON.stringify(role.body));
    await run(world, "?qemu_role=ledger-role");
    const qemu = (await world.inventory("virtualization/virtual-machines/?tag=bridgebox-synced"))
      .filter((v: any) =>
        v.custom_fields?.hypervisor_vm_type !== "lxc" && v.role?.slug !== "container"
      );
    assert.ok(qemu.length >= 3, JSON.stringify(qemu.map((v: any) => v.role)));
    assert.ok(
      qemu.every((v: any) => v.role?.slug === "ledger-role"),
      JSON.stringify(qemu.map((v: any) => v.role)),
    );
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync ledger: a change log pruned past the ledger's cursor loses the skip, not the hand edit", async () => {
  // A small bound: entries go long before the next run reads them.
  const world = await syncWorld("nodes=1,vms=3,cts=1,storages=1", {
    ...FAST,
    INVENTORY_CHANGELOG_MAX_ENTRIES: "40",
  });
  try {
    await settled(world, 2);
    const quiet = await run(world);
    assert.equal(quiet.guestReads, 0, "skipped while the log holds what it must");
    const before = await synced(world);
    const edit = await world.inventoryCall(
      "PATCH",
      `virtualization/virtual-machines/${before.vm.id}/`,
      { vcpus: 55 },
    );
    assert.equal(edit.status, 200);
    // Enough other writes that the edit's entry (and those after the cursor) are pruned.
    for (let i = 0; i < 3; i++) {
      const made = await world.inventoryCall(
        "POST",
        "extras/tags/",
        Array.from(
          { length: 30 },
          (_, k) => ({ name: `filler ${i}-${k}`, slug: `filler-${i}-${k}` }),
        ),
      );
      assert.equal(made.status, 201, JSON.stringify(made.body));
    }
    const fixed = await run(world);
    assert.ok(fixed.guestReads > 0, "every guest compared");
    assert.equal((await synced(world)).vm.vcpus, before.vm.vcpus, "the edit put back");
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync ledger: a first run reads back the change log it writes in range reads a page wide, not 100 ids a request", async () => {
  // The ledger reads the log from its cursor after each slice (docs/sync.md, "Re-runs"): on a
  // first run that is every entry the run writes. Counted at two sizes: the requests to the log
  // beyond its two one-entry reads of the log's ends per catch-up grow with the entries by one
  // per 1,000 (a range), where reading by id asked one per 100.
  const measure = async (seed: string) => {
    const world = await syncWorld(seed, FAST);
    try {
      await addInventoryCopy(world);
      await world.addHypervisorCopy("lab");
      const from = world.seen.length;
      await run(world);
      const [newest] = await world.inventory("core/object-changes/?ordering=-id&limit=1");
      const logReads = world.seen.slice(from)
        .filter((s) => s === "GET /api/core/object-changes/").length;
      return { entries: newest.id as number, logReads };
    } finally {
      await world.close();
    }
  };
  const small = await measure("nodes=1,vms=40,cts=10,storages=1");
  const large = await measure("nodes=1,vms=200,cts=50,storages=1");
  const figures = JSON.stringify({ small, large });
  assert.ok(large.entries > small.entries * 4 && small.logReads > 0, figures);
  // Measured: 24 then 26 requests for 553 then 2,623 entries (by id: 26 then 49). One request
  // per 400 more entries at most leaves room for a few ids read by id (entries still being
  // written when a catch-up read the log's end).
  assert.ok((large.logReads - small.logReads) * 400 <= large.entries - small.entries, figures);
});

Deno.test("e2e sync ledger: a guest whose write was refused is compared again next run, once the cause is fixed by a rename nobody's guest holds", async () => {
  const world = await syncWorld("nodes=1,vms=3,cts=1,storages=1", FAST);
  try {
    await settled(world, 2);
    const guest = await firstQemu(world);
    const state = (await world.inventory(`plugins/service/vm-sync-state/?vmid=${guest.vmid}`))[0];
    const vm = state.virtual_machine.id;
    // An admin's disk and interface, untagged, under the names the guest is about to get.
    const handDisk = await world.inventoryCall("POST", "virtualization/virtual-disks/", {
      virtual_machine: vm,
      name: "scsi7",
      size: 1,
    });
    const handNic = await world.inventoryCall("POST", "virtualization/interfaces/", {
      virtual_machine: vm,
      name: "net7",
    });
    assert.deepEqual([handDisk.status, handNic.status], [201, 201], JSON.stringify(handNic.body));
    await world.hypervisor("PUT", `/nodes/${guest.node}/qemu/${guest.vmid}/config`, {
      scsi7: `local-lvm:vm-${guest.vmid}-disk-7,size=4G`,
      net7: "virtio=BC:24:11:00:00:C7,bridge=vmbr0",
    });
    const refused = await world.backend("GET", "/full-update");
    // Both creates refused (a name unique per VM), the rest of the run done.
    assert.equal(refused.status, 502, JSON.stringify(refused.body));
    assert.deepEqual(
      refused.body.errors.map((e: any) => [e.step, e.upstream_status]),
      [["vm-disks", 400], ["vm-interfaces", 400]],
    );

    // Renamed: an edit of an object no guest's record holds, which alone skips nothing anew.
    const renames = [
      await world.inventoryCall("PATCH", `virtualization/virtual-disks/${handDisk.body.id}/`, {
        name: "admin-disk",
      }),
      await world.inventoryCall("PATCH", `virtualization/interfaces/${handNic.body.id}/`, {
        name: "admin-nic",
      }),
    ];
    assert.deepEqual(renames.map((r) => r.status), [200, 200]);
    const fixed = await run(world);
    assert.ok(fixed.result.created >= 3, JSON.stringify(fixed.result));
    const synced = async (path: string) =>
      (await world.inventory(`${path}?virtual_machine_id=${vm}&tag=bridgebox-synced`))
        .map((o: any) => o.name);
    assert.ok((await synced("virtualization/virtual-disks/")).includes("scsi7"), "the disk made");
    assert.ok((await synced("virtualization/interfaces/")).includes("net7"), "the NIC made");
    const macs = await world.inventory("dcim/mac-addresses/?mac_address=BC:24:11:00:00:C7");
    assert.equal(macs.length, 1, "the NIC's MAC address");
  } finally {
    await world.close();
  }
});

/** Requests of a run that walk or read the endpoint's sync-states (only the VM stage's walk and its reads by id). */
function stateReads(world: SyncWorld, from: number): number {
  return world.seen.slice(from).filter((s) => s === "GET /api/plugins/service/vm-sync-state/")
    .length;
}

Deno.test("e2e sync ledger: a re-run takes the walks the last run kept (no sync-state listed); a guest added upstream is made once, a hand rename of a VM the sync does not own walks again", async () => {
  const world = await syncWorld("nodes=1,vms=3,cts=1,storages=1", FAST);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    await run(world);
    // A VM of the cluster the sync does not own, made by hand (its create starts the ledger over).
    const { vm: ours } = await synced(world);
    const handMade = await world.inventoryCall("POST", "virtualization/virtual-machines/", {
      name: "hand-made",
      cluster: ours.cluster.id,
    });
    assert.equal(handMade.status, 201, JSON.stringify(handMade.body));
    await run(world);
    let from = world.seen.length;
    const quiet = await run(world);
    assert.equal(quiet.result.created + quiet.result.updated, 0, JSON.stringify(quiet.result));
    assert.equal(stateReads(world, from), 0, "no sync-state walked or read");

    // A guest added upstream: created on the kept walks, which then hold it (the sync's own
    // writes): the next run finds it, neither a second VM nor a second sync-state.
    const [guest] = await world.hypervisor("GET", "/cluster/resources", { type: "vm" });
    await world.hypervisor("POST", `/nodes/${guest.node}/qemu`, {
      vmid: "990",
      name: "added-upstream",
      memory: "1024",
    });
    const added = await run(world);
    assert.ok(added.result.created >= 2, JSON.stringify(added.result));
    from = world.seen.length;
    const found = await run(world);
    assert.equal(found.result.created + found.result.updated, 0, JSON.stringify(found.result));
    assert.equal(stateReads(world, from), 0, "the added guest's sync-state kept too");
    const named = await world.inventory("virtualization/virtual-machines/?q=added-upstream");
    assert.deepEqual(named.map((v: any) => v.name), ["added-upstream"]);

    // The hand-made VM renamed by hand to the name of a guest about to appear upstream: the
    // kept names no longer hold, the walk reads the cluster again and the newcomer is suffixed
    // (on the kept names its create would be refused: the name is taken in the cluster).
    const renamed = await world.inventoryCall(
      "PATCH",
      `virtualization/virtual-machines/${handMade.body.id}/`,
      { name: "newcomer" },
    );
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    await world.hypervisor("POST", `/nodes/${guest.node}/qemu`, {
      vmid: "991",
      name: "newcomer",
      memory: "1024",
    });
    from = world.seen.length;
    await run(world);
    assert.ok(stateReads(world, from) > 0, "the walks read again");
    const newcomers = await world.inventory("virtualization/virtual-machines/?q=newcomer");
    assert.deepEqual(newcomers.map((v: any) => v.name).sort(), ["newcomer", "newcomer (2)"]);
  } finally {
    await world.close();
  }
});

/** Requests of a run since `from` that read IP addresses. */
function addressReads(world: SyncWorld, from: number): number {
  return world.seen.slice(from).filter((s) => s === "GET /api/ipam/ip-addresses/").length;
}

Deno.test("e2e sync ledger: the ip-addresses stage skips unchanged guests; a hand delete of an address, someone else's address tagged as the sync's and an upstream address change are still put right", async () => {
  const world = await syncWorld("nodes=1,vms=3,cts=1,storages=1", FAST);
  try {
    await settled(world, 2);
    let from = world.seen.length;
    const quiet = await run(world);
    assert.equal(quiet.result.created + quiet.result.updated, 0, JSON.stringify(quiet.result));
    const skipped = addressReads(world, from);
    from = world.seen.length;
    const compared = await run(world, "?plan=true");
    // The nodes' addresses (network-interfaces) are read by both; the guests' by the compare only.
    assert.equal(skipped, addressReads(world, from) - 1, "no guest's addresses read");
    assert.equal(quiet.result.unchanged, compared.result.unchanged, "counted as a compare counts");

    const addresses = async () =>
      (await world.inventory("ipam/ip-addresses/?tag=bridgebox-synced"))
        .map((ip: any) => ip.address).sort();
    const before = await addresses();
    assert.ok(before.length >= 2, JSON.stringify(before));
    // A hand delete of one of the sync's addresses (the sync's own token: the request tells).
    const [gone] = await world.inventory(
      "ipam/ip-addresses/?tag=bridgebox-synced&assigned_object_type=virtualization.vminterface",
    );
    assert.ok(gone, "a guest's address");
    const deleted = await world.inventoryCall("DELETE", `ipam/ip-addresses/${gone.id}/`);
    assert.equal(deleted.status, 204);
    await run(world);
    assert.deepEqual(await addresses(), before, "the deleted address made again");

    // Someone else's address, tagged as the sync's, on a guest's interface: a compare deletes it
    // (the sync owns what carries its tag), so a skip must not keep it.
    const iface =
      (await world.inventory(`virtualization/interfaces/?id=${gone.assigned_object_id}`))[0];
    const tag = (await world.inventory("extras/tags/?slug=bridgebox-synced"))[0];
    const planted = await world.inventoryCall("POST", "ipam/ip-addresses/", {
      address: "10.250.0.9/24",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: iface.id,
      tags: [tag.id],
    });
    assert.equal(planted.status, 201, JSON.stringify(planted.body));
    await run(world);
    assert.deepEqual(await addresses(), before, "the planted address removed as a compare does");

    // An upstream change of a guest's address: written, the VM's primary IP with it.
    const [guest] = (await world.hypervisor("GET", "/cluster/resources", { type: "vm" }))
      .filter((r: any) => r.type === "qemu").sort((a: any, b: any) => a.vmid - b.vmid);
    await world.hypervisor("PUT", `/nodes/${guest.node}/qemu/${guest.vmid}/config`, {
      ipconfig0: "ip=10.251.0.7/24,gw=10.251.0.1",
    });
    from = world.seen.length;
    const upstream = await run(world);
    assert.ok(upstream.result.created >= 1, JSON.stringify(upstream.result));
    assert.ok(addressReads(world, from) > 0);
    const state = (await world.inventory(`plugins/service/vm-sync-state/?vmid=${guest.vmid}`))[0];
    const vm =
      (await world.inventory(`virtualization/virtual-machines/?id=${state.virtual_machine.id}`))[0];
    assert.equal(vm.primary_ip4?.address, "10.251.0.7/24");
    const quietAgain = await run(world);
    assert.equal(quietAgain.result.created + quietAgain.result.updated, 0);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync ledger: the vm-snapshots and vm-backups stages skip what did not change; a hand edit, a hand delete, someone else's record and an upstream snapshot are written", async () => {
  const world = await syncWorld("nodes=1,vms=6,cts=2,storages=1", FAST);
  /** A run, and its reads of snapshot records by guest and of the backup records. */
  const recordRun = async () => {
    const from = world.requests.length;
    const { result } = await run(world);
    const reads = world.requests.slice(from);
    return {
      result,
      snapshotReads:
        reads.filter((r) =>
          r.startsWith("GET /api/plugins/service/snapshots/?") && r.includes("vmid=")
        ).length,
      backupReads: reads.filter((r) => r.startsWith("GET /api/plugins/service/backups/?")).length,
    };
  };
  try {
    await settled(world, 1);
    const snapshots = await world.inventory("plugins/service/snapshots/");
    const backups = await world.inventory("plugins/service/backups/");
    assert.ok(snapshots.length > 0 && backups.length > 0, "the seed has snapshots and backups");

    const again = await recordRun();
    assert.deepEqual({ snapshots: again.snapshotReads, backups: again.backupReads }, {
      snapshots: 0,
      backups: 0,
    }, "an unchanged re-run reads no guest's snapshot records and no backup record");
    // Counted as a compare counts them (a planned run keeps no ledger and reads them all).
    const compared = await run(world, "?plan=true");
    assert.equal(again.result.unchanged, compared.result.unchanged);

    // Each change in a run of its own (someone else's new record has the stage compare every
    // guest, which would put the others right too); three guests apart: the hand-edited
    // record's, the hand-made record's, the upstream snapshot's.
    const guest = await firstQemu(world);
    const snap = snapshots.find((s: any) => s.vmid !== guest.vmid);
    assert.ok(snap, "a snapshot record of another guest");
    const [backup] = backups;
    const other = (await world.hypervisor("GET", "/cluster/resources", { type: "vm" }))
      .map((r: any) => r.vmid).find((v: number) => v !== snap.vmid && v !== guest.vmid);
    const snapshotsNow = () => world.inventory("plugins/service/snapshots/");

    // A hand edit of a snapshot record and a hand delete of a backup record (the sync's token).
    const edits = [
      await world.inventoryCall("PATCH", `plugins/service/snapshots/${snap.id}/`, {
        description: "edited by hand",
      }),
      await world.inventoryCall("DELETE", `plugins/service/backups/${backup.id}/`),
    ];
    assert.deepEqual(edits.map((e) => e.status), [200, 204]);
    const fixed = await recordRun();
    assert.ok(fixed.snapshotReads > 0 && fixed.backupReads > 0, JSON.stringify(fixed));
    const edited = (await snapshotsNow()).find((s: any) => s.id === snap.id);
    assert.equal(edited.description, snap.description, "the hand edit put back");
    const volids = (await world.inventory("plugins/service/backups/")).map((b: any) => b.volid);
    assert.ok(volids.includes(backup.volid), "the deleted backup record made again");

    // A record someone else made for a guest, not upstream: a compare marks it stale; and a
    // hand edit of a backup record (the delete above had every guest compared).
    const [kept] = await world.inventory("plugins/service/backups/");
    const note = await world.inventoryCall("PATCH", `plugins/service/backups/${kept.id}/`, {
      notes: "edited by hand",
    });
    assert.equal(note.status, 200, JSON.stringify(note.body));
    const made = await world.inventoryCall("POST", "plugins/service/snapshots/", {
      endpoint: snap.endpoint.id,
      vmid: other,
      name: "made-by-hand",
      status: "active",
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    await recordRun();
    const hand = (await snapshotsNow()).find((s: any) => s.name === "made-by-hand");
    assert.equal(hand.status.value ?? hand.status, "stale", "someone else's record compared");
    const [back] = await world.inventory(`plugins/service/backups/?id=${kept.id}`);
    assert.equal(back.notes, kept.notes, "the backup's hand edit put back");

    // A snapshot taken upstream.
    assert.ok(
      await world.hypervisor("POST", `/nodes/${guest.node}/qemu/${guest.vmid}/snapshot`, {
        snapname: "ledger-snap",
      }),
    );
    const upstream = await recordRun();
    assert.ok(upstream.result.created >= 1, JSON.stringify(upstream.result)); // and its task
    assert.ok(
      (await snapshotsNow()).some((s: any) => s.vmid === guest.vmid && s.name === "ledger-snap"),
      "the upstream snapshot written",
    );

    const quiet = await recordRun();
    assert.equal(quiet.result.created + quiet.result.updated, 0, JSON.stringify(quiet.result));
    assert.deepEqual({ snapshots: quiet.snapshotReads, backups: quiet.backupReads }, {
      snapshots: 0,
      backups: 0,
    }, "skipped again once written");
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync ledger: a restarted app, or another on the same store, takes the ledger the last run saved: it skips as the first would, and an edit made meanwhile is still put back", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bridgebox-ledger-" });
  const kvPath = `${dir}/bridgebox.kv`;
  const a = await syncWorld("nodes=1,vms=8,cts=2,storages=1", FAST, {
    kv: await Deno.openKv(kvPath),
  });
  let b: SyncWorld | undefined;
  try {
    await settled(a, 1);
    const skipped = await run(a);
    assert.equal(skipped.guestReads, 0, "the first app's re-run skips");

    // A new app on the same store (a restart, or a second process): its ledgers are empty
    // until it takes the one the first app saved. The endpoint copies it reads are the first
    // app's (they point at its inventory and cluster).
    b = await syncWorld("nodes=1,vms=8,cts=2,storages=1", FAST, { kv: await Deno.openKv(kvPath) });
    const restarted = await run(b, "", a);
    assert.equal(restarted.guestReads, 0, "the new app's first run skips every guest");
    assert.equal(restarted.result.unchanged, skipped.result.unchanged);
    assert.equal(restarted.result.created + restarted.result.updated, 0);

    // An upstream change the second app writes: the first app's ledger in memory is older than
    // the second's save, and would take those writes for someone else's. It takes the newer.
    const guest = await firstQemu(a);
    await a.hypervisor("PUT", `/nodes/${guest.node}/qemu/${guest.vmid}/config`, { memory: "3333" });
    const upstream = await run(b, "", a);
    assert.ok(upstream.result.updated >= 1, JSON.stringify(upstream.result));
    const taken = await run(a);
    assert.equal(taken.guestReads, 0, "the first app takes the second's ledger");
    assert.equal(taken.result.created + taken.result.updated, 0, JSON.stringify(taken.result));

    // An edit after the save, before the next run (in either app): read from the saved cursor.
    const before = await synced(a);
    const edit = await a.inventoryCall("PATCH", `virtualization/virtual-disks/${before.disk.id}/`, {
      size: 1,
    });
    assert.equal(edit.status, 200);
    const fixed = await run(a);
    assert.ok(fixed.guestReads > 0, "the edited guest is read");
    assert.equal((await synced(a)).disk.size, before.disk.size, "the disk's size put back");
    assert.equal(fixed.result.updated, 1, JSON.stringify(fixed.result));

    const quiet = await run(b, "", a);
    assert.equal(quiet.guestReads, 0, "skipped again, in the other app");
    assert.equal(quiet.result.created + quiet.result.updated, 0, JSON.stringify(quiet.result));
  } finally {
    await b?.close();
    await a.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("e2e sync ledger: what a planned run wrote is not the ledger's: upstream going back after it is written back", async () => {
  const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", FAST);
  try {
    await settled(world, 2);
    const guest = await firstQemu(world);
    const path = `/nodes/${guest.node}/qemu/${guest.vmid}/config`;
    const before = (await world.hypervisor("GET", path)).ipconfig0;
    const primary = async () => {
      const state = (await world.inventory(`plugins/service/vm-sync-state/?vmid=${guest.vmid}`))[0];
      return (await world.inventory(
        `virtualization/virtual-machines/?id=${state.virtual_machine.id}`,
      ))[0].primary_ip4?.address;
    };
    const was = await primary();
    await world.hypervisor("PUT", path, { ipconfig0: "ip=10.251.0.7/24,gw=10.251.0.1" });
    // A planned run writes (plan without dry_run) but keeps no ledger.
    await run(world, "?plan=true");
    assert.equal(await primary(), "10.251.0.7/24", "the planned run wrote the upstream change");
    await world.hypervisor("PUT", path, { ipconfig0: before });
    await run(world);
    assert.equal(await primary(), was, "upstream's address written back: " + before);
  } finally {
    await world.close();
  }
});
