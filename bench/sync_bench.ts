/**
 * Sync figures (issue 8): a mock cluster of 10,000 guests
 * (HYPERVISOR_MOCK_SEED=nodes=10,vms=8000,cts=2000,storages=2) synced into the embedded
 * inventory through `/full-update/stream`, twice over: with the copies reached over a socket,
 * and answered in-process (the app's own port, no socket). For each:
 *
 * - first full update: time (target < 60 s), objects written, objects written per second next
 *   to the raw Deno KV write ceiling measured in the same run (target ≥ 0.5 of it);
 * - second run with nothing changed: time (target < 15 s) and writes (target 0);
 * - a run after changing 1% of the guests through the mock's /pve API: time (target < 15 s)
 *   and writes (target: those guests only, at most 2 objects per changed guest);
 * - HTTP requests the sync made per guest, and peak RSS.
 *
 * Writes are counted at the inventory's door: every POST/PUT/PATCH/DELETE under /api/ the sync
 * sends, a list body counting one object per element.
 *
 * Run: `deno run -A bench/sync_bench.ts` (figures only), or `deno task bench` (the same, once,
 * as one Deno.bench case). BENCH_SYNC_SEED overrides the seed for a quick look.
 */
import { createApp } from "../app.ts";
import type { AppDeps } from "../app.ts";
import { createInventoryCore, createSuperuserToken } from "../routes/inventory/mod.ts";
import { openStageStream } from "../scripts/sync/events.ts";
import { SyncProgress } from "../scripts/sync/progress.ts";
import { testDeps } from "../tests/_helpers.ts";

const SEED = Deno.env.get("BENCH_SYNC_SEED") ?? "nodes=10,vms=8000,cts=2000,storages=2";
const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);
const CEILING_OBJECTS = 10_000;
const CEILING_BATCH = 100;

export type Variant = "socket" | "in-process";

/** Requests the sync sends to this app (the inventory and the hypervisor mock), counted. */
class Traffic {
  requests = 0;
  hypervisorRequests = 0;
  inventoryRequests = 0;
  objectsWritten = 0;
  writeRequests = 0;
  #pending: Promise<void>[] = [];

  reset() {
    this.requests = this.hypervisorRequests = this.inventoryRequests = 0;
    this.objectsWritten = this.writeRequests = 0;
  }

  /** Counts a request (its body read from a clone, so the app still gets it whole). */
  see(request: Request) {
    const path = new URL(request.url).pathname;
    if (path.endsWith("/full-update/stream")) return; // the bench's own stream
    this.requests++;
    if (path.startsWith("/api2/") || path.startsWith("/pve")) this.hypervisorRequests++;
    else if (path.startsWith("/api/")) this.inventoryRequests++;
    if (!path.startsWith("/api/") || !WRITE_METHODS.has(request.method)) return;
    this.writeRequests++;
    const counted = request.clone().text().then((text) => {
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      this.objectsWritten += Array.isArray(body) ? body.length : 1;
    });
    this.#pending.push(counted);
  }

