/**
 * What the ledger lets a re-run skip (docs/sync.md, "Re-runs: guests that did not change"), on a
 * change log kept in memory: a guest is skipped only when its digest is the same and nobody but
 * the sync touched its objects since; whenever the log cannot tell (a new ledger, a log that went
 * back or ran far ahead, ids missing, another writer's create, a delete, a custom field), every
 * guest is compared again. A skip that should not happen is a hand edit never put back or an
 * upstream change never written; tests/e2e/sync_ledger_test.ts shows those over HTTP.
 */
import assert from "node:assert/strict";
import { digestOf, readLog, SyncLedger, SyncLedgers } from "../../../domain/sync/ledger.ts";
import type { ChangeEntry, InventoryApi } from "../../../domain/sync/ports.ts";
import { KvSyncLedgerStore } from "../../../storage/kv/sync_ledgers.ts";

const signal = new AbortController().signal;
const VM = "virtualization.virtualmachine";
const DISK = "virtualization.virtualdisk";

/** A change log in memory, and how many ids the ledger asked for. */
function memoryLog() {
  const entries = new Map<number, ChangeEntry>();
  const calls = { idsRead: 0 };
  let next = 1;
  const inv = {
    changeEnd(end: "oldest" | "newest") {
      const ids = [...entries.keys()];
      if (ids.length === 0) return Promise.resolve(null);
      return Promise.resolve(end === "oldest" ? Math.min(...ids) : Math.max(...ids));
    },
    changesById(ids: number[]) {
      calls.idsRead += ids.length;
      return Promise.resolve(ids.flatMap((id) => entries.get(id) ?? []));
    },
  } as unknown as InventoryApi;
  const add = (entry: Omit<ChangeEntry, "id">) => {
    const id = next++;
    entries.set(id, { id, ...entry });
    return id;
  };
  /** `count` entries of the sync's own (request "own"). */
  const own = (count: number) => {
    for (let i = 0; i < count; i++) {
      add({ request_id: "own", action: "update", changed_object_type: VM, changed_object_id: 1 });
    }
  };
  /** An id taken without its entry (written later, or never). */
  const skip = () => next++;
  return { inv, calls, entries, add, own, skip };
}

/**
 * A ledger caught up on `log` with guests 1 and 2 recorded in stage "vms" (digests 11 and 22):
 * guest 1 holds VM 1 and disk 10, guest 2 VM 2, disk 20 and sync-state 200.
 */
async function recorded(log = memoryLog()) {
  const ledger = new SyncLedger((id) => id === "own");
  log.own(1);
  await ledger.catchUp(log.inv, signal);
  const mark = ledger.beginSlice();
  ledger.track(1, [[VM, 1], [DISK, 10]]);
  ledger.track(2, [[VM, 2], [DISK, 20], ["service.vmsyncstate", 200]]);
  ledger.record("vms", 1, 11, mark);
  ledger.record("vms", 2, 22, mark);
  ledger.endSlice();
  const skips = () => [ledger.unchanged("vms", 1, 11), ledger.unchanged("vms", 2, 22)];
  assert.deepEqual(skips(), [true, true]);
  return { log, ledger, skips };
}

Deno.test("ledger: someone else's entry forgets the guest whose object it names, the sync's own entries nothing; another digest is not skipped", async () => {
  const { log, ledger, skips } = await recorded();
  assert.equal(ledger.unchanged("disks", 1, 11), false, "another stage recorded nothing");

  log.add({ request_id: "own", action: "update", changed_object_type: VM, changed_object_id: 1 });
  log.add({
    request_id: "own",
    action: "delete",
    changed_object_type: "dcim.site",
    changed_object_id: 3,
  });
  await ledger.catchUp(log.inv, signal);
  assert.deepEqual(skips(), [true, true], "the sync's own writes forget nothing");

  log.add({
    request_id: "admin",
    action: "update",
    changed_object_type: DISK,
    changed_object_id: 10,
  });
  await ledger.catchUp(log.inv, signal);
  assert.deepEqual(skips(), [false, true], "a hand edit of guest 1's disk: guest 1 compared");
  assert.equal(ledger.size("vms"), 1);

  // The sync-state under the plugin's own app label, by a request without an id (a shell).
  log.add({
    request_id: null,
    action: "update",
    changed_object_type: "netbox_bridgebox.vmsyncstate",
    changed_object_id: 200,
  });
  await ledger.catchUp(log.inv, signal);
  assert.deepEqual(skips(), [false, false], "guest 2's sync-state edited");
});

