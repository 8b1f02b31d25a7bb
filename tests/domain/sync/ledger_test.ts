/**
 * The ledger's reads of the change log (docs/sync.md, "Re-runs: guests that did not change"),
 * counted on a log kept in memory: a catch-up asks for the log's newest id and the entries after
 * its cursor; the oldest id only when an id it expects is missing (pruned, or still being
 * written). The e2e file tests/e2e/sync_ledger_test.ts runs the same over HTTP.
 */
import assert from "node:assert/strict";
import { SyncLedger } from "../../../domain/sync/ledger.ts";
import type { ChangeEntry, InventoryApi } from "../../../domain/sync/ports.ts";

/** A change log in memory: the entries there are, and the calls the ledger made. */
function memoryLog() {
  const entries = new Map<number, ChangeEntry>();
  const calls = { newest: 0, oldest: 0, reads: 0, idsRead: 0 };
  let next = 1;
  const inv = {
    changeEnd(end: "oldest" | "newest") {
      calls[end]++;
      const ids = [...entries.keys()];
      if (ids.length === 0) return Promise.resolve(null);
      return Promise.resolve(end === "oldest" ? Math.min(...ids) : Math.max(...ids));
    },
    changesById(ids: number[]) {
      calls.reads++;
      calls.idsRead += ids.length;
      return Promise.resolve(ids.flatMap((id) => entries.get(id) ?? []));
    },
  } as unknown as InventoryApi;
  /** `count` entries by `requestId` about VMs from `firstVm` on. */
  const log = (count: number, requestId: string, firstVm = 1) => {
    for (let i = 0; i < count; i++) {
      const id = next++;
      entries.set(id, {
        id,
        request_id: requestId,
        action: "update",
        changed_object_type: "virtualization.virtualmachine",
        changed_object_id: firstVm + i,
      });
    }
  };
  /** An id taken without its entry (written later, or never). */
  const skip = () => next++;
  return { inv, calls, entries, log, skip };
}

const signal = new AbortController().signal;

Deno.test("ledger: a catch-up past the sync's own entries asks for the log's newest id only, and reads each entry once", async () => {
  const log = memoryLog();
  const ledger = new SyncLedger((id) => id === "own");
  log.log(5, "admin");
  await ledger.catchUp(log.inv, signal); // a new ledger: starts at the log's end
  for (let round = 0; round < 4; round++) {
    log.log(700, "own");
    await ledger.catchUp(log.inv, signal);
  }
  assert.deepEqual(
    { newest: log.calls.newest, oldest: log.calls.oldest, idsRead: log.calls.idsRead },
    // Each entry once, and from the second round on the one at the cursor again (the same log?).
    { newest: 5, oldest: 0, idsRead: 2_803 },
  );
  assert.ok(ledger.usable);
});

Deno.test("ledger: an id missing after the cursor asks for the oldest; pruned, the guests are compared again; still being written, it is read next time", async () => {
  const log = memoryLog();
  const ledger = new SyncLedger((id) => id === "own");
  log.log(3, "own");
  await ledger.catchUp(log.inv, signal);
  ledger.track(7, [["virtualization.virtualmachine", 7]]);
  ledger.record("virtual-machines", 7, 42, ledger.beginSlice());
  ledger.endSlice();

  // An entry not there yet (its request is still writing): pending, the record kept.
  const late = log.skip();
  log.log(2, "own", 100);
  await ledger.catchUp(log.inv, signal);
  assert.equal(log.calls.oldest, 1);
  assert.ok(ledger.unchanged("virtual-machines", 7, 42));
  // Its entry arrives (someone else's edit of guest 7's VM): read by id, the guest forgotten.
  log.entries.set(late, {
    id: late,
    request_id: "admin",
    action: "update",
    changed_object_type: "virtualization.virtualmachine",
    changed_object_id: 7,
  });
  await ledger.catchUp(log.inv, signal);
  assert.equal(ledger.unchanged("virtual-machines", 7, 42), false);

  // An id pruned before it was read: the log cannot tell, every guest is compared.
  ledger.record("virtual-machines", 8, 43, ledger.beginSlice());
  ledger.endSlice();
  assert.ok(ledger.unchanged("virtual-machines", 8, 43));
  const lost = log.skip();
  log.log(2, "own", 200);
  for (const id of [...log.entries.keys()]) if (id < lost + 1) log.entries.delete(id);
  await ledger.catchUp(log.inv, signal);
  assert.equal(ledger.unchanged("virtual-machines", 8, 43), false);
  assert.equal(ledger.size("virtual-machines"), 0);
});

Deno.test("ledger: the kept walks are taken once; an entry about a VM or sync-state that no guest of the ledger holds (someone else's, or the sync's own of another endpoint) keeps none", async () => {
  const log = memoryLog();
  const ledger = new SyncLedger((id) => id === "own");
  const walks = () => ({
    stateIds: new Map([[100, 1]]),
    stateVms: new Map([[100, 7]]),
    clusterNames: new Map([[7, "web"], [8, "hand-made"]]),
  });
  // A new ledger keeps nothing until its cursor is known.
  ledger.keepWalks(walks(), ledger.takeWalks().mark);
  assert.equal(ledger.takeWalks().kept, null, "no cursor: nothing kept");
  await ledger.catchUp(log.inv, signal);
  ledger.track(100, [["virtualization.virtualmachine", 7], ["service.vmsyncstate", 1]]);

  /** Keeps the walks, then `between` happens: whether the next take finds them. */
  const keptAfter = async (between: () => void) => {
    ledger.keepWalks(walks(), ledger.takeWalks().mark);
    between();
    await ledger.catchUp(log.inv, signal);
    const { kept } = ledger.takeWalks();
    return kept !== null && kept.clusterNames.get(8) === "hand-made";
  };
  assert.equal(await keptAfter(() => log.log(1, "own", 7)), true, "the sync's own, of its VM");
  assert.equal(ledger.takeWalks().kept, null, "taken once");
  assert.equal(await keptAfter(() => log.log(1, "admin", 7)), false, "someone else's edit");
  ledger.track(100, [["virtualization.virtualmachine", 7]]);
  assert.equal(await keptAfter(() => log.log(1, "admin", 8)), false, "a VM no guest holds");
  assert.equal(await keptAfter(() => log.log(1, "own", 9)), false, "own, of no guest here");
  assert.equal(await keptAfter(() => {}), true, "nothing happened");
  // Walks read before a drop are not kept by the mark taken before them.
  const { mark } = ledger.takeWalks();
  log.log(1, "admin", 8);
  await ledger.catchUp(log.inv, signal);
  ledger.keepWalks(walks(), mark);
  assert.equal(ledger.takeWalks().kept, null, "read before a drop: not kept");
});
