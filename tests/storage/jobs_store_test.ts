/**
 * The job store's atomic rules on a real Deno KV (`:memory:`): concurrent slot claims that all
 * read the slot before any of them writes still admit exactly one; the lease is exclusive until
 * it expires, renewable only by its holder.
 */
import assert from "node:assert/strict";
import { KvJobStore } from "../../storage/kv/jobs.ts";

Deno.test("job store: claims that all read the slot first still admit exactly one", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvJobStore(kv);
    // The slot names a finished job (99); every claimant asks about it, and none gets its answer
    // until all five have read the slot: without the atomic check all five would write.
    assert.deepEqual(await store.claimSlot("sync", 99, ["sync"], () => Promise.resolve(false)), {
      ok: true,
    });
    const N = 5;
    let asked = 0;
    const allRead = Promise.withResolvers<void>();
    const isActive = async (id: number) => {
      if (id !== 99) return true; // the winner's job is live
      if (++asked === N) allRead.resolve();
      await allRead.promise;
      return false;
    };
    const results = await Promise.all(
      Array.from(
        { length: N },
        (_, i) => store.claimSlot("sync", i + 1, ["sync", "repair"], isActive),
      ),
    );
    const winners = results.filter((r) => r.ok);
    assert.equal(winners.length, 1, JSON.stringify(results));
    const winner = (await store.slotHolder("sync"))!;
    for (const r of results) if (!r.ok) assert.equal(r.holder, winner);
    // Releasing needs the holder's id.
    await store.releaseSlot("sync", winner === 1 ? 2 : 1);
    assert.equal(await store.slotHolder("sync"), winner);
    await store.releaseSlot("sync", winner);
    assert.equal(await store.slotHolder("sync"), null);
  } finally {
    kv.close();
  }
});

Deno.test("job store: the lease is exclusive until it expires; only its holder renews it", async () => {
  const kv = await Deno.openKv(":memory:");
  let now = 1_000;
  try {
    const store = new KvJobStore(kv, () => now);
    const taken = await Promise.all([
      store.takeLease(1, "a", 100),
      store.takeLease(2, "b", 100),
      store.takeLease(3, "c", 100),
    ]);
    assert.equal(taken.filter((t) => t.ok).length, 1);
    const holder = (await store.lease())!;
    assert.equal(await store.renewLease(holder.job_id === 1 ? 2 : 1, "x", 100), false);
    assert.equal(await store.renewLease(holder.job_id, holder.owner, 100), true);
    // Another process (owner) picking up the very job being run must not run it too; its
    // holder taking it again (a retry in the same process) keeps it.
    const other = await store.takeLease(holder.job_id, "another-process", 100);
    assert.equal(other.ok, false, "one job, two owners");
    assert.deepEqual(!other.ok && [other.lease.job_id, other.lease.owner], [
      holder.job_id,
      holder.owner,
    ]);
    assert.equal((await store.takeLease(holder.job_id, holder.owner, 100)).ok, true);
    assert.equal((await store.lease())!.owner, holder.owner);
    now += 99;
    assert.equal((await store.takeLease(9, "z", 100)).ok, false, "still held");
    now += 200; // expired: anyone may take it, and the old holder can no longer renew
    assert.equal((await store.takeLease(9, "z", 100)).ok, true);
    assert.equal(await store.renewLease(holder.job_id, holder.owner, 100), false);
    await store.releaseLease(holder.job_id, holder.owner); // not theirs any more: no effect
    assert.equal((await store.lease())!.job_id, 9);
    // One settler per job.
    const claims = await Promise.all([store.claimSettlement(5), store.claimSettlement(5)]);
    assert.deepEqual(claims.sort(), [false, true]);
  } finally {
    kv.close();
  }
});

