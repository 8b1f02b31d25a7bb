// deno-lint-ignore-file no-explicit-any
/**
 * The job service in process (tests/domain/jobs/_service_world.ts): what a job record says from
 * queue to end, interval series on a clock the test moves, scheduled and waiting jobs, cancel,
 * the run lease, recovery of a dead owner's job, retention, endpoints as parts. Queue messages
 * are delivered by the test (`service.handle(id)`), never by waiting.
 */
import assert from "node:assert/strict";
import { MAX_WAITING_JOBS_PER_TOKEN } from "../../../domain/jobs/service.ts";
import { SYNC_TYPES } from "../../../domain/jobs/stages.ts";
import {
  endpoint,
  MINUTE,
  serviceWorld,
  stageFrames,
  statusOf,
  streamOf,
  T0,
  typesOf,
} from "./_service_world.ts";

const iso = (ms: number) => new Date(ms).toISOString();

/** The ids of the jobs whose request (spec) the store holds, read from the KV itself. */
async function storedRequests(kv: Deno.Kv): Promise<number[]> {
  const ids: number[] = [];
  for await (const e of kv.list({ prefix: ["plugin_jobs", "spec"] })) ids.push(Number(e.key[2]));
  return ids;
}

/** Waits for `reached`; a run that ends first fails the test at once instead of hanging it. */
function until(reached: Promise<void>, run: Promise<void>): Promise<void> {
  return Promise.race([
    reached,
    run.then(() => {
      throw new Error("the run ended before it reached the point the test waits for");
    }),
  ]);
}

/** A stage answer held at its first call (of backend copy `only`, when given) until the test opens
 * `gate`; `reached` says a run got there. */
function heldAnswer(only?: number) {
  const gate = Promise.withResolvers<void>();
  const reached = Promise.withResolvers<void>();
  const answer = async (path: string, copy: number) => {
    if (only === undefined || copy === only) {
      reached.resolve();
      await gate.promise;
    }
    return streamOf(stageFrames(typesOf(path)));
  };
  return { gate, reached, answer };
}

Deno.test("job service: a one-endpoint job's record and log, line by line, from queue to end", async () => {
  const clock = { t: T0 };
  // Each stage stream takes 3 s on the test's clock.
  const w = await serviceWorld({
    clock,
    answer: (path) => {
      clock.t += 3_000;
      return streamOf(stageFrames(typesOf(path)));
    },
  });
  try {
    const id = await w.admit({ sync_types: ["devices", "storage"] });
    const queued = await w.job(id);
    assert.equal(statusOf(queued), "pending");
    assert.equal(queued.name, "Sync devices, storage");
    assert.deepEqual(queued.user, { display: "token 1 (ops)", token_id: 1, description: "ops" });
    assert.deepEqual(w.store.queuedFor(id), [0], "queued to run now");
    assert.deepEqual(await w.counts(), { pending: 1 });

    w.clock.t += 1_000;
    await w.service.handle(id);
    const job = await w.job(id);
    assert.equal(statusOf(job), "completed", job.error);
    assert.equal(job.error, "");
    assert.equal(job.started, iso(T0 + 1_000));
    assert.equal(job.completed, iso(T0 + 7_000));
    // Counted once, with how long it ran; traced in one span named for its kind.
    assert.deepEqual(w.finished, [["sync", "completed", 6]]);
    assert.deepEqual(w.spans, [{
      name: "job.sync",
      attributes: {
        "bridgebox.job.id": id,
        "bridgebox.job.kind": "sync",
        "bridgebox.job.sync_types": "devices,storage",
        "bridgebox.job.status": "completed",
      },
      failed: null,
    }]);
    // One stream per stage (not all 13: no full update), in table order, scoped to the copy.
    assert.deepEqual(w.streams, [
      "101 /dcim/devices/create/stream",
      "101 /virtualization/virtual-machines/storage/create/stream",
    ]);
    assert.deepEqual(await w.messages(id), [
      "Queued by token 1 (ops): devices, storage.",
      "Started (sync) by process p1.",
      "Preflight: backend http://backend.test is ready",
      'Preflight: pushed hypervisor endpoint "pve"',
      'devices for "pve": started',
      'devices for "pve": completed (1 created, 0 updated, 0 unchanged, 0 deleted, 0 failed)',
      'storage for "pve": started',
      'storage for "pve": completed (1 created, 0 updated, 0 unchanged, 0 deleted, 0 failed)',
      "Completed.",
    ]);
    assert.deepEqual(job.log_entries[0], {
      timestamp: iso(T0),
      level: "info",
      message: "Queued by token 1 (ops): devices, storage.",
    });
    assert.deepEqual(
      job.data.map((r: any) => [r.sync_type, r.endpoint_id, r.stream_path, r.runtime_seconds]),
      [
        ["devices", 1, "/dcim/devices/create/stream", 0.005],
        ["storage", 1, "/virtualization/virtual-machines/storage/create/stream", 0.005],
      ],
    );
    // One endpoint runs in the job's own run: no parts for other processes to take.
    assert.deepEqual(await w.store.parts(), []);
    assert.deepEqual(w.lastSync.get(1), [
      { at: iso(T0 + 7_000), ok: true, job_id: id, status: "completed" },
    ]);
    // Everything the run held is given back: the lease, the slot, the live progress.
    assert.equal(await w.store.lease(), null);
    assert.equal(await w.store.slotHolder("sync"), null);
    assert.equal(await w.store.progress(id), null);
    assert.deepEqual(await w.counts(), {});
    // A second delivery of the same message does nothing to a finished job.
    await w.service.handle(id);
    assert.equal(w.streams.length, 2);
    assert.equal((await w.messages(id)).length, 9);
  } finally {
    w.close();
  }
});