Deno.test("ledger: a guest not skipped loses its old digest: a run that wrote it and ended before its record (cancelled, refused) leaves it compared, not skipped on the old digest", async () => {
  const { log, ledger } = await recorded();
  // An upstream change (digest 12): compared, and its objects written by the sync (own entries)...
  const changes = ledger.changes;
  assert.equal(ledger.unchanged("vms", 1, 12), false, "a changed digest (upstream) is compared");
  assert.notEqual(ledger.changes, changes, "the dropped digest is a change to save");
  log.add({ request_id: "own", action: "update", changed_object_type: VM, changed_object_id: 1 });
  // ...then the run ends before recording 12 (cancelled). The next run catches up on the own write.
  ledger.startRun();
  await ledger.catchUp(log.inv, signal);
  // Upstream went back to what digest 11 was made from: the VM holds what the cancelled run wrote.
  assert.equal(ledger.unchanged("vms", 1, 11), false, "not skipped on the digest before the write");
  assert.equal(ledger.unchanged("vms", 2, 22), true, "guest 2 untouched: still skipped");
  const state = ledger.exportState()!;
  const taken = new SyncLedger((id) => id === "own");
  assert.ok(taken.importState(state));
  assert.equal(taken.unchanged("vms", 1, 11), false, "nor in the process that takes its state");
});

Deno.test("ledger: another writer's create of a guest model, a delete (but of an IP address) or a custom field makes every guest compared; other edits keep the skips", async () => {
  const rows: [Omit<ChangeEntry, "id">, boolean][] = [
    [
      { request_id: "admin", action: "create", changed_object_type: DISK, changed_object_id: 99 },
      false,
    ],
    [{
      request_id: "admin",
      action: "create",
      changed_object_type: "x.vmsyncstate",
      changed_object_id: 99,
    }, false],
    [
      { request_id: "admin", action: "update", changed_object_type: DISK, changed_object_id: 99 },
      true,
    ],
    [
      { request_id: "admin", action: "delete", changed_object_type: DISK, changed_object_id: 99 },
      true,
    ],
    [{
      request_id: "admin",
      action: "delete",
      changed_object_type: "dcim.device",
      changed_object_id: 5,
    }, false],
    [{
      request_id: "admin",
      action: "delete",
      changed_object_type: "ipam.ipaddress",
      changed_object_id: 5,
    }, true],
    [{
      request_id: "admin",
      action: "update",
      changed_object_type: "extras.customfield",
      changed_object_id: 5,
    }, false],
    [{
      request_id: "admin",
      action: "update",
      changed_object_type: "dcim.site",
      changed_object_id: 5,
    }, true],
    [{
      request_id: "admin",
      action: "create",
      changed_object_type: "dcim.site",
      changed_object_id: 5,
    }, true],
  ];
  for (const [entry, kept] of rows) {
    const { log, ledger, skips } = await recorded();
    log.add(entry);
    await ledger.catchUp(log.inv, signal);
    assert.deepEqual(skips(), [kept, kept], JSON.stringify(entry));
  }
});

Deno.test("ledger: a guest forgotten or a reset while a stage reads its slice is not recorded by that slice; the next slice records it", async () => {
  const { log, ledger, skips } = await recorded();
  let mark = ledger.beginSlice();
  log.add({ request_id: "admin", action: "update", changed_object_type: VM, changed_object_id: 1 });
  await ledger.catchUp(log.inv, signal);
  ledger.record("vms", 1, 11, mark);
  ledger.record("vms", 2, 22, mark);
  ledger.endSlice();
  assert.deepEqual(skips(), [false, true], "guest 1 was edited after the slice read it");

  mark = ledger.beginSlice();
  ledger.record("vms", 1, 11, mark);
  ledger.endSlice();
  assert.deepEqual(skips(), [true, true]);

  mark = ledger.beginSlice();
  log.add({ request_id: "admin", action: "create", changed_object_type: VM, changed_object_id: 7 });
  await ledger.catchUp(log.inv, signal);
  ledger.record("vms", 1, 11, mark);
  ledger.endSlice();
  assert.deepEqual(skips(), [false, false], "a reset during the slice: nothing it read is kept");
});

