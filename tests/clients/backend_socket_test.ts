// deno-lint-ignore-file no-explicit-any
/**
 * The plugin's WebSocket stream client (clients/backend_socket.ts through BackendClient) against
 * a scripted backend on a real loopback socket: the `…/stream` path goes to `…/ws` at the
 * WebSocket address, the key only in the first message, refusals read as the SSE route's HTTP
 * statuses (so the job runner renews a key on 401 and backs off on 409), keepalives dropped, a
 * silent stream cut, an abort closing the socket, the connection pinned to the checked address;
 * and, against a raw scripted peer, what the protocol library must do for us (fragments joined,
 * pings answered, oversized, binary and masked messages refused).
 */
import assert from "node:assert/strict";
import { BackendClient } from "../../clients/backend.ts";
import { openSocketStream } from "../../clients/backend_socket.ts";
import { createOutboundFetch, outboundSocket } from "../../clients/outbound.ts";
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

Deno.test("backend socket client: the connection goes to the address the transport checked, not a new lookup", async () => {
  const b = scriptedBackend();
  const lookedUp: string[] = [];
  try {
    // The name does not resolve anywhere but in the transport's resolver: a client that
    // resolved it again itself would fail to connect.
    const transport = createOutboundFetch({
      allowLoopbackTargets: true,
      keepAlive: false,
      resolve: (host) => {
        lookedUp.push(host);
        return Promise.resolve(["127.0.0.1"]);
      },
    });
    const client = new BackendClient(transport, {
      baseUrl: "http://127.0.0.1:9",
      token: "good",
      websocketUrl: `ws://backend.bridgebox-test.invalid:${b.server.addr.port}`,
    });
    const opened = await client.openStream("/full-update/stream");
    assert.equal(opened.ok, true, opened.ok ? "" : opened.error);
    if (!opened.ok) return;
    const frames = [];
    for await (const f of opened.events) frames.push(f.event);
    assert.deepEqual(frames, ["step", "step", "complete"]);
    assert.deepEqual(lookedUp, ["backend.bridgebox-test.invalid"]);
    assert.equal(new URL(b.seen[0].url).pathname, "/full-update/ws");
  } finally {
    await b.server.shutdown();
  }
});

/** A server frame (unmasked unless a mask is given), payloads under 126 bytes. */
function serverFrame(
  opcode: number,
  payload: Uint8Array,
  { fin = true, mask }: { fin?: boolean; mask?: Uint8Array } = {},
): Uint8Array {
  const out = new Uint8Array(2 + (mask ? 4 : 0) + payload.length);
  out[0] = (fin ? 0x80 : 0) | opcode;
  out[1] = (mask ? 0x80 : 0) | payload.length;
  if (mask) out.set(mask, 2);
  out.set(payload.map((byte, i) => mask ? byte ^ mask[i & 3] : byte), mask ? 6 : 2);
  return out;
}

/** The client's frames as opcodes and unmasked payloads (client frames are always masked). */
function clientFrames(bytes: Uint8Array): { opcode: number; payload: Uint8Array }[] {
  const frames = [];
  let at = 0;
  while (at + 6 <= bytes.length) {
    const opcode = bytes[at] & 0x0f;
    let length = bytes[at + 1] & 0x7f;
    let offset = at + 2;
    if (length === 126) {
      length = (bytes[offset] << 8) | bytes[offset + 1];
      offset += 2;
    }
    const mask = bytes.slice(offset, offset + 4);
    const payload = bytes.slice(offset + 4, offset + 4 + length).map((b, i) => b ^ mask[i & 3]);
    frames.push({ opcode, payload });
    at = offset + 4 + length;
  }
  return frames;
}

/**
 * A raw peer: completes the handshake, answers the first client frame with `script` (each item
 * one TCP write), then records what the client sends until it hangs up.
 */