Deno.test("job service: an interval job queues its next run one interval after this one was due; it runs when the clock gets there", async () => {
  const w = await serviceWorld();
  try {
    const first = await w.admit({ interval_minutes: 60, job_name: "hourly" });
    assert.equal((await w.job(first)).interval, 60);
    assert.match((await w.messages(first))[0], /: devices, every 60 min\.$/);
    w.clock.t += 2 * MINUTE; // the run starts two minutes late
    await w.service.handle(first);
    assert.equal(statusOf(await w.job(first)), "completed");

    const scheduled = await w.engine.find("core.job", { status: ["scheduled"] });
    assert.equal(scheduled.length, 1, "one next run");
    const next = scheduled[0] as any;
    assert.equal(next.name, "hourly");
    assert.equal(next.interval, 60);
    assert.deepEqual(next.user, (await w.job(first)).user);
    // An immediate job has no due time: the next is one interval after it started.
    assert.equal(next.scheduled, iso(T0 + 62 * MINUTE));
    assert.deepEqual(await w.messages(next.id), [
      `Scheduled for ${iso(T0 + 62 * MINUTE)} (every 60 min, after job ${first}).`,
    ]);
    // Its queue message is due then (the series would stop without it).
    assert.deepEqual(w.store.queuedFor(next.id), [60 * MINUTE]);

    // A message delivered early (the queue may) puts it back for the time that is left.
    w.clock.t += 30 * MINUTE;
    await w.service.handle(next.id);
    assert.equal(statusOf(await w.job(next.id)), "scheduled");
    assert.deepEqual(w.store.queuedFor(next.id), [60 * MINUTE, 30 * MINUTE]);
    assert.equal(w.streams.length, 1, "not run early");

    // Due: it runs, and queues the one after, one interval after this one was due (not after
    // it ran: 5 minutes late here).
    w.clock.t = T0 + 67 * MINUTE;
    await w.service.handle(next.id);
    const ran = await w.job(next.id);
    assert.equal(statusOf(ran), "completed", ran.error);
    assert.equal(ran.started, iso(T0 + 67 * MINUTE));
    const third = (await w.engine.find("core.job", { status: ["scheduled"] }))[0] as any;
    assert.equal(third.scheduled, iso(T0 + 122 * MINUTE));
    assert.deepEqual(w.store.queuedFor(third.id), [55 * MINUTE]);

    // Finished exactly one interval after its due time: the next is not due at once, it is
    // one interval from now.
    w.clock.t = T0 + 182 * MINUTE;
    await w.service.handle(third.id);
    const fourth = (await w.engine.find("core.job", { status: ["scheduled"] }))[0] as any;
    assert.equal(fourth.scheduled, iso(T0 + 242 * MINUTE));
    assert.deepEqual(w.store.queuedFor(fourth.id), [60 * MINUTE]);

    // A series that fell more than an interval behind (the process was down) is not due in the
    // past either.
    w.clock.t = T0 + 500 * MINUTE;
    await w.service.handle(fourth.id);
    const fifth = (await w.engine.find("core.job", { status: ["scheduled"] }))[0] as any;
    assert.equal(fifth.scheduled, iso(T0 + 560 * MINUTE));
    assert.deepEqual(w.store.queuedFor(fifth.id), [60 * MINUTE]);
    // Each run's spec is the series': the same stages and interval.
    assert.deepEqual(await w.store.spec(fifth.id), await w.store.spec(first));
  } finally {
    w.close();
  }
});

Deno.test("job service: a scheduled job waits in the queue, holds no slot, and deleting it cancels it", async () => {
  const w = await serviceWorld();
  try {
    const later = await w.admit({ schedule_at: T0 + 60 * MINUTE });
    const job = await w.job(later);
    assert.equal(statusOf(job), "scheduled");
    assert.equal(job.scheduled, iso(T0 + 60 * MINUTE));
    assert.equal(job.started, null);
    assert.deepEqual(await w.messages(later), [
      `Scheduled for ${iso(T0 + 60 * MINUTE)} by token 1 (ops): devices.`,
    ]);
    assert.deepEqual(w.store.queuedFor(later), [60 * MINUTE]);
    assert.equal(await w.store.slotHolder("sync"), null, "a scheduled job holds no slot");
    const now = await w.admit({ sync_types: ["storage"] });
    assert.equal(await w.store.slotHolder("sync"), now);

    // Within a second of its time the job is due (queue delays are not exact).
    w.clock.t = T0 + 60 * MINUTE - 1_000;
    assert.equal(await w.service.cancel(later), "deleted");
    assert.equal(await w.job(later), null);
    assert.equal(await w.store.spec(later), null);
    // Its message, when it comes, finds nothing to run.
    await w.service.handle(later);
    assert.deepEqual(w.streams, []);
    assert.equal(await w.service.cancel(later), "missing");
    // Cancelling the waiting immediate job frees the slot for another.
    assert.equal(await w.service.cancel(now), "deleted");
    assert.equal(await w.store.slotHolder("sync"), null);
    const again = await w.submit();
    assert.equal(again.ok, true);
  } finally {
    w.close();
  }
});

Deno.test("job service: a job due within a second runs when its message comes", async () => {
  const w = await serviceWorld();
  try {
    const id = await w.admit({ schedule_at: T0 + 10 * MINUTE });
    assert.deepEqual(await w.counts(), { scheduled: 1 });
    w.clock.t = T0 + 10 * MINUTE - 1_000;
    await w.service.handle(id);
    assert.equal(statusOf(await w.job(id)), "completed");
    assert.deepEqual(w.store.queuedFor(id), [10 * MINUTE]);
  } finally {
    w.close();
  }
});

Deno.test("job service: admission: one immediate sync at a time, a repair blocks syncs, one repair at a time", async () => {
  const w = await serviceWorld();
  try {
    const sync = await w.admit();
    assert.deepEqual(await w.submit(), { ok: false, reason: "busy", holder: sync });
    // The refused request leaves nothing behind: no record, no stored request.
    assert.equal((await w.engine.find("core.job", {})).length, 1);
    assert.deepEqual(await storedRequests(w.kv), [sync]);
    const repair = await w.admit({ sync_types: [] }, "repair");
    const repairJob = await w.job(repair);
    assert.equal(repairJob.name, "Repair: reconcile custom fields and full sync");
    assert.deepEqual(await w.submit({}, "repair"), { ok: false, reason: "busy", holder: repair });
    await w.service.handle(sync);
    // The sync is done, the repair still waits: a sync is refused, naming the repair.
    assert.deepEqual(await w.submit(), { ok: false, reason: "busy", holder: repair });
    await w.service.handle(repair);
    const repaired = await w.job(repair);
    assert.equal(statusOf(repaired), "completed", repaired.error);
    const lines = await w.messages(repair);
    assert.ok(lines.includes("Started (repair) by process p1."), JSON.stringify(lines));
    assert.ok(
      lines.includes("Custom fields reconciled: 2 created, 0 updated, 0 unchanged."),
      JSON.stringify(lines),
    );
    assert.equal((await w.submit()).ok, true);
  } finally {
    w.close();
  }
});

Deno.test("job service: a running job cannot be deleted; it keeps its slot until it ends", async () => {
  const { gate, reached, answer } = heldAnswer();
  const w = await serviceWorld({ answer });
  try {
    const id = await w.admit();
    const run = w.service.handle(id);
    await until(reached.promise, run);
    assert.equal(statusOf(await w.job(id)), "running");
    assert.equal(await w.service.cancel(id), "running");
    assert.equal(statusOf(await w.job(id)), "running");
    assert.deepEqual(await w.submit(), { ok: false, reason: "busy", holder: id });
    assert.equal((await w.store.lease())?.job_id, id);
    gate.resolve();
    await run;
    assert.equal(statusOf(await w.job(id)), "completed");
  } finally {
    gate.resolve();
    w.close();
  }
});

