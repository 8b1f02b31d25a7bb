// deno-lint-ignore-file no-explicit-any
/**
 * The job runner over fake ports: retries, key renewal, optional stages, a stream that
 * breaks mid-run, in-band failures, the preflight's health backoff.
 */
import assert from "node:assert/strict";
import { runSyncJob, type StageRecord } from "../../../domain/jobs/runner.ts";
import type { BackendLink, JobSpec, PluginSide, StageStream } from "../../../domain/jobs/ports.ts";
import { refusalOf } from "../../../routes/plugin/job_wiring.ts";
import { JOB_STAGES, SYNC_TYPES } from "../../../domain/jobs/stages.ts";

const typeOf = (path: string) => JOB_STAGES.find((s) => s.stream === path)!.type;

type Frame = { event: string; data: any };
const result = { created: 1, updated: 0, unchanged: 0, deleted: 0, failed: 0 };

function stageFrames(types: string[], fail: Record<string, string> = {}): Frame[] {
  const out: Frame[] = [];
  for (const step of types) {
    out.push({ event: "step", data: { step, status: "started", message: step } });
    if (fail[step]) {
      out.push({
        event: "error",
        data: {
          step,
          status: "failed",
          error: "Hypervisor request failed",
          detail: fail[step],
          upstream_status: 500,
        },
      });
    }
    out.push({
      event: "step",
      data: {
        step,
        status: "completed",
        result: { ...result, failed: fail[step] ? 1 : 0 },
        elapsed_ms: 12,
      },
    });
  }
  const errors = Object.entries(fail).map(([step, detail]) => ({ step, detail }));
  out.push({ event: "complete", data: errors.length ? { ok: false, errors } : { ok: true } });
  return out;
}

async function* replay(frames: Frame[], breakAfter?: number): AsyncIterable<Frame> {
  let i = 0;
  for (const f of frames) {
    if (breakAfter !== undefined && i++ === breakAfter) {
      throw new Error("the stream broke (connection reset)");
    }
    yield f;
  }
}

type Answerer = (path: string, call: number) => StageStream;

interface WorldOptions {
  health?: boolean[];
  renewOk?: boolean;
  /** The plugin's hypervisor endpoints (default: one, "pve", copy 5). */
  endpoints?: { id: number; name: string }[];
}

function world(answer: Answerer, options: WorldOptions = {}) {
  const endpoints = (options.endpoints ?? [{ id: 1, name: "pve" }]).map((e) => ({
    ...e,
    enabled: true,
    copyName: `${e.name} (inv:${e.id})`,
  }));
  const calls: string[] = [];
  /** Every stream path with its query. */
  const paths: string[] = [];
  const log: { level: string; message: string }[] = [];
  const records: StageRecord[] = [];
  let renewals = 0;
  let healthCalls = 0;
  const link = (key: string): BackendLink => ({
    url: "http://backend.test",
    health: () => {
      const ok = options.health?.[healthCalls++] ?? true;
      return Promise.resolve({
        ok,
        status: ok ? 200 : null,
        error: ok ? null : "GET /health: backend unreachable",
      });
    },
    stream: (path) => {
      calls.push(`${key} ${path.split("?")[0]}`);
      paths.push(path);
      return Promise.resolve(answer(path.split("?")[0], calls.length));
    },
    reconcile: () => Promise.resolve({ ok: true, status: 200, error: null, body: {} }),
    copies: () =>
      Promise.resolve({
        ok: true,
        status: 200,
        error: null,
        copies: endpoints.map((e) => ({ id: e.id === 1 ? 5 : 4 + e.id, name: e.copyName })),
      }),
  });
  const plugin: PluginSide = {
    backend: () => Promise.resolve(link("old-key")),
    renewBackendKey: () => {
      renewals++;
      return Promise.resolve(
        options.renewOk === false ? { error: "backend refused the key" } : link("new-key"),
      );
    },
    endpoints: () => Promise.resolve(endpoints),
    pushAll: () =>
      Promise.resolve([{ what: 'hypervisor endpoint "pve"', ok: true, error: null, status: 200 }]),
    recordLastSync: () => Promise.resolve(),
    secrets: () => Promise.resolve([]),
  };
  const slept: number[] = [];
  const run = (types: string[] = [...SYNC_TYPES], extra: Partial<JobSpec> = {}) => {
    const spec: JobSpec = {
      kind: "sync",
      sync_types: types,
      endpoint_ids: null,
      interval_minutes: null,
      requested_by: "test",
      ...extra,
    };
    return runSyncJob({
      jobId: 1,
      spec,
      plugin,
      journal: {
        log: (level, message) => Promise.resolve(void log.push({ level, message })),
        record: (r) => Promise.resolve(void records.push(r)),
        progress: () => Promise.resolve(),
      },
      signal: new AbortController().signal,
      timing: {
        healthBackoffMs: [11, 13, 17],
        retryBackoffMs: [5, 7],
        sleep: (ms: number) => Promise.resolve(void slept.push(ms)),
        now: Date.now,
      },
    });
  };
  return {
    calls,
    paths,
    log,
    records,
    run,
    renewals: () => renewals,
    /** The pauses the runner took, in ms, in order. */
    slept,
    healthCalls: () => healthCalls,
  };
}

