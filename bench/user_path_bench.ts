/**
 * The sync on the path users run (issue 25): `main.ts` on a KV file (as `deno task start`), its
 * endpoint copies pointing at the app itself for the inventory and at a hypervisor mock running
 * as a second process (`SERVICE_SURFACES=hypervisor`, as a real cluster would be elsewhere), and
 * `GET /full-update` over HTTP with the backend key. Four runs: first, unchanged, 1% of the
 * guests changed through the mock's /pve API, and unchanged again after the app is restarted (a
 * new process on the same KV file and port: a deploy; docs/sync.md, "The ledger across restarts
 * and processes"). Each figure is printed beside its goal and, where one applies, a ceiling
 * measured in this run on this machine:
 *
 * - run times (goals: 10k first < 60 s, re-runs < 15 s; 100k first < 10 min, re-runs < 90 s, the
 *   one after a restart too), every run `ok`, zero writes when unchanged;
 * - objects written per second in the first run vs raw Deno KV writes to a KV file in the same
 *   directory (goal >= 0.2 of that ceiling);
 * - peak RSS of the app process (VmHWM; goals < 0.5 GiB at 10k, < 1 GiB at 100k);
 * - GET /health vs a static body of the same size: the HTTP ceiling of the app process.
 *
 *   npx -y deno@2.9.6 task bench:user         # 10,000 guests (nodes=10,vms=8000,cts=2000)
 *   npx -y deno@2.9.6 task bench:user:100k    # 100,000 guests (long: not run by CI)
 *
 * BENCH_USER_SEED overrides the seed (e.g. nodes=2,vms=1200,cts=300,storages=2 for a quick look).
 * BENCH_CPU_PROF=<dir> runs the app with `--cpu-prof` (a .cpuprofile in <dir> once it stops);
 * `deno run -A bench/cpuprofile_top.ts <file>` lists the functions that took the most time.
 * After each run the bench prints where the time went, read from the app's /metrics: each
 * stage's seconds, the Deno KV calls (count and seconds by operation) the run made and the entries
 * they read (a cost per object that grows with the estate is the thing to find), the sync's
 * requests to the app (its inventory) by route, and, from the mock's /metrics (open: the mock
 * listens on 127.0.0.1 only, as the app does), the sync's calls to the cluster by route. With
 * BENCH_CPU_PROF it prints where each re-run starts in the profile (cpuprofile_top.ts --after).
 * INVENTORY_CACHE_RECORDS_PER_MODEL / INVENTORY_CACHE_RECORDS are passed to the app: bounds at a
 * tenth of the defaults make a 10,000-guest estate overflow the read cache as 100,000 guests do.
 * BENCH_USER_RUNS=first stops after the first run (the memory slope: run it at 5k, 10k, 20k).
 * During each run the app's memory is sampled twice a second (`process_heap_used_bytes` from its
 * /metrics, VmRSS from /proc): each run prints its peak heap and RSS, so the MiB a run needs per
 * 10,000 guests shows as the difference between two seeds (docs/sync.md, Memory).
 * The first run also prints the CPU seconds of the app's threads (main thread, V8's workers, the
 * rest, such as Deno KV's SQLite worker): on a loaded machine they move far less than wall time.
 * BENCH_SNAPSHOT=<file> writes a digest of every inventory model after the first run, without
 * ids' timestamps: two runs of different code on one seed must write the same file (the
 * outputs-unchanged check).
 */
import { hostEnv, startMain } from "../tests/_process.ts";

const SIZES: Record<string, { seed: string; first: number; rerun: number; rss: number }> = {
  "10k": { seed: "nodes=10,vms=8000,cts=2000,storages=2", first: 60, rerun: 15, rss: 0.5 },
  "100k": { seed: "nodes=50,vms=80000,cts=20000,storages=2", first: 600, rerun: 90, rss: 1 },
};
const size = SIZES[Deno.args[0] ?? "10k"] ?? SIZES["10k"];
const SEED = Deno.env.get("BENCH_USER_SEED") ?? size.seed;
const TOKEN = "0123456789abcdef0123456789abcdef0123beef";
const GiB = 1024 ** 3;

interface Figure {
  label: string;
  value: string;
  goal: string;
  met?: boolean;
}
const figures: Figure[] = [];
const add = (label: string, value: string, goal = "", met?: boolean) =>
  figures.push({ label, value, goal, met });

