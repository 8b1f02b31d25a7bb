// deno-lint-ignore-file no-explicit-any
/**
 * Streams: 100 clients disconnecting at random points from every SSE route (each stage stream,
 * the full update, a durable job's stream, the provisioning stream) leave nothing behind.
 *
 * How it is measured: Deno 2 has no `Deno.resources()` nor op metrics, so the test counts what
 * the server can leak itself: KV watches (the app's KV handle is wrapped to count open watch
 * streams) and timers (setTimeout/setInterval are wrapped to count those neither fired nor
 * cleared). After the disconnects both must come back to where they were before, and no request
 * of the server to itself (stage work, inventory writes) may follow once they have.
 */
import assert from "node:assert/strict";
import { jobsWorld, P } from "../e2e/_jobs_world.ts";
import type { AppDeps } from "../../routes/_lib/deps.ts";

interface Counters {
  watches: number;
  timers: Set<number>;
}

function countingKv(kv: Deno.Kv, counters: Counters): Deno.Kv {
  return new Proxy(kv, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (property !== "watch") return typeof value === "function" ? value.bind(target) : value;
      return (...args: Parameters<Deno.Kv["watch"]>) => {
        const stream = target.watch(...args);
        counters.watches++;
        let open = true;
        const close = () => {
          if (open) counters.watches--;
          open = false;
        };
        const reader = stream.getReader();
        return new ReadableStream({
          async pull(controller) {
            try {
              const { value, done } = await reader.read();
              if (done) {
                close();
                controller.close();
              } else controller.enqueue(value);
            } catch (error) {
              close();
              controller.error(error);
            }
          },
          async cancel(reason) {
            close();
            await reader.cancel(reason);
          },
        });
      };
    },
  });
}

function countTimers(counters: Counters): () => void {
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
        counters.timers.delete(id);
        if (typeof fn === "function") fn(...a);
      },
      ms,
      ...rest,
    );
    counters.timers.add(id);
    return id;
  };
  g.setInterval = (fn: any, ms?: number, ...rest: any[]) => {
    const id = original.setInterval(fn, ms, ...rest);
    counters.timers.add(id);
    return id;
  };
  g.clearTimeout = (id?: number) => {
    if (id !== undefined) counters.timers.delete(id);
    original.clearTimeout(id);
  };
  g.clearInterval = (id?: number) => {
    if (id !== undefined) counters.timers.delete(id);
    original.clearInterval(id);
  };
  return () => Object.assign(g, original);
}

/** Opens a stream, reads `frames` SSE frames (or fewer if it ends), then disconnects. */
async function disconnectAfter(url: string, init: RequestInit, frames: number): Promise<number> {
  const abort = new AbortController();
  const res = await fetch(url, { ...init, signal: abort.signal });
  if (!res.headers.get("content-type")?.includes("text/event-stream")) {
    throw new Error(`${url}: ${res.status} ${await res.text()}`);
  }
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let seen = 0;
  let text = "";
  while (seen < frames) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
    seen = text.split("\n\n").length - 1;
  }
  abort.abort();
  await reader.cancel().catch(() => {});
  return seen;
}

