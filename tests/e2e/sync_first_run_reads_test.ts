/**
 * What a first run reads of the objects it has just made (docs/sync.md, "Writes: round 8"): a
 * VM the virtual-machines stage made has no disks or interfaces of the sync's, an interface the
 * vm-interfaces stage made has no MAC or IP address, until the one stage that writes them runs.
 * Those stages do not ask about them. Counted as requests per guest at two sizes (one slice of
 * 500 guests, and two), not timed.
 */
import assert from "node:assert/strict";
import { addInventoryCopy, assertNothingWritten, syncWorld } from "./_sync_harness.ts";

/** Reads by parent of a first run of `guests` guests, by what they read. */
async function firstRunReads(guests: number) {
  const vms = Math.round(guests * 0.8);
  const world = await syncWorld(`nodes=1,vms=${vms},cts=${guests - vms},storages=1`, {
    HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
  });
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const from = world.requests.length;
    const first = await world.backend("GET", "/full-update");
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.result.failed, 0, JSON.stringify(first.body.result));
    const reads = world.requests.slice(from).filter((r) => r.startsWith("GET /api/"));
    const byParent = (path: string, field: string) =>
      reads.filter((r) => r.startsWith(`GET /api/${path}?`) && r.includes(`${field}=`)).length;
    // The next run compares every guest's objects it did not skip: nothing is missing or extra.
    const again = await world.backend("GET", "/full-update?plan=true");
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assertNothingWritten(again.body.result, "what the first run wrote is whole");
    return {
      disks: byParent("virtualization/virtual-disks/", "virtual_machine_id"),
      interfaces: byParent("virtualization/interfaces/", "virtual_machine_id"),
      macs: byParent("dcim/mac-addresses/", "assigned_object_id"),
      // The edit check before the primary-MAC PATCH re-reads interfaces by id.
      interfacesById: reads.filter((r) =>
        r.startsWith("GET /api/virtualization/interfaces/?") && /[?&]id=/.test(r)
      ).length,
      // The node interfaces' addresses (network-interfaces stage) are read whole, not by fields.
      addresses: reads.filter((r) =>
        r.startsWith("GET /api/ipam/ip-addresses/?") && r.includes("assigned_object_id=") &&
        r.includes("fields=")
      ).length,
      created: first.body.result.created,
    };
  } finally {
    await world.close();
  }
}

/** Requests that name up to 100 VMs each, slice by slice of 500 guests (guests.ts). */
function requestsBy100(guests: number): number {
  let n = 0;
  for (let start = 0; start < guests; start += 500) {
    n += Math.ceil(Math.min(500, guests - start) / 100);
  }
  return n;
}

Deno.test("e2e sync first run: the stages do not read the disks, interfaces, MAC and IP addresses of objects the run has just made, nor re-read the interfaces it made, at two sizes", async () => {
  for (const guests of [200, 600]) {
    const reads = await firstRunReads(guests);
    const report = `${guests} guests: ${JSON.stringify(reads)}`;
    assert.ok(reads.created > guests * 5, report);
    // Before: one request per 100 guests each for disks, MAC and IP addresses (a little more
    // for the interfaces' addresses), and interfaces read twice (vm-interfaces, ip-addresses).
    assert.equal(reads.disks, 0, report);
    assert.equal(reads.macs, 0, report);
    // Nor are the interfaces it made re-read by the edit check before their primary-MAC PATCH.
    assert.equal(reads.interfacesById, 0, report);
    assert.equal(reads.addresses, 0, report);
    // The ip-addresses stage still reads the interfaces vm-interfaces made (their ids).
    assert.equal(reads.interfaces, requestsBy100(guests), report);
  }
});
