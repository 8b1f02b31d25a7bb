/** Sync stages and the runner over in-memory fakes of the two ports (no sockets). */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { FakeHypervisor, FakeInventory, LAB, smallCluster } from "./_fakes.ts";
import { runSync, STAGES, type SyncEvent } from "../../../domain/sync/runner.ts";
import type { SyncEndpoint } from "../../../domain/sync/ports.ts";

const FIRST_THREE = STAGES.slice(0, 3);

async function run(
  inv: FakeInventory,
  hv: FakeHypervisor,
  options: { endpoints?: SyncEndpoint[]; signal?: AbortSignal; stages?: typeof STAGES } = {},
) {
  const events: SyncEvent[] = [];
  const complete = await runSync({
    stages: options.stages ?? FIRST_THREE,
    endpoints: options.endpoints ?? [LAB],
    hypervisor: () => hv,
    inventory: inv,
    emit: (e) => {
      events.push(e);
    },
    signal: options.signal ?? new AbortController().signal,
    now: () => Date.UTC(2026, 0, 1),
  });
  return { events, complete };
}

function seedPluginEndpoint(inv: FakeInventory) {
  inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
}

Deno.test("stages: guests become VMs with sidecars; a pushed copy uses its (inv:<pk>) record", async () => {
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  const { complete } = await run(inv, new FakeHypervisor(smallCluster()));
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  const vms = inv.all("virtualization/virtual-machines/");
  assert.deepEqual(vms.map((v) => v.name).sort(), ["ct", "web", "web (2)"]);
  const web = vms.find((v) => v.name === "web")!;
  assert.equal(web.vcpus, 4);
  assert.equal(web.memory, 2048);
  assert.equal(web.disk, 32 * 1024);
  assert.equal(web.status, "active");
  const states = inv.all("plugins/service/vm-sync-state/");
  assert.equal(states.length, 3);
  assert.ok(states.every((s) => s.endpoint === 7), "no second plugin endpoint record");
  assert.equal(inv.all("plugins/service/endpoints/hypervisor/").length, 1);
  assert.equal(
    states.find((s) => s.vmid === 102)!.virtual_machine,
    vms.find((v) => v.name === "web (2)")!.id,
  );
});

Deno.test("stages: a second run with nothing changed writes nothing", async () => {
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  const hv = new FakeHypervisor(smallCluster());
  await run(inv, hv);
  const before = inv.writes.length;
  const { complete } = await run(inv, hv);
  assert.deepEqual(inv.writes.slice(before), []);
  assert.equal(complete.result.created + complete.result.updated, 0);
});

Deno.test("stages: a change upstream patches only the changed fields; hand-set tags stay", async () => {
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  const data = smallCluster();
  const hv = new FakeHypervisor(data);
  await run(inv, hv);
  const web = inv.all("virtualization/virtual-machines/").find((v) => v.name === "web")!;
  const handTag = 999;
  inv.table("virtualization/virtual-machines/").set(web.id, {
    ...web,
    tags: [...(web.tags as number[]), handTag],
  });
  (data["/nodes/n1/qemu/101/config"] as Record<string, unknown>).memory = 4096;
  const before = inv.writes.length;
  await run(inv, hv);
  assert.deepEqual(inv.writes.slice(before), [
    `PATCH virtualization/virtual-machines/${web.id}`,
    `PATCH plugins/service/vm-sync-state/${
      inv.all("plugins/service/vm-sync-state/").find((s) => s.vmid === 101)!.id
    }`,
  ]);
  const after = inv.table("virtualization/virtual-machines/").get(web.id)!;
  assert.equal(after.memory, 4096);
  assert.ok((after.tags as number[]).includes(handTag));
});

Deno.test("stages: a guest gone upstream is marked, never deleted", async () => {
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  const data = smallCluster();
  const hv = new FakeHypervisor(data);
  await run(inv, hv);
  data["/cluster/resources"] = (data["/cluster/resources"] as { vmid: number }[])
    .filter((r) => r.vmid !== 200);
  await run(inv, hv);
  const state = inv.all("plugins/service/vm-sync-state/").find((s) => s.vmid === 200)!;
  assert.equal(state.status, "missing");
  const vm = inv.table("virtualization/virtual-machines/").get(state.virtual_machine as number)!;
  assert.equal(vm.status, "decommissioning");
  const missing = inv.all("extras/tags/").find((t) => t.slug === "bridgebox-missing")!.id;
  assert.ok((vm.tags as number[]).includes(missing));
  assert.equal(inv.all("virtualization/virtual-machines/").length, 3);
});

