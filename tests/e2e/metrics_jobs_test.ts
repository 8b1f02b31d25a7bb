/**
 * Jobs in the metrics and as spans (docs/metrics.md): a sync job run through the plugin API to its
 * end is counted as finished with its duration and runs inside a `job.sync` span (read from a
 * recording tracer; tests/e2e/otel_test.ts shows Deno exporting the same API's spans); a job
 * scheduled for later is in the `bridgebox_jobs` gauge.
 */
import assert from "node:assert/strict";
import { jobsWorld, P } from "./_jobs_world.ts";
import { HAS_PROMETHEUS_PARSER, parseExposition, valueOf } from "../_prometheus.ts";
import type { ActiveSpan, SpanAttributes, Tracer } from "../../infra/tracing.ts";

interface Recorded {
  name: string;
  attributes: SpanAttributes;
  failed?: string;
  ended: boolean;
}

/** A tracer that keeps every span it was asked for. */
function recordingTracer(): Tracer & { spans: Recorded[] } {
  const spans: Recorded[] = [];
  return {
    spans,
    async span(name, attributes, work) {
      const span: Recorded = { name, attributes: { ...attributes }, ended: false };
      spans.push(span);
      const active: ActiveSpan = {
        set: (more) => Object.assign(span.attributes, more),
        fail: (message) => span.failed = message,
      };
      try {
        return await work(active);
      } finally {
        span.ended = true;
      }
    },
    start(name, attributes) {
      const span: Recorded = { name, attributes: { ...attributes }, ended: false };
      spans.push(span);
      return {
        set: (more) => Object.assign(span.attributes, more),
        fail: (message) => span.failed = message,
        end: () => span.ended = true,
      };
    },
  };
}

Deno.test({
  name: "metrics e2e: a sync job is counted when it ends and runs in a job.sync span",
  ignore: !HAS_PROMETHEUS_PARSER,
  async fn() {
    const tracer = recordingTracer();
    const w = await jobsWorld({}, { tracer });
    try {
      await w.wire();
      const started = await w.call("POST", P + "sync/", { sync_types: ["devices", "storage"] });
      assert.equal(started.status, 201, JSON.stringify(started.body));
      const frames = await w.sse(`${P}jobs/${started.body.job_id}/stream`);
      assert.equal(frames.at(-1)!.data.ok, true, JSON.stringify(frames.at(-1)));
      // The job's stream has closed; its record settles just before (docs/jobs.md).
      const families = await parseExposition((await w.deps.metrics!.exposition()).body);
      assert.equal(
        valueOf(families, "bridgebox_jobs_finished_total", { kind: "sync", status: "completed" }),
        1,
      );
      assert.equal(valueOf(families, "bridgebox_job_duration_seconds_count", { kind: "sync" }), 1);
      assert.equal(valueOf(families, "bridgebox_jobs", { status: "running" }), 0);

      const jobs = tracer.spans.filter((s) => s.name === "job.sync");
      assert.equal(jobs.length, 1);
      assert.deepEqual(jobs[0], {
        name: "job.sync",
        attributes: {
          "bridgebox.job.id": started.body.job_id,
          "bridgebox.job.kind": "sync",
          "bridgebox.job.sync_types": "devices,storage",
          "bridgebox.job.status": "completed",
        },
        ended: true,
      });
      // The stages the job asked the backend for ran as sync spans of their own.
      assert.deepEqual(
        tracer.spans.filter((s) => s.name.startsWith("sync.stage ")).map((s) => s.name),
        ["sync.stage devices", "sync.stage storage"],
      );
    } finally {
      await w.close();
    }
  },
});

Deno.test({
  name: "metrics e2e: a job scheduled for later is in the bridgebox_jobs gauge until cancelled",
  ignore: !HAS_PROMETHEUS_PARSER,
  async fn() {
    const w = await jobsWorld();
    try {
      await w.wire();
      const later = new Date(Date.now() + 3_600_000).toISOString();
      const started = await w.call("POST", P + "sync/", {
        sync_types: ["devices"],
        schedule_at: later,
      });
      assert.equal(started.status, 201, JSON.stringify(started.body));
      const gauge = async () =>
        valueOf(
          await parseExposition((await w.deps.metrics!.exposition()).body),
          "bridgebox_jobs",
          { status: "scheduled" },
        );
      assert.equal(await gauge(), 1);
      const cancelled = await w.call("DELETE", `/api/core/jobs/${started.body.job_id}/`);
      assert.equal(cancelled.status, 204, JSON.stringify(cancelled.body));
      assert.equal(await gauge(), 0);
    } finally {
      await w.close();
    }
  },
});
