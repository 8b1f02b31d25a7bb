/**
 * `deno task sync` against a small fake backend on a real socket that speaks the stage-stream
 * contract: step frames, error frames, exactly one complete, keepalive comments, refusals.
 */
import assert from "node:assert/strict";
import { type SyncIo, syncMain } from "../../scripts/sync/run.ts";
import { SyncProgress } from "../../scripts/sync/progress.ts";
import { resultTable } from "../../scripts/sync/render.ts";
import { resolveEndpointRefs } from "../../scripts/sync/endpoints.ts";

const KEY = "k".repeat(64);

type Frame = { event: string; data: unknown } | { comment: string };

function sseText(frames: Frame[]): string {
  return frames.map((f) =>
    "comment" in f ? `: ${f.comment}\n\n` : `event: ${f.event}\ndata: ${JSON.stringify(f.data)}\n\n`
  ).join("");
}

function sse(frames: Frame[] | string, chunkSize = 0): Response {
  const text = typeof frames === "string" ? frames : sseText(frames);
  const bytes = new TextEncoder().encode(text);
  const size = chunkSize || bytes.length;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < bytes.length; i += size) controller.enqueue(bytes.slice(i, i + size));
      controller.close();
    },
  });
  return new Response(body, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
  });
}

interface Seen {
  path: string;
  query: string;
  key: string | null;
}

async function withBackend(
  handler: (req: Request) => Response | Promise<Response>,
  run: (url: string, seen: Seen[]) => Promise<void>,
) {
  const seen: Seen[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const url = new URL(req.url);
    seen.push({ path: url.pathname, query: url.search, key: req.headers.get("x-service-api-key") });
    return handler(req);
  });
  try {
    await run(`http://127.0.0.1:${server.addr.port}`, seen);
  } finally {
    await server.shutdown();
  }
}

function captureIo(overrides: Partial<SyncIo> = {}) {
  const io = {
    out: "",
    err: "",
  };
  const sio: SyncIo = {
    fetch: globalThis.fetch,
    out: (t) => void (io.out += t),
    err: (t) => void (io.err += t),
    columns: () => 120,
    color: false,
    now: () => 0,
    isTerminal: false,
    ...overrides,
  };
  return { io, sio };
}

const counts = (created: number, updated: number, unchanged: number, deleted = 0, failed = 0) => ({
  created,
  updated,
  unchanged,
  deleted,
  failed,
});

function stage(step: string, total: number, result: ReturnType<typeof counts>): Frame[] {
  const frames: Frame[] = [{ event: "step", data: { step, status: "started", message: "go" } }];
  for (let i = 1; i <= total; i++) {
    frames.push({
      event: "step",
      data: { step, status: "progress", message: `item ${i}`, progress: { current: i, total } },
    });
  }
  frames.push({ event: "step", data: { step, status: "completed", message: "done", result } });
  return frames;
}

Deno.test("sync: a full update prints plain lines and the result table, exit 0", async () => {
  await withBackend(
    () =>
      sse([
        ...stage("devices", 4, counts(3, 0, 1)),
        { comment: "keepalive" },
        ...stage("storage", 2, counts(0, 2, 4)),
        { event: "complete", data: { ok: true, message: "2 stages done", result: {} } },
      ]),
    async (url, seen) => {
      const { io, sio } = captureIo();
      const code = await syncMain(["--url", url], { BRIDGEBOX_API_KEY: KEY }, sio);
      assert.equal(code, 0, io.err);
      assert.deepEqual(seen, [{ path: "/full-update/stream", query: "", key: KEY }]);
      assert.equal(io.err, "");
      assert.equal(
        io.out,
        `Running a full update (13 stages) on ${url}\n` +
          "devices: started - go\n" +
          "devices: 25% (1/4)\n" +
          "devices: 50% (2/4)\n" +
          "devices: 75% (3/4)\n" +
          "devices: completed in 0.00 s - 3 created, 1 unchanged\n" +
          "storage: started - go\n" +
          "storage: 50% (1/2)\n" +
          "storage: completed in 0.00 s - 2 updated, 4 unchanged\n" +
          "\n" +
          "stage    created  updated  unchanged  deleted  failed  seconds  status\n" +
          "-------  -------  -------  ---------  -------  ------  -------  ------\n" +
          "devices        3        0          1        0       0     0.00  ok\n" +
          "storage        0        2          4        0       0     0.00  ok\n" +
          "-------  -------  -------  ---------  -------  ------  -------  ------\n" +
          "total          3        2          5        0       0     0.00  ok\n" +
          "\nSync completed: 2 stages done.\n",
      );
      assert.ok(!io.out.includes(KEY) && !io.err.includes(KEY));
    },
  );
});

