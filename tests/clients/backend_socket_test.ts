// deno-lint-ignore-file no-explicit-any
/**
 * The plugin's WebSocket stream client (clients/backend_socket.ts through BackendClient) against
 * a scripted backend on a real loopback socket: the `…/stream` path goes to `…/ws` at the
 * WebSocket address, the key only in the first message, refusals read as the SSE route's HTTP
 * statuses (so the job runner renews a key on 401 and backs off on 409), keepalives dropped, a
 * silent stream cut, an abort closing the socket; and the frame reader's protocol checks.
 */
import assert from "node:assert/strict";
import { BackendClient } from "../../clients/backend.ts";
import { encodeFrame, FrameReader } from "../../clients/backend_socket.ts";
import { createOutboundFetch } from "../../clients/outbound.ts";
import { HAS_OPENSSL, selfSigned } from "../_tls.ts";

interface Seen {
  url: string;
  headerKey: string | null;
  first: unknown;
}

/** A backend whose socket answers by the key in the first message. */
function scriptedBackend() {
  const seen: Seen[] = [];
  const closedByClient = Promise.withResolvers<number>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const entry: Seen = {
      url: request.url,
      headerKey: request.headers.get("x-service-api-key"),
      first: null,
    };
    const { socket, response } = Deno.upgradeWebSocket(request);
    seen.push(entry);
    const send = (event: string, data: unknown) => socket.send(JSON.stringify({ event, data }));
    socket.onclose = (e) => closedByClient.resolve(e.code);
    socket.onmessage = (e) => {
      if (entry.first !== null) return;
      entry.first = JSON.parse(String(e.data));
      const key = (entry.first as { api_key?: string }).api_key;
      if (key === "good") {
        send("keepalive", null);
        send("step", { step: "devices", status: "started" });
        send("step", { step: "devices", status: "completed", result: { created: 1 } });
        send("complete", { ok: true });
        socket.close(1000, "complete");
      } else if (key === "busy") {
        send("error", { reason: "sync_running", detail: "A sync run …", http_status: 409 });
        socket.close(4409, "A sync run");
      } else if (key === "silent") {
        send("step", { step: "devices", status: "started" });
      } else {
        send("error", { reason: "invalid_key", detail: "Invalid API key", http_status: 401 });
        socket.close(4401, "Invalid API key");
      }
    };
    return response;
  });
  const client = (token: string) =>
    new BackendClient(createOutboundFetch({ allowLoopbackTargets: true, keepAlive: false }), {
      baseUrl: "http://127.0.0.1:9", // HTTP goes elsewhere: the stream must not
      token,
      websocketUrl: `ws://127.0.0.1:${server.addr.port}`,
    });
  return { seen, server, client, closedByClient: closedByClient.promise };
}

Deno.test("backend socket client: frames to complete (keepalive dropped), key only in the first message", async () => {
  const b = scriptedBackend();
  try {
    const opened = await b.client("good").openStream("/dcim/devices/create/stream?dry_run=true");
    assert.equal(opened.ok, true, opened.ok ? "" : opened.error);
    if (!opened.ok) return;
    const frames = [];
    for await (const frame of opened.events) frames.push(frame);
    assert.deepEqual(frames.map((f) => `${f.event}:${(f.data as any)?.status ?? ""}`), [
      "step:started",
      "step:completed",
      "complete:",
    ]);
    const [seen] = b.seen;
    const url = new URL(seen.url);
    assert.equal(url.pathname, "/dcim/devices/create/ws");
    assert.equal(url.search, "?dry_run=true");
    assert.equal(seen.headerKey, null);
    assert.deepEqual(seen.first, { api_key: "good" });
  } finally {
    await b.server.shutdown();
  }
});

Deno.test("backend socket client: refusals answer the SSE route's statuses and bodies (401, 409 sync_running)", async () => {
  const b = scriptedBackend();
  try {
    const wrong = await b.client("wrong").openStream("/full-update/stream");
    assert.equal(wrong.ok, false);
    if (wrong.ok) return;
    assert.equal(wrong.status, 401);
    assert.match(wrong.error, /ws:\/\/127\.0\.0\.1:\d+\/full-update\/ws: refused \(401\): Invalid/);
    assert.ok(!wrong.error.includes("wrong"), "the key is not in the error");
    const busy = await b.client("busy").openStream("/full-update/stream");
    assert.equal(busy.ok, false);
    if (busy.ok) return;
    assert.equal(busy.status, 409);
    assert.equal((busy.body as { reason?: string }).reason, "sync_running");
  } finally {
    await b.server.shutdown();
  }
});