Deno.test("stages: one object the inventory refuses is reported by name; the others are written", async () => {
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  inv.refuse = (path, body) =>
    path === "virtualization/virtual-machines/" && body.name === "ct"
      ? { name: ["refused for the test"] }
      : null;
  const { complete, events } = await run(inv, new FakeHypervisor(smallCluster()));
  assert.equal(complete.ok, false);
  const errors = events.filter((e) => e.event === "error").map((e) => e.data as any);
  assert.equal(errors.length, 1);
  assert.match(errors[0].object, /vmid 200/);
  assert.match(errors[0].detail, /refused for the test/);
  assert.deepEqual(
    inv.all("virtualization/virtual-machines/").map((v) => v.name).sort(),
    ["web", "web (2)"],
  );
  const vmStage = complete.stages.find((s) => s.step === "virtual-machines")!.result;
  assert.equal(vmStage.failed, 1);
});

Deno.test("runner: a failing endpoint is reported and does not hide the other's results; complete once, last", async () => {
  const inv = new FakeInventory();
  const good = new FakeHypervisor(smallCluster());
  const broken = new FakeHypervisor({});
  const other: SyncEndpoint = { ...LAB, id: 2, name: "broken" };
  const events: SyncEvent[] = [];
  const complete = await runSync({
    stages: FIRST_THREE,
    endpoints: [other, LAB],
    hypervisor: (e) => (e.id === 2 ? broken : good),
    inventory: inv,
    emit: (e) => {
      events.push(e);
    },
    signal: new AbortController().signal,
  });
  assert.equal(complete.ok, false);
  assert.equal(events.filter((e) => e.event === "complete").length, 1);
  assert.equal(events.at(-1)!.event, "complete");
  const errors = events.filter((e) => e.event === "error").map((e) => e.data as any);
  assert.equal(errors.length, 3, "one per stage for the broken endpoint");
  assert.ok(errors.every((e) => e.endpoint_id === 2 && e.upstream_status === 404));
  assert.match(errors[0].url, /api2\/json\/cluster\/status/);
  assert.match(errors[0].detail, /endpoint 2 \("broken"\)/);
  assert.equal(inv.all("virtualization/virtual-machines/").length, 3);
});

Deno.test("runner: an abort stops before the next write and completes as cancelled", async () => {
  const inv = new FakeInventory();
  const controller = new AbortController();
  const hv = new FakeHypervisor(smallCluster());
  const original = hv.get.bind(hv);
  hv.get = <T>(path: string) => {
    if (path === "/cluster/resources") controller.abort();
    return original<T>(path);
  };
  const { complete, events } = await run(inv, hv, { signal: controller.signal });
  assert.equal(complete.ok, false);
  assert.equal(complete.message, "Sync cancelled");
  assert.equal(events.filter((e) => e.event === "complete").length, 1);
  assert.equal(inv.all("virtualization/virtual-machines/").length, 0);
});

/**
 * Guest 101 running with its agent on and no static address: the agent's address counts, and
 * the host name it reports becomes the address's DNS name when NetBox's dns_name rule takes it
 * (a guest's owner sets that name inside the guest: anything may come back).
 */
async function agentAddress(hostName: string | null) {
  const data = smallCluster();
  Object.assign(data["/nodes/n1/qemu/101/config"] as Record<string, unknown>, { agent: "1" });
  const agent = "/nodes/n1/qemu/101/agent";
  data[`${agent}/network-get-interfaces`] = {
    result: [{
      name: "eth0",
      "hardware-address": "bc:24:11:00:65:00",
      "ip-addresses": [{ "ip-address-type": "ipv4", "ip-address": "10.9.0.7", prefix: 24 }],
    }],
  };
  // null: an agent that does not answer get-host-name (an older or restricted agent).
  if (hostName !== null) data[`${agent}/get-host-name`] = { result: { "host-name": hostName } };
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  const stages = STAGES.filter((s) =>
    ["devices", "virtual-machines", "vm-interfaces", "ip-addresses"].includes(s.type)
  );
  const { complete } = await run(inv, new FakeHypervisor(data), { stages });
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  const ips = inv.all("ipam/ip-addresses/").filter((a) => a.address === "10.9.0.7/24");
  assert.equal(ips.length, 1, "the agent's address is written either way");
  return ips[0].dns_name ?? null;
}

