// deno-lint-ignore-file no-explicit-any
/**
 * The sync streams over WebSocket on a real socket (docs/sync.md "WebSocket streams"): the
 * same frames as the SSE, one JSON message each, one `complete` last and close 1000; the key in
 * the first message only (a header or the URL never counts); refusals as one `error` message
 * and a close code 4000 + the HTTP status; a client that goes away stops the work.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import {
  addInventoryCopy,
  inventoryWrites,
  KEY,
  type SseFrame,
  syncWorld,
  WaitingLogger,
} from "./_sync_harness.ts";
import { STAGES } from "../../domain/sync/runner.ts";
import { testDeps } from "../_helpers.ts";
import { createBackendServices } from "../../routes/backend/mod.ts";
import { syncRoutes } from "../../routes/backend/sync.ts";
import { MAX_FAILURES } from "../../domain/lockout.ts";
import { MAX_PENDING_PER_CLIENT } from "../../routes/backend/sync_socket.ts";
import WebSocketClient from "ws";

const FAST_TASKS = { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" };

interface Opened {
  socket: WebSocket;
  frames: SseFrame[];
  /** The close code and reason, once closed. */
  closed: Promise<{ code: number; reason: string }>;
  /** Resolves with the first frame for which `until` is true. */
  frame(until: (f: SseFrame) => boolean): Promise<SseFrame>;
}

/** Opens a stream socket; `first` (unless null) is sent as the first message on open. */
function open(
  url: string,
  first: string | null = JSON.stringify({ api_key: KEY }),
  init?: { headers?: Record<string, string> },
): Opened {
  const socket = init ? new WebSocket(url, init as any) : new WebSocket(url);
  const frames: SseFrame[] = [];
  let waiters: { until: (f: SseFrame) => boolean; resolve: (f: SseFrame) => void }[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.onclose = (e) => resolve({ code: e.code, reason: e.reason });
  });
  socket.onopen = () => {
    if (first !== null) socket.send(first);
  };
  socket.onmessage = (e) => {
    const frame = JSON.parse(String(e.data));
    frames.push(frame);
    waiters = waiters.filter((w) => {
      if (!w.until(frame)) return true;
      w.resolve(frame);
      return false;
    });
  };
  const frame = (until: (f: SseFrame) => boolean) => {
    const found = frames.find(until);
    if (found) return Promise.resolve(found);
    return new Promise<SseFrame>((resolve) => waiters.push({ until, resolve }));
  };
  return { socket, frames, closed, frame };
}

const wsBase = (base: string) => base.replace(/^http/, "ws");