Deno.test("sync: an error frame prints its detail, where and hint once, exit 1", async () => {
  const error = {
    step: "virtual-machines",
    status: "failed",
    error: "Inventory request failed",
    detail: 'virtual-machines for endpoint 1 ("lab") while writing vm-101: 400 Bad Request',
    endpoint_id: 1,
    operation: "bulk create virtual machines",
    url: "http://inv.example/api/virtualization/virtual-machines/",
    upstream_status: 400,
    hint: "Check the inventory token's permissions.",
    object: "vm-101",
  };
  await withBackend(
    () =>
      sse([
        ...stage("devices", 1, counts(1, 0, 0)),
        { event: "step", data: { step: "virtual-machines", status: "started", message: "go" } },
        { event: "error", data: error },
        {
          event: "complete",
          data: {
            ok: false,
            message: "1 stage failed",
            stages: [{ step: "devices", result: counts(1, 0, 0) }],
            errors: [error],
          },
        },
      ]),
    async (url) => {
      const { io, sio } = captureIo();
      const code = await syncMain(["--url", url, "--key", KEY], {}, sio);
      assert.equal(code, 1);
      assert.equal(
        io.err,
        "error in virtual-machines: Inventory request failed\n" +
          '    virtual-machines for endpoint 1 ("lab") while writing vm-101: 400 Bad Request\n' +
          "    operation: bulk create virtual machines\n" +
          "    url: http://inv.example/api/virtualization/virtual-machines/\n" +
          "    upstream status: 400\n" +
          "    object: vm-101\n" +
          "    endpoint id: 1\n" +
          "    hint: Check the inventory token's permissions.\n",
      );
      assert.ok(
        io.out.includes(
          "virtual-machines        -        -          -        -       -     0.00  failed\n",
        ),
      );
      assert.match(io.out, /total .* failed\n/);
      assert.ok(
        io.out.endsWith(
          "\nSync FAILED.\n  - error in virtual-machines: Inventory request failed\n",
        ),
        io.out,
      );
    },
  );
});

Deno.test("sync: an error frame whose detail is an object lists its fields", async () => {
  await withBackend(
    () =>
      sse([
        {
          event: "error",
          data: {
            step: "storage",
            status: "failed",
            detail: { url: "http://h/x", operation: "list storage", hint: "try again" },
          },
        },
        { event: "complete", data: { ok: false, message: "failed" } },
      ]),
    async (url) => {
      const { io, sio } = captureIo();
      assert.equal(await syncMain(["--url", url], { BRIDGEBOX_API_KEY: KEY }, sio), 1);
      assert.equal(
        io.err,
        "error in storage: (no description)\n" +
          "    operation: list storage\n    url: http://h/x\n    hint: try again\n",
      );
    },
  );
});

Deno.test("sync: complete ok:false without an error frame still shows its errors", async () => {
  await withBackend(
    () =>
      sse([
        { event: "step", data: { step: "devices", status: "started" } },
        {
          event: "complete",
          data: { ok: false, message: "cancelled", errors: [{ detail: "server shutting down" }] },
        },
      ]),
    async (url) => {
      const { io, sio } = captureIo();
      assert.equal(await syncMain(["--url", url], { BRIDGEBOX_API_KEY: KEY }, sio), 1);
      assert.equal(io.err, "sync failed: cancelled\n    server shutting down\n");
    },
  );
});

