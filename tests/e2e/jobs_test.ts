// deno-lint-ignore-file no-explicit-any
/**
 * Sync jobs end to end on a real socket: the plugin drives the backend's stage streams over
 * HTTP (its own port, answered in-process as main.ts wires it) against the hypervisor mock
 * and the embedded inventory. Events are ordered with signals (a gate on the backend's stage
 * route), never with sleeps.
 */
import assert from "node:assert/strict";
import { type Frame, jobsWorld, P, ROOT, statusOf } from "./_jobs_world.ts";
import { SYNC_TYPES } from "../../domain/jobs/stages.ts";

const STAGE_STREAM =
  /^\/(full-update|dcim|virtualization|hypervisor\/(sdn|replication|cluster\/backup))\/.*stream$/;

/**
 * A jobs world whose backend holds every full-update call until `open()`; `reached` resolves
 * when the first one arrives (the job is then running).
 */
async function gatedWorld() {
  const gate = Promise.withResolvers<void>();
  const reached = Promise.withResolvers<void>();
  const w = await jobsWorld({}, {}, async (request, next) => {
    if (new URL(request.url).pathname === "/full-update/stream") {
      reached.resolve();
      await gate.promise;
    }
    return next();
  });
  return { w, open: () => gate.resolve(), reached: reached.promise };
}

function stageCalls(seen: string[]): string[] {
  return seen.filter((s) => s.startsWith("GET ") && STAGE_STREAM.test(s.slice(4)));
}

Deno.test("jobs e2e: a full sync job runs all 13 stages, ends completed, leaves last_sync, no secret in the job", async () => {
  const w = await jobsWorld();
  try {
    const { hypervisor, backend } = await w.wire();
    const started = await w.call("POST", P + "sync/", { sync_types: ["all"] });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    assert.equal(started.body.ok, true);
    assert.equal(typeof started.body.job_id, "number");
    assert.match(started.body.message, /queued/);
    const frames = await w.sse(`${P}jobs/${started.body.job_id}/stream`);
    assert.equal(frames.at(-1)!.event, "complete");
    assert.equal(frames.at(-1)!.data.ok, true, JSON.stringify(frames.at(-1)));

    const job = await w.job(started.body.job_id);
    assert.equal(statusOf(job), "completed", job.error);
    assert.ok(job.created && job.started && job.completed);
    assert.ok(Date.parse(job.started) <= Date.parse(job.completed));
    assert.equal(job.error, "");
    assert.deepEqual(job.data.map((r: any) => r.sync_type), SYNC_TYPES);
    for (const r of job.data) {
      assert.deepEqual(Object.keys(r).sort(), [
        "endpoint_id",
        "result_summary",
        "runtime_seconds",
        "stream_path",
        "sync_type",
      ]);
      assert.equal(r.endpoint_id, hypervisor);
      assert.equal(r.stream_path, "/full-update/stream");
      assert.equal(typeof r.runtime_seconds, "number");
      assert.equal(r.result_summary.failed, 0, JSON.stringify(r));
    }
    assert.ok(
      job.data.find((r: any) => r.sync_type === "virtual-machines").result_summary.created > 0,
    );
    for (const l of job.log) {
      assert.deepEqual(Object.keys(l).sort(), ["level", "message", "timestamp"]);
    }
    assert.ok(job.log.some((l: any) => /Preflight: backend .* is ready/.test(l.message)));
    assert.ok(job.log.some((l: any) => /pushed hypervisor endpoint "pve"/.test(l.message)));

    // The backend really was driven over its stage stream, once.
    assert.deepEqual(stageCalls(w.seen), ["GET /full-update/stream"]);

    // The inventory holds what the mock has.
    const vms = await w.call("GET", "/api/virtualization/virtual-machines/?limit=1");
    assert.equal(vms.body.count, 6);

    // Each covered endpoint shows its last sync (read-only).
    const hv = await w.call("GET", `${P}endpoints/hypervisor/${hypervisor}/`);
    assert.equal(hv.body.last_sync.job_id, started.body.job_id);
    assert.equal(hv.body.last_sync.ok, true);
    assert.equal(hv.body.last_sync.status, "completed");
    const patched = await w.call("PATCH", `${P}endpoints/hypervisor/${hypervisor}/`, {
      last_sync: { ok: false },
    });
    assert.equal(patched.body.last_sync?.ok ?? true, true, "last_sync is not writable");

    // Listed and filterable like every NetBox list.
    const list = await w.call("GET", "/api/core/jobs/?status=completed");
    assert.equal(list.body.count, 1);
    assert.equal((await w.call("GET", "/api/core/jobs/?status=errored")).body.count, 0);

    // No secret anywhere in the job: the backend key, the inventory token, the hypervisor password.
    const text = JSON.stringify(job) + JSON.stringify(frames);
    const backendKey = (await w.call("GET", `${P}endpoints/backend/${backend.id}/`)).body.token;
    assert.equal(typeof backendKey, "string");
    for (const secret of [backendKey, w.deps.config.hypervisor.mockPassword, ROOT]) {
      assert.ok(!text.includes(secret), `a secret reached the job: ${secret.slice(0, 4)}…`);
    }
  } finally {
    await w.close();
  }
});