/** `promise`, or a failure naming `what` if it has not settled after 30 s (a hang is red). */
async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stuck = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within 30 s`)), 30_000);
  });
  try {
    return await Promise.race([promise, stuck]);
  } finally {
    clearTimeout(timer);
  }
}

/** A frame without what differs between two runs of the same plan (timings, clocks). */
function stable(frame: SseFrame): string {
  return JSON.stringify(frame, (k, v) => {
    if (k === "elapsed_ms") return 0;
    return typeof v === "string" ? v.replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "<time>") : v;
  });
}

Deno.test("sync socket: frames in order, one complete then close 1000, the same frames as SSE, options from the query", async () => {
  const world = await syncWorld("nodes=1,vms=3,cts=1,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    // A dry run over both transports: it writes nothing, so both read the same state.
    const ws = open(`${wsBase(world.base)}/full-update/ws?dry_run=true`);
    const { code, reason } = await ws.closed;
    assert.equal(code, 1000, reason);
    const sse = await world.stream("/full-update/stream?dry_run=true");
    const frames = ws.frames;
    assert.equal(frames.filter((f) => f.event === "complete").length, 1);
    assert.equal(frames.at(-1)!.event, "complete");
    assert.ok(frames.some((f) => f.event === "plan"), "dry_run reached the run: plan frames");
    assert.deepEqual(inventoryWrites(world.seen), [], "a dry run writes nothing");
    // Every stage started then completed, in the pipeline's order.
    const steps = frames.filter((f) => f.event === "step" && f.data.status !== "progress")
      .map((f) => `${f.data.step}:${f.data.status}`);
    assert.deepEqual(
      steps,
      STAGES.flatMap((s) => [`${s.type}:started`, `${s.type}:completed`]),
    );
    assert.deepEqual(frames.map(stable).sort(), sse.map(stable).sort());
    assert.deepEqual(
      frames.filter((f) => f.event !== "step" || f.data.status !== "progress").map(stable),
      sse.filter((f) => f.event !== "step" || f.data.status !== "progress").map(stable),
    );

    // A real run writes, and its complete says so.
    const real = open(`${wsBase(world.base)}/virtualization/virtual-machines/create/ws`);
    assert.equal((await real.closed).code, 1000);
    const done = real.frames.at(-1)!;
    assert.equal(done.event, "complete");
    assert.equal(done.data.ok, true, JSON.stringify(done.data));
    assert.equal((await world.inventory("virtualization/virtual-machines/")).length, 4);
  } finally {
    await world.close();
  }
});

Deno.test("sync socket: a client that disconnects stops the work (no write after the abort)", async () => {
  const logger = new WaitingLogger();
  let held: ((signal: AbortSignal) => void) | null = null;
  const heldCall = new Promise<AbortSignal>((resolve) => held = resolve);
  const gatedFetch: typeof fetch = (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (
      held && init?.method === "POST" && url.includes("/api/virtualization/virtual-machines/")
    ) {
      const signal = init.signal!;
      const notify = held;
      held = null;
      notify(signal);
      return new Promise((_, reject) => {
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    }
    return fetch(input, init);
  };
  const world = await syncWorld(undefined, FAST_TASKS, { logger, fetch: gatedFetch });
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const ended = logger.next("sync run ended");
    const ws = open(`${wsBase(world.base)}/full-update/ws`);
    const signal = await heldCall;
    const writesAtHold = inventoryWrites(world.seen).length;
    ws.socket.close();
    await ws.closed;
    const line = await within(ended, "the run ending after its client left");
    assert.equal(signal.aborted, true, "the held inventory call saw the abort");
    assert.equal(line.cancelled, true);
    assert.equal(line.ok, false);
    assert.deepEqual(inventoryWrites(world.seen).slice(writesAtHold), []);
    assert.equal(ws.frames.filter((f) => f.event === "complete").length, 0);
    // The endpoint is free again: the next run is not refused as running.
    const again = open(`${wsBase(world.base)}/dcim/devices/create/ws`);
    assert.equal((await again.closed).code, 1000);
    assert.equal(again.frames.at(-1)!.event, "complete");
  } finally {
    await world.close();
  }
});

Deno.test("sync socket: auth refused cleanly: wrong or missing key, key in a header or the URL, lockout", async () => {
  const logger = new WaitingLogger();
  const world = await syncWorld("nodes=1,vms=1,cts=0,storages=1", FAST_TASKS, { logger });
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const url = `${wsBase(world.base)}/dcim/devices/create/ws`;
    const refused = async (o: Opened, code: number) => {
      const closed = await o.closed;
      assert.equal(closed.code, code, `${closed.reason} ${JSON.stringify(o.frames)}`);
      assert.equal(o.frames.length, 1, JSON.stringify(o.frames));
      assert.equal(o.frames[0].event, "error");
      assert.equal(o.frames[0].data.http_status, code - 4000);
      return o.frames[0].data;
    };
    const wrong = await refused(open(url, JSON.stringify({ api_key: "not-the-key" })), 4401);
    assert.equal(wrong.reason, "invalid_key");
    assert.match(wrong.detail, /key/i);
    await refused(open(url, "not json"), 4401);
    await refused(open(url, JSON.stringify({ key: KEY })), 4401);
    // The header a non-browser client could send is not read: the first message decides.
    await refused(
      open(url, JSON.stringify({ api_key: "wrong" }), { headers: { "x-service-api-key": KEY } }),
      4401,
    );
    // A key in the URL is refused even with the right key in the first message.
    const inUrl = await refused(open(`${url}?api_key=${KEY}`), 4400);
    assert.equal(inUrl.reason, "key_in_url");
    assert.ok(!JSON.stringify(inUrl).includes(KEY), "the refusal does not echo the key");
    // Run options are checked after the key, as the SSE route's 422.
    const bad = await refused(open(`${url}?dry_run=maybe`), 4422);
    assert.equal(bad.detail[0].loc.join("."), "query.dry_run");
    assert.equal(logger.lines.filter((l) => l.message === "sync run ended").length, 0);
    assert.deepEqual(inventoryWrites(world.seen), []);
    // Plain GET (no upgrade): the key header applies as everywhere, then 426 says what to do.
    const plain = await fetch(url.replace(/^ws/, "http"), {
      headers: { "x-service-api-key": KEY },
    });
    assert.equal(plain.status, 426);
    assert.match((await plain.json()).detail, /\/dcim\/devices\/create\/stream/);
    const anonymous = await fetch(url.replace(/^ws/, "http"));
    assert.equal(anonymous.status, 401);
    await anonymous.body?.cancel();
    // Wrong keys count toward the lockout like wrong headers (1 above + 1 + the rest here).
    for (let i = 0; i < MAX_FAILURES; i++) {
      await open(url, JSON.stringify({ api_key: `wrong-${i}` })).closed;
    }
    const locked = await refused(open(url), 4429);
    assert.equal(locked.reason, "locked_out");
    assert.equal(typeof locked.retry_after, "number");
  } finally {
    await world.close();
  }
});

Deno.test("sync socket: one run per endpoint (4409 naming the run), a second message ends the run (4400)", async () => {
  const logger = new WaitingLogger();
  let held: (() => void) | null = null;
  const reached = new Promise<void>((resolve) => held = resolve);
  const gate = Promise.withResolvers<void>();
  const gatedFetch: typeof fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (held && url.includes("/api/dcim/sites/")) {
      const notify = held;
      held = null;
      notify();
      await gate.promise;
    }
    return fetch(input, init);
  };
  const world = await syncWorld("nodes=1,vms=1,cts=0,storages=1", FAST_TASKS, {
    logger,
    fetch: gatedFetch,
  });
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const first = open(`${wsBase(world.base)}/dcim/devices/create/ws`);
    await reached;
    const second = open(`${wsBase(world.base)}/full-update/ws`);
    const closed = await second.closed;
    assert.equal(closed.code, 4409, closed.reason);
    assert.equal(second.frames[0].data.reason, "sync_running");
    assert.equal(second.frames[0].data.running.what, "devices");
    // The held run's client sends a second message: the stream takes one, the run stops.
    const ended = logger.next("sync run ended");
    first.socket.send("{}");
    assert.equal((await first.closed).code, 4400);
    assert.match(first.frames.at(-1)!.data.detail, /takes one message/);
    gate.resolve();
    assert.equal((await within(ended, "the run ending")).cancelled, true);
  } finally {
    gate.resolve();
    await world.close();
  }
});

Deno.test("sync socket: no authentication message in time closes 4408 (also when the time runs out before the socket is open); an oversized one 4413", async () => {
  const deps = await testDeps({});
  const services = createBackendServices(deps);
  // Two servers. The timeout one waits 0 ms for the key: its time runs out at the upgrade, most
  // often before the socket is open (as a loaded server does with a longer wait); the client
  // must still get the 4408 and its frame. The oversized message goes to one that waits a
  // minute, so its 4413 cannot lose a race with the 4408 (it is sent once the socket is open).
  const serve = (authTimeoutMs: number) =>
    Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      new Hono().route("/", syncRoutes(services, { authTimeoutMs })).fetch,
    );
  const quick = serve(0);
  const patient = serve(60_000);
  const wsUrl = (server: Deno.HttpServer<Deno.NetAddr>) =>
    `ws://127.0.0.1:${server.addr.port}/full-update/ws`;
  try {
    const silent = open(wsUrl(quick), null, { headers: { "x-service-api-key": KEY } });
    const closed = await within(silent.closed, "the 4408 close");
    assert.equal(closed.code, 4408, closed.reason);
    assert.equal(silent.frames[0].data.reason, "auth_timeout");
    assert.match(silent.frames[0].data.detail, /api_key/);
    const big = open(wsUrl(patient), JSON.stringify({ api_key: "x".repeat(5000) }));
    const bigClosed = await big.closed;
    assert.equal(bigClosed.code, 4413, bigClosed.reason);
    assert.equal(big.frames[0].data.http_status, 413);
  } finally {
    await quick.shutdown();
    await patient.shutdown();
    deps.kv.close();
  }
});