/** Objects per second Deno KV takes into a file when nothing else happens (100 per atomic). */
async function kvFileCeiling(dir: string): Promise<number> {
  const kv = await Deno.openKv(`${dir}/ceiling.kv`);
  const record = {
    name: "vm-100",
    status: "active",
    vcpus: 4,
    memory: 8192,
    cluster: 3,
    tags: [1, 2],
    description: "x".repeat(300),
  };
  try {
    const total = 20_000;
    const t0 = performance.now();
    for (let i = 0; i < total; i += 100) {
      const op = kv.atomic();
      for (let j = i; j < i + 100; j++) op.set(["ceiling", j], { ...record, id: j });
      await op.commit();
    }
    return total / ((performance.now() - t0) / 1000);
  } finally {
    kv.close();
  }
}

/** Requests per second one connection gets for `path` during `ms`. */
async function rate(base: string, path: string, ms = 1500): Promise<number> {
  const until = performance.now() + ms;
  let n = 0;
  while (performance.now() < until) {
    await (await fetch(base + path)).arrayBuffer();
    n++;
  }
  return n / (ms / 1000);
}

/** Deno reads /proc only with all permissions: the bench tasks run with -A for this. */
function peakRss(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kb = Number(status.match(/VmHWM:\s+(\d+)/)?.[1] ?? NaN);
  return kb * 1024;
}

async function json(base: string, path: string, init: RequestInit = {}) {
  const res = await fetch(base + path, {
    ...init,
    headers: { "content-type": "application/json", ...init.headers },
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch { /* kept as text */ }
  return { status: res.status, body: body as Record<string, unknown> };
}

interface Run {
  seconds: number;
  ok: boolean;
  written: number;
  detail: string;
  /** Peak V8 heap in use and peak resident memory of the app during the run, in bytes. */
  heap: number;
  rss: number;
}

/** The app's sync-stage and KV-call figures from /metrics (sums and counts by label). */
async function metricsOf(base: string, key?: string): Promise<Map<string, number>> {
  const res = await fetch(`${base}/metrics`, {
    headers: key === undefined ? {} : { "X-Service-API-Key": key },
  });
  const text = await res.text();
  const out = new Map<string, number>();
  const line =
    /^bridgebox_(sync_stage|kv_operation)_duration_seconds_(sum|count)\{(?:stage|operation)="([^"]+)"\} (\S+)$/;
  const request =
    /^bridgebox_http_request_duration_seconds_(sum|count)\{surface="([^"]+)",method="([^"]+)",route="([^"]+)"\} (\S+)$/;
  for (const l of text.split("\n")) {
    const mutations = l.match(/^bridgebox_kv_mutations_total (\S+)$/);
    if (mutations) out.set("kv_mutations", Number(mutations[1]));
    const keysRead = l.match(/^bridgebox_kv_keys_read_total\{operation="([^"]+)"\} (\S+)$/);
    if (keysRead) out.set(`kv_keys ${keysRead[1]}`, Number(keysRead[2]));
    const m = l.match(line);
    if (m) out.set(`${m[1]} ${m[3]} ${m[2]}`, Number(m[4]));
    const r = l.match(request);
    if (r && r[2] !== "metrics") out.set(`http ${r[3]}_${r[4]} ${r[1]}`, Number(r[5]));
  }
  return out;
}