Deno.test("jobs e2e: the live stream follows a running job to its end", async () => {
  // The stage call waits until the test has seen the job running.
  const { w, open, reached: stageReached } = await gatedWorld();
  try {
    await w.wire();
    const started = await w.call("POST", P + "sync/", { sync_types: ["all"] });
    assert.equal(started.status, 201);
    const id = started.body.job_id;
    await stageReached;
    assert.equal(statusOf(await w.job(id)), "running");
    let sawRunningLog = false;
    const frames = await w.sse(`${P}jobs/${id}/stream`, (f: Frame) => {
      if (f.event === "log" && /Preflight: pushed hypervisor/.test(f.data.message)) {
        sawRunningLog = true;
        open(); // the stream is attached to a running job: let the stages go
      }
      return false;
    });
    assert.ok(sawRunningLog);
    const kinds = frames.map((f) => f.event);
    assert.equal(kinds.at(-1), "complete");
    assert.equal(kinds.filter((k) => k === "complete").length, 1);
    // What happened after the stream attached arrived live: stage frames and their log lines.
    const afterGate = frames.slice(
      frames.findIndex((f) => f.event === "log" && /pushed hypervisor/.test(f.data.message)) + 1,
    );
    assert.ok(afterGate.some((f) => f.event === "step" && f.data.status === "started"));
    const completedSteps = afterGate.filter((f) =>
      f.event === "step" && f.data.status === "completed"
    );
    assert.deepEqual([...new Set(completedSteps.map((f) => f.data.step))], SYNC_TYPES);
    assert.ok(afterGate.some((f) => f.event === "log" && f.data.message === "Completed."));
    assert.equal(frames.at(-1)!.data.status, "completed");
    // A stream opened on a finished job replays its log and ends at once.
    const again = await w.sse(`${P}jobs/${id}/stream`);
    assert.equal(again.at(-1)!.event, "complete");
    assert.equal(again.filter((f) => f.event === "log").length, (await w.job(id)).log.length);
  } finally {
    open();
    await w.close();
  }
});

