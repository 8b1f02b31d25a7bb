/**
 * What a user sees in the inventory for each hypervisor field, stage by stage (docs/sync.md, "Who
 * owns a field" and "What happens when the hypervisor changes"): a tiny cluster changed by hand
 * through the mock's Proxmox API, a full update, then each row of a table reads one inventory
 * object back as a NetBox client would and names the field it checks. Then the same fields are
 * changed or removed upstream: the dry run's plan says what will change (updates, marks), the
 * real run does it. Small on purpose (three guests, one socket, an in-memory KV): it is the first
 * test file of the sync group of `deno task mutate` (scripts/mutate.ts).
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { addInventoryCopy, type SseFrame, syncWorld } from "./_sync_harness.ts";
import { GUEST_TAG_DESCRIPTION } from "../../domain/sync/stages/virtual_machines.ts";

const FAST_TASKS = { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" };
type World = Awaited<ReturnType<typeof syncWorld>>;

const idOf = (v: any) => (v && typeof v === "object" ? v.id : v ?? null);
const valueOf = (v: any) => (v && typeof v === "object" && "value" in v ? v.value : v ?? null);
const slugs = (o: any) => (o?.tags ?? []).map((t: any) => t.slug).sort();

function completeOf(frames: SseFrame[]) {
  const done = frames.filter((f) => f.event === "complete");
  assert.equal(done.length, 1, "one complete frame");
  return done[0].data;
}

async function fullUpdate(world: World, query = "") {
  const frames = await world.stream(`/full-update/stream${query}`);
  const done = completeOf(frames);
  assert.deepEqual(frames.filter((f) => f.event === "error").map((f) => f.data), []);
  assert.equal(done.ok, true, JSON.stringify(done));
  return { frames, done };
}

/** Rows of [what, read back, expected]; every mismatch is reported at once. */
function expectRows(rows: [string, unknown, unknown][]) {
  const wrong = rows.filter(([, got, want]) => {
    try {
      assert.deepEqual(got, want);
      return false;
    } catch {
      return true;
    }
  }).map(([what, got, want]) =>
    `${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`
  );
  assert.deepEqual(wrong, []);
}

/** The inventory as the rows read it: each synced model, and lookups by identity. */
async function readInventory(world: World) {
  const get = (path: string) => world.inventory(path);
  const [states, vms, disks, ifaces, macs, ips, vlans, prefixes] = await Promise.all([
    get("plugins/service/vm-sync-state/"),
    get("virtualization/virtual-machines/"),
    get("virtualization/virtual-disks/"),
    get("virtualization/interfaces/"),
    get("dcim/mac-addresses/"),
    get("ipam/ip-addresses/"),
    get("ipam/vlans/"),
    get("ipam/prefixes/"),
  ]);
  const [devices, devIfaces, nodes, clusters, storage, tasks, backups, snapshots] = await Promise
    .all([
      get("dcim/devices/"),
      get("dcim/interfaces/"),
      get("plugins/service/nodes/"),
      get("plugins/service/clusters/"),
      get("plugins/service/storage/"),
      get("plugins/service/task-history/"),
      get("plugins/service/backups/"),
      get("plugins/service/snapshots/"),
    ]);
  const [replications, routines] = await Promise.all([
    get("plugins/service/replications/"),
    get("plugins/service/backup-routines/"),
  ]);
  const state = (vmid: number) => states.find((s: any) => s.vmid === vmid);
  const vm = (vmid: number) => vms.find((v: any) => v.id === idOf(state(vmid)?.virtual_machine));
  const diskOf = (vmid: number, name: string) =>
    disks.find((d: any) => idOf(d.virtual_machine) === vm(vmid)?.id && d.name === name);
  const disksOf = (vmid: number) =>
    disks.filter((d: any) => idOf(d.virtual_machine) === vm(vmid)?.id).map((d: any) => d.name)
      .sort();
  const ifaceOf = (vmid: number, name: string) =>
    ifaces.find((i: any) => idOf(i.virtual_machine) === vm(vmid)?.id && i.name === name);
  const macsOf = (vmid: number, name: string) =>
    macs.filter((m: any) =>
      m.assigned_object_type === "virtualization.vminterface" &&
      m.assigned_object_id === ifaceOf(vmid, name)?.id
    ).map((m: any) => m.mac_address).sort();
  const ipsOf = (vmid: number) => {
    const mine = new Set(
      ifaces.filter((i: any) => idOf(i.virtual_machine) === vm(vmid)?.id).map((i: any) => i.id),
    );
    return ips.filter((a: any) =>
      a.assigned_object_type === "virtualization.vminterface" && mine.has(a.assigned_object_id)
    );
  };
  const ip = (id: number | null) => ips.find((a: any) => a.id === id) ?? null;
  const device = (name: string) => devices.find((d: any) => d.name === name);
  const devIface = (node: string, name: string) =>
    devIfaces.find((i: any) => idOf(i.device) === device(node)?.id && i.name === name);
  const node = (name: string) => nodes.find((n: any) => n.name === name);
  const storageNamed = (name: string) => storage.find((s: any) => s.name === name);
  const vlan = (vid: number) => vlans.find((v: any) => v.vid === vid);
  const prefix = (cidr: string) => prefixes.find((p: any) => p.prefix === cidr);
  return {
    states,
    vms,
    clusters,
    tasks,
    backups,
    snapshots,
    replications,
    routines,
    state,
    vm,
    diskOf,
    disksOf,
    ifaceOf,
    macsOf,
    ipsOf,
    ip,
    device,
    devIface,
    node,
    storageNamed,
    vlan,
    prefix,
  };
}

const LONG_NAME = "build-runner-with-a-name-longer-than-the-inventory-allows-for-a-vm-xyz";