  async settled() {
    await Promise.all(this.#pending);
    this.#pending = [];
  }
}

/** Highest resident set size seen while `work` runs (sampled every 50 ms and at the end). */
async function withPeakRss<T>(work: () => Promise<T>): Promise<{ value: T; peakRss: number }> {
  let peak = Deno.memoryUsage().rss;
  const timer = setInterval(() => peak = Math.max(peak, Deno.memoryUsage().rss), 50);
  try {
    const value = await work();
    peak = Math.max(peak, Deno.memoryUsage().rss);
    return { value, peakRss: peak };
  } finally {
    clearInterval(timer);
  }
}

/** Objects per second that Deno KV takes when nothing but writing happens (same run). */
export async function kvWriteCeiling(batch = CEILING_BATCH): Promise<number> {
  const kv = await Deno.openKv(":memory:");
  // About the size of a stored virtual machine record.
  const record = {
    name: "vm-100",
    status: "active",
    vcpus: 4,
    memory: 8192,
    disk: 8,
    cluster: 3,
    site: 1,
    role: 2,
    tags: [1, 2],
    custom_fields: { vmid: 100, node: "pve1" },
    description: "x".repeat(300),
    created: new Date().toISOString(),
  };
  try {
    const t0 = performance.now();
    for (let i = 0; i < CEILING_OBJECTS; i += batch) {
      const op = kv.atomic();
      for (let j = i; j < Math.min(CEILING_OBJECTS, i + batch); j++) {
        op.set(["ceiling", j], { ...record, id: j });
      }
      await op.commit();
    }
    return CEILING_OBJECTS / ((performance.now() - t0) / 1000);
  } finally {
    kv.close();
  }
}

interface RunFigures {
  ms: number;
  ok: boolean;
  problems: string[];
  requests: number;
  hypervisorRequests: number;
  inventoryRequests: number;
  objectsWritten: number;
  writeRequests: number;
  /** What the stream reported, summed over the stages. */
  reported: { created: number; updated: number; unchanged: number; deleted: number };
  /** The slowest stages, "name seconds", slowest first. */
  slowest: string[];
}

export interface Loop {
  base: string;
  key: string;
  deps: AppDeps;
  traffic: Traffic;
  guests: number;
  close(): Promise<void>;
}

/** The app on 127.0.0.1:0 with its copies pointing at itself; `kv` replaces its in-memory KV. */
export async function startLoop(variant: Variant, mockSeed = SEED, kv?: Deno.Kv): Promise<Loop> {
  const deps = await testDeps({
    HYPERVISOR_MOCK_SEED: mockSeed,
    HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
    SERVICE_ENCRYPTION_KEY: "bench encryption key, not a secret",
    // The socket variant reaches 127.0.0.1 like any other address.
    SERVICE_ALLOW_LOOPBACK_TARGETS: variant === "socket" ? "true" : "false",
  }, kv ? { kv } : {});
  const traffic = new Traffic();
  const app = await createApp(deps);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request, info) => {
      traffic.see(request);
      return app.fetch(request, info);
    },
  );
  const port = server.addr.port;
  if (variant === "in-process") {
    // As main.ts binds it: calls to the app's own port are answered without a socket.
    deps.self = {
      port,
      fetch: (request: Request) => {
        traffic.see(request);
        return app.fetch(request, { internal: true });
      },
    };
  }
  const base = `http://127.0.0.1:${port}`;
  const json = async (path: string, init: RequestInit & { body?: string } = {}) => {
    const res = await fetch(base + path, {
      ...init,
      headers: { "content-type": "application/json", ...init.headers },
    });
    const body = await res.json();
    if (!res.ok) {
      throw new Error(`${init.method ?? "GET"} ${path}: ${res.status} ${JSON.stringify(body)}`);
    }
    return body;
  };
  const key = crypto.getRandomValues(new Uint8Array(32)).toHex();
  await json("/auth/register-key", {
    method: "POST",
    body: JSON.stringify({ api_key: key, label: "bench" }),
  });
  const { token } = await createSuperuserToken(createInventoryCore(deps), "sync bench", 1);
  const withKey = { "X-Service-API-Key": key };
  await json("/inventory/endpoint", {
    method: "POST",
    headers: withKey,
    body: JSON.stringify({
      name: "this app",
      ip: "127.0.0.1",
      port,
      use_https: false,
      token_version: "v1",
      token,
    }),
  });
  await json("/hypervisor/endpoints", {
    method: "POST",
    headers: withKey,
    body: JSON.stringify({
      name: "mock",
      ip: "127.0.0.1",
      port,
      use_https: false,
      username: deps.config.hypervisor.mockUser,
      password: deps.config.hypervisor.mockPassword,
    }),
  });
  const seed = deps.config.hypervisor.seed;
  return {
    base,
    key,
    deps,
    traffic,
    guests: seed.vms + seed.cts,
    close: async () => {
      await server.shutdown();
      deps.kv.close();
    },
  };
}

