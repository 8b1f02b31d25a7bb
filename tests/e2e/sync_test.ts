/**
 * The sync end to end on one real socket: the mock hypervisor, the backend and the inventory
 * of this app wired to each other, read back through the inventory's REST API as a NetBox
 * client would.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import {
  addInventoryCopy,
  inventoryWrites,
  KEY,
  ROOT,
  type SseFrame,
  syncWorld,
  WaitingLogger,
} from "./_sync_harness.ts";
import { STAGES } from "../../domain/sync/runner.ts";
import { refusingListener } from "../_net.ts";

const FAST_TASKS = { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" };

function completes(frames: SseFrame[]) {
  return frames.filter((f) => f.event === "complete");
}

function stageResults(frames: SseFrame[]): Record<string, any> {
  const out: Record<string, any> = {};
  for (const f of frames) {
    if (f.event === "step" && f.data.status === "completed") out[f.data.step] = f.data.result;
  }
  return out;
}

/** Every stage frames started → progress… → completed, in table order; complete last, once. */
function assertWellFormed(frames: SseFrame[], types = STAGES.map((s) => s.type)) {
  assert.equal(completes(frames).length, 1, "exactly one complete");
  assert.equal(frames.at(-1)!.event, "complete", "complete comes last");
  const steps = frames.filter((f) => f.event === "step");
  assert.deepEqual(
    steps.filter((f) => f.data.status === "started").map((f) => f.data.step),
    types,
  );
  for (const type of types) {
    const mine = steps.filter((f) => f.data.step === type);
    assert.equal(mine[0].data.status, "started", type);
    assert.equal(mine.at(-1)!.data.status, "completed", type);
    for (const p of mine.filter((f) => f.data.status === "progress")) {
      assert.ok(p.data.progress.current <= p.data.progress.total, JSON.stringify(p.data));
    }
    assert.deepEqual(
      Object.keys(mine.at(-1)!.data.result).sort(),
      ["created", "deleted", "failed", "unchanged", "updated"],
    );
  }
}

async function guestsOf(world: Awaited<ReturnType<typeof syncWorld>>) {
  const resources = await world.hypervisor("GET", "/cluster/resources", { type: "vm" });
  const out = [];
  for (const r of resources.sort((a: any, b: any) => a.vmid - b.vmid)) {
    const config = await world.hypervisor("GET", `/nodes/${r.node}/${r.type}/${r.vmid}/config`);
    out.push({ ...r, config });
  }
  return out;
}

/** The inventory VM of each vmid, through the sync-state sidecar. */
async function vmsByVmid(world: Awaited<ReturnType<typeof syncWorld>>) {
  const states = await world.inventory("plugins/service/vm-sync-state/");
  const vms = new Map((await world.inventory("virtualization/virtual-machines/")).map((
    v: any,
  ) => [v.id, v]));
  const out = new Map<number, { state: any; vm: any }>();
  for (const s of states) out.set(s.vmid, { state: s, vm: vms.get(s.virtual_machine?.id) });
  return out;
}