Deno.test("jobs e2e: a failing backend stage yields errored with the stage, the request and the status, after 2 retries", async () => {
  const w = await jobsWorld({}, {}, (request, next) => {
    const path = new URL(request.url).pathname;
    if (path === "/full-update/stream" || path === "/dcim/devices/create/stream") {
      // A careless backend that echoes the key it was sent: the job must not keep it.
      const echoed = request.headers.get("x-service-api-key");
      return Promise.resolve(
        Response.json({ detail: `backend overloaded (key ${echoed})` }, { status: 503 }),
      );
    }
    return next();
  });
  try {
    await w.wire();
    const started = await w.call("POST", P + "sync/", { sync_types: ["all"] });
    const frames = await w.sse(`${P}jobs/${started.body.job_id}/stream`);
    assert.equal(frames.at(-1)!.data.ok, false);
    const job = await w.job(started.body.job_id);
    assert.equal(statusOf(job), "errored");
    assert.match(
      job.error,
      /^devices for "pve": GET http:\/\/127\.0\.0\.1:\d+\/dcim\/devices\/create\/stream\?hypervisor_endpoint_ids=\d+ → .*HTTP 503: backend overloaded/,
    );
    // The first call was the full update; the two retries ran the failing stage alone.
    assert.deepEqual(stageCalls(w.seen), [
      "GET /full-update/stream",
      "GET /dcim/devices/create/stream",
      "GET /dcim/devices/create/stream",
    ]);
    assert.equal(job.log.filter((l: any) => /retry \d of 2/.test(l.message)).length, 2);
    const key = (await w.call("GET", `${P}endpoints/backend/1/`)).body.token;
    assert.ok(key && !JSON.stringify(job).includes(key), "the echoed key is not kept");
    assert.match(job.error, /backend overloaded \(key \[redacted\]\)/);
    assert.deepEqual(job.data, []);
    const hv = await w.call("GET", `${P}endpoints/hypervisor/`);
    assert.equal(hv.body.results[0].last_sync.ok, false);
    assert.equal(hv.body.results[0].last_sync.status, "errored");
  } finally {
    await w.close();
  }
});

Deno.test("jobs e2e: a 4xx from the backend is not retried and its status and body reach the job error", async () => {
  const w = await jobsWorld({}, {}, (request, next) => {
    if (new URL(request.url).pathname === "/virtualization/virtual-machines/create/stream") {
      return Promise.resolve(
        Response.json({ detail: "Hypervisor endpoint(s) not found: 9" }, { status: 404 }),
      );
    }
    return next();
  });
  try {
    await w.wire();
    const started = await w.call("POST", P + "sync/", {
      sync_types: ["devices", "virtual-machines"],
    });
    assert.equal(started.status, 201);
    await w.sse(`${P}jobs/${started.body.job_id}/stream`);
    const job = await w.job(started.body.job_id);
    assert.equal(statusOf(job), "errored");
    assert.match(job.error, /virtual-machines .* HTTP 404: Hypervisor endpoint\(s\) not found: 9/);
    assert.deepEqual(stageCalls(w.seen), [
      "GET /dcim/devices/create/stream",
      "GET /virtualization/virtual-machines/create/stream",
    ]);
    assert.deepEqual(job.data.map((r: any) => r.sync_type), ["devices"]);
    assert.equal(job.data[0].stream_path, "/dcim/devices/create/stream");
    // The endpoint's devices went well, but its sync did not finish: its last sync is no success.
    const hv = (await w.call("GET", `${P}endpoints/hypervisor/`)).body.results[0];
    assert.deepEqual([hv.last_sync.ok, hv.last_sync.status, hv.last_sync.job_id], [
      false,
      "errored",
      started.body.job_id,
    ]);
  } finally {
    await w.close();
  }
});

Deno.test("jobs e2e: an endpoint's last sync is a success only when its job completed", async () => {
  let fullUpdates = 0;
  const w = await jobsWorld({}, {}, (request, next) => {
    // The first endpoint's full update goes through; the second one's is refused (final).
    if (new URL(request.url).pathname === "/full-update/stream" && ++fullUpdates === 2) {
      return Promise.resolve(Response.json({ detail: "no such endpoint" }, { status: 404 }));
    }
    return next();
  });
  try {
    const { hypervisor } = await w.wire();
    const second = await w.call("POST", P + "endpoints/hypervisor/", {
      name: "pve-b",
      domain: "127.0.0.1",
      port: w.port,
      use_https: false,
      username: w.deps.config.hypervisor.mockUser,
      password: w.deps.config.hypervisor.mockPassword,
    });
    assert.equal(second.status, 201, JSON.stringify(second.body));
    const started = await w.call("POST", P + "sync/", { sync_types: ["all"] });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    await w.sse(`${P}jobs/${started.body.job_id}/stream`);
    assert.equal(statusOf(await w.job(started.body.job_id)), "errored");
    assert.equal(fullUpdates, 2);
    const lastSync = async (id: number) =>
      (await w.call("GET", `${P}endpoints/hypervisor/${id}/`)).body.last_sync;
    // The first endpoint's stages all went well, yet the run it was part of failed.
    for (const id of [hypervisor, second.body.id]) {
      const last = await lastSync(id);
      assert.deepEqual([last.ok, last.status, last.job_id], [
        false,
        "errored",
        started.body.job_id,
      ]);
    }
  } finally {
    await w.close();
  }
});

