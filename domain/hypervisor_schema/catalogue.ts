/**
 * The built-in catalogue: a compact API tree in the API-viewer format, written for this project
 * (not taken from Proxmox's files). It covers the endpoints docs/api-behaviour.md (Hypervisor)
 * lists and everything the sync stages read; it is used when HYPERVISOR_SCHEMA is not set. Load a
 * full Proxmox schema (a host serves it at /pve-docs/api-viewer/apidata.js) for the whole API.
 */
import { PVE_ADDED_OPS, PVE_PARAM_NAMES, PVE_PARAMS } from "./catalogue_generated.ts";
import type { HttpMethod, Operation, ParamSchema, SchemaNode, SchemaTree } from "./schema.ts";

// ------------------------------------------------------------------ schema helpers

type P = ParamSchema;
const opt = (s: P): P => ({ ...s, optional: 1 });
const str = (description: string, extra: Partial<P> = {}): P => ({
  type: "string",
  description,
  ...extra,
});
const int = (description: string, extra: Partial<P> = {}): P => ({
  type: "integer",
  description,
  ...extra,
});
const num = (description: string, extra: Partial<P> = {}): P => ({
  type: "number",
  description,
  ...extra,
});
const bool = (description: string, extra: Partial<P> = {}): P => ({
  type: "boolean",
  description,
  ...extra,
});
const obj = (properties: Record<string, P>, extra: Partial<P> = {}): P => ({
  type: "object",
  properties,
  ...extra,
});
const arr = (items: P, extra: Partial<P> = {}): P => ({ type: "array", items, ...extra });
const NULL: P = { type: "null" };
const UPID: P = {
  type: "string",
  description: "The task's UPID (the operation runs as a worker task).",
};

const node = str("The cluster node name.", { format: "pve-node" });
const vmid = int("The (unique) ID of the VM.", {
  format: "pve-vmid",
  minimum: 100,
  maximum: 999999999,
});
const storageId = str("The storage identifier.", { format: "pve-storage-id" });
const userid = str("Full user ID, in the form of 'name@realm'.", {
  format: "pve-userid",
  maxLength: 64,
});
const tokenid = str("User-specific token identifier.", { pattern: "[A-Za-z][A-Za-z0-9.\\-_]+" });
const snapname = str("The name of the snapshot.", { format: "pve-configid", maxLength: 40 });
const poolid = str("The pool identifier.", { format: "pve-poolid" });
const digest = opt(
  str("Prevent changes if the current configuration file has a different digest.", {
    maxLength: 64,
  }),
);
const deleteList = opt(
  str("A list of settings you want to delete.", { format: "pve-configid-list" }),
);
const start = opt(int("Index of the first entry to return.", { minimum: 0, default: 0 }));
const skiplock = opt(bool("Ignore locks - only root is allowed to use this option."));
const timeout = opt(int("Wait maximal timeout seconds.", { minimum: 0 }));

function params(properties: Record<string, P>, additional = 0): Operation["parameters"] {
  return { additionalProperties: additional as 0 | 1, properties };
}

interface OpSpec {
  name: string;
  description: string;
  params?: Record<string, P>;
  returns?: P;
  world?: boolean;
  protected?: boolean;
}

function op(method: HttpMethod, spec: OpSpec): Operation {
  return {
    method,
    name: spec.name,
    description: spec.description,
    allowtoken: 1,
    ...(spec.protected ? { protected: 1 as const } : {}),
    permissions: spec.world ? { user: "world" } : { user: "all" },
    parameters: params(spec.params ?? {}),
    returns: spec.returns ?? NULL,
  };
}

const index = (description: string, key = "name"): OpSpec => ({
  name: "index",
  description,
  returns: arr(obj({}), { links: [{ rel: "child", href: `{${key}}` }] }),
});

// ------------------------------------------------------------------ property-string formats

const netModels = ["virtio", "e1000", "e1000e", "rtl8139", "vmxnet3"];
const qemuNetFormat: Record<string, P> = {
  model: str("Network Card Model.", { enum: netModels, default_key: 1 }),
  macaddr: opt(str("MAC address.", { format: "mac-addr" })),
  bridge: opt(str("Bridge to attach the network device to.", { format: "pve-bridge-id" })),
  tag: opt(int("VLAN tag to apply to packets on this interface.", { minimum: 1, maximum: 4094 })),
  trunks: opt(str("VLAN trunks to pass through this interface.")),
  firewall: opt(bool("Whether this interface should be protected by the firewall.")),
  link_down: opt(bool("Whether this interface should be disconnected.")),
  rate: opt(num("Rate limit in mbps.", { minimum: 0 })),
  queues: opt(int("Number of packet queues.", { minimum: 0, maximum: 64 })),
  mtu: opt(int("MTU of the interface.", { minimum: 1, maximum: 65520 })),
};
for (const m of netModels) qemuNetFormat[m] = { alias: "macaddr", keyAlias: "model" };

const lxcNetFormat: Record<string, P> = {
  name: str("Name of the network device as seen from inside the container.", {
    pattern: "[-_.\\w\\d]+",
  }),
  bridge: opt(str("Bridge to attach the network device to.")),
  hwaddr: opt(str("The interface MAC address.", { format: "mac-addr" })),
  ip: opt(str("IPv4 address in CIDR format, 'dhcp' or 'manual'.")),
  gw: opt(str("Default gateway for IPv4 traffic.", { format: "ipv4" })),
  ip6: opt(str("IPv6 address in CIDR format, 'auto', 'dhcp' or 'manual'.")),
  gw6: opt(str("Default gateway for IPv6 traffic.", { format: "ipv6" })),
  tag: opt(int("VLAN tag for this interface.", { minimum: 1, maximum: 4094 })),
  firewall: opt(bool("Controls whether this interface's firewall rules should be used.")),
  mtu: opt(int("Maximum transfer unit of the interface.", { minimum: 64, maximum: 65535 })),
  rate: opt(num("Apply rate limiting to the interface (MB/s).", { minimum: 0 })),
  type: opt(str("Network interface type.", { enum: ["veth"] })),
  link_down: opt(bool("Whether this interface should be disconnected.")),
};

const ipconfigFormat: Record<string, P> = {
  ip: opt(str("IPv4 address in CIDR format, or 'dhcp'.")),
  gw: opt(str("Default gateway for IPv4 traffic.", { format: "ipv4" })),
  ip6: opt(str("IPv6 address in CIDR format, 'auto' or 'dhcp'.")),
  gw6: opt(str("Default gateway for IPv6 traffic.", { format: "ipv6" })),
};

const diskSpec = (what: string): P =>
  opt(str(`Use volume as ${what}. Use STORAGE_ID:SIZE_IN_GiB to allocate a new volume.`, {
    typetext: "[file=]<volume> [,size=<DiskSize>] [,...]",
  }));

// ------------------------------------------------------------------ shared shapes

const guestEntry = obj({
  vmid: int("The (unique) ID of the VM."),
  name: opt(str("VM name.")),
  status: str("Current status.", { enum: ["running", "stopped", "paused"] }),
  cpu: opt(num("Current CPU usage.")),
  cpus: opt(num("Maximum usable CPUs.")),
  maxcpu: opt(int("Maximum usable CPUs.")),
  mem: opt(int("Currently used memory in bytes.")),
  maxmem: opt(int("Maximum memory in bytes.")),
  disk: opt(int("Root disk usage in bytes.")),
  maxdisk: opt(int("Root disk size in bytes.")),
  uptime: opt(int("Uptime in seconds.")),
  netin: opt(int("Network traffic in (bytes).")),
  netout: opt(int("Network traffic out (bytes).")),
  tags: opt(str("The current configured tags, if any.")),
  lock: opt(str("The current config lock, if any.")),
  template: opt(bool("Determines if the guest is a template.")),
  pid: opt(int("PID of the main process, if running.")),
});