function rawPeer(script: Uint8Array[]) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const received = (async () => {
    const conn = await listener.accept();
    listener.close();
    const reader = conn.readable.getReader();
    const writer = conn.writable.getWriter();
    let head = "";
    while (!head.includes("\r\n\r\n")) {
      const { value, done } = await reader.read();
      if (done) return new Uint8Array(0);
      head += new TextDecoder().decode(value);
    }
    const key = /sec-websocket-key: *(\S+)/i.exec(head)![1];
    const digest = await crypto.subtle.digest(
      "SHA-1",
      new TextEncoder().encode(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`),
    );
    await writer.write(new TextEncoder().encode(
      "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n" +
        `sec-websocket-accept: ${new Uint8Array(digest).toBase64()}\r\n\r\n`,
    ));
    const chunks: number[] = [];
    let scripted = false;
    while (true) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done || !value) break;
      chunks.push(...value);
      if (!scripted) {
        scripted = true;
        for (const part of script) await writer.write(part).catch(() => {});
      }
    }
    try {
      conn.close();
    } catch { /* already closed with its streams */ }
    return new Uint8Array(chunks);
  })();
  const connect = outboundSocket(createOutboundFetch({ allowLoopbackTargets: true }))!;
  const open = (maxMessageBytes?: number) =>
    openSocketStream(
      connect,
      new URL(`ws://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/full-update/ws`),
      "k",
      { connectTimeoutMs: 10_000, idleTimeoutMs: 10_000, verifyTls: true, maxMessageBytes },
    );
  return { open, received };
}

const text = (s: string) => new TextEncoder().encode(s);

Deno.test("backend socket client (raw peer): fragments across writes joined, a ping answered with its payload", async () => {
  const message = serverFrame(1, text('{"event":"complete","data":{"ok":true}}'));
  const peer = rawPeer([
    serverFrame(1, text('{"event":"st'), { fin: false }),
    serverFrame(9, text("are you there")),
    ...[...serverFrame(0, text('ep","data":{"n":1}}'))].map((byte) => new Uint8Array([byte])),
    message,
    serverFrame(8, new Uint8Array([0x03, 0xe8])),
  ]);
  const opened = await peer.open();
  assert.equal(opened.ok, true, opened.ok ? "" : opened.error);
  if (!opened.ok) return;
  const frames = [];
  for await (const f of opened.events) frames.push(f);
  assert.deepEqual(frames, [
    { event: "step", data: { n: 1 } },
    { event: "complete", data: { ok: true } },
  ]);
  const sent = clientFrames(await peer.received);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(sent[0].payload)), { api_key: "k" });
  const pong = sent.find((f) => f.opcode === 10);
  assert.equal(new TextDecoder().decode(pong?.payload), "are you there");
});

/** The close code the client sent, or null. */
function closeCodeOf(bytes: Uint8Array): number | null {
  const close = clientFrames(bytes).find((f) => f.opcode === 8);
  return close && close.payload.length >= 2 ? (close.payload[0] << 8) | close.payload[1] : null;
}

Deno.test("backend socket client (raw peer): an oversized message ends the stream (1009), loses nothing before it", async () => {
  const peer = rawPeer([
    serverFrame(1, text('{"event":"step","data":1}')),
    serverFrame(1, text(`{"event":"step","data":"${"x".repeat(100)}"}`)),
  ]);
  const opened = await peer.open(64);
  assert.equal(opened.ok, true, opened.ok ? "" : opened.error);
  if (!opened.ok) return;
  const frames: unknown[] = [];
  await assert.rejects(async () => {
    for await (const f of opened.events) frames.push(f.data);
  }, /the backend sent Max payload size exceeded/);
  assert.deepEqual(frames, [1]);
  assert.equal(closeCodeOf(await peer.received), 1009);
});

Deno.test("backend socket client (raw peer): a binary message or a masked server frame is refused", async () => {
  const binary = rawPeer([serverFrame(2, text("bytes"))]);
  const first = await binary.open();
  assert.equal(first.ok, false);
  if (!first.ok) assert.match(first.error, /the backend sent a binary message/);
  assert.equal(closeCodeOf(await binary.received), 1003);

  const masked = rawPeer([serverFrame(1, text('{"event":"step"}'), { mask: text("abcd") })]);
  const second = await masked.open();
  assert.equal(second.ok, false);
  if (!second.ok) assert.match(second.error, /the backend sent .*MASK/i);
  assert.equal(closeCodeOf(await masked.received), 1002);
});