Deno.test("jobs e2e: concurrent sync requests never run twice; the losers get 409 naming the job; a running job cannot be deleted", async () => {
  const { w, open, reached } = await gatedWorld();
  try {
    await w.wire();
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => w.call("POST", P + "sync/", { sync_types: ["all"] })),
    );
    const won = answers.filter((a) => a.status === 201);
    const lost = answers.filter((a) => a.status === 409);
    assert.equal(won.length, 1, JSON.stringify(answers.map((a) => a.status)));
    assert.equal(lost.length, 5);
    const id = won[0].body.job_id;
    for (const l of lost) {
      assert.equal(l.body.job_id, id);
      assert.match(l.body.detail, new RegExp(`job ${id}`));
    }
    // While it holds ownership, another request is refused too.
    const busy = await w.call("POST", P + "sync/", { sync_types: ["devices"] });
    assert.equal(busy.status, 409);
    // Running now: deleting it is refused, it stays, and it still holds the slot.
    await reached;
    const kept = await w.call("DELETE", `/api/core/jobs/${id}/`);
    assert.equal(kept.status, 409);
    assert.match(kept.body.detail, /running job cannot be deleted/);
    assert.equal(statusOf(await w.job(id)), "running");
    assert.equal((await w.call("POST", P + "sync/", { sync_types: ["devices"] })).status, 409);
    open();
    await w.sse(`${P}jobs/${id}/stream`);
    assert.equal(statusOf(await w.job(id)), "completed");
    assert.deepEqual(stageCalls(w.seen), ["GET /full-update/stream"]);
    // Only the winner's record exists; afterwards a new sync is admitted.
    assert.equal((await w.call("GET", "/api/core/jobs/")).body.count, 1);
    const next = await w.call("POST", P + "sync/", { sync_types: ["devices"] });
    assert.equal(next.status, 201);
    await w.sse(`${P}jobs/${next.body.job_id}/stream`);
  } finally {
    open();
    await w.close();
  }
});

Deno.test("jobs e2e: repair reconciles, queues a full sync, refuses a duplicate; bootstrap-status relays 200", async () => {
  const { w, open } = await gatedWorld();
  try {
    await w.wire();
    const before = await w.call("GET", P + "bootstrap-status/");
    assert.equal(before.status, 200);
    assert.equal(before.body.ok, false);
    assert.equal(before.body.reason, "missing_bootstrap_objects");
    assert.ok(before.body.warnings.some((x: any) => x.object === "custom field hypervisor_vmid"));

    const denied = await w.call("POST", P + "repair/", {}, await viewOnlyToken(w));
    assert.equal(denied.status, 403);

    const repair = await w.call("POST", P + "repair/", {});
    assert.equal(repair.status, 201, JSON.stringify(repair.body));
    const dup = await w.call("POST", P + "repair/", {});
    assert.equal(dup.status, 409);
    assert.equal(dup.body.job_id, repair.body.job_id);
    open();
    await w.sse(`${P}jobs/${repair.body.job_id}/stream`);
    const job = await w.job(repair.body.job_id);
    assert.equal(statusOf(job), "completed", job.error);
    assert.equal(job.data.length, 13);
    assert.ok(job.log.some((l: any) => /Custom fields reconciled: \d+ created/.test(l.message)));

    const after = await w.call("GET", P + "bootstrap-status/");
    assert.deepEqual(
      { ok: after.body.ok, reason: after.body.reason, warnings: after.body.warnings },
      { ok: true, reason: null, warnings: [] },
    );
    const again = await w.call("POST", P + "repair/", {});
    assert.equal(again.status, 201, "a finished repair does not block the next");
    await w.sse(`${P}jobs/${again.body.job_id}/stream`);
  } finally {
    open();
    await w.close();
  }
});

