/**
 * The outbound transport (clients/outbound.ts) behaves as fetch does where clients rely on it:
 * streamed answers arrive as they are written (SSE), bodies and headers go out intact, empty
 * answers, HEAD, and an abort that ends a stream.
 */
import assert from "node:assert/strict";
import {
  configuredOrigins,
  createOutboundFetch,
  isOutboundFetch,
  type OutboundInit,
  OutboundRefused,
  outboundSocket,
} from "../../clients/outbound.ts";
import { HAS_OPENSSL, selfSigned } from "../_tls.ts";

const guard = () => createOutboundFetch({ allowLoopbackTargets: true, keepAlive: false });

Deno.test("outbound transport: a streamed answer arrives chunk by chunk, before the server ends it", async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () => {
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode("event: step\ndata: 1\n\n"));
        await gate;
        controller.enqueue(new TextEncoder().encode("event: complete\ndata: 2\n\n"));
        controller.close();
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  try {
    const res = await guard()(`http://127.0.0.1:${server.addr.port}/stream`);
    assert.equal(res.headers.get("content-type"), "text/event-stream");
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    assert.equal(
      (await reader.read()).value,
      "event: step\ndata: 1\n\n",
      "first frame before the rest",
    );
    release();
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += r.value;
    assert.equal(rest, "event: complete\ndata: 2\n\n");
  } finally {
    await server.shutdown();
  }
});

Deno.test("outbound transport: method, headers and bodies go out as fetch sends them; 204 and HEAD have no body", async () => {
  const seen: string[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    seen.push(
      `${req.method} ${new URL(req.url).pathname} ${req.headers.get("content-type")} ` +
        `${req.headers.get("x-service-api-key")} ${req.headers.get("host")} ${await req.text()}`,
    );
    if (req.method === "DELETE") return new Response(null, { status: 204 });
    return Response.json({ ok: true }, { status: 201, headers: { "x-extra": "1" } });
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  try {
    const f = guard();
    const created = await f(`${base}/json`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-service-api-key": "k" },
      body: JSON.stringify({ a: "ü" }),
    });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get("x-extra"), "1");
    assert.deepEqual(await created.json(), { ok: true });
    const form = await f(`${base}/form`, {
      method: "POST",
      body: new URLSearchParams({ username: "root@pam", password: "p w" }),
    });
    await form.body?.cancel();
    const gone = await f(`${base}/x`, { method: "DELETE" });
    assert.equal(gone.status, 204);
    assert.equal(gone.body, null);
    const head = await f(`${base}/h`, { method: "HEAD" });
    assert.equal(head.body, null);
    assert.deepEqual(seen.slice(0, 2), [
      `POST /json application/json k 127.0.0.1:${server.addr.port} {"a":"ü"}`,
      `POST /form application/x-www-form-urlencoded;charset=UTF-8 null 127.0.0.1:${server.addr.port} username=root%40pam&password=p+w`,
    ]);
  } finally {
    await server.shutdown();
  }
});

Deno.test("outbound transport: an abort before the answer rejects with the signal's reason", async () => {
  let arrived!: () => void;
  const reached = new Promise<void>((resolve) => arrived = resolve);
  const hold = Promise.withResolvers<void>();
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async () => {
    arrived();
    await hold.promise;
    return new Response("late");
  });
  try {
    const controller = new AbortController();
    const pending = guard()(`http://127.0.0.1:${server.addr.port}/slow`, {
      signal: controller.signal,
    });
    await reached;
    controller.abort(new DOMException("timed out", "TimeoutError"));
    await assert.rejects(
      pending,
      (e: unknown) => e instanceof DOMException && e.name === "TimeoutError",
    );
  } finally {
    hold.resolve();
    await server.shutdown();
  }
});