Deno.test("job service: a due job that finds the lease taken waits, says so once, and runs once the lease is free", async () => {
  const w = await serviceWorld();
  try {
    const id = await w.admit({ schedule_at: T0 + MINUTE });
    w.clock.t = T0 + MINUTE;
    // Another process runs job 999 with a lease good for 10 more seconds.
    assert.deepEqual(await w.store.takeLease(999, "other", 10_000), { ok: true });
    await w.service.handle(id);
    assert.equal(statusOf(await w.job(id)), "pending");
    // It looks again when that lease would expire (at most every 15 s).
    assert.deepEqual(w.store.queuedFor(id), [MINUTE, 10_000]);
    w.clock.t += 1_000;
    await w.service.handle(id);
    assert.deepEqual(
      (await w.messages(id)).filter((m) => m.startsWith("Waiting")),
      ["Waiting for job 999 to finish (runs never overlap)."],
      "said once",
    );
    assert.deepEqual(w.store.queuedFor(id).slice(2), [9_000]);
    assert.deepEqual(w.streams, []);

    // A lease far ahead: it looks again after 15 s, not only when that lease ends.
    await w.store.takeLease(999, "other", 3_600_000);
    await w.service.handle(id);
    assert.deepEqual(w.store.queuedFor(id).slice(3), [15_000]);

    // The holder finishes (its lease is released): the waiting job runs at its next look.
    await w.store.releaseLease(999, "other");
    await w.service.handle(id);
    assert.equal(statusOf(await w.job(id)), "completed");
  } finally {
    w.close();
  }
});

Deno.test("job service: when a run ends, the jobs waiting for the lease are woken at once, oldest first", async () => {
  const { gate, reached, answer } = heldAnswer();
  const w = await serviceWorld({ answer });
  try {
    const a = await w.admit({ schedule_at: T0 + MINUTE });
    const b = await w.admit({ schedule_at: T0 + MINUTE });
    const c = await w.admit({ schedule_at: T0 + MINUTE });
    w.clock.t = T0 + MINUTE;
    const run = w.service.handle(a);
    await until(reached.promise, run);
    await w.service.handle(c);
    await w.service.handle(b);
    assert.deepEqual([statusOf(await w.job(b)), statusOf(await w.job(c))], ["pending", "pending"]);
    w.store.queued.length = 0;
    gate.resolve();
    await run;
    assert.deepEqual(w.store.queued, [{ job_id: b, delay_ms: 0 }, { job_id: c, delay_ms: 0 }]);
  } finally {
    gate.resolve();
    w.close();
  }
});

Deno.test("job service: a job whose process died is errored once its lease expired, with the time, and waiting jobs are woken", async () => {
  const w = await serviceWorld();
  try {
    const dead = await w.admit();
    // The process that ran it stopped mid-run: the job says running, its lease runs out at T0+5s.
    await w.engine.patchStored("core.job", dead, { status: "running", started: iso(T0) });
    await w.store.takeLease(dead, "gone", 5_000);
    const waiting = await w.admit({ schedule_at: T0 + 1_000 });
    w.clock.t = T0 + 1_000;
    await w.service.handle(waiting);
    assert.equal(statusOf(await w.job(waiting)), "pending");

    // While the lease holds, neither the periodic check nor a redelivery touches it.
    assert.equal(await w.service.reap(), 0);
    await w.service.handle(dead);
    assert.equal(statusOf(await w.job(dead)), "running");

    w.clock.t = T0 + 5_000; // the lease expires at this very millisecond
    w.store.queued.length = 0;
    assert.equal(await w.service.reap(), 1);
    const job = await w.job(dead);
    assert.equal(statusOf(job), "errored");
    const reason = `The process running this job stopped before it finished (its run lease ` +
      `expired at ${iso(T0 + 5_000)}); the stages it did are recorded, start a new sync to finish.`;
    assert.equal(job.error, reason);
    assert.equal(job.completed, iso(T0 + 5_000));
    assert.equal((await w.messages(dead)).at(-1), `Finished errored: ${reason}`);
    assert.equal(job.log_entries.at(-1).level, "error");
    assert.equal(await w.store.slotHolder("sync"), null, "its slot is free");
    assert.deepEqual(w.store.queued, [{ job_id: waiting, delay_ms: 0 }], "the waiting job woken");
    assert.equal(
      w.logger.lines.filter((l) => l.message === "sync job recovered after its owner stopped")
        .length,
      1,
    );
    // Counted with the time it ran by its stored start (this process never ran it).
    assert.deepEqual(w.finished, [["sync", "errored", 5]]);
    // Settled once: a second look finds nothing left running.
    assert.equal(await w.service.reap(), 0);
  } finally {
    w.close();
  }
});

/** A job left running by a process that stopped; its lease ran out at T0 + 5 s, the clock's now. */
async function deadJob(w: Awaited<ReturnType<typeof serviceWorld>>): Promise<number> {
  const dead = await w.admit();
  await w.engine.patchStored("core.job", dead, { status: "running", started: iso(T0) });
  await w.store.takeLease(dead, "gone", 5_000);
  w.clock.t = T0 + 5_000;
  return dead;
}

/** What two processes did to a dead job between them: settlements, counts, recoveries. */
async function settledOnce(a: any, b: any, dead: number) {
  const recovered = [...a.logger.lines, ...b.logger.lines]
    .filter((l: any) => l.message === "sync job recovered after its owner stopped");
  const finishedLines = (await a.messages(dead)).filter((m: string) => m.startsWith("Finished"));
  assert.equal(statusOf(await a.job(dead)), "errored");
  assert.equal(finishedLines.length, 1, JSON.stringify(finishedLines));
  assert.deepEqual([...a.finished, ...b.finished], [["sync", "errored", 5]]);
  assert.equal(recovered.length, 1, "one process says it recovered the job");
}

Deno.test("job service: two processes reaping one dead job at once: one settles it, the other leaves it", async () => {
  const a = await serviceWorld();
  const b = await serviceWorld({ sharing: a, owner: "p2" });
  // Process a has claimed the settlement and is held before it records anything.
  const claimed = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const clearParts = a.store.clearParts.bind(a.store);
  a.store.clearParts = async (jobId) => {
    claimed.resolve();
    await release.promise;
    await clearParts(jobId);
  };
  try {
    const dead = await deadJob(a);
    const reaping = a.service.reap();
    await claimed.promise;
    await b.service.reap();
    assert.equal(statusOf(await a.job(dead)), "running", "b left it to a");
    assert.deepEqual(b.finished, []);
    release.resolve();
    await reaping;
    await settledOnce(a, b, dead);
  } finally {
    release.resolve();
    b.close();
    a.close();
  }
});

