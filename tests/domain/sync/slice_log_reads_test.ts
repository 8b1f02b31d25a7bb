/**
 * A guest stage's closing read of the change log after a slice goes on while the next slice is
 * read and written (domain/sync/ledger.ts `SliceLogReads`, docs/sync.md "Writes: round 8"), one
 * closing read at a time, and the ledger still records every guest it wrote. Over in-memory fakes
 * of the two ports: the log answers a read of entries one macrotask later (a message, not a
 * timer), the stages' own work between two writes is microtasks only, so which requests are in
 * flight together does not depend on the machine's load.
 */
import assert from "node:assert/strict";
import {
  FakeHypervisor,
  FakeInventory,
  GUEST_STAGES,
  guestMac,
  LAB,
  smallCluster,
} from "./_fakes.ts";
import { SLICE } from "../../../domain/sync/guests.ts";
import { SliceLogReads, SyncLedger } from "../../../domain/sync/ledger.ts";
import { runSync } from "../../../domain/sync/runner.ts";
import type { ChangeEntry, InventoryApi, InventoryBody } from "../../../domain/sync/ports.ts";

/** Three slices, the last a short one. */
const GUESTS = 2 * SLICE + 101;

/** Guests 1..GUESTS, each with a disk and a NIC. */
function cluster() {
  const data = smallCluster();
  const resources = [];
  for (let vmid = 1; vmid <= GUESTS; vmid++) {
    resources.push({ vmid, name: `vm-${vmid}`, node: "n1", type: "qemu", status: "running" });
    const mac = guestMac(vmid);
    data[`/nodes/n1/qemu/${vmid}/config`] = {
      name: `vm-${vmid}`,
      memory: 1024,
      cores: 1,
      scsi0: `local:vm-${vmid}-disk-0,size=8G`,
      net0: `virtio=${mac},bridge=vmbr0`,
    };
  }
  data["/cluster/resources"] = resources;
  return data;
}

/** One macrotask later (a message through a channel): after every microtask queued before. */
function nextTask(): Promise<void> {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });
}

/**
 * The inventory fake with a change log of its writes (every entry the sync's own), counting the
 * writes that start while a read of the log's entries is in flight, by path.
 */
class LoggedInventory extends FakeInventory {
  readonly log: ChangeEntry[] = [];
  readsInFlight = 0;
  mostReadsInFlight = 0;
  readonly writesDuringRead = new Map<string, number>();
  entryReads = 0;

  #note(path: string, ids: number[], action: string) {
    if (this.readsInFlight > 0) {
      this.writesDuringRead.set(path, (this.writesDuringRead.get(path) ?? 0) + 1);
    }
    for (const id of ids) {
      this.log.push({
        id: this.log.length + 1,
        request_id: "own",
        action,
        changed_object_type: `fake.${path}`,
        changed_object_id: id,
      });
    }
  }

  override async create(path: string, bodies: InventoryBody[]) {
    const made = await super.create(path, bodies);
    this.#note(path, made.map((o) => o.id), "create");
    return made;
  }

  override async update(path: string, bodies: (InventoryBody & { id: number })[]) {
    const done = await super.update(path, bodies);
    this.#note(path, bodies.map((b) => b.id), "update");
    return done;
  }

  changeEnd(end: "oldest" | "newest") {
    if (this.log.length === 0) return Promise.resolve(null);
    return Promise.resolve(end === "oldest" ? 1 : this.log.length);
  }

  async changesById(ids: number[]) {
    this.entryReads++;
    this.readsInFlight++;
    this.mostReadsInFlight = Math.max(this.mostReadsInFlight, this.readsInFlight);
    try {
      const wanted = new Set(ids);
      const found = this.log.filter((e) => wanted.has(e.id));
      await nextTask();
      return structuredClone(found);
    } finally {
      this.readsInFlight--;
    }
  }
}

async function run(inv: LoggedInventory, ledger: SyncLedger) {
  const complete = await runSync({
    stages: GUEST_STAGES,
    endpoints: [LAB],
    hypervisor: () => new FakeHypervisor(cluster()),
    inventory: inv,
    ledger: () => ledger,
    emit: () => {},
    signal: new AbortController().signal,
    now: () => Date.UTC(2026, 0, 1),
  });
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
}