Deno.test({
  name:
    "outbound transport: a certificate nobody vouches for is refused unless verification is off",
  ignore: !HAS_OPENSSL,
}, async () => {
  const { cert, key } = await selfSigned("127.0.0.1");
  let served = 0;
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", cert, key, onListen() {} }, () => {
    served++;
    return Response.json({ data: "ok" });
  });
  try {
    const url = `https://127.0.0.1:${server.addr.port}/api2/json/version`;
    // The default (an endpoint with verify_ssl on) trusts only what the system trusts.
    const refused = await guard()(url).then(() => null, (e) => e);
    assert.ok(refused instanceof Error, "a self-signed certificate was accepted");
    assert.equal(served, 0, "no request reached the server");
    // verify_ssl off (a lab's self-signed cluster): the same server answers.
    const lenient = await guard()(url, { verifyTls: false } as OutboundInit);
    assert.deepEqual(await lenient.json(), { data: "ok" });
    assert.equal(served, 1);
  } finally {
    await server.shutdown();
  }
});

Deno.test("outbound transport: a read answer leaves nothing behind that keeps the process alive (a timeout signal's timer)", async () => {
  // A child that fetches once with a long timeout signal, reads the answer and ends its server
  // must exit by itself. With the abort listener left on the signal, Deno keeps the signal's
  // timer, and the process, alive until it fires (60 s here; a stopped app lingered 30 s).
  const outbound = new URL("../../clients/outbound.ts", import.meta.url).href;
  const script = `
    import { createOutboundFetch } from ${JSON.stringify(outbound)};
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response("x".repeat(1000)));
    const guarded = createOutboundFetch({ allowLoopbackTargets: true, keepAlive: false });
    const res = await guarded("http://127.0.0.1:" + server.addr.port + "/", {
      signal: AbortSignal.timeout(60_000),
    });
    console.log((await res.text()).length);
    await server.shutdown();
  `;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-net", "--allow-read", "--allow-env", "-"],
    cwd: new URL("../../", import.meta.url).pathname,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(script));
  await writer.close();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const lingered = new Promise<"lingered">((resolve) => {
    timer = setTimeout(() => resolve("lingered"), 20_000);
  });
  try {
    const ended = await Promise.race([child.output(), lingered]);
    if (ended === "lingered") {
      child.kill("SIGKILL");
      assert.fail("the process was still alive 20 s after its last request");
    }
    assert.equal(new TextDecoder().decode(ended.stdout).trim(), "1000");
  } finally {
    clearTimeout(timer);
    await child.status;
  }
});

Deno.test("outbound transport: only the http(s) origins an operator configured are trusted", () => {
  assert.deepEqual(
    configuredOrigins({
      url: "https://pve.lan:8006/api2/json",
      schema: "http://docs.lan/apidata.js",
    }),
    ["https://pve.lan:8006", "http://docs.lan"],
  );
  // A schema file (path or file: URL) and other schemes name no origin to trust.
  for (const schema of ["/srv/schema/pve-9.2.json", "file:///srv/pve.json", "ftp://docs.lan/x"]) {
    assert.deepEqual(configuredOrigins({ url: undefined, schema }), [], schema);
  }
});

Deno.test("outbound transport: it is known as the guarded one; its WebSocket target takes ws and wss only, checked and pinned", async () => {
  const guarded = createOutboundFetch({
    allowLoopbackTargets: false,
    keepAlive: false,
    resolve: () => Promise.resolve(["93.184.216.34"]),
  });
  assert.equal(isOutboundFetch(guarded), true);
  assert.equal(isOutboundFetch(globalThis.fetch), false);
  assert.equal(outboundSocket(globalThis.fetch), null, "a plain fetch has no pinned socket");
  const socket = outboundSocket(guarded);
  assert.equal(typeof socket, "function");

  const pinned = await socket!(new URL("wss://pve.example:8006/sync/ws"), { verifyTls: true });
  assert.equal(pinned.url.href, "wss://pve.example:8006/sync/ws");
  assert.equal(pinned.address, "93.184.216.34");
  assert.equal(typeof pinned.createConnection, "function");
  const plain = await socket!(new URL("http://pve.example/x"), { verifyTls: true });
  assert.equal(plain.url.href, "ws://pve.example/x", "an http URL is its ws twin");

  for (
    const [target, message] of [
      ["ftp://pve.example/x", /^only ws and wss URLs are allowed, not ftp:$/],
      ["wss://root:secret@pve.example/x", /^URLs with credentials are not allowed$/],
      ["ws://127.0.0.1:8006/x", /^outbound request to 127\.0\.0\.1 refused: /],
    ] as const
  ) {
    await assert.rejects(
      socket!(new URL(target), { verifyTls: true }),
      (e: unknown) => e instanceof OutboundRefused && message.test(e.message),
      target,
    );
  }
});