const taskEntry = obj({
  upid: str("Task UPID."),
  node: str("Node name."),
  pid: int("Process ID."),
  pstart: int("Process start time (clock ticks)."),
  starttime: int("Start time (epoch seconds)."),
  endtime: opt(int("End time (epoch seconds).")),
  type: str("Task type."),
  id: str("Task ID (often the guest's vmid)."),
  user: str("User who started the task."),
  status: opt(str("Exit status once finished; 'running' while running.")),
});

const snapshotEntry = obj({
  name: str("Snapshot identifier. 'current' identifies the current state."),
  description: str("Snapshot description."),
  parent: opt(str("Parent snapshot identifier.")),
  snaptime: opt(int("Snapshot creation time.")),
  vmstate: opt(bool("Snapshot includes RAM.")),
});

const storageEntry = obj({
  storage: str("The storage identifier."),
  type: str("Storage type."),
  content: str("Allowed storage content types."),
  active: opt(bool("Set when storage is accessible.")),
  enabled: opt(bool("Set when storage is enabled (not disabled).")),
  shared: opt(bool("Shared flag from storage configuration.")),
  total: opt(int("Total storage space in bytes.")),
  used: opt(int("Used storage space in bytes.")),
  avail: opt(int("Available storage space in bytes.")),
  used_fraction: opt(num("Used fraction (used/total).")),
});

const firewallRule: Record<string, P> = {
  action: str("Rule action ('ACCEPT', 'DROP', 'REJECT') or security group name.", {
    maxLength: 20,
  }),
  type: str("Rule type.", { enum: ["in", "out", "forward", "group"] }),
  enable: opt(int("Flag to enable/disable a rule.", { minimum: 0 })),
  comment: opt(str("Descriptive comment.")),
  source: opt(str("Restrict packet source address.", { maxLength: 512 })),
  dest: opt(str("Restrict packet destination address.", { maxLength: 512 })),
  proto: opt(str("IP protocol.")),
  dport: opt(str("Restrict TCP/UDP destination port.")),
  sport: opt(str("Restrict TCP/UDP source port.")),
  iface: opt(str("Network interface name.", { maxLength: 20 })),
  macro: opt(str("Use predefined standard macro.", { maxLength: 128 })),
  log: opt(
    str("Log level for firewall rule.", {
      enum: ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug", "nolog"],
    }),
  ),
};

// ------------------------------------------------------------------ guests