Deno.test("sync socket: at most 8 sockets per client wait for their key (503 beyond); a settled one frees its place", async () => {
  const deps = await testDeps({});
  const services = createBackendServices(deps);
  const app = new Hono().route("/", syncRoutes(services, { authTimeoutMs: 60_000 }));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
  const url = `ws://127.0.0.1:${server.addr.port}/full-update/ws`;
  /** One handshake from another client: 101 if the socket opened, else the refusal's status. */
  const handshake = () =>
    new Promise<number>((resolve, reject) => {
      const client = new WebSocketClient(url);
      client.on("open", () => {
        client.terminate();
        resolve(101);
      });
      client.on("unexpected-response", (request, response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => text += chunk);
        response.on("end", () => {
          request.destroy();
          try {
            assert.match(JSON.parse(text).detail, /waiting for their authentication message/);
            assert.equal(response.headers["retry-after"], "5");
            resolve(response.statusCode ?? 0);
          } catch (error) {
            reject(error);
          }
        });
      });
      client.on("error", reject);
    });
  /** true once the socket is open, false if the handshake was refused. */
  const accepted = (o: Opened) =>
    new Promise<boolean>((resolve) => {
      o.socket.addEventListener("open", () => resolve(true), { once: true });
      o.socket.addEventListener("close", () => resolve(false), { once: true });
    });
  const waiting: Opened[] = [];
  try {
    for (let i = 0; i < MAX_PENDING_PER_CLIENT; i++) {
      const o = open(url, null);
      waiting.push(o);
      assert.equal(await accepted(o), true, `socket ${i + 1} accepted`);
    }
    assert.equal(await handshake(), 503);
    // One of them sends a (wrong) key: refused, it no longer waits, its place is free.
    waiting[0].socket.send(JSON.stringify({ api_key: "wrong" }));
    assert.equal((await waiting[0].closed).code, 4401);
    const next = open(url, null);
    waiting.push(next);
    assert.equal(await accepted(next), true, "the freed place is taken");
    assert.equal(await handshake(), 503);
  } finally {
    for (const o of waiting) o.socket.close();
    await Promise.all(waiting.map((o) => o.closed));
    await server.shutdown();
    deps.kv.close();
  }
});