/** Where one run's time went: stages by seconds, KV calls by operation (count, seconds). */
function breakdown(
  label: string,
  before: Map<string, number>,
  after: Map<string, number>,
  cluster?: { before: Map<string, number>; after: Map<string, number> },
) {
  const delta = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
  const names = (kind: string) => [
    ...new Set(
      [...after.keys()].filter((k) => k.startsWith(kind + " ")).map((k) => k.split(" ")[1]),
    ),
  ];
  const stages = names("sync_stage")
    .map((s) => [s, delta(`sync_stage ${s} sum`)] as const)
    .filter(([, t]) => t > 0.05)
    .sort((a, b) => b[1] - a[1]);
  const kv = names("kv_operation")
    .map((o) => [o, delta(`kv_operation ${o} count`), delta(`kv_operation ${o} sum`)] as const)
    .filter(([, n]) => n > 0);
  console.log(`  ${label}: stages ${stages.map(([s, t]) => `${s} ${t.toFixed(1)} s`).join(", ")}`);
  console.log(
    `  ${" ".repeat(label.length)}  KV calls ${
      kv.map(([o, n, t]) => `${o} ${n} (${t.toFixed(1)} s)`).join(", ")
    }, mutations ${delta("kv_mutations")}`,
  );
  // Entries read by operation: what grows faster than the estate shows as more per object.
  const keysRead = ["get", "getMany", "list"].map((o) => `${o} ${delta(`kv_keys ${o}`)}`);
  console.log(`  ${" ".repeat(label.length)}  KV entries read ${keysRead.join(", ")}`);
  // The sync's own requests to the app (its inventory client), by route: counts do not lie on
  // a loaded machine where seconds do.
  const requestsOf = (what: string, b: Map<string, number>, a: Map<string, number>) => {
    const d = (k: string) => (a.get(k) ?? 0) - (b.get(k) ?? 0);
    const requests = [
      ...new Set([...a.keys()].filter((k) => k.startsWith("http ")).map((k) => k.split(" ")[1])),
    ]
      .map((r) => [r.replace("_", " "), d(`http ${r} count`), d(`http ${r} sum`)] as const)
      .filter(([, n]) => n > 0)
      .sort((x, y) => y[1] - x[1]);
    const total = requests.reduce((sum, [, n]) => sum + n, 0);
    console.log(
      `  ${" ".repeat(label.length)}  ${what} ${total}: ${
        requests.slice(0, 8).map(([r, n, t]) => `${r} ${n} (${t.toFixed(1)} s)`).join(", ")
      }`,
    );
  };
  requestsOf("HTTP requests to the app", before, after);
  if (cluster) requestsOf("to the cluster", cluster.before, cluster.after);
}

/**
 * CPU seconds the app's threads used so far, by kind (from /proc: clock ticks of 1/100 s): its
 * main thread (JavaScript: the sync, the inventory, the (de)serialising of KV calls), V8's
 * workers (concurrent garbage collection) and the rest (Deno KV's SQLite worker, I/O). They move
 * less than wall time on a loaded machine, but they do move (caches and cores are shared).
 */
function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const entry of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      const stat = Deno.readTextFileSync(`/proc/${pid}/task/${entry.name}/stat`);
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime
      const kind = entry.name === String(pid)
        ? "main thread"
        : comm.startsWith("V8 ")
        ? "V8 workers"
        : "other threads";
      out.set(kind, (out.get(kind) ?? 0) + ticks / 100);
    } catch { /* a thread that ended meanwhile */ }
  }
  return out;
}

/**
 * The app's main thread from the scheduler's side (/proc/<pid>/task/<pid>/schedstat): seconds on
 * a CPU and seconds runnable but waiting for one (the machine's load). The rest of a run's wall
 * time the thread was blocked: waiting on Deno KV's worker, sockets, timers. On an idle machine
 * the wait is near zero, so on-CPU plus blocked is what the run would take there, and blocked is
 * what overlapping a stage's next read with its write could fill (docs/sync.md, round 6).
 */
function mainThreadSched(pid: number): { cpu: number; waiting: number } {
  const [cpu, waiting] = Deno.readTextFileSync(`/proc/${pid}/task/${pid}/schedstat`).split(" ")
    .map(Number);
  return { cpu: cpu / 1e9, waiting: waiting / 1e9 };
}

function currentRss(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(status.match(/VmRSS:\s+(\d+)/)?.[1] ?? NaN) * 1024;
}

/** The app's V8 heap in use, from its /metrics (the backend key is a metrics key). */
async function heapUsed(base: string, key: string): Promise<number> {
  const res = await fetch(`${base}/metrics`, { headers: { "X-Service-API-Key": key } });
  const text = await res.text();
  return Number(text.match(/^process_heap_used_bytes (\S+)$/m)?.[1] ?? NaN);
}

/** Samples the app's heap and RSS every 500 ms until `done` settles; the peaks. */
async function peaksDuring(
  base: string,
  key: string,
  pid: number,
  done: Promise<unknown>,
): Promise<{ heap: number; rss: number }> {
  let heap = 0;
  let rss = 0;
  let over = false;
  done.finally(() => over = true).catch(() => {});
  while (!over) {
    heap = Math.max(heap, await heapUsed(base, key).catch(() => 0));
    rss = Math.max(rss, currentRss(pid));
    await Promise.race([done.catch(() => {}), new Promise((r) => setTimeout(r, 500))]);
  }
  return { heap, rss };
}

async function fullUpdate(base: string, key: string, pid: number): Promise<Run> {
  const t0 = performance.now();
  const call = json(base, "/full-update", { headers: { "X-Service-API-Key": key } });
  const [{ status, body }, peaks] = await Promise.all([call, peaksDuring(base, key, pid, call)]);
  const seconds = (performance.now() - t0) / 1000;
  const result = (body.result ?? {}) as Record<string, number>;
  return {
    seconds,
    ok: status === 200,
    written: (result.created ?? 0) + (result.updated ?? 0) + (result.deleted ?? 0),
    detail: status === 200 ? "" : `HTTP ${status}: ${String(body.detail ?? "").slice(0, 300)}`,
    ...peaks,
  };
}

