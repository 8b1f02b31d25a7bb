/**
 * The sync's figures on `GET /metrics` (docs/metrics.md), on one real socket: a full update over
 * SSE, `/metrics` read with the Prometheus parser before and after, and the objects counted by
 * kind equal to what the run's `complete` frame reported.
 */
import assert from "node:assert/strict";
import { addInventoryCopy, KEY, syncWorld } from "./_sync_harness.ts";
import { type Family, HAS_PROMETHEUS_PARSER, parseExposition, valueOf } from "../_prometheus.ts";
import { STAGES } from "../../domain/sync/runner.ts";

const OUTCOMES = ["created", "updated", "unchanged", "deleted", "failed"] as const;

async function scrape(base: string): Promise<Family[]> {
  const res = await fetch(`${base}/metrics`, { headers: { "x-service-api-key": KEY } });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return parseExposition(text);
}

/** Per stage and outcome: how much the counter moved between two scrapes. */
function objectsMoved(before: Family[], after: Family[]) {
  const out: Record<string, Record<string, number>> = {};
  for (const { type } of STAGES) {
    out[type] = {};
    for (const outcome of OUTCOMES) {
      const labels = { stage: type, outcome };
      out[type][outcome] = valueOf(after, "bridgebox_sync_objects_total", labels) -
        valueOf(before, "bridgebox_sync_objects_total", labels);
    }
  }
  return out;
}

Deno.test({
  name: "metrics e2e: a full update moves the object counters by what its complete frame reports",
  ignore: !HAS_PROMETHEUS_PARSER,
  async fn() {
    const world = await syncWorld("nodes=2,vms=5,cts=2,storages=2", {
      HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
    });
    try {
      await addInventoryCopy(world);
      await world.addHypervisorCopy("lab");
      const before = await scrape(world.base);
      // The run's first hypervisor call waits until the test has read the open-streams gauge.
      const reached = Promise.withResolvers<void>();
      const gate = Promise.withResolvers<void>();
      const transport = world.deps.fetch;
      let held = false;
      world.deps.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
        const url = input instanceof Request ? input.url : String(input);
        if (!held && url.includes("/api2/json/")) {
          held = true;
          reached.resolve();
          await gate.promise;
        }
        return transport(input, init);
      }) as typeof fetch;
      const streaming = world.stream("/full-update/stream");
      await reached.promise;
      const during = await scrape(world.base);
      gate.resolve();
      const frames = await streaming;
      world.deps.fetch = transport;
      assert.equal(valueOf(during, "bridgebox_open_streams", { kind: "sse" }), 1);
      const complete = frames.find((f) => f.event === "complete")!.data;
      assert.equal(complete.ok, true, JSON.stringify(complete.errors));
      assert.ok(complete.result.created > 0, "the first run creates objects");

      const after = await scrape(world.base);
      const reported: Record<string, Record<string, number>> = {};
      for (const { step, result } of complete.stages) {
        reported[step] = Object.fromEntries(OUTCOMES.map((o) => [o, result[o]]));
      }
      assert.deepEqual(objectsMoved(before, after), reported);
      // One run, ok; each of the 13 stages observed once.
      assert.equal(
        valueOf(after, "bridgebox_sync_runs_total", { outcome: "ok", dry_run: "false" }) -
          valueOf(before, "bridgebox_sync_runs_total", { outcome: "ok", dry_run: "false" }),
        1,
      );
      for (const { type } of STAGES) {
        assert.equal(
          valueOf(after, "bridgebox_sync_stage_duration_seconds_count", { stage: type }) -
            valueOf(before, "bridgebox_sync_stage_duration_seconds_count", { stage: type }),
          1,
          type,
        );
      }
      assert.equal(valueOf(after, "bridgebox_open_streams", { kind: "sse" }), 0);

      // A second run over the same cluster: the same objects, now unchanged, counted on top.
      const second = await world.stream("/full-update/stream");
      const again = second.find((f) => f.event === "complete")!.data;
      assert.equal(again.ok, true, JSON.stringify(again.errors));
      const third = await scrape(world.base);
      const reportedAgain: Record<string, Record<string, number>> = {};
      for (const { step, result } of again.stages) {
        reportedAgain[step] = Object.fromEntries(OUTCOMES.map((o) => [o, result[o]]));
      }
      assert.deepEqual(objectsMoved(after, third), reportedAgain);
      assert.ok(again.result.unchanged > 0, JSON.stringify(again.result));
    } finally {
      await world.close();
    }
  },
});

Deno.test({
  name: "metrics e2e: a dry run is counted as a run, its objects are not",
  ignore: !HAS_PROMETHEUS_PARSER,
  async fn() {
    const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", {
      HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
    });
    try {
      await addInventoryCopy(world);
      await world.addHypervisorCopy("lab");
      const before = await scrape(world.base);
      const frames = await world.stream("/full-update/stream?dry_run=true");
      const complete = frames.find((f) => f.event === "complete")!.data;
      assert.equal(complete.dry_run, true);
      assert.ok(complete.result.created > 0, "the plan would create objects");
      const after = await scrape(world.base);
      assert.equal(valueOf(after, "bridgebox_sync_runs_total", { dry_run: "true" }), 1);
      const moved = Object.values(objectsMoved(before, after)).flatMap((o) => Object.values(o));
      assert.deepEqual(moved.filter((n) => n !== 0), []);
    } finally {
      await world.close();
    }
  },
});

Deno.test({
  name: "metrics e2e: a stage stream over WebSocket is an open websocket stream while it runs",
  ignore: !HAS_PROMETHEUS_PARSER,
  async fn() {
    const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", {
      HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
    });
    try {
      await addInventoryCopy(world);
      await world.addHypervisorCopy("lab");
      // The run's first hypervisor call waits until the test has read the gauge.
      const reached = Promise.withResolvers<void>();
      const gate = Promise.withResolvers<void>();
      const transport = world.deps.fetch;
      let held = false;
      world.deps.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
        const url = input instanceof Request ? input.url : String(input);
        if (!held && url.includes("/api2/json/")) {
          held = true;
          reached.resolve();
          await gate.promise;
        }
        return transport(input, init);
      }) as typeof fetch;
      const socket = new WebSocket(`ws://127.0.0.1:${world.port}/full-update/ws`);
      const frames: { event: string; data: { ok?: boolean } }[] = [];
      const closed = new Promise<number>((resolve) => socket.onclose = (e) => resolve(e.code));
      socket.onopen = () => socket.send(JSON.stringify({ api_key: KEY }));
      socket.onmessage = (e) => frames.push(JSON.parse(String(e.data)));
      await reached.promise;
      const during = await scrape(world.base);
      assert.equal(valueOf(during, "bridgebox_open_streams", { kind: "websocket" }), 1);
      gate.resolve();
      assert.equal(await closed, 1000);
      world.deps.fetch = transport;
      assert.equal(frames.at(-1)?.event, "complete");
      assert.equal(frames.at(-1)?.data.ok, true, JSON.stringify(frames.at(-1)));
      const after = await scrape(world.base);
      assert.equal(valueOf(after, "bridgebox_open_streams", { kind: "websocket" }), 0);
      assert.equal(valueOf(after, "bridgebox_sync_runs_total", { outcome: "ok" }), 1);
    } finally {
      await world.close();
    }
  },
});