Deno.test("job store: a part is claimed once; a lapsed claim is taken over and its old owner can no longer renew or finish it", async () => {
  const dir = await Deno.makeTempDir();
  // Two handles on one file, as two processes hold it.
  const kvA = await Deno.openKv(`${dir}/kv`);
  const kvB = await Deno.openKv(`${dir}/kv`);
  let now = 1_000;
  try {
    const a = new KvJobStore(kvA, () => now);
    const b = new KvJobStore(kvB, () => now);
    await a.openParts(7, [1, 2]);
    const claims = await Promise.all([
      a.claimPart(7, 1, "A", 100),
      b.claimPart(7, 1, "B", 100),
      a.claimPart(7, 1, "A2", 100),
    ]);
    const winners = claims.filter((c) => c !== null);
    assert.equal(winners.length, 1, JSON.stringify(claims));
    const owner = winners[0]!.owner!;
    assert.equal(await b.renewPart(7, 1, "nobody", 100), false);
    assert.equal(await b.renewPart(7, 1, owner, 100), true);
    now += 99;
    assert.equal(await b.claimPart(7, 1, "C", 100), null, "still held");
    now += 2; // lapsed: another process takes it over
    const taken = await b.claimPart(7, 1, "C", 100);
    assert.deepEqual([taken?.owner, taken?.claims], ["C", 2]);
    assert.equal(await a.renewPart(7, 1, owner, 100), false, "the old owner learns it");
    const outcome = { status: "completed" as const, error: "", by: owner };
    assert.equal(await a.finishPart(7, 1, owner, outcome), false, "nor can it record an outcome");
    assert.equal(await a.finishPart(7, 1, "C", { ...outcome, by: "C" }), true);
    // An open part is skipped only while open; a done one is never claimed again.
    assert.equal(await a.finishPart(7, 2, null, { status: "skipped", error: "x", by: null }), true);
    assert.equal(await a.claimPart(7, 2, "A", 100), null);
    assert.equal(await a.claimPart(7, 1, "A", 100), null);
    assert.deepEqual(
      (await b.parts()).map((p) => [p.endpoint_id, p.state, p.outcome?.by]),
      [[1, "done", "C"], [2, "done", null]],
    );
    await b.clearParts(7);
    assert.deepEqual(await a.parts(7), []);
    // More endpoints than one atomic may write (1000 mutations).
    const many = Array.from({ length: 1200 }, (_, i) => i + 1);
    await a.openParts(8, many);
    assert.deepEqual((await b.parts(8)).map((p) => p.endpoint_id), many);
    await a.clearParts(8);
    assert.deepEqual(await b.parts(), []);
  } finally {
    kvA.close();
    kvB.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("job store: a job is settled once; finished jobs are listed per kind, oldest first, and forgotten on request", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvJobStore(kv, () => 5_000);
    assert.equal(await store.claimSettlement(7), true);
    assert.equal(await store.claimSettlement(7), false, "a second settler is refused");
    assert.equal(await store.claimSettlement(8), true);

    for (const id of [12, 3, 40]) await store.markFinished("sync", id);
    await store.markFinished("repair", 5);
    assert.deepEqual(await store.finished("sync"), [3, 12, 40]);
    assert.deepEqual(await store.finished("repair"), [5]);
    await store.forgetFinished("sync", [3, 40]);
    assert.deepEqual(await store.finished("sync"), [12]);
    assert.deepEqual(await store.finished("repair"), [5]);

    const spec = {
      kind: "sync" as const,
      sync_types: ["devices"],
      endpoint_ids: [2],
      interval_minutes: 60,
      requested_by: "token 1",
      token_id: 1,
    };
    await store.saveSpec(12, spec);
    assert.deepEqual(await store.spec(12), spec);
    await store.deleteSpec(12);
    assert.equal(await store.spec(12), null);

    await store.setProgress(12, { step: "devices", status: "progress" });
    assert.deepEqual(await store.progress(12), { step: "devices", status: "progress" });
    await store.clearProgress(12);
    assert.equal(await store.progress(12), null);
  } finally {
    kv.close();
  }
});

Deno.test("job store: a job's parts, many at once: opened, listed, finished only as their state allows, cleared", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvJobStore(kv, () => 1_000);
    const ids = Array.from({ length: 1_200 }, (_, i) => i + 1);
    await store.openParts(9, ids);
    await store.openParts(10, [1]);
    const parts = await store.parts(9);
    assert.equal(parts.length, 1_200, "beyond one atomic's 1,000 mutations");
    assert.deepEqual(parts[0], {
      job_id: 9,
      endpoint_id: 1,
      state: "open",
      owner: null,
      expires_at: 0,
      claims: 0,
      outcome: null,
    });
    assert.equal((await store.parts()).length, 1_201, "every job's parts");
    const skipped = { status: "skipped" as const, error: "not run", by: null };
    // An open part is finished by nobody (skipped); a claimed one only by its owner.
    assert.equal(await store.finishPart(9, 1, null, skipped), true);
    assert.equal(await store.finishPart(9, 1, null, skipped), false, "already done");
    assert.ok(await store.claimPart(9, 2, "p1", 500));
    assert.equal(await store.finishPart(9, 2, null, skipped), false, "claimed: not skipped");
    const done = { status: "completed" as const, error: "", by: "p1" };
    assert.equal(await store.finishPart(9, 2, "p2", done), false, "not p2's");
    assert.equal(await store.finishPart(9, 2, "p1", done), true);
    assert.equal(await store.claimPart(9, 2, "p2", 500), null, "a done part is not claimed");
    assert.equal(await store.claimPart(9, 99_999, "p1", 500), null, "no such part");
    await store.clearParts(9);
    assert.deepEqual(await store.parts(9), []);
    assert.equal((await store.parts(10)).length, 1, "another job's parts stay");
  } finally {
    kv.close();
  }
});

Deno.test("job store: a queued job reaches the listener as its id; other messages are not its", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvJobStore(kv);
    const got = Promise.withResolvers<number>();
    const listening = store.listen((id) => {
      got.resolve(id);
      return Promise.resolve();
    });
    await kv.enqueue({ type: "something-else", job_id: 1 });
    await store.enqueue(42, -5); // a due time already past: at once
    assert.equal(await got.promise, 42);
    kv.close();
    await listening;
  } finally {
    try {
      kv.close();
    } catch { /* closed above */ }
  }
});