Deno.test("backend socket client: a silent stream is cut; an abort closes the socket (the backend sees 1001)", async () => {
  const b = scriptedBackend();
  try {
    const silent = await b.client("silent").openStream("/full-update/stream", {
      idleTimeoutMs: 50,
    });
    assert.equal(silent.ok, true);
    if (!silent.ok) return;
    await assert.rejects(async () => {
      for await (const _ of silent.events) { /* reads the started frame, then silence */ }
    }, /silent for 0\.05 s/);
    await b.closedByClient;
  } finally {
    await b.server.shutdown();
  }
  const c = scriptedBackend();
  try {
    const abort = new AbortController();
    const opened = await c.client("silent").openStream("/full-update/stream", {
      signal: abort.signal,
    });
    assert.equal(opened.ok, true);
    abort.abort();
    assert.equal(await c.closedByClient, 1001);
  } finally {
    await c.server.shutdown();
  }
});

Deno.test("backend socket client: without the guarded transport there is no WebSocket", async () => {
  const client = new BackendClient(fetch, {
    baseUrl: "http://127.0.0.1:9",
    token: "k",
    websocketUrl: "ws://127.0.0.1:9",
  });
  const opened = await client.openStream("/full-update/stream");
  assert.equal(opened.ok, false);
  if (!opened.ok) assert.match(opened.error, /guarded outbound transport/);
});

Deno.test({
  name:
    "backend socket client: wss honours verify_ssl (a self-signed certificate refused, accepted when off)",
  ignore: !HAS_OPENSSL,
}, async () => {
  const { cert, key } = await selfSigned("localhost");
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert, key, onListen() {} },
    (request) => {
      const { socket, response } = Deno.upgradeWebSocket(request);
      socket.onmessage = () => {
        socket.send(JSON.stringify({ event: "complete", data: { ok: true } }));
        socket.close(1000, "complete");
      };
      return response;
    },
  );
  try {
    const client = (verifySsl: boolean) =>
      new BackendClient(createOutboundFetch({ allowLoopbackTargets: true, keepAlive: false }), {
        baseUrl: "https://127.0.0.1:9",
        token: "k",
        verifySsl,
        websocketUrl: `wss://localhost:${server.addr.port}`,
      });
    const verified = await client(true).openStream("/full-update/stream");
    assert.equal(verified.ok, false);
    if (!verified.ok) {
      assert.match(verified.error, /wss:\/\/localhost:\d+\/full-update\/ws: backend/);
    }
    const unverified = await client(false).openStream("/full-update/stream");
    assert.equal(unverified.ok, true, unverified.ok ? "" : unverified.error);
    if (!unverified.ok) return;
    const frames = [];
    for await (const f of unverified.events) frames.push(f.event);
    assert.deepEqual(frames, ["complete"]);
  } finally {
    await server.shutdown();
  }
});

/** A server frame (unmasked). */
function serverFrame(opcode: number, payload: Uint8Array, fin = true): Uint8Array {
  const out = new Uint8Array(2 + payload.length);
  out[0] = (fin ? 0x80 : 0) | opcode;
  out[1] = payload.length;
  out.set(payload, 2);
  return out;
}

Deno.test("frame reader: fragments joined, split chunks, ping, and protocol violations refused", () => {
  const text = (s: string) => new TextEncoder().encode(s);
  const reader = new FrameReader(1024);
  const a = serverFrame(1, text('{"event":'), false);
  const b = serverFrame(0, text('"step"}'));
  const ping = serverFrame(9, text("p"));
  const all = new Uint8Array([...a, ...ping, ...b]);
  // Fed byte by byte: nothing is lost at chunk boundaries.
  const out = [];
  for (const byte of all) out.push(...reader.push(new Uint8Array([byte])));
  assert.deepEqual(out.map((m) => m.kind), ["ping", "text"]);
  assert.equal((out[1] as { text: string }).text, '{"event":"step"}');
  assert.throws(() => new FrameReader(1024).push(encodeFrame(1, text("x"))), /masked/);
  assert.throws(() => new FrameReader(4).push(serverFrame(1, text("too long"))), /too large/);
  assert.throws(() => new FrameReader(1024).push(serverFrame(2, text("b"))), /binary/);
  assert.throws(() => new FrameReader(1024).push(serverFrame(0, text("c"))), /continuation/);
});
