/**
 * The guest stages work in slices of guests (domain/sync/guests.ts, docs/sync.md "Memory"): an
 * estate larger than a slice syncs as one would, and no stage reads a whole model of the
 * inventory to find one slice's objects. Over in-memory fakes of the two ports (no sockets).
 */
import assert from "node:assert/strict";
import {
  FakeHypervisor,
  FakeInventory,
  guestMac,
  runGuestStages as run,
  smallCluster,
} from "./_fakes.ts";
import { SLICE } from "../../../domain/sync/guests.ts";

const VMS = "virtualization/virtual-machines/";
/** More guests than two slices hold: three slices, the last a short one. */
const GUESTS = 2 * SLICE + 201;

/** Every seventh guest has a snapshot, and the one the second run loses. */
const hasSnapshot = (vmid: number) => vmid % 7 === 0 || vmid === SLICE + 1;

/** Guests 1..GUESTS on two nodes, each with a disk, a NIC and a static address. */
function bigCluster(
  names: Record<number, string> = {},
  gone = new Set<number>(),
  addresses: Record<number, string> = {},
  count = GUESTS,
) {
  const data = smallCluster();
  const resources = [];
  for (let vmid = 1; vmid <= count; vmid++) {
    if (gone.has(vmid)) continue;
    const node = vmid % 2 ? "n1" : "n2";
    const name = names[vmid] ?? `vm-${vmid}`;
    resources.push({ vmid, name, node, type: "qemu", status: "running" });
    const mac = guestMac(vmid);
    data[`/nodes/${node}/qemu/${vmid}/config`] = {
      name,
      memory: 1024,
      cores: 1,
      scsi0: `local:vm-${vmid}-disk-0,size=8G`,
      net0: `virtio=${mac},bridge=vmbr0`,
      ipconfig0: `ip=${addresses[vmid] ?? `10.${vmid >> 8}.${vmid & 255}.1/16`}`,
      ...(hasSnapshot(vmid) ? { parent: "s1" } : {}),
    };
    if (hasSnapshot(vmid)) {
      data[`/nodes/${node}/qemu/${vmid}/snapshot`] = [
        { name: "s1", snaptime: 1_700_000_000 },
        { name: "current", parent: "s1" },
      ];
    }
  }
  data["/cluster/resources"] = resources;
  return data;
}

/** Moves `vmid` to the other node (its config goes with it, as a migration does). */
function migrate(data: Record<string, unknown>, vmid: number) {
  const resources = data["/cluster/resources"] as { vmid: number; node: string }[];
  const guest = resources.find((r) => r.vmid === vmid)!;
  const to = guest.node === "n1" ? "n2" : "n1";
  data[`/nodes/${to}/qemu/${vmid}/config`] = data[`/nodes/${guest.node}/qemu/${vmid}/config`];
  delete data[`/nodes/${guest.node}/qemu/${vmid}/config`];
  const snapshots = `/nodes/${guest.node}/qemu/${vmid}/snapshot`;
  if (snapshots in data) {
    data[`/nodes/${to}/qemu/${vmid}/snapshot`] = data[snapshots];
    delete data[snapshots];
  }
  guest.node = to;
}

/** The inventory fake, recording the filters of each list call. */
class RecordingInventory extends FakeInventory {
  readonly lists: { path: string; filters: Record<string, string | string[]> }[] = [];
  override list(path: string, filters: Record<string, string | string[]>) {
    this.lists.push({ path, filters });
    return super.list(path, filters);
  }
}