Deno.test("job service: a process that finds a dead job already settled by another leaves it", async () => {
  const a = await serviceWorld();
  const b = await serviceWorld({ sharing: a, owner: "p2" });
  // Process b has seen the job running and is held before it settles it.
  const seen = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const spec = b.store.spec.bind(b.store);
  b.store.spec = async (jobId) => {
    seen.resolve();
    await release.promise;
    return await spec(jobId);
  };
  try {
    const dead = await deadJob(a);
    const reaping = b.service.reap();
    await seen.promise;
    assert.equal(await a.service.reap(), 1);
    release.resolve();
    await reaping;
    await settledOnce(a, b, dead);
  } finally {
    release.resolve();
    b.close();
    a.close();
  }
});

Deno.test("job service: a running job with no lease at all is errored when its message comes again", async () => {
  const w = await serviceWorld();
  try {
    const dead = await w.admit();
    await w.engine.patchStored("core.job", dead, { status: "running", started: iso(T0) });
    await w.service.handle(dead);
    const job = await w.job(dead);
    assert.equal(statusOf(job), "errored");
    assert.match(job.error, /stopped before it finished \(it holds no run lease\)/);
    assert.deepEqual(w.streams, [], "not run again");
  } finally {
    w.close();
  }
});

Deno.test("job service: a redelivered message settles a running job whose lease ends at that very millisecond", async () => {
  const w = await serviceWorld();
  try {
    const dead = await w.admit();
    await w.engine.patchStored("core.job", dead, { status: "running", started: iso(T0) });
    await w.store.takeLease(dead, "gone", 5_000);
    w.clock.t = T0 + 4_999;
    await w.service.handle(dead);
    assert.equal(statusOf(await w.job(dead)), "running", "alive one millisecond before");
    w.clock.t = T0 + 5_000;
    await w.service.handle(dead);
    const job = await w.job(dead);
    assert.equal(statusOf(job), "errored");
    assert.match(job.error, new RegExp(`its run lease expired at ${iso(T0 + 5_000)}`));
    assert.deepEqual(w.streams, [], "not run again");
  } finally {
    w.close();
  }
});

Deno.test("job service: a job whose request is missing ends errored, saying so", async () => {
  const w = await serviceWorld();
  try {
    const id = await w.admit();
    await w.store.deleteSpec(id);
    await w.service.handle(id);
    const job = await w.job(id);
    assert.equal(statusOf(job), "errored");
    assert.equal(job.error, "The job's request is missing.");
    assert.deepEqual(w.streams, []);
  } finally {
    w.close();
  }
});

Deno.test("job service: retention keeps the newest finished jobs of each kind; repairs are counted apart", async () => {
  const w = await serviceWorld({ retention: 2 });
  try {
    const syncs: number[] = [];
    let repair = 0;
    for (let i = 0; i < 4; i++) {
      const id = await w.admit();
      await w.service.handle(id);
      syncs.push(id);
      if (i === 0) {
        repair = await w.admit({}, "repair");
        await w.service.handle(repair);
      }
    }
    const kept = (await w.engine.find("core.job", {})).map((j) => j.id).sort((a, b) => a - b);
    const [s1, _s2, s3, s4] = syncs;
    // The two newest syncs, and the one repair (older than both, but the only one of its kind).
    assert.deepEqual(kept, [repair, s3, s4]);
    assert.equal(await w.store.spec(s1), null, "a pruned job's request goes too");
    assert.deepEqual(await w.store.finished("sync"), [s3, s4]);
  } finally {
    w.close();
  }
});

Deno.test("job service: retention: up to the limit every finished job is kept; a deleted one no longer counts", async () => {
  const w = await serviceWorld({ retention: 3 });
  const ids = () =>
    w.engine.find("core.job", {}).then((all) => all.map((j) => j.id).sort((a, b) => a - b));
  try {
    const runs: number[] = [];
    for (let i = 0; i < 3; i++) {
      runs.push(await w.admit());
      await w.service.handle(runs[i]);
      assert.deepEqual(await ids(), runs, `after ${i + 1} of 3: all kept`);
    }
    // A finished job deleted by hand leaves the count: the next run prunes nothing.
    assert.equal(await w.service.cancel(runs[1]), "deleted");
    const fourth = await w.admit();
    await w.service.handle(fourth);
    assert.deepEqual(await ids(), [runs[0], runs[2], fourth]);
    assert.deepEqual(await w.store.finished("sync"), [runs[0], runs[2], fourth]);
    // One more: now the oldest goes.
    const fifth = await w.admit();
    await w.service.handle(fifth);
    assert.deepEqual(await ids(), [runs[2], fourth, fifth]);
  } finally {
    w.close();
  }
});

Deno.test("job service: a token expired at the moment its job is due is refused; the series ends", async () => {
  const w = await serviceWorld();
  try {
    const id = await w.admit({ interval_minutes: 5, schedule_at: T0 + MINUTE });
    await w.engine.patchStored("users.token", w.tokenId, { expires: iso(T0 + MINUTE) });
    w.clock.t = T0 + MINUTE;
    await w.service.handle(id);
    const job = await w.job(id);
    assert.equal(statusOf(job), "failed");
    assert.equal(
      job.error,
      `The token ${w.tokenId}, which asked for this job, has expired: not run, and not scheduled again.`,
    );
    assert.deepEqual(w.streams, []);
    assert.deepEqual(await w.engine.find("core.job", { status: ["scheduled"] }), []);
  } finally {
    w.close();
  }
});

Deno.test("job service: two endpoints: each a part the job's process runs in turn; an endpoint's failure fails the job and every last_sync", async () => {
  const w = await serviceWorld({
    endpoints: [endpoint(1, "pve-a"), endpoint(2, "pve-b")],
    answer: (path, copy) =>
      streamOf(stageFrames(typesOf(path), copy === 102 ? { devices: "HTTP 500 from pve-b" } : {})),
  });
  try {
    const id = await w.admit();
    w.clock.t += 1_000;
    await w.service.handle(id);
    const job = await w.job(id);
    assert.equal(statusOf(job), "failed");
    assert.match(job.error, /^devices for "pve-b" failed: Hypervisor request failed — HTTP 500/);
    const lines = await w.messages(id);
    assert.ok(
      lines.includes(
        "2 endpoints: each one is a part that any process sharing this store may take.",
      ),
    );
    assert.ok(lines.includes("Endpoint 1: taken by process p1."), JSON.stringify(lines));
    assert.ok(lines.includes("Endpoint 2: taken by process p1."), JSON.stringify(lines));
    assert.deepEqual(w.streams, [
      "101 /dcim/devices/create/stream",
      "102 /dcim/devices/create/stream",
    ]);
    assert.deepEqual(job.data.map((r: any) => r.endpoint_id), [1, 2]);
    // The job failed: no endpoint shows a good last sync, the one that went well included.
    assert.deepEqual(
      [w.lastSync.get(1), w.lastSync.get(2)],
      [
        [{ at: iso(T0 + 1_000), ok: false, job_id: id, status: "failed" }],
        [{ at: iso(T0 + 1_000), ok: false, job_id: id, status: "failed" }],
      ],
    );
    assert.deepEqual(await w.store.parts(), [], "the parts are cleared at the end");
    assert.equal(w.spans[0].attributes["bridgebox.job.status"], "failed");
    assert.equal(w.spans[0].failed, job.error);
  } finally {
    w.close();
  }
});