function guestOps(type: "qemu" | "lxc"): Array<[string, Operation[]]> {
  const kind = type === "qemu" ? "VM" : "container";
  const base = `/nodes/{node}/${type}`;
  const item = `${base}/{vmid}`;
  const nv = { node, vmid };
  const createParams: Record<string, P> = type === "qemu"
    ? {
      node,
      vmid,
      name: opt(str("Set a name for the VM.", { format: "dns-name" })),
      memory: opt(int("Memory in MiB.", { minimum: 16 })),
      cores: opt(int("The number of cores per socket.", { minimum: 1, default: 1 })),
      sockets: opt(int("The number of CPU sockets.", { minimum: 1, default: 1 })),
      cpu: opt(str("Emulated CPU type.")),
      ostype: opt(str("Specify guest operating system.", {
        enum: [
          "other",
          "wxp",
          "w2k",
          "w2k3",
          "w2k8",
          "wvista",
          "win7",
          "win8",
          "win10",
          "win11",
          "l24",
          "l26",
          "solaris",
        ],
      })),
      "net[n]": opt(str("Specify network devices.", { format: qemuNetFormat })),
      "scsi[n]": diskSpec("SCSI hard disk or CD-ROM"),
      "virtio[n]": diskSpec("VIRTIO hard disk"),
      "sata[n]": diskSpec("SATA hard disk or CD-ROM"),
      "ide[n]": diskSpec("IDE hard disk or CD-ROM"),
      "ipconfig[n]": opt(str("cloud-init: IP addresses and gateways.", { format: ipconfigFormat })),
      scsihw: opt(
        str("SCSI controller model.", {
          enum: ["lsi", "lsi53c810", "virtio-scsi-pci", "virtio-scsi-single", "megasas", "pvscsi"],
        }),
      ),
      boot: opt(str("Specify guest boot order.")),
      bootdisk: opt(
        str("Enable booting from specified disk.", { pattern: "(ide|sata|scsi|virtio)\\d+" }),
      ),
      agent: opt(str("Enable/disable communication with the QEMU Guest Agent.")),
      onboot: opt(bool("Specifies whether a VM will be started during system bootup.")),
      tags: opt(str("Tags of the VM.")),
      description: opt(str("Description for the VM.", { maxLength: 8192 })),
      bios: opt(str("Select BIOS implementation.", { enum: ["seabios", "ovmf"] })),
      machine: opt(str("Specify the QEMU machine.")),
      pool: opt(poolid),
      start: opt(bool("Start VM after it was created successfully.", { default: 0 })),
      storage: opt(storageId),
    }
    : {
      node,
      vmid,
      ostemplate: str("The OS template or backup file."),
      hostname: opt(str("Set a host name for the container.", { format: "dns-name" })),
      memory: opt(int("Amount of RAM for the container in MB.", { minimum: 16 })),
      swap: opt(int("Amount of SWAP for the container in MB.", { minimum: 0 })),
      cores: opt(
        int("The number of cores assigned to the container.", { minimum: 1, maximum: 8192 }),
      ),
      ostype: opt(
        str("OS type.", {
          enum: [
            "debian",
            "devuan",
            "ubuntu",
            "centos",
            "fedora",
            "opensuse",
            "archlinux",
            "alpine",
            "gentoo",
            "nixos",
            "unmanaged",
          ],
        }),
      ),
      arch: opt(
        str("OS architecture type.", {
          enum: ["amd64", "i386", "arm64", "armhf", "riscv32", "riscv64"],
        }),
      ),
      rootfs: diskSpec("container root"),
      "mp[n]": diskSpec("container mount point"),
      "net[n]": opt(
        str("Specifies network interfaces for the container.", { format: lxcNetFormat }),
      ),
      unprivileged: opt(bool("Makes the container run as unprivileged user.")),
      features: opt(str("Allow containers access to advanced features.")),
      onboot: opt(bool("Specifies whether a container will be started during system bootup.")),
      tags: opt(str("Tags of the Container.")),
      description: opt(str("Description for the Container.", { maxLength: 8192 })),
      password: opt(str("Sets root password inside container.", { minLength: 5 })),
      pool: opt(poolid),
      start: opt(bool("Start the CT after its creation finished successfully.", { default: 0 })),
      storage: opt(storageId),
    };
  const updateParams: Record<string, P> = {
    ...createParams,
    delete: deleteList,
    digest,
    skiplock,
    revert: opt(str("Revert a pending change.")),
  };
  for (const k of ["vmid", "pool", "start", "storage", "ostemplate", "password"]) {
    delete updateParams[k];
  }
  updateParams.vmid = vmid;
  const prefix = type === "qemu" ? "vm" : "vm";
  const action = (name: string, description: string, extra: Record<string, P> = {}): Operation =>
    op("POST", {
      name: `${prefix}_${name}`,
      description,
      params: { ...nv, skiplock, ...extra },
      returns: UPID,
    });
  const entries: Array<[string, Operation[]]> = [
    [base, [
      op("GET", {
        name: `${type}list`,
        description: `${type === "qemu" ? "Virtual machine" : "LXC container"} index (per node).`,
        params: { node, full: opt(bool("Determine the full status of active VMs.")) },
        returns: arr(guestEntry, { links: [{ rel: "child", href: "{vmid}" }] }),
      }),
      op("POST", {
        name: `create_${type === "qemu" ? "vm" : "ct"}`,
        description: `Create a ${kind}. Runs as a task.`,
        params: createParams,
        returns: UPID,
      }),
    ]],
    [item, [
      op("GET", index("Directory index.", "subdir")),
      op("DELETE", {
        name: `destroy_${type === "qemu" ? "vm" : "ct"}`,
        description: `Destroy the ${kind} and all used/owned volumes. Runs as a task.`,
        params: {
          ...nv,
          purge: opt(bool("Remove from replication, HA and backup jobs.")),
          skiplock,
        },
        returns: UPID,
      }),
    ]],
    [`${item}/config`, [
      op("GET", {
        name: `${type}_config`,
        description: `Get the ${kind} configuration with pending changes applied.`,
        params: {
          ...nv,
          current: opt(bool("Get current values (instead of pending values).")),
          snapshot: opt(snapname),
        },
        returns: obj({
          digest: str("SHA1 digest of the configuration."),
          ...(type === "qemu"
            ? {
              name: opt(str("VM name.")),
              memory: opt(str("Memory.")),
              cores: opt(int("Cores.")),
              sockets: opt(int("Sockets.")),
              bootdisk: opt(str("Boot disk.")),
              net0: opt(str("Network device 0.")),
            }
            : {
              hostname: opt(str("Host name.")),
              memory: opt(int("Memory.")),
              cores: opt(int("Cores.")),
              rootfs: opt(str("Root disk.")),
              net0: opt(str("Network device 0.")),
            }),
        }, { additionalProperties: 1 }),
      }),
      op("PUT", {
        name: `update_${type}`,
        description: `Set ${kind} options (synchronous).`,
        params: updateParams,
      }),
      ...(type === "qemu"
        ? [op("POST", {
          name: "update_vm_async",
          description: "Set virtual machine options (asynchronous API). Runs as a task.",
          params: {
            ...updateParams,
            background_delay: opt(
              int("Time to wait for the task to finish.", { minimum: 1, maximum: 30 }),
            ),
          },
          returns: UPID,
        })]
        : []),
    ]],
    [`${item}/status`, [op("GET", index("Directory index", "subdir"))]],
    [`${item}/pending`, [
      op("GET", {
        name: `${type}_pending`,
        description: `Get the ${kind} configuration with both current and pending values.`,
        params: nv,
        returns: arr(obj({
          key: str("Configuration option name."),
          value: opt(str("Current value.")),
          pending: opt(str("Pending value.")),
          delete: opt(int("Indicates a pending delete request if present and not 0.")),
        })),
      }),
    ]],
    [`${item}/status/current`, [
      op("GET", {
        name: `${type}_status`,
        description: `Get the ${kind}'s current status.`,
        params: nv,
        returns: obj({
          ...guestEntry.properties,
          qmpstatus: opt(str("QEMU QMP agent status.")),
          agent: opt(bool("QEMU Guest Agent is enabled in config.")),
          ha: obj({ managed: int("HA managed flag.") }, {
            description: "HA manager service status.",
          }),
        }),
      }),
    ]],
    [`${item}/status/start`, [action("start", `Start the ${kind}. Runs as a task.`, { timeout })]],
    [`${item}/status/stop`, [
      action("stop", `Stop the ${kind} (hard stop). Runs as a task.`, { timeout }),
    ]],
    [`${item}/status/shutdown`, [
      action("shutdown", `Shut down the ${kind} cleanly. Runs as a task.`, {
        timeout,
        forceStop: opt(bool("Make sure the guest stops.", { default: 0 })),
      }),
    ]],
    [`${item}/status/reboot`, [
      action("reboot", `Reboot the ${kind}. Runs as a task.`, { timeout }),
    ]],
    [`${item}/status/suspend`, [action("suspend", `Suspend the ${kind}. Runs as a task.`)]],
    [`${item}/status/resume`, [action("resume", `Resume the ${kind}. Runs as a task.`)]],
    ...(type === "qemu"
      ? [
        [`${item}/status/reset`, [
          action("reset", "Reset the virtual machine. Runs as a task."),
        ]] as [string, Operation[]],
      ]
      : []),
    [`${item}/migrate`, [
      op("GET", {
        name: "migrate_vm_precondition",
        description: "Get preconditions for migration.",
        params: { ...nv, target: opt(node) },
        returns: obj({
          running: bool("Whether the guest is running."),
          allowed_nodes: opt(arr(str("Node."))),
        }),
      }),
      op("POST", {
        name: `migrate_${type === "qemu" ? "vm" : "ct"}`,
        description: `Migrate the ${kind} to another node. Runs as a task.`,
        params: {
          ...nv,
          target: node,
          online: opt(bool("Use online/live migration if the guest is running.")),
          ...(type === "lxc"
            ? { restart: opt(bool("Use restart migration.")) }
            : { "with-local-disks": opt(bool("Enable live storage migration for local disks.")) }),
          bwlimit: opt(int("Override I/O bandwidth limit (in KiB/s).", { minimum: 0 })),
        },
        returns: UPID,
      }),
    ]],
    [`${item}/clone`, [
      op("POST", {
        name: `clone_${type === "qemu" ? "vm" : "ct"}`,
        description: `Create a copy of the ${kind}. Runs as a task.`,
        params: {
          ...nv,
          newid: int("VMID for the clone.", {
            format: "pve-vmid",
            minimum: 100,
            maximum: 999999999,
          }),
          ...(type === "qemu"
            ? { name: opt(str("Set a name for the new VM.", { format: "dns-name" })) }
            : { hostname: opt(str("Set a hostname for the new CT.")) }),
          description: opt(str("Description for the new guest.")),
          full: opt(bool("Create a full copy of all disks.")),
          pool: opt(poolid),
          snapname: opt(snapname),
          storage: opt(storageId),
          target: opt(node),
        },
        returns: UPID,
      }),
    ]],
    [`${item}/snapshot`, [
      op("GET", {
        name: "snapshot_list",
        description: "List all snapshots.",
        params: nv,
        returns: arr(snapshotEntry, { links: [{ rel: "child", href: "{name}" }] }),
      }),
      op("POST", {
        name: "snapshot",
        description: "Snapshot the guest. Runs as a task.",
        params: {
          ...nv,
          snapname,
          description: opt(str("A textual description or comment.")),
          ...(type === "qemu" ? { vmstate: opt(bool("Save the vmstate.")) } : {}),
        },
        returns: UPID,
      }),
    ]],
    [`${item}/snapshot/{snapname}`, [
      op("GET", { ...index("Snapshot index.", "cmd"), params: { ...nv, snapname } }),
      op("DELETE", {
        name: "delsnapshot",
        description: "Delete a snapshot. Runs as a task.",
        params: {
          ...nv,
          snapname,
          force: opt(bool("Remove from the config even if removing disk snapshots fails.")),
        },
        returns: UPID,
      }),
    ]],
    [`${item}/snapshot/{snapname}/config`, [
      op("GET", {
        name: "get_snapshot_config",
        description: "Get snapshot configuration.",
        params: { ...nv, snapname },
        returns: obj({}, { additionalProperties: 1 }),
      }),
      op("PUT", {
        name: "update_snapshot_config",
        description: "Update snapshot metadata.",
        params: { ...nv, snapname, description: opt(str("A textual description or comment.")) },
      }),
    ]],
    [`${item}/snapshot/{snapname}/rollback`, [
      op("POST", {
        name: "rollback",
        description: "Rollback the guest state to the snapshot. Runs as a task.",
        params: {
          ...nv,
          snapname,
          start: opt(bool("Start the guest after rollback.", { default: 0 })),
        },
        returns: UPID,
      }),
    ]],
    [`${item}/firewall`, [op("GET", { ...index("Directory index."), params: nv })]],
    [`${item}/firewall/rules`, [
      op("GET", {
        name: "get_rules",
        description: "List rules.",
        params: nv,
        returns: arr(obj({ pos: int("Rule position."), ...firewallRule }), {
          links: [{ rel: "child", href: "{pos}" }],
        }),
      }),
      op("POST", {
        name: "create_rule",
        description: "Create new rule.",
        params: {
          ...nv,
          ...firewallRule,
          pos: opt(int("Update rule at position <pos>.", { minimum: 0 })),
          digest,
        },
      }),
    ]],
    [`${item}/firewall/rules/{pos}`, [
      op("GET", {
        name: "get_rule",
        description: "Get a single rule.",
        params: { ...nv, pos: int("Rule position.", { minimum: 0 }) },
        returns: obj({ pos: int("Rule position."), ...firewallRule }),
      }),
      op("PUT", {
        name: "update_rule",
        description: "Modify rule data.",
        params: {
          ...nv,
          pos: int("Rule position.", { minimum: 0 }),
          ...Object.fromEntries(Object.entries(firewallRule).map(([k, v]) => [k, opt(v)])),
          moveto: opt(int("Move rule to new position <moveto>.", { minimum: 0 })),
          delete: deleteList,
          digest,
        },
      }),
      op("DELETE", {
        name: "delete_rule",
        description: "Delete rule.",
        params: { ...nv, pos: int("Rule position.", { minimum: 0 }), digest },
      }),
    ]],
  ];
  if (type === "qemu") {
    entries.push(
      [`${item}/agent`, [op("GET", { ...index("QEMU Guest Agent command index."), params: nv })]],
      [`${item}/agent/network-get-interfaces`, [
        op("GET", {
          name: "network-get-interfaces",
          description: "Execute network-get-interfaces through the QEMU Guest Agent.",
          params: nv,
          returns: obj({
            result: arr(
              obj({
                name: str("Interface name."),
                "hardware-address": opt(str("MAC address.")),
                "ip-addresses": opt(
                  arr(
                    obj({
                      "ip-address": str("Address."),
                      "ip-address-type": str("ipv4 or ipv6."),
                      prefix: int("Prefix length."),
                    }),
                  ),
                ),
              }),
            ),
          }),
        }),
      ]],
      [`${item}/agent/get-host-name`, [
        op("GET", {
          name: "get-host-name",
          description: "Execute get-host-name through the QEMU Guest Agent.",
          params: nv,
          returns: obj({ result: obj({ "host-name": str("The guest's host name.") }) }),
        }),
      ]],
    );
  } else {
    entries.push([`${item}/interfaces`, [
      op("GET", {
        name: "ip",
        description: "Get IP addresses of the specified container interface.",
        params: nv,
        returns: arr(
          obj({
            name: str("The name of the interface."),
            hwaddr: str("The MAC address of the interface."),
            inet: opt(str("The IPv4 address of the interface.")),
            inet6: opt(str("The IPv6 address of the interface.")),
          }),
        ),
      }),
    ]]);
  }
  return entries;
}