Deno.test("e2e sync: a full update fills the inventory object by object, a second run writes nothing", async () => {
  const world = await syncWorld(undefined, FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const first = await world.stream("/full-update/stream");
    assert.deepEqual(first.filter((f) => f.event === "error").map((f) => f.data), []);
    assertWellFormed(first);
    const done = completes(first)[0].data;
    assert.equal(done.ok, true, JSON.stringify(done));
    assert.ok(done.result.created > 50, JSON.stringify(done.result));

    // The inventory had none of the reference objects (nothing reconciled them first): the run
    // made them as docs/jobs.md "Bootstrap status and reconcile" lists them. The nodes' role is no VM role (it
    // would be offered for VMs); the guests' roles are (NetBox lets VMs take only those).
    const roles = await world.inventory("dcim/device-roles/");
    const role = (slug: string) => roles.find((r: any) => r.slug === slug);
    assert.deepEqual(
      ["hypervisor", "virtual-machine", "container"].map((slug) => [
        slug,
        role(slug)?.vm_role,
        role(slug)?.tags.map((t: any) => t.slug),
      ]),
      [
        ["hypervisor", false, ["bridgebox-synced"]],
        ["virtual-machine", true, ["bridgebox-synced"]],
        ["container", true, ["bridgebox-synced"]],
      ],
    );
    const [nodeType] = await world.inventory("dcim/device-types/?slug=proxmox-ve-node");
    assert.equal(nodeType?.manufacturer?.slug, "proxmox");

    // Guests: one VM each, found through the sidecar, with the mock's facts.
    const guests = await guestsOf(world);
    const byVmid = await vmsByVmid(world);
    assert.equal(byVmid.size, guests.length);
    const disks = await world.inventory("virtualization/virtual-disks/");
    const ifaces = await world.inventory("virtualization/interfaces/");
    const macs = await world.inventory("dcim/mac-addresses/");
    const ips = await world.inventory("ipam/ip-addresses/");
    const plugNodes = await world.inventory("plugins/service/nodes/");
    const devices = await world.inventory("dcim/devices/");
    for (const g of guests) {
      const entry = byVmid.get(g.vmid);
      assert.ok(entry?.vm, `vmid ${g.vmid} synced`);
      const { vm, state } = entry;
      assert.equal(vm.name, g.config.name ?? g.config.hostname);
      assert.equal(vm.status.value, g.status === "running" ? "active" : "offline");
      assert.equal(vm.memory, g.config.memory);
      assert.equal(vm.vcpus, g.config.cores * (g.type === "qemu" ? (g.config.sockets ?? 1) : 1));
      assert.equal(vm.role.name, g.type === "qemu" ? "Virtual machine" : "Container");
      assert.ok(vm.tags.some((t: any) => t.slug === "bridgebox-synced"));
      assert.equal(state.vm_type.value, g.type);
      assert.equal(state.node_name, g.node);
      assert.equal(state.status.value, "present");
      const node = plugNodes.find((n: any) => n.name === g.node);
      assert.equal(vm.device.id, node.device.id, "the VM sits on its node's device");
      const diskKeys = Object.keys(g.config).filter((k) =>
        /^(scsi|virtio|sata|ide)\d+$|^rootfs$|^mp\d+$/.test(k)
      );
      const mine = disks.filter((d: any) => d.virtual_machine.id === vm.id);
      assert.deepEqual(mine.map((d: any) => d.name).sort(), diskKeys.sort(), `disks of ${g.vmid}`);
      // A CD-ROM drive is a size-0 disk.
      const sizeOf = (k: string) =>
        /media=cdrom/.test(g.config[k]) ? 0 : Number(/size=(\d+)G/.exec(g.config[k])![1]) * 1024;
      assert.equal(vm.disk, diskKeys.reduce((s, k) => s + sizeOf(k), 0));
      const nets = Object.keys(g.config).filter((k) => /^net\d+$/.test(k));
      const myIfaces = ifaces.filter((i: any) => i.virtual_machine.id === vm.id);
      assert.equal(myIfaces.length, nets.length, `interfaces of ${g.vmid}`);
      for (const net of nets) {
        const mac = /([0-9A-F]{2}(:[0-9A-F]{2}){5})/i.exec(g.config[net])![1].toUpperCase();
        const iface = myIfaces.find((i: any) =>
          macs.some((m: any) => m.mac_address === mac && m.assigned_object_id === i.id)
        );
        assert.ok(iface, `MAC ${mac} of ${g.vmid}`);
        assert.equal(iface.mac_address, mac, "primary MAC set");
        const tag = /tag=(\d+)/.exec(g.config[net]);
        if (tag) assert.equal(iface.untagged_vlan.vid, Number(tag[1]));
      }
      const staticIp = /ip=([\d.]+\/\d+)/.exec(g.config.ipconfig0 ?? g.config.net0 ?? "");
      if (staticIp) {
        const ip = ips.find((a: any) =>
          a.address === staticIp[1] && myIfaces.some((i: any) => i.id === a.assigned_object_id)
        );
        assert.ok(ip, `IP ${staticIp[1]} of ${g.vmid}`);
        assert.equal(vm.primary_ip4?.id, ip.id, `primary IPv4 of ${g.vmid}`);
        // A container's address carries its hostname as DNS name; a VM's only what its agent says.
        if (g.type === "lxc" && g.config.hostname) {
          assert.match(ip.dns_name, new RegExp(`^${g.config.hostname}(\\.|$)`), `${g.vmid}`);
        }
      }
    }

    // Nodes: one device and one plugin node each; node interfaces with their addresses.
    const nodes = await world.hypervisor("GET", "/nodes");
    assert.deepEqual(
      plugNodes.map((n: any) => n.name).sort(),
      nodes.map((n: any) => n.node).sort(),
    );
    for (const n of nodes) {
      const device = devices.find((d: any) => d.name === n.node);
      assert.ok(device, `device ${n.node}`);
      const network = await world.hypervisor("GET", `/nodes/${n.node}/network`);
      const nodeIfaces = await world.inventory(`dcim/interfaces/?device_id=${device.id}`);
      assert.deepEqual(
        nodeIfaces.map((i: any) => i.name).sort(),
        network.map((i: any) => i.iface).sort(),
      );
      for (const nic of network.filter((i: any) => i.cidr)) {
        assert.ok(ips.some((a: any) => a.address === nic.cidr), `${n.node} ${nic.cidr}`);
      }
    }

    // Plugin records: storage, tasks by UPID, backups by volid, snapshots, jobs.
    const storages = await world.hypervisor("GET", "/storage");
    const plugStorage = await world.inventory("plugins/service/storage/");
    assert.deepEqual(
      plugStorage.map((s: any) => s.name).sort(),
      storages.map((s: any) => s.storage).sort(),
    );
    const upids = new Set<string>();
    for (const n of nodes) {
      for (const t of await world.hypervisor("GET", `/nodes/${n.node}/tasks`)) upids.add(t.upid);
    }
    const tasks = await world.inventory("plugins/service/task-history/");
    assert.deepEqual(new Set(tasks.map((t: any) => t.upid)), upids);
    const volids = new Set<string>();
    for (const n of nodes) {
      for (const s of await world.hypervisor("GET", `/nodes/${n.node}/storage`)) {
        if (!String(s.content).includes("backup")) continue;
        const list = await world.hypervisor(
          "GET",
          `/nodes/${n.node}/storage/${s.storage}/content`,
          { content: "backup" },
        );
        for (const v of list) volids.add(v.volid);
      }
    }
    const backups = await world.inventory("plugins/service/backups/");
    assert.deepEqual(new Set(backups.map((b: any) => b.volid)), volids);
    assert.ok(volids.size > 0);
    const snapshots = await world.inventory("plugins/service/snapshots/");
    const wantSnaps = guests.filter((g) => g.config.parent).map((g) => `${g.vmid}:before-upgrade`);
    assert.deepEqual(snapshots.map((s: any) => `${s.vmid}:${s.name}`).sort(), wantSnaps.sort());
    const replications = await world.inventory("plugins/service/replications/");
    const upstreamRepl = await world.hypervisor("GET", "/cluster/replication");
    assert.deepEqual(
      replications.map((r: any) => r.replication_id).sort(),
      upstreamRepl.map((r: any) => r.id).sort(),
    );
    const routines = await world.inventory("plugins/service/backup-routines/");
    const jobs = await world.hypervisor("GET", "/cluster/backup");
    assert.deepEqual(routines.map((r: any) => r.job_id).sort(), jobs.map((j: any) => j.id).sort());
    const weekly = routines.find((r: any) => r.job_id === "backup-4f1c2a7e");
    assert.equal(weekly.keep_last, 3);
    assert.equal(weekly.keep_weekly, 2);
    // Its storage is the inventory's record of the upstream job's storage, by name.
    const upstreamWeekly = jobs.find((j: any) => j.id === "backup-4f1c2a7e");
    const storageId = typeof weekly.storage === "object" ? weekly.storage?.id : weekly.storage;
    assert.ok(storageId, `storage of ${JSON.stringify(weekly)}`);
    const storageRecords = await world.inventory("plugins/service/storage/");
    assert.equal(storageRecords.find((x: any) => x.id === storageId)?.name, upstreamWeekly.storage);
    const prefixes = await world.inventory("ipam/prefixes/");
    assert.deepEqual(
      prefixes.map((p: any) => p.prefix).sort(),
      ["10.10.0.0/24", "10.20.0.0/24", "192.168.100.0/24"],
    );
    const vlans = await world.inventory("ipam/vlans/");
    assert.ok(vlans.some((v: any) => v.vid === 10) && vlans.some((v: any) => v.vid === 20));

    // Second run, nothing changed upstream: nothing created or updated, no write at all.
    const writesBefore = inventoryWrites(world.seen).length;
    const second = await world.stream("/full-update/stream");
    assertWellFormed(second);
    const results = stageResults(second);
    for (const [step, r] of Object.entries(results)) {
      assert.equal(
        r.created + r.updated + r.deleted + r.failed,
        0,
        `${step}: ${JSON.stringify(r)}`,
      );
    }
    assert.ok(completes(second)[0].data.result.unchanged > 50);
    assert.deepEqual(inventoryWrites(world.seen).slice(writesBefore), []);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync: changes, destroys, migrations and name clashes upstream arrive; hand-made objects stay", async () => {
  const world = await syncWorld("nodes=2,vms=8,cts=3,storages=3", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    // A VM made by hand in the inventory, before the cluster is known: never touched.
    const first = await world.stream("/full-update/stream");
    assert.equal(completes(first)[0].data.ok, true);
    const cluster = (await world.inventory("virtualization/clusters/"))[0];
    const hand = await world.inventoryCall("POST", "virtualization/virtual-machines/", {
      name: "handmade-web",
      cluster: cluster.id,
      status: "planned",
      memory: 1,
    });
    assert.equal(hand.status, 201, JSON.stringify(hand.body));

    const guests = await guestsOf(world);
    const qemu = guests.filter((g) => g.type === "qemu");
    const [changed, destroyed, migrated, renamed] = [qemu[0], qemu[1], qemu[2], qemu[3]];
    // Change memory, cores and name of one guest.
    await world.hypervisor("PUT", `/nodes/${changed.node}/qemu/${changed.vmid}/config`, {
      memory: "3072",
      cores: "3",
      name: "renamed-guest",
    });
    // Destroy one (stopped first, as Proxmox requires).
    if (destroyed.status === "running") {
      await world.hypervisor("POST", `/nodes/${destroyed.node}/qemu/${destroyed.vmid}/status/stop`);
    }
    await world.hypervisor("DELETE", `/nodes/${destroyed.node}/qemu/${destroyed.vmid}`);
    // Migrate one to the other node.
    const target = (await world.hypervisor("GET", "/nodes"))
      .map((n: any) => n.node).find((n: string) => n !== migrated.node);
    await world.hypervisor("POST", `/nodes/${migrated.node}/qemu/${migrated.vmid}/migrate`, {
      target,
      ...(migrated.status === "running" ? { online: "1" } : {}),
    });
    // Give one guest the name of the hand-made VM, another the name of a synced guest.
    await world.hypervisor("PUT", `/nodes/${renamed.node}/qemu/${renamed.vmid}/config`, {
      name: "handmade-web",
    });
    const clash = qemu[4];
    // Guest 100 gives up its name while guest 104 takes it (one run: rename order matters),
    // and guest 106 takes the name guest 105 still holds.
    await world.hypervisor("PUT", `/nodes/${clash.node}/qemu/${clash.vmid}/config`, {
      name: "vm-100",
    });
    const late = qemu[6];
    await world.hypervisor("PUT", `/nodes/${late.node}/qemu/${late.vmid}/config`, {
      name: "vm-105",
    });

    const second = await world.stream("/full-update/stream");
    assert.equal(completes(second)[0].data.ok, true, JSON.stringify(completes(second)[0].data));
    const vmStage = stageResults(second)["virtual-machines"];
    assert.equal(vmStage.created, 0, JSON.stringify(vmStage));
    const byVmid = await vmsByVmid(world);

    const c = byVmid.get(changed.vmid)!.vm;
    assert.equal(c.memory, 3072);
    assert.equal(c.vcpus, 3);
    assert.equal(c.name, "renamed-guest");

    const gone = byVmid.get(destroyed.vmid)!;
    assert.equal(gone.vm.status.value, "decommissioning");
    assert.ok(gone.vm.tags.some((t: any) => t.slug === "bridgebox-missing"));
    assert.equal(gone.state.status.value, "missing");

    const nodes = await world.inventory("plugins/service/nodes/");
    const targetDevice = nodes.find((n: any) => n.name === target).device.id;
    assert.equal(byVmid.get(migrated.vmid)!.vm.device.id, targetDevice, "follows its node");
    assert.equal(byVmid.get(migrated.vmid)!.state.node_name, target);

    // handmade-web is taken by the hand-made VM: the guest gets " (2)". vm-100 was freed by
    // guest 100's rename in the same run; vm-105 stays with guest 105, the newcomer gets (2).
    assert.equal(byVmid.get(renamed.vmid)!.vm.name, "handmade-web (2)");
    assert.equal(byVmid.get(clash.vmid)!.vm.name, "vm-100");
    assert.equal(byVmid.get(105)!.vm.name, "vm-105");
    assert.equal(byVmid.get(late.vmid)!.vm.name, "vm-105 (2)");
    const handNow = await world.inventoryCall(
      "GET",
      `virtualization/virtual-machines/${hand.body.id}/`,
    );
    assert.equal(handNow.body.name, "handmade-web");
    assert.equal(handNow.body.status.value, "planned");
    assert.equal(handNow.body.memory, 1);
    assert.deepEqual(handNow.body.tags, []);

    // No duplicates: one inventory VM per guest ever seen, plus the hand-made one.
    const all = await world.inventory("virtualization/virtual-machines/");
    assert.equal(all.length, guests.length + 1);

    // And the run after that is quiet again.
    const third = await world.stream("/virtualization/virtual-machines/create/stream");
    const r = stageResults(third)["virtual-machines"];
    assert.equal(r.created + r.updated, 0, JSON.stringify(r));
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync: each stage runs alone, as SSE and as JSON", async () => {
  const world = await syncWorld(undefined, FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    for (const stage of STAGES) {
      const frames = await world.stream(`${stage.path}/stream`);
      assertWellFormed(frames, [stage.type]);
      const done = completes(frames)[0].data;
      assert.equal(done.ok, true, `${stage.type}: ${JSON.stringify(done)}`);
    }
    // Each stage made what it owns (run in table order, every later stage finds its anchors):
    // every node, every guest with its disks and its configured address.
    const nodes = (await world.hypervisor("GET", "/nodes")).map((n: any) => n.node).sort();
    const synced = await world.inventory("plugins/service/nodes/");
    assert.deepEqual(synced.map((n: any) => n.name).sort(), nodes);
    const guests = await guestsOf(world);
    const byVmid = await vmsByVmid(world);
    assert.deepEqual([...byVmid.keys()].sort(), guests.map((g) => g.vmid).sort());
    const disks = await world.inventory("virtualization/virtual-disks/");
    const ips = await world.inventory("ipam/ip-addresses/");
    for (const g of guests) {
      const vm = byVmid.get(g.vmid)!.vm;
      assert.equal(vm.name, g.config.name ?? g.config.hostname, `vmid ${g.vmid}`);
      const mine = disks.filter((d: any) => d.virtual_machine.id === vm.id).map((d: any) => d.name);
      assert.ok(mine.includes(g.type === "qemu" ? "scsi0" : "rootfs"), `${g.vmid}: ${mine}`);
      const ip = /ip=([0-9.]+\/\d+)/.exec(g.config.ipconfig0 ?? g.config.net0 ?? "")?.[1];
      if (ip) {
        const found = ips.find((a: any) => a.address === ip);
        assert.ok(found, `${g.vmid}: ${ip}`);
        assert.equal(vm.primary_ip4?.id, found.id, `${g.vmid}: primary ${ip}`);
      }
    }
    for (const stage of STAGES) {
      const r = await world.backend("GET", stage.path);
      assert.equal(r.status, 200, `${stage.path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.ok, true);
      assert.equal(r.body.stages[0].step, stage.type);
      assert.equal(r.body.result.created + r.body.result.updated, 0, stage.type);
    }
    const full = await world.backend("GET", "/full-update");
    assert.equal(full.status, 200);
    assert.equal(full.body.stages.length, 13);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync: no inventory copy is a 400 before any frame; a bad scope is a 422/404", async () => {
  const world = await syncWorld();
  try {
    await world.addHypervisorCopy("lab");
    for (const path of ["/full-update/stream", "/full-update", "/dcim/devices/create/stream"]) {
      const r = await world.backend("GET", path);
      assert.equal(r.status, 400, path);
      assert.deepEqual(r.body, {
        detail: "No inventory endpoint found. Please add an inventory endpoint in the database.",
      });
    }
    await addInventoryCopy(world);
    const bad = await world.backend("GET", "/full-update?hypervisor_endpoint_ids=1,x");
    assert.equal(bad.status, 422);
    const unknown = await world.backend("GET", "/full-update?hypervisor_endpoint_ids=99");
    assert.equal(unknown.status, 404);
    assert.match(unknown.body.detail, /99/);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync: a rejected inventory token is an error frame naming the request, one complete, a 502; no secret travels", async () => {
  const world = await syncWorld();
  try {
    const inventoryId = await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const broken = await world.backend("PUT", `/inventory/endpoint/${inventoryId}`, {
      name: "self",
      ip: "127.0.0.1",
      port: world.port,
      use_https: false,
      token_version: "v1",
      token: "wrong-token-0123456789abcdef0123456789",
    });
    assert.equal(broken.status, 200);
    const frames = await world.stream("/full-update/stream");
    assert.equal(completes(frames).length, 1);
    assert.equal(frames.at(-1)!.event, "complete");
    const done = completes(frames)[0].data;
    assert.equal(done.ok, false);
    const errors = frames.filter((f) => f.event === "error");
    assert.ok(errors.length >= 1);
    const e = errors[0].data;
    assert.equal(e.status, "failed");
    assert.equal(e.step, "devices");
    assert.equal(e.upstream_status, 403);
    assert.match(e.detail, new RegExp(`127\\.0\\.0\\.1:${world.port}/api/`));
    assert.match(e.detail, /Invalid token/);
    assert.match(e.hint, /token/);
    assert.equal(done.errors.length, errors.length);

    const text = await world.streamText("/full-update/stream");
    for (const secret of ["wrong-token-0123456789abcdef0123456789", "bridgebox", KEY, ROOT]) {
      assert.ok(!text.includes(secret), `a secret in the stream: ${secret}`);
    }
    const json = await world.backend("GET", "/full-update");
    assert.equal(json.status, 502);
    assert.match(json.body.detail, /Invalid token/);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync: an unreachable hypervisor fails its stages with a hint; disabled and unscoped endpoints are skipped", async () => {
  // Held by this test and closing every connection: nothing else can take the port.
  const refusing = refusingListener();
  const world = await syncWorld(undefined, FAST_TASKS);
  try {
    await addInventoryCopy(world);
    const good = await world.addHypervisorCopy("lab");
    const deadPort = refusing.port;
    const dead = await world.addHypervisorCopy("dead", { port: deadPort });
    const off = await world.addHypervisorCopy("off", { enabled: false, port: deadPort });

    const frames = await world.stream(`/dcim/devices/create/stream`);
    const errors = frames.filter((f) => f.event === "error").map((f) => f.data);
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.equal(errors[0].endpoint_id, dead);
    assert.match(errors[0].detail, new RegExp(`127\\.0\\.0\\.1:${deadPort}/api2/json`));
    assert.match(errors[0].hint, /closed the connection without answering/);
    // The good endpoint's devices still arrived: a failure does not hide the others.
    const result = stageResults(frames).devices;
    assert.ok(result.created > 0);
    assert.equal(result.failed, 1);
    assert.equal(completes(frames)[0].data.ok, false);

    const scoped = await world.stream(
      `/dcim/devices/create/stream?hypervisor_endpoint_ids=${good}`,
    );
    assert.equal(completes(scoped)[0].data.ok, true);
    const disabledOnly = await world.backend(
      "GET",
      `/dcim/devices/create?hypervisor_endpoint_ids=${off}`,
    );
    assert.equal(disabledOnly.status, 200);
    assert.equal(disabledOnly.body.result.created, 0);
  } finally {
    refusing.close();
    await world.close();
  }
});

Deno.test("e2e sync: two endpoints sync into one inventory without mixing", async () => {
  const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    const a = await world.addHypervisorCopy("east");
    const b = await world.addHypervisorCopy("west");
    const frames = await world.stream("/full-update/stream");
    assert.equal(completes(frames)[0].data.ok, true, JSON.stringify(completes(frames)[0].data));
    const clusters = await world.inventory("virtualization/clusters/");
    assert.equal(clusters.length, 2);
    assert.deepEqual(clusters.map((c: any) => c.name).sort(), ["bridgebox", "bridgebox (west)"]);
    const states = await world.inventory("plugins/service/vm-sync-state/");
    assert.equal(states.length, 6);
    const vms = await world.inventory("virtualization/virtual-machines/");
    assert.equal(vms.length, 6);
    for (const c of clusters) {
      assert.equal(vms.filter((v: any) => v.cluster.id === c.id).length, 3);
    }
    const endpoints = await world.inventory("plugins/service/endpoints/hypervisor/");
    assert.deepEqual(endpoints.map((e: any) => e.name).sort(), ["east", "west"]);
    assert.ok(endpoints.every((e: any) => e.enabled === false), "made for reference only");
    // Each endpoint's VMs sit in its own cluster, and its sidecars name that endpoint.
    const peOf = new Map(endpoints.map((e: any) => [e.name, e.id]));
    assert.equal(states.filter((s: any) => s.endpoint.id === peOf.get("east")).length, 3);
    assert.equal(states.filter((s: any) => s.endpoint.id === peOf.get("west")).length, 3);
    void a;
    void b;
    const again = await world.stream("/full-update/stream");
    assert.equal(completes(again)[0].data.result.created, 0);
    assert.equal(completes(again)[0].data.result.updated, 0);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync: a first run creates each object once; two copies of one hypervisor share a site's VLANs and rerun with no write", async () => {
  // The default seed has VLAN-tagged guest NICs and SDN vnets; `lab (inv:1)` is how a copy
  // pushed by the inventory plugin is named, beside the one made on the backend.
  const world = await syncWorld(undefined, FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    await world.addHypervisorCopy("lab (inv:1)");
    const first = stageResults(await world.stream("/full-update/stream"));
    // The plugin cluster record is made with the cluster, then its facts are filled in: one
    // creation, not a creation and an update.
    assert.equal(first.devices.updated, 0, JSON.stringify(first.devices));
    // `lab (inv:1)` names plugin endpoint 1, the record made for `lab`: one endpoint, one cluster.
    assert.equal((await world.inventory("virtualization/clusters/")).length, 1);
    const vlans = await world.inventory("ipam/vlans/");
    const keys = vlans.map((v: any) => `${v.site?.id ?? v.scope_id}:${v.vid}`);
    assert.deepEqual(keys, [...new Set(keys)], "one VLAN per site and vid");
    const again = stageResults(await world.stream("/full-update/stream"));
    for (const [stage, r] of Object.entries(again)) {
      assert.equal(
        r.created + r.updated + r.deleted + r.failed,
        0,
        `${stage} ${JSON.stringify(r)}`,
      );
    }
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync: a client that disconnects stops the work (no write after the abort)", async () => {
  const logger = new WaitingLogger();
  let release: (() => void) | null = null;
  let held: ((signal: AbortSignal) => void) | null = null;
  const heldCall = new Promise<AbortSignal>((resolve) => held = resolve);
  // Hold the first VM bulk create until the client is gone; it must then be abandoned.
  const gatedFetch: typeof fetch = (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (
      held && init?.method === "POST" && url.includes("/api/virtualization/virtual-machines/")
    ) {
      const signal = init.signal!;
      const notify = held;
      held = null;
      notify(signal);
      return new Promise((_, reject) => {
        release = () => reject(signal.reason);
        signal.addEventListener("abort", () => release!(), { once: true });
      });
    }
    return fetch(input, init);
  };
  const world = await syncWorld(undefined, FAST_TASKS, { logger, fetch: gatedFetch });
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const ended = logger.next("sync run ended");
    const controller = new AbortController();
    const res = await fetch(`${world.base}/full-update/stream`, {
      headers: { "x-service-api-key": KEY },
      signal: controller.signal,
    });
    const reading = res.body!.pipeTo(new WritableStream()).catch(() => {});
    const signal = await heldCall;
    const writesAtHold = inventoryWrites(world.seen).length;
    controller.abort();
    await reading;
    const line = await ended;
    assert.equal(signal.aborted, true, "the held inventory call saw the abort");
    assert.equal(line.cancelled, true);
    assert.equal(line.ok, false);
    assert.deepEqual(inventoryWrites(world.seen).slice(writesAtHold), []);
    assert.equal((await world.inventory("virtualization/virtual-machines/")).length, 0);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync: a v2 inventory token (Bearer nbt_<key>.<secret>) works as well", async () => {
  const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", FAST_TASKS);
  try {
    const made = await world.inventoryCall("POST", "users/tokens/", {
      version: 2,
      write_enabled: true,
      is_superuser: true,
      description: "sync v2",
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const r = await world.backend("POST", "/inventory/endpoint", {
      name: "self v2",
      ip: "127.0.0.1",
      port: world.port,
      use_https: false,
      token_version: "v2",
      token_key: made.body.key,
      token: made.body.token,
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    await world.addHypervisorCopy("lab");
    const frames = await world.stream("/virtualization/virtual-machines/create/stream");
    const done = completes(frames)[0].data;
    assert.equal(done.ok, true, JSON.stringify(done));
    assert.equal((await world.inventory("virtualization/virtual-machines/")).length, 3);
  } finally {
    await world.close();
  }
});
