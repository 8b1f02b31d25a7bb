/**
 * The run lease of sync jobs on real sockets: a run longer than its lease keeps it by renewing,
 * and a second process sharing the KV file leaves a running job alone while its lease is live.
 * Events are ordered with signals (a gate on the backend's full update, counters on the job
 * store's lease calls), never with sleeps.
 */
import assert from "node:assert/strict";
import { jobsWorld, P, statusOf } from "./_jobs_world.ts";
import type { JobsWorld } from "./_jobs_world.ts";
import { KvJobStore } from "../../storage/kv/jobs.ts";

/** A handler that holds the backend's full update until `open()`; `reached` when it arrives. */
function fullUpdateGate() {
  const gate = Promise.withResolvers<void>();
  const reached = Promise.withResolvers<void>();
  return {
    open: () => gate.resolve(),
    reached: reached.promise,
    handler: async (request: Request, next: () => Promise<Response>) => {
      if (new URL(request.url).pathname === "/full-update/stream") {
        reached.resolve();
        await gate.promise;
      }
      return next();
    },
  };
}

/** Resolves once `method` of the world's job store has answered `times` times with `want`. */
function afterCalls(
  w: JobsWorld,
  method: "renewLease" | "lease",
  times: number,
  want: (result: unknown) => boolean,
): Promise<void> {
  const store = w.deps.storage.jobs as unknown as Record<string, (...a: unknown[]) => unknown>;
  const real = store[method].bind(store);
  const done = Promise.withResolvers<void>();
  let seen = 0;
  store[method] = async (...args: unknown[]) => {
    const result = await real(...args);
    if (want(result) && ++seen >= times) done.resolve();
    return result;
  };
  return done.promise;
}

Deno.test("jobs lease: a run longer than its lease renews it and completes (not 'lost the run lease')", async () => {
  const gate = fullUpdateGate();
  // The shortest lease (100 ms): renewed every 33 ms while the run is held.
  const w = await jobsWorld({ SERVICE_JOB_LEASE_MS: "100" }, {}, gate.handler);
  try {
    await w.wire();
    // A second endpoint: the run checks its lease again before each endpoint's stages.
    const second = await w.call("POST", P + "endpoints/hypervisor/", {
      name: "pve-b",
      domain: "127.0.0.1",
      port: w.port,
      use_https: false,
      username: w.deps.config.hypervisor.mockUser,
      password: w.deps.config.hypervisor.mockPassword,
    });
    assert.equal(second.status, 201, JSON.stringify(second.body));
    const renewed = afterCalls(w, "renewLease", 4, (ok) => ok === true);
    const started = await w.call("POST", P + "sync/", { sync_types: ["all"] });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const id = started.body.job_id;
    // The job's stream, read to its end; a run that ends before reaching the gate fails here.
    const ended = w.sse(`${P}jobs/${id}/stream`);
    await Promise.race([gate.reached, ended]);
    assert.equal(statusOf(await w.job(id)), "running", (await w.job(id)).error);
    // Held past several lease periods, renewed each time by its own process.
    await renewed;
    assert.equal(statusOf(await w.job(id)), "running");
    assert.equal((await w.deps.storage.jobs.lease())?.job_id, id);
    gate.open();
    await ended;
    const job = await w.job(id);
    assert.equal(statusOf(job), "completed", job.error);
    assert.equal(job.error, "");
    assert.deepEqual(
      w.seen.filter((s) => s === "GET /full-update/stream").length,
      2,
      "both endpoints ran",
    );
    // The lease is given back once the run ends: the next sync is admitted at once.
    const next = await w.call("POST", P + "sync/", { sync_types: ["devices"] });
    assert.equal(next.status, 201, JSON.stringify(next.body));
    await w.sse(`${P}jobs/${next.body.job_id}/stream`);
  } finally {
    gate.open();
    await w.close();
  }
});