Deno.test("sync: a refusal (non-2xx) prints the server's detail and a hint, exit 1", async () => {
  const answers: Record<string, Response> = {
    "401": Response.json({ detail: "Invalid API key" }, { status: 401 }),
    "400": Response.json({
      detail: "No inventory endpoint found. Please add an inventory endpoint in the database.",
    }, { status: 400 }),
    "404": Response.json({ detail: "Not Found" }, { status: 404 }),
  };
  for (const [status, answer] of Object.entries(answers)) {
    await withBackend(() => answer.clone(), async (url, seen) => {
      const { io, sio } = captureIo();
      const code = await syncMain(
        ["--url", url, "--stages", "devices,storage"],
        { BRIDGEBOX_API_KEY: KEY },
        sio,
      );
      assert.equal(code, 1, status);
      // A refused stream is not retried stage after stage.
      assert.equal(seen.length, 1);
      const detail = (await answer.clone().json()).detail;
      assert.ok(
        io.err.startsWith(
          `server answered ${status} to GET /dcim/devices/create/stream\n    ${detail}\n    hint: `,
        ),
        io.err,
      );
      assert.match(io.out, /No stage reported a result\.\n\nSync FAILED\./);
    });
  }
});

Deno.test("sync: --stages run in pipeline order, --endpoints scopes each", async () => {
  await withBackend(
    (req) => {
      if (new URL(req.url).pathname === "/hypervisor/endpoints") {
        return Response.json([{ id: 1, name: "lab (inv:3)" }, { id: 2, name: "edge" }]);
      }
      const step = new URL(req.url).pathname.includes("storage") ? "storage" : "devices";
      return sse([
        ...stage(step, 1, counts(1, 0, 0)),
        { event: "complete", data: { ok: true, message: step } },
      ]);
    },
    async (url, seen) => {
      const { io, sio } = captureIo();
      const code = await syncMain(
        ["--url", url + "/", "--stages", "storage, devices,storage", "--endpoints", "edge,3"],
        { BRIDGEBOX_API_KEY: KEY },
        sio,
      );
      assert.equal(code, 0, io.err);
      // "3" is the plugin record's id (the one the console shows): its copy is backend id 1.
      assert.deepEqual(seen.map((s) => s.path + decodeURIComponent(s.query)), [
        "/hypervisor/endpoints",
        "/dcim/devices/create/stream?hypervisor_endpoint_ids=2,1",
        "/virtualization/virtual-machines/storage/create/stream?hypervisor_endpoint_ids=2,1",
      ]);
      assert.match(
        io.out,
        /^Running stages devices, storage on .*, hypervisor endpoints 2 "edge", 1 "lab \(inv:3\)"\n/,
      );
      assert.match(io.out, /\nSync completed: 2 stages, one stream each\.\n$/);
      assert.ok(io.out.includes("\ntotal          2        0 "));
    },
  );
});

Deno.test("sync: frames split anywhere (CRLF, one byte at a time, UTF-8) still parse", async () => {
  const text = sseText([
    ...stage("devices", 1, counts(1, 0, 0)),
    { event: "complete", data: { ok: true, message: "fertig – ✓" } },
  ]).replaceAll("\n", "\r\n");
  await withBackend(() => sse(text, 1), async (url) => {
    const { io, sio } = captureIo();
    assert.equal(await syncMain(["--url", url], { BRIDGEBOX_API_KEY: KEY }, sio), 0, io.err);
    assert.match(io.out, /Sync completed: fertig – ✓\.\n$/);
  });
});

Deno.test("sync: a stream that ends without complete is a failure", async () => {
  await withBackend(() => sse(stage("devices", 2, counts(1, 0, 0)).slice(0, 2)), async (url) => {
    const { io, sio } = captureIo();
    assert.equal(await syncMain(["--url", url], { BRIDGEBOX_API_KEY: KEY }, sio), 1);
    assert.equal(
      io.err,
      "the stream GET /full-update/stream ended before its complete frame\n" +
        "    the server closed the stream\n",
    );
    assert.match(io.out, /devices .* failed\n/);
  });
});

Deno.test("sync: a silent stream (no frame, no keepalive) times out", async () => {
  await withBackend(
    () =>
      new Response(new ReadableStream({ start() {} }), {
        headers: { "content-type": "text/event-stream" },
      }),
    async (url) => {
      const { io, sio } = captureIo({ idleTimeoutMs: 200 });
      assert.equal(await syncMain(["--url", url], { BRIDGEBOX_API_KEY: KEY }, sio), 1);
      assert.match(io.err, /ended before its complete frame\n {4}.*no frame or keepalive/);
    },
  );
});