Deno.test("slice log reads: a slice's closing read of the change log is in flight while the next slice writes, one read at a time; every guest is still recorded", async () => {
  const inv = new LoggedInventory();
  inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
  const ledger = new SyncLedger((id) => id === "own");
  await run(inv, ledger);

  assert.equal(inv.all("virtualization/virtual-disks/").length, GUESTS);
  assert.equal(inv.all("virtualization/interfaces/").length, GUESTS);
  // The next slice's writes go on while the last slice's entries are read: two slices follow a
  // first one in each stage (an interface is written twice, its MAC address between). The
  // virtual-machines and ip-addresses stages digest configs with WebCrypto between reads and
  // writes (a task of its own, whose order against the log's answer the test does not fix):
  // their writes are not counted here.
  const counted = [
    "virtualization/virtual-disks/",
    "virtualization/interfaces/",
    "dcim/mac-addresses/",
  ];
  const during = Object.fromEntries(
    counted.map((path) => [path, inv.writesDuringRead.get(path) ?? 0]),
  );
  assert.deepEqual(during, {
    "virtualization/virtual-disks/": 2,
    "virtualization/interfaces/": 4,
    "dcim/mac-addresses/": 2,
  });
  // One closing read at a time: a catch-up never runs beside another.
  assert.equal(inv.mostReadsInFlight, 1);
  // Every guest was recorded by each stage with a ledger of its own slices.
  for (const stage of ["virtual-machines", "vm-disks", "vm-interfaces"]) {
    assert.equal(ledger.size(stage), GUESTS, stage);
  }

  // The next run finds nothing to write and reads no guest's objects again.
  const before = inv.writes.length;
  await run(inv, ledger);
  assert.equal(inv.writes.length, before);
});

Deno.test("slice log reads: the next slice starts once the closing read knows its newest entry; an edit made after that is read by the next slice's own closing read, which forgets its guest", async () => {
  const VM = "virtualization.virtualmachine";
  const entries: ChangeEntry[] = [];
  const entry = (requestId: string, vm: number) =>
    entries.push({
      id: entries.length + 1,
      request_id: requestId,
      action: "update",
      changed_object_type: VM,
      changed_object_id: vm,
    });
  // The log's ends and its entries answer when the test lets them.
  let answerEnd = Promise.resolve();
  let answerEntries = Promise.resolve();
  const inv = {
    async changeEnd() {
      await answerEnd;
      return entries.length ? entries.length : null;
    },
    async changesById(ids: number[]) {
      await answerEntries;
      return entries.filter((e) => ids.includes(e.id));
    },
  } as unknown as InventoryApi;
  const signal = new AbortController().signal;
  const ledger = new SyncLedger((id) => id === "own");
  await ledger.catchUp(inv, signal); // a new ledger starts at the log's end
  const closing = new SliceLogReads({ ledger, inv, signal });
  let releaseEnd!: () => void;
  answerEnd = new Promise((resolve) => releaseEnd = resolve);
  let releaseEntries!: () => void;
  answerEntries = new Promise((resolve) => releaseEntries = resolve);

  // Slice 1 wrote guest 1's VM. Its closing read lets the next slice start only once it knows
  // the newest entry it reads: not while the log's end is unanswered.
  const mark1 = ledger.beginSlice();
  ledger.track(1, [[VM, 1]]);
  entry("own", 1);
  let closed = false;
  const closingSlice1 = closing.close(ledger, () => ledger.record("virtual-machines", 1, 11, mark1))
    .then(() => closed = true);
  ledger.endSlice();
  await nextTask();
  assert.equal(closed, false, "the next slice waits for the log's newest id");
  releaseEnd();
  await closingSlice1;

  // Slice 2 starts while slice 1's entries are still being read: someone edits guest 2's VM
  // before the slice reads (and tracks) it.
  const mark2 = ledger.beginSlice();
  entry("admin", 2);
  releaseEntries();
  ledger.track(2, [[VM, 2]]);
  await closing.close(ledger, () => ledger.record("virtual-machines", 2, 22, mark2));
  ledger.endSlice();
  await closing.settle();

  assert.ok(ledger.unchanged("virtual-machines", 1, 11), "guest 1 recorded");
  // Read by slice 1's closing read, the edit would have named a VM no guest held yet.
  assert.equal(ledger.unchanged("virtual-machines", 2, 22), false, "guest 2 forgotten");
});
