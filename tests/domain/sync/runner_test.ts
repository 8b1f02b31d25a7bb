/**
 * What the runner tells a client (domain/sync/runner.ts, docs/sync.md "Progress and results"):
 * the `step` frames of each stage (started, progress, completed with its counts and message),
 * `error`, `conflict` and `edited` frames, and the one `complete` frame with its summary. The
 * stages here are hand-made ones that do exactly what each case needs, so every text and count
 * is the runner's own.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { runSync, type StageDef, type SyncEvent } from "../../../domain/sync/runner.ts";
import type { StageContext } from "../../../domain/sync/context.ts";
import type { SyncEndpoint } from "../../../domain/sync/ports.ts";
import { mergeOptions, optionsFromQuery } from "../../../domain/sync/options.ts";
import { FakeHypervisor, FakeInventory } from "./_fakes.ts";
import { noopMetrics } from "../../../infra/metrics.ts";
import type { SpanAttributes } from "../../../infra/tracing.ts";

const endpoint = (id: number, name: string): SyncEndpoint => ({
  id,
  name,
  ip: "10.0.0.1",
  port: 8006,
  use_https: true,
  verify_ssl: false,
  username: "root@pam",
});
const EAST = endpoint(1, "east");
const WEST = endpoint(2, "west");

const stage = (type: string, run: StageDef["run"]): StageDef => ({
  type,
  path: `/${type}/create`,
  summary: `Stage ${type}`,
  run,
});

/** Adds to the stage's counts as a stage does. */
const counts = (add: Partial<StageContext["result"]>) => (ctx: StageContext) => {
  for (const [k, v] of Object.entries(add)) {
    ctx.result[k as keyof StageContext["result"]] += v as number;
  }
  return Promise.resolve();
};

async function run(
  stages: StageDef[],
  options: Partial<Parameters<typeof runSync>[0]> = {},
) {
  const events: SyncEvent[] = [];
  const complete = await runSync({
    stages,
    endpoints: [EAST],
    hypervisor: () => new FakeHypervisor({}),
    inventory: new FakeInventory(),
    emit: (e) => {
      events.push(e);
    },
    signal: new AbortController().signal,
    now: () => 0,
    ...options,
  });
  const steps = events.filter((e) => e.event === "step").map((e) => e.data as any);
  const frames = (event: string) => events.filter((e) => e.event === event).map((e) => e.data);
  return { complete, events, steps, frames };
}

Deno.test("runner: each stage is framed started → completed with its counts; the summary adds them up", async () => {
  const { complete, steps, events } = await run([
    stage("one", counts({ created: 3, unchanged: 1 })),
    stage("two", counts({ updated: 2, deleted: 1, unchanged: 4 })),
  ], { endpoints: [EAST, WEST] });
  assert.deepEqual(steps.map((s) => [s.step, s.status, s.message]), [
    ["one", "started", "Stage one: east, west"],
    ["one", "completed", "Stage one: done"],
    ["two", "started", "Stage two: east, west"],
    ["two", "completed", "Stage two: done"],
  ]);
  // Two endpoints: each stage's counts are both endpoints' together.
  assert.deepEqual(steps.filter((s) => s.status === "completed").map((s) => s.result), [
    { created: 6, updated: 0, unchanged: 2, deleted: 0, failed: 0 },
    { created: 0, updated: 4, unchanged: 8, deleted: 2, failed: 0 },
  ]);
  assert.deepEqual(complete, {
    ok: true,
    message: "Sync complete: 6 created, 4 updated, 10 unchanged, 2 deleted",
    result: { created: 6, updated: 4, unchanged: 10, deleted: 2, failed: 0 },
    stages: [
      { step: "one", result: { created: 6, updated: 0, unchanged: 2, deleted: 0, failed: 0 } },
      { step: "two", result: { created: 0, updated: 4, unchanged: 8, deleted: 2, failed: 0 } },
    ],
  });
  assert.equal(events.at(-1)!.event, "complete");
  assert.equal(events.filter((e) => e.event === "complete").length, 1);
});