const ok = (frames: Frame[]): StageStream => ({ ok: true, status: 200, events: replay(frames) });
const status = (code: number | null, detail = "nope"): StageStream => ({
  ok: false,
  reason: refusalOf(code),
  status: code,
  error: `GET http://backend.test/x: ${
    code === null ? "backend unreachable" : `HTTP ${code}: ${detail}`
  }`,
  body: code === null ? undefined : { detail },
});

Deno.test("runner: a full sync is one full-update stream with 13 records", async () => {
  const w = world(() => ok(stageFrames([...SYNC_TYPES])));
  const out = await w.run();
  assert.equal(out.status, "completed");
  assert.deepEqual(w.calls, ["old-key /full-update/stream"]);
  assert.deepEqual(w.records.map((r) => r.sync_type), SYNC_TYPES);
  assert.equal(w.records[0].runtime_seconds, 0.012);
});

Deno.test("runner: 401 renews the key once and retries with it; a second 401 errors", async () => {
  const w = world((_path, n) =>
    n === 1 ? status(401, "Invalid API key") : ok(stageFrames(["devices"]))
  );
  assert.equal((await w.run(["devices"])).status, "completed");
  assert.equal(w.renewals(), 1);
  assert.deepEqual(w.calls, [
    "old-key /dcim/devices/create/stream",
    "new-key /dcim/devices/create/stream",
  ]);

  const again = world(() => status(401, "Invalid API key"));
  const out = await again.run(["devices"]);
  assert.equal(out.status, "errored");
  assert.equal(again.renewals(), 1, "renewed once, not in a loop");
  assert.match(out.error, /401/);
});

Deno.test("runner: a broken full-update resumes with the stages not yet done, one stream each", async () => {
  const frames = stageFrames([...SYNC_TYPES]);
  const w = world((path, n) => {
    if (n === 1) return { ok: true, status: 200, events: replay(frames, 5) }; // devices, storage done; VMs started
    return ok(stageFrames([typeOf(path)]));
  });
  const out = await w.run();
  assert.equal(w.calls[0], "old-key /full-update/stream");
  assert.equal(w.calls[1], "old-key /virtualization/virtual-machines/create/stream");
  assert.equal(w.calls.length, 1 + 11, "the 11 stages not done, one call each");
  assert.ok(w.log.some((l) => /retry 1 of 2/.test(l.message) && /broke/.test(l.message)));
  assert.equal(out.status, "completed", out.error);
});

Deno.test("runner: an optional stage that fails is skipped with its cause; a required one fails the job", async () => {
  const w = world(() => ok(stageFrames([...SYNC_TYPES], { sdn: "GET /cluster/sdn: HTTP 501" })));
  const out = await w.run();
  assert.equal(out.status, "completed");
  const sdn = w.records.find((r) => r.sync_type === "sdn")!;
  assert.equal(sdn.result_summary.skipped, true);
  assert.match(sdn.result_summary.error!, /HTTP 501/);
  assert.ok(w.log.some((l) => l.level === "warning" && /^Skipped sdn/.test(l.message)));

  const bad = world(() =>
    ok(stageFrames([...SYNC_TYPES], { "vm-disks": "inventory refused the disk" }))
  );
  const failed = await bad.run();
  assert.equal(failed.status, "failed");
  assert.match(
    failed.error,
    /^vm-disks for "pve" failed: .*inventory refused the disk.* \(read from GET http:\/\/backend\.test\/full-update\/stream\?hypervisor_endpoint_ids=5\)$/s,
  );
  assert.equal(bad.records.length, 13, "the later stages still ran and are recorded");
});

Deno.test("runner: an optional stage whose call keeps failing is skipped and the rest go on", async () => {
  const w = world((path) =>
    path.includes("task-history") ? status(502, "bad gateway") : ok(stageFrames([typeOf(path)]))
  );
  const out = await w.run(["devices", "task-history"]);
  assert.equal(out.status, "completed");
  assert.equal(w.calls.filter((c) => c.includes("task-history")).length, 3, "two retries");
  assert.deepEqual(w.slept, [5, 7], "each retry waits its own backoff, in order");
  assert.equal(w.records.find((r) => r.sync_type === "task-history")!.result_summary.skipped, true);
});

Deno.test("runner: a backend that never gets healthy errors after the backoff, with the evidence", async () => {
  const w = world(() => ok(stageFrames(["devices"])), { health: [false, false, false, false] });
  const out = await w.run(["devices"]);
  assert.equal(out.status, "errored");
  assert.equal(w.healthCalls(), 4);
  assert.match(
    out.error,
    /Preflight: the backend is not ready after 4 checks: GET \/health: backend unreachable/,
  );
  assert.deepEqual(w.calls, [], "no stage was called");
  assert.deepEqual(w.slept, [11, 13, 17], "a growing pause between checks");
  // The job's log ends with the same reason, as an error line.
  assert.deepEqual(w.log.at(-1), { level: "error", message: out.error });

  const late = world(() => ok(stageFrames(["devices"])), { health: [false, false, true] });
  assert.equal((await late.run(["devices"])).status, "completed");
  assert.equal(late.healthCalls(), 3);
  assert.deepEqual(late.slept, [11, 13]);
});