Deno.test("e2e sync mapping: every hypervisor field arrives where docs/sync.md says, and follows its changes and removals", async () => {
  // Seed: pve1 and pve2; qemu 100 (pve1, tags prod;web, snapshot before-upgrade, a backup),
  // qemu 101 (pve2), 102 (pve1, a backup), 103 (pve2), 104 (pve1, running, its guest agent
  // reporting addresses); lxc 105 (pve2); storages local, local-lvm, nfs1 (shared).
  const world = await syncWorld("nodes=2,vms=5,cts=1,storages=3", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const hv = world.hypervisor;

    // ---- By hand, upstream: one change per field the sync maps. ----
    await hv("PUT", "/nodes/pve1/qemu/100/config", {
      name: LONG_NAME,
      memory: "3000",
      cores: "2",
      sockets: "2",
      tags: "prod;db",
      onboot: "1",
      agent: "enabled=1,fstrim_cloned_disks=1",
      scsi1: "local-lvm:vm-100-disk-7,size=512M",
      sata1: "local-lvm:vm-100-disk-8,size=1T",
      ide2: "local:iso/debian-13.1.0-amd64-netinst.iso,media=cdrom",
      net0: "virtio=bc:24:11:aa:bb:01,bridge=vmbr1,tag=31",
      net1: "e1000=BC:24:11:AA:BB:02,bridge=vmbr0,firewall=1",
      ipconfig0: "ip=10.77.0.5/24,gw=10.77.0.1,ip6=2001:db8::5/64",
      ipconfig1: "ip=10.77.1.5/24",
    });
    await hv("POST", "/nodes/pve1/qemu/100/status/start");
    await hv("PUT", "/nodes/pve2/qemu/101/config", {
      name: LONG_NAME,
      delete: "memory",
      cores: "4",
      sockets: "1",
      vcpus: "3",
      onboot: "0",
    });
    await hv("POST", "/nodes/pve2/qemu/101/template");
    await hv("PUT", "/nodes/pve2/lxc/105/config", {
      hostname: "db1",
      searchdomain: "corp.example",
      tags: "db",
      memory: "768",
      cores: "3",
      onboot: "1",
      rootfs: "local-lvm:vm-105-disk-0,size=4G",
      mp0: "local-lvm:vm-105-disk-1,mp=/srv,size=2G",
      net0:
        "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:AA:BB:03,ip=10.77.2.5/24,ip6=fd00::5/64,type=veth",
    });
    // Guest 103 without cores (Proxmox's default: 1 per socket) on two sockets.
    await hv("PUT", "/nodes/pve2/qemu/103/config", { delete: "cores", sockets: "2" });
    // A node VLAN interface on VLAN 1, the lowest there is.
    await hv("POST", "/nodes/pve1/network", { iface: "vmbr1.1", type: "vlan" });
    // Guest 104 runs with its agent on and no static address: the agent's addresses count.
    await hv("PUT", "/nodes/pve1/qemu/104/config", { ipconfig0: "ip=dhcp" });
    // Guest 102's config lists net1 before net0 (net0 removed and added again): NIC order is
    // by number all the same, so its primary IPv4 stays net0's.
    await hv("PUT", "/nodes/pve1/qemu/102/config", { delete: "net0" });
    await hv("PUT", "/nodes/pve1/qemu/102/config", {
      net1: "virtio=BC:24:11:AA:BB:21,bridge=vmbr0",
      ipconfig1: "ip=10.88.1.2/24",
    });
    await hv("PUT", "/nodes/pve1/qemu/102/config", {
      net0: "virtio=BC:24:11:AA:BB:20,bridge=vmbr0",
      agent: "0",
    });
    await hv("POST", "/storage", {
      storage: "tank",
      type: "dir",
      path: "/srv/tank",
      content: "iso,backup",
      nodes: "pve1",
      disable: "1",
    });
    await hv("POST", "/nodes/pve1/vzdump", {
      vmid: "100",
      storage: "local",
      protected: "1",
      "notes-template": "nightly {{guestname}}",
    });
    await hv("POST", "/nodes/pve1/qemu/100/snapshot", {
      snapname: "pre-patch",
      description: "Before patching",
      vmstate: "1",
    });
    await hv("POST", "/nodes/pve2/lxc/105/snapshot", { snapname: "ct-snap" });
    await hv("POST", "/cluster/replication", {
      id: "101-1",
      type: "local",
      target: "pve1",
      schedule: "*/30",
      rate: "12",
      comment: "to pve1",
      disable: "1",
      remove_job: "local",
    });
    // A job with nothing but what Proxmox requires: its defaults.
    await hv("POST", "/cluster/backup", {
      id: "backup-bbbb0002",
      schedule: "daily",
      storage: "local",
      all: "1",
    });
    await hv("POST", "/cluster/backup", {
      id: "backup-aaaa0001",
      node: "pve2",
      schedule: "mon 02:30",
      storage: "local",
      vmid: "100,105",
      "prune-backups": "keep-daily=7,keep-monthly=2,keep-all=0",
      enabled: "0",
      comment: "Nightly",
      "notes-template": "{{guestname}} nightly",
      bwlimit: "1000",
      zstd: "4",
      performance: "max-workers=3",
      fleecing: "enabled=1,storage=local-lvm",
      "repeat-missed": "1",
      "pbs-change-detection-mode": "data",
    });
    await hv("POST", "/cluster/sdn/vnets", {
      vnet: "vnet30",
      zone: "zone1",
      tag: "30",
      alias: "Backup net",
    });
    await hv("POST", "/cluster/sdn/vnets/vnet30/subnets", {
      subnet: "10.30.0.0/24",
      type: "subnet",
      gateway: "10.30.0.1",
    });
    // An untagged vnet, whose second subnet repeats vnet30's: the first vnet (by name) keeps it.
    await hv("POST", "/cluster/sdn/vnets", { vnet: "vnet40", zone: "evpn1" });
    await hv("POST", "/cluster/sdn/vnets/vnet40/subnets", {
      subnet: "10.40.0.0/24",
      type: "subnet",
    });
    await hv("POST", "/cluster/sdn/vnets/vnet40/subnets", {
      subnet: "10.30.0.0/24",
      type: "subnet",
    });
    await hv("POST", "/nodes/pve1/network", {
      iface: "bond0",
      type: "bond",
      slaves: "eno1 eno2",
      bond_mode: "active-backup",
      comments: "uplink bond",
      mtu: "9000",
      cidr: "10.50.0.5/24",
    });

    // Custom fields exist but the plugin setting is off: a run leaves them empty.
    const made = await world.backend("POST", "/extras/custom-fields/reconcile");
    assert.equal(made.status, 200, JSON.stringify(made.body));
    await fullUpdate(world);
    for (const v of (await readInventory(world)).vms) {
      assert.equal(v.custom_fields.hypervisor_vmid, null, `custom fields of ${v.name} stay empty`);
    }
    const on = await world.inventoryCall("PATCH", "plugins/service/settings/", {
      custom_fields_enabled: true,
    });
    assert.equal(on.status, 200, JSON.stringify(on.body));
    const { frames: filled } = await fullUpdate(world);

    // ---- Read back: one row per field. ----
    const inv = await readInventory(world);
    const upstream = {
      nodes: await hv("GET", "/nodes"),
      version: (await hv("GET", "/version")).version,
      storage1: await hv("GET", "/nodes/pve1/storage"),
      storage2: await hv("GET", "/nodes/pve2/storage"),
      backups: await hv("GET", "/nodes/pve1/storage/local/content", { content: "backup" }),
      snapshots: await hv("GET", "/nodes/pve1/qemu/100/snapshot"),
      tasks: await hv("GET", "/nodes/pve1/tasks", { limit: "500" }),
    };
    const pve1 = upstream.nodes.find((n: any) => n.node === "pve1");
    const nodeStorage = (list: any[], name: string) => list.find((s: any) => s.storage === name);
    const newBackup = upstream.backups.find((b: any) => b.vmid === 100 && b.protected === 1);
    const prePatch = upstream.snapshots.find((s: any) => s.name === "pre-patch");
    const vzdumpTask = upstream.tasks.find((t: any) => t.type === "vzdump" && t.id === "100");
    assert.ok(newBackup && prePatch && vzdumpTask, "upstream facts read");
    const [vm100, vm101, ct105] = [inv.vm(100), inv.vm(101), inv.vm(105)];
    const backup = inv.backups.find((b: any) => b.volid === newBackup.volid);
    const snap = inv.snapshots.find((s: any) => s.vmid === 100 && s.name === "pre-patch");
    const ctSnap = inv.snapshots.find((s: any) => s.vmid === 105 && s.name === "ct-snap");
    const repl = inv.replications.find((r: any) => r.replication_id === "101-1");
    const routine = inv.routines.find((r: any) => r.job_id === "backup-aaaa0001");
    const task = inv.tasks.find((t: any) => t.upid === vzdumpTask.upid);
    const tank = inv.storageNamed("tank");
    const nfs = inv.storageNamed("nfs1");
    const local = inv.storageNamed("local");
    const bond = inv.devIface("pve1", "bond0");
    const cf = (v: any) => v?.custom_fields ?? {};
    const primary4 = (v: any) => inv.ip(idOf(v?.primary_ip4))?.address ?? null;
    const primary6 = (v: any) => inv.ip(idOf(v?.primary_ip6))?.address ?? null;
    const addressesOf = (vmid: number) => inv.ipsOf(vmid).map((a: any) => a.address).sort();
    const [dbTag] = await world.inventory("extras/tags/?slug=db");
    const [hvRole] = await world.inventory("dcim/device-roles/?slug=hypervisor");
    expectRows([
      // virtual-machines: names (cut to 64, a clash takes " (2)" inside 64), sizes, status, tags.
      ["vm 100 name: the first 64 characters", vm100?.name, LONG_NAME.slice(0, 64)],
      ["vm 101 name: same name, later vmid", vm101?.name, `${LONG_NAME.slice(0, 60)} (2)`],
      ["ct 105 name: hostname", ct105?.name, "db1"],
      ["vm 100 memory (MB)", vm100?.memory, 3000],
      ["vm 101 memory: none in the config, the guest's maxmem", vm101?.memory, 512],
      ["ct 105 memory", ct105?.memory, 768],
      ["vm 100 vcpus: cores × sockets", vm100?.vcpus, 4],
      ["vm 101 vcpus: the vcpus setting", vm101?.vcpus, 3],
      ["ct 105 vcpus: cores", ct105?.vcpus, 3],
      ["vm 103 vcpus: no cores, two sockets", inv.vm(103)?.vcpus, 2],
      ["vm 100 status: running", valueOf(vm100?.status), "active"],
      ["vm 101 status: stopped", valueOf(vm101?.status), "offline"],
      ["vm 100 tags: synced + guest tags", slugs(vm100), ["bridgebox-synced", "db", "prod"]],
      ["vm 101 tags: a template", slugs(vm101), ["bridgebox-synced", "bridgebox-template"]],
      ["vm 100 start_on_boot", valueOf(vm100?.start_on_boot), "on"],
      ["vm 101 start_on_boot", valueOf(vm101?.start_on_boot), "off"],
      ["vm 100 device: its node", idOf(vm100?.device), inv.device("pve1")?.id],
      ["vm 101 device: its node", idOf(vm101?.device), inv.device("pve2")?.id],
      ["vm 100 role", vm100?.role?.slug, "virtual-machine"],
      ["ct 105 role", ct105?.role?.slug, "container"],
      ["vm 100 type (NetBox 4.6)", vm100?.virtual_machine_type?.slug, "qemu-virtual-machine"],
      ["ct 105 type (NetBox 4.6)", ct105?.virtual_machine_type?.slug, "lxc-container"],
      ["the nodes' role: no VM role", hvRole?.vm_role, false],
      ["ct 105 tags", slugs(ct105), ["bridgebox-synced", "db"]],
      ["tag db: the sync's, says its description", dbTag?.description, GUEST_TAG_DESCRIPTION],
      ["vm 100 disk: sum of its disks", vm100?.disk, 8192 + 512 + 1048576],
      ["ct 105 disk: rootfs + mount point", ct105?.disk, 4096 + 2048],
      // custom fields (setting on)
      ["vm 100 cf vmid", cf(vm100).hypervisor_vmid, 100],
      ["ct 105 cf type", cf(ct105).hypervisor_vm_type, "lxc"],
      ["vm 100 cf start at boot", cf(vm100).hypervisor_start_at_boot, true],
      ["vm 101 cf start at boot", cf(vm101).hypervisor_start_at_boot, false],
      ["vm 100 cf agent (enabled=1)", cf(vm100).hypervisor_qemu_agent, true],
      ["vm 104 cf agent (1)", cf(inv.vm(104)).hypervisor_qemu_agent, true],
      ["vm 102 cf agent (0)", cf(inv.vm(102)).hypervisor_qemu_agent, false],
      ["ct 105 cf agent", cf(ct105).hypervisor_qemu_agent, false],
      ["ct 105 cf unprivileged", cf(ct105).hypervisor_unprivileged, true],
      ["vm 100 cf unprivileged", cf(vm100).hypervisor_unprivileged, false],
      ["vm 100 cf last synced", typeof cf(vm100).hypervisor_last_synced, "string"],
      // sync-state
      ["state 100 node", inv.state(100)?.node_name, "pve1"],
      ["state 105 type", valueOf(inv.state(105)?.vm_type), "lxc"],
      ["state 101 present", valueOf(inv.state(101)?.status), "present"],
      ["state 100 name", inv.state(100)?.name, LONG_NAME.slice(0, 64)],
      // vm-disks: sizes in MB, the volume as description, CD-ROMs at size 0.
      ["vm 100 disks", inv.disksOf(100), ["ide2", "sata1", "scsi0", "scsi1"]],
      ["vm 100 scsi0 size (8G)", inv.diskOf(100, "scsi0")?.size, 8192],
      ["vm 100 scsi1 size (512M)", inv.diskOf(100, "scsi1")?.size, 512],
      ["vm 100 sata1 size (1T)", inv.diskOf(100, "sata1")?.size, 1048576],
      [
        "vm 100 scsi1 description",
        inv.diskOf(100, "scsi1")?.description,
        "local-lvm:vm-100-disk-7",
      ],
      ["vm 100 ide2 size", inv.diskOf(100, "ide2")?.size, 0],
      [
        "vm 100 ide2 description",
        inv.diskOf(100, "ide2")?.description,
        "CD-ROM: local:iso/debian-13.1.0-amd64-netinst.iso",
      ],
      ["ct 105 disks", inv.disksOf(105), ["mp0", "rootfs"]],
      ["ct 105 mp0 size", inv.diskOf(105, "mp0")?.size, 2048],
      // vm-interfaces: MAC (upper case, any NIC model), bridge, VLAN tag (1-4094 only).
      ["vm 100 net0 MAC", inv.macsOf(100, "net0"), ["BC:24:11:AA:BB:01"]],
      ["vm 100 net0 primary MAC", inv.ifaceOf(100, "net0")?.mac_address, "BC:24:11:AA:BB:01"],
      ["vm 100 net1 MAC (e1000 model)", inv.macsOf(100, "net1"), ["BC:24:11:AA:BB:02"]],
      ["vm 100 net0 description", inv.ifaceOf(100, "net0")?.description, "bridge vmbr1"],
      ["vm 100 net0 mode", valueOf(inv.ifaceOf(100, "net0")?.mode), "access"],
      ["vm 100 net0 VLAN", inv.ifaceOf(100, "net0")?.untagged_vlan?.vid, 31],
      ["VLAN 31 name", inv.vlan(31)?.name, "VLAN 31"],
      ["vm 100 net1 mode (no tag)", valueOf(inv.ifaceOf(100, "net1")?.mode), null],
      ["vm 100 net1 VLAN", inv.ifaceOf(100, "net1")?.untagged_vlan ?? null, null],
      ["ct 105 net0 description", inv.ifaceOf(105, "net0")?.description, "eth0, bridge vmbr0"],
      ["ct 105 net0 MAC (hwaddr)", inv.macsOf(105, "net0"), ["BC:24:11:AA:BB:03"]],
      // ip-addresses: static ones of each NIC; the first of each family is primary.
      ["vm 100 addresses", addressesOf(100), ["10.77.0.5/24", "10.77.1.5/24", "2001:db8::5/64"]],
      ["vm 100 primary IPv4", primary4(vm100), "10.77.0.5/24"],
      ["vm 100 primary IPv6", primary6(vm100), "2001:db8::5/64"],
      ["ct 105 addresses", addressesOf(105), ["10.77.2.5/24", "fd00::5/64"]],
      ["ct 105 primary IPv4", primary4(ct105), "10.77.2.5/24"],
      ["ct 105 primary IPv6", primary6(ct105), "fd00::5/64"],
      [
        "ct 105 DNS name: hostname.searchdomain",
        inv.ipsOf(105).map((a: any) => a.dns_name),
        ["db1.corp.example", "db1.corp.example"],
      ],
      ["vm 101 addresses (a stopped template)", addressesOf(101), ["10.0.2.11/16"]],
      ["vm 104 addresses: the agent's, not its link-local", addressesOf(104), ["10.0.2.14/16"]],
      ["vm 104 DNS name: the agent's host name", inv.ipsOf(104)[0]?.dns_name, "vm-104"],
      ["vm 104 primary IPv4", primary4(inv.vm(104)), "10.0.2.14/16"],
      ["vm 104 status", valueOf(inv.vm(104)?.status), "active"],
      ["vm 102 addresses", addressesOf(102), ["10.0.2.12/16", "10.88.1.2/24"]],
      ["vm 102 primary IPv4: net0's, listed after net1", primary4(inv.vm(102)), "10.0.2.12/16"],
      // devices: description from /nodes and /version, plugin node and cluster facts.
      [
        "device pve1 description",
        inv.device("pve1")?.description,
        `Proxmox VE ${upstream.version} node, ${pve1.maxcpu} CPUs, ${
          (pve1.maxmem / 1024 ** 3).toFixed(1)
        } GiB RAM`,
      ],
      ["device pve1 status", valueOf(inv.device("pve1")?.status), "active"],
      ["device pve1 primary IPv4", inv.device("pve1")?.primary_ip4?.address, "10.0.0.11/24"],
      ["node pve1 ip", inv.node("pve1")?.ip_address, "10.0.0.11"],
      ["node pve2 node_id", inv.node("pve2")?.node_id, 2],
      ["node pve1 local", inv.node("pve1")?.local, true],
      ["node pve2 local", inv.node("pve2")?.local, false],
      ["node pve1 online", inv.node("pve1")?.online, true],
      ["node pve1 maxcpu", inv.node("pve1")?.maxcpu, pve1.maxcpu],
      ["node pve1 version", inv.node("pve1")?.version, upstream.version],
      ["node pve1 device", idOf(inv.node("pve1")?.device), inv.device("pve1")?.id],
      ["cluster mode", valueOf(inv.clusters[0]?.mode), "cluster"],
      ["cluster name: the PVE cluster's", inv.clusters[0]?.name, "bridgebox"],
      ["virtualization cluster name", inv.device("pve1")?.cluster?.name, "bridgebox"],
      ["cluster quorate", inv.clusters[0]?.quorate, true],
      [
        "cluster nodes online/total",
        [inv.clusters[0]?.nodes_online, inv.clusters[0]?.nodes_total],
        [
          2,
          2,
        ],
      ],
      // network-interfaces: type, MTU, comments, addresses.
      ["pve1 bond0 type", valueOf(bond?.type), "lag"],
      ["pve1 bond0 mtu", bond?.mtu, 9000],
      ["pve1 bond0 description: comments", bond?.description, "uplink bond"],
      ["pve1 bond0 enabled", bond?.enabled, true],
      ["pve1 vmbr0 type", valueOf(inv.devIface("pve1", "vmbr0")?.type), "bridge"],
      ["pve1 vmbr0 description: ports", inv.devIface("pve1", "vmbr0")?.description, "ports eno1"],
      ["pve1 eno1 type", valueOf(inv.devIface("pve1", "eno1")?.type), "other"],
      ["pve1 vmbr1.10 type", valueOf(inv.devIface("pve1", "vmbr1.10")?.type), "virtual"],
      ["pve1 vmbr1.10 VLAN", inv.devIface("pve1", "vmbr1.10")?.untagged_vlan?.vid, 10],
      ["pve1 vmbr1.1 VLAN", inv.devIface("pve1", "vmbr1.1")?.untagged_vlan?.vid, 1],
      ["pve1 vmbr1.1 mode", valueOf(inv.devIface("pve1", "vmbr1.1")?.mode), "access"],
      // sdn: tagged vnets are VLANs, subnets prefixes (a repeated subnet: its first vnet).
      ["VLAN 30 name: its vnet", inv.vlan(30)?.name, "vnet30"],
      ["prefix 10.30.0.0/24 VLAN", inv.prefix("10.30.0.0/24")?.vlan?.vid, 30],
      [
        "prefix 10.30.0.0/24 description",
        inv.prefix("10.30.0.0/24")?.description,
        "SDN vnet vnet30 (zone zone1): Backup net",
      ],
      ["prefix 10.40.0.0/24 VLAN (untagged vnet)", inv.prefix("10.40.0.0/24")?.vlan ?? null, null],
      [
        "prefix 10.40.0.0/24 description",
        inv.prefix("10.40.0.0/24")?.description,
        "SDN vnet vnet40 (zone evpn1)",
      ],
      ["prefix 10.30.0.0/24 status", valueOf(inv.prefix("10.30.0.0/24")?.status), "active"],
      // storage: config fields; sizes summed over nodes, a shared storage counted once.
      ["storage tank type", tank?.storage_type, "dir"],
      ["storage tank content", tank?.content, ["backup", "iso"]],
      ["storage tank path", tank?.path, "/srv/tank"],
      ["storage tank nodes", tank?.nodes, ["pve1"]],
      ["storage tank enabled", tank?.enabled, false],
      ["storage nfs1 shared", nfs?.shared, true],
      ["storage nfs1 nodes", nfs?.nodes, ["pve1", "pve2"]],
      ["storage nfs1 total: once", nfs?.total, nodeStorage(upstream.storage1, "nfs1")?.total],
      [
        "storage local used: both nodes",
        local?.used,
        nodeStorage(upstream.storage1, "local").used + nodeStorage(upstream.storage2, "local").used,
      ],
      ["storage local status", valueOf(local?.status), "active"],
      // vm-backups
      ["backup vmid", backup?.vmid, 100],
      ["backup vm", idOf(backup?.virtual_machine), vm100?.id],
      ["backup type", valueOf(backup?.vm_type), "qemu"],
      ["backup format", backup?.format, newBackup.format],
      ["backup size", backup?.size, newBackup.size],
      ["backup notes", backup?.notes, newBackup.notes],
      ["backup protected", backup?.protected, true],
      ["backup creation time", Date.parse(backup?.creation_time), newBackup.ctime * 1000],
      ["backup storage", idOf(backup?.storage), local?.id],
      ["backup node", idOf(backup?.node), inv.node("pve1")?.id],
      [
        "backup of vm 102 (seeded) protected",
        inv.backups.find((b: any) => b.vmid === 102)?.protected,
        false,
      ],
      // vm-snapshots
      ["snapshot description", snap?.description, "Before patching"],
      ["snapshot parent", snap?.parent, "before-upgrade"],
      ["snapshot vmstate", snap?.vmstate, true],
      ["snapshot time", Date.parse(snap?.snaptime), prePatch.snaptime * 1000],
      ["snapshot vm", idOf(snap?.virtual_machine), vm100?.id],
      ["snapshot type", valueOf(snap?.vm_type), "qemu"],
      ["snapshot of ct 105 type", valueOf(ctSnap?.vm_type), "lxc"],
      ["snapshot of ct 105 node", idOf(ctSnap?.node), inv.node("pve2")?.id],
      // replications
      ["replication guest", repl?.guest, 101],
      ["replication vm", idOf(repl?.virtual_machine), vm101?.id],
      ["replication jobnum", repl?.jobnum, 1],
      ["replication target", repl?.target, "pve1"],
      ["replication schedule", repl?.schedule, "*/30"],
      ["replication rate", repl?.rate, 12],
      ["replication disabled", repl?.disable, true],
      ["replication comment", repl?.comment, "to pve1"],
      ["replication being removed", valueOf(repl?.remove_job), "local"],
      [
        "replication 100-0 (seeded) not",
        valueOf(inv.replications.find((r: any) => r.replication_id === "100-0")?.remove_job),
        null,
      ],
      // backup-routines
      ["routine enabled", routine?.enabled, false],
      ["routine schedule", routine?.schedule, "mon 02:30"],
      ["routine node", idOf(routine?.node), inv.node("pve2")?.id],
      ["routine storage", idOf(routine?.storage), local?.id],
      ["routine selection", routine?.selection, [100, 105]],
      ["routine keep daily/monthly", [routine?.keep_daily, routine?.keep_monthly], [7, 2]],
      ["routine keep last (unset)", routine?.keep_last, null],
      ["routine keep all", routine?.keep_all, false],
      ["routine notes template", routine?.notes_template, "{{guestname}} nightly"],
      ["routine bwlimit, zstd, workers", [routine?.bwlimit, routine?.zstd, routine?.io_workers], [
        1000,
        4,
        3,
      ]],
      ["routine fleecing", routine?.fleecing, "enabled=1,storage=local-lvm"],
      [
        "routine fleecing storage",
        idOf(routine?.fleecing_storage),
        inv.storageNamed("local-lvm")?.id,
      ],
      ["routine repeat missed", routine?.repeat_missed, true],
      ["routine change detection", valueOf(routine?.pbs_change_detection_mode), "data"],
      ["routine comment", routine?.comment, "Nightly"],
      [
        "minimal routine: enabled, no node, no retention, default mode",
        ((r: any) => [
          r?.enabled,
          r?.node ?? null,
          r?.keep_last,
          r?.keep_all,
          r?.repeat_missed,
          valueOf(r?.pbs_change_detection_mode),
        ])(inv.routines.find((r: any) => r.job_id === "backup-bbbb0002")),
        [true, null, null, null, false, "default"],
      ],
      [
        "routine of every guest (all=1): no selection",
        inv.routines.find((r: any) => r.job_id === "backup-4f1c2a7e")?.selection,
        [],
      ],
      // task-history
      ["task type", task?.task_type, "vzdump"],
      ["task vmid", task?.vmid, 100],
      ["task vm", idOf(task?.virtual_machine), vm100?.id],
      ["task user", task?.username, "root@pam"],
      ["task node", [task?.node_name, idOf(task?.node)], ["pve1", inv.node("pve1")?.id]],
      ["task status", [valueOf(task?.status), task?.exitstatus], [
        vzdumpTask.status,
        vzdumpTask.status,
      ]],
      ["task start", Date.parse(task?.starttime), vzdumpTask.starttime * 1000],
      ["task end", Date.parse(task?.endtime), vzdumpTask.endtime * 1000],
      ["task pid", task?.pid, vzdumpTask.pid],
    ]);

    // Progress as the console shows it: each stage ends at its total.
    const progress = filled.filter((f) => f.event === "step" && f.data.status === "progress")
      .map((f) => f.data);
    const stepsWithProgress = [...new Set(progress.map((p) => p.step))];
    assert.ok(stepsWithProgress.length >= 10, JSON.stringify(stepsWithProgress));
    for (const step of stepsWithProgress) {
      const last = progress.filter((p) => p.step === step).at(-1);
      assert.equal(last.progress.current, last.progress.total, JSON.stringify(last));
    }
    assert.ok(
      progress.some((p) =>
        p.step === "virtual-machines" && /guest configs/.test(p.message) &&
        p.progress.current === 6 && p.progress.total === 6
      ),
      "the read of the guest configs is reported",
    );
    // The frame saying what it writes (current 0) comes even right after the read's last one.
    assert.ok(
      progress.some((p) =>
        p.step === "virtual-machines" && p.progress.current === 0 && p.progress.total === 6
      ),
      JSON.stringify(progress.filter((p) => p.step === "virtual-machines")),
    );

    // ---- By hand, in the inventory: edits of fields the hypervisor owns (the default). ----
    const appliance = await world.inventoryCall("POST", "dcim/device-roles/", {
      name: "Appliance",
      slug: "appliance",
      color: "00ff00",
      vm_role: true,
    });
    assert.equal(appliance.status, 201, JSON.stringify(appliance.body));
    const edit = async (path: string, body: Record<string, unknown>) => {
      const r = await world.inventoryCall("PATCH", path, body);
      assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
    };
    const handTag = await world.inventoryCall("POST", "extras/tags/", {
      name: "hand-set",
      slug: "hand-set",
    });
    assert.equal(handTag.status, 201, JSON.stringify(handTag.body));
    await edit(`virtualization/virtual-machines/${vm100.id}/`, {
      name: "renamed-by-hand",
      role: appliance.body.id,
      tags: [...vm100.tags.map((t: any) => t.id), handTag.body.id],
    });
    await edit(`virtualization/virtual-disks/${inv.diskOf(100, "scsi0").id}/`, {
      description: "hand-written",
    });
    // Two VLANs 33 made by hand in the cluster's site: the oldest is referenced, neither changed.
    const site = idOf(inv.device("pve1")?.site);
    const handVlans = [];
    for (const name of ["hand 33 a", "hand 33 b"]) {
      const r = await world.inventoryCall("POST", "ipam/vlans/", { vid: 33, name, site });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      handVlans.push(r.body);
    }
    // A node that left the cluster, as the sync would have left it: a device with the sync's tag
    // and the plugin's node record for it.
    const synced = (await world.inventory("extras/tags/?slug=bridgebox-synced"))[0];
    const gone = await world.inventoryCall("POST", "dcim/devices/", {
      name: "pve9",
      device_type: idOf(inv.device("pve1")?.device_type),
      role: idOf(inv.device("pve1")?.role),
      site,
      cluster: idOf(inv.device("pve1")?.cluster),
      status: "active",
      tags: [synced.id],
    });
    assert.equal(gone.status, 201, JSON.stringify(gone.body));
    const goneNode = await world.inventoryCall("POST", "plugins/service/nodes/", {
      endpoint: idOf(inv.node("pve1")?.endpoint),
      cluster: idOf(inv.node("pve1")?.cluster),
      name: "pve9",
      online: true,
      device: gone.body.id,
    });
    assert.equal(goneNode.status, 201, JSON.stringify(goneNode.body));
    // An address in a VRF: not in the global table, so no holder of the same address there.
    const vrf = await world.inventoryCall("POST", "ipam/vrfs/", { name: "tenant-a" });
    assert.equal(vrf.status, 201, JSON.stringify(vrf.body));
    const inVrf = await world.inventoryCall("POST", "ipam/ip-addresses/", {
      address: "10.77.5.5/24",
      vrf: vrf.body.id,
      status: "reserved",
    });
    assert.equal(inVrf.status, 201, JSON.stringify(inVrf.body));
    // An interface an earlier version named by the container's `name=` (eth0).
    const ctNet0 = inv.ifaceOf(105, "net0");
    await edit(`virtualization/interfaces/${ctNet0.id}/`, { name: "eth0" });

    // ---- Upstream again: changes and removals. ----
    await hv("PUT", "/nodes/pve1/qemu/100/config", {
      memory: "4096",
      tags: "prod",
      net0: "virtio=BC:24:11:AA:BB:09,bridge=vmbr1,tag=33",
      // net1's address moves to net0; net0's goes.
      ipconfig0: "ip=10.77.1.5/24,gw=10.77.1.1,ip6=2001:db8::5/64",
      delete: "ipconfig1,scsi1",
    });
    // The last guest with the tag db drops it too.
    await hv("PUT", "/nodes/pve2/lxc/105/config", {
      delete: "tags",
      net0:
        "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:AA:BB:03,ip=10.77.2.6/24,ip6=fd00::5/64,type=veth",
    });
    await hv("PUT", "/nodes/pve2/qemu/103/config", { ipconfig0: "ip=10.77.5.5/24" });
    await hv("DELETE", "/nodes/pve2/qemu/101");
    await hv("DELETE", "/storage/tank");
    const volume = `/nodes/pve1/storage/local/content/${encodeURIComponent(newBackup.volid)}`;
    await hv("PUT", volume, { protected: "0" });
    await hv("DELETE", volume);
    await hv("DELETE", "/nodes/pve1/qemu/100/snapshot/pre-patch");
    await hv("DELETE", "/cluster/backup/backup-aaaa0001");
    const vnet40 = await hv("GET", "/cluster/sdn/vnets/vnet40/subnets");
    const only40 = vnet40.find((s: any) => s.cidr === "10.40.0.0/24");
    await hv("DELETE", `/cluster/sdn/vnets/vnet40/subnets/${encodeURIComponent(only40.subnet)}`);
    await hv("DELETE", "/nodes/pve1/network/bond0");
    if ((await hv("GET", "/cluster/replication")).some((r: any) => r.id === "101-1")) {
      await hv("DELETE", "/cluster/replication/101-1");
    }

    // The dry run's plan: each change an update, each removal a mark or a delete; nothing written.
    const before = await readInventory(world);
    const movedIp = before.ipsOf(100).find((a: any) => a.address === "10.77.1.5/24");
    const { done: dry } = await fullUpdate(world, "?dry_run=true");
    assert.equal(dry.dry_run, true);
    const plan = dry.plan as any[];
    const planned = (path: string, id: number | undefined) =>
      plan.filter((p) => p.path === path && p.id === id).map((p) => p.action).sort();
    const oldBackup = before.backups.find((b: any) => b.volid === newBackup.volid);
    expectRows([
      [
        "plan: vm 100 (its fields, then its primary IP)",
        [...new Set(planned("virtualization/virtual-machines/", vm100?.id))],
        ["update"],
      ],
      [
        "plan: vm 100 memory",
        plan.find((p) => p.id === vm100?.id && p.changes?.memory)?.changes.memory,
        { old: 3000, new: 4096 },
      ],
      ["plan: vm 101 gone", planned("virtualization/virtual-machines/", vm101?.id), ["mark"]],
      ["plan: backup gone", planned("plugins/service/backups/", oldBackup?.id), ["mark"]],
      [
        "plan: backup status",
        plan.find((p) => p.path === "plugins/service/backups/" && p.id === oldBackup?.id)?.changes,
        { status: { old: "active", new: "stale" } },
      ],
      ["plan: storage gone", planned("plugins/service/storage/", tank?.id), ["mark"]],
      ["plan: snapshot gone", planned("plugins/service/snapshots/", snap?.id), ["mark"]],
      ["plan: routine gone", planned("plugins/service/backup-routines/", routine?.id), ["mark"]],
      ["plan: replication gone", planned("plugins/service/replications/", repl?.id), ["mark"]],
      [
        "plan: disk scsi1",
        planned("virtualization/virtual-disks/", before.diskOf(100, "scsi1")?.id),
        ["delete"],
      ],
      ["plan: bond0", planned("dcim/interfaces/", bond?.id), ["delete"]],
      [
        "plan: vm 103's new address (the VRF's copy holds nothing in the global table)",
        plan.filter((p) => p.path === "ipam/ip-addresses/" && p.object.endsWith("10.77.5.5/24"))
          .map((p) => p.action),
        ["create"],
      ],
      ["plan: device pve9 gone", planned("dcim/devices/", gone.body.id), ["mark"]],
      ["plan: node pve9 gone", planned("plugins/service/nodes/", goneNode.body.id), ["mark"]],
      [
        "plan: node pve9 online",
        plan.find((p) => p.id === goneNode.body.id && p.path === "plugins/service/nodes/")
          ?.changes?.online,
        { old: true, new: false },
      ],
    ]);
    const unchanged = await readInventory(world);
    assert.deepEqual(unchanged.vms, before.vms, "a dry run writes nothing");
    assert.deepEqual(unchanged.backups, before.backups, "a dry run writes nothing");

    await fullUpdate(world);
    const now = await readInventory(world);
    const [vm100b, vm101b, ct105b] = [now.vm(100), now.vm(101), now.vm(105)];
    const allMacs = (await world.inventory("dcim/mac-addresses/")).map((m: any) => m.mac_address);
    const addressesNow = (vmid: number) => now.ipsOf(vmid).map((a: any) => a.address).sort();
    const status = (list: any[], pick: (o: any) => boolean) => valueOf(list.find(pick)?.status);
    expectRows([
      ["vm 100 memory", vm100b?.memory, 4096],
      ["vm 100 tags: a guest tag removed upstream goes, a hand-set one stays", slugs(vm100b), [
        "bridgebox-synced",
        "hand-set",
        "prod",
      ]],
      ["ct 105 tags: its last guest tag went too", slugs(ct105b), ["bridgebox-synced"]],
      ["vm 100 disks: scsi1 gone", now.disksOf(100), ["ide2", "sata1", "scsi0"]],
      ["vm 100 disk: sum of the rest", vm100b?.disk, 8192 + 1048576],
      ["vm 100 addresses: net0's old one gone", addressesNow(100), [
        "10.77.1.5/24",
        "2001:db8::5/64",
      ]],
      [
        "vm 100 10.77.1.5/24: the same address, moved to net0",
        now.ipsOf(100).filter((a: any) => a.address === "10.77.1.5/24")
          .map((a: any) => [a.id, a.assigned_object_id]),
        [[movedIp?.id, now.ifaceOf(100, "net0")?.id]],
      ],
      [
        "vm 100 primary IPv4: net0's new one",
        now.ip(idOf(vm100b?.primary_ip4))?.address,
        "10.77.1.5/24",
      ],
      ["vm 100 net0 MAC: the new one", now.macsOf(100, "net0"), ["BC:24:11:AA:BB:09"]],
      ["vm 100 net0 primary MAC", now.ifaceOf(100, "net0")?.mac_address, "BC:24:11:AA:BB:09"],
      ["the old MAC", allMacs.includes("BC:24:11:AA:BB:01"), false],
      ["ct 105 addresses: moved", addressesNow(105), ["10.77.2.6/24", "fd00::5/64"]],
      ["ct 105 primary IPv4", now.ip(idOf(ct105b?.primary_ip4))?.address, "10.77.2.6/24"],
      ["vm 101: same VM", vm101b?.id, vm101?.id],
      ["vm 101 status: gone", valueOf(vm101b?.status), "decommissioning"],
      ["vm 101 tags: missing", slugs(vm101b).includes("bridgebox-missing"), true],
      ["state 101", valueOf(now.state(101)?.status), "missing"],
      ["storage tank", valueOf(now.storageNamed("tank")?.status), "stale"],
      ["storage local", valueOf(now.storageNamed("local")?.status), "active"],
      ["backup gone", status(now.backups, (b) => b.volid === newBackup.volid), "stale"],
      ["backup of vm 102 kept", status(now.backups, (b) => b.vmid === 102), "active"],
      ["snapshot gone", status(now.snapshots, (s) => s.id === snap?.id), "stale"],
      [
        "snapshot before-upgrade kept",
        status(now.snapshots, (s) => s.name === "before-upgrade"),
        "active",
      ],
      ["replication gone", status(now.replications, (r) => r.id === repl?.id), "stale"],
      ["routine gone", status(now.routines, (r) => r.id === routine?.id), "stale"],
      [
        "routine weekly kept",
        status(now.routines, (r) => r.job_id === "backup-4f1c2a7e"),
        "active",
      ],
      ["prefix 10.40.0.0/24", valueOf(now.prefix("10.40.0.0/24")?.status), "deprecated"],
      ["prefix 10.30.0.0/24", valueOf(now.prefix("10.30.0.0/24")?.status), "active"],
      ["pve1 bond0 gone", now.devIface("pve1", "bond0") ?? null, null],
      ["task kept (history)", now.tasks.some((t: any) => t.upid === vzdumpTask.upid), true],
      ["vm 103 addresses: created in the global table", addressesNow(103), ["10.77.5.5/24"]],
      [
        "the VRF's 10.77.5.5/24: left as it was",
        ((r: any) => [idOf(r?.vrf), r?.assigned_object_id ?? null, valueOf(r?.status)])(
          (await world.inventoryCall("GET", `ipam/ip-addresses/${inVrf.body.id}/`)).body,
        ),
        [vrf.body.id, null, "reserved"],
      ],
      ["vm 100 name: put back", vm100b?.name, LONG_NAME.slice(0, 64)],
      ["vm 100 role: put back", vm100b?.role?.slug, "virtual-machine"],
      [
        "vm 100 scsi0 description: put back",
        now.diskOf(100, "scsi0")?.description,
        "local-lvm:vm-100-disk-0",
      ],
      ["ct 105 eth0 renamed net0, not made again", now.ifaceOf(105, "net0")?.id, ctNet0.id],
      ["ct 105 eth0 gone", now.ifaceOf(105, "eth0") ?? null, null],
      [
        "vm 100 net0 VLAN: the oldest hand-made 33",
        now.ifaceOf(100, "net0")?.untagged_vlan?.id,
        handVlans[0].id,
      ],
      [
        "VLANs 33: the hand-made two, unchanged",
        (await world.inventory("ipam/vlans/?vid=33")).map((v: any) => [v.id, v.name, slugs(v)]),
        handVlans.map((v: any) => [v.id, v.name, []]),
      ],
      ["device pve9: gone", valueOf(now.device("pve9")?.status), "decommissioning"],
      ["device pve9 tags", slugs(now.device("pve9")), ["bridgebox-missing", "bridgebox-synced"]],
      ["node pve9 offline", now.node("pve9")?.online, false],
      ["device pve1 still active", valueOf(now.device("pve1")?.status), "active"],
    ]);

    // primary_ip_preference: one family's primary, the other's only for a guest without it.
    const primaries = async () => {
      const inv = await readInventory(world);
      return [100, 104].map((vmid) => {
        const vm = inv.vm(vmid);
        return [
          inv.ip(idOf(vm?.primary_ip4))?.address ?? null,
          inv.ip(idOf(vm?.primary_ip6))?.address ?? null,
        ];
      });
    };
    await fullUpdate(world, "?primary_ip_preference=v4");
    const v4 = await primaries();
    // The endpoint's policy says v6; a run's query wins over it.
    const [copy] = (await world.backend("GET", "/hypervisor/endpoints")).body;
    const policy = await world.backend("PUT", `/hypervisor/endpoints/${copy.id}`, {
      name: copy.name,
      ip: "127.0.0.1",
      port: world.port,
      use_https: false,
      username: "root@pam",
      sync_policy: { primary_ip_preference: "v6" },
    });
    assert.equal(policy.status, 200, JSON.stringify(policy.body));
    await fullUpdate(world);
    const v6 = await primaries();
    await fullUpdate(world, "?primary_ip_preference=both");
    const both = await primaries();
    expectRows([
      ["v4: vm 100", v4[0], ["10.77.1.5/24", null]],
      ["v4: vm 104", v4[1], ["10.0.2.14/16", null]],
      ["v6: vm 100", v6[0], [null, "2001:db8::5/64"]],
      ["v6: vm 104 has no IPv6: its IPv4", v6[1], ["10.0.2.14/16", null]],
      ["both (the query over the policy): vm 100", both[0], ["10.77.1.5/24", "2001:db8::5/64"]],
    ]);

    // A policy naming a role VMs cannot have (the nodes' role): one error naming it; the VMs
    // keep theirs and nothing is written for them (no empty update, no planned change).
    const badRole = await world.backend("PUT", `/hypervisor/endpoints/${copy.id}`, {
      name: copy.name,
      ip: "127.0.0.1",
      port: world.port,
      use_https: false,
      username: "root@pam",
      sync_policy: { qemu_role: "hypervisor" },
    });
    assert.equal(badRole.status, 200, JSON.stringify(badRole.body));
    for (const query of ["?dry_run=true", ""]) {
      const frames = await world.stream(`/virtualization/virtual-machines/create/stream${query}`);
      const done = completeOf(frames);
      assert.deepEqual(done.errors.map((e: any) => e.object), ["device role hypervisor"]);
      const vmStage = done.stages.find((st: any) => st.step === "virtual-machines").result;
      assert.equal(vmStage.updated, 0, `${query}: ${JSON.stringify(vmStage)}`);
      assert.deepEqual(
        (done.plan ?? []).filter((p: any) => p.path === "virtualization/virtual-machines/"),
        [],
      );
    }
    assert.equal((await readInventory(world)).vm(100)?.role?.slug, "virtual-machine");
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync mapping: conflicts past 20 in a stage are not framed one by one; the run stays ok", async () => {
  // Two endpoints on one mock: the second meets each of the 22 guest addresses the first wrote.
  const world = await syncWorld("nodes=1,vms=22,cts=0,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("east");
    const west = await world.addHypervisorCopy("west");
    const optional = "stage_task_history=false&stage_vm_backups=false&stage_vm_snapshots=false";
    const { frames, done } = await fullUpdate(world, `?${optional}`);
    const guestConflicts = frames.filter((f) =>
      f.event === "conflict" && f.data.step === "ip-addresses"
    ).map((f) => f.data);
    assert.equal(guestConflicts.length, 20, JSON.stringify(guestConflicts.map((c) => c.object)));
    assert.ok(guestConflicts.every((c) => c.endpoint_id === west));
    assert.deepEqual(
      done.conflicts.filter((c: any) => c.step === "ip-addresses"),
      guestConflicts,
    );
    // The seeded SDN subnets: east's prefixes, reported for west, never taken over.
    const sdn = frames.filter((f) => f.event === "conflict" && f.data.step === "sdn");
    assert.deepEqual(
      sdn.map((f) => f.data.object.split(" ")[1]).sort(),
      ["10.10.0.0/24", "10.20.0.0/24", "192.168.100.0/24"],
    );
    const prefixes = await world.inventory("ipam/prefixes/");
    assert.equal(prefixes.length, 3);
    assert.equal(new Set(prefixes.map((p: any) => p.scope_id)).size, 1);
    // A dry run meets the same addresses as refused, with NetBox's words for them.
    const { done: dry } = await fullUpdate(world, `?${optional}&dry_run=true`);
    const dryGuest = dry.conflicts.filter((c: any) => c.step === "ip-addresses");
    assert.equal(dryGuest.length, 20);
    for (const c of dryGuest) {
      assert.match(
        c.detail,
        /^not written: Duplicate IP address found in global table: 10\.0\.2\./,
      );
    }
    // Each of the 22 addresses exists once, with the first cluster's guest.
    const hosts = (await world.inventory("ipam/ip-addresses/")).map((ip: any) => String(ip.address))
      .filter((a: string) => a.startsWith("10.0.2."));
    assert.equal(hosts.length, 22);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync mapping: a bad sync policy on the backend copy is a 422 naming the option", async () => {
  const world = await syncWorld("nodes=1,vms=1,cts=0,storages=1", FAST_TASKS);
  try {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ overwrite_names: "maybe" }, /overwrite_names: true or false/],
      [{ stage_sdn: "yes" }, /stage_sdn: true or false/],
      [{ primary_ip_preference: "v5" }, /primary_ip_preference: one of both, v4, v6/],
      [{ lxc_role: "Not A Slug" }, /lxc_role: the slug of a device role/],
      [{ tenant_rules: ["web"] }, /tenant_rules\[0\]: a list of/],
      [{ tenant_rules: [null] }, /tenant_rules\[0\]: a list of/],
      [{ dry_run: true }, /Unknown run option .{1,2}dry_run/],
    ];
    for (const [policy, said] of cases) {
      const r = await world.backend("POST", "/hypervisor/endpoints", {
        name: "lab",
        ip: "127.0.0.1",
        port: world.port,
        password: "bridgebox",
        sync_policy: policy,
      });
      assert.equal(r.status, 422, `${JSON.stringify(policy)}: ${JSON.stringify(r.body)}`);
      assert.match(JSON.stringify(r.body), said, JSON.stringify(policy));
    }
    // What is right reads back as the JSON it is.
    const ok = await world.backend("POST", "/hypervisor/endpoints", {
      name: "lab",
      ip: "127.0.0.1",
      port: world.port,
      password: "bridgebox",
      sync_policy: { overwrite_names: "false", stage_sdn: true, primary_ip_preference: "v6" },
    });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    assert.deepEqual(ok.body.sync_policy, {
      overwrite_names: false,
      stage_sdn: true,
      primary_ip_preference: "v6",
    });
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync mapping: a reference object the inventory refuses (its name taken by another slug) is an error with the inventory's words", async () => {
  const world = await syncWorld("nodes=1,vms=1,cts=0,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    // The sync looks for the device role `hypervisor` by slug; this one has its name only.
    const taken = await world.inventoryCall("POST", "dcim/device-roles/", {
      name: "Hypervisor",
      slug: "hv-made-by-hand",
      color: "ff0000",
    });
    assert.equal(taken.status, 201, JSON.stringify(taken.body));
    const frames = await world.stream("/dcim/devices/create/stream");
    const errors = frames.filter((f) => f.event === "error").map((f) => f.data);
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.equal(errors[0].error, "Inventory request failed", JSON.stringify(errors[0]));
    assert.match(errors[0].detail, /already exists/, JSON.stringify(errors[0]));
  } finally {
    await world.close();
  }
});