Deno.test("runner: no endpoint is nothing to sync, ok; a dry run says nothing was written", async () => {
  const none = await run([stage("one", counts({ created: 1 }))], { endpoints: [] });
  assert.equal(none.complete.ok, true);
  assert.equal(none.complete.message, "Nothing to sync: no enabled hypervisor endpoint");
  assert.equal(none.steps[0].message, "Stage one: no enabled endpoint");
  assert.equal(none.complete.result.created, 0);

  const dry = await run([stage("one", counts({ created: 2 }))], {
    syncOptions: mergeOptions(optionsFromQuery({ dry_run: "true" })),
  });
  assert.equal(dry.complete.dry_run, true);
  assert.equal(
    dry.complete.message,
    "Dry run, nothing written: Sync complete: 2 created, 0 updated, 0 unchanged, 0 deleted",
  );
  const real = await run([stage("one", counts({ created: 2 }))]);
  assert.equal(real.complete.dry_run, undefined);
});

Deno.test("runner: a stage that fails for one endpoint is an error frame naming it and what it wrote; the other endpoint's work counts", async () => {
  const failing = stage("one", (ctx) => {
    if (ctx.endpoint.id === WEST.id) {
      return Promise.reject(
        Object.assign(new Error("bulk write on dcim/devices/: HTTP 500"), {
          operation: "bulk write on",
          url: "http://inventory.test/api/dcim/devices/",
          status: 500,
          object: "device pve1",
          hint: "Look at the inventory's log.",
        }),
      );
    }
    ctx.result.created += 2;
    return Promise.resolve();
  });
  const hvFailing = stage("two", () =>
    Promise.reject(
      Object.assign(new Error("GET /nodes: HTTP 595"), {
        operation: "GET",
        url: "https://pve.test:8006/api2/json/nodes",
        status: 595,
      }),
    ));
  const plain = stage("three", () => Promise.reject(new Error("a bug")));
  const { complete, steps, frames } = await run([failing, hvFailing, plain], {
    endpoints: [EAST, WEST],
  });
  assert.equal(complete.ok, false);
  assert.equal(complete.message, "Sync finished with 5 error(s)");
  assert.deepEqual(frames("error"), complete.errors);
  const [devices, ...rest] = complete.errors!;
  assert.deepEqual(devices, {
    step: "one",
    status: "failed",
    error: "Inventory request failed",
    detail: 'one for endpoint 2 ("west") while writing device pve1: bulk write on ' +
      "dcim/devices/: HTTP 500",
    endpoint_id: 2,
    operation: "bulk write on",
    url: "http://inventory.test/api/dcim/devices/",
    upstream_status: 500,
    hint: "Look at the inventory's log.",
    object: "device pve1",
  });
  assert.deepEqual(rest.map((e: any) => [e.step, e.endpoint_id, e.error, e.upstream_status]), [
    ["two", 1, "Hypervisor request failed", 595],
    ["two", 2, "Hypervisor request failed", 595],
    ["three", 1, "Stage failed", null],
    ["three", 2, "Stage failed", null],
  ]);
  assert.equal(rest[2].detail, 'three for endpoint 1 ("east"): a bug');
  assert.deepEqual(
    steps.filter((s) => s.status === "completed").map((s) => [s.message, s.result]),
    [
      ["Stage one: failed for 1 endpoint(s)", {
        created: 2,
        updated: 0,
        unchanged: 0,
        deleted: 0,
        failed: 1,
      }],
      ["Stage two: failed for 2 endpoint(s)", {
        created: 0,
        updated: 0,
        unchanged: 0,
        deleted: 0,
        failed: 2,
      }],
      ["Stage three: failed for 2 endpoint(s)", {
        created: 0,
        updated: 0,
        unchanged: 0,
        deleted: 0,
        failed: 2,
      }],
    ],
  );
  assert.equal(complete.result.failed, 5);
});

Deno.test("runner: an endpoint that cannot be used is reported once, naming the stages it misses, and skipped", async () => {
  const ran: string[] = [];
  const login = stage("one", (ctx) => {
    ran.push(`one:${ctx.endpoint.name}`);
    if (ctx.endpoint.id === WEST.id) {
      return Promise.reject(
        Object.assign(new Error("login refused"), {
          url: "https://pve.test:8006/api2/json/access/ticket",
          status: 401,
          unusable: true,
        }),
      );
    }
    return Promise.resolve();
  });
  const later = (type: string) =>
    stage(type, (ctx) => {
      ran.push(`${type}:${ctx.endpoint.name}`);
      return Promise.resolve();
    });
  const { complete } = await run([login, later("two"), later("three")], {
    endpoints: [EAST, WEST],
  });
  assert.deepEqual(ran, ["one:east", "one:west", "two:east", "three:east"]);
  assert.equal(complete.errors!.length, 1);
  assert.equal(
    complete.errors![0].detail,
    'one for endpoint 2 ("west"): login refused (endpoint 2 is skipped for the rest of this ' +
      "run: two, three)",
  );
  // Unusable in the last stage: nothing is left to name.
  const { complete: last } = await run([later("zero"), login], { endpoints: [WEST] });
  assert.equal(last.errors![0].detail, 'one for endpoint 2 ("west"): login refused');
});