Deno.test("slices: an estate of three slices syncs whole; each stage reads one slice's objects by id, at most 100 ids a request", async () => {
  const inv = new RecordingInventory();
  inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
  // Guests 1 and GUESTS share a name: the suffix goes by vmid across slices.
  await run(inv, new FakeHypervisor(bigCluster({ 1: "web", [GUESTS]: "web" })));

  const vms = inv.all(VMS);
  assert.equal(vms.length, GUESTS);
  const states = inv.all("plugins/service/vm-sync-state/");
  const vmOf = new Map(states.map((s) => [Number(s.vmid), Number(s.virtual_machine)]));
  const byId = new Map(vms.map((v) => [v.id, v]));
  assert.equal(byId.get(vmOf.get(1)!)!.name, "web");
  assert.equal(byId.get(vmOf.get(GUESTS)!)!.name, "web (2)");
  assert.equal(inv.all("virtualization/virtual-disks/").length, GUESTS);
  assert.equal(inv.all("virtualization/interfaces/").length, GUESTS);
  assert.equal(inv.all("dcim/mac-addresses/").length, GUESTS);
  const ips = inv.all("ipam/ip-addresses/");
  assert.equal(ips.length, GUESTS);
  // Every VM got its primary address, the last slice's too.
  assert.ok(vms.every((v) => typeof v.primary_ip4 === "number"), "primary IPv4 on every VM");

  // A guest's children are read by parent, a slice's VMs and sync-states by id: never a whole
  // model by the ownership tag alone.
  const narrowed: Record<string, string> = {
    "virtualization/virtual-disks/": "virtual_machine_id",
    "virtualization/interfaces/": "virtual_machine_id",
    "dcim/mac-addresses/": "assigned_object_id",
    "ipam/ip-addresses/": "assigned_object_id",
  };
  for (const { path, filters } of inv.lists) {
    const by = narrowed[path];
    if (by) assert.ok(Array.isArray(filters[by]), `${path} read without ${by}`);
    for (const [key, value] of Object.entries(filters)) {
      // An empty list is no filter at all: the inventory would answer the whole model.
      if (Array.isArray(value)) {
        assert.ok(value.length > 0 && value.length <= 100, `${path} ${key}: ${value.length}`);
      }
    }
  }
  const vmReads = inv.lists.filter((l) => l.path === VMS && l.filters.id);
  assert.ok(vmReads.length >= 3, "the VMs of each slice are read by id");
});

Deno.test("slices: a migrated guest keeps its VM and disks; a gone one is marked; a name freed in a later slice is taken after its rename", async () => {
  const inv = new FakeInventory();
  inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
  const last = GUESTS;
  await run(inv, new FakeHypervisor(bigCluster({ 1: "alpha", [last]: "beta" })));
  const states = () => inv.all("plugins/service/vm-sync-state/");
  const vmOf = (vmid: number) => Number(states().find((s) => s.vmid === vmid)!.virtual_machine);
  const diskOf = (vmid: number) =>
    inv.all("virtualization/virtual-disks/").find((d) => d.virtual_machine === vmOf(vmid))!.id;
  const [firstVm, lastVm, goneVm] = [vmOf(1), vmOf(last), vmOf(SLICE + 1)];
  const lastDisk = diskOf(last);

  // Guest 1 takes the name guest `last` (third slice) gives up in the same run; guest `last`
  // moved to the other node; guest SLICE+1 is gone.
  const data = bigCluster({ 1: "beta", [last]: "gamma" }, new Set([SLICE + 1]));
  migrate(data, last);
  const before = inv.writes.length;
  const complete = await run(inv, new FakeHypervisor(data));
  const writes = inv.writes.slice(before);

  assert.equal(complete.result.deleted, 0, JSON.stringify(writes.filter((w) => w[0] === "D")));
  assert.equal(vmOf(last), lastVm, "the migrated guest keeps its VM");
  assert.equal(diskOf(last), lastDisk, "and its disk");
  const vm = (id: number) => inv.table(VMS).get(id)!;
  assert.equal(vm(lastVm).name, "gamma");
  assert.equal(vm(firstVm).name, "beta");
  // The rename that frees "beta" is written before the VM that takes it.
  const renamed = writes.indexOf(`PATCH ${VMS}${lastVm}`);
  const took = writes.lastIndexOf(`PATCH ${VMS}${firstVm}`);
  assert.ok(renamed >= 0 && took > renamed, writes.filter((w) => w.includes(VMS)).join("\n"));
  assert.equal(vm(goneVm).status, "decommissioning");
  assert.equal(states().find((s) => s.vmid === SLICE + 1)!.status, "missing");
  assert.equal(inv.all(VMS).length, GUESTS, "nothing created or deleted");
  const snapshots = inv.all("plugins/service/snapshots/");
  const snapshotOf = (vmid: number) => snapshots.find((s) => s.vmid === vmid)!;
  assert.equal(
    snapshots.length,
    Array.from({ length: GUESTS }, (_, i) => i + 1).filter(hasSnapshot).length,
  );
  assert.equal(snapshotOf(SLICE + 1).status, "stale", "the gone guest's snapshot is stale");
  assert.ok(
    snapshots.every((s) => s.vmid === SLICE + 1 || s.status === "active"),
    "every other snapshot stays active",
  );
});