Deno.test("ledger: nothing is skipped before the log is read, without a change log, or after a read that failed", async () => {
  const log = memoryLog();
  const ledger = new SyncLedger((id) => id === "own");
  ledger.track(1, [[VM, 1]]);
  ledger.record("vms", 1, 11, ledger.beginSlice());
  ledger.endSlice();
  assert.equal(ledger.usable, false);
  assert.equal(ledger.unchanged("vms", 1, 11), false, "a new ledger skips nothing");
  assert.equal(ledger.size("vms"), 0);

  log.own(1);
  await ledger.catchUp(log.inv, signal);
  ledger.record("vms", 1, 11, ledger.beginSlice());
  ledger.endSlice();
  assert.ok(ledger.unchanged("vms", 1, 11));

  const noLog = {} as InventoryApi;
  assert.equal(await readLog({ ledger, inv: noLog, signal }), null, "an inventory without a log");
  assert.equal(ledger.unchanged("vms", 1, 11), false);
  assert.equal(await readLog({ inv: log.inv, signal }), null, "a dry run keeps no ledger");

  await ledger.catchUp(log.inv, signal);
  ledger.record("vms", 1, 11, ledger.beginSlice());
  ledger.endSlice();
  const failing = {
    changeEnd: () => Promise.reject(new Error("503")),
    changesById: () => Promise.resolve([]),
  } as unknown as InventoryApi;
  assert.equal(await readLog({ ledger, inv: failing, signal }), null, "a log that failed");
  assert.equal(ledger.usable, false);
  assert.equal(ledger.unchanged("vms", 1, 11), false);
  assert.equal((await readLog({ ledger, inv: log.inv, signal })) === ledger, true, "read again");

  const aborted = new AbortController();
  aborted.abort();
  await assert.rejects(readLog({ ledger, inv: failing, signal: aborted.signal }), /503/);
});

Deno.test("ledger: a log that went back, or ran more than 50,000 entries ahead, starts over; 50,000 are read", async () => {
  {
    const { log, ledger, skips } = await recorded();
    log.own(3);
    await ledger.catchUp(log.inv, signal);
    for (const id of [...log.entries.keys()]) if (id > 1) log.entries.delete(id);
    // Another inventory behind the same address: its log ends below the cursor.
    await ledger.catchUp(log.inv, signal);
    assert.deepEqual(skips(), [false, false]);
    assert.ok(ledger.usable, "starts again from that log's end");
  }
  {
    const { log, ledger, skips } = await recorded();
    log.own(50_000);
    await ledger.catchUp(log.inv, signal);
    assert.deepEqual(skips(), [true, true], "50,000 of the sync's own entries are read");
    assert.equal(log.calls.idsRead, 50_000);
    log.own(50_001);
    await ledger.catchUp(log.inv, signal);
    assert.deepEqual(skips(), [false, false], "50,001 are not: every guest compared");
    assert.equal(log.calls.idsRead, 50_000, "none of them read");
  }
});

Deno.test("ledger: an id missing in an earlier run is taken as never written; more than 10,000 missing ids make every guest compared", async () => {
  {
    const { log, ledger, skips } = await recorded();
    ledger.startRun();
    log.skip();
    log.own(1);
    await ledger.catchUp(log.inv, signal);
    const read = log.calls.idsRead;
    await ledger.catchUp(log.inv, signal);
    assert.equal(log.calls.idsRead - read, 1, "still missing in this run: asked for again");
    ledger.startRun();
    await ledger.catchUp(log.inv, signal);
    assert.equal(log.calls.idsRead - read, 2, "asked once in the next run, then given up");
    await ledger.catchUp(log.inv, signal);
    assert.equal(log.calls.idsRead - read, 2);
    assert.deepEqual(skips(), [true, true]);
  }
  for (const [missing, kept] of [[10_000, true], [10_001, false]] as const) {
    const { log, ledger, skips } = await recorded();
    for (let i = 0; i < missing; i++) log.skip();
    log.own(1);
    await ledger.catchUp(log.inv, signal);
    assert.deepEqual(skips(), [kept, kept], `${missing} ids missing`);
  }
});