Deno.test("stages: a guest agent's host name is the address's DNS name only when NetBox takes it as one", async () => {
  assert.equal(await agentAddress(" Web01.Corp.example "), "web01.corp.example");
  assert.equal(await agentAddress("_sip._tcp.corp"), "_sip._tcp.corp");
  // A Windows guest's agent reports a display name; NetBox refuses spaces and most punctuation.
  assert.equal(await agentAddress("Build Server (old)"), null);
  assert.equal(await agentAddress("web01..corp"), null);
  assert.equal(await agentAddress(`${"a".repeat(63)}.`.repeat(5)), null, "over 255 characters");
  assert.equal(await agentAddress(""), null);
  assert.equal(await agentAddress(null), null, "no host name: the address all the same");
});

/**
 * Another run (another endpoint, another backend process) creates each reference object between
 * this run's look and its write: the inventory refuses this run's create, as NetBox does a
 * unique name or slug. For a bulk create (tags, VLANs) the other run made only the first.
 */
class RacingInventory extends FakeInventory {
  readonly raced: string[] = [];
  override create(path: string, bodies: Record<string, unknown>[]) {
    const first = bodies[0];
    // Once per object; a bulk path once (the run's retry of the rest is not raced again).
    const key = BULK_PATHS.includes(path) ? path : `${path}${first?.slug ?? first?.name}`;
    if (!RACED_PATHS.includes(path) || this.raced.includes(key)) return super.create(path, bodies);
    this.raced.push(key);
    return super.create(path, [first]).then(() => {
      throw Object.assign(new Error(`bulk write on ${path}: HTTP 400`), {
        operation: "bulk write on",
        url: `http://inventory.test/api/${path}`,
        status: 400,
        refused: true,
        itemErrors: [{ slug: ["already exists"] }],
        itemIndex: 0,
      });
    });
  }
}
const BULK_PATHS = ["extras/tags/", "ipam/vlans/"];
const RACED_PATHS = [
  "extras/tags/",
  "dcim/manufacturers/",
  "dcim/device-types/",
  "dcim/device-roles/",
  "virtualization/cluster-types/",
  "dcim/sites/",
  "plugins/service/endpoints/hypervisor/",
  "ipam/vlans/",
];

Deno.test("stages: reference objects another run makes at the same moment are taken, made once, and not counted as this run's", async () => {
  const inv = new RacingInventory();
  const stages = STAGES.filter((s) =>
    ["devices", "virtual-machines", "vm-interfaces"].includes(s.type)
  );
  // A copy made on the backend (no "(inv:<pk>)"): its plugin endpoint record is found by name.
  const { complete, events } = await run(inv, new FakeHypervisor(smallCluster()), {
    endpoints: [{ ...LAB, name: "lab" }],
    stages,
  });
  assert.deepEqual(events.filter((e) => e.event === "error").map((e) => e.data), []);
  assert.equal(complete.ok, true);
  const count = (path: string, key: string) => {
    const values = inv.all(path).map((o) => String(o[key]));
    return Object.fromEntries(
      [...new Set(values)].map((v) => [v, values.filter((x) => x === v).length]),
    );
  };
  assert.deepEqual(count("extras/tags/", "slug"), {
    "bridgebox-synced": 1,
    "bridgebox-missing": 1,
    "bridgebox-template": 1,
    prod: 1,
    web: 1,
  });
  assert.deepEqual(count("dcim/device-roles/", "slug"), {
    hypervisor: 1,
    "virtual-machine": 1,
    container: 1,
  });
  assert.deepEqual(count("dcim/manufacturers/", "slug"), { proxmox: 1 });
  assert.deepEqual(count("dcim/device-types/", "slug"), { "proxmox-ve-node": 1 });
  assert.deepEqual(count("virtualization/cluster-types/", "slug"), { "proxmox-ve": 1 });
  assert.deepEqual(count("dcim/sites/", "slug"), { lab: 1 });
  assert.deepEqual(count("plugins/service/endpoints/hypervisor/", "name"), { lab: 1 });
  assert.deepEqual(count("ipam/vlans/", "vid"), { "10": 1 });
  // Everything hangs on the objects that exist: the other run's.
  const [endpoint] = inv.all("plugins/service/endpoints/hypervisor/");
  assert.ok(inv.all("plugins/service/vm-sync-state/").every((s) => s.endpoint === endpoint.id));
  const [role] = inv.all("dcim/device-roles/").filter((r) => r.slug === "virtual-machine");
  const vms = inv.all("virtualization/virtual-machines/");
  assert.ok(vms.filter((v) => v.name !== "ct").every((v) => v.role === role.id));
  const [vlan] = inv.all("ipam/vlans/");
  const net0 = inv.all("virtualization/interfaces/").find((i) =>
    i.untagged_vlan !== undefined && i.untagged_vlan !== null
  );
  assert.equal(net0?.untagged_vlan, vlan.id);
  // What the other run made is not this run's: created counts only this run's own writes.
  const made = inv.writes.filter((w) => w.startsWith("POST")).length - inv.raced.length;
  assert.equal(complete.result.created, made);
});

