/**
 * A refused object in each stage that writes (docs/sync.md, "When the inventory refuses an
 * object"): the run goes on, the stage's error frame names the object and carries the
 * inventory's words, the stage counts it failed, the summary is not ok, and every other object
 * is written. One refusal per model at once, over the in-memory fakes of the two ports.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { FakeHypervisor, FakeInventory, LAB, smallCluster } from "./_fakes.ts";
import { runSync, STAGES, type SyncEvent } from "../../../domain/sync/runner.ts";

const TYPES = [
  "devices",
  "storage",
  "virtual-machines",
  "vm-disks",
  "vm-interfaces",
  "ip-addresses",
  "vm-backups",
];

/** What is refused: per model path, a test of the body and the inventory's answer. */
const REFUSED: Record<string, [(b: any) => boolean, Record<string, string[]>]> = {
  "ipam/ip-addresses/": [
    (b) => b.address === "10.0.0.50/24",
    { address: ["Enter a valid IPv4 or IPv6 address with optional mask."] },
  ],
  "virtualization/virtual-disks/": [(b) => b.name === "scsi0", { size: ["Too big."] }],
  "virtualization/interfaces/": [
    (b) => b.name === "net0" && b.untagged_vlan !== undefined && b.untagged_vlan !== null,
    { untagged_vlan: ["The untagged VLAN must belong to the same site."] },
  ],
  "plugins/service/backups/": [
    (b) => String(b.volid).includes("102"),
    { volid: ["Backup with this volid already exists."] },
  ],
  "plugins/service/storage/": [(b) => b.name === "nfs", { path: ["Refused for the test."] }],
};

function cluster() {
  const data = smallCluster() as Record<string, any>;
  data["/storage"].push({ storage: "nfs", type: "nfs", content: "backup", shared: 1 });
  for (const node of ["n1", "n2"]) {
    for (const s of data[`/nodes/${node}/storage`]) s.content = "images,backup";
  }
  data["/nodes/n1/storage"].push({ storage: "nfs", content: "backup", shared: 1, total: 5 });
  data["/nodes/n1/storage/local/content"] = [
    { volid: "local:backup/vzdump-qemu-101-a.vma", vmid: 101, subtype: "qemu" },
    { volid: "local:backup/vzdump-qemu-102-a.vma", vmid: 102, subtype: "qemu" },
  ];
  data["/nodes/n2/storage/local/content"] = [];
  data["/nodes/n1/storage/nfs/content"] = [];
  data["/nodes/n1/qemu/102/config"] = { ...data["/nodes/n2/qemu/102/config"] };
  return data;
}

Deno.test("refusals: one refused object per stage is framed with the inventory's words and counted failed; the rest is written", async () => {
  const inv = new FakeInventory();
  inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
  inv.refuse = (path, body) => {
    const rule = REFUSED[path];
    return rule && rule[0](body) ? rule[1] : null;
  };
  const events: SyncEvent[] = [];
  const complete = await runSync({
    stages: STAGES.filter((s) => TYPES.includes(s.type)),
    endpoints: [LAB],
    hypervisor: () => new FakeHypervisor(cluster()),
    inventory: inv,
    emit: (e) => {
      events.push(e);
    },
    signal: new AbortController().signal,
    now: () => Date.UTC(2026, 0, 1),
  });
  assert.equal(complete.ok, false);
  const errors = events.filter((e) => e.event === "error").map((e) => e.data as any);
  assert.deepEqual(
    errors.map((e) => [e.step, e.object]).sort(),
    [
      ["ip-addresses", "IP address 10.0.0.50/24 of vmid 200"],
      ["storage", "storage nfs"],
      ["vm-backups", "backup local:backup/vzdump-qemu-102-a.vma"],
      ["vm-disks", "virtual disk scsi0 of vmid 101"],
      ["vm-interfaces", "interface net0 of vmid 101"],
    ],
  );
  const detail = (step: string) => errors.find((e) => e.step === step)!.detail;
  assert.match(detail("ip-addresses"), /Enter a valid IPv4 or IPv6 address/);
  assert.match(detail("vm-disks"), /Too big/);
  assert.match(detail("vm-interfaces"), /must belong to the same site/);
  assert.match(detail("vm-backups"), /already exists/);
  assert.match(detail("storage"), /Refused for the test/);
  const failed = Object.fromEntries(complete.stages.map((s) => [s.step, s.result.failed]));
  assert.deepEqual(failed, {
    devices: 0,
    storage: 1,
    "virtual-machines": 0,
    "vm-disks": 1,
    "vm-backups": 1,
    "vm-interfaces": 1,
    "ip-addresses": 1,
  });
  assert.equal(complete.result.failed, 5);
  // The others are written: the other storage, backup, disks, interfaces and addresses.
  assert.deepEqual(inv.all("plugins/service/storage/").map((s) => s.name), ["local"]);
  assert.deepEqual(
    inv.all("plugins/service/backups/").map((b) => b.volid),
    ["local:backup/vzdump-qemu-101-a.vma"],
  );
  assert.deepEqual(
    inv.all("virtualization/virtual-disks/").map((d) => d.name).sort(),
    ["ide2", "rootfs"],
  );
  assert.deepEqual(
    inv.all("virtualization/interfaces/").map((i) => i.name).sort(),
    ["net0"],
  );
  // The refused interface has no MAC; the container's interface has its own, as its primary.
  const macs = inv.all("dcim/mac-addresses/");
  assert.deepEqual(macs.map((m) => m.mac_address), ["BC:24:11:00:C8:00"]);
  const [ctIface] = inv.all("virtualization/interfaces/");
  assert.equal(ctIface.primary_mac_address, macs[0].id);
  assert.deepEqual(inv.all("ipam/ip-addresses/"), []);
  // The refused address is no primary IP: the container has none.
  const ct = inv.all("virtualization/virtual-machines/").find((v) => v.name === "ct")!;
  assert.equal(ct.primary_ip4 ?? null, null);
});
