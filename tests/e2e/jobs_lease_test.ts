/**
 * The run lease of sync jobs on real sockets: a run longer than its lease keeps it by renewing,
 * and a second process sharing the KV file leaves a running job alone while its lease is live.
 * Events are ordered with signals (a gate on the backend's full update, counters on the job
 * store's lease calls), never with sleeps.
 */
import assert from "node:assert/strict";
import { jobsWorld, P, statusOf } from "./_jobs_world.ts";
import type { JobsWorld } from "./_jobs_world.ts";

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