async function settled(counters: Counters, baseline: { watches: number; timers: number }) {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (counters.watches <= baseline.watches && counters.timers.size <= baseline.timers) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

Deno.test({
  name: "streams: 100 random disconnects from every SSE route leak no KV watch, timer or work",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const counters: Counters = { watches: 0, timers: new Set() };
  const restore = countTimers(counters);
  const kv = countingKv(await Deno.openKv(":memory:"), counters);
  const world = await jobsWorld(
    {
      HYPERVISOR_MOCK_SEED: "nodes=2,vms=40,cts=10,storages=2",
      SERVICE_ALLOW_LOOPBACK_TARGETS: "true",
      HOST_AGENT_MOCK_TOKEN: "streams-agent-token",
    },
    { kv } as Partial<AppDeps>,
  );
  try {
    const { backend } = await world.wire();
    const key = { "x-service-api-key": backend.token };
    // One finished job (its stream replays and ends) as the job stream's subject.
    const job = await world.call("POST", P + "sync/", { sync_types: ["all"] });
    assert.equal(job.status, 201, JSON.stringify(job.body));
    await world.sse(`${P}jobs/${job.body.job_id}/stream`);

    const openapi = await (await fetch(`${world.base}/openapi.json`, { headers: key })).json();
    const stagePaths = Object.keys(openapi.paths).filter((p) =>
      p.endsWith("/stream") && openapi.paths[p].get
    );
    assert.ok(stagePaths.length >= 13, stagePaths.join(" "));
    const sha = "a".repeat(64);
    const routes: { url: string; init: RequestInit }[] = [
      ...stagePaths.map((p) => ({ url: world.base + p, init: { headers: key } })),
      {
        url: `${world.base}${P}jobs/${job.body.job_id}/stream`,
        init: {
          headers: { authorization: `Token ${(await import("../e2e/_jobs_world.ts")).ROOT}` },
        },
      },
      {
        url: `${world.base}/cloud/microvm/provision/stream`,
        init: {
          method: "POST",
          headers: { ...key, "content-type": "application/json" },
          body: JSON.stringify({
            host_agent_base_url: `${world.base}/host-agent`,
            host_agent_token: "streams-agent-token",
            name: "edge-1",
            image: {
              name: "alpine",
              kernel_image_url: "https://images.example/vmlinux",
              kernel_image_sha256: sha,
              rootfs_image_url: "https://images.example/rootfs.ext4",
              rootfs_image_sha256: sha,
            },
          }),
        },
      },
    ];

    await settled(counters, { watches: 0, timers: 0 });
    const baseline = { watches: counters.watches, timers: counters.timers.size };
    let framesRead = 0;
    for (let i = 0; i < 100; i++) {
      const route = routes[i % routes.length];
      const init = route.init.body ? { ...route.init, body: route.init.body } : route.init;
      framesRead += await disconnectAfter(route.url, init, Math.floor(Math.random() * 4));
    }
    await settled(counters, baseline);
    const requestsAtRest = world.seen.length;
    assert.equal(counters.watches, baseline.watches, "KV watches left open");
    assert.equal(counters.timers.size, baseline.timers, "timers left pending");
    // Nothing keeps working once the counters are back: no further request of the server.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(world.seen.length, requestsAtRest, world.seen.slice(requestsAtRest).join("\n"));
    console.log(
      `streams: 100 disconnects over ${routes.length} routes (${framesRead} frames read); ` +
        `KV watches ${baseline.watches} → ${counters.watches}, timers ${baseline.timers} → ` +
        `${counters.timers.size}`,
    );
  } finally {
    await world.close();
    restore();
  }
});

Deno.test({
  name: "streams: a client that never reads a full sync's stream costs the server a bounded buffer",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const { addInventoryCopy, KEY, syncWorld } = await import("../e2e/_sync_harness.ts");
  const world = await syncWorld("nodes=2,vms=900,cts=100,storages=2", {
    HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
  });
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const before = Deno.memoryUsage().rss;
    // Opened and never read: frames pile up in the server's stream and the socket buffers.
    const abort = new AbortController();
    const stalled = await fetch(`${world.base}/full-update/stream`, {
      headers: { "x-service-api-key": KEY },
      signal: abort.signal,
    });
    assert.equal(stalled.status, 200);
    // The run goes on regardless (frames are few: one per stage step, progress at most every
    // 250 ms), so the inventory fills while nobody reads.
    const deadline = Date.now() + 60_000;
    let count = 0;
    while (count < 1000 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      count = (await world.inventoryCall("GET", "virtualization/virtual-machines/?limit=1")).body
        .count;
    }
    const growth = Deno.memoryUsage().rss - before;
    abort.abort();
    await stalled.body?.cancel().catch(() => {});
    console.log(
      `streams: a stalled reader of a 1,000-guest full sync; the sync wrote ${count} VMs, ` +
        `RSS grew ${(growth / 2 ** 20).toFixed(1)} MiB`,
    );
    assert.equal(count, 1000, "the sync stalled behind a client that does not read");
    assert.ok(growth < 256 * 2 ** 20, `RSS grew ${growth} bytes`);
  } finally {
    await world.close();
  }
});