Deno.test("stages: a node record deleted by hand is made again for the node's device, found by name (no second device)", async () => {
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  const hv = new FakeHypervisor(smallCluster());
  await run(inv, hv);
  const devices = inv.all("dcim/devices/").map((d) => [d.name, d.id]).sort();
  assert.equal(devices.length, 2);
  inv.table("plugins/service/nodes/").clear();
  const { complete } = await run(inv, hv);
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  assert.deepEqual(inv.all("dcim/devices/").map((d) => [d.name, d.id]).sort(), devices);
  const byId = new Map(devices.map(([name, id]) => [id, name]));
  assert.deepEqual(
    inv.all("plugins/service/nodes/").map((n) => [n.name, byId.get(n.device as number)]).sort(),
    [["n1", "n1"], ["n2", "n2"]],
  );
});

Deno.test("stages: the cluster a plugin cluster record names is gone: a new one is made, the record and the nodes follow it, each write counted", async () => {
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  const hv = new FakeHypervisor(smallCluster());
  await run(inv, hv);
  const [old] = inv.all("virtualization/clusters/");
  inv.table("virtualization/clusters/").delete(old.id);
  const before = inv.writes.length;
  const { complete } = await run(inv, hv, { stages: STAGES.slice(0, 1) });
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  const writes = inv.writes.slice(before);
  const [made] = inv.all("virtualization/clusters/");
  assert.notEqual(made.id, old.id);
  assert.equal(inv.all("plugins/service/clusters/")[0].cluster, made.id);
  assert.ok(inv.all("dcim/devices/").every((d) => d.cluster === made.id));
  // The record re-pointed, the devices moved: each an update; the cluster a creation.
  const patches = writes.filter((w) => w.startsWith("PATCH"));
  assert.ok(
    patches.includes(
      `PATCH plugins/service/clusters/${inv.all("plugins/service/clusters/")[0].id}`,
    ),
  );
  assert.equal(complete.result.updated, patches.length, writes.join("\n"));
  assert.equal(complete.result.created, writes.filter((w) => w.startsWith("POST")).length);
});

Deno.test("stages: a write of one object that fails as a whole (no per-item answer) is reported naming that object", async () => {
  class FailingInventory extends FakeInventory {
    override create(path: string, bodies: Record<string, unknown>[]) {
      if (path !== "virtualization/virtual-machines/") return super.create(path, bodies);
      return Promise.reject(
        Object.assign(new Error(`bulk write on ${path}: HTTP 503`), {
          operation: "bulk write on",
          url: `http://inventory.test/api/${path}`,
          status: 503,
        }),
      );
    }
  }
  const data = smallCluster();
  data["/cluster/resources"] = (data["/cluster/resources"] as { vmid: number }[])
    .filter((r) => r.vmid === 101);
  const inv = new FailingInventory();
  seedPluginEndpoint(inv);
  const { complete, events } = await run(inv, new FakeHypervisor(data));
  assert.equal(complete.ok, false);
  const errors = events.filter((e) => e.event === "error").map((e) => e.data as any);
  assert.deepEqual(
    errors.map((e) => [e.step, e.object, e.upstream_status]),
    [["virtual-machines", "virtual machine web (vmid 101)", 503]],
  );
});