export async function fullUpdate(loop: Loop): Promise<RunFigures> {
  loop.traffic.reset();
  const progress = new SyncProgress(() => performance.now());
  const t0 = performance.now();
  const opened = await openStageStream({
    fetch,
    baseUrl: loop.base,
    key: loop.key,
    path: "/full-update/stream",
    endpointIds: [],
    idleTimeoutMs: 120_000,
  });
  if (!opened.ok) {
    return {
      ...emptyRun(performance.now() - t0),
      problems: [
        `GET /full-update/stream answered ${opened.failure.status}: ${
          JSON.stringify(opened.failure.detail)
        }`,
      ],
    };
  }
  for await (const frame of opened.frames) progress.apply(frame);
  const ms = performance.now() - t0;
  await loop.traffic.settled();
  const sum = (field: "created" | "updated" | "unchanged" | "deleted") =>
    progress.rows.reduce((n, r) => n + (r.counts?.[field] ?? 0), 0);
  const t = loop.traffic;
  return {
    ms,
    ok: progress.ok,
    problems: progress.problems.map((p) => [p.title, ...p.lines].join(" | ")),
    requests: t.requests,
    hypervisorRequests: t.hypervisorRequests,
    inventoryRequests: t.inventoryRequests,
    objectsWritten: t.objectsWritten,
    writeRequests: t.writeRequests,
    reported: {
      created: sum("created"),
      updated: sum("updated"),
      unchanged: sum("unchanged"),
      deleted: sum("deleted"),
    },
    slowest: progress.rows
      .map((r) => ({ step: r.step, ms: (r.endedAt ?? r.startedAt) - r.startedAt }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 4)
      .map((r) => `${r.step} ${(r.ms / 1000).toFixed(1)} s`),
  };
}

function emptyRun(ms: number): RunFigures {
  return {
    ms,
    ok: false,
    problems: [],
    requests: 0,
    hypervisorRequests: 0,
    inventoryRequests: 0,
    objectsWritten: 0,
    writeRequests: 0,
    reported: { created: 0, updated: 0, unchanged: 0, deleted: 0 },
    slowest: [],
  };
}

/** Changes the memory of every 100th guest through the mock's /pve API; returns how many. */
async function changeOnePercent(loop: Loop): Promise<number> {
  const login = await fetch(`${loop.base}/pve/access/ticket`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      username: loop.deps.config.hypervisor.mockUser,
      password: loop.deps.config.hypervisor.mockPassword,
    }),
  });
  const ticket = await login.json();
  const headers = {
    cookie: `PVEAuthCookie=${ticket.ticket}`,
    CSRFPreventionToken: ticket.CSRFPreventionToken,
    "content-type": "application/json",
  };
  const res = await fetch(`${loop.base}/pve/cluster/resources?type=vm`, { headers });
  const guests = (await res.json()) as { node: string; type: string; vmid: number }[];
  const chosen = guests.filter((_, i) => i % 100 === 0);
  for (const [i, g] of chosen.entries()) {
    const put = await fetch(`${loop.base}/pve/nodes/${g.node}/${g.type}/${g.vmid}/config`, {
      method: "PUT",
      headers,
      body: JSON.stringify({ memory: 1536 + i }),
    });
    if (!put.ok) throw new Error(`PUT config of ${g.type}/${g.vmid}: ${put.status}`);
    await put.body?.cancel();
  }
  return chosen.length;
}

interface Figure {
  label: string;
  value: string;
  target: string;
  met: boolean | undefined;
}

