// deno-lint-ignore-file no-explicit-any
/**
 * A sync job whose backend endpoint says `use_websocket: true` reads its stage streams over
 * WebSocket on a real socket (docs/sync.md "WebSocket streams"): the upgrade goes through the
 * guarded transport to `websocket_domain`/`websocket_port`, the key in the first message, and
 * the job completes exactly as over SSE.
 */
import assert from "node:assert/strict";
import { jobsWorld, P, ROOT, statusOf } from "./_jobs_world.ts";
import { SYNC_TYPES } from "../../domain/jobs/stages.ts";

const STAGE_CALL =
  /^GET \/(full-update|dcim|virtualization|hypervisor\/(sdn|replication|cluster\/backup))\/.*(stream|ws)$/;

Deno.test("jobs e2e over WebSocket: use_websocket runs all 13 stages over …/ws and completes", async () => {
  const w = await jobsWorld();
  try {
    const { hypervisor, backend } = await w.wire();
    // The WebSocket address differs from the HTTP one in name only (localhost vs 127.0.0.1):
    // websocket_domain and websocket_port are what the job dials.
    const patched = await w.call("PATCH", `${P}endpoints/backend/${backend.id}/`, {
      use_websocket: true,
      websocket_domain: "localhost",
      websocket_port: w.port,
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const seenBefore = w.seen.length;
    const started = await w.call("POST", P + "sync/", { sync_types: ["all"] });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const frames = await w.sse(`${P}jobs/${started.body.job_id}/stream`);
    assert.equal(frames.at(-1)!.event, "complete");
    const job = await w.job(started.body.job_id);
    assert.equal(statusOf(job), "completed", `${job.error} ${JSON.stringify(job.log)}`);
    assert.deepEqual(job.data.map((r: any) => r.sync_type), SYNC_TYPES);
    for (const r of job.data) {
      assert.equal(r.endpoint_id, hypervisor);
      assert.equal(r.result_summary.failed, 0, JSON.stringify(r));
    }
    assert.ok(
      job.log.some((l: any) =>
        /Preflight: backend .* is ready; stage streams over WebSocket at ws:\/\/localhost:\d+$/
          .test(l.message)
      ),
      JSON.stringify(job.log),
    );
    // The stages went over the WebSocket, once, and never over SSE.
    const calls = w.seen.slice(seenBefore).filter((s) => STAGE_CALL.test(s));
    assert.deepEqual(calls, ["GET /full-update/ws"]);
    const vms = await w.call("GET", "/api/virtualization/virtual-machines/?limit=1");
    assert.equal(vms.body.count, 6);
    const text = JSON.stringify(job) + JSON.stringify(frames);
    const backendKey = (await w.call("GET", `${P}endpoints/backend/${backend.id}/`)).body.token;
    for (const secret of [backendKey, w.deps.config.hypervisor.mockPassword, ROOT]) {
      assert.ok(!text.includes(secret), `a secret reached the job: ${secret.slice(0, 4)}…`);
    }
  } finally {
    await w.close();
  }
});

Deno.test("jobs e2e over WebSocket: the WebSocket target obeys the outbound rules (a loopback port that is not the app is refused, never dialled)", async () => {
  // No SERVICE_ALLOW_LOOPBACK_TARGETS: only the app's own port may be reached on loopback.
  const w = await jobsWorld();
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let dialled = 0;
  const accepting = (async () => {
    for await (const conn of listener) {
      dialled++;
      conn.close();
    }
  })();
  try {
    const { backend } = await w.wire();
    const patched = await w.call("PATCH", `${P}endpoints/backend/${backend.id}/`, {
      use_websocket: true,
      websocket_port: listener.addr.port,
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const started = await w.call("POST", P + "sync/", { sync_types: ["devices"] });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    await w.sse(`${P}jobs/${started.body.job_id}/stream`);
    const job = await w.job(started.body.job_id);
    assert.equal(statusOf(job), "errored");
    assert.match(
      job.error,
      new RegExp(`ws://127\\.0\\.0\\.1:${listener.addr.port}/.*refused: a loopback address`),
    );
    assert.equal(dialled, 0, "the refused target was never connected to");
  } finally {
    listener.close();
    await accepting.catch(() => {});
    await w.close();
  }
});
