/**
 * The outbound transport's rules as a caller meets them (clients/outbound.ts, SECURITY.md
 * "Outbound requests"): a redirect is refused on every route (a checked address, the app's own
 * port, an origin the operator configured) and named as the caller can act on it; a name is
 * resolved once and the connection goes to the checked address while the Host stays the name;
 * an answer cut off or aborted mid-body fails the read instead of ending short; request bodies
 * (whole or streamed) arrive whole.
 */
import assert from "node:assert/strict";
import {
  createOutboundFetch,
  nodeExchange,
  OutboundRefused,
  outboundSocket,
} from "../../clients/outbound.ts";

const LOOPBACK_HINT = "set SERVICE_ALLOW_LOOPBACK_TARGETS=true to allow local targets";

const refusedWith = (text: string) => (e: unknown) => {
  assert.ok(e instanceof OutboundRefused, `not an OutboundRefused: ${e}`);
  assert.equal(e.message, text);
  return true;
};

Deno.test("outbound rules: a 3xx is refused on every route, naming where it pointed; other answers pass through", async () => {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/relative") {
      return new Response("moved", { status: 302, headers: { location: "/next?x=1" } });
    }
    if (path === "/nowhere") return new Response(null, { status: 301 });
    if (path === "/choices") {
      return new Response("pick", { status: 300, headers: { location: "http://other.example/" } });
    }
    if (path === "/permanent") {
      return new Response(null, { status: 308, headers: { location: "https://x.example/y" } });
    }
    return Response.json({ error: "bad" }, { status: 400 });
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  const guarded = createOutboundFetch({ allowLoopbackTargets: true, keepAlive: false });
  const tail = "not followed; use the final URL";
  try {
    await assert.rejects(
      guarded(`${base}/relative`),
      refusedWith(`redirect (HTTP 302) to ${base}/next?x=1 ${tail}`),
    );
    await assert.rejects(
      guarded(`${base}/nowhere`),
      refusedWith(`redirect (HTTP 301) to (no Location header) ${tail}`),
    );
    await assert.rejects(
      guarded(`${base}/choices`),
      refusedWith(`redirect (HTTP 300) to http://other.example/ ${tail}`),
    );
    await assert.rejects(
      guarded(`${base}/permanent`),
      refusedWith(`redirect (HTTP 308) to https://x.example/y ${tail}`),
    );
    const bad = await guarded(`${base}/bad`);
    assert.equal(bad.status, 400, "a 4xx is an answer, not a redirect");
    assert.deepEqual(await bad.json(), { error: "bad" });
  } finally {
    await server.shutdown();
  }

  // The app's own port, answered in-process: its redirects are refused the same way.
  const selfCalls: string[] = [];
  const viaSelf = createOutboundFetch({
    allowLoopbackTargets: false,
    keepAlive: false,
    self: () => ({
      port: 4321,
      fetch: (request) => {
        selfCalls.push(`${request.method} ${new URL(request.url).pathname}`);
        return new URL(request.url).pathname === "/ok"
          ? Response.json({ self: true })
          : new Response(null, { status: 303, headers: { location: "/ui/" } });
      },
    }),
  });
  await assert.rejects(
    viaSelf("http://localhost:4321/login", { method: "POST", body: "a=1" }),
    refusedWith(`redirect (HTTP 303) to http://localhost:4321/ui/ ${tail}`),
  );
  assert.deepEqual(await (await viaSelf("http://127.0.0.1:4321/ok")).json(), { self: true });
  assert.deepEqual(selfCalls, ["POST /login", "GET /ok"]);

  // An origin the operator configured goes to the plain fetch, told not to follow redirects.
  const asked: (RequestRedirect | undefined)[] = [];
  const viaTrusted = createOutboundFetch({
    allowLoopbackTargets: false,
    keepAlive: false,
    trustedOrigins: ["https://pve.lan:8006"],
    trustedFetch: ((_input: RequestInfo | URL, init?: RequestInit) => {
      asked.push(init?.redirect);
      return Promise.resolve(
        new Response(null, { status: 300, headers: { location: "https://sso.lan/login" } }),
      );
    }) as typeof fetch,
    resolve: () => Promise.reject(new Error("a trusted origin is not resolved here")),
  });
  await assert.rejects(
    viaTrusted("https://pve.lan:8006/api2/json/version"),
    refusedWith(`redirect (HTTP 300) to https://sso.lan/login ${tail}`),
  );
  assert.deepEqual(asked, ["manual"]);
});