function print(figures: Figure[]) {
  const w = Math.max(...figures.map((f) => f.label.length));
  const v = Math.max(...figures.map((f) => f.value.length));
  for (const f of figures) {
    const verdict = f.met === undefined ? "" : f.met ? "  met" : "  NOT met";
    console.log(`  ${f.label.padEnd(w)}  ${f.value.padStart(v)}   ${f.target}${verdict}`);
  }
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

async function measure(variant: Variant, ceiling: number): Promise<Figure[] | undefined> {
  const { value, peakRss } = await withPeakRss(async () => {
    const loop = await startLoop(variant);
    try {
      const first = await fullUpdate(loop);
      if (first.problems.some((p) => p.includes("answered 404"))) return { loop, first };
      const second = await fullUpdate(loop);
      const changed = await changeOnePercent(loop);
      const third = await fullUpdate(loop);
      return { loop, first, second, changed, third };
    } finally {
      await loop.close();
    }
  });
  const { loop, first, second, changed, third } = value;
  console.log(`\nsync of ${loop.guests} guests (${SEED}), copies reached ${variant}:`);
  if (!second || !third || changed === undefined) {
    console.log(`  ${first.problems.join("\n  ")}`);
    console.log("  the backend has no sync routes yet: nothing measured.");
    return undefined;
  }
  for (const [name, run] of [["first", first], ["second", second], ["after 1%", third]] as const) {
    if (!run.ok) console.log(`  ${name} run FAILED: ${run.problems[0]?.slice(0, 400)}`);
  }
  const logged = (loop.deps.logger as { lines?: { level: string }[] }).lines ?? [];
  for (const line of logged.filter((l) => l.level === "error").slice(0, 3)) {
    console.log(`  app log: ${JSON.stringify(line).slice(0, 400)}`);
  }
  const rate = first.objectsWritten / (first.ms / 1000);
  const figures: Figure[] = [
    {
      label: "first /full-update",
      value: s(first.ms),
      target: "< 60 s, completes ok",
      met: first.ok && first.ms < 60_000,
    },
    {
      label: "  slowest stages",
      value: "",
      target: first.slowest.join(", "),
      met: undefined,
    },
    {
      label: "  objects written (stream: created)",
      value: `${first.objectsWritten} (${first.reported.created})`,
      target: "",
      met: undefined,
    },
    {
      label: "  objects written per second",
      value: `${rate.toFixed(0)} /s`,
      target: `≥ 0.5 × KV ceiling ${ceiling.toFixed(0)} /s (ratio ${(rate / ceiling).toFixed(2)})`,
      met: rate / ceiling >= 0.5,
    },
    {
      label: "  HTTP requests per guest",
      value: (first.requests / loop.guests).toFixed(2),
      target: `(${first.hypervisorRequests} hypervisor, ${first.inventoryRequests} inventory)`,
      met: undefined,
    },
    {
      label: "second run, nothing changed",
      value: s(second.ms),
      target: "< 15 s, completes ok",
      met: second.ok && second.ms < 15_000,
    },
    {
      label: "  objects written",
      value: String(second.objectsWritten),
      target: `0 (stream: ${second.reported.created} created, ${second.reported.updated} updated)`,
      met: second.objectsWritten === 0,
    },
    {
      label: "  HTTP requests per guest",
      value: (second.requests / loop.guests).toFixed(2),
      target: "",
      met: undefined,
    },
    {
      label: "  slowest stages",
      value: "",
      target: second.slowest.join(", "),
      met: undefined,
    },
    {
      label: `run after changing ${changed} guests (1%)`,
      value: s(third.ms),
      target: "< 15 s, completes ok",
      met: third.ok && third.ms < 15_000,
    },
    {
      label: "  objects written",
      value: String(third.objectsWritten),
      target: `${changed}–${
        2 * changed
      }, the changed guests only (stream: ${third.reported.updated} updated)`,
      met: third.objectsWritten >= changed && third.objectsWritten <= 2 * changed,
    },
    { label: "peak RSS", value: mib(peakRss), target: "", met: undefined },
  ];
  print(figures);
  return figures;
}

export async function report(): Promise<boolean> {
  const ceiling = await kvWriteCeiling();
  const single = await kvWriteCeiling(1);
  console.log(
    `raw Deno KV write ceiling (this run, ${CEILING_OBJECTS} ~600-byte records): ${
      ceiling.toFixed(0)
    } objects/s in atomic batches of ${CEILING_BATCH}, ${
      single.toFixed(0)
    } objects/s one per commit`,
  );
  const all: Figure[] = [];
  const variants = (Deno.env.get("BENCH_SYNC_VARIANTS") ?? "socket,in-process").split(
    ",",
  ) as Variant[];
  for (const variant of variants) {
    const figures = await measure(variant, ceiling);
    if (!figures) {
      console.log("\nNOT met: the sync routes are missing.");
      return false;
    }
    all.push(...figures);
  }
  const missed = all.filter((f) => f.met === false);
  console.log(
    missed.length === 0
      ? "\nmet: every sync target"
      : `\nNOT met: ${missed.map((f) => f.label.trim()).join("; ")}`,
  );
  return missed.length === 0;
}

if (import.meta.main) {
  await report();
} else {
  Deno.bench({
    name: "sync: 10,000 guests, full update / unchanged / 1% changed (figures printed)",
    n: 1,
    warmup: 0,
    async fn() {
      await report();
    },
  });
}