async function viewOnlyToken(w: Awaited<ReturnType<typeof jobsWorld>>): Promise<string> {
  const t = await w.call("POST", "/api/users/tokens/", {
    version: 1,
    write_enabled: true,
    permissions: ["core.view_job", "service.view_backendendpoint"],
  });
  return `Token ${t.body.token}`;
}

Deno.test("jobs e2e: bad requests are 400s naming the field; permissions as NetBox", async () => {
  const w = await jobsWorld();
  try {
    const { hypervisor } = await w.wire();
    const off = await w.call("POST", P + "endpoints/hypervisor/", {
      name: "off",
      domain: "127.0.0.1",
      port: w.port,
      use_https: false,
      username: "root@pam",
      password: "x",
      enabled: false,
    });
    const bad = async (body: unknown) => {
      const r = await w.call("POST", P + "sync/", body);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      return r.body;
    };
    assert.match(
      (await bad({ sync_types: ["devices", "vms", "nope"] })).sync_types[0],
      /Unknown sync type\(s\): "vms", "nope"/,
    );
    assert.match((await bad({ sync_types: "all" })).sync_types[0], /list/);
    assert.match(
      (await bad({ hypervisor_endpoint_ids: [hypervisor, 999] })).hypervisor_endpoint_ids[0],
      /Unknown hypervisor endpoint id\(s\): 999/,
    );
    assert.match(
      (await bad({ hypervisor_endpoint_ids: [off.body.id] })).hypervisor_endpoint_ids[0],
      new RegExp(`Disabled hypervisor endpoint id\\(s\\): ${off.body.id}`),
    );
    assert.ok((await bad({ schedule_at: "tomorrow" })).schedule_at);
    assert.ok((await bad({ interval_value: 0 })).interval_value);
    assert.ok((await bad({ interval_value: 2, interval_unit: "weeks" })).interval_unit);
    assert.ok((await bad({ colour: "blue" })).colour);
    assert.equal((await w.call("GET", "/api/core/jobs/")).body.count, 0, "nothing was queued");

    const viewer = await viewOnlyToken(w);
    assert.equal((await w.call("POST", P + "sync/", {}, viewer)).status, 403);
    assert.equal((await w.call("GET", P + "sync/")).status, 405);
    assert.equal((await w.call("GET", `${P}jobs/99/stream`)).status, 404);
    const noView = await w.call("POST", "/api/users/tokens/", { version: 1, permissions: [] });
    assert.equal(
      (await w.call("GET", `${P}jobs/1/stream`, undefined, `Token ${noView.body.token}`)).status,
      403,
    );
    assert.equal((await w.call("POST", P + "sync/", {}, "Token nope")).status, 403);
    // The plugin's document lists the job routes.
    const schema = await w.call("GET", "/api/schema/");
    assert.ok(schema.body.paths[`${P}sync/`.replace(/\/$/, "/")].post);
    assert.ok(schema.body.paths[`${P}repair/`].post);
    assert.ok(schema.body.paths[`${P}jobs/{id}/stream`].get);
  } finally {
    await w.close();
  }
});