// ------------------------------------------------------------------ everything else

function crud(
  base: string,
  idName: string,
  idSchema: P,
  what: string,
  fields: Record<string, P>,
  parent: Record<string, P> = {},
  listParams: Record<string, P> = {},
): Array<[string, Operation[]]> {
  const optional = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, opt(v)]));
  return [
    [base, [
      op("GET", {
        name: "index",
        description: `List ${what}s.`,
        params: { ...parent, ...listParams },
        returns: arr(obj({ [idName]: idSchema, ...optional }), {
          links: [{ rel: "child", href: `{${idName}}` }],
        }),
      }),
      op("POST", {
        name: "create",
        description: `Create a new ${what}.`,
        params: { ...parent, [idName]: idSchema, ...fields },
      }),
    ]],
    [`${base}/{${idName}}`, [
      op("GET", {
        name: "read",
        description: `Read ${what} configuration.`,
        params: { ...parent, [idName]: idSchema },
        returns: obj({ [idName]: idSchema, ...optional }, { additionalProperties: 1 }),
      }),
      op("PUT", {
        name: "update",
        description: `Update ${what} configuration.`,
        params: { ...parent, [idName]: idSchema, ...optional, delete: deleteList, digest },
      }),
      op("DELETE", {
        name: "delete",
        description: `Delete ${what}.`,
        params: { ...parent, [idName]: idSchema },
      }),
    ]],
  ];
}

const backupJobFields: Record<string, P> = {
  schedule: str("Backup schedule (systemd calendar event).", { maxLength: 128 }),
  storage: opt(storageId),
  enabled: opt(bool("Enable or disable the job.", { default: 1 })),
  all: opt(bool("Backup all known guest systems on this host.", { default: 0 })),
  vmid: opt(str("The ID of the guest system you want to backup.", { format: "pve-vmid-list" })),
  node: opt(node),
  mode: opt(str("Backup mode.", { enum: ["snapshot", "suspend", "stop"], default: "snapshot" })),
  compress: opt(str("Compress dump file.", { enum: ["0", "1", "gzip", "lzo", "zstd"] })),
  comment: opt(str("Description for the Job.", { maxLength: 512 })),
  "notes-template": opt(
    str("Template string for generating notes for the backup(s).", { maxLength: 1024 }),
  ),
  "prune-backups": opt(
    str("Use these retention options instead of those from the storage configuration."),
  ),
  pool: opt(poolid),
};

const replicationFields: Record<string, P> = {
  target: node,
  type: str("Section type.", { enum: ["local"] }),
  schedule: opt(str("Storage replication schedule.", { default: "*/15", maxLength: 128 })),
  rate: opt(
    num("Rate limit in mbps (megabytes per second) as floating point number.", { minimum: 1 }),
  ),
  comment: opt(str("Description.", { maxLength: 4096 })),
  disable: opt(bool("Flag to disable/deactivate the entry.")),
};

const networkFields: Record<string, P> = {
  type: str("Network interface type.", {
    enum: [
      "bridge",
      "bond",
      "eth",
      "alias",
      "vlan",
      "fabric",
      "OVSBridge",
      "OVSBond",
      "OVSPort",
      "OVSIntPort",
      "vnet",
      "unknown",
    ],
  }),
  address: opt(str("IP address.", { format: "ipv4" })),
  netmask: opt(str("Network mask.")),
  cidr: opt(str("IPv4 CIDR.", { format: "CIDRv4" })),
  gateway: opt(str("Default gateway address.", { format: "ipv4" })),
  autostart: opt(bool("Automatically start interface on boot.")),
  bridge_ports: opt(str("Specify the interfaces you want to add to your bridge.")),
  bridge_vlan_aware: opt(bool("Enable bridge vlan support.")),
  "vlan-id": opt(int("vlan-id for a custom named vlan interface.", { minimum: 1, maximum: 4094 })),
  "vlan-raw-device": opt(str("Specify the raw interface for the vlan interface.")),
  mtu: opt(int("MTU.", { minimum: 1280, maximum: 65520 })),
  comments: opt(str("Comments")),
};