Deno.test("job service: an errored endpoint stops the parts nobody started; they get no last_sync", async () => {
  const w = await serviceWorld({
    endpoints: [endpoint(1, "pve-a"), endpoint(2, "pve-b"), endpoint(3, "pve-c")],
    answer: (path, copy) =>
      copy === 101
        ? { ok: false, reason: "refused", status: 400, error: "HTTP 400: bad scope" }
        : streamOf(stageFrames(typesOf(path))),
  });
  try {
    const id = await w.admit();
    await w.service.handle(id);
    const job = await w.job(id);
    assert.equal(statusOf(job), "errored");
    assert.match(job.error, /^devices for "pve-a": GET http:\/\/backend\.test.* → HTTP 400/);
    assert.deepEqual(w.streams, ["101 /dcim/devices/create/stream"], "the others never started");
    assert.deepEqual([...w.lastSync.keys()], [1]);
  } finally {
    w.close();
  }
});

Deno.test("job service: another process takes a part of a running job; the job records both", async () => {
  const { gate, reached, answer } = heldAnswer(101);
  const a = await serviceWorld({
    endpoints: [endpoint(1, "pve-a"), endpoint(2, "pve-b")],
    answer,
  });
  const b = await serviceWorld({ sharing: a, owner: "p2" });
  try {
    const id = await a.admit();
    const run = a.service.handle(id);
    await until(reached.promise, run); // process a runs endpoint 1 and waits there
    await b.service.pollParts();
    assert.deepEqual(
      (await a.store.parts(id)).map((p) => `${p.endpoint_id}:${p.owner}`),
      ["1:p1", "2:p2"],
      "each process took one endpoint",
    );
    await b.service.idle();
    gate.resolve();
    await run;
    const job = await a.job(id);
    assert.equal(statusOf(job), "completed", job.error);
    const lines = await a.messages(id);
    assert.ok(lines.includes("Endpoint 1: taken by process p1."), JSON.stringify(lines));
    assert.ok(lines.includes("Endpoint 2: taken by process p2."), JSON.stringify(lines));
    assert.deepEqual(job.data.map((r: any) => r.endpoint_id).sort(), [1, 2]);
    assert.deepEqual(a.streams.sort(), [
      "101 /dcim/devices/create/stream",
      "102 /dcim/devices/create/stream",
    ]);
    assert.deepEqual(
      [a.lastSync.get(1)?.[0].ok, a.lastSync.get(2)?.[0].ok],
      [true, true],
    );
    // Nothing left to take once the job is done.
    await b.service.pollParts();
    await b.service.idle();
    assert.equal(a.streams.length, 2);
  } finally {
    gate.resolve();
    b.close();
    a.close();
  }
});

Deno.test("job service: while another process runs a part, the job's process looks again every partPollMs, never in a tight loop", async () => {
  const mine = heldAnswer(101);
  const theirs = heldAnswer(102);
  const paused = Promise.withResolvers<void>();
  const spun = Promise.withResolvers<void>();
  const a = await serviceWorld({
    endpoints: [endpoint(1, "pve-a"), endpoint(2, "pve-b")],
    answer: mine.answer,
    onPause: () => paused.resolve(),
  });
  const b = await serviceWorld({ sharing: a, owner: "p2", answer: theirs.answer });
  // Looks at the parts without a pause in between: a spinning loop (the bug) trips this.
  const parts = a.store.parts.bind(a.store);
  let looks = 0;
  a.store.parts = (...args) => {
    if (++looks > 200) spun.resolve();
    return parts(...args);
  };
  try {
    const id = await a.admit();
    const run = a.service.handle(id);
    await until(mine.reached.promise, run); // process a runs endpoint 1
    await b.service.pollParts(); // process b takes endpoint 2 and holds it
    a.pauses.length = 0;
    looks = 0;
    mine.gate.resolve(); // a is done with its part; b's still runs
    await Promise.race([paused.promise, spun.promise]);
    assert.ok(looks <= 200, `${looks} looks at the parts without a pause`);
    assert.equal(a.pauses[0], 500, "the default partPollMs");
    await until(theirs.reached.promise, run);
    theirs.gate.resolve();
    await b.service.idle();
    await run;
    const job = await a.job(id);
    assert.equal(statusOf(job), "completed", job.error);
    assert.ok(a.pauses.every((ms) => ms === 500), JSON.stringify(a.pauses));
  } finally {
    mine.gate.resolve();
    theirs.gate.resolve();
    b.close();
    a.close();
  }
});

Deno.test("job service: a part renews its claim as it runs and goes on; the job completes", async () => {
  // Claims are renewed every 20 ms (a third of 60 ms); endpoint 1's stream waits for two renewals.
  const renewedTwice = Promise.withResolvers<void>();
  const held = heldUntil(renewedTwice.promise);
  const w = await serviceWorld({
    leaseMs: 60,
    endpoints: [endpoint(1, "pve-a"), endpoint(2, "pve-b")],
    answer: (path, copy, signal) =>
      copy === 101 ? held(path, copy, signal) : streamOf(stageFrames(typesOf(path))),
  });
  const renew = w.store.renewPart.bind(w.store);
  const renewed: number[] = [];
  w.store.renewPart = async (...args) => {
    const ok = await renew(...args);
    if (ok) renewed.push(args[1]);
    // A renewal refused (the claim is not this process's) is the failure checked below: the
    // stream is not held for it.
    if (renewed.length === 2 || !ok) renewedTwice.resolve();
    return ok;
  };
  try {
    const id = await w.admit();
    await w.service.handle(id);
    const job = await w.job(id);
    assert.equal(statusOf(job), "completed", job.error);
    assert.deepEqual(renewed.slice(0, 2), [1, 1], "endpoint 1's claim, renewed");
    assert.deepEqual(w.streams, [
      "101 /dcim/devices/create/stream",
      "102 /dcim/devices/create/stream",
    ]);
    assert.deepEqual([w.lastSync.get(1)?.[0].ok, w.lastSync.get(2)?.[0].ok], [true, true]);
  } finally {
    renewedTwice.resolve();
    w.close();
  }
});