/** Changes the memory of every 100th guest on the mock; returns how many. */
async function changeOnePercent(mock: string): Promise<number> {
  const login = await json(mock, "/pve/access/ticket", {
    method: "POST",
    body: JSON.stringify({ username: "root@pam", password: "bridgebox" }),
  });
  const headers = {
    cookie: `PVEAuthCookie=${login.body.ticket}`,
    CSRFPreventionToken: String(login.body.CSRFPreventionToken),
  };
  const list = await json(mock, "/pve/cluster/resources?type=vm", { headers });
  const guests = list.body as unknown as { node: string; type: string; vmid: number }[];
  const chosen = guests.filter((_, i) => i % 100 === 0);
  for (const [i, g] of chosen.entries()) {
    const put = await json(mock, `/pve/nodes/${g.node}/${g.type}/${g.vmid}/config`, {
      method: "PUT",
      headers,
      body: JSON.stringify({ memory: 1536 + i }),
    });
    if (put.status !== 200) throw new Error(`PUT ${g.type}/${g.vmid}: ${put.status}`);
  }
  return chosen.length;
}

const DATE = /^\d{4}-\d\d-\d\dT\d\d:\d\d/;

/** Every object of every inventory model, walked by id, reduced to what a sync decides. */
async function snapshot(base: string): Promise<Record<string, { count: number; sha256: string }>> {
  const auth = { authorization: `Token ${TOKEN}` };
  const root = (await json(base, "/api/", { headers: auth })).body as Record<string, string>;
  const out: Record<string, { count: number; sha256: string }> = {};
  const strip = (v: unknown): unknown => {
    if (typeof v === "string") {
      return DATE.test(v) ? "<time>" : v.replace(/^https?:\/\/[^/]+/, "");
    }
    if (Array.isArray(v)) return v.map(strip);
    if (v && typeof v === "object") {
      return Object.fromEntries(
        Object.entries(v).sort(([a], [b]) => a < b ? -1 : 1).map(([k, x]) => [k, strip(x)]),
      );
    }
    return v;
  };
  for (const app of Object.keys(root).sort()) {
    if (app === "users" || app === "core" || app === "status") continue;
    const models = (await json(base, `/api/${app}/`, { headers: auth })).body;
    for (const model of Object.keys(models).sort()) {
      const path = `/api/${app}/${model}/`;
      const rows: unknown[] = [];
      for (let after = 0;;) {
        const page = await json(base, `${path}?ordering=id&id__gt=${after}&limit=1000`, {
          headers: auth,
        });
        const results = (page.body?.results ?? []) as { id: number }[];
        if (page.status !== 200 || results.length === 0) break;
        rows.push(...results.map(strip));
        after = results[results.length - 1].id;
      }
      const bytes = new TextEncoder().encode(JSON.stringify(rows));
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)).toHex();
      if (rows.length) out[`${app}/${model}`] = { count: rows.length, sha256: digest };
    }
  }
  return out;
}

/** BENCH_USER_RUNS=first: the figures so far are printed, the re-runs are left out. */
class FirstOnly extends Error {}