function catalogueEntries(): Array<[string, Operation[]]> {
  const user = { userid };
  return [
    ["/version", [
      op("GET", {
        name: "version",
        description: "API version details.",
        returns: obj({
          version: str("The full pve-manager package version."),
          release: str("The current Proxmox VE point release."),
          repoid: str("The short git revision."),
        }),
      }),
    ]],
    ["/access", [op("GET", index("Directory index.", "subdir"))]],
    ["/access/ticket", [
      op("GET", {
        name: "get_ticket",
        description: "Dummy. Useful for formatters which want to provide a login page.",
        world: true,
      }),
      op("POST", {
        name: "create_ticket",
        description: "Create or verify authentication ticket.",
        world: true,
        params: {
          username: str("User name", { maxLength: 64 }),
          password: str("The secret password. This can also be a valid ticket."),
          realm: opt(
            str("You can optionally pass the realm using this parameter.", {
              format: "pve-realm",
              maxLength: 32,
            }),
          ),
          otp: opt(str("One-time password for Two-factor authentication.")),
          path: opt(
            str("Verify ticket, and check if user have access 'privs' on 'path'", {
              maxLength: 64,
            }),
          ),
          privs: opt(
            str("Verify ticket, and check if user have access 'privs' on 'path'", {
              maxLength: 64,
            }),
          ),
          "new-format": opt(
            bool("This parameter is now ignored and assumed to be 1.", { default: 1 }),
          ),
        },
        returns: obj({
          username: str("User name."),
          ticket: opt(str("Authentication ticket.")),
          CSRFPreventionToken: opt(str("CSRF prevention token.")),
          clustername: opt(str("Cluster name.")),
        }),
      }),
    ]],
    ["/access/password", [
      op("PUT", {
        name: "change_password",
        description: "Change user password.",
        params: { userid, password: str("The new password.", { minLength: 5, maxLength: 64 }) },
      }),
    ]],
    ["/access/users", [
      op("GET", {
        name: "index",
        description: "User index.",
        params: {
          enabled: opt(bool("Optional filter for enable property.")),
          full: opt(bool("Include group and token information.", { default: 0 })),
        },
        returns: arr(
          obj({
            userid,
            enable: opt(bool("Enable the account (default).")),
            expire: opt(int("Account expiration date (seconds since epoch).")),
            firstname: opt(str("First name.")),
            lastname: opt(str("Last name.")),
            email: opt(str("Email.")),
            comment: opt(str("Comment.")),
          }),
          { links: [{ rel: "child", href: "{userid}" }] },
        ),
      }),
      op("POST", {
        name: "create_user",
        description: "Create new user.",
        params: {
          userid,
          password: opt(str("Initial password.", { minLength: 5, maxLength: 64 })),
          enable: opt(bool("Enable the account (default).", { default: 1 })),
          expire: opt(int("Account expiration date.", { minimum: 0 })),
          firstname: opt(str("First name.")),
          lastname: opt(str("Last name.")),
          email: opt(str("Email.", { format: "email-opt" })),
          comment: opt(str("Comment.")),
          groups: opt(str("Groups.", { format: "pve-groupid-list" })),
        },
      }),
    ]],
    ["/access/users/{userid}", [
      op("GET", {
        name: "read_user",
        description: "Get user configuration.",
        params: user,
        returns: obj({
          enable: opt(bool("Enabled.")),
          expire: opt(int("Expiry.")),
          email: opt(str("Email.")),
          groups: opt(arr(str("Group."))),
          tokens: opt(obj({}, { additionalProperties: 1 })),
        }),
      }),
      op("PUT", {
        name: "update_user",
        description: "Update user configuration.",
        params: {
          userid,
          enable: opt(bool("Enable the account.")),
          expire: opt(int("Account expiration date.", { minimum: 0 })),
          firstname: opt(str("First name.")),
          lastname: opt(str("Last name.")),
          email: opt(str("Email.")),
          comment: opt(str("Comment.")),
          groups: opt(str("Groups.")),
          append: opt(bool("Append groups instead of replacing them.")),
        },
      }),
      op("DELETE", { name: "delete_user", description: "Delete user.", params: user }),
    ]],
    ["/access/users/{userid}/token", [
      op("GET", {
        name: "token_index",
        description: "Get user API tokens.",
        params: user,
        returns: arr(
          obj({
            tokenid,
            comment: opt(str("Comment.")),
            expire: opt(int("API token expiration date.")),
            privsep: opt(bool("Restrict API token privileges.")),
          }),
          { links: [{ rel: "child", href: "{tokenid}" }] },
        ),
      }),
    ]],
    ["/access/users/{userid}/token/{tokenid}", [
      op("GET", {
        name: "read_token",
        description: "Get specific API token information.",
        params: { userid, tokenid },
        returns: obj({
          comment: opt(str("Comment.")),
          expire: opt(int("Expiry.")),
          privsep: opt(bool("Privilege separation.")),
        }),
      }),
      op("POST", {
        name: "generate_token",
        description:
          "Generate a new API token for a specific user. NOTE: returns API token value, which needs to be stored as it cannot be retrieved afterwards!",
        params: {
          userid,
          tokenid,
          comment: opt(str("Comment.")),
          expire: opt(
            int("API token expiration date (seconds since epoch). '0' means no expiration date.", {
              minimum: 0,
            }),
          ),
          privsep: opt(
            bool(
              "Restrict API token privileges with separate ACLs (default), or give full privileges of corresponding user.",
              { default: 1 },
            ),
          ),
        },
        returns: obj({
          "full-tokenid": str("The full token id."),
          info: obj({
            comment: opt(str("Comment.")),
            expire: opt(int("Expiry.")),
            privsep: opt(bool("Privilege separation.")),
          }),
          value: str("API token value used for authentication."),
        }),
      }),
      op("PUT", {
        name: "update_token_info",
        description: "Update API token for a specific user.",
        params: {
          userid,
          tokenid,
          comment: opt(str("Comment.")),
          expire: opt(int("Expiry.", { minimum: 0 })),
          privsep: opt(bool("Privilege separation.")),
          regenerate: opt(bool("Regenerate the token secret.")),
          delete: deleteList,
          digest,
        },
        returns: obj({
          "full-tokenid": str("The full token id."),
          value: opt(str("New secret, when regenerated.")),
        }),
      }),
      op("DELETE", {
        name: "remove_token",
        description: "Remove API token for a specific user.",
        params: { userid, tokenid },
      }),
    ]],
    ...crud("/access/groups", "groupid", str("Group ID.", { format: "pve-groupid" }), "group", {
      comment: opt(str("Comment.")),
    }),
    ["/cluster", [op("GET", index("Cluster index."))]],
    ["/cluster/status", [op("GET", {
      name: "get_status",
      description: "Get cluster status information.",
      returns: arr(obj({
        type: str("Indicates the type, either cluster or node.", { enum: ["cluster", "node"] }),
        id: str("Identifier."),
        name: str("Name."),
        nodes: opt(int("[cluster] Nodes count.")),
        quorate: opt(bool("[cluster] Indicates if there is a majority of nodes online.")),
        version: opt(int("[cluster] Current version of the config file.")),
        nodeid: opt(int("[node] ID of the node.")),
        ip: opt(str("[node] IP of the resolved nodename.")),
        online: opt(bool("[node] Indicates if the node is online.")),
        local: opt(bool("[node] Indicates if this is the responding node.")),
        level: opt(str("[node] Subscription level.")),
      })),
    })]],
    ["/cluster/resources", [op("GET", {
      name: "resources",
      description: "Resources index (cluster wide).",
      params: {
        type: opt(str("Resource type.", { enum: ["vm", "storage", "node", "sdn", "pool"] })),
      },
      returns: arr(obj({
        id: str("Resource id."),
        type: str("Resource type.", {
          enum: ["node", "storage", "pool", "qemu", "lxc", "openvz", "sdn", "network"],
        }),
        node: opt(str("The cluster node name.")),
        vmid: opt(int("The numerical vmid.")),
        name: opt(str("Name of the resource.")),
        status: opt(str("Resource type dependent status.")),
        storage: opt(str("The storage identifier.")),
        cpu: opt(num("CPU utilization.")),
        maxcpu: opt(num("Number of available CPUs.")),
        mem: opt(int("Used memory in bytes.")),
        maxmem: opt(int("Number of available memory in bytes.")),
        disk: opt(int("Used disk space in bytes.")),
        maxdisk: opt(int("Storage size in bytes.")),
        uptime: opt(int("Uptime of node or virtual guest in seconds.")),
        pool: opt(str("The pool name.")),
        tags: opt(str("The guest's tags.")),
        template: opt(bool("Determines if the guest is a template.")),
      })),
    })]],
    ...crud(
      "/cluster/ha/resources",
      "sid",
      str("HA resource ID (`vm:100`, `ct:101`).", { typetext: "<type>:<name>" }),
      "HA resource",
      {
        state: opt(
          str("Requested resource state.", {
            enum: ["started", "stopped", "enabled", "disabled", "ignored"],
            default: "started",
          }),
        ),
        max_restart: opt(
          int("Maximal number of tries to restart the service on a node after its start failed.", {
            minimum: 0,
            default: 1,
          }),
        ),
        max_relocate: opt(
          int("Maximal number of service relocate tries when a service failes to start.", {
            minimum: 0,
            default: 1,
          }),
        ),
        comment: opt(str("Description.", { maxLength: 4096 })),
      },
      {},
      { type: opt(str("Only list resources of specific type", { enum: ["ct", "vm"] })) },
    ),
    ["/cluster/nextid", [
      op("GET", {
        name: "nextid",
        description: "Get next free VMID.",
        params: { vmid: opt(vmid) },
        returns: int("The next free VMID."),
      }),
    ]],
    ...crud(
      "/cluster/backup",
      "id",
      str("The job ID.", { maxLength: 50 }),
      "vzdump backup job",
      backupJobFields,
    ),
    ...crud(
      "/cluster/replication",
      "id",
      str(
        "Replication Job ID. The ID is composed of a Guest ID and a job number, separated by a hyphen.",
        { format: "pve-replication-job-id" },
      ),
      "replication job",
      { ...replicationFields, guest: opt(vmid) },
    ),
    ["/cluster/sdn", [op("GET", index("Directory index.", "id"))]],
    ...crud(
      "/cluster/sdn/zones",
      "zone",
      str("The SDN zone object identifier.", { pattern: "[a-z][a-z0-9]*[a-z0-9]", maxLength: 8 }),
      "SDN zone",
      {
        type: str("Plugin type.", { enum: ["evpn", "faucet", "qinq", "simple", "vlan", "vxlan"] }),
        bridge: opt(str("Bridge.")),
        tag: opt(int("Service-VLAN Tag.", { minimum: 0 })),
        ipam: opt(str("use a specific ipam")),
        dhcp: opt(str("Type of the DHCP backend for this zone", { enum: ["dnsmasq"] })),
        mtu: opt(int("MTU")),
        nodes: opt(str("List of cluster node names.", { format: "pve-node-list" })),
      },
      {},
      { type: opt(str("Only list SDN zones of specific type")) },
    ),
    ...crud(
      "/cluster/sdn/vnets",
      "vnet",
      str("The SDN vnet object identifier.", { pattern: "[a-z][a-z0-9]*[a-z0-9]", maxLength: 8 }),
      "SDN vnet",
      {
        zone: str("Name of the zone this VNet belongs to."),
        tag: opt(
          int("VLAN Tag (for VLAN or QinQ zones) or VXLAN VNI (for VXLAN or EVPN zones).", {
            minimum: 1,
            maximum: 16777215,
          }),
        ),
        alias: opt(str("Alias name of the VNet.", { maxLength: 256 })),
        type: opt(str("Type", { enum: ["vnet"] })),
        vlanaware: opt(bool("Allow VM VLANs to pass through this vnet.")),
        "isolate-ports": opt(
          bool(
            "If true, sets the isolated property for all interfaces on the bridge of this VNet.",
          ),
        ),
      },
    ),
    ...crud(
      "/cluster/sdn/vnets/{vnet}/subnets",
      "subnet",
      str("The SDN subnet object identifier (a CIDR on create)."),
      "SDN subnet",
      {
        type: str("Type", { enum: ["subnet"] }),
        gateway: opt(
          str("Subnet Gateway: Will be assign on vnet for layer3 zones", { format: "ip" }),
        ),
        snat: opt(bool("enable masquerade for this subnet if pve-firewall")),
        dnszoneprefix: opt(str("dns domain zone prefix  ex: 'adm' -> <hostname>.adm.mydomain.com")),
      },
      { vnet: str("The SDN vnet object identifier.") },
    ),
    ["/nodes", [op("GET", {
      name: "index",
      description: "Cluster node index.",
      returns: arr(
        obj({
          node: node,
          status: str("Node status.", { enum: ["unknown", "online", "offline"] }),
          cpu: opt(num("CPU utilization.")),
          maxcpu: opt(int("Number of available CPUs.")),
          mem: opt(int("Used memory in bytes.")),
          maxmem: opt(int("Number of available memory in bytes.")),
          disk: opt(int("Used disk space in bytes.")),
          maxdisk: opt(int("Disk size in bytes.")),
          uptime: opt(int("Node uptime in seconds.")),
          level: opt(str("Support level.")),
          ssl_fingerprint: opt(str("The SSL fingerprint for the node certificate.")),
        }),
        { links: [{ rel: "child", href: "{node}" }] },
      ),
    })]],
    ["/nodes/{node}", [op("GET", { ...index("Node index."), params: { node } })]],
    ["/nodes/{node}/status", [op("GET", {
      name: "status",
      description: "Read node status",
      params: { node },
      returns: obj({
        cpu: num("CPU utilization."),
        uptime: int("Uptime."),
        pveversion: str("The PVE version string."),
        kversion: str("The running kernel version."),
        memory: obj({ total: int("Total."), used: int("Used."), free: int("Free.") }),
        cpuinfo: obj({
          cpus: int("CPUs."),
          model: str("Model."),
          sockets: int("Sockets."),
          cores: int("Cores."),
        }),
        loadavg: arr(str("Load.")),
      }, { additionalProperties: 1 }),
    })]],
    ...crud(
      "/nodes/{node}/network",
      "iface",
      str("Network interface name.", { format: "pve-iface" }),
      "network interface",
      networkFields,
      { node },
      {
        type: opt(
          str("Only list specific interface types.", {
            enum: [...(networkFields.type.enum as string[]), "any_bridge", "any_local_bridge"],
          }),
        ),
      },
    ),
    ["/nodes/{node}/tasks", [op("GET", {
      name: "node_tasks",
      description: "Read task list for one node (finished tasks).",
      params: {
        node,
        start,
        limit: opt(int("Only list this amount of tasks.", { minimum: 0, default: 50 })),
        vmid: opt(int("Only list tasks for this VM.", { minimum: 100 })),
        typefilter: opt(str("Only list tasks of this type (e.g., vzstart, vzdump).")),
        userfilter: opt(str("Only list tasks from this user.")),
        statusfilter: opt(str("List of Task States that should be returned.")),
        source: opt(
          str("List archived, active or all tasks.", {
            enum: ["archive", "active", "all"],
            default: "archive",
          }),
        ),
        errors: opt(bool("Only list tasks with a status of ERROR.", { default: 0 })),
        since: opt(int("Only list tasks since this UNIX epoch.")),
        until: opt(int("Only list tasks until this UNIX epoch.")),
      },
      returns: arr(taskEntry, { links: [{ rel: "child", href: "{upid}" }] }),
    })]],
    ["/nodes/{node}/tasks/{upid}", [
      op("GET", {
        ...index("Task index.", "name"),
        params: { node, upid: str("The task's unique ID.") },
      }),
      op("DELETE", {
        name: "stop_task",
        description: "Stop a task.",
        params: { node, upid: str("The task's unique ID.") },
      }),
    ]],
    ["/nodes/{node}/tasks/{upid}/status", [op("GET", {
      name: "read_task_status",
      description: "Read task status.",
      params: { node, upid: str("The task's unique ID.") },
      returns: obj({
        ...taskEntry.properties,
        status: str("Task state.", { enum: ["running", "stopped"] }),
        exitstatus: opt(str("Exit status once stopped ('OK' on success).")),
      }),
    })]],
    ["/nodes/{node}/tasks/{upid}/log", [op("GET", {
      name: "read_task_log",
      description: "Read task log.",
      params: {
        node,
        upid: str("The task's unique ID."),
        start,
        limit: opt(
          int("The amount of lines to read from the tasklog.", { minimum: 0, default: 50 }),
        ),
        download: opt(bool("Whether the tasklog file should be downloaded.")),
      },
      returns: arr(obj({ n: int("Line number"), t: str("Line text") })),
    })]],
    ["/nodes/{node}/vzdump", [op("POST", {
      name: "vzdump",
      description: "Create backup. Runs as a task.",
      params: {
        node,
        vmid: opt(
          str("The ID of the guest system you want to backup.", { format: "pve-vmid-list" }),
        ),
        all: opt(bool("Backup all known guest systems on this host.", { default: 0 })),
        exclude: opt(
          str("Exclude specified guest systems (assumes --all)", { format: "pve-vmid-list" }),
        ),
        pool: opt(str("Backup all known guest systems included in the specified pool.")),
        storage: opt(storageId),
        mode: opt(
          str("Backup mode.", { enum: ["snapshot", "suspend", "stop"], default: "snapshot" }),
        ),
        compress: opt(
          str("Compress dump file.", { enum: ["0", "1", "gzip", "lzo", "zstd"], default: "0" }),
        ),
        "notes-template": opt(
          str("Template string for generating notes for the backup(s).", { maxLength: 1024 }),
        ),
        protected: opt(bool("If true, mark backup(s) as protected.")),
        remove: opt(bool("Prune older backups according to 'prune-backups'.", { default: 1 })),
      },
      returns: UPID,
    })]],
    ["/nodes/{node}/storage", [op("GET", {
      name: "index",
      description: "Get status for all datastores.",
      params: {
        node,
        content: opt(
          str("Only list stores which support this content type.", {
            format: "pve-storage-content-list",
          }),
        ),
        enabled: opt(bool("Only list stores which are enabled.", { default: 0 })),
        storage: opt(storageId),
        target: opt(node),
        format: opt(bool("Include information about formats")),
      },
      returns: arr(storageEntry, { links: [{ rel: "child", href: "{storage}" }] }),
    })]],
    ["/nodes/{node}/storage/{storage}", [
      op("GET", { ...index("Storage index.", "subdir"), params: { node, storage: storageId } }),
    ]],
    ["/nodes/{node}/storage/{storage}/status", [
      op("GET", {
        name: "read_status",
        description: "Read storage status.",
        params: { node, storage: storageId },
        returns: storageEntry,
      }),
    ]],
    ["/nodes/{node}/storage/{storage}/content", [
      op("GET", {
        name: "index",
        description: "List storage content.",
        params: {
          node,
          storage: storageId,
          content: opt(str("Only list content of this type.", { format: "pve-storage-content" })),
          vmid: opt(vmid),
        },
        returns: arr(
          obj({
            volid: str("Volume identifier."),
            content: str("Content type."),
            format: str("Format identifier ('raw', 'qcow2', 'subvol', 'iso', 'tgz' ...)"),
            size: int("Volume size in bytes."),
            ctime: opt(int("Creation time (seconds since the UNIX Epoch).")),
            vmid: opt(int("Associated Owner VMID.")),
            notes: opt(str("Optional notes.")),
            protected: opt(bool("Protection status.")),
            used: opt(int("Used space.")),
            subtype: opt(str("Guest type of a backup.")),
          }),
          { links: [{ rel: "child", href: "{volid}" }] },
        ),
      }),
      op("POST", {
        name: "create",
        description: "Allocate disk images.",
        params: {
          node,
          storage: storageId,
          filename: str("The name of the file to create."),
          size: str(
            "Size in kilobyte (1024 bytes). Optional suffixes 'M' (megabyte) and 'G' (gigabyte).",
            { pattern: "\\d+[MG]?" },
          ),
          vmid,
          format: opt(str("Format of the image.", { enum: ["raw", "qcow2", "subvol", "vmdk"] })),
        },
        returns: str("Volume identifier"),
      }),
    ]],
    ["/nodes/{node}/storage/{storage}/content/{volume}", [
      op("GET", {
        name: "info",
        description: "Get volume attributes",
        params: { node, storage: opt(storageId), volume: str("Volume identifier") },
        returns: obj({
          path: str("The Path"),
          size: int("Volume size in bytes."),
          used: int("Used space."),
          format: str("Format identifier."),
          notes: opt(str("Optional notes.")),
          protected: opt(bool("Protection status.")),
        }),
      }),
      op("PUT", {
        name: "updateattributes",
        description: "Update volume attributes",
        params: {
          node,
          storage: opt(storageId),
          volume: str("Volume identifier"),
          notes: opt(str("The new notes.")),
          protected: opt(bool("Protection status.")),
        },
      }),
      op("DELETE", {
        name: "delete",
        description: "Delete volume. Runs as a task.",
        params: {
          node,
          storage: opt(storageId),
          volume: str("Volume identifier"),
          delay: opt(int("Time to wait for the task to finish.", { minimum: 1, maximum: 30 })),
        },
        returns: UPID,
      }),
    ]],
    ["/nodes/{node}/storage/{storage}/upload", [
      op("POST", {
        name: "upload",
        description: "Upload templates, ISO images, OVAs and VM images (multipart/form-data).",
        params: {
          node,
          storage: storageId,
          content: str("Content type.", { enum: ["iso", "vztmpl", "import"] }),
          filename: str("The name of the file to create. Caution: This will be normalized!", {
            maxLength: 255,
          }),
          checksum: opt(str("The expected checksum of the file.")),
          "checksum-algorithm": opt(
            str("The algorithm to calculate the checksum of the file.", {
              enum: ["md5", "sha1", "sha224", "sha256", "sha384", "sha512"],
            }),
          ),
        },
        returns: UPID,
      }),
    ]],
    ...guestOps("qemu"),
    ...guestOps("lxc"),
    ["/storage", [
      op("GET", {
        name: "index",
        description: "Storage index.",
        params: { type: opt(str("Only list storage of specific type")) },
        returns: arr(
          obj({
            storage: storageId,
            type: opt(str("Storage type.")),
            content: opt(str("Content types.")),
            shared: opt(bool("Shared.")),
          }),
          { links: [{ rel: "child", href: "{storage}" }] },
        ),
      }),
      op("POST", {
        name: "create",
        description: "Create a new storage.",
        protected: true,
        params: {
          storage: storageId,
          type: str("Storage type.", {
            enum: [
              "btrfs",
              "cephfs",
              "cifs",
              "dir",
              "esxi",
              "iscsi",
              "iscsidirect",
              "lvm",
              "lvmthin",
              "nfs",
              "pbs",
              "rbd",
              "zfs",
              "zfspool",
            ],
          }),
          content: opt(str("Allowed content types.", { format: "pve-storage-content-list" })),
          path: opt(str("File system path.")),
          server: opt(str("Server IP or DNS name.")),
          export: opt(str("NFS export path.")),
          vgname: opt(str("Volume group name.")),
          thinpool: opt(str("LVM thin pool LV name.")),
          nodes: opt(
            str("List of nodes for which the storage configuration applies.", {
              format: "pve-node-list",
            }),
          ),
          shared: opt(
            bool("Indicate that this is a single storage with the same contents on all nodes."),
          ),
          disable: opt(bool("Flag to disable the storage.")),
        },
        returns: obj({
          storage: str("The ID of the created storage."),
          type: str("The type of the created storage."),
        }),
      }),
    ]],
    ["/storage/{storage}", [
      op("GET", {
        name: "read",
        description: "Read storage configuration.",
        params: { storage: storageId },
        returns: obj({}, { additionalProperties: 1 }),
      }),
      op("PUT", {
        name: "update",
        description: "Update storage configuration.",
        protected: true,
        params: {
          storage: storageId,
          content: opt(str("Allowed content types.")),
          nodes: opt(str("List of nodes.", { format: "pve-node-list" })),
          shared: opt(bool("Shared flag.")),
          disable: opt(bool("Flag to disable the storage.")),
          delete: deleteList,
          digest,
        },
        returns: obj({
          storage: str("The ID of the created storage."),
          type: str("The type of the created storage."),
        }),
      }),
      op("DELETE", {
        name: "delete",
        description: "Delete storage configuration.",
        protected: true,
        params: { storage: storageId },
      }),
    ]],
    ["/pools", [
      op("GET", {
        name: "index",
        description: "List pools or get pool configuration.",
        params: {
          poolid: opt(poolid),
          type: opt(str("Member type filter.", { enum: ["qemu", "lxc", "storage"] })),
        },
        returns: arr(
          obj({
            poolid: str("Pool ID."),
            comment: opt(str("Comment.")),
            members: opt(arr(obj({}, { additionalProperties: 1 }))),
          }),
          { links: [{ rel: "child", href: "{poolid}" }] },
        ),
      }),
      op("POST", {
        name: "create_pool",
        description: "Create new pool.",
        params: { poolid, comment: opt(str("Comment.")) },
      }),
    ]],
    ["/pools/{poolid}", [
      op("GET", {
        name: "read_pool",
        description: "Get pool configuration.",
        params: {
          poolid,
          type: opt(str("Member type filter.", { enum: ["qemu", "lxc", "storage"] })),
        },
        returns: obj({
          comment: opt(str("Comment.")),
          members: arr(
            obj({
              id: str("Member id."),
              type: str("Member type."),
              node: str("Node."),
              vmid: opt(int("VMID.")),
              storage: opt(str("Storage.")),
            }),
          ),
        }),
      }),
      op("PUT", {
        name: "update_pool",
        description: "Update pool data.",
        params: {
          poolid,
          comment: opt(str("Comment.")),
          vms: opt(
            str("List of guest VMIDs to add or remove from this pool.", {
              format: "pve-vmid-list",
            }),
          ),
          storage: opt(
            str("List of storage IDs to add or remove from this pool.", {
              format: "pve-storage-id-list",
            }),
          ),
          delete: opt(
            bool("Remove the passed VMIDs and/or storage IDs instead of adding them.", {
              default: 0,
            }),
          ),
          "allow-move": opt(
            bool("Allow adding a guest even if already in another pool.", { default: 0 }),
          ),
        },
      }),
      op("DELETE", { name: "delete_pool", description: "Delete pool.", params: { poolid } }),
    ]],
  ];
}

