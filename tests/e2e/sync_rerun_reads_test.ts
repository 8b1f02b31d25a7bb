/**
 * What an unchanged re-run reads, per guest, when the estate is larger than the inventory's read
 * cache (docs/sync.md, "Re-runs"): at 100,000 guests a model no longer fits the cache's 40,000
 * records per model, and each object was read from KV about three times per run. The cache's
 * bounds are set small here (INVENTORY_CACHE_*), so two small estates overflow it as a large one
 * does, and the inventory records read from Deno KV are counted (never timed) at both sizes.
 */
import assert from "node:assert/strict";
import { addInventoryCopy, assertNothingWritten, syncWorld } from "./_sync_harness.ts";
import { ReadCounter } from "../_kv_reads.ts";

/** An unchanged re-run of `guests` guests: inventory records read from KV, per guest. */
async function rerunReads(
  guests: number,
): Promise<
  {
    perGuest: number;
    vmsPerGuest: number;
    statesPerGuest: number;
    disksPerGuest: number;
    addressesPerGuest: number;
    snapshotsPerGuest: number;
    backupsPerGuest: number;
    byModel: string;
  }
> {
  const counter = new ReadCounter();
  const kv = counter.wrap(await Deno.openKv(":memory:"));
  const vms = Math.round(guests * 0.8);
  const world = await syncWorld(`nodes=1,vms=${vms},cts=${guests - vms},storages=1`, {
    HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
    // Below the estate (each guest has a VM, a sync-state, disks, interfaces, addresses): every
    // guest model overflows its part of the cache, as at 100,000 guests with the defaults; and
    // above one request's 100 parents (a larger read is not kept at all).
    INVENTORY_CACHE_RECORDS_PER_MODEL: "100",
    INVENTORY_CACHE_RECORDS: "300",
  }, { kv });
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const first = await world.backend("GET", "/full-update");
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.result.failed, 0, JSON.stringify(first.body.result));
    counter.counting = true;
    const again = await world.backend("GET", "/full-update");
    counter.counting = false;
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assertNothingWritten(again.body.result, "an unchanged re-run writes nothing");
    const byModel = [...counter.byModel].sort((a, b) => b[1] - a[1])
      .map(([m, n]) => `${m} ${(n / guests).toFixed(2)}`).join(", ");
    return {
      perGuest: counter.total() / guests,
      vmsPerGuest: (counter.byModel.get("virtualization.virtualmachine") ?? 0) / guests,
      statesPerGuest: (counter.byModel.get("service.vmsyncstate") ?? 0) / guests,
      disksPerGuest: (counter.byModel.get("virtualization.virtualdisk") ?? 0) / guests,
      addressesPerGuest: (counter.byModel.get("ipam.ipaddress") ?? 0) / guests,
      snapshotsPerGuest: (counter.byModel.get("service.snapshot") ?? 0) / guests,
      backupsPerGuest: (counter.byModel.get("service.backup") ?? 0) / guests,
      byModel,
    };
  } finally {
    await world.close();
  }
}

Deno.test("e2e sync re-run: past the read cache's bounds an unchanged re-run reads each object once per stage that needs it, the same per guest at two sizes", async () => {
  const small = await rerunReads(150);
  const large = await rerunReads(300);
  const report = `inventory records read from KV per guest, unchanged re-run: 150 guests ${
    small.perGuest.toFixed(2)
  } (${small.byModel}); 300 guests ${large.perGuest.toFixed(2)} (${large.byModel})`;
  console.log(report);
  // Counted after the changes of docs/sync.md "Re-runs" (before the ledger): 16-18 per guest,
  // VMs 6-7.5 (read by the stages that need them: the walks, the VM stage, the children's
  // filters). Before: VMs 10 and more per guest (their nested forms read again in the requests
  // that had just read them, the cluster's three sums of every VM), 22-24 in all.
  // The sync-states: read once, by the run's walk (2.00 per guest while the VM stage read each
  // slice's records again by id); since the ledger keeps the walks (docs/sync.md, "Re-runs:
  // guests that did not change"), not at all: the last run's are taken.
  assert.ok(small.statesPerGuest === 0 && large.statesPerGuest === 0, report);
  // The ledger: the virtual-machines, vm-disks, vm-interfaces and ip-addresses stages skip the
  // guests nobody changed, their VMs, sync-states, disks, interfaces, MAC and IP addresses
  // unread, and the walks of the sync-states and the cluster's VMs are the last run's: about 2
  // per guest (6-6.5 with the ip-addresses stage comparing every guest, 8.7-9.6 with the walks,
  // 16-18 without the ledger), VMs 0.7-0.85 (those nested in snapshot and backup records; 1.7-2.2
  // with the ip-addresses stage, 3.7-4.4 with the walks), no disk and almost no address (the
  // change log's few entries name some).
  // The vm-snapshots and vm-backups stages skip them too (docs/sync.md, "Re-runs: guests that
  // did not change"): about 0.7-1 per guest, most of it the snapshot records' walk (id and vmid,
  // 0.33: which guests have records, for those gone upstream) and the run's fixed reads (its
  // token, tags), VMs 0.01-0.03 (0.7-0.85 with the two stages reading every guest's records, each
  // nesting its VM; 2.0-2.1 records per guest in all).
  assert.ok(large.perGuest <= 1.25, report);
  assert.ok(large.vmsPerGuest <= 0.1 && small.vmsPerGuest <= 0.1, report);
  assert.ok(small.disksPerGuest === 0 && large.disksPerGuest === 0, report);
  assert.ok(small.addressesPerGuest <= 0.1 && large.addressesPerGuest <= 0.1, report);
  assert.ok(large.snapshotsPerGuest <= 0.4 && small.snapshotsPerGuest <= 0.4, report);
  assert.ok(small.backupsPerGuest === 0 && large.backupsPerGuest === 0, report);
  // Not a cost that grows with the estate: per guest, twice the guests read about the same.
  assert.ok(large.perGuest <= small.perGuest * 1.25, report);
  assert.ok(small.perGuest > 0.3, report);
});