Deno.test("ledger: the log is read on after 5,000 writes, not while a stage reads its slice, and a read starts the count again", async () => {
  const { log, ledger } = await recorded();
  assert.equal(ledger.wrote(4_999), false);
  assert.equal(ledger.wrote(1), true, "5,000 written");
  await ledger.catchUp(log.inv, signal);
  assert.equal(ledger.wrote(4_999), false, "counted again from the read");
  ledger.beginSlice();
  assert.equal(ledger.wrote(10), false, "a slice reads the log itself");
  ledger.endSlice();
  assert.equal(ledger.wrote(0), true);
});

Deno.test("ledgers: one per inventory and endpoint; the sync's own request ids are its own on that inventory only, the newest 50,000 kept", async () => {
  const ledgers = new SyncLedgers();
  const a = await ledgers.ledger("http://a", 1);
  assert.equal(await ledgers.ledger("http://a", 1), a);
  assert.notEqual(await ledgers.ledger("http://a", 2), a);
  assert.notEqual(await ledgers.ledger("http://b", 1), a);
  ledgers.noteOwn("http://a", "r-1");
  assert.equal(a.own("r-1"), true);
  assert.equal(
    (await ledgers.ledger("http://a", 2)).own("r-1"),
    true,
    "another endpoint's run's writes",
  );
  assert.equal(
    (await ledgers.ledger("http://b", 1)).own("r-1"),
    false,
    "another inventory's request",
  );
  assert.equal(a.own("r-2"), false);
  for (let i = 2; i <= SyncLedgers.OWN_REQUESTS; i++) ledgers.noteOwn("http://a", `r-${i}`);
  assert.equal(a.own("r-1"), true, "50,000 kept");
  ledgers.noteOwn("http://a", "r-next");
  assert.deepEqual([a.own("r-1"), a.own("r-2"), a.own("r-next")], [false, true, true]);
});

Deno.test("ledger: a digest tells apart what a guest's objects are made from", () => {
  const base = { name: "vm-1", vcpus: 2, disks: [{ name: "scsi0", size: 4096 }] };
  assert.equal(digestOf(base), digestOf(structuredClone(base)));
  const others = [
    { ...base, vcpus: 3 },
    { ...base, name: "vm-2" },
    { ...base, disks: [{ name: "scsi0", size: 4097 }] },
    { ...base, disks: [] },
  ].map(digestOf);
  assert.equal(new Set([digestOf(base), ...others]).size, 5);
  assert.ok(others.every((d) => Number.isSafeInteger(d) && d >= 0));
  assert.notEqual(digestOf("ab"), digestOf("ba"));
});

Deno.test("ledger state: a new ledger (another process) that takes a saved state skips what the first did, still reads the ids missing at the save, forgets what someone else touched after it, and keeps the walks", async () => {
  const { log, ledger } = await recorded();
  const walks = {
    stateIds: new Map([[101, 200]]),
    stateVms: new Map([[101, 2]]),
    clusterNames: new Map([[1, "vm-a"], [2, "vm-é"]]),
  };
  ledger.keepWalks(walks, ledger.takeWalks().mark);
  const gap = log.skip(); // an entry still being written when the state is saved
  log.own(1);
  await ledger.catchUp(log.inv, signal);
  const state = ledger.exportState();
  assert.ok(state);

  const taken = new SyncLedger(() => false); // a new process knows none of the old requests
  assert.equal(taken.importState(state), true);
  assert.deepEqual([taken.unchanged("vms", 1, 11), taken.unchanged("vms", 2, 22)], [true, true]);
  assert.deepEqual(taken.takeWalks().kept, walks);

  // Someone else's edit of guest 2's disk after the save, and the missing entry, now written:
  // someone else's update of guest 1's VM (read only because the state kept the id missing).
  log.add({
    request_id: "other",
    action: "update",
    changed_object_type: DISK,
    changed_object_id: 20,
  });
  log.entries.set(gap, {
    id: gap,
    request_id: "other",
    action: "update",
    changed_object_type: VM,
    changed_object_id: 1,
  });
  taken.startRun();
  await taken.catchUp(log.inv, signal);
  assert.deepEqual([taken.unchanged("vms", 1, 11), taken.unchanged("vms", 2, 22)], [false, false]);
});