/** Build the tree (with grouping nodes for intermediate paths) from a flat path list. */
export function buildTree(entries: Array<[string, Operation[]]>): SchemaTree {
  const roots: SchemaNode[] = [];
  const byPath = new Map<string, SchemaNode>();
  const ensure = (path: string): SchemaNode => {
    let n = byPath.get(path);
    if (n) return n;
    const segs = path.split("/").filter(Boolean);
    n = { path, text: segs[segs.length - 1], leaf: 1 };
    byPath.set(path, n);
    if (segs.length === 1) roots.push(n);
    else {
      const parent = ensure("/" + segs.slice(0, -1).join("/"));
      parent.leaf = 0;
      (parent.children ??= []).push(n);
    }
    return n;
  };
  for (const [path, ops] of entries) {
    const n = ensure(path);
    n.info ??= {};
    for (const o of ops) n.info[o.method] = o;
  }
  return roots;
}

/** The catalogue as written here, before the generated parameter table is merged in. */
export function handWrittenCatalogue(): SchemaTree {
  return buildTree(catalogueEntries());
}

/**
 * The hand-written operations with exactly the parameters Proxmox accepts there (names and facts
 * from catalogue_generated.ts where this file does not define them, or types them otherwise),
 * plus the operations taken whole from the generated table.
 */