Deno.test("outbound transport: a WebSocket to the app's own port goes over loopback; every other loopback port stays refused", async () => {
  const guarded = createOutboundFetch({
    allowLoopbackTargets: false,
    keepAlive: false,
    resolve: () => Promise.resolve(["127.0.0.1"]),
    self: () => ({ port: 4321, fetch: () => new Response("self") }),
  });
  const socket = outboundSocket(guarded)!;
  for (
    const [target, address] of [
      ["ws://127.0.0.1:4321/ws", "127.0.0.1"],
      ["ws://localhost:4321/ws", "127.0.0.1"],
      ["ws://[::1]:4321/ws", "::1"],
    ] as const
  ) {
    const pinned = await socket(new URL(target), { verifyTls: true });
    assert.equal(pinned.address, address, target);
    assert.equal(pinned.url.href, target);
  }
  // The app's own port is the app; a neighbour on loopback is not, nor is that port number on
  // another host (a metadata address, a name resolving to loopback): the endpoint rule holds.
  for (
    const target of [
      "ws://127.0.0.1:4322/ws",
      "ws://localhost/ws",
      "wss://127.0.0.1/ws",
      "ws://169.254.169.254:4321/ws",
      "ws://pve.example:4321/ws",
    ]
  ) {
    await assert.rejects(
      socket(new URL(target), { verifyTls: true }),
      (e: unknown) => e instanceof OutboundRefused && /refused: /.test(e.message),
      target,
    );
  }
});

Deno.test("outbound transport: a ws:// socket is plain TCP to the pinned address (TLS only for wss://)", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const socket = outboundSocket(
      createOutboundFetch({ allowLoopbackTargets: true, keepAlive: false }),
    )!;
    const pinned = await socket(new URL(`ws://127.0.0.1:${listener.addr.port}/ws`), {
      verifyTls: true,
    });
    const accepted = listener.accept();
    const client = pinned.createConnection();
    client.on("error", () => {});
    client.write("GET /ws HTTP/1.1\r\n");
    const conn = await accepted;
    try {
      // Read the first 16 bytes, however the stream splits them.
      const first = new Uint8Array(16);
      let got = 0;
      while (got < first.length) {
        const n = await conn.read(first.subarray(got));
        if (n === null) break;
        got += n;
      }
      // A TLS handshake would start with the record type 0x16, not the request line.
      assert.equal(new TextDecoder().decode(first.subarray(0, got)), "GET /ws HTTP/1.1");
    } finally {
      client.destroy();
      conn.close();
    }
  } finally {
    listener.close();
  }
});

Deno.test("outbound transport: connections are reused by default, and not with keepAlive false", async () => {
  // In a child that exits when done: kept-alive sockets would outlive a test.
  const outbound = new URL("../../clients/outbound.ts", import.meta.url).href;
  const script = `
    import http from "node:http";
    import { createOutboundFetch } from ${JSON.stringify(outbound)};
    let connections = 0;
    const server = http.createServer((_req, res) => res.end("ok"));
    server.on("connection", () => connections++);
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = "http://127.0.0.1:" + server.address().port + "/";
    const counts = [];
    for (const options of [{}, { keepAlive: false }]) {
      connections = 0;
      const guarded = createOutboundFetch({ allowLoopbackTargets: true, ...options });
      for (let i = 0; i < 3; i++) await (await guarded(url)).text();
      counts.push(connections);
    }
    console.log(JSON.stringify(counts));
    Deno.exit(0);
  `;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-net", "--allow-read", "--allow-env", "-"],
    cwd: new URL("../../", import.meta.url).pathname,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(script));
  await writer.close();
  const { stdout, code } = await child.output();
  assert.equal(code, 0);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(stdout)), [1, 3]);
});