Deno.test("jobs e2e: schedule_at runs later and can be cancelled; an interval queues the next run", async () => {
  const w = await jobsWorld();
  try {
    await w.wire();
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const scheduled = await w.call("POST", P + "sync/", {
      sync_types: ["devices"],
      schedule_at: later,
    });
    assert.equal(scheduled.status, 201);
    assert.match(scheduled.body.message, /scheduled for/);
    const job = await w.job(scheduled.body.job_id);
    assert.equal(statusOf(job), "scheduled");
    assert.equal(Date.parse(job.scheduled), Date.parse(later));
    // A scheduled job does not hold the sync slot.
    const now = await w.call("POST", P + "sync/", {
      sync_types: ["devices"],
      interval_value: 2,
      interval_unit: "hours",
    });
    assert.equal(now.status, 201);
    await w.sse(`${P}jobs/${now.body.job_id}/stream`);
    const first = await w.job(now.body.job_id);
    assert.equal(statusOf(first), "completed", first.error);
    assert.equal(first.interval, 120);
    const next = (await w.call("GET", "/api/core/jobs/?status=scheduled")).body.results
      .find((j: any) => j.id !== scheduled.body.job_id);
    assert.ok(next, "the interval queued its next run");
    assert.equal(next.interval, 120);
    const gap = Date.parse(next.scheduled) - Date.parse(first.started);
    assert.ok(Math.abs(gap - 120 * 60_000) < 5_000, `next run ${gap} ms after the first`);

    // Cancel both scheduled jobs the NetBox way; a running or finished one is not "scheduled".
    const viewer = await viewOnlyToken(w);
    assert.equal(
      (await w.call("DELETE", `/api/core/jobs/${next.id}/`, undefined, viewer)).status,
      403,
    );
    for (const id of [scheduled.body.job_id, next.id]) {
      assert.equal((await w.call("DELETE", `/api/core/jobs/${id}/`)).status, 204);
      assert.equal((await w.call("GET", `/api/core/jobs/${id}/`)).status, 404);
    }
    assert.equal((await w.call("DELETE", "/api/core/jobs/9999/")).status, 404);
    assert.equal((await w.call("GET", "/api/core/jobs/?status=scheduled")).body.count, 0);
  } finally {
    await w.close();
  }
});

Deno.test("jobs e2e: a job due soon runs on its own", async () => {
  const w = await jobsWorld();
  try {
    await w.wire();
    const soon = new Date(Date.now() + 300).toISOString();
    const r = await w.call("POST", P + "sync/", { sync_types: ["storage"], schedule_at: soon });
    assert.equal(statusOf(await w.job(r.body.job_id)), "scheduled");
    const frames = await w.sse(`${P}jobs/${r.body.job_id}/stream`);
    assert.equal(frames.at(-1)!.data.status, "completed");
    const job = await w.job(r.body.job_id);
    assert.ok(Date.parse(job.started) >= Date.parse(soon));
    assert.deepEqual(job.data.map((d: any) => d.sync_type), ["storage"]);
  } finally {
    await w.close();
  }
});