function withProxmoxParameters(
  entries: Array<[string, Operation[]]>,
): Array<[string, Operation[]]> {
  const merged = entries.map(([path, ops]): [string, Operation[]] => [
    path,
    ops.map((o) => {
      const key = `${o.method} ${path}`;
      const names = PVE_PARAM_NAMES[key];
      if (!names) return o;
      const own = o.parameters?.properties ?? {};
      const generated = PVE_PARAMS[key] ?? {};
      const properties: Record<string, P> = {};
      for (const name of names) properties[name] = generated[name] ?? own[name];
      return { ...o, parameters: { ...o.parameters, properties } };
    }),
  ]);
  const byPath = new Map(merged);
  for (const [key, spec] of Object.entries(PVE_ADDED_OPS)) {
    const [method, path] = key.split(" ") as [HttpMethod, string];
    const operation: Operation = {
      method,
      name: spec.name,
      description: `${spec.name ?? method} (parameters as Proxmox VE; see its API viewer).`,
      allowtoken: 1,
      ...(spec.protected ? { protected: 1 as const } : {}),
      permissions: spec.world ? { user: "world" } : { user: "all" },
      parameters: params(PVE_PARAMS[key] ?? {}),
      returns: spec.returns,
    };
    const ops = byPath.get(path);
    if (ops) ops.push(operation);
    else byPath.set(path, [operation]);
  }
  return [...byPath];
}

/** A fresh copy of the built-in catalogue tree. */
export function builtinCatalogue(): SchemaTree {
  return buildTree(withProxmoxParameters(catalogueEntries()));
}