Deno.test("ledger state: nothing to save before the log was read; a state this build cannot read is refused and the ledger keeps what it knew", async () => {
  assert.equal(new SyncLedger(() => false).exportState(), null);
  // An empty log: the cursor is 0, a state like any other.
  const empty = new SyncLedger(() => false);
  await empty.catchUp(memoryLog().inv, signal);
  assert.equal(new SyncLedger(() => false).importState(empty.exportState()!), true);
  const { ledger } = await recorded();
  const state = ledger.exportState()!;
  const head = (text: string) => {
    const bytes = new TextEncoder().encode(text);
    const out = new Uint8Array(8 + Math.ceil(bytes.length / 8) * 8);
    new DataView(out.buffer).setUint32(0, bytes.length);
    out.set(bytes, 8);
    return out;
  };
  const withNumber = (n: number) => {
    const copy = state.slice();
    new DataView(copy.buffer).setFloat64(copy.length - 8, n, true);
    return copy;
  };
  const bad = [
    new Uint8Array(0),
    state.subarray(0, state.length - 8), // a number short
    new Uint8Array([...state, 0, 0, 0, 0, 0, 0, 0, 0]), // one too many
    withNumber(NaN),
    withNumber(1.5),
    head(JSON.stringify({ v: 2, cursor: 1, pending: 0, stages: [], models: [], walks: null })),
    head(JSON.stringify({ v: 1, cursor: -1, pending: 0, stages: [], models: [], walks: null })),
    head(
      JSON.stringify({
        v: 1,
        cursor: 1,
        pending: 0,
        stages: [["vms", 1]],
        models: [],
        walks: null,
      }),
    ),
    head("{not json"),
  ];
  const other = await recorded();
  for (const [i, bytes] of bad.entries()) {
    assert.equal(other.ledger.importState(bytes), false, `bad state ${i}`);
    assert.deepEqual(other.skips(), [true, true], `bad state ${i}: the ledger unchanged`);
  }
  assert.equal(
    other.ledger.importState(withNumber(22)),
    true,
    "the same state, the last number 22",
  );
});

/** A test over the saved-ledger store of a KV in memory (what processes on one file share). */
async function withStore(test: (store: KvSyncLedgerStore) => Promise<void>): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  try {
    await test(new KvSyncLedgerStore(kv, Date.now));
  } finally {
    kv.close();
  }
}

/** Guest `vmid`, holding VM `vm`, recorded in stage "vms" with `digest` in a slice of its own. */
function recordGuest(ledger: SyncLedger, vmid: number, vm: number, digest: number): void {
  const mark = ledger.beginSlice();
  ledger.track(vmid, [[VM, vm]]);
  ledger.record("vms", vmid, digest, mark);
  ledger.endSlice();
}

Deno.test("ledgers with a store: a run's ledger is taken by the next process's; nothing is saved before the log was read, nor without a store", async () => {
  await withStore(async (store) => {
    const first = new SyncLedgers(store);
    const ledger = await first.ledger("http://a", 1);
    assert.equal(await first.keep("http://a", 1), false, "the log not read yet: nothing to save");
    assert.equal((await new SyncLedgers(store).ledger("http://a", 1)).usable, false);

    const log = memoryLog();
    log.own(1);
    await ledger.catchUp(log.inv, signal);
    recordGuest(ledger, 7, 70, 77);
    assert.equal(await first.keep("http://a", 1), true);
    const alone = new SyncLedgers();
    const unsaved = await alone.ledger("http://a", 1);
    await unsaved.catchUp(log.inv, signal);
    assert.equal(await alone.keep("http://a", 1), false, "no store: nothing saved, nothing thrown");
    const next = await new SyncLedgers(store).ledger("http://a", 1);
    assert.notEqual(next, ledger);
    assert.equal(next.unchanged("vms", 7, 77), true, "the next process skips as this one would");
    assert.equal(
      (await new SyncLedgers(store).ledger("http://a", 2)).usable,
      false,
      "per endpoint",
    );
    // Another process saved since this one took its ledger: this one's is not saved over it.
    const other = new SyncLedgers(store);
    const theirs = await other.ledger("http://a", 1);
    const forget = (l: SyncLedger) => l.forgetGuest(7); // a change worth saving
    forget(theirs);
    assert.equal(await other.keep("http://a", 1), true);
    forget(ledger);
    assert.equal(await first.keep("http://a", 1), false);
    forget(theirs);
    assert.equal(await other.keep("http://a", 1), true, "the newest saver saves again");
  });
});