Deno.test("runner: refused objects past 20 a stage are counted, not framed; the 20th says so", async () => {
  const refusing = stage("one", (ctx) => {
    for (let i = 1; i <= 23; i++) {
      ctx.itemFailed(`object ${i}`, Object.assign(new Error("refused"), { status: 400 }));
    }
    return Promise.resolve();
  });
  const { complete, frames } = await run([refusing]);
  const errors = frames("error") as any[];
  assert.equal(errors.length, 20);
  assert.deepEqual(
    errors.map((e) => e.object),
    Array.from({ length: 20 }, (_, i) => `object ${i + 1}`),
  );
  assert.ok(errors.slice(0, 19).every((e) => !e.detail.includes("only counted")));
  assert.match(errors[19].detail, / \(further refused objects of this stage are only counted\)$/);
  assert.equal(complete.result.failed, 23);
  assert.equal(complete.message, "Sync finished with 20 error(s)");
});

Deno.test("runner: conflicts and edits are framed (20 a stage at most) and named in the summary", async () => {
  const holding = stage("one", (ctx) => {
    for (let i = 1; i <= 22; i++) ctx.itemConflict?.(`address ${i}`, "held by another");
    ctx.itemEdited?.("vm web", "edited while the sync ran");
    ctx.result.unchanged += 1;
    return Promise.resolve();
  });
  const { complete, frames } = await run([holding]);
  assert.equal(frames("conflict").length, 20);
  assert.deepEqual(frames("conflict")[0], {
    step: "one",
    endpoint_id: 1,
    object: "address 1",
    detail: "held by another",
  });
  assert.deepEqual(complete.conflicts, frames("conflict"));
  assert.deepEqual(complete.edited, frames("edited"));
  assert.equal(complete.ok, true);
  assert.equal(
    complete.message,
    "Sync complete: 0 created, 0 updated, 1 unchanged, 0 deleted, 20 held by another owner " +
      "(see conflicts), 1 edited during the run (see edited)",
  );
  const quiet = await run([stage("one", counts({ unchanged: 1 }))]);
  assert.equal(quiet.complete.conflicts, undefined);
  assert.equal(quiet.complete.edited, undefined);
});

Deno.test("runner: an optional stage switched off is framed as skipped; an endpoint whose policy leaves it out is passed over", async () => {
  const ran: string[] = [];
  const sdn = stage("sdn", (ctx) => {
    ran.push(ctx.endpoint.name);
    ctx.result.created += 1;
    return Promise.resolve();
  });
  const off = await run([sdn], {
    syncOptions: mergeOptions(optionsFromQuery({ stage_sdn: "false" })),
  });
  assert.deepEqual(ran, []);
  assert.deepEqual(off.steps, [
    { step: "sdn", status: "started", message: "Stage sdn: skipped" },
    {
      step: "sdn",
      status: "completed",
      message: "Stage sdn: skipped (stage_sdn=false)",
      result: { created: 0, updated: 0, unchanged: 0, deleted: 0, failed: 0 },
      elapsed_ms: 0,
    },
  ]);
  assert.deepEqual(off.complete.stages, [
    { step: "sdn", result: { created: 0, updated: 0, unchanged: 0, deleted: 0, failed: 0 } },
  ]);
  const westOff = mergeOptions(optionsFromQuery({ stage_sdn: "false" }));
  const some = await run([sdn], {
    endpoints: [EAST, WEST],
    syncOptionsFor: (e) => (e.id === WEST.id ? westOff : mergeOptions()),
  });
  assert.deepEqual(ran, ["east"]);
  assert.equal(some.complete.result.created, 1);
  // A stage that is not optional runs whatever the options say of the optional ones.
  ran.length = 0;
  await run([stage("devices", sdn.run)], { syncOptions: westOff });
  assert.deepEqual(ran, ["east"]);
});