Deno.test("outbound rules: a name is resolved once and every address checked; the connection goes to the first, the Host stays the name", async () => {
  const hosts: string[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (req) => {
    hosts.push(req.headers.get("host") ?? "");
    return new Response("pinned");
  });
  const port = server.addr.port;
  try {
    const lookedUp: string[] = [];
    // 127.0.0.2 has no listener: only a connection to the first address is answered.
    const open = createOutboundFetch({
      allowLoopbackTargets: true,
      keepAlive: false,
      resolve: (host) => {
        lookedUp.push(host);
        return Promise.resolve(["127.0.0.1", "127.0.0.2"]);
      },
    });
    assert.equal(await (await open(`http://PVE.Example.:${port}/x`)).text(), "pinned");
    assert.deepEqual(lookedUp, ["pve.example"], "resolved once, lower case, no trailing dot");
    assert.deepEqual(hosts, [`pve.example.:${port}`], "the Host is the URL's, as fetch sends it");

    const strict = (addresses: string[], refuse?: (a: string) => string | null) =>
      createOutboundFetch({
        allowLoopbackTargets: false,
        keepAlive: false,
        resolve: () => Promise.resolve(addresses),
        refuse,
      });
    await assert.rejects(
      strict([])("http://pve.example/"),
      refusedWith("cannot resolve host pve.example"),
    );
    // One bad address among good ones refuses the name (a rebinding answer).
    await assert.rejects(
      strict(["93.184.216.34", "127.0.0.1"])(`http://pve.example:${port}/`),
      (e: unknown) =>
        e instanceof OutboundRefused &&
        e.message.startsWith("outbound request to pve.example (127.0.0.1) refused: ") &&
        e.message.endsWith(`; ${LOOPBACK_HINT}`),
    );
    // An address literal is named once.
    await assert.rejects(
      strict([])("http://169.254.169.254/latest/meta-data/"),
      (e: unknown) =>
        e instanceof OutboundRefused &&
        e.message.startsWith("outbound request to 169.254.169.254 refused: "),
    );
    // A stricter rule on top (code generation refuses private addresses too).
    const privateRule = (a: string) => a.startsWith("10.") ? "a private address" : null;
    await assert.rejects(
      strict(["10.1.2.3"], privateRule)("http://gen.example/schema.json"),
      refusedWith(
        `outbound request to gen.example (10.1.2.3) refused: a private address; ${LOOPBACK_HINT}`,
      ),
    );
    // Schemes and credentials are refused before any name is resolved.
    const never = createOutboundFetch({
      allowLoopbackTargets: true,
      keepAlive: false,
      resolve: () => Promise.reject(new Error("resolved a refused URL")),
    });
    await assert.rejects(
      never("ftp://pve.example/x"),
      refusedWith("only http and https URLs are allowed, not ftp:"),
    );
    for (const url of ["http://root@pve.example/x", "http://:pw@pve.example/x"]) {
      await assert.rejects(never(url), refusedWith("URLs with credentials are not allowed"), url);
    }
    const socket = outboundSocket(never)!;
    for (const url of ["wss://root@pve.example/x", "ws://:pw@pve.example/x"]) {
      await assert.rejects(
        socket(new URL(url), { verifyTls: true }),
        refusedWith("URLs with credentials are not allowed"),
        url,
      );
    }
    assert.equal(hosts.length, 1, "no refused request reached the server");
  } finally {
    await server.shutdown();
  }
});

Deno.test("outbound rules: an answer cut off before its end fails the read, and so does an abort mid-body", async () => {
  // A raw listener: promises 100 bytes, sends 5, then closes the connection.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const serving = (async () => {
    const conn = await listener.accept();
    const buf = new Uint8Array(4096);
    await conn.read(buf);
    await conn.write(
      new TextEncoder().encode(
        "HTTP/1.1 200 OK\r\ncontent-length: 100\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n\r\nhello",
      ),
    );
    conn.close();
  })();
  const guarded = createOutboundFetch({ allowLoopbackTargets: true, keepAlive: false });
  try {
    const res = await guarded(`http://127.0.0.1:${listener.addr.port}/`);
    // The server's headers, each as sent (repeats kept), and nothing else.
    assert.deepEqual([...res.headers], [
      ["content-length", "100"],
      ["set-cookie", "a=1"],
      ["set-cookie", "b=2"],
    ]);
    await assert.rejects(res.text(), (e: unknown) => e instanceof Error);
  } finally {
    await serving;
    listener.close();
  }

  const hold = Promise.withResolvers<void>();
  let requests = 0;
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () => {
    requests++;
    return new Response(
      new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(new TextEncoder().encode("first"));
          await hold.promise;
          controller.close();
        },
      }),
    );
  });
  try {
    // A signal aborted before the call: nothing is sent.
    const early = new DOMException("already gone", "AbortError");
    await assert.rejects(
      guarded(`http://127.0.0.1:${server.addr.port}/`, { signal: AbortSignal.abort(early) }),
      (e: unknown) => e === early,
    );
    assert.equal(requests, 0, "an aborted call sent a request");
    const controller = new AbortController();
    const res = await guarded(`http://127.0.0.1:${server.addr.port}/`, {
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    assert.equal(new TextDecoder().decode((await reader.read()).value), "first");
    const reason = new DOMException("gave up", "TimeoutError");
    controller.abort(reason);
    await assert.rejects(reader.read(), (e: unknown) => e === reason);
  } finally {
    hold.resolve();
    await server.shutdown();
  }
});

Deno.test("outbound rules: request bodies arrive whole, with a length or streamed", async () => {
  const seen: string[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    seen.push(
      `${req.method} ${req.headers.get("content-length")} ${
        req.headers.get("transfer-encoding")
      } ` +
        (await req.text()),
    );
    return new Response("ok");
  });
  const url = `http://127.0.0.1:${server.addr.port}/upload`;
  const stream = () =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const part of ["one,", "two,", "three"]) {
          controller.enqueue(new TextEncoder().encode(part));
        }
        controller.close();
      },
    });
  try {
    const guarded = createOutboundFetch({ allowLoopbackTargets: true, keepAlive: false });
    // The guarded transport reads a streamed body whole and sends it with its length.
    await (await guarded(url, { method: "PUT", body: stream() })).text();
    // The proxy's exchange streams it (chunked), and sends a text with its byte length.
    await (await nodeExchange(new URL(url), {
      method: "POST",
      headers: {},
      body: stream(),
      verifyTls: true,
    })).text();
    await (await nodeExchange(new URL(url), {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "größe",
      verifyTls: true,
    })).text();
    assert.deepEqual(seen, [
      "PUT 13 null one,two,three",
      "POST null chunked one,two,three",
      "POST 7 null größe",
    ]);
  } finally {
    await server.shutdown();
  }
});