Deno.test("stages: without node entries in /cluster/status (a token that may not read it), /nodes says which node is online", async () => {
  const data = smallCluster();
  data["/cluster/status"] = [];
  data["/nodes"] = [
    { node: "n1", status: "online", maxcpu: 8, maxmem: 1024 ** 3 },
    { node: "n2", status: "offline", maxcpu: 8, maxmem: 1024 ** 3 },
  ];
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  const { complete } = await run(inv, new FakeHypervisor(data), { stages: STAGES.slice(0, 1) });
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  assert.deepEqual(
    inv.all("dcim/devices/").map((d) => [d.name, d.status]).sort(),
    [["n1", "active"], ["n2", "offline"]],
  );
  assert.deepEqual(
    inv.all("plugins/service/nodes/").map((n) => [n.name, n.online]).sort(),
    [["n1", true], ["n2", false]],
  );
  const [cluster] = inv.all("plugins/service/clusters/");
  assert.deepEqual([cluster.mode, cluster.nodes_online, cluster.nodes_total], ["standalone", 1, 2]);
});

Deno.test("stages: a storage whose nodes no longer report its sizes has them cleared, not kept from before", async () => {
  const data = smallCluster();
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  const storageOnly = STAGES.filter((s) => ["devices", "storage"].includes(s.type));
  await run(inv, new FakeHypervisor(data), { stages: storageOnly });
  const local = () => inv.all("plugins/service/storage/").find((s) => s.name === "local")!;
  assert.deepEqual([local().total, local().used, local().avail], [200, 30, 170]);
  // Disabled since: the nodes list it no more, so there are no sizes to report.
  data["/nodes/n1/storage"] = [];
  data["/nodes/n2/storage"] = [];
  const { complete } = await run(inv, new FakeHypervisor(data), { stages: storageOnly });
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  assert.deepEqual([local().total, local().used, local().avail], [null, null, null]);
});

Deno.test("stages: a guest's state upstream is its VM's status: running active, paused or suspended paused, anything else offline", async () => {
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  const data = smallCluster();
  const states = ["running", "paused", "suspended", "stopped", undefined, "prelaunch"];
  data["/cluster/resources"] = states.map((status, i) => ({
    vmid: 300 + i,
    name: `g${i}`,
    node: "n1",
    type: "qemu",
    ...(status ? { status } : {}),
  }));
  states.forEach((_, i) => data[`/nodes/n1/qemu/${300 + i}/config`] = { name: `g${i}`, cores: 1 });
  const { complete } = await run(inv, new FakeHypervisor(data));
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  const vms = inv.all("virtualization/virtual-machines/").sort((a, b) =>
    String(a.name).localeCompare(String(b.name))
  );
  assert.deepEqual(vms.map((v) => [v.name, v.status]), [
    ["g0", "active"],
    ["g1", "paused"],
    ["g2", "paused"],
    ["g3", "offline"],
    ["g4", "offline"],
    ["g5", "offline"],
  ]);
});

Deno.test("stages: a backend copy takes the plugin endpoint record of its name only when it names the same host and port", async () => {
  const EPS = "plugins/service/endpoints/hypervisor/";
  const direct: SyncEndpoint = { ...LAB, name: "direct", ip: "10.0.0.1", port: 8006 };
  const stagesOnly = STAGES.slice(0, 1);
  // Same name, same port, another host; same name, same host, another port: neither is it.
  const inv = new FakeInventory();
  inv.table(EPS).set(3, { id: 3, name: "direct", domain: "10.9.9.9", port: 8006 });
  inv.table(EPS).set(4, { id: 4, name: "direct", domain: "10.0.0.1", port: 443 });
  const { complete } = await run(inv, new FakeHypervisor(smallCluster()), {
    endpoints: [direct],
    stages: stagesOnly,
  });
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  const made = inv.all(EPS).filter((e) => e.id !== 3 && e.id !== 4);
  assert.deepEqual(made.map((e) => [e.name, e.domain, e.port, e.enabled]), [
    ["direct", "10.0.0.1", 8006, false],
  ]);
  const nodes = inv.all("plugins/service/nodes/");
  assert.ok(nodes.length && nodes.every((n) => n.endpoint === made[0].id));

  // Named by its address record instead of a domain: that one is it, nothing is made.
  const inv2 = new FakeInventory();
  inv2.table(EPS).set(5, {
    id: 5,
    name: "direct",
    domain: "",
    ip_address: { id: 1, address: "10.0.0.1/24" },
    port: 8006,
  });
  await run(inv2, new FakeHypervisor(smallCluster()), { endpoints: [direct], stages: stagesOnly });
  assert.deepEqual(inv2.all(EPS).map((e) => e.id), [5]);
  assert.ok(inv2.all("plugins/service/nodes/").every((n) => n.endpoint === 5));
});