Deno.test("runner: progress frames are spaced by the clock, the first and last of a count always sent", async () => {
  let clock = 10_000;
  const counting = stage("one", (ctx) => {
    for (let i = 0; i <= 10; i++) {
      clock += 125;
      ctx.progress(i, 10, `${i} of 10`);
    }
    return Promise.resolve();
  });
  const { steps } = await run([counting], { now: () => clock, progressEveryMs: 250 });
  const progress = steps.filter((s) => s.status === "progress");
  // 0 and 10 always; between them one frame once 250 ms of the stage's clock have passed.
  assert.deepEqual(progress.map((p) => p.progress.current), [0, 2, 4, 6, 8, 10]);
  assert.deepEqual(progress[1], {
    step: "one",
    status: "progress",
    message: "east: 2 of 10",
    progress: { current: 2, total: 10 },
  });
  const completed = steps.find((s) => s.status === "completed");
  assert.equal(completed.elapsed_ms, 1375, "the stage's own time");
  // No spacing asked for: every frame goes.
  const all = await run([counting], { now: () => clock, progressEveryMs: 0 });
  assert.equal(all.steps.filter((s) => s.status === "progress").length, 11);
});

Deno.test("runner: an abort during a stage ends the run cancelled: the stage is neither completed nor counted, no endpoint or stage after it runs", async () => {
  const controller = new AbortController();
  const ran: string[] = [];
  const aborting = stage("two", (ctx) => {
    ran.push(`two:${ctx.endpoint.name}`);
    ctx.result.created += 5;
    controller.abort();
    return Promise.resolve();
  });
  const later = stage("three", (ctx) => {
    ran.push(`three:${ctx.endpoint.name}`);
    return Promise.resolve();
  });
  const { complete, steps } = await run([stage("one", counts({ created: 1 })), aborting, later], {
    endpoints: [EAST, WEST],
    signal: controller.signal,
  });
  assert.deepEqual(ran, ["two:east"]);
  assert.deepEqual(steps.map((s) => [s.step, s.status]), [
    ["one", "started"],
    ["one", "completed"],
    ["two", "started"],
  ]);
  assert.equal(complete.ok, false);
  assert.equal(complete.message, "Sync cancelled");
  assert.deepEqual(complete.stages.map((s) => s.step), ["one"]);
  assert.deepEqual(complete.result, {
    created: 2,
    updated: 0,
    unchanged: 0,
    deleted: 0,
    failed: 0,
  });
  assert.deepEqual(complete.errors, [{
    step: "sync",
    status: "failed",
    error: "cancelled",
    detail: "The sync was cancelled (client disconnected or server shutting down).",
  }]);

  // A stage that throws because of the abort is no failure of its own either.
  const second = new AbortController();
  const throwing = stage("one", () => {
    second.abort();
    return Promise.reject(new DOMException("aborted", "AbortError"));
  });
  const thrown = await run([throwing, later], { signal: second.signal });
  assert.equal(thrown.complete.message, "Sync cancelled");
  assert.deepEqual(thrown.complete.errors!.map((e) => e.error), ["cancelled"]);
  assert.equal(thrown.frames("error").length, 0);

  // Aborted before the run: no stage starts.
  const before = new AbortController();
  before.abort();
  const none = await run([later], { signal: before.signal });
  assert.deepEqual(none.steps, []);
  assert.equal(none.complete.message, "Sync cancelled");
});