Deno.test("runner: a 4xx is final (no retry)", async () => {
  const w = world(() => status(400, "No inventory endpoint found."));
  const out = await w.run(["devices"]);
  assert.equal(out.status, "errored");
  assert.equal(w.calls.length, 1);
  assert.match(
    out.error,
    /HTTP 400: No inventory endpoint found\. \(body: \{"detail":"No inventory endpoint found\."\}\)/,
  );
});

Deno.test("runner: a job's run options ride on every backend stream as query parameters", async () => {
  const w = world((path) => ok(stageFrames([typeOf(path)])));
  const out = await w.run(["devices", "vm-disks"], {
    sync_options: { overwrite_names: "false", stage_sdn: "false" },
  });
  assert.equal(out.status, "completed", out.error);
  assert.deepEqual(w.paths, [
    "/dcim/devices/create/stream?hypervisor_endpoint_ids=5&overwrite_names=false&stage_sdn=false",
    "/virtualization/virtual-machines/virtual-disks/create/stream?hypervisor_endpoint_ids=5&overwrite_names=false&stage_sdn=false",
  ]);
});

Deno.test("runner: a stream that ends without its complete frame is read again, whatever else it sent", async () => {
  const w = world((path, n) =>
    n === 1
      ? ok([
        { event: "step", data: { step: "devices", status: "started" } },
        { event: "keepalive", data: {} },
      ])
      : ok(stageFrames([typeOf(path)]))
  );
  const out = await w.run(["devices"]);
  assert.equal(out.status, "completed", out.error);
  assert.equal(w.calls.length, 2, "read again");
  assert.deepEqual(w.records.map((r) => r.sync_type), ["devices"]);
  assert.ok(
    w.log.some((l) =>
      l.level === "warning" &&
      l.message === 'devices for "pve": the stream ended before its complete frame; retry 1 of 2'
    ),
    JSON.stringify(w.log),
  );
});

Deno.test("runner: a complete frame with ok:false for a failure outside any stage is final, in the backend's words", async () => {
  const w = world(() =>
    ok([{
      event: "complete",
      data: {
        ok: false,
        errors: [{ step: "sync", error: "Hypervisor login failed", detail: "HTTP 401 from pve" }],
      },
    }])
  );
  const out = await w.run(["devices"]);
  assert.equal(out.status, "errored");
  assert.equal(w.calls.length, 1, "not retried");
  assert.equal(
    out.error,
    'devices for "pve": GET http://backend.test/dcim/devices/create/stream?hypervisor_endpoint_ids=5' +
      " → complete ok:false: Hypervisor login failed — HTTP 401 from pve",
  );
});

Deno.test("runner: a run the backend cancelled (it was shutting down) is read again", async () => {
  const w = world((path, n) =>
    n === 1
      ? ok([
        { event: "step", data: { step: "devices", status: "started" } },
        {
          event: "complete",
          data: { ok: false, errors: [{ step: "devices", error: "cancelled" }] },
        },
      ])
      : ok(stageFrames([typeOf(path)]))
  );
  const out = await w.run(["devices"]);
  assert.equal(out.status, "completed", out.error);
  assert.equal(w.calls.length, 2);
  assert.ok(
    w.log.some((l) =>
      /the backend cancelled the run \(shutting down\?\); retry 1 of 2$/.test(l.message)
    ),
    JSON.stringify(w.log),
  );
});

Deno.test("runner: endpoints run one after another: a failed one lets the next go on, an errored one stops the run", async () => {
  const two = [{ id: 1, name: "pve" }, { id: 2, name: "pve-b" }];
  // Copy 5 is "pve", copy 6 "pve-b".
  const both = world((path) => ok(stageFrames([typeOf(path)])), { endpoints: two });
  const fine = await both.run(["devices"]);
  assert.equal(fine.status, "completed");
  assert.deepEqual(fine.endpoints, [{ id: 1, ok: true }, { id: 2, ok: true }]);
  assert.deepEqual(both.paths, [
    "/dcim/devices/create/stream?hypervisor_endpoint_ids=5",
    "/dcim/devices/create/stream?hypervisor_endpoint_ids=6",
  ]);

  let calls = 0;
  const failedFirst = world(
    () => ok(stageFrames(["devices"], ++calls === 1 ? { devices: "HTTP 500" } : {})),
    { endpoints: two },
  );
  const failed = await failedFirst.run(["devices"]);
  assert.equal(failed.status, "failed");
  assert.deepEqual(failed.endpoints, [{ id: 1, ok: false }, { id: 2, ok: true }]);

  const erroredFirst = world(() => status(400, "bad scope"), { endpoints: two });
  const errored = await erroredFirst.run(["devices"]);
  assert.equal(errored.status, "errored");
  assert.deepEqual(errored.endpoints, [{ id: 1, ok: false }]);
  assert.equal(erroredFirst.calls.length, 1, "the second endpoint never started");
});