Deno.test("stages: a backend copy whose record another run makes at the same moment takes that one, not an older record of its name for another host", async () => {
  const EPS = "plugins/service/endpoints/hypervisor/";
  const direct: SyncEndpoint = { ...LAB, name: "direct", ip: "10.0.0.1", port: 8006 };
  const inv = new RacingInventory();
  // The older record (the lower id), written past the race: only the run's own create races.
  const [other] = await FakeInventory.prototype.create.call(inv, EPS, [
    { name: "direct", domain: "10.9.9.9", port: 8006 },
  ]);
  const { complete } = await run(inv, new FakeHypervisor(smallCluster()), {
    endpoints: [direct],
    stages: STAGES.slice(0, 1),
  });
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  const records = inv.all(EPS).map((e) => [e.id, e.name, e.domain, e.port]);
  assert.equal(records.length, 2, JSON.stringify(records));
  assert.ok(inv.raced.includes(`${EPS}direct`));
  const raced = inv.all(EPS).find((e) => e.id !== other.id)!;
  assert.ok(raced.id > other.id);
  assert.deepEqual([raced.name, raced.domain, raced.port], ["direct", "10.0.0.1", 8006]);
  const nodes = inv.all("plugins/service/nodes/");
  assert.deepEqual(nodes.map((n) => n.endpoint), [raced.id, raced.id]);
  // The other host's record is untouched, and nothing hangs on it.
  assert.deepEqual(inv.table(EPS).get(other.id), {
    id: other.id,
    name: "direct",
    domain: "10.9.9.9",
    port: 8006,
  });
});

Deno.test("stages: a device made by hand in the cluster, with tags of its own, is never taken or marked by the sync", async () => {
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  const hv = new FakeHypervisor(smallCluster());
  const stagesOnly = STAGES.slice(0, 1);
  await run(inv, hv, { stages: stagesOnly });
  const DEVICES = "dcim/devices/";
  const [n1] = inv.all(DEVICES).filter((d) => d.name === "n1");
  inv.table("extras/tags/").set(900, { id: 900, slug: "mine", name: "mine" });
  const hand = {
    id: 901,
    name: "switch-1",
    cluster: n1.cluster,
    site: n1.site,
    status: "active",
    tags: [{ id: 900, slug: "mine" }],
  };
  inv.table(DEVICES).set(901, structuredClone(hand));
  const before = inv.writes.length;
  const { complete } = await run(inv, hv, { stages: stagesOnly });
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  assert.deepEqual(inv.table(DEVICES).get(901), hand);
  assert.ok(!inv.writes.slice(before).some((w) => w.endsWith("/901")), inv.writes.join());
});

Deno.test("stages: a guest's agent is asked for addresses only when its config turns the agent on", async () => {
  const asked = async (agentSetting: string | null, status = "running") => {
    const data = smallCluster();
    (data["/cluster/resources"] as { vmid: number; status: string }[])[0].status = status;
    const config = data["/nodes/n1/qemu/101/config"] as Record<string, unknown>;
    if (agentSetting !== null) config.agent = agentSetting;
    const agent = "/nodes/n1/qemu/101/agent";
    data[`${agent}/network-get-interfaces`] = {
      result: [{
        "hardware-address": "bc:24:11:00:65:00",
        "ip-addresses": [{ "ip-address": "10.9.0.8", prefix: 24 }],
      }],
    };
    const inv = new FakeInventory();
    seedPluginEndpoint(inv);
    const hv = new FakeHypervisor(data);
    const stages = STAGES.filter((s) =>
      ["devices", "virtual-machines", "vm-interfaces", "ip-addresses"].includes(s.type)
    );
    const { complete } = await run(inv, hv, { stages });
    assert.equal(complete.ok, true, JSON.stringify(complete.errors));
    const read = hv.reads.some((p) => p.startsWith(agent));
    const written = inv.all("ipam/ip-addresses/").some((a) => a.address === "10.9.0.8/24");
    assert.equal(read, written, String(agentSetting));
    return read;
  };
  assert.equal(await asked("1"), true);
  assert.equal(await asked("enabled=1,fstrim_cloned_disks=1"), true);
  assert.equal(await asked("1,type=virtio"), true);
  assert.equal(await asked("0"), false);
  assert.equal(await asked("enabled=0,type=isa"), false);
  assert.equal(await asked(null), false);
  // A guest that is not running has no agent to answer.
  assert.equal(await asked("1", "stopped"), false);
});

