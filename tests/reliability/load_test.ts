/**
 * Load (the CI-sized run; `deno task reliability` runs 200 clients for 60 s beside a 10,000-guest
 * sync): 20 clients for a few seconds mixing backend reads, inventory lists and writes and
 * hypervisor calls, while a full sync runs on the same server. Zero 5xx, zero transport errors,
 * every 201 readable afterwards and no object twice; the sync completes.
 */
import assert from "node:assert/strict";
import { addInventoryCopy, KEY, ROOT, syncWorld } from "../e2e/_sync_harness.ts";
import { runLoad } from "./_load.ts";

Deno.test({
  name: "load: 20 mixed clients beside a full sync, no 5xx, no lost or doubled write",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const world = await syncWorld("nodes=3,vms=300,cts=60,storages=2", {
    HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
  });
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const sync = world.stream("/full-update/stream");
    const report = await runLoad({
      base: world.base,
      backendKey: KEY,
      inventoryToken: ROOT,
      hypervisorUser: "root@pam",
      hypervisorPassword: "bridgebox",
    }, { clients: 20, durationMs: Number(Deno.env.get("RELIABILITY_LOAD_MS") ?? 3000), tag: "ci" });
    const frames = await sync;
    console.log(`load: ${JSON.stringify(report)}`);
    assert.equal(report.fiveHundreds, 0, JSON.stringify(report.byStatus));
    assert.equal(report.transportErrors, 0);
    assert.ok(report.writes > 0);
    assert.equal(report.lostWrites, 0);
    assert.equal(report.duplicatedWrites, 0);
    const statuses = Object.keys(report.byStatus).sort();
    assert.deepEqual(statuses, ["200", "201"], JSON.stringify(report.byStatus));
    assert.equal(frames.at(-1)?.event, "complete");
    assert.equal(frames.at(-1)?.data.ok, true, JSON.stringify(frames.at(-1)?.data).slice(0, 400));
    const vms = await world.inventoryCall("GET", "virtualization/virtual-machines/?limit=1");
    assert.equal(vms.body.count, 360);
  } finally {
    await world.close();
  }
});
