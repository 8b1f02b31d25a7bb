import assert from "node:assert/strict";
import {
  configDigest,
  containerDnsName,
  dnsName,
  epochToIso,
  guestDisks,
  guestMemoryMb,
  guestNics,
  guestTags,
  guestVcpus,
  naturalOrder,
  propertyString,
  sizeInMb,
  slugify,
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

Deno.test("proxmox: property strings, VLAN bounds, tags, memory and slugs at their edges", () => {
  // The first bare value is the volume; a later bare word is a flag of its own.
  assert.deepEqual(propertyString("local:vm-1-disk-0, size=8G ,backup"), {
    "": "local:vm-1-disk-0",
    size: "8G",
    backup: "",
  });
  assert.deepEqual(propertyString(undefined), {});
  assert.deepEqual(propertyString(7), {});
  // VLAN tags 1 and 4094 are VLANs; 0 and 4095 are not (NetBox takes 1-4094).
  const nics = guestNics("qemu", {
    net0: "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=1",
    net1: "virtio=BC:24:11:00:00:02,bridge=vmbr0,tag=4094",
    net2: "virtio=BC:24:11:00:00:03,bridge=vmbr0,tag=0",
    net3: "virtio=BC:24:11:00:00:04,bridge=vmbr0,tag=x",
    net4: "bridge=vmbr9,macaddr=bc:24:11:00:00:05",
  });
  assert.deepEqual(nics.map((n) => [n.name, n.vlan, n.mac, n.bridge]), [
    ["net0", 1, "BC:24:11:00:00:01", "vmbr0"],
    ["net1", 4094, "BC:24:11:00:00:02", "vmbr0"],
    ["net2", null, "BC:24:11:00:00:03", "vmbr0"],
    ["net3", null, "BC:24:11:00:00:04", "vmbr0"],
    ["net4", null, "BC:24:11:00:00:05", "vmbr9"],
  ]);
  // A NIC without any MAC or bridge, and a container NIC's guest-side name.
  assert.deepEqual(guestNics("qemu", { net0: "model=virtio" }).map((n) => [n.mac, n.bridge]), [
    [null, null],
  ]);
  assert.deepEqual(
    guestNics("lxc", { net0: "bridge=vmbr0,hwaddr=BC:24:11:00:00:06" })
      .map((n) => [n.guestName, n.mac]),
    [[null, "BC:24:11:00:00:06"]],
  );
  assert.deepEqual(
    guestNics("qemu", { net0: "virtio=BC:24:11:00:00:07,name=eth9" })
      .map((n) => n.guestName),
    [null],
  );
  // Tags: `;`, `,` and spaces all separate; duplicates once; sorted.
  assert.deepEqual(guestTags({ tags: "b,a c;; a" }), ["a", "b", "c"]);
  assert.deepEqual(guestTags({}), []);
  assert.deepEqual(guestTags({ tags: 5 }), []);
  // Memory: the config's, else the guest's maxmem in MiB, else none.
  assert.equal(guestMemoryMb({ memory: "2048" }), 2048);
  assert.equal(guestMemoryMb({}, 512 * 1024 ** 2), 512);
  assert.equal(guestMemoryMb({ memory: "x" }, 256 * 1024 ** 2), 256);
  assert.equal(guestMemoryMb({}), null);
  // QEMU: sockets default to 1; vcpus only when positive; a container never takes vcpus.
  assert.equal(guestVcpus("qemu", { cores: 3 }), 3);
  assert.equal(guestVcpus("qemu", { sockets: 2 }), 2);
  assert.equal(guestVcpus("qemu", { cores: 2, vcpus: 0 }), 2);
  assert.equal(guestVcpus("lxc", { cores: 2, vcpus: 1 }), 2);
  assert.equal(guestVcpus("lxc", { cores: 2 }, 16), 2);
  assert.equal(guestVcpus("qemu", { cores: "x" }, 4), 4);
  // Slugs: lower case, runs of other characters one dash, none at the ends, never empty.
  assert.equal(slugify("  Prod DB (EU)!"), "prod-db-eu");
  assert.equal(slugify("a_b-c"), "a_b-c");
  assert.equal(slugify("***"), "x");
  assert.equal(slugify("y".repeat(150)).length, 100);
});

Deno.test("proxmox: DNS names as NetBox takes them; a container's host name with its search domain", () => {
  assert.equal(dnsName("Web-1.Example.org"), "web-1.example.org");
  assert.equal(dnsName(" host. "), "host.");
  assert.equal(dnsName("*.lab"), "*.lab");
  assert.equal(
    dnsName(`${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(63)}`)
      ?.length,
    255,
  );
  assert.equal(dnsName("a".repeat(256)), null);
  for (const bad of ["", "  ", "a b", "a..b", "bad!", 5, null]) {
    assert.equal(dnsName(bad), null, String(bad));
  }
  assert.equal(
    containerDnsName({ hostname: "db1", searchdomain: "corp.example" }),
    "db1.corp.example",
  );
  assert.equal(
    containerDnsName({ hostname: "db1", searchdomain: "a.example b.example" }),
    "db1.a.example",
  );
  assert.equal(
    containerDnsName({ hostname: "db1.own.example", searchdomain: "corp.example" }),
    "db1.own.example",
  );
  assert.equal(containerDnsName({ hostname: "db1" }), "db1");
  assert.equal(containerDnsName({ searchdomain: "corp.example" }), null);
  assert.equal(containerDnsName({ hostname: "  " }), null);
});

Deno.test("proxmox: a config's digest ignores key order and follows every value", async () => {
  const a = await configDigest({ name: "a", memory: 1 });
  assert.match(a, /^[0-9a-f]{32}$/);
  assert.equal(await configDigest({ memory: 1, name: "a" }), a);
  assert.notEqual(await configDigest({ name: "a", memory: 2 }), a);
});
