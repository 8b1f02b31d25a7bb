import assert from "node:assert/strict";
import {
  epochToIso,
  guestDisks,
  guestNics,
  guestTags,
  guestVcpus,
  naturalOrder,
  sizeInMb,
} from "../../../domain/sync/proxmox.ts";
import { baseName, uniqueNames } from "../../../domain/sync/stages/virtual_machines.ts";
import { changes, plain, same } from "../../../domain/sync/reconcile.ts";

Deno.test("proxmox: sizes in MiB, CD-ROMs as size-0 disks, in natural order", () => {
  assert.equal(sizeInMb("32G"), 32768);
  assert.equal(sizeInMb("512M"), 512);
  assert.equal(sizeInMb("1T"), 1048576);
  assert.equal(sizeInMb("1048576"), 1);
  const disks = guestDisks("qemu", {
    scsi10: "local:vm-1-disk-2,size=1G",
    scsi2: "local:vm-1-disk-1,size=2G",
    ide2: "none,media=cdrom",
    ide0: "local:iso/x.iso,media=cdrom",
    efidisk0: "local:vm-1-disk-0,size=4M",
    net0: "virtio=AA:BB:CC:DD:EE:FF",
  });
  assert.deepEqual(disks.map((d) => [d.name, d.sizeMb, d.cdrom ?? false]), [
    ["efidisk0", 4, false],
    ["ide0", 0, true],
    ["ide2", 0, true],
    ["scsi2", 2048, false],
    ["scsi10", 1024, false],
  ]);
  assert.deepEqual(
    guestDisks("lxc", { rootfs: "local:8,size=8G", mp0: "local:x,mp=/a,size=1G" }).map((d) =>
      d.name
    ),
    ["rootfs", "mp0"],
  );
  assert.ok(naturalOrder("net2", "net10") < 0);
  // A disk Proxmox lists without a size (a passed-through device) is a disk of size 0; a size
  // it cannot have is 0 too, never a failed stage.
  assert.deepEqual(
    guestDisks("qemu", { scsi1: "/dev/disk/by-id/ata-ST4000-Z1Z0", sata0: "local:x,size=12X" })
      .map((d) => [d.name, d.sizeMb]),
    [["sata0", 0], ["scsi1", 0]],
  );
  assert.equal(sizeInMb(undefined), 0);
  assert.equal(sizeInMb(""), 0);
  assert.equal(sizeInMb(" 2g "), 2048);
  assert.equal(sizeInMb("1.5G"), 1536);
  assert.equal(sizeInMb("2048K"), 2);
});

Deno.test("proxmox: NICs with MAC, VLAN tag and static addresses", () => {
  const qemu = guestNics("qemu", {
    net0: "virtio=bc:24:11:00:00:01,bridge=vmbr0,tag=10,firewall=1",
    net1: "e1000=BC:24:11:00:00:02,bridge=vmbr1",
    ipconfig0: "ip=10.0.0.5/24,gw=10.0.0.1,ip6=2001:db8::5/64",
    ipconfig1: "ip=dhcp",
  });
  assert.deepEqual(qemu.map((n) => [n.name, n.mac, n.vlan, n.addresses]), [
    ["net0", "BC:24:11:00:00:01", 10, ["10.0.0.5/24", "2001:db8::5/64"]],
    ["net1", "BC:24:11:00:00:02", null, []],
  ]);
  const lxc = guestNics("lxc", {
    net0: "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:03,ip=10.0.0.6/24,tag=4095",
  });
  // One rule for both types: the Proxmox key names the interface; `name=` is kept beside it.
  assert.deepEqual(lxc.map((n) => [n.name, n.guestName, n.mac, n.vlan, n.addresses]), [
    ["net0", "eth0", "BC:24:11:00:00:03", null, ["10.0.0.6/24"]],
  ]);
  assert.deepEqual(guestTags({ tags: "web;prod;web" }), ["prod", "web"]);
  assert.equal(guestVcpus("qemu", { cores: 2, sockets: 2 }), 4);
  assert.equal(guestVcpus("qemu", { cores: 4, vcpus: 3 }), 3);
  assert.equal(guestVcpus("lxc", {}, 8), 8);
  // No cores and no node to fall back on: no vCPU count (NetBox refuses 0), never 0.
  assert.equal(guestVcpus("lxc", {}), null);
  assert.equal(guestVcpus("lxc", {}, 0), null);
  assert.equal(guestVcpus("qemu", { cores: 0 }), null);
});

