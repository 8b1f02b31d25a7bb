/**
 * The nodes' network (docs/sync.md, stage network-interfaces): each interface of each node's
 * device field by field, its addresses, and the device's primary IPv4/IPv6: the address the
 * cluster knows the node by, else the one of the interface with that family's default gateway,
 * else the first by interface name. Over the in-memory fakes of the two ports.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { FakeHypervisor, FakeInventory, LAB, smallCluster } from "./_fakes.ts";
import { runSync, STAGES } from "../../../domain/sync/runner.ts";

async function run(inv: FakeInventory, data: Record<string, unknown>) {
  const complete = await runSync({
    stages: STAGES.filter((s) => ["devices", "network-interfaces"].includes(s.type)),
    endpoints: [LAB],
    hypervisor: () => new FakeHypervisor(data),
    inventory: inv,
    emit: () => {},
    signal: new AbortController().signal,
    now: () => Date.UTC(2026, 0, 1),
  });
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  return complete;
}

function cluster() {
  const data = smallCluster() as Record<string, any>;
  // n1: the cluster knows it by 10.0.0.1 (on vmbr0); n2's status address is on no interface.
  data["/cluster/status"][2].ip = "192.0.2.99";
  data["/nodes/n1/network"] = [
    { iface: "vmbr1", type: "bridge", cidr: "10.1.0.1/24", gateway: "10.1.0.254" },
    { iface: "vmbr0", type: "bridge", cidr: "10.0.0.1/24", bridge_ports: "eno1", mtu: 1500 },
    { iface: "eno1", type: "eth", active: 1 },
    // VLAN 1, the lowest there is.
    { iface: "vmbr1.1", type: "vlan" },
  ];
  data["/nodes/n2/network"] = [
    // No gateway on vmbr0 for IPv4, but the IPv6 default route.
    {
      iface: "vmbr0",
      type: "bridge",
      cidr: "10.0.0.2/24",
      cidr6: "2001:db8::2/64",
      gateway6: "2001:db8::1",
    },
    // The IPv4 default route, and an IPv6 address without one.
    {
      iface: "vmbr1",
      type: "OVSBridge",
      cidr: "10.1.0.2/24",
      gateway: "10.1.0.254",
      cidr6: "2001:db8:1::2/64",
      comments: "uplink",
    },
    { iface: "bond0", type: "bond", active: 0, mtu: "9000", "vlan-id": 0 },
    { iface: "vmbr0.20", type: "vlan", cidr: "10.20.0.2" },
    { iface: "ovs1", type: "OVSBond", "vlan-id": "4094" },
    { iface: "eno2.4095", type: "vlan" },
    // An empty or zero vlan-id (a hand-written interfaces file) is none: the name's .30 tells.
    { iface: "eno2.30", type: "vlan", "vlan-id": "" },
    { iface: "eno3.31", type: "vlan", "vlan-id": 0 },
  ];
  return data;
}

Deno.test("node network: interfaces field by field; the primary IPs are the known address, else the gateway's, per family", async () => {
  const inv = new FakeInventory();
  inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
  const data = cluster();
  await run(inv, data);
  const device = (name: string) => inv.all("dcim/devices/").find((d) => d.name === name)!;
  const iface = (node: string, name: string) =>
    inv.all("dcim/interfaces/").find((i) => i.device === device(node).id && i.name === name)!;
  const vlan = (vid: number) => inv.all("ipam/vlans/").find((v) => v.vid === vid)?.id;
  const shown = (node: string, name: string) => {
    const { id: _id, device: _device, tags: _tags, ...rest } = iface(node, name);
    return rest;
  };
  assert.deepEqual(shown("n1", "vmbr0"), {
    name: "vmbr0",
    type: "bridge",
    enabled: true,
    mtu: 1500,
    description: "ports eno1",
    mode: null,
    untagged_vlan: null,
  });
  assert.deepEqual(shown("n2", "vmbr1"), {
    name: "vmbr1",
    type: "bridge",
    enabled: true,
    mtu: null,
    description: "uplink",
    mode: null,
    untagged_vlan: null,
  });
  assert.deepEqual([shown("n1", "vmbr1.1").mode, shown("n1", "vmbr1.1").untagged_vlan], [
    "access",
    vlan(1),
  ]);
  assert.deepEqual(
    ["eno1", "vmbr1"].map((n) => [shown("n1", n).type, shown("n1", n).enabled]),
    [["other", true], ["bridge", true]],
  );
  assert.deepEqual(shown("n2", "bond0"), {
    name: "bond0",
    type: "lag",
    enabled: false,
    mtu: 9000,
    description: "",
    mode: null,
    untagged_vlan: null,
  });
  assert.deepEqual(
    [
      shown("n2", "vmbr0.20"),
      shown("n2", "ovs1"),
      shown("n2", "eno2.4095"),
      shown("n2", "eno2.30"),
      shown("n2", "eno3.31"),
    ].map((i) => [
      i.type,
      i.mode,
      i.untagged_vlan,
    ]),
    [
      ["virtual", "access", vlan(20)],
      ["lag", "access", vlan(4094)],
      ["virtual", null, null],
      ["virtual", "access", vlan(30)],
      ["virtual", "access", vlan(31)],
    ],
  );
  assert.deepEqual(
    inv.all("ipam/vlans/").map((v) => [v.vid, v.name] as [number, string]).sort((a, b) =>
      a[0] - b[0]
    ),
    [[1, "VLAN 1"], [20, "VLAN 20"], [30, "VLAN 30"], [31, "VLAN 31"], [4094, "VLAN 4094"]],
  );
  // Addresses: each interface's, with a mask only (vmbr0.20's has none).
  const ips = inv.all("ipam/ip-addresses/");
  const addressOf = (id: unknown) => ips.find((a) => a.id === id)?.address ?? null;
  assert.deepEqual(ips.map((a) => a.address).sort(), [
    "10.0.0.1/24",
    "10.0.0.2/24",
    "10.1.0.1/24",
    "10.1.0.2/24",
    "2001:db8:1::2/64",
    "2001:db8::2/64",
  ]);
  assert.ok(ips.every((a) => a.assigned_object_type === "dcim.interface" && a.status === "active"));
  assert.equal(
    ips.find((a) => a.address === "10.1.0.2/24")!.assigned_object_id,
    iface("n2", "vmbr1").id,
  );
  // n1: the address the cluster knows it by, though vmbr1 has the gateway; no IPv6.
  assert.deepEqual(
    [addressOf(device("n1").primary_ip4), device("n1").primary_ip6 ?? null],
    ["10.0.0.1/24", null],
  );
  // n2: per family, the interface with that family's default gateway.
  assert.deepEqual(
    [addressOf(device("n2").primary_ip4), addressOf(device("n2").primary_ip6)],
    ["10.1.0.2/24", "2001:db8::2/64"],
  );

  // Upstream: n2 loses its IPv4 gateway and vmbr0.20; n1 is known by no address it has.
  delete data["/nodes/n2/network"][1].gateway;
  data["/nodes/n2/network"] = data["/nodes/n2/network"].filter((n: any) => n.iface !== "vmbr0.20");
  data["/cluster/status"][1].ip = "192.0.2.98";
  const before = inv.writes.length;
  await run(inv, data);
  // n2: no gateway: the first address by interface name (vmbr0); n1: vmbr1's gateway wins.
  assert.deepEqual(
    [addressOf(device("n1").primary_ip4), addressOf(device("n2").primary_ip4)],
    ["10.1.0.1/24", "10.0.0.2/24"],
  );
  assert.equal(addressOf(device("n2").primary_ip6), "2001:db8::2/64");
  assert.equal(iface("n2", "vmbr0.20"), undefined, "a gone interface is deleted");
  const writes = inv.writes.slice(before).map((w) => w.replace(/\d+$/, "")).sort();
  assert.deepEqual(writes, [
    "DELETE dcim/interfaces/",
    "PATCH dcim/devices/",
    "PATCH dcim/devices/",
    "PATCH plugins/service/nodes/",
  ]);
});