Deno.test("job service: no secret reaches the job's log, error or data, in any spelling", async () => {
  const secret = "s3cr3t-backend-key/+=";
  const w = await serviceWorld({
    secrets: [secret],
    answer: () => ({
      ok: false,
      reason: "refused",
      status: 403,
      error: `HTTP 403: key ${secret} (${encodeURIComponent(secret)}) refused`,
    }),
  });
  try {
    const id = await w.admit();
    await w.service.handle(id);
    const job = await w.job(id);
    assert.equal(statusOf(job), "errored");
    assert.match(job.error, /key \[redacted\] \(\[redacted\]\) refused/);
    const text = JSON.stringify(job);
    assert.ok(!text.includes(secret) && !text.includes(encodeURIComponent(secret)), text);
  } finally {
    w.close();
  }
});

Deno.test("job service: a crash inside a run ends the job errored and frees the lease and the slot", async () => {
  const w = await serviceWorld({
    answer: () => {
      throw new Error("backend link exploded");
    },
  });
  try {
    const id = await w.admit();
    await w.service.handle(id);
    const job = await w.job(id);
    assert.equal(statusOf(job), "errored");
    assert.equal(job.error, "Internal error: backend link exploded");
    assert.equal(await w.store.lease(), null);
    assert.equal((await w.submit()).ok, true, "the slot is free again");
  } finally {
    w.close();
  }
});

Deno.test("job service: a process never reaps its own run; a second message while it runs does nothing; idle() waits for the run", async () => {
  const { gate, reached, answer } = heldAnswer();
  const w = await serviceWorld({ leaseMs: 30_000, answer });
  try {
    const id = await w.admit();
    const run = w.service.handle(id);
    await until(reached.promise, run);
    // Its lease ran out on the clock (no renewal has come yet): still this process's run.
    w.clock.t += 60_000;
    assert.equal(await w.service.reap(), 0);
    await w.service.handle(id);
    assert.equal(statusOf(await w.job(id)), "running");
    assert.equal(w.streams.length, 1, "not started twice");
    gate.resolve();
    await w.service.idle();
    assert.equal(statusOf(await w.job(id)), "completed", "idle() returned after the run");
    await run;
  } finally {
    gate.resolve();
    w.close();
  }
});

/** Holds a run's stage stream until `until` resolves, then honours an abort of the run. */
function heldUntil(until: Promise<void>) {
  return async (path: string, _copy: number, signal: AbortSignal) => {
    await Promise.race([
      until,
      new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve())),
    ]);
    signal.throwIfAborted();
    return streamOf(stageFrames(typesOf(path)));
  };
}

Deno.test("job service: a run renews its lease as it goes", async () => {
  // The lease is renewed every 20 ms (a third of 60 ms); the stream waits for two renewals.
  const renewedTwice = Promise.withResolvers<void>();
  const w = await serviceWorld({ leaseMs: 60, answer: heldUntil(renewedTwice.promise) });
  const renew = w.store.renewLease.bind(w.store);
  let renewals = 0;
  w.store.renewLease = async (...args) => {
    const ok = await renew(...args);
    if (ok && ++renewals === 2) renewedTwice.resolve();
    return ok;
  };
  try {
    const id = await w.admit();
    await w.service.handle(id);
    const job = await w.job(id);
    assert.equal(statusOf(job), "completed", job.error);
    assert.equal(await w.store.lease(), null, "released at the end");
  } finally {
    renewedTwice.resolve();
    w.close();
  }
});

Deno.test("job service: a run whose lease another process took stops, and leaves that lease alone", async () => {
  // The stream waits until the run is stopped.
  const w = await serviceWorld({ leaseMs: 60, answer: heldUntil(new Promise(() => {})) });
  const renew = w.store.renewLease.bind(w.store);
  let first = true;
  w.store.renewLease = async (...args) => {
    if (first) {
      // The lease lapsed (this process stalled) and another process took it.
      first = false;
      w.clock.t += 1_000;
      assert.deepEqual(await w.store.takeLease(4242, "other", 600_000), { ok: true });
    }
    return await renew(...args);
  };
  try {
    const id = await w.admit();
    await w.service.handle(id);
    const job = await w.job(id);
    assert.equal(statusOf(job), "errored");
    assert.equal(job.error, "Stopped: this process lost the run lease (it expired and was taken)");
    assert.deepEqual(await w.store.lease(), {
      job_id: 4242,
      owner: "other",
      expires_at: T0 + 1_000 + 600_000,
    });
  } finally {
    w.close();
  }
});

Deno.test("job service: another process takes one part at a time, and only of a job whose run is alive and known", async () => {
  const { gate, reached, answer } = heldAnswer(101);
  const a = await serviceWorld({
    endpoints: [endpoint(1, "pve-a"), endpoint(2, "pve-b"), endpoint(3, "pve-c")],
    answer,
  });
  const b = await serviceWorld({ sharing: a, owner: "p2" });
  try {
    const id = await a.admit();
    const run = a.service.handle(id);
    await until(reached.promise, run);
    // Two looks at once take one part between them.
    await Promise.all([b.service.pollParts(), b.service.pollParts()]);
    await b.service.idle();
    const states = async () =>
      (await a.store.parts(id)).map((p) => `${p.endpoint_id}:${p.state}:${p.owner}`);
    assert.deepEqual(await states(), ["1:claimed:p1", "2:done:p2", "3:open:null"]);
    // Its next look takes the next part.
    await b.service.pollParts();
    await b.service.idle();
    assert.deepEqual(await states(), ["1:claimed:p1", "2:done:p2", "3:done:p2"]);
    gate.resolve();
    await run;
    assert.equal(statusOf(await a.job(id)), "completed");

    // Parts of a job whose run lease is gone (its process stopped) are not taken ...
    await a.store.saveSpec(900, (await a.store.spec(id))!);
    await a.store.openParts(900, [1]);
    await b.service.pollParts();
    // ... nor of a job whose request is missing, even with a live lease.
    await a.store.openParts(901, [2]);
    await a.store.takeLease(901, "p9", 60_000);
    await b.service.pollParts();
    await b.service.idle();
    assert.deepEqual(
      (await a.store.parts()).map((p) => `${p.job_id}/${p.endpoint_id}:${p.state}`),
      ["900/1:open", "901/2:open"],
    );
    assert.equal(a.streams.length, 3, "nothing more ran");
    // ... nor of a job whose lease ends at this very millisecond (its process stopped).
    await a.store.releaseLease(901, "p9");
    await a.store.saveSpec(902, (await a.store.spec(id))!);
    await a.store.openParts(902, [3]);
    await a.store.takeLease(902, "p9", 1_000);
    a.clock.t += 1_000;
    await b.service.pollParts();
    await b.service.idle();
    assert.deepEqual(
      (await a.store.parts(902)).map((p) => `${p.endpoint_id}:${p.state}`),
      ["3:open"],
    );
    assert.equal(a.streams.length, 3, "nothing more ran");
  } finally {
    gate.resolve();
    b.close();
    a.close();
  }
});