/**
 * NetBox's unique IP space on the fake: a create of an address another object holds is refused
 * item by item, a lookup by host finds it, and an address renders its interface's VM.
 */
class UniqueAddressInventory extends FakeInventory {
  constructor() {
    super();
    this.refuse = (path, body) => {
      if (path !== IPS || typeof body.address !== "string") return null;
      const host = body.address.split("/")[0];
      const holder = this.all(IPS).find((o) =>
        String(o.address).split("/")[0] === host && o.id !== body.id
      );
      return holder ? { address: [`Duplicate IP address found in global table: ${host}`] } : null;
    };
  }
  override list(path: string, filters: Record<string, string | string[]>) {
    if (path !== IPS) return super.list(path, filters);
    const { address, ...rest } = filters;
    return super.list(path, rest).then((rows) =>
      rows.filter((o) => address === undefined || String(o.address).split("/")[0] === address)
        .map((o) => {
          const iface = this.table("virtualization/interfaces/").get(Number(o.assigned_object_id));
          return { ...o, assigned_object: iface && { virtual_machine: iface.virtual_machine } };
        })
    );
  }
}
const IPS = "ipam/ip-addresses/";

Deno.test("slices: an address moving to a guest of an earlier slice moves in the same run (the same object), with its primary IP", async () => {
  const inv = new UniqueAddressInventory();
  inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
  await run(inv, new FakeHypervisor(bigCluster()));
  const states = inv.all("plugins/service/vm-sync-state/");
  const vmOf = (vmid: number) => Number(states.find((s) => s.vmid === vmid)!.virtual_machine);
  const held = inv.all(IPS).find((ip) => ip.address === `10.${GUESTS >> 8}.${GUESTS & 255}.1/16`)!;

  // Guest 1 (first slice) takes the address guest GUESTS (third slice) gives up.
  const before = inv.writes.length;
  const complete = await run(
    inv,
    new FakeHypervisor(
      bigCluster({}, new Set(), { 1: held.address as string, [GUESTS]: "10.250.0.1/16" }),
    ),
  );
  assert.equal(complete.conflicts, undefined, JSON.stringify(complete.conflicts));
  const ips = inv.all(IPS);
  assert.equal(ips.length, GUESTS);
  const now = ips.find((ip) => ip.address === held.address)!;
  const ifaceOf = (vmid: number) =>
    inv.all("virtualization/interfaces/").find((i) => i.virtual_machine === vmOf(vmid))!.id;
  assert.equal(now.id, held.id, "the same object, moved");
  assert.equal(now.assigned_object_id, ifaceOf(1), "the address is guest 1's");
  assert.equal(inv.table(VMS).get(vmOf(1))!.primary_ip4, now.id, "and its primary IPv4");
  // Guest 1's primary IPs waited for its address: one write of them, never one without it.
  assert.deepEqual(
    inv.writes.slice(before).filter((w) => w === `PATCH ${VMS}${vmOf(1)}`),
    [`PATCH ${VMS}${vmOf(1)}`],
  );
  const moved = ips.find((ip) => ip.address === "10.250.0.1/16")!;
  assert.equal(moved.assigned_object_id, ifaceOf(GUESTS));
  assert.equal(inv.table(VMS).get(vmOf(GUESTS))!.primary_ip4, moved.id);
});

Deno.test("slices: exactly one full slice, and no guest at all: every read names its ids, a re-run writes nothing", async () => {
  for (const count of [SLICE, 0]) {
    const inv = new RecordingInventory();
    inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
    const hv = new FakeHypervisor(bigCluster({}, new Set(), {}, count));
    await run(inv, hv);
    assert.equal(inv.all(VMS).length, count);
    assert.equal(inv.all("ipam/ip-addresses/").length, count);
    for (const { path, filters } of inv.lists) {
      for (const [key, value] of Object.entries(filters)) {
        if (Array.isArray(value)) {
          assert.ok(
            value.length > 0 && value.length <= 100,
            `${count}: ${path} ${key}: ${value.length}`,
          );
        }
      }
    }
    const vmReads = inv.lists.filter((l) => l.path === VMS && l.filters.id).length;
    assert.equal(vmReads, count / 100, `${count}: the slice's VMs read by id, 100 a request`);
    // A re-run reads the same and writes nothing.
    const writes = inv.writes.length;
    await run(inv, hv);
    assert.deepEqual(inv.writes.slice(writes), [], `${count}: the re-run writes nothing`);
  }
});