Deno.test("stages: a guest agent's addresses go to the interface of their MAC (any case); loopback, link-local, unknown MACs and empty entries are left out; the primary IPs are the first of each family", async () => {
  const data = smallCluster();
  const config = data["/nodes/n1/qemu/101/config"] as Record<string, unknown>;
  Object.assign(config, {
    agent: "1",
    net1: "virtio=BC:24:11:00:65:01,bridge=vmbr1",
    net2: "virtio=BC:24:11:00:65:02,bridge=vmbr1",
  });
  const agent = "/nodes/n1/qemu/101/agent";
  data[`${agent}/network-get-interfaces`] = {
    result: [
      {
        name: "lo",
        "hardware-address": "00:00:00:00:00:00",
        "ip-addresses": [{ "ip-address": "127.0.0.1", prefix: 8 }, { "ip-address": "::1" }],
      },
      // net1's, listed first by the agent: still net1's (interface order decides the primary).
      {
        name: "eth1",
        "hardware-address": "bc:24:11:00:65:01",
        "ip-addresses": [
          { "ip-address": "10.1.0.5", prefix: 16 },
          { "ip-address": "fe80::be24:11ff:fe00:6501", prefix: 64 },
          { "ip-address": "2001:db8::5" },
          { prefix: 24 },
        ],
      },
      {
        name: "eth0",
        "hardware-address": "BC:24:11:00:65:00",
        "ip-addresses": [
          { "ip-address": "169.254.10.1", prefix: 16 },
          { "ip-address": "127.0.1.1", prefix: 8 },
          { "ip-address": "::1", prefix: 128 },
          { "ip-address": "10.0.0.5" },
          { "ip-address": "2001:db8::1", prefix: 64 },
        ],
      },
      { name: "docker0", "ip-addresses": [{ "ip-address": "172.17.0.1", prefix: 16 }] },
      {
        name: "eth9",
        "hardware-address": "bc:24:11:00:65:99",
        "ip-addresses": [{ "ip-address": "10.99.0.1", prefix: 24 }],
      },
      { name: "eth2", "hardware-address": "bc:24:11:00:65:02" },
    ],
  };
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  const stages = STAGES.filter((s) =>
    ["devices", "virtual-machines", "vm-interfaces", "ip-addresses"].includes(s.type)
  );
  const { complete } = await run(inv, new FakeHypervisor(data), { stages });
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  const vm = inv.all("plugins/service/vm-sync-state/").find((s) => s.vmid === 101)!
    .virtual_machine;
  const ifaces = new Map(
    inv.all("virtualization/interfaces/").filter((i) => i.virtual_machine === vm).map((
      i,
    ) => [i.id, String(i.name)]),
  );
  const byIface = (name: string) =>
    inv.all("ipam/ip-addresses/")
      .filter((a) => ifaces.get(Number(a.assigned_object_id)) === name)
      .map((a) => a.address).sort();
  assert.deepEqual(byIface("net0"), ["10.0.0.5/32", "2001:db8::1/64"]);
  assert.deepEqual(byIface("net1"), ["10.1.0.5/16", "2001:db8::5/128"]);
  assert.deepEqual(byIface("net2"), []);
  assert.deepEqual(
    inv.all("ipam/ip-addresses/").map((a) => a.address).filter((a) =>
      /^(127\.|::1|fe80|169\.254|172\.17|10\.99)/.test(String(a))
    ),
    [],
  );
  const machine = inv.table("virtualization/virtual-machines/").get(Number(vm))!;
  const address = (id: unknown) => inv.table("ipam/ip-addresses/").get(Number(id))?.address;
  assert.deepEqual([address(machine.primary_ip4), address(machine.primary_ip6)], [
    "10.0.0.5/32",
    "2001:db8::1/64",
  ]);
});