Deno.test("names: same-name guests get (2), (3) by vmid; a VM keeps the name it already has", () => {
  const g = (vmid: number, name: string) => ({
    vmid,
    base: baseName({ vmid, node: "n", type: "qemu" as const, config: { name } }),
  });
  assert.deepEqual(
    [...uniqueNames([g(103, "a"), g(101, "a"), g(102, "A")], []).entries()].sort(),
    [[101, "a"], [102, "A (2)"], [103, "a (3)"]],
  );
  // Hand-made "a" exists: every guest is suffixed, still in vmid order.
  assert.deepEqual(
    [...uniqueNames([g(101, "a"), g(102, "a")], ["a"]).entries()].sort(),
    [[101, "a (2)"], [102, "a (3)"]],
  );
  // 105 had "b" first; 104 renamed to "b" later does not take it away.
  assert.deepEqual(
    [...uniqueNames([g(104, "b"), g(105, "b")], [], new Map([[105, "b"]])).entries()].sort(),
    [[104, "b (2)"], [105, "b"]],
  );
});

Deno.test("diff: nested objects and choices compare as their ids and values", () => {
  const current = {
    id: 1,
    status: { value: "active", label: "Active" },
    cluster: { id: 4, url: "x", display: "c" },
    tags: [{ id: 1, url: "t", display: "synced" }, { id: 9, url: "t", display: "hand" }],
    memory: 2048,
    last: "2026-01-01T00:00:00Z",
  };
  assert.equal(
    changes(current, {
      status: "active",
      cluster: 4,
      memory: 2048,
      tags: [1],
      last: "2026-01-01T00:00:00.000Z",
    }, new Set([1, 2])),
    null,
  );
  assert.deepEqual(
    changes(current, { status: "offline", tags: [1, 2] }, new Set([1, 2])),
    { status: "offline", tags: [9, 1, 2] },
  );
});

Deno.test("proxmox: a NIC's static addresses only; an IPv6-only or address-less NIC is no failure", () => {
  const qemu = guestNics("qemu", {
    net0: "virtio=BC:24:11:00:00:01,bridge=vmbr0",
    net1: "virtio=BC:24:11:00:00:02,bridge=vmbr0",
    net2: "virtio=BC:24:11:00:00:03,bridge=vmbr0",
    ipconfig0: "ip6=2001:db8::9/64,gw6=2001:db8::1",
    ipconfig1: "gw=10.0.0.1",
    ipconfig2: "ip=10.0.0.9,ip6=auto",
  });
  assert.deepEqual(qemu.map((n) => [n.name, n.addresses]), [
    ["net0", ["2001:db8::9/64"]],
    ["net1", []],
    ["net2", []], // an address without a mask is no address NetBox takes
  ]);
  const lxc = guestNics("lxc", {
    net0: "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:04",
    net1: "name=eth1,bridge=vmbr0,hwaddr=BC:24:11:00:00:05,ip=manual,ip6=dhcp",
  });
  assert.deepEqual(lxc.map((n) => [n.name, n.addresses]), [["net0", []], ["net1", []]]);
});

Deno.test("proxmox: epoch seconds as ISO times; none, zero or garbage is no time", () => {
  assert.equal(epochToIso(1_700_000_000), "2023-11-14T22:13:20.000Z");
  assert.equal(epochToIso("1700000000"), "2023-11-14T22:13:20.000Z");
  for (const none of [null, undefined, 0, -5, "", "soon", Infinity]) {
    assert.equal(epochToIso(none), null, String(none));
  }
});

Deno.test("reconcile: an API value reduced to what one writes; a raw config with an id stays whole", () => {
  assert.equal(plain({ id: 3, url: "http://inv/api/dcim/sites/3/", display: "lab" }), 3);
  assert.equal(plain({ id: 3, display: "lab" }), 3);
  assert.equal(plain({ id: 3, url: "http://inv/api/dcim/sites/3/" }), 3);
  // A stored Proxmox object with an `id` of its own is no reference: compared field by field.
  assert.deepEqual(plain({ id: 7, schedule: "daily" }), { id: 7, schedule: "daily" });
  assert.deepEqual(plain({ id: "backup-1", display: "x" }), { display: "x", id: "backup-1" });
  assert.equal(plain({ value: "active", label: "Active" }), "active");
  assert.deepEqual(plain({ value: "a", label: "A", color: "red" }), {
    color: "red",
    label: "A",
    value: "a",
  });
  assert.deepEqual(plain([{ id: 1, url: "u" }, null, undefined]), [1, null, null]);
  assert.equal(plain(undefined), null);
  assert.equal(plain(null), null);
  assert.equal(plain(0), 0);
  // So a raw config whose `id` moved is a change; a reference to the same object is none.
  assert.equal(same({ id: 7, schedule: "daily" }, { id: 7, schedule: "weekly" }), false);
  assert.equal(same({ id: 3, url: "u", display: "a" }, 3), true);
});