Deno.test("job service: a look that loses a part to another process takes the next; a lapsed claim is taken over", async () => {
  const { gate, reached, answer } = heldAnswer(101);
  const a = await serviceWorld({
    endpoints: [endpoint(1, "pve-a"), endpoint(2, "pve-b"), endpoint(3, "pve-c")],
    answer,
  });
  const b = await serviceWorld({ sharing: a, owner: "p2" });
  // A third process, p3, claims endpoint 2 between b's look at the parts and b's claim.
  const claim = b.store.claimPart.bind(b.store);
  let raced = false;
  b.store.claimPart = async (jobId, endpointId, owner, ttlMs) => {
    if (!raced) {
      raced = true;
      assert.ok(await a.store.claimPart(jobId, endpointId, "p3", 60_000));
    }
    return await claim(jobId, endpointId, owner, ttlMs);
  };
  try {
    const id = await a.admit();
    const run = a.service.handle(id);
    await until(reached.promise, run);
    await b.service.pollParts();
    await b.service.idle();
    assert.deepEqual(
      (await a.store.parts(id)).map((p) => `${p.endpoint_id}:${p.state}:${p.owner}`),
      ["1:claimed:p1", "2:claimed:p3", "3:done:p2"],
    );
    assert.deepEqual(b.logger.at("error"), [], "losing a race is no error");
    // p3 stopped: once its claim lapsed, the job's process takes endpoint 2 over.
    a.clock.t += 60_000;
    gate.resolve();
    await run;
    const job = await a.job(id);
    assert.equal(statusOf(job), "completed", job.error);
    const lines = await a.messages(id);
    assert.ok(
      lines.includes(
        "Endpoint 2: taken by process p1 (taken over: the claim of the process running it lapsed).",
      ),
      JSON.stringify(lines),
    );
    assert.deepEqual(a.streams.sort(), [
      "101 /dcim/devices/create/stream",
      "102 /dcim/devices/create/stream",
      "103 /dcim/devices/create/stream",
    ]);
  } finally {
    gate.resolve();
    b.close();
    a.close();
  }
});

Deno.test("job service: one token may hold MAX_WAITING_JOBS_PER_TOKEN scheduled or waiting jobs; the next is refused and leaves nothing", async () => {
  const w = await serviceWorld();
  try {
    for (let i = 0; i < MAX_WAITING_JOBS_PER_TOKEN; i++) {
      await w.admit({ schedule_at: T0 + (i + 1) * MINUTE });
    }
    assert.deepEqual(await w.submit({ schedule_at: T0 + 99 * MINUTE }), {
      ok: false,
      reason: "cap",
      limit: MAX_WAITING_JOBS_PER_TOKEN,
    });
    assert.equal((await w.engine.find("core.job", {})).length, MAX_WAITING_JOBS_PER_TOKEN);
    assert.equal(await w.service.waitingJobsOf(w.tokenId), MAX_WAITING_JOBS_PER_TOKEN);
    // Another token's jobs are its own.
    const other = await w.engine.insert("users.token", {
      version: 1,
      is_superuser: true,
      write_enabled: true,
    });
    assert.ok(other.ok);
    const theirs = await w.service.submit({
      sync_types: ["devices"],
      endpoint_ids: null,
      job_name: null,
      schedule_at: T0 + MINUTE,
      interval_minutes: null,
    }, { token_id: other.value.id, description: "" });
    assert.equal(theirs.ok, true);
    assert.equal(await w.service.waitingJobsOf(other.value.id), 1);
    assert.equal(
      (theirs as { job: any }).job.user.display,
      `token ${other.value.id}`,
      "no description: the id alone",
    );
  } finally {
    w.close();
  }
});

for (
  const [what, change, reason] of [
    ["was deleted", null, "was deleted"],
    ["is disabled", { enabled: false }, "is disabled"],
    [
      "became read-only",
      { write_enabled: false },
      "may no longer add jobs (it needs core.add_job and write access)",
    ],
    [
      "lost core.add_job",
      { is_superuser: false, permissions: ["core.view_job"] },
      "may no longer add jobs (it needs core.add_job and write access)",
    ],
  ] as const
) {
  Deno.test(`job service: a job whose token ${what} before it ran fails, saying so, and its series ends`, async () => {
    const w = await serviceWorld();
    try {
      const id = await w.admit({ interval_minutes: 30 });
      if (change === null) await w.engine.remove("users.token", w.tokenId);
      else await w.engine.patchStored("users.token", w.tokenId, change);
      await w.service.handle(id);
      const job = await w.job(id);
      assert.equal(statusOf(job), "failed");
      assert.equal(
        job.error,
        `The token ${w.tokenId}, which asked for this job, ${reason}: not run, and not scheduled again.`,
      );
      assert.deepEqual(w.streams, []);
      assert.deepEqual(await w.engine.find("core.job", { status: ["scheduled"] }), []);
    } finally {
      w.close();
    }
  });
}

Deno.test("job service: a token with core.add_job (not a superuser) runs its jobs; a job no token asked for runs too", async () => {
  const w = await serviceWorld();
  try {
    await w.engine.patchStored("users.token", w.tokenId, {
      is_superuser: false,
      permissions: ["core.add_job"],
      expires: iso(T0 + 1),
    });
    const id = await w.admit();
    await w.service.handle(id);
    assert.equal(statusOf(await w.job(id)), "completed");
    // A job from before tokens were recorded: no token on its request nor on its record.
    const old = await w.admit();
    const spec = (await w.store.spec(old))!;
    delete spec.token_id;
    await w.store.saveSpec(old, spec);
    await w.engine.patchStored("core.job", old, { user: null });
    await w.engine.remove("users.token", w.tokenId);
    await w.service.handle(old);
    assert.equal(statusOf(await w.job(old)), "completed");
  } finally {
    w.close();
  }
});

Deno.test("job service: a recurring job whose token is revoked while it runs completes, and its series ends with a warning", async () => {
  const clock = { t: T0 };
  const w: Awaited<ReturnType<typeof serviceWorld>> = await serviceWorld({
    clock,
    answer: async (path) => {
      await w.engine.patchStored("users.token", w.tokenId, { enabled: false });
      return streamOf(stageFrames(typesOf(path)));
    },
  });
  try {
    const id = await w.admit({ interval_minutes: 15 });
    await w.service.handle(id);
    const job = await w.job(id);
    assert.equal(statusOf(job), "completed", job.error);
    assert.deepEqual(job.log_entries.at(-1), {
      timestamp: iso(T0),
      level: "warning",
      message: `The token ${w.tokenId}, which asked for this job, is disabled: the series is not ` +
        "scheduled again.",
    });
    assert.deepEqual(await w.engine.find("core.job", { status: ["scheduled"] }), []);
  } finally {
    w.close();
  }
});