Deno.test("jobs e2e: two processes sharing one KV file admit one sync between them", async () => {
  const dir = await Deno.makeTempDir({ prefix: "jobs-shared-kv-" });
  const env = { SERVICE_ALLOW_LOOPBACK_TARGETS: "true" };
  const a = await jobsWorld(env, { kv: await Deno.openKv(`${dir}/kv`) });
  const b = await jobsWorld(env, { kv: await Deno.openKv(`${dir}/kv`) });
  // The admitted job may not run (nor end, freeing its slot) before every request is answered:
  // a request slowed by the file's lock on a loaded machine would otherwise find the slot free
  // again and be admitted as a second sync. Each process's run waits at its lease.
  const answered = Promise.withResolvers<void>();
  for (const w of [a, b]) {
    const jobs = w.deps.storage.jobs;
    const takeLease = jobs.takeLease.bind(jobs);
    jobs.takeLease = async (...args) => {
      await answered.promise;
      return await takeLease(...args);
    };
  }
  try {
    await a.wire();
    const answers = await Promise.all([
      a.call("POST", P + "sync/", { sync_types: ["all"] }),
      b.call("POST", P + "sync/", { sync_types: ["all"] }),
      a.call("POST", P + "sync/", { sync_types: ["all"] }),
      b.call("POST", P + "sync/", { sync_types: ["all"] }),
    ]);
    answered.resolve();
    // One admitted; the others refused (409), or asked to retry (503) when SQLite reported the
    // file busy: two handles on one local file contend for its lock. Never two runs.
    const statuses = answers.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 201).length, 1, JSON.stringify(statuses));
    assert.ok(statuses.every((s) => s === 201 || s === 409 || s === 503), JSON.stringify(statuses));
    const winner = answers.findIndex((r) => r.status === 201);
    const id = answers[winner].body.job_id;
    for (const r of answers.filter((x) => x.status === 409)) assert.equal(r.body.job_id, id);
    const owner = winner % 2 === 0 ? a : b;
    await owner.sse(`${P}jobs/${id}/stream`);
    // The run itself may meet the same lock contention; what matters here is that it ran once.
    assert.ok(["completed", "failed", "errored"].includes(statusOf(await owner.job(id))));
    // One job exists at all; its run started with the one full update (a stream broken by the
    // contention goes on stage by stage, still the same job).
    assert.equal((await a.call("GET", "/api/core/jobs/")).body.count, 1);
    const calls = [...stageCalls(a.seen), ...stageCalls(b.seen)];
    assert.equal(calls.filter((c) => c === "GET /full-update/stream").length, 1);
  } finally {
    answered.resolve();
    await a.close();
    await b.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("jobs e2e: finished jobs beyond the retention are pruned, oldest first", async () => {
  const w = await jobsWorld({ SERVICE_JOB_RETENTION: "3" });
  try {
    await w.wire();
    const ids: number[] = [];
    const kept = async () =>
      (await w.call("GET", "/api/core/jobs/?ordering=id")).body.results.map((j: any) => j.id);
    for (let i = 0; i < 4; i++) {
      const r = await w.call("POST", P + "sync/", { sync_types: ["storage"] });
      assert.equal(r.status, 201);
      ids.push(r.body.job_id);
      await w.sse(`${P}jobs/${r.body.job_id}/stream`);
      // Within the retention nothing is pruned (two of three is more than half of it).
      if (i === 1) assert.deepEqual(await kept(), ids);
    }
    assert.deepEqual(await kept(), ids.slice(1));
    // Each kept job's log says how its stage ended, with the backend's counts.
    const last = await w.call("GET", `/api/core/jobs/${ids[3]}/`);
    const lines = last.body.log.map((e: { message: string }) => e.message);
    assert.ok(
      lines.some((m: string) =>
        /^storage for .+: completed \(\d+ created, \d+ updated, \d+ unchanged, \d+ deleted, 0 failed\)$/
          .test(m)
      ),
      JSON.stringify(lines),
    );
    assert.equal((await w.call("GET", `/api/core/jobs/${ids[0]}/`)).status, 404);
  } finally {
    await w.close();
  }
});

Deno.test("jobs e2e: field names that are Object's own are plain unknown fields, never a 500", async () => {
  const w = await jobsWorld();
  try {
    for (const body of ['{"constructor":""}', '{"__proto__":{"x":1}}', '{"toString":1}']) {
      const res = await fetch(w.base + P + "sync/", {
        method: "POST",
        headers: { authorization: `Token ${ROOT}`, "content-type": "application/json" },
        body,
      });
      assert.equal(res.status, 400, body);
      await res.body?.cancel();
    }
    const r = await w.call("POST", P + "sync/", {
      interval_value: 1,
      interval_unit: "constructor",
    });
    assert.equal(r.status, 400);
    assert.ok(r.body.interval_unit);
  } finally {
    await w.close();
  }
});

Deno.test("jobs e2e: a token with an expiry still ahead runs its job (not refused as expired)", async () => {
  const w = await jobsWorld();
  try {
    await w.wire();
    const token = await w.call("POST", "/api/users/tokens/", {
      version: 1,
      is_superuser: true,
      write_enabled: true,
      expires: new Date(Date.now() + 3_600_000).toISOString(),
      description: "expires in an hour",
    });
    assert.equal(token.status, 201, JSON.stringify(token.body));
    const started = await w.call(
      "POST",
      P + "sync/",
      { sync_types: ["storage"] },
      `Token ${token.body.token}`,
    );
    assert.equal(started.status, 201, JSON.stringify(started.body));
    await w.sse(`${P}jobs/${started.body.job_id}/stream`);
    const job = await w.job(started.body.job_id);
    assert.equal(statusOf(job), "completed", job.error);
  } finally {
    await w.close();
  }
});