Deno.test("sync: a redirect is reported, never followed with the key", async () => {
  await withBackend(() => Response.json({}), async (elsewhere, elsewhereSeen) => {
    await withBackend(
      () => new Response(null, { status: 302, headers: { location: `${elsewhere}/steal` } }),
      async (url) => {
        const { io, sio } = captureIo();
        assert.equal(await syncMain(["--url", url], { BRIDGEBOX_API_KEY: KEY }, sio), 1);
        assert.deepEqual(elsewhereSeen, []);
        assert.match(io.err, new RegExp(`redirected to ${elsewhere}/steal; not followed`));
      },
    );
  });
});

Deno.test("sync: an unreachable server says so and how to start one", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const { io, sio } = captureIo();
  const code = await syncMain(
    ["--url", `http://127.0.0.1:${port}`],
    { BRIDGEBOX_API_KEY: KEY },
    sio,
  );
  assert.equal(code, 1);
  assert.match(io.err, new RegExp(`^no answer for GET /full-update/stream\n {4}cannot reach`));
  assert.match(io.err, /hint: Is the server running\?/);
});

Deno.test("sync: Ctrl-C closes the stream (the server sees the disconnect), exit 130", async () => {
  const controller = new AbortController();
  const serverSawDisconnect = Promise.withResolvers<void>();
  await withBackend(
    (req) => {
      req.signal.addEventListener("abort", () => serverSawDisconnect.resolve());
      const first = new TextEncoder().encode(sseText(stage("devices", 1, counts(0, 0, 0))));
      return new Response(
        new ReadableStream({
          start(c) {
            c.enqueue(first);
          },
        }),
        { headers: { "content-type": "text/event-stream" } },
      );
    },
    async (url) => {
      const { io, sio } = captureIo({
        signal: controller.signal,
        out: (t) => {
          if (t.startsWith("devices: completed")) controller.abort();
        },
      });
      const code = await syncMain(["--url", url], { BRIDGEBOX_API_KEY: KEY }, sio);
      assert.equal(code, 130);
      await serverSawDisconnect.promise;
      assert.match(io.err, /Interrupted/);
    },
  );
});

Deno.test("sync: on a terminal, one progress bar per stage redrawn in place", async () => {
  await withBackend(
    () =>
      sse([
        ...stage("devices", 2, counts(2, 0, 0)),
        ...stage("storage", 1, counts(0, 0, 1)),
        { event: "complete", data: { ok: true, message: "done" } },
      ]),
    async (url) => {
      let clock = 0;
      const { io, sio } = captureIo({ isTerminal: true, now: () => (clock += 1000) });
      assert.equal(await syncMain(["--url", url], { BRIDGEBOX_API_KEY: KEY }, sio), 0, io.err);
      // Redraws move the cursor up over the block (CSI n F) and clear each line (CSI 2K).
      assert.ok(io.out.includes("\x1b[1F\x1b[2K"), JSON.stringify(io.out));
      assert.ok(io.out.includes("\x1b[2F\x1b[2K"), JSON.stringify(io.out));
      const finalBlock = io.out.slice(io.out.lastIndexOf("\x1b[2F"));
      assert.match(finalBlock, /✔ devices {12}█{24} {9}2\/2 {2}2 created · \d+\.\d\d s\n/);
      assert.match(finalBlock, /✔ storage {12}█{24} {9}1\/1 {2}1 unchanged · /);
      assert.match(io.out, /\nstage {4}created/);
      assert.ok(!io.out.includes("started - "), "no plain lines on a terminal");
    },
  );
});

Deno.test("sync: --plain keeps plain lines on a terminal", async () => {
  await withBackend(
    () => sse([...stage("devices", 1, counts(1, 0, 0)), { event: "complete", data: { ok: true } }]),
    async (url) => {
      const { io, sio } = captureIo({ isTerminal: true });
      assert.equal(await syncMain(["--url", url, "--plain"], { BRIDGEBOX_API_KEY: KEY }, sio), 0);
      assert.ok(!io.out.includes("\x1b["));
      assert.match(io.out, /devices: started - go\n/);
    },
  );
});

