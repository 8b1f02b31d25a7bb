/**
 * A sync job whose process is killed mid-run (SIGKILL: no chance to clean up): the real
 * main.ts runs the plugin on a KV file and drives a backend (this test's fake) whose stage
 * stream starts and never ends; after the kill, a second start on the same KV file settles
 * the job `errored` with the reason once the run lease has expired, never `running` forever.
 */
import assert from "node:assert/strict";
import { createParser } from "eventsource-parser";
import { type Child, hostEnv, startMain } from "../_process.ts";

const ROOT = "killjobs0123456789abcdef0123456789abcdef";
const P = "/api/plugins/service/";

/** A backend that accepts the plugin's pushes and whose full update starts and hangs. */
function fakeBackend() {
  const reached = Promise.withResolvers<void>();
  const copies: { id: number; name: string }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const path = url.pathname;
    if (path === "/health") return Response.json({ status: "ready", init_ok: true });
    if (path === "/auth/bootstrap-status") {
      return Response.json({ needs_bootstrap: false, has_db_keys: true });
    }
    if (path === "/auth/keys") return Response.json({ keys: [] });
    if (path === "/inventory/endpoint" && req.method === "GET") return Response.json([{ id: 1 }]);
    if (path.startsWith("/inventory/endpoint")) {
      await req.body?.cancel();
      return Response.json({ id: 1 });
    }
    if (path === "/hypervisor/endpoints" && req.method === "GET") return Response.json(copies);
    if (path === "/hypervisor/endpoints" && req.method === "POST") {
      const body = await req.json();
      copies.push({ id: 7, name: body.name });
      return Response.json({ id: 7, name: body.name }, { status: 201 });
    }
    if (path.startsWith("/hypervisor/endpoints/")) {
      const body = await req.json();
      return Response.json({ id: 7, name: body.name });
    }
    if (path === "/full-update/stream") {
      const encoder = new TextEncoder();
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(encoder.encode(
            `event: step\ndata: ${
              JSON.stringify({ step: "devices", status: "started", message: "devices" })
            }\n\n`,
          ));
          reached.resolve();
        },
      });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    }
    return Response.json({ detail: "Not Found" }, { status: 404 });
  });
  return { port: server.addr.port, reached: reached.promise, close: () => server.shutdown() };
}

/** Reads the job's live log stream until a line with `message` arrives. */
async function logLine(port: number, id: number, message: string): Promise<void> {
  const abort = new AbortController();
  const res = await fetch(`http://127.0.0.1:${port}${P}jobs/${id}/stream`, {
    headers: { authorization: `Token ${ROOT}` },
    signal: abort.signal,
  });
  assert.equal(res.status, 200);
  let seen = false;
  const parser = createParser({
    onEvent(m) {
      if (m.event === "log" && JSON.parse(m.data).message === message) seen = true;
    },
  });
  try {
    for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
      parser.feed(chunk);
      if (seen) break;
    }
  } finally {
    abort.abort();
  }
  assert.ok(seen, `the job logged ${message}`);
}

Deno.test("e2e: a sync job whose process is killed is settled errored after the lease, by the restart", async () => {
  const backend = fakeBackend();
  const dir = await Deno.makeTempDir({ prefix: "job-kill-" });
  const env = {
    SERVICE_KV_PATH: `${dir}/kv`,
    SERVICE_ALLOW_LOOPBACK_TARGETS: "true",
    SERVICE_SURFACES: "plugin",
    SERVICE_JOB_LEASE_MS: "1500",
    INVENTORY_BOOTSTRAP_TOKEN: ROOT,
    ...hostEnv(dir),
  };
  const call = async (port: number, method: string, path: string, body?: unknown) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { authorization: `Token ${ROOT}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  let second: Child | null = null;
  try {
    const first = await startMain(env);
    const be = await call(first.port, "POST", P + "endpoints/backend/", {
      name: "backend",
      domain: "127.0.0.1",
      port: backend.port,
      use_https: false,
    });
    assert.equal(be.status, 201, JSON.stringify(be.body));
    const token = await call(first.port, "POST", "/api/users/tokens/", {
      version: 1,
      is_superuser: true,
    });
    assert.equal(
      (await call(first.port, "POST", P + "endpoints/inventory/", {
        name: "inv",
        domain: "127.0.0.1",
        port: 8443,
        token: token.body.id,
      })).status,
      201,
    );
    const hv = await call(first.port, "POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "127.0.0.1",
      port: 8006,
      username: "root@pam",
      password: "secret-password",
    });
    assert.equal(hv.status, 201);
    const job = await call(first.port, "POST", P + "sync/", { sync_types: ["all"] });
    assert.equal(job.status, 201, JSON.stringify(job.body));
    const id = job.body.job_id;

    await backend.reached; // the stage stream is open: the job is mid-run
    // The kill must come after the job has logged the stage's start (the evidence asserted
    // below): the job's own live stream says when, so no timing is assumed.
    await logLine(first.port, id, 'devices for "pve": started');
    const running = await call(first.port, "GET", `/api/core/jobs/${id}/`);
    assert.equal(running.body.status.value, "running");
    await first.kill();

    second = await startMain(env);
    // The job stream of the restarted process ends when the job does.
    const res = await fetch(`http://127.0.0.1:${second.port}${P}jobs/${id}/stream`, {
      headers: { authorization: `Token ${ROOT}` },
    });
    assert.equal(res.status, 200);
    let complete: Record<string, unknown> | null = null;
    const parser = createParser({
      onEvent(m) {
        if (m.event === "complete") complete = JSON.parse(m.data);
      },
    });
    for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) parser.feed(chunk);
    assert.ok(complete, "the stream ended with complete");
    assert.equal((complete as Record<string, unknown>).status, "errored");

    const settled = await call(second.port, "GET", `/api/core/jobs/${id}/`);
    assert.equal(settled.body.status.value, "errored");
    assert.match(settled.body.error, /stopped before it finished \(its run lease expired at /);
    assert.ok(settled.body.completed);
    // The evidence of how far it got stays in the log.
    const messages = settled.body.log.map((l: { message: string }) => l.message);
    assert.ok(messages.includes('devices for "pve": started'), JSON.stringify(messages));
    // The slot is free again: a new sync is admitted.
    const next = await call(second.port, "POST", P + "sync/", { sync_types: ["devices"] });
    assert.equal(next.status, 201, JSON.stringify(next.body));
  } finally {
    await second?.stop();
    await backend.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