Deno.test("jobs lease: a second process on the same KV file leaves a job with a live lease running", async () => {
  const dir = await Deno.makeTempDir({ prefix: "jobs-lease-kv-" });
  const env = { SERVICE_ALLOW_LOOPBACK_TARGETS: "true" };
  const gate = fullUpdateGate();
  const a = await jobsWorld(env, { kv: await Deno.openKv(`${dir}/kv`) }, gate.handler);
  let b: JobsWorld | undefined;
  try {
    await a.wire();
    const started = await a.call("POST", P + "sync/", { sync_types: ["all"] });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const id = started.body.job_id;
    await gate.reached;
    // B checks for abandoned runs at start and then every 100 ms (its lease period); each check
    // reads the lease A holds (30 s) for the running job.
    b = await jobsWorld({ ...env, SERVICE_JOB_LEASE_MS: "100" }, {
      kv: await Deno.openKv(`${dir}/kv`),
    });
    const checks = afterCalls(
      b,
      "lease",
      3,
      (lease) => (lease as { job_id?: number } | null)?.job_id === id,
    );
    await checks;
    assert.equal(statusOf(await b.job(id)), "running");
    gate.open();
    await a.sse(`${P}jobs/${id}/stream`);
    const job = await a.job(id);
    assert.equal(statusOf(job), "completed", job.error);
    assert.doesNotMatch(job.error, /process running this job stopped/);
  } finally {
    gate.open();
    await b?.close();
    await a.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

/** Makes the world's lease renewals fail (storage trouble): its lease then runs out. */
function failRenewals(w: JobsWorld): void {
  (w.deps.storage.jobs as { renewLease: unknown }).renewLease = () =>
    Promise.reject(new Error("storage unavailable (planted by the test)"));
}

/** Resolves on the first log line with `message` in the world's logger. */
function logged(w: JobsWorld, message: string): Promise<void> {
  const done = Promise.withResolvers<void>();
  const logger = w.deps.logger;
  const real = logger.log.bind(logger);
  logger.log = (level, text, fields) => {
    real(level, text, fields);
    if (text === message) done.resolve();
  };
  return done.promise;
}

Deno.test("jobs lease: a process never reaps the run it is doing itself, even once its lease ran out", async () => {
  const gate = fullUpdateGate();
  const w = await jobsWorld({ SERVICE_JOB_LEASE_MS: "100" }, {}, gate.handler);
  try {
    await w.wire();
    const started = await w.call("POST", P + "sync/", { sync_types: ["all"] });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const id = started.body.job_id;
    await gate.reached;
    failRenewals(w);
    // Its own recovery check (every 100 ms) reads the lease, expired, three times.
    await afterCalls(
      w,
      "lease",
      3,
      (l) =>
        (l as { job_id: number; expires_at: number } | null)?.job_id === id &&
        (l as { expires_at: number }).expires_at < Date.now(),
    );
    assert.equal(statusOf(await w.job(id)), "running");
    gate.open();
    await w.sse(`${P}jobs/${id}/stream`);
    const job = await w.job(id);
    assert.equal(statusOf(job), "completed", job.error);
  } finally {
    gate.open();
    await w.close();
  }
});

for (
  const [what, orphan, reason] of [
    ["its expired lease", "expired", /\(its run lease expired at \d{4}-\d\d-\d\dT[\d:.]+Z\)/],
    ["no lease at all", "released", /\(it holds no run lease\)/],
  ] as const
) {
  Deno.test(`jobs lease: another process settles a run left with ${what} errored, saying so`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "jobs-lease-kv-" });
    const env = { SERVICE_ALLOW_LOOPBACK_TARGETS: "true", SERVICE_JOB_LEASE_MS: "100" };
    const gate = fullUpdateGate();
    const a = await jobsWorld(env, { kv: await Deno.openKv(`${dir}/kv`) }, gate.handler);
    let b: JobsWorld | undefined;
    try {
      await a.wire();
      const started = await a.call("POST", P + "sync/", { sync_types: ["all"] });
      assert.equal(started.status, 201, JSON.stringify(started.body));
      const id = started.body.job_id;
      await gate.reached;
      // A stops renewing (as a process that hangs would): its lease runs out.
      failRenewals(a);
      const lease = (await a.deps.storage.jobs.lease())!;
      assert.equal(lease.job_id, id);
      if (orphan === "released") await a.deps.storage.jobs.releaseLease(id, lease.owner);
      b = await jobsWorld(env, { kv: await Deno.openKv(`${dir}/kv`) });
      const recovered = logged(b, "sync job recovered after its owner stopped");
      // B recovers it on its first check that finds it (at start, then every 100 ms); thirty
      // checks without recovering it are a failure, not a wait without end.
      const checked = afterCalls(b, "lease", 30, () => true).then(() => {
        throw new Error(`job ${id} was not recovered by 30 checks`);
      });
      checked.catch(() => {}); // once recovered, a later rejection is no failure
      await Promise.race([recovered, checked]);
      const job = await b.job(id);
      assert.equal(statusOf(job), "errored");
      assert.match(job.error, /^The process running this job stopped before it finished/);
      assert.match(job.error, reason);
      gate.open();
      // A's run ends on its own; the job keeps the outcome B gave it.
      await a.sse(`${P}jobs/${id}/stream`);
      assert.equal(statusOf(await a.job(id)), "errored");
    } finally {
      gate.open();
      await b?.close();
      await a.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  });
}

/** Resolves with the fields of the first log line `message` in the world's logger. */
function loggedFields(w: JobsWorld, message: string): Promise<Record<string, unknown>> {
  const done = Promise.withResolvers<Record<string, unknown>>();
  const logger = w.deps.logger;
  const real = logger.log.bind(logger);
  logger.log = (level, text, fields) => {
    real(level, text, fields);
    if (text === message) done.resolve({ ...fields });
  };
  return done.promise;
}

Deno.test("jobs lease: a run whose lease another process takes mid-stage stops at once and writes nothing more", async () => {
  const dir = await Deno.makeTempDir({ prefix: "jobs-lease-kv-" });
  // The backend's first device write (the nodes stage) is held: the stage is mid-way, with
  // writes done before it and every later stage (guests, disks, addresses…) still to come.
  const held = Promise.withResolvers<void>();
  const reached = Promise.withResolvers<void>();
  let holding = true;
  let releasedAt = -1;
  const writes: string[] = [];
  const handler = async (request: Request, next: () => Promise<Response>) => {
    const { pathname } = new URL(request.url);
    if (request.method !== "GET") writes.push(`${request.method} ${pathname}`);
    if (holding && request.method === "POST" && pathname === "/api/dcim/devices/") {
      holding = false;
      reached.resolve();
      await held.promise;
    }
    return next();
  };
  // A 100 ms lease: this process renews it every 33 ms while the run lasts.
  const env = { SERVICE_ALLOW_LOOPBACK_TARGETS: "true", SERVICE_JOB_LEASE_MS: "100" };
  const a = await jobsWorld(env, { kv: await Deno.openKv(`${dir}/kv`) }, handler);
  // Another process on the same KV file, whose clock reads A's lease as long expired (as after
  // a pause of A longer than its lease): it takes the run lease for a job of its own.
  const otherKv = await Deno.openKv(`${dir}/kv`);
  const other = new KvJobStore(otherKv, () => Date.now() + 3_600_000);
  try {
    await a.wire();
    const backendEnded = loggedFields(a, "sync run ended");
    const started = await a.call("POST", P + "sync/", { sync_types: ["all"] });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const id = started.body.job_id;
    await reached.promise;
    const lost = afterCalls(a, "renewLease", 1, (ok) => ok === false);
    assert.deepEqual(await other.takeLease(id + 1_000, "process-b", 60_000), { ok: true });
    await lost;
    // With the backend still held mid-stage, A's run ends on the lost lease: the stream it was
    // reading is cut, not read on until the backend's next frame. (Should a regression leave it
    // waiting, the failure comes after 150 more refused renewals, not a hang.)
    const refusedMore = afterCalls(a, "renewLease", 150, (ok) => ok === false).then(() => {
      throw new Error(`job ${id} still runs 150 renewals after losing its lease`);
    });
    refusedMore.catch(() => {});
    await Promise.race([a.sse(`${P}jobs/${id}/stream`), refusedMore]);
    const job = await a.job(id);
    assert.equal(statusOf(job), "errored");
    assert.equal(job.error, "Stopped: this process lost the run lease (it expired and was taken)");
    // The run wrote no stage record after the one it was in (nodes never completed).
    assert.deepEqual(
      (job.data as { sync_type: string }[]).map((r) => r.sync_type).filter((t) =>
        t !== "clusters" && t !== "nodes"
      ),
      [],
    );
    const lastLines = (job.log_entries as { message: string }[]).slice(-2).map((l) => l.message);
    assert.deepEqual(lastLines, [
      "Stopped: this process lost the run lease (it expired and was taken)",
      "Finished errored: Stopped: this process lost the run lease (it expired and was taken)",
    ]);
    // The backend was told: once the held write is let go, its run ends cancelled and writes
    // nothing more to the inventory.
    releasedAt = writes.length;
    held.resolve();
    const ended = await backendEnded;
    assert.equal(ended.cancelled, true, JSON.stringify(ended));
    assert.deepEqual(writes.slice(releasedAt), [], "no write after the lease was lost");
    const vms = await a.call("GET", "/api/virtualization/virtual-machines/?limit=1");
    assert.equal(vms.body.count, 0, "the guests stage never ran");
    // The lease stays with the process that took it; the old owner gave back nothing of it.
    const lease = await other.lease();
    assert.equal(lease?.owner, "process-b");
    assert.equal(lease?.job_id, id + 1_000);
    assert.deepEqual((await a.job(id)).log_entries, job.log_entries, "no log line after");
  } finally {
    held.resolve();
    otherKv.close();
    await a.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
