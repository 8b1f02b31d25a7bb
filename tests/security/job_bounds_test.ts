// deno-lint-ignore-file no-explicit-any
/**
 * Bounds on sync jobs per token (SECURITY.md "Limits"): a cap on scheduled and waiting jobs,
 * and a token's jobs stop when the token is deleted or loses `core.add_job`.
 */
import assert from "node:assert/strict";
import { type JobsWorld, jobsWorld, P, statusOf } from "../e2e/_jobs_world.ts";
import { MAX_WAITING_JOBS_PER_TOKEN } from "../../domain/jobs/service.ts";
import { MAX_JOB_STREAMS_PER_TOKEN } from "../../routes/plugin/jobs.ts";

async function jobToken(w: JobsWorld, permissions = ["core.add_job", "core.view_job"]) {
  const t = await w.call("POST", "/api/users/tokens/", {
    version: 1,
    write_enabled: true,
    permissions,
    description: "scheduler",
  });
  assert.equal(t.status, 201, JSON.stringify(t.body));
  return { id: t.body.id as number, auth: `Token ${t.body.token}` };
}

const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

Deno.test("jobs: one token may hold at most MAX_WAITING_JOBS_PER_TOKEN scheduled jobs; the 4xx names the cap", async () => {
  const w = await jobsWorld();
  try {
    await w.wire();
    const t = await jobToken(w);
    const ids: number[] = [];
    for (let i = 0; i < MAX_WAITING_JOBS_PER_TOKEN; i++) {
      const r = await w.call("POST", P + "sync/", {
        sync_types: ["devices"],
        schedule_at: inAnHour(),
      }, t.auth);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      ids.push(r.body.job_id);
    }
    const over = await w.call("POST", P + "sync/", {
      sync_types: ["devices"],
      schedule_at: inAnHour(),
    }, t.auth);
    assert.equal(over.status, 429);
    assert.equal(over.body.limit, MAX_WAITING_JOBS_PER_TOKEN);
    assert.match(over.body.detail, new RegExp(`limit ${MAX_WAITING_JOBS_PER_TOKEN}`));
    // Nothing half-made stays: still exactly the cap's worth of scheduled jobs.
    const listed = await w.call("GET", "/api/core/jobs/?status=scheduled&limit=100");
    assert.equal(listed.body.count, MAX_WAITING_JOBS_PER_TOKEN);
    // Another token has its own allowance; cancelling one frees a place.
    const other = await jobToken(w);
    const theirs = await w.call("POST", P + "sync/", {
      sync_types: ["devices"],
      schedule_at: inAnHour(),
    }, other.auth);
    assert.equal(theirs.status, 201);
    assert.equal((await w.call("DELETE", `/api/core/jobs/${ids[0]}/`)).status, 204);
    const again = await w.call("POST", P + "sync/", {
      sync_types: ["devices"],
      schedule_at: inAnHour(),
    }, t.auth);
    assert.equal(again.status, 201, JSON.stringify(again.body));
  } finally {
    await w.close();
  }
});

/**
 * A world whose first full-update call (root's job) waits on a gate: while it runs it holds the
 * run lease, so the token's jobs cannot run until the test opens the gate.
 */
async function gatedWorld() {
  const gate = Promise.withResolvers<void>();
  const reached = Promise.withResolvers<void>();
  let first = true;
  const w = await jobsWorld({}, {}, async (request, next) => {
    if (new URL(request.url).pathname === "/full-update/stream" && first) {
      first = false;
      reached.resolve();
      await gate.promise;
    }
    return next();
  });
  return { w, open: () => gate.resolve(), reached: reached.promise };
}