const dir = await Deno.makeTempDir({ prefix: "bridgebox-user-bench-" });
const env = hostEnv(dir);
const mock = await startMain({
  ...env,
  SERVICE_SURFACES: "hypervisor",
  SERVICE_KV_PATH: `${dir}/mock.kv`,
  HYPERVISOR_MOCK_SEED: SEED,
  HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
  // The bench counts the calls the sync makes to the cluster (loopback only: see startMain).
  METRICS_ACCESS: "open",
});
const cpuProfileDir = Deno.env.get("BENCH_CPU_PROF");
const appStarted = performance.now();
/** With BENCH_CPU_PROF: where a run starts in the profile (cpuprofile_top.ts --after=<s>). */
const mark = (run: string) => {
  if (!cpuProfileDir) return;
  console.log(`  ${run} starts ${((performance.now() - appStarted) / 1000).toFixed(1)} s in`);
};
const appEnv = (port: number) => (
  {
    ...env,
    SERVICE_KV_PATH: `${dir}/bridgebox.kv`,
    // The hypervisor copy points at the mock on 127.0.0.1 (another port of this machine).
    SERVICE_ALLOW_LOOPBACK_TARGETS: "true",
    INVENTORY_BOOTSTRAP_TOKEN: TOKEN,
    // The read cache's bounds, when set for the bench (a small estate past them behaves as a
    // large one past the defaults: docs/sync.md, "Re-runs").
    ...Object.fromEntries(
      Object.entries(Deno.env.toObject()).filter(([name]) => name.startsWith("INVENTORY_CACHE_")),
    ),
    PORT: String(port),
  }
);
const appArgs = cpuProfileDir ? ["--cpu-prof", `--cpu-prof-dir=${cpuProfileDir}`] : [];
let app = await startMain(appEnv(0), appArgs);
try {
  console.log(`user-path sync bench, seed ${SEED}; app pid ${app.pid}, mock pid ${mock.pid}`);
  const ceiling = await kvFileCeiling(dir);
  const key = crypto.getRandomValues(new Uint8Array(32)).toHex();
  const k = { "X-Service-API-Key": key };
  const steps = [
    json(app.base, "/auth/register-key", {
      method: "POST",
      body: JSON.stringify({ api_key: key, label: "bench" }),
    }),
  ];
  for (const step of steps) if ((await step).status >= 300) throw new Error("register-key");
  const inv = await json(app.base, "/inventory/endpoint", {
    method: "POST",
    headers: k,
    body: JSON.stringify({
      name: "this app",
      ip: "127.0.0.1",
      port: app.port,
      use_https: false,
      token_version: "v1",
      token: TOKEN,
    }),
  });
  if (inv.status >= 300) throw new Error(`inventory endpoint: ${JSON.stringify(inv.body)}`);
  const hv = await json(app.base, "/hypervisor/endpoints", {
    method: "POST",
    headers: k,
    body: JSON.stringify({
      name: "mock",
      ip: "127.0.0.1",
      port: mock.port,
      use_https: false,
      username: "root@pam",
      password: "bridgebox",
    }),
  });
  if (hv.status >= 300) throw new Error(`hypervisor endpoint: ${JSON.stringify(hv.body)}`);

  const clusterMetrics = () => metricsOf(mock.base);
  const m0 = await metricsOf(app.base, key);
  const c0 = await clusterMetrics();
  const cpu0 = threadCpu(app.pid);
  const sched0 = mainThreadSched(app.pid);
  const first = await fullUpdate(app.base, key, app.pid);
  const m1 = await metricsOf(app.base, key);
  breakdown(`first run ${first.seconds.toFixed(1)} s`, m0, m1, {
    before: c0,
    after: await clusterMetrics(),
  });
  const cpu1 = threadCpu(app.pid);
  const sched1 = mainThreadSched(app.pid);
  const onCpu = sched1.cpu - sched0.cpu;
  const waiting = sched1.waiting - sched0.waiting;
  console.log(
    `  app main thread in the first run: on a CPU ${onCpu.toFixed(1)} s, waiting for one ${
      waiting.toFixed(1)
    } s, blocked ${Math.max(0, first.seconds - onCpu - waiting).toFixed(1)} s (KV, sockets)`,
  );
  console.log(
    `  app CPU of the first run: ${
      [...cpu1].map(([kind, s]) => `${kind} ${(s - (cpu0.get(kind) ?? 0)).toFixed(1)} s`)
        .join(", ")
    }`,
  );
  // What an object cost the store: every KV mutation of the run (its records, index entries,
  // counters, change log, the run's own records) over the objects it wrote.
  const mutations = (m1.get("kv_mutations") ?? 0) - (m0.get("kv_mutations") ?? 0);
  const snapshotPath = Deno.env.get("BENCH_SNAPSHOT");
  if (snapshotPath) {
    await Deno.writeTextFile(snapshotPath, JSON.stringify(await snapshot(app.base), null, 1));
  }
  const MiB = 1024 ** 2;
  const memoryLine = (label: string, run: Run) =>
    add(
      `memory of the ${label}: peak heap / peak RSS`,
      `${(run.heap / MiB).toFixed(0)} / ${(run.rss / MiB).toFixed(0)} MiB`,
    );
  const runLine = (label: string, run: Run, goal: number) =>
    add(
      label,
      `${run.seconds.toFixed(1)} s${run.ok ? "" : ` FAILED ${run.detail}`}`,
      `< ${goal} s, ok`,
      run.ok && run.seconds < goal,
    );
  runLine("first full sync", first, size.first);
  add(
    "KV mutations per object written, first run",
    `${(mutations / Math.max(1, first.written)).toFixed(1)} (${mutations} for ${first.written})`,
  );
  const entriesRead = ["get", "getMany", "list"]
    .reduce((sum, o) => sum + (m1.get(`kv_keys ${o}`) ?? 0) - (m0.get(`kv_keys ${o}`) ?? 0), 0);
  add(
    "KV entries read per object written, first run",
    `${(entriesRead / Math.max(1, first.written)).toFixed(1)} (${entriesRead})`,
  );
  memoryLine("first run", first);
  if (Deno.env.get("BENCH_USER_RUNS") === "first") {
    const rss = peakRss(app.pid);
    add(
      "peak RSS of the app (mock in its own process)",
      `${(rss / GiB).toFixed(2)} GiB`,
      `< ${size.rss} GiB`,
      rss < size.rss * GiB,
    );
    throw new FirstOnly();
  }
  const m2 = await metricsOf(app.base, key);
  const c2 = await clusterMetrics();
  mark("unchanged re-run");
  const unchanged = await fullUpdate(app.base, key, app.pid);
  breakdown(`unchanged ${unchanged.seconds.toFixed(1)} s`, m2, await metricsOf(app.base, key), {
    before: c2,
    after: await clusterMetrics(),
  });
  const changed = await changeOnePercent(mock.base);
  const m4 = await metricsOf(app.base, key);
  const c4 = await clusterMetrics();
  mark("1% re-run");
  const onePercent = await fullUpdate(app.base, key, app.pid);
  breakdown(`1% changed ${onePercent.seconds.toFixed(1)} s`, m4, await metricsOf(app.base, key), {
    before: c4,
    after: await clusterMetrics(),
  });
  const rss = peakRss(app.pid);
  const health = await rate(app.base, "/health");
  // A restart (a deploy, a crash): the same KV file and port, a new process. Its first run is
  // an unchanged re-run for the user.
  await app.stop();
  app = await startMain(appEnv(app.port), appArgs);
  const m6 = await metricsOf(app.base, key);
  const c6 = await clusterMetrics();
  mark("re-run after a restart");
  const restarted = await fullUpdate(app.base, key, app.pid);
  breakdown(
    `after a restart ${restarted.seconds.toFixed(1)} s`,
    m6,
    await metricsOf(app.base, key),
    {
      before: c6,
      after: await clusterMetrics(),
    },
  );
  const perSecond = first.written / first.seconds;

  runLine("unchanged re-run", unchanged, size.rerun);
  add("writes of the unchanged re-run", String(unchanged.written), "0", unchanged.written === 0);
  memoryLine("unchanged re-run", unchanged);
  runLine(`re-run after ${changed} guests changed (1%)`, onePercent, size.rerun);
  memoryLine("1% re-run", onePercent);
  add(
    "writes after 1% changed",
    String(onePercent.written),
    `<= ${2 * changed}`,
    onePercent.written <= 2 * changed,
  );
  runLine("unchanged re-run after a restart of the app", restarted, size.rerun);
  add(
    "writes of the re-run after a restart",
    String(restarted.written),
    "0",
    restarted.written === 0,
  );
  memoryLine("re-run after a restart", restarted);
  add(
    "objects written per second, first run",
    `${perSecond.toFixed(0)} /s (${first.written} objects)`,
    `>= 0.2 x raw KV file writes ${ceiling.toFixed(0)} /s: ratio ${
      (perSecond / ceiling).toFixed(3)
    }`,
    perSecond / ceiling >= 0.2,
  );
  add(
    "peak RSS of the app (mock in its own process)",
    `${(rss / GiB).toFixed(2)} GiB`,
    `< ${size.rss} GiB`,
    rss < size.rss * GiB,
  );
  add("GET /health on the app after the runs, one connection", `${health.toFixed(0)} /s`);
} catch (error) {
  if (!(error instanceof FirstOnly)) throw error;
} finally {
  await app.stop();
  await mock.stop();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
const w = Math.max(...figures.map((f) => f.label.length));
const v = Math.max(...figures.map((f) => f.value.length));
for (const f of figures) {
  const verdict = f.met === undefined ? "" : f.met ? "  met" : "  NOT met";
  console.log(`  ${f.label.padEnd(w)}  ${f.value.padStart(v)}   ${f.goal}${verdict}`);
}
const missed = figures.filter((f) => f.met === false).map((f) => f.label);
console.log(missed.length ? `NOT met: ${missed.join("; ")}` : "all goals met");