Deno.test("job service: a request that fails half-way leaves nothing behind: no record, no request, no slot", async () => {
  const w = await serviceWorld();
  const enqueue = w.store.enqueue.bind(w.store);
  try {
    w.store.enqueue = () => Promise.reject(new Error("queue unavailable"));
    await assert.rejects(w.submit(), /queue unavailable/);
    assert.deepEqual(await w.engine.find("core.job", {}), []);
    const specs = await Array.fromAsync(w.kv.list({ prefix: ["plugin_jobs", "spec"] }));
    assert.deepEqual(specs, []);
    assert.equal(await w.store.slotHolder("sync"), null);
    w.store.enqueue = enqueue;
    assert.equal((await w.submit()).ok, true);
  } finally {
    w.close();
  }
});

Deno.test("job service: creating a job is retried while the store is busy, never on another error", async () => {
  const w = await serviceWorld();
  const insert = w.engine.insert.bind(w.engine);
  let calls = 0;
  try {
    w.engine.insert = (model, input) => {
      calls++;
      return calls <= 2 ? Promise.reject(new Error("database is locked")) : insert(model, input);
    };
    assert.equal((await w.submit()).ok, true);
    assert.equal(calls, 3);

    calls = 0;
    w.engine.insert = () => {
      calls++;
      return Promise.reject(new Error("database is locked"));
    };
    await assert.rejects(w.submit({ schedule_at: T0 + MINUTE }), /database is locked/);
    assert.equal(calls, 8, "eight tries, then the error");

    calls = 0;
    w.engine.insert = (model, input) => {
      calls++;
      return insert(model, input);
    };
    // A name the inventory refuses (over 200 characters) is no contention: tried once.
    await assert.rejects(w.submit({ job_name: "n".repeat(300) }), /could not create job/);
    assert.equal(calls, 1);
  } finally {
    w.close();
  }
});

Deno.test("job service: a slot left naming a job that is gone or finished blocks nothing", async () => {
  const w = await serviceWorld();
  try {
    await w.store.claimSlot("sync", 777, ["sync"], () => Promise.resolve(false));
    const first = await w.admit();
    await w.service.handle(first);
    // The slot is claimed again for a finished job, as a crash before its release would leave it.
    await w.store.claimSlot("sync", first, ["sync"], () => Promise.resolve(false));
    assert.equal((await w.submit()).ok, true);
  } finally {
    w.close();
  }
});

Deno.test("job service: a job's stage records keep every stage; past 24 kB the oldest lose their error text first", async () => {
  const names = Array.from({ length: 4 }, (_, i) => endpoint(i + 1, `pve-${i + 1}`));
  const w = await serviceWorld({
    endpoints: names,
    // Every optional stage fails with a long cause: skipped, with its error on the record.
    answer: (path) =>
      streamOf(stageFrames(typesOf(path), {
        "task-history": "x".repeat(2_000),
        "vm-backups": "y".repeat(2_000),
        "vm-snapshots": "z".repeat(2_000),
        sdn: "s".repeat(2_000),
      })),
  });
  try {
    const id = await w.admit({ sync_types: [...SYNC_TYPES] });
    await w.service.handle(id);
    const job = await w.job(id);
    assert.equal(statusOf(job), "completed", job.error);
    assert.equal(job.data.length, 13 * 4, "every stage of every endpoint");
    assert.ok(w.engine.recordSize(job.data) <= 24_000, `${w.engine.recordSize(job.data)} bytes`);
    // 16 stages were skipped, each with a 300-character cause: more than fits (a text beyond
    // Latin-1 counts twice). The newest keep their cause, the oldest lost theirs, trimmed from
    // the oldest on.
    const skipped = job.data.filter((r: any) => r.result_summary.skipped);
    assert.equal(skipped.length, 4 * 4);
    const withError = skipped.map((r: any) => typeof r.result_summary.error === "string");
    assert.equal(withError[0], false);
    assert.equal(withError.at(-1), true);
    const from = withError.indexOf(true);
    assert.ok(withError.slice(from).every(Boolean), JSON.stringify(withError));
    assert.equal(
      skipped.at(-1).result_summary.error,
      "Hypervisor request failed — " + "s".repeat(272) + "…",
    );
  } finally {
    w.close();
  }
});

Deno.test("job service: stage records past 24 kB with no error text left to trim are all kept", async () => {
  const many = Array.from({ length: 12 }, (_, i) => endpoint(i + 1, `pve-${i + 1}`));
  const w = await serviceWorld({ endpoints: many });
  try {
    const id = await w.admit({ sync_types: [...SYNC_TYPES] });
    await w.service.handle(id);
    const job = await w.job(id);
    assert.equal(statusOf(job), "completed", job.error);
    assert.equal(job.data.length, 13 * 12, "every stage of every endpoint");
    assert.ok(w.engine.recordSize(job.data) > 24_000, `${w.engine.recordSize(job.data)} bytes`);
    assert.deepEqual(w.logger.at("error"), []);
  } finally {
    w.close();
  }
});

Deno.test("job service: live progress is kept at most every 250 ms; a stage's start and end always", async () => {
  const clock = { t: T0 };
  async function* frames() {
    yield { event: "step", data: { step: "devices", status: "started" } };
    // At 100, 250 (exactly 250 ms after the start: kept), 350 and 650 ms.
    for (const [ms, done] of [[100, 1], [150, 2], [100, 3], [300, 4]]) {
      clock.t += ms;
      yield { event: "step", data: { step: "devices", status: "progress", done } };
    }
    yield {
      event: "step",
      data: { step: "devices", status: "completed", result: { created: 4 }, elapsed_ms: 1 },
    };
    yield { event: "complete", data: { ok: true } };
  }
  const w = await serviceWorld({
    clock,
    progressEveryMs: 250,
    answer: () => ({ ok: true, status: 200, events: frames() }),
  });
  const kept: any[] = [];
  const setProgress = w.store.setProgress.bind(w.store);
  w.store.setProgress = async (jobId, frame) => {
    kept.push(frame);
    await setProgress(jobId, frame);
  };
  try {
    const id = await w.admit();
    await w.service.handle(id);
    assert.deepEqual(kept.map((f) => `${f.status}${f.done ?? ""}`), [
      "started",
      "progress2",
      "progress4",
      "completed",
    ]);
    assert.equal(kept[0].endpoint_id, 1);
  } finally {
    w.close();
  }
});

Deno.test("job service: a message whose handling fails is logged with its job, and the worker goes on", async () => {
  const w = await serviceWorld();
  try {
    const id = await w.admit();
    const spec = w.store.spec.bind(w.store);
    w.store.spec = () => Promise.reject(new Error("storage went away"));
    await w.service.handle(id);
    assert.deepEqual(
      w.logger.at("error").map((l) => [l.message, l.job_id, l.error]),
      [["sync job handler failed", id, "storage went away"]],
    );
    w.store.spec = spec;
    await w.service.handle(id);
    assert.equal(statusOf(await w.job(id)), "completed");
  } finally {
    w.close();
  }
});
