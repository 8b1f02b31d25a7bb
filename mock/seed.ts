/**
 * Deterministic seed: the same size always yields the same cluster (names, vmids, MACs, IPs,
 * snapshots, backups, jobs, tasks), so every sync stage has data and tests can rely on it.
 */
import type { MockSeedSize } from "../config.ts";
import {
  addGuest,
  collection,
  emptyState,
  type Guest,
  type MockState,
  type StorageState,
  type Task,
  volumesOn,
} from "./state.ts";
import { formatUpid } from "./tasks.ts";

/** 2026-01-01T00:00:00Z: seed timestamps are fixed, never "now". */
export const SEED_EPOCH = 1767225600;
const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

export interface SeedOptions {
  size: MockSeedSize;
  mockUser: string;
  mockPassword: string;
  clusterName?: string;
}

/** Small deterministic PRNG (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const h2 = (n: number) => (n & 0xff).toString(16).toUpperCase().padStart(2, "0");
export function macFor(vmid: number, index: number): string {
  return `BC:24:11:${h2(vmid >> 8)}:${h2(vmid)}:${h2(index)}`;
}

export function nodeName(i: number): string {
  return `pve${i + 1}`;
}

const STORAGE_TEMPLATES: Array<(i: number) => Record<string, string | number>> = [
  () => ({
    storage: "local",
    type: "dir",
    path: "/var/lib/vz",
    content: "iso,vztmpl,backup",
    shared: 0,
  }),
  () => ({
    storage: "local-lvm",
    type: "lvmthin",
    thinpool: "data",
    vgname: "pve",
    content: "images,rootdir",
    shared: 0,
  }),
  (i) => ({
    storage: `nfs${i - 1}`,
    type: "nfs",
    server: `10.0.1.${9 + i}`,
    export: `/export/pve${i - 1}`,
    path: `/mnt/pve/nfs${i - 1}`,
    content: "images,rootdir,backup,iso",
    shared: 1,
  }),
];

function storageConfig(i: number): Record<string, string | number> {
  return STORAGE_TEMPLATES[Math.min(i, 2)](i);
}

export function buildSeed(opts: SeedOptions): MockState {
  const { size } = opts;
  const state = emptyState(opts.clusterName ?? "bridgebox");
  const rand = prng(0xb51d9e);
  const nodeCount = Math.max(1, size.nodes);

  // Nodes and their networks.
  for (let i = 0; i < nodeCount; i++) {
    const node = nodeName(i);
    const ip = `10.0.0.${11 + i}`;
    state.nodes.set(node, {
      node,
      nodeid: i + 1,
      ip,
      maxcpu: 16 + 16 * (i % 2),
      maxmem: (64 + 64 * (i % 3)) * GiB,
      maxdisk: 100 * GiB,
      bootedAt: SEED_EPOCH - 86400 * (10 + i),
      status: "online",
    });
    const net = collection(state, `/nodes/${node}/network`);
    const ifaces: Record<string, unknown>[] = [
      {
        iface: "eno1",
        type: "eth",
        method: "manual",
        families: ["inet"],
        active: 1,
        autostart: 1,
        exists: 1,
      },
      {
        iface: "eno2",
        type: "eth",
        method: "manual",
        families: ["inet"],
        active: 1,
        autostart: 1,
        exists: 1,
      },
      {
        iface: "vmbr0",
        type: "bridge",
        method: "static",
        families: ["inet"],
        address: ip,
        netmask: "24",
        cidr: `${ip}/24`,
        gateway: "10.0.0.1",
        bridge_ports: "eno1",
        bridge_stp: "off",
        bridge_fd: "0",
        active: 1,
        autostart: 1,
        priority: 3,
      },
      {
        iface: "vmbr1",
        type: "bridge",
        method: "manual",
        families: ["inet"],
        bridge_ports: "eno2",
        bridge_stp: "off",
        bridge_fd: "0",
        bridge_vlan_aware: 1,
        active: 1,
        autostart: 1,
      },
      {
        iface: "vmbr1.10",
        type: "vlan",
        method: "static",
        families: ["inet"],
        address: `10.10.0.${11 + i}`,
        netmask: "24",
        cidr: `10.10.0.${11 + i}/24`,
        "vlan-id": 10,
        "vlan-raw-device": "vmbr1",
        active: 1,
        autostart: 1,
      },
    ];
    ifaces.forEach((rec, p) => net.set(String(rec.iface), { ...rec, priority: rec.priority ?? p }));
  }
  const nodes = [...state.nodes.keys()];

  // Storages.
  for (let i = 0; i < Math.max(1, size.storages); i++) {
    const config = storageConfig(i);
    const storage: StorageState = {
      config,
      total: (config.shared ? 2048 : 512) * GiB,
      volumes: new Map(),
    };
    state.storages.set(String(config.storage), storage);
  }
  const storages = [...state.storages.values()];
  const imageStorage = storages.find((s) => String(s.config.content).includes("images")) ??
    storages[0];
  const backupStorage = storages.find((s) => String(s.config.content).includes("backup")) ??
    storages[0];
  const isoStorage = storages.find((s) => String(s.config.content).includes("iso"));
  const imageStore = String(imageStorage.config.storage);
  if (isoStorage) {
    for (const node of nodes) {
      volumesOn(isoStorage, node).push(
        {
          volid: `${isoStorage.config.storage}:iso/debian-13.1.0-amd64-netinst.iso`,
          content: "iso",
          format: "iso",
          size: 754 * MiB,
          ctime: SEED_EPOCH - 86400 * 30,
        },
        {
          volid: `${isoStorage.config.storage}:vztmpl/debian-13-standard_13.1-1_amd64.tar.zst`,
          content: "vztmpl",
          format: "tzst",
          size: 123 * MiB,
          ctime: SEED_EPOCH - 86400 * 30,
        },
      );
    }
  }

  // Guests: qemu VMs from 100, containers after them.
  const totalVms = size.vms;
  for (let k = 0; k < totalVms + size.cts; k++) {
    const vmid = 100 + k;
    const isCt = k >= totalVms;
    const node = nodes[k % nodes.length];
    const running = rand() < 0.7;
    const memory = [1024, 2048, 4096, 8192][Math.floor(rand() * 4)];
    const cores = [1, 2, 4][Math.floor(rand() * 3)];
    const diskGb = [8, 16, 32, 64][Math.floor(rand() * 4)];
    // Last octet 10-249, third 2-255: every seeded guest address is a valid IPv4 address. A /16
    // holds 254 × 240 guests; past 60,960 (a 100,000-guest estate) they go on in 10.1.0.0/16,
    // 10.2.0.0/16, …, each with its own gateway.
    const block = Math.floor(k / 240);
    const net = `10.${Math.floor(block / 254)}`;
    const ip = `${net}.${2 + (block % 254)}.${10 + (k % 240)}`;
    const gw = `${net}.0.1`;
    const vlan = k % 5 === 0 ? 10 : undefined;
    const guest: Guest = {
      vmid,
      type: isCt ? "lxc" : "qemu",
      node,
      status: running ? "running" : "stopped",
      startedAt: SEED_EPOCH - 3600 * (1 + (k % 48)),
      config: {},
      snapshots: [],
    };
    if (!isCt) {
      guest.config = {
        name: `vm-${vmid}`,
        memory,
        cores,
        sockets: 1,
        cpu: "x86-64-v2-AES",
        ostype: "l26",
        machine: "q35",
        bios: "seabios",
        scsihw: "virtio-scsi-single",
        boot: "order=scsi0;ide2;net0",
        bootdisk: "scsi0",
        scsi0: `${imageStore}:vm-${vmid}-disk-0,iothread=1,size=${diskGb}G`,
        ide2: "none,media=cdrom",
        net0: `virtio=${macFor(vmid, 0)},bridge=vmbr0,firewall=1`,
        agent: "1",
        ipconfig0: `ip=${ip}/16,gw=${gw}`,
        onboot: k % 2,
        smbios1: `uuid=00000000-0000-4000-8000-${vmid.toString(16).padStart(12, "0")}`,
        vmgenid: `00000000-0000-4000-9000-${vmid.toString(16).padStart(12, "0")}`,
        meta: `creation-qemu=10.0.2,ctime=${SEED_EPOCH - 86400 * 60}`,
        digest: "",
      };
      if (k % 4 === 0) guest.config.tags = "prod;web";
      if (vlan) guest.config.net1 = `virtio=${macFor(vmid, 1)},bridge=vmbr1,tag=${vlan}`;
      if (k % 7 === 3) guest.config.scsi1 = `${imageStore}:vm-${vmid}-disk-1,size=100G`;
      if (running) {
        guest.agentInterfaces = [
          {
            name: "lo",
            "hardware-address": "00:00:00:00:00:00",
            "ip-addresses": [{ "ip-address-type": "ipv4", "ip-address": "127.0.0.1", prefix: 8 }],
          },
          {
            name: "eth0",
            "hardware-address": macFor(vmid, 0).toLowerCase(),
            "ip-addresses": [
              { "ip-address-type": "ipv4", "ip-address": ip, prefix: 16 },
              {
                "ip-address-type": "ipv6",
                "ip-address": `fe80::be24:11ff:fe${h2(vmid >> 8).toLowerCase()}:${
                  h2(vmid).toLowerCase()
                }00`,
                prefix: 64,
              },
            ],
          },
        ];
      }
    } else {
      guest.config = {
        hostname: `ct-${vmid}`,
        memory: Math.min(memory, 2048),
        swap: 512,
        cores,
        arch: "amd64",
        ostype: "debian",
        rootfs: `${imageStore}:vm-${vmid}-disk-0,size=${Math.min(diskGb, 16)}G`,
        net0: `name=eth0,bridge=vmbr0,firewall=1,hwaddr=${
          macFor(vmid, 0)
        },ip=${ip}/16,gw=${gw},type=veth`,
        unprivileged: 1,
        features: "nesting=1",
        onboot: k % 2,
        digest: "",
      };
      if (vlan) {
        guest.config.net1 = `name=eth1,bridge=vmbr1,hwaddr=${
          macFor(vmid, 1)
        },ip=dhcp,tag=${vlan},type=veth`;
      }
    }
    if (k % 3 === 0) {
      const base = { ...guest.config };
      guest.snapshots.push({
        name: "before-upgrade",
        description: "Snapshot before the quarterly upgrade",
        snaptime: SEED_EPOCH - 86400 * 3,
        vmstate: 0,
        config: base,
      });
      guest.config.parent = "before-upgrade";
    }
    addGuest(state, guest);

    // Disks on the image storage.
    volumesOn(imageStorage, node).push({
      volid: `${imageStore}:vm-${vmid}-disk-0`,
      content: isCt ? "rootdir" : "images",
      format: "raw",
      size: (isCt ? Math.min(diskGb, 16) : diskGb) * GiB,
      ctime: SEED_EPOCH - 86400 * 60,
      vmid,
    });
    // A backup of every other guest (keeps the volume lists proportionate).
    if (k % 2 === 0 && String(backupStorage.config.content).includes("backup")) {
      const type = isCt ? "lxc" : "qemu";
      const stamp = "2025_12_31-01_00_00";
      volumesOn(backupStorage, node).push({
        volid: `${backupStorage.config.storage}:backup/vzdump-${type}-${vmid}-${stamp}.${
          isCt ? "tar.zst" : "vma.zst"
        }`,
        content: "backup",
        format: isCt ? "tar.zst" : "vma.zst",
        subtype: type,
        size: Math.round(diskGb * GiB * 0.3),
        ctime: SEED_EPOCH - 82800,
        vmid,
        notes: `${isCt ? guest.config.hostname : guest.config.name}`,
        protected: 0,
      });
    }
  }

  // Users and the default credentials.
  state.users.set(opts.mockUser, {
    userid: opts.mockUser,
    password: opts.mockPassword,
    enable: 1,
    expire: 0,
    email: "root@localhost",
    comment: "Mock administrator",
    groups: ["admins"],
    tokens: new Map(),
  });
  collection(state, "/access/groups").set("admins", {
    groupid: "admins",
    comment: "Administrators",
  });
  const domains = collection(state, "/access/domains");
  domains.set("pam", { realm: "pam", type: "pam", comment: "Linux PAM standard authentication" });
  domains.set("pve", {
    realm: "pve",
    type: "pve",
    comment: "Proxmox VE authentication server",
    default: 1,
  });
  const roles = collection(state, "/access/roles");
  for (
    const [roleid, privs] of [
      [
        "Administrator",
        "Sys.Audit,Sys.Modify,VM.Allocate,VM.Audit,VM.Config.Options,VM.PowerMgmt,Datastore.Allocate,Datastore.Audit",
      ],
      ["PVEAuditor", "Datastore.Audit,Mapping.Audit,Pool.Audit,SDN.Audit,Sys.Audit,VM.Audit"],
      [
        "PVEVMAdmin",
        "VM.Allocate,VM.Audit,VM.Backup,VM.Clone,VM.Config.Options,VM.Console,VM.Migrate,VM.PowerMgmt,VM.Snapshot",
      ],
      ["PVEVMUser", "VM.Audit,VM.Backup,VM.Console,VM.PowerMgmt"],
      ["NoAccess", ""],
    ]
  ) roles.set(roleid, { roleid, privs, special: 1 });

  // Pools.
  state.pools.set("production", {
    poolid: "production",
    comment: "Production guests",
    storage: new Set(),
  });
  for (const vmid of [...state.guests.keys()].filter((_, i) => i % 4 === 0)) {
    state.poolOf.set(vmid, "production");
  }

  // Backup jobs, replication jobs.
  const backupJobs = collection(state, "/cluster/backup");
  backupJobs.set("backup-4f1c2a7e", {
    id: "backup-4f1c2a7e",
    type: "vzdump",
    enabled: 1,
    schedule: "sun 01:00",
    storage: String(backupStorage.config.storage),
    all: 1,
    mode: "snapshot",
    compress: "zstd",
    "notes-template": "{{guestname}}",
    "prune-backups": "keep-last=3,keep-weekly=2",
    comment: "Weekly backup of all guests",
  });
  backupJobs.set("backup-9b03d5e1", {
    id: "backup-9b03d5e1",
    type: "vzdump",
    enabled: 0,
    schedule: "daily",
    storage: String(backupStorage.config.storage),
    vmid: [...state.guests.keys()].slice(0, 3).join(","),
    mode: "stop",
    compress: "zstd",
    comment: "Daily backup of the first guests (disabled)",
  });
  if (nodes.length > 1) {
    const repl = collection(state, "/cluster/replication");
    const qemu = [...state.guests.values()].filter((g) => g.type === "qemu").slice(0, 2);
    for (const g of qemu) {
      const target = nodes[(nodes.indexOf(g.node) + 1) % nodes.length];
      const id = `${g.vmid}-0`;
      repl.set(id, {
        id,
        type: "local",
        guest: g.vmid,
        jobnum: 0,
        source: g.node,
        target,
        schedule: "*/15",
        rate: 50,
        comment: `Replicate ${g.config.name} to ${target}`,
      });
    }
  }

  // SDN.
  collection(state, "/cluster/sdn/zones").set("zone1", {
    zone: "zone1",
    type: "vlan",
    bridge: "vmbr1",
    ipam: "pve",
    digest: "",
  });
  collection(state, "/cluster/sdn/zones").set("evpn1", {
    zone: "evpn1",
    type: "simple",
    ipam: "pve",
    dhcp: "dnsmasq",
  });
  const vnets = collection(state, "/cluster/sdn/vnets");
  vnets.set("vnet10", { vnet: "vnet10", zone: "zone1", tag: 10, alias: "Servers", type: "vnet" });
  vnets.set("vnet20", { vnet: "vnet20", zone: "zone1", tag: 20, alias: "Storage", type: "vnet" });
  vnets.set("simple1", { vnet: "simple1", zone: "evpn1", alias: "Isolated", type: "vnet" });
  for (
    const [vnet, cidr, gw] of [
      ["vnet10", "10.10.0.0/24", "10.10.0.1"],
      ["vnet20", "10.20.0.0/24", "10.20.0.1"],
      ["simple1", "192.168.100.0/24", "192.168.100.1"],
    ]
  ) {
    const zone = String(vnets.get(vnet)!.zone);
    const id = `${zone}-${cidr.replace("/", "-")}`;
    collection(state, `/cluster/sdn/vnets/${vnet}/subnets`).set(id, {
      subnet: id,
      id,
      cidr,
      network: cidr.split("/")[0],
      mask: cidr.split("/")[1],
      gateway: gw,
      type: "subnet",
      vnet,
      zone,
      snat: vnet === "simple1" ? 1 : 0,
    });
  }

  // Finished historical tasks per node.
  for (const node of nodes) {
    const mine = [...(state.guestsByNode.get(node) ?? [])].slice(0, 4);
    const list: Task[] = [];
    let t = SEED_EPOCH - 86400;
    for (const vmid of mine) {
      const g = state.guests.get(vmid)!;
      for (const type of ["vzdump", g.type === "qemu" ? "qmstart" : "vzstart"]) {
        state.counter++;
        const task: Task = {
          upid: "",
          node,
          pid: 0x2000 + state.counter,
          pstart: 0x40000 + state.counter * 13,
          starttime: t,
          type,
          id: String(vmid),
          user: opts.mockUser,
          endsAtMs: (t + 30) * 1000,
          endtime: t + 30,
          status: "stopped",
          exitstatus: "OK",
          log: type === "vzdump"
            ? [
              `INFO: starting new backup job: vzdump ${vmid}`,
              `INFO: Finished Backup of VM ${vmid}`,
              "TASK OK",
            ]
            : [`start VM ${vmid}`, "TASK OK"],
        };
        task.upid = formatUpid(task);
        list.push(task);
        state.tasks.set(task.upid, task);
        t += 600;
      }
    }
    state.tasksByNode.set(node, list);
  }
  return state;
}
