/**
 * What each stage reports (its `created`, `updated`, `unchanged`, `deleted`: the SSE `step`
 * frames, the run's summary, the job log) against what it wrote (docs/sync.md, "Writes per
 * object"): a first run counts each object it made once as created and nothing as updated; a
 * run after changes upstream counts each change where it happened. Over in-memory fakes of the
 * two ports, the guest stages.
 */
import assert from "node:assert/strict";
import { FakeHypervisor, FakeInventory, LAB, smallCluster } from "./_fakes.ts";
import { runSync, STAGES, type SyncEvent } from "../../../domain/sync/runner.ts";

const GUEST_STAGES = ["devices", "virtual-machines", "vm-disks", "vm-interfaces", "ip-addresses"];

/** Runs the guest stages; per stage its result and the writes it made (one per object). */
async function run(inv: FakeInventory, hv: FakeHypervisor) {
  const starts: { step: string; at: number }[] = [];
  const events: SyncEvent[] = [];
  const complete = await runSync({
    stages: STAGES.filter((s) => GUEST_STAGES.includes(s.type)),
    endpoints: [LAB],
    hypervisor: () => hv,
    inventory: inv,
    emit: (e) => {
      events.push(e);
      if (e.event === "step" && e.data.status === "started") {
        starts.push({ step: e.data.step, at: inv.writes.length });
      }
    },
    signal: new AbortController().signal,
    now: () => Date.UTC(2026, 0, 1),
  });
  assert.deepEqual(events.filter((e) => e.event === "error"), []);
  assert.equal(complete.ok, true);
  const stages = starts.map(({ step, at }, i) => {
    const writes = inv.writes.slice(at, starts[i + 1]?.at ?? inv.writes.length);
    const result = complete.stages.find((s) => s.step === step)!.result;
    // The completed frame carries the same result the summary lists.
    const frame = events.find((e) =>
      e.event === "step" && e.data.step === step && e.data.status === "completed"
    );
    assert.deepEqual(frame?.event === "step" && frame.data.result, result, step);
    const of = (method: string) => writes.filter((w) => w.startsWith(method)).length;
    return { step, result, posts: of("POST"), patches: of("PATCH"), deletes: of("DELETE") };
  });
  // The run's totals are the stages' sums.
  for (const key of ["created", "updated", "unchanged", "deleted", "failed"] as const) {
    assert.equal(
      complete.result[key],
      stages.reduce((sum, s) => sum + s.result[key], 0),
      `total ${key}`,
    );
  }
  return stages;
}

Deno.test("counts: a first run counts what it made as created, once; a run after changes counts each change in its stage", async () => {
  const inv = new FakeInventory();
  inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
  const data = smallCluster();
  const first = await run(inv, new FakeHypervisor(data));
  for (const s of first) {
    assert.equal(s.result.created, s.posts, `${s.step}: created is what it made`);
    assert.equal(s.result.updated, 0, `${s.step}: a link to what it just made is no update`);
    assert.equal(s.result.unchanged + s.result.deleted + s.result.failed, 0, s.step);
  }
  assert.deepEqual(first.map((s) => [s.step, s.result.created]), [
    // 3 tags, manufacturer, device type, role, cluster type, site, cluster, plugin cluster,
    // 2 devices, 2 plugin nodes
    ["devices", 14],
    // 2 guest roles, guest tags prod and web, 3 VMs, 3 sync-states
    ["virtual-machines", 10],
    ["vm-disks", 3], // scsi0 and the CD-ROM of 101, rootfs of 200
    ["vm-interfaces", 5], // VLAN 10, net0 of 101 and of 200, their MACs
    ["ip-addresses", 1], // 200's 10.0.0.50/24
  ]);

  // Upstream: 101's memory, its CD-ROM removed, net0's MAC changed, net1 added with an address;
  // 200's address changed; 102 destroyed.
  Object.assign(data["/nodes/n1/qemu/101/config"] as Record<string, unknown>, {
    memory: 4096,
    ide2: undefined,
    net0: "virtio=BC:24:11:00:65:01,bridge=vmbr0,tag=10",
    net1: "virtio=BC:24:11:00:65:02,bridge=vmbr0",
    ipconfig1: "ip=10.1.1.1/24",
  });
  delete (data["/nodes/n1/qemu/101/config"] as Record<string, unknown>).ide2;
  (data["/nodes/n1/lxc/200/config"] as Record<string, unknown>).net0 =
    "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:C8:00,ip=10.0.0.51/24";
  data["/cluster/resources"] = (data["/cluster/resources"] as { vmid: number }[])
    .filter((r) => r.vmid !== 102);
  const second = await run(inv, new FakeHypervisor(data));
  for (const s of second) {
    assert.equal(s.result.created, s.posts, `${s.step}: created`);
    assert.equal(s.result.deleted, s.deletes, `${s.step}: deleted`);
  }
  const counts = (s: (typeof second)[number]) => {
    const { created, updated, unchanged, deleted } = s.result;
    return [s.step, { created, updated, unchanged, deleted }];
  };
  assert.deepEqual(second.map(counts), [
    // devices: 2 devices, 2 plugin nodes, the plugin cluster
    ["devices", { created: 0, updated: 0, unchanged: 5, deleted: 0 }],
    // VM 101 (memory) and 102 (marked gone), the sync-states of 101 and 200 (their configs
    // changed) and of 102 (missing); VM 200 as it was
    ["virtual-machines", { created: 0, updated: 5, unchanged: 1, deleted: 0 }],
    // the CD-ROM goes; scsi0 and rootfs stay
    ["vm-disks", { created: 0, updated: 0, unchanged: 2, deleted: 1 }],
    // net1 and two MACs made, net0's old MAC gone; net0 of 101 and 200, 200's MAC as they were
    ["vm-interfaces", { created: 3, updated: 0, unchanged: 3, deleted: 1 }],
    // 10.1.1.1 and 10.0.0.51 made, 10.0.0.50 gone; the primary IPv4 of 101 and 200 set anew
    ["ip-addresses", { created: 2, updated: 2, unchanged: 0, deleted: 1 }],
  ]);
  assert.equal(second.find((s) => s.step === "ip-addresses")!.patches, 2);

  // Nothing changed since: every object counts as unchanged and nothing is written.
  const writes = inv.writes.length;
  const third = await run(inv, new FakeHypervisor(data));
  assert.equal(inv.writes.length, writes);
  assert.deepEqual(third.map((s) => [s.step, s.result.created + s.result.updated]), [
    ["devices", 0],
    ["virtual-machines", 0],
    ["vm-disks", 0],
    ["vm-interfaces", 0],
    ["ip-addresses", 0],
  ]);
  assert.deepEqual(third.map((s) => [s.step, s.result.unchanged]), [
    ["devices", 5],
    // 101 and 200 and their sync-states (102's VM and state, marked already, are not wanted)
    ["virtual-machines", 4],
    ["vm-disks", 2],
    ["vm-interfaces", 6], // 101's net0 and net1 with their MACs, 200's net0 and its MAC
    ["ip-addresses", 2],
  ]);
});