Deno.test("stages: a cluster renamed upstream gets a plugin cluster record and a cluster of its new name; the old record is not taken over", async () => {
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  const data = smallCluster();
  const hv = new FakeHypervisor(data);
  await run(inv, hv, { stages: STAGES.slice(0, 1) });
  const [oldRecord] = inv.all("plugins/service/clusters/");
  (data["/cluster/status"] as { type: string; name: string }[])[0].name = "lab2";
  const { complete } = await run(inv, hv, { stages: STAGES.slice(0, 1) });
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  const records = inv.all("plugins/service/clusters/");
  assert.deepEqual(records.map((r) => [r.name, r.endpoint]), [["lab", 7], ["lab2", 7]]);
  assert.deepEqual(inv.table("plugins/service/clusters/").get(oldRecord.id), oldRecord);
  const clusters = new Map(inv.all("virtualization/clusters/").map((c) => [c.id, c.name]));
  assert.equal(clusters.get(Number(records[1].cluster)), "lab2");
  assert.equal(clusters.get(Number(records[0].cluster)), "lab");
});

Deno.test("stages: of two sync-state records of one guest, the first by id is the guest's, whatever order the walk reads them in", async () => {
  const STATES = "plugins/service/vm-sync-state/";
  const inv = new FakeInventory();
  seedPluginEndpoint(inv);
  const hv = new FakeHypervisor(smallCluster());
  await run(inv, hv, { stages: STAGES.slice(0, 3) });
  const state = inv.all(STATES).find((s) => s.vmid === 102)!;
  // A second record of guest 102 with a lower id, read after the first (a hand-made copy
  // with only some of its fields).
  inv.table(STATES).set(1, {
    id: 1,
    endpoint: 7,
    vmid: 102,
    vm_type: "qemu",
    virtual_machine: state.virtual_machine,
  });
  assert.deepEqual([...inv.table(STATES).keys()].slice(-1), [1]);
  const before = inv.writes.length;
  const { complete } = await run(inv, hv, { stages: STAGES.slice(0, 3) });
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  assert.deepEqual(inv.writes.slice(before), [`PATCH ${STATES}1`]);
  const { id: _a, last_updated: _b, ...kept } = state;
  const { id: _c, last_updated: _d, ...written } = inv.table(STATES).get(1)!;
  assert.deepEqual(written, kept);
  assert.deepEqual(inv.table(STATES).get(state.id), state);
});

Deno.test("stages: a VM moved by hand to another cluster while the run is under way gets no primary IPs from it", async () => {
  const VMS = "virtualization/virtual-machines/";
  /** Moves guest 200's VM to cluster 999 just before the ip-addresses stage reads the VMs. */
  class MovingInventory extends FakeInventory {
    moved: number | null = null;
    override list(path: string, query: Record<string, string | string[]>) {
      if (path === VMS && String(query.fields ?? "").includes("primary_ip4") && this.moved) {
        const vm = this.table(VMS).get(this.moved)!;
        this.table(VMS).set(vm.id, { ...vm, cluster: 999 });
      }
      return super.list(path, query);
    }
  }
  const inv = new MovingInventory();
  seedPluginEndpoint(inv);
  const stages = STAGES.filter((s) =>
    ["devices", "virtual-machines", "vm-interfaces", "ip-addresses"].includes(s.type)
  );
  const data = smallCluster();
  const hv = new FakeHypervisor(data);
  await run(inv, hv, { stages });
  const vm = Number(
    inv.all("plugins/service/vm-sync-state/").find((s) => s.vmid === 200)!.virtual_machine,
  );
  const first = inv.table(VMS).get(vm)!;
  assert.equal(
    inv.table("ipam/ip-addresses/").get(Number(first.primary_ip4))?.address,
    "10.0.0.50/24",
  );
  // Upstream the container's address changes; meanwhile an admin moves its VM elsewhere.
  (data["/nodes/n1/lxc/200/config"] as Record<string, unknown>).net0 =
    "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:C8:00,ip=10.0.0.51/24";
  inv.moved = vm;
  const before = inv.writes.length;
  const { complete } = await run(inv, hv, { stages });
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  assert.deepEqual(inv.writes.slice(before).filter((w) => w.startsWith(`PATCH ${VMS}`)), []);
  assert.equal(inv.table(VMS).get(vm)!.primary_ip4, first.primary_ip4);
});