Deno.test("sync: usage errors exit 2 and name the problem", async () => {
  const cases: [string[], Record<string, string>, RegExp][] = [
    [[], {}, /no API key: set BRIDGEBOX_API_KEY/],
    [["--stages", "devices,nope"], { BRIDGEBOX_API_KEY: KEY }, /unknown stage "nope" \(known: /],
    [["--endpoints", " , "], { BRIDGEBOX_API_KEY: KEY }, /--endpoints: name at least one endpoint/],
    [["--url", "ftp://h"], { BRIDGEBOX_API_KEY: KEY }, /expected http:\/\/ or https:\/\//],
    [["--bogus"], { BRIDGEBOX_API_KEY: KEY }, /Unknown option '--bogus'/],
    [[], { BRIDGEBOX_API_KEY: `${KEY}\nsecond line` }, /characters a header cannot carry/],
    [["--key", `${KEY} x`], {}, /characters a header cannot carry/],
  ];
  for (const [args, env, message] of cases) {
    const { io, sio } = captureIo();
    assert.equal(await syncMain(args, env, sio), 2, args.join(" "));
    assert.match(io.err, message);
    assert.ok(!io.err.includes(KEY), "the key is never echoed");
  }
  const { io, sio } = captureIo();
  assert.equal(await syncMain(["--list"], {}, sio), 0);
  assert.match(io.out.split("\n")[0], /^ 1 {2}devices {13}\S/);
  assert.match(io.out.split("\n")[12], /^13 {2}backup-routines {5}\S/);
});

Deno.test("sync: the table's seconds run from a stage's start to its end", () => {
  let clock = 1_000;
  const progress = new SyncProgress(() => clock);
  progress.apply({ kind: "step", step: "devices", status: "started" });
  clock = 3_500;
  progress.apply({
    kind: "step",
    step: "devices",
    status: "completed",
    result: counts(1, 2, 3, 4, 0),
  });
  progress.apply({ kind: "complete", ok: true });
  assert.match(resultTable(progress), /devices {8}1 {8}2 {10}3 {8}4 {7}0 {5}2\.50 {2}ok\n/);
  assert.equal(progress.ok, true);
});

Deno.test("sync: a stage with an error frame stays failed when it completes its run", async () => {
  await withBackend(
    () =>
      sse([
        { event: "step", data: { step: "ip-addresses", status: "started" } },
        {
          event: "error",
          data: { step: "ip-addresses", status: "failed", error: "Inventory request failed" },
        },
        {
          event: "step",
          data: { step: "ip-addresses", status: "completed", result: counts(0, 0, 0, 0, 1) },
        },
        { event: "complete", data: { ok: true, message: "done" } },
      ]),
    async (url) => {
      const { io, sio } = captureIo();
      assert.equal(await syncMain(["--url", url], { BRIDGEBOX_API_KEY: KEY }, sio), 1);
      assert.ok(
        io.out.includes(
          "ip-addresses        0        0          0        0       1     0.00  failed",
        ),
        io.out,
      );
    },
  );
});

Deno.test("sync --endpoints: the id users see, the backend copy's id or a name; ambiguity and typos said", () => {
  const copies = [
    { id: 2, name: "typo-port (inv:3)" },
    { id: 3, name: "lab" },
    { id: 5, name: "edge (inv:9)" },
  ];
  const ids = (refs: string[]) => {
    const r = resolveEndpointRefs(refs, copies);
    return r.ok ? r.endpoints.map((e) => e.id) : r.message;
  };
  assert.deepEqual(ids(["9"]), [5], "the plugin record's id");
  assert.deepEqual(ids(["5"]), [5], "the backend copy's id");
  assert.deepEqual(ids(["edge", "lab", "edge (inv:9)"]), [5, 3]);
  assert.match(
    String(ids(["3"])),
    /3 is ambiguous: backend endpoint 3 is "lab", and plugin endpoint 3 is "typo-port \(inv:3\)"; name it/,
  );
  assert.equal(
    ids(["labb"]),
    '--endpoints: no endpoint "labb"; the backend\'s hypervisor endpoints: 2 "typo-port (inv:3)", 3 "lab", 5 "edge (inv:9)"',
  );
});