Deno.test("ledgers with a store: another process's sync writes on the inventory are the sync's own, not someone else's", async () => {
  await withStore(async (store) => {
    const [a, b] = [new SyncLedgers(store), new SyncLedgers(store)];
    const log = memoryLog();
    log.own(1);
    const ledger = await b.ledger("http://a", 2);
    await ledger.catchUp(log.inv, signal);
    recordGuest(ledger, 7, 70, 77);

    // Process a's run of another endpoint makes a VM (someone else's create of a guest model
    // would make every guest compared); an admin's edit of an object no guest holds is nothing.
    await a.noteOwn("http://a", "r-a");
    await a.noteOwn("http://b", "r-b"); // another inventory's
    log.add({
      request_id: "r-a",
      action: "create",
      changed_object_type: VM,
      changed_object_id: 99,
    });
    log.add({
      request_id: "admin",
      action: "update",
      changed_object_type: VM,
      changed_object_id: 5,
    });
    await ledger.catchUp(log.inv, signal);
    assert.equal(ledger.unchanged("vms", 7, 77), true, "process a's create is the sync's own");
    assert.equal(ledger.own("r-a"), true, "learnt");

    log.add({
      request_id: "r-b",
      action: "create",
      changed_object_type: VM,
      changed_object_id: 98,
    });
    await ledger.catchUp(log.inv, signal);
    assert.equal(ledger.unchanged("vms", 7, 77), false, "a request of another inventory's is not");
  });
});

Deno.test("ledgers with a store: a ledger is saved again only when something it saves changed", async () => {
  await withStore(async (store) => {
    const ledgers = new SyncLedgers(store);
    const ledger = await ledgers.ledger("http://a", 1);
    const log = memoryLog();
    log.own(1);
    await ledger.catchUp(log.inv, signal);
    const keep = () => ledgers.keep("http://a", 1);
    // The sync's own edit of an object no guest holds and no walk reads: only the cursor moves.
    const siteEdit = () =>
      log.add({
        request_id: "own",
        action: "update",
        changed_object_type: "dcim.site",
        changed_object_id: 3,
      });
    let gap = 0;
    assert.equal(await keep(), true, "the first save");
    assert.equal(await keep(), false, "nothing changed");
    await ledger.catchUp(log.inv, signal);
    assert.equal(await keep(), false, "a catch-up that read nothing");
    const changes: [string, () => void | Promise<void>][] = [
      ["a record", () => {
        const mark = ledger.beginSlice();
        ledger.record("vms", 7, 77, mark);
        ledger.endSlice();
      }],
      ["a tracked object", () => ledger.track(7, [[VM, 70]])],
      ["the cursor moved", async () => {
        siteEdit();
        await ledger.catchUp(log.inv, signal);
      }],
      ["an id seen missing", async () => {
        gap = log.skip();
        siteEdit();
        await ledger.catchUp(log.inv, signal);
      }],
      ["the missing id found (the cursor where it was)", async () => {
        log.entries.set(gap, {
          id: gap,
          request_id: "own",
          action: "update",
          changed_object_type: "dcim.site",
          changed_object_id: 3,
        });
        await ledger.catchUp(log.inv, signal);
      }],
      ["kept walks", () => {
        const walks = { stateIds: new Map(), stateVms: new Map(), clusterNames: new Map() };
        ledger.keepWalks(walks, ledger.takeWalks().mark);
      }],
      ["walks taken", () => void ledger.takeWalks()],
      ["a guest forgotten", () => ledger.forgetGuest(7)],
      ["a stage forgotten", () => ledger.forgetStage("vms")],
      ["everything forgotten", () => ledger.reset()],
    ];
    for (const [what, change] of changes) {
      await change();
      assert.equal(await keep(), true, what);
      assert.equal(await keep(), false, `${what}, saved`);
    }
    const mark = ledger.beginSlice();
    ledger.record("vms", 8, 88, mark);
    ledger.record("vms", 8, 88, mark);
    ledger.endSlice();
    assert.equal(await keep(), true);
    const again = ledger.beginSlice();
    ledger.record("vms", 8, 88, again);
    ledger.endSlice();
    assert.equal(await keep(), false, "the same digest recorded again");
  });
});