for (
  const [what, revoke] of [
    ["is deleted", (w: JobsWorld, id: number) => w.call("DELETE", `/api/users/tokens/${id}/`)],
    [
      "loses core.add_job",
      (w: JobsWorld, id: number) =>
        w.call("PATCH", `/api/users/tokens/${id}/`, { permissions: ["core.view_job"] }),
    ],
  ] as const
) {
  Deno.test(`jobs: a token's recurring jobs stop when it ${what}`, async () => {
    const { w, open, reached } = await gatedWorld();
    try {
      await w.wire();
      const t = await jobToken(w);
      // Root's one-off sync holds the run lease until the gate opens.
      const holder = await w.call("POST", P + "sync/", { sync_types: ["all"] });
      assert.equal(holder.status, 201);
      await reached;
      // The token's recurring job, due at once: it must wait for the lease.
      const series = await w.call("POST", P + "sync/", {
        sync_types: ["devices"],
        schedule_at: new Date(Date.now() + 50).toISOString(),
        interval_value: 1,
        interval_unit: "hours",
      }, t.auth);
      assert.equal(series.status, 201, JSON.stringify(series.body));
      const revoked = await revoke(w, t.id);
      assert.ok(revoked.status === 204 || revoked.status === 200, JSON.stringify(revoked.body));
      open();
      await w.sse(`${P}jobs/${holder.body.job_id}/stream`);
      await w.sse(`${P}jobs/${series.body.job_id}/stream`);

      const job = await w.job(series.body.job_id);
      assert.equal(statusOf(job), "failed", JSON.stringify(job.log));
      assert.match(
        job.error,
        new RegExp(`token ${t.id}, which asked for this job, .*not run, and not scheduled again`),
      );
      assert.deepEqual(job.data, [], "no stage ran");
      const scheduled = await w.call("GET", "/api/core/jobs/?status=scheduled");
      assert.equal(scheduled.body.count, 0, "the series queued no next run");
    } finally {
      await w.close();
    }
  });
}

Deno.test("jobs: a recurring job whose token is deleted while it runs is not scheduled again", async () => {
  const gate = Promise.withResolvers<void>();
  const reached = Promise.withResolvers<void>();
  const w = await jobsWorld({}, {}, async (request, next) => {
    if (new URL(request.url).pathname.startsWith("/dcim/devices/create/stream")) {
      reached.resolve();
      await gate.promise;
    }
    return next();
  });
  try {
    await w.wire();
    const t = await jobToken(w);
    const series = await w.call("POST", P + "sync/", {
      sync_types: ["devices"],
      interval_value: 1,
      interval_unit: "hours",
    }, t.auth);
    assert.equal(series.status, 201, JSON.stringify(series.body));
    await reached.promise;
    assert.equal((await w.call("DELETE", `/api/users/tokens/${t.id}/`)).status, 204);
    gate.resolve();
    await w.sse(`${P}jobs/${series.body.job_id}/stream`);
    const job = await w.job(series.body.job_id);
    assert.equal(statusOf(job), "completed", job.error);
    assert.ok(
      job.log.some((l: any) => /was deleted: the series is not scheduled again/.test(l.message)),
      JSON.stringify(job.log),
    );
    assert.equal((await w.call("GET", "/api/core/jobs/?status=scheduled")).body.count, 0);
  } finally {
    await w.close();
  }
});

Deno.test("jobs: one token holds at most MAX_JOB_STREAMS_PER_TOKEN job streams; the 429 names the limit", async () => {
  const { w, open, reached } = await gatedWorld();
  const readers: ReadableStreamDefaultReader<Uint8Array>[] = [];
  try {
    await w.wire();
    const held = await w.call("POST", P + "sync/", { sync_types: ["all"] });
    assert.equal(held.status, 201);
    await reached;
    const viewer = await jobToken(w, ["core.view_job"]);
    const url = `${w.base}${P}jobs/${held.body.job_id}/stream`;
    for (let i = 0; i < MAX_JOB_STREAMS_PER_TOKEN; i++) {
      const res = await fetch(url, { headers: { authorization: viewer.auth } });
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      assert.ok((await reader.read()).value, "the stream is open");
      readers.push(reader);
    }
    const over = await fetch(url, { headers: { authorization: viewer.auth } });
    assert.equal(over.status, 429);
    const refused = await over.json();
    assert.equal(refused.limit, MAX_JOB_STREAMS_PER_TOKEN);
    assert.match(refused.detail, new RegExp(`limit ${MAX_JOB_STREAMS_PER_TOKEN}`));
    // The bound is per token: another token still gets one.
    const other = await jobToken(w, ["core.view_job"]);
    const theirs = await fetch(url, { headers: { authorization: other.auth } });
    assert.equal(theirs.status, 200);
    await theirs.body?.cancel();
    // When the job ends, its streams end and give their places back.
    open();
    for (const reader of readers.splice(0)) {
      while (!(await reader.read()).done) { /* drain to the end */ }
    }
    const after = await fetch(url, { headers: { authorization: viewer.auth } });
    assert.equal(after.status, 200);
    assert.match(await after.text(), /event: complete/);
  } finally {
    open();
    for (const reader of readers) await reader.cancel().catch(() => {});
    await w.close();
  }
});
