// deno-lint-ignore-file no-explicit-any
/**
 * The job runner over fake ports: retries, key renewal, optional stages, a stream that
 * breaks mid-run, in-band failures, the preflight's health backoff.
 */
import assert from "node:assert/strict";
import { runSyncJob, runSyncPart, type StageRecord } from "../../../domain/jobs/runner.ts";
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
  endpoints?: { id: number; name: string; enabled?: boolean }[];
  /** Endpoints whose backend copy is missing (their push failed). */
  withoutCopy?: number[];
  /** Why the plugin has no backend link (no backend endpoint record), if so. */
  noBackend?: string;
  /** The run's signal (default: never aborted). */
  signal?: AbortSignal;
  /** The run's clock (default: the wall clock). */
  now?: () => number;
}

function world(answer: Answerer, options: WorldOptions = {}) {
  const endpoints = (options.endpoints ?? [{ id: 1, name: "pve" }]).map((e) => ({
    ...e,
    enabled: e.enabled ?? true,
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
      // A runner that retries or renews without end fails the test instead of hanging it.
      if (calls.length >= 100) throw new Error("runaway: over 100 stream calls");
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
        copies: endpoints.filter((e) => !options.withoutCopy?.includes(e.id))
          .map((e) => ({ id: e.id === 1 ? 5 : 4 + e.id, name: e.copyName })),
      }),
  });
  const plugin: PluginSide = {
    backend: () =>
      Promise.resolve(options.noBackend ? { error: options.noBackend } : link("old-key")),
    renewBackendKey: () => {
      if (++renewals > 10) throw new Error("runaway: over 10 key renewals");
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
  /** The live frames the runner passed on, in order. */
  const progress: Record<string, unknown>[] = [];
  const run = (types: string[] = [...SYNC_TYPES], extra: Partial<JobSpec> = {}) => {
    const spec: JobSpec = {
      kind: "sync",
      sync_types: types,
      endpoint_ids: null,
      interval_minutes: null,
      requested_by: "test",
      ...extra,
    };
    return runSyncJob({ jobId: 1, spec, ...shared() });
  };
  const shared = () => ({
    plugin,
    journal: {
      log: (level: string, message: string) => Promise.resolve(void log.push({ level, message })),
      record: (r: StageRecord) => Promise.resolve(void records.push(r)),
      progress: (frame: Record<string, unknown>) => Promise.resolve(void progress.push(frame)),
    },
    signal: options.signal ?? new AbortController().signal,
    timing: {
      healthBackoffMs: [11, 13, 17],
      retryBackoffMs: [5, 7],
      sleep: (ms: number) => Promise.resolve(void slept.push(ms)),
      now: options.now ?? Date.now,
    },
  });
  /** One endpoint of a job, as another process runs it. */
  const part = (endpointId: number, types: string[] = ["devices"]) =>
    runSyncPart({
      spec: {
        kind: "sync",
        sync_types: types,
        endpoint_ids: null,
        interval_minutes: null,
        requested_by: "test",
      },
      endpointId,
      ...shared(),
    });
  return {
    calls,
    paths,
    log,
    records,
    run,
    part,
    renewals: () => renewals,
    /** The pauses the runner took, in ms, in order. */
    slept,
    healthCalls: () => healthCalls,
    progress,
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
  assert.equal(out.error, "The backend rejected the renewed key too (HTTP 401).");
  // The endpoint's log says why it stopped, as an error line.
  assert.ok(
    again.log.some((l) => l.level === "error" && l.message === out.error),
    JSON.stringify(again.log),
  );
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
  // The log says it was skipped, with the request and the answer.
  assert.deepEqual(w.log.at(-1), {
    level: "warning",
    message:
      'Skipped task-history for "pve": GET http://backend.test/virtualization/virtual-machines/task-history/create/stream' +
      "?hypervisor_endpoint_ids=5 → GET http://backend.test/x: HTTP 502: bad gateway " +
      '(body: {"detail":"bad gateway"})',
  });
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
  // The run's log ends with the same evidence, as an error line.
  assert.deepEqual(w.log.at(-1), { level: "error", message: out.error });
});

Deno.test("runner: a stream that breaks after its last stage but before its complete frame is done", async () => {
  const frames = stageFrames(["devices"]);
  const w = world(() => ({ ok: true, status: 200, events: replay(frames, frames.length - 1) }));
  const out = await w.run(["devices"]);
  assert.equal(out.status, "completed", out.error);
  assert.equal(w.calls.length, 1, "nothing left to read again");
  assert.deepEqual(w.records.map((r) => r.sync_type), ["devices"]);
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

Deno.test("runner: an endpoint without a backend copy errors, and its log says which and why", async () => {
  const w = world(() => ok(stageFrames(["devices"])), {
    endpoints: [{ id: 1, name: "pve" }, { id: 7, name: "lost" }],
    withoutCopy: [7],
  });
  const out = await w.run(["devices"]);
  const why = 'endpoint 7 ("lost") has no copy on the backend (its push failed; see the ' +
    "preflight lines)";
  assert.deepEqual([out.status, out.error], ["errored", why]);
  assert.deepEqual(out.endpoints, [{ id: 1, ok: true }, { id: 7, ok: false }]);
  assert.deepEqual(w.log.filter((l) => l.level === "error"), [{ level: "error", message: why }]);
});

Deno.test("runner: a completed stage without a result counts zeros (never a crash)", async () => {
  const w = world(() =>
    ok([
      { event: "step", data: { step: "devices", status: "started" } },
      { event: "step", data: { step: "devices", status: "completed", result: null } },
      { event: "complete", data: { ok: true } },
    ])
  );
  const out = await w.run(["devices"]);
  assert.equal(out.status, "completed", out.error);
  assert.deepEqual(w.records[0].result_summary, {
    created: 0,
    updated: 0,
    unchanged: 0,
    deleted: 0,
    failed: 0,
  });
});

Deno.test("runner: an error frame's detail is kept whole up to 600 characters, cut with an ellipsis past that", async () => {
  for (const [length, kept] of [[600, "d".repeat(600)], [601, `${"d".repeat(600)}…`]] as const) {
    const w = world(() => ok(stageFrames(["devices"], { devices: "d".repeat(length) })));
    const out = await w.run(["devices"]);
    assert.equal(out.status, "failed");
    assert.ok(out.error.includes(` — ${kept} — upstream status 500 (read from`), out.error);
  }
});

Deno.test("runner: a job for chosen endpoints runs those; one deleted or disabled since is an error naming it", async () => {
  const endpoints = [
    { id: 1, name: "pve" },
    { id: 2, name: "pve-b" },
    { id: 3, name: "off", enabled: false },
  ];
  const chosen = world((path) => ok(stageFrames([typeOf(path)])), { endpoints });
  const out = await chosen.run(["devices"], { endpoint_ids: [2] });
  assert.equal(out.status, "completed", out.error);
  assert.deepEqual(out.endpoints, [{ id: 2, ok: true }]);
  assert.deepEqual(chosen.paths, ["/dcim/devices/create/stream?hypervisor_endpoint_ids=6"]);

  // None chosen: every enabled one, the disabled one left out.
  const every = world((path) => ok(stageFrames([typeOf(path)])), { endpoints });
  assert.deepEqual((await every.run(["devices"])).endpoints, [{ id: 1, ok: true }, {
    id: 2,
    ok: true,
  }]);

  for (
    const [ids, error] of [
      [[2, 9], "Hypervisor endpoint 9 no longer exists."],
      [[3], 'Hypervisor endpoint 3 ("off") is disabled.'],
    ] as const
  ) {
    const w = world((path) => ok(stageFrames([typeOf(path)])), { endpoints });
    const refused = await w.run(["devices"], { endpoint_ids: [...ids] });
    assert.deepEqual([refused.status, refused.error], ["errored", error]);
    assert.deepEqual(w.calls, [], "nothing ran");
    assert.deepEqual(w.log.at(-1), { level: "error", message: error });
  }
});

Deno.test("runner: with no enabled endpoint the job completes with a warning, and runs nothing", async () => {
  const w = world(() => ok(stageFrames(["devices"])), {
    endpoints: [{ id: 1, name: "pve", enabled: false }],
  });
  const out = await w.run(["devices"]);
  assert.deepEqual([out.status, out.error, out.endpoints], ["completed", "", []]);
  assert.deepEqual(w.log.at(-1), {
    level: "warning",
    message: "No enabled hypervisor endpoint: nothing to sync.",
  });
  assert.deepEqual(w.calls, []);
});

Deno.test("runner: live frames carry the endpoint; error frames are passed on as errors", async () => {
  const w = world(() => ok(stageFrames(["devices"], { devices: "HTTP 500" })));
  await w.run(["devices"]);
  assert.deepEqual(w.progress.map((f) => [f.event ?? "step", f.status, f.endpoint_id]), [
    ["step", "started", 1],
    ["error", "failed", 1],
    ["step", "completed", 1],
  ]);
});

Deno.test("runner: a stage without elapsed_ms is timed from its start frame to its end frame", async () => {
  let t = 1_000_000;
  async function* frames(): AsyncIterable<Frame> {
    yield { event: "step", data: { step: "devices", status: "started" } };
    t += 2_500;
    yield { event: "step", data: { step: "devices", status: "completed", result } };
    yield { event: "complete", data: { ok: true } };
  }
  const w = world(() => ({ ok: true, status: 200, events: frames() }), { now: () => t });
  assert.equal((await w.run(["devices"])).status, "completed");
  assert.equal(w.records[0].runtime_seconds, 2.5);
});

Deno.test("runner: a stage the backend counts failures for fails the job even without an error frame, and says so", async () => {
  const w = world(() =>
    ok([
      { event: "step", data: { step: "devices", status: "started" } },
      {
        event: "step",
        data: { step: "devices", status: "completed", result: { ...result, failed: 2 } },
      },
      { event: "step", data: { step: "sync", status: "completed", result } },
      { event: "complete", data: { ok: false, errors: [] } },
    ])
  );
  const out = await w.run(["devices"]);
  assert.equal(out.status, "failed");
  assert.match(out.error, /^devices for "pve" failed: the backend counted failures \(read from /);
  assert.deepEqual(w.log.filter((l) => l.level === "error"), [{
    level: "error",
    message: 'devices for "pve" failed (1 created, 0 updated, 0 unchanged, 0 deleted, 2 failed): ' +
      "the backend counted failures",
  }]);
  // A step that is no stage of the call (the run's own "sync" step) is not recorded.
  assert.deepEqual(w.records.map((r) => r.sync_type), ["devices"]);
});

Deno.test("runner: a full update whose complete frame names a failure of no stage, after some stages, is final", async () => {
  const w = world(() =>
    ok([
      { event: "step", data: { step: "devices", status: "started" } },
      { event: "step", data: { step: "devices", status: "completed", result } },
      {
        event: "complete",
        data: { ok: false, errors: [{ step: "sync", error: "Inventory write failed" }] },
      },
    ])
  );
  const out = await w.run();
  assert.equal(out.status, "errored");
  assert.equal(w.calls.length, 1, "not retried");
  assert.match(
    out.error,
    /^storage for "pve": GET http:\/\/backend\.test\/full-update\/stream\?hypervisor_endpoint_ids=5 → complete ok:false: Inventory write failed$/,
  );
});

Deno.test("runner: a full update that ends after a required stage failed fails with that stage's cause", async () => {
  const w = world(() =>
    ok([
      { event: "step", data: { step: "devices", status: "started" } },
      { event: "error", data: { step: "devices", error: "Inventory refused a device" } },
      {
        event: "step",
        data: { step: "devices", status: "completed", result: { ...result, failed: 1 } },
      },
      {
        event: "complete",
        data: { ok: false, errors: [{ step: "devices", error: "Inventory refused a device" }] },
      },
    ])
  );
  const out = await w.run();
  assert.equal(out.status, "failed");
  assert.match(out.error, /^devices for "pve" failed: Inventory refused a device \(read from /);
});

Deno.test("runner: a run stopped mid-stream ends errored with the reason, without retrying", async () => {
  const stop = new AbortController();
  async function* frames(): AsyncIterable<Frame> {
    yield { event: "step", data: { step: "devices", status: "started" } };
    stop.abort(new Error("this process lost the run lease"));
    throw new Error("the stream was closed");
  }
  const w = world(() => ({ ok: true, status: 200, events: frames() }), { signal: stop.signal });
  const out = await w.run(["devices"]);
  assert.deepEqual([out.status, out.error], [
    "errored",
    "Stopped: this process lost the run lease",
  ]);
  assert.equal(w.calls.length, 1);
  assert.ok(!w.log.some((l) => /retry/.test(l.message)), JSON.stringify(w.log));
  assert.deepEqual(w.log.at(-1), { level: "error", message: out.error });
});

Deno.test("runner: without a backend link the run errors at preflight with the reason, and calls nothing", async () => {
  const w = world(() => ok(stageFrames(["devices"])), {
    noBackend: "no backend endpoint is configured",
  });
  const out = await w.run(["devices"]);
  assert.deepEqual([out.status, out.error], [
    "errored",
    "Preflight: no backend endpoint is configured",
  ]);
  assert.deepEqual([w.calls, w.healthCalls()], [[], 0]);
});

Deno.test("runner: a key renewal the plugin cannot make errors with its reason", async () => {
  const w = world(() => status(401, "Invalid API key"), { renewOk: false });
  const out = await w.run(["devices"]);
  assert.deepEqual([out.status, out.error], [
    "errored",
    "Renewing the backend key failed: backend refused the key",
  ]);
  assert.equal(w.calls.length, 1);
});

Deno.test("runner: a part run by another process runs its endpoint's stages on its copy; a missing endpoint or backend is its error", async () => {
  const endpoints = [{ id: 1, name: "pve" }, { id: 2, name: "pve-b" }];
  const w = world((path) => ok(stageFrames([typeOf(path)])), { endpoints });
  assert.deepEqual(await w.part(2), { id: 2, failure: null });
  assert.deepEqual(w.paths, ["/dcim/devices/create/stream?hypervisor_endpoint_ids=6"]);
  assert.deepEqual(w.records.map((r) => [r.sync_type, r.endpoint_id]), [["devices", 2]]);

  const gone = world(() => ok(stageFrames(["devices"])), { endpoints });
  const error = "Hypervisor endpoint 9 no longer exists.";
  assert.deepEqual(await gone.part(9), { id: 9, failure: { outcome: "errored", error } });
  assert.deepEqual(gone.log.at(-1), { level: "error", message: error });
  assert.deepEqual(gone.calls, []);

  const alone = world(() => ok(stageFrames(["devices"])), { noBackend: "no backend endpoint" });
  assert.deepEqual(await alone.part(1), {
    id: 1,
    failure: { outcome: "errored", error: "Preflight: no backend endpoint" },
  });
});