Deno.test("ledgers with a store: another process's write of an object a guest holds forgets the guest (its run of the endpoint ended without saving), another endpoint's create forgets nothing", async () => {
  await withStore(async (store) => {
    const [a, b] = [new SyncLedgers(store), new SyncLedgers(store)];
    const log = memoryLog();
    log.own(1);
    // Process a's run: guests 7 (VM 70) and 8 (VM 81) recorded with digests 11 and 88, saved.
    const first = await a.ledger("http://a", 1);
    first.startRun();
    await first.catchUp(log.inv, signal);
    const mark = first.beginSlice();
    first.track(7, [[VM, 70]]);
    first.track(8, [[VM, 81]]);
    first.record("vms", 7, 11, mark);
    first.record("vms", 8, 88, mark);
    first.endSlice();
    assert.equal(await a.keep("http://a", 1), true);

    // Process b's run of the endpoint takes that state; upstream changed (digest 12): it writes
    // VM 70 and is cancelled before its record, so nothing is saved.
    const taken = await b.ledger("http://a", 1);
    taken.startRun();
    await taken.catchUp(log.inv, signal);
    assert.equal(taken.unchanged("vms", 7, 12), false);
    await b.noteOwn("http://a", "r-b");
    log.add({
      request_id: "r-b",
      action: "update",
      changed_object_type: VM,
      changed_object_id: 70,
    });
    // and another endpoint's run there makes a VM no guest here holds.
    await b.noteOwn("http://a", "r-b2");
    log.add({
      request_id: "r-b2",
      action: "create",
      changed_object_type: VM,
      changed_object_id: 80,
    });

    // Upstream went back to what 11 was made from; process a runs next, on its own ledger (the
    // saved one is still its own).
    const again = await a.ledger("http://a", 1);
    assert.equal(again, first);
    again.startRun();
    await again.catchUp(log.inv, signal);
    assert.equal(again.unchanged("vms", 7, 11), false, "VM 70 holds what b's run wrote: compared");
    assert.equal(again.unchanged("vms", 8, 88), true, "b's create of VM 80 forgot nothing");
  });
});

Deno.test("ledger: another log behind the address, ahead of the cursor (another NetBox, one restored from a backup and written since), starts over; the same log read on keeps the skips", async () => {
  const { log, ledger, skips } = await recorded();
  log.add({ request_id: "own", action: "update", changed_object_type: VM, changed_object_id: 1 });
  await ledger.catchUp(log.inv, signal);
  assert.deepEqual(skips(), [true, true], "the same log");
  const taken = new SyncLedger((id) => id === "own");
  assert.ok(taken.importState(ledger.exportState()!));

  // Another log: more entries than the cursor, about objects no guest holds, none a delete.
  const other = memoryLog();
  for (let i = 0; i < 5; i++) {
    other.add({
      request_id: `r${i}`,
      action: "update",
      changed_object_type: "dcim.site",
      changed_object_id: 3,
    });
  }
  for (const l of [ledger, taken]) {
    await l.catchUp(other.inv, signal);
    assert.deepEqual(
      [l.unchanged("vms", 1, 11), l.unchanged("vms", 2, 22)],
      [false, false],
      "every guest compared",
    );
    assert.equal(l.usable, true, "and recorded from the new cursor on");
  }
});
