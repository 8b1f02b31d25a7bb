// deno-lint-ignore-file no-explicit-any
/**
 * WebSocket streams (docs/sync.md "WebSocket streams"): clients leaving every `…/ws` route at
 * random points (before sending the key, right after it, after some frames) leave nothing behind:
 * no timer of the socket (authentication timeout, keepalive) still armed, no run still holding an
 * endpoint (the next run completes), nothing crashed. Timers are counted as in streams_test.ts.
 */
import assert from "node:assert/strict";
import { addInventoryCopy, KEY, syncWorld } from "../e2e/_sync_harness.ts";
import { type LogLevel, MemoryLogger } from "../../infra/logger.ts";

function countTimers(live: Set<number>): () => void {
  const g = globalThis as any;
  const original = {
    setTimeout: g.setTimeout,
    setInterval: g.setInterval,
    clearTimeout: g.clearTimeout,
    clearInterval: g.clearInterval,
  };
  g.setTimeout = (fn: any, ms?: number, ...rest: any[]) => {
    const id = original.setTimeout(
      (...a: any[]) => {
        live.delete(id);
        if (typeof fn === "function") fn(...a);
      },
      ms,
      ...rest,
    );
    live.add(id);
    return id;
  };
  g.setInterval = (fn: any, ms?: number, ...rest: any[]) => {
    const id = original.setInterval(fn, ms, ...rest);
    live.add(id);
    return id;
  };
  g.clearTimeout = (id?: number) => {
    if (id !== undefined) live.delete(id);
    original.clearTimeout(id);
  };
  g.clearInterval = (id?: number) => {
    if (id !== undefined) live.delete(id);
    original.clearInterval(id);
  };
  return () => Object.assign(g, original);
}

/** Opens `url`; `frames` < 0: close on open without a key; else close after that many frames. */
function leaveAfter(url: string, frames: number): Promise<number> {
  const socket = new WebSocket(url);
  let seen = 0;
  return new Promise((resolve) => {
    socket.onopen = () => {
      if (frames < 0) return socket.close();
      socket.send(JSON.stringify({ api_key: KEY }));
      if (frames === 0) socket.close();
    };
    socket.onmessage = () => {
      seen++;
      if (seen >= frames) socket.close();
    };
    socket.onclose = () => resolve(seen);
  });
}

Deno.test({
  name: "socket streams: 60 random disconnects from every …/ws route leave no timer, hold or crash",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const live = new Set<number>();
  const restore = countTimers(live);
  const logger = new MemoryLogger();
  const world = await syncWorld("nodes=2,vms=12,cts=4,storages=2", {
    HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
  }, { logger });
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const openapi = await (await fetch(`${world.base}/openapi.json`, {
      headers: { "x-service-api-key": KEY },
    })).json();
    const paths = Object.keys(openapi.paths).filter((p) => p.endsWith("/ws"));
    assert.equal(paths.length, 14, paths.join(" "));
    const baseline = live.size;
    const ws = world.base.replace(/^http/, "ws");
    for (let i = 0; i < 60; i++) {
      const path = paths[i % paths.length];
      await leaveAfter(`${ws}${path}`, Math.floor(Math.random() * 8) - 1);
    }
    // Every hold was released: a full run after them completes (a cancelled run still finishing
    // is waited for, never reported as running).
    const last = new WebSocket(`${ws}/full-update/ws`);
    const frames: any[] = [];
    const closed = new Promise<number>((resolve) => last.onclose = (e) => resolve(e.code));
    last.onopen = () => last.send(JSON.stringify({ api_key: KEY }));
    last.onmessage = (e) => frames.push(JSON.parse(String(e.data)));
    assert.equal(await closed, 1000, JSON.stringify(frames.at(-1)));
    assert.equal(frames.at(-1).event, "complete");
    assert.equal(frames.at(-1).data.ok, true);
    // Timers of the sockets are gone once their runs ended (polled: nothing signals "no timer").
    const deadline = Date.now() + 10_000;
    while (live.size > baseline && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(live.size <= baseline, `${live.size - baseline} timer(s) left armed`);
    const bad = logger.lines.filter((l: { message: string; level: LogLevel }) =>
      l.message === "sync run crashed" || l.message.startsWith("sync socket refused") ||
      l.message === "sync run hold not released"
    );
    assert.deepEqual(bad, []);
  } finally {
    restore();
    await world.close();
  }
});