Deno.test("runner: metrics and trace spans get each stage's counts and time and the run's outcome", async () => {
  let clock = 5_000;
  const ticking = (type: string, add: Partial<StageContext["result"]>, fail = false) =>
    stage(type, (ctx) => {
      clock += 2_000;
      for (const [k, v] of Object.entries(add)) {
        ctx.result[k as keyof StageContext["result"]] += v as number;
      }
      return fail ? Promise.reject(new Error("broken")) : Promise.resolve();
    });
  const seen: unknown[][] = [];
  const metrics = {
    ...noopMetrics,
    syncStage: (...a: unknown[]) => void seen.push(["stage", ...a]),
    syncRun: (...a: unknown[]) => void seen.push(["run", ...a]),
  };
  const spans: { name: string; attributes: SpanAttributes; failed?: string; ended: boolean }[] = [];
  const open = (name: string, attributes: SpanAttributes) => {
    const span = {
      name,
      attributes: { ...attributes },
      failed: undefined as string | undefined,
      ended: false,
    };
    spans.push(span);
    return {
      set: (more: SpanAttributes) => void Object.assign(span.attributes, more),
      fail: (message: string) => void (span.failed = message),
      end: () => void (span.ended = true),
    };
  };
  const tracer = {
    span: async <T>(name: string, a: SpanAttributes, work: (s: any) => Promise<T>) => {
      const s = open(name, a);
      try {
        return await work(s);
      } finally {
        s.end();
      }
    },
    start: open,
  };
  const { complete } = await run(
    [ticking("one", { created: 2, unchanged: 1 }), ticking("two", { updated: 1 }, true)],
    { now: () => clock, metrics, tracer },
  );
  assert.equal(complete.ok, false);
  assert.deepEqual(seen, [
    ["stage", "one", 2, { created: 2, updated: 0, unchanged: 1, deleted: 0, failed: 0 }, false],
    ["stage", "two", 2, { created: 0, updated: 1, unchanged: 0, deleted: 0, failed: 1 }, false],
    ["run", "failed", 4, false],
  ]);
  assert.deepEqual(spans.map((s) => [s.name, s.failed, s.ended]), [
    ["sync.run", "Sync finished with 1 error(s)", true],
    ["sync.stage one", undefined, true],
    ["sync.stage two", "1 failed", true],
  ]);
  assert.deepEqual(spans[0].attributes, {
    "bridgebox.sync.stages": "one,two",
    "bridgebox.sync.endpoints": 1,
    "bridgebox.sync.dry_run": false,
    "bridgebox.sync.created": 2,
    "bridgebox.sync.updated": 1,
    "bridgebox.sync.failed": 1,
  });
  assert.deepEqual(spans[1].attributes, {
    "bridgebox.sync.stage": "one",
    "bridgebox.sync.created": 2,
    "bridgebox.sync.updated": 0,
    "bridgebox.sync.unchanged": 1,
    "bridgebox.sync.deleted": 0,
    "bridgebox.sync.failed": 0,
  });

  // A run that goes well is no failed span; a cancelled one says so; a dry run is labelled.
  seen.length = 0;
  spans.length = 0;
  const controller = new AbortController();
  await run([
    ticking("one", {}),
    stage("two", () => {
      controller.abort();
      return Promise.resolve();
    }),
  ], {
    now: () => clock,
    metrics,
    tracer,
    signal: controller.signal,
    syncOptions: mergeOptions(optionsFromQuery({ dry_run: "true" })),
  });
  assert.deepEqual(seen.map((s) => [s[0], s[1], s.at(-1)]), [
    ["stage", "one", true],
    ["run", "cancelled", true],
  ]);
  assert.deepEqual(spans.map((s) => [s.name, s.failed, s.ended]), [
    ["sync.run", "Dry run, nothing written: Sync cancelled", true],
    ["sync.stage one", undefined, true],
    ["sync.stage two", "cancelled", true],
  ]);
  spans.length = 0;
  await run([ticking("one", {})], { now: () => clock, tracer });
  assert.deepEqual(spans.map((s) => s.failed), [undefined, undefined]);
});

Deno.test("runner: an emit that answers later (a slow reader) has every frame of a stage delivered before the stage's completed frame", async () => {
  const delivered: string[] = [];
  const calls: string[] = [];
  const name = (e: SyncEvent) =>
    `${e.event}:${(e.data as any).status ?? ""}:${(e.data as any).object ?? ""}`;
  /** Each frame is taken at once and delivered a few turns of the microtask queue later. */
  const emit = (e: SyncEvent) => {
    calls.push(`${name(e)} (delivered before: ${delivered.length})`);
    let p = Promise.resolve();
    for (let i = 0; i < 5; i++) p = p.then(() => {});
    return p.then(() => {
      delivered.push(name(e));
    });
  };
  const complete = await runSync({
    stages: [
      stage("one", (ctx) => {
        ctx.progress(0, 2, "start");
        ctx.itemFailed("object a", new Error("refused"));
        ctx.itemConflict("object b", "held");
        ctx.progress(2, 2, "end");
        return Promise.resolve();
      }),
    ],
    endpoints: [EAST],
    hypervisor: () => new FakeHypervisor({}),
    inventory: new FakeInventory(),
    emit,
    signal: new AbortController().signal,
    now: () => 0,
  });
  assert.equal(complete.ok, false);
  const completedCall = calls.find((c) => c.startsWith("step:completed"))!;
  // started, two progress frames, an error and a conflict: all delivered before it is sent.
  assert.equal(completedCall, "step:completed: (delivered before: 5)");
  assert.deepEqual(delivered.slice(0, 5).sort(), [
    "conflict::object b",
    "error:failed:object a",
    "step:progress:",
    "step:progress:",
    "step:started:",
  ]);
});
