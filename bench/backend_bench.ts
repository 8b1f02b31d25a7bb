/**
 * Backend figures, each printed next to its target, then one met / NOT met line:
 * - socket, load from a separate process (bench/http_load_worker.ts): authenticated
 *   request (an unknown path: authentication and a 404, nothing else) vs exempt /health on the
 *   same server, in alternating rounds —
 *   once with one key (served from the 30 s auth cache after its first request) and once with
 *   keys rotating across 10,000 registered keys (the cache holds 1,000, so every request pays
 *   the digest and the storage lookup). Target for each: ratio >= 0.8;
 * - in-process (no HTTP): uncached digest + KV lookup with 10,001 keys vs 1. Target >= 0.9;
 * - cold start of main.ts to the first /health 200 (reported, no target).
 * Run: deno task bench, or deno bench -A bench/backend_bench.ts.
 */
import { createBackendApp } from "../routes/backend/mod.ts";
import { parseConfig } from "../config.ts";
import { MemoryLogger } from "../infra/logger.ts";
import { KvApiKeyStore } from "../storage/kv/api_keys.ts";
import { digestKey } from "../domain/api_keys.ts";
import { processLoad } from "./http_load.ts";
import { createKvStorage } from "../storage/kv/mod.ts";

const KEY = "b".repeat(64);
const ROUNDS = 5;
const ROUND_MS = 1000;
const EXTRA_KEYS = 10_000;

/** The raw value of the i-th extra key (only its digest is stored). */
const extraKey = (i: number) => `extra-${i}`.padEnd(40, "x");

async function server(extraKeys: number) {
  const kv = await Deno.openKv(":memory:");
  const store = await seededStore(kv, extraKeys);
  const app = await createBackendApp({
    config: parseConfig({ SERVICE_SURFACES: "backend", SERVICE_KV_PATH: ":memory:" }),
    storage: createKvStorage(kv, { now: Date.now }),
    fetch,
    now: Date.now,
    logger: new MemoryLogger(),
  });
  const srv = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (r, i) => app.fetch(r, i),
  );
  return {
    port: srv.addr.port,
    store,
    close: async () => (await srv.shutdown(), kv.close()),
  };
}

async function seededStore(kv: Deno.Kv, extraKeys: number) {
  const store = new KvApiKeyStore(kv);
  await store.claimFirst(await digestKey(KEY), "bench", Date.now() / 1000);
  for (let i = 0; i < extraKeys; i++) {
    await store.create(await digestKey(extraKey(i)), "", 0);
  }
  return store;
}

/** Uncached digest + storage lookups per second (what a first request with a key costs). */
async function lookupRound(store: KvApiKeyStore): Promise<number> {
  const until = performance.now() + ROUND_MS;
  let done = 0;
  while (performance.now() < until) {
    const { record } = await store.lookup(await digestKey(KEY));
    if (!record) throw new Error("key not found");
    done++;
  }
  return done / (ROUND_MS / 1000);
}

/** Milliseconds from spawning main.ts (PORT=0) to its first /health 200. */
async function coldStart(): Promise<number> {
  const dir = await Deno.makeTempDir();
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts"],
    cwd: new URL("..", import.meta.url).pathname,
    env: { PORT: "0", SERVICE_KV_PATH: `${dir}/kv` },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  // The start-up log line names the port it listens on.
  let url = "";
  let text = "";
  const decoder = new TextDecoder();
  for await (const chunk of child.stderr) {
    text += decoder.decode(chunk, { stream: true });
    const match = text.match(/"url":"http:\/\/[^:]+:(\d+)\//);
    if (match) {
      url = `http://127.0.0.1:${match[1]}/health`;
      break;
    }
  }
  let elapsed = NaN;
  if (url) {
    const res = await fetch(url);
    await res.body?.cancel();
    if (res.status === 200) elapsed = performance.now() - started;
  }
  child.kill("SIGTERM");
  await child.stderr.cancel().catch(() => {});
  await child.status;
  await Deno.remove(dir, { recursive: true });
  return elapsed;
}

interface Side {
  label: string;
  port: number;
  path: string;
  headers: Record<string, string>;
  rotate?: { header: string; values: string[] };
  status: string;
}

async function load(side: Side): Promise<number> {
  const r = await processLoad(side.port, side.path, side.headers, ROUND_MS, {
    connections: 16,
    rotate: side.rotate,
  });
  const other = Object.keys(r.statuses).filter((s) => s !== side.status);
  if (other.length > 0) throw new Error(`${side.label}: ${JSON.stringify(r.statuses)}`);
  return r.rps;
}

const results: Array<{ name: string; ratio: number; target: number }> = [];

function report(name: string, a: number, b: number, target: number) {
  const ratio = b / a;
  results.push({ name, ratio, target });
  console.log(
    `${name.padEnd(72)} ${a.toFixed(0).padStart(7)} /s ${b.toFixed(0).padStart(7)} /s  ratio ${
      ratio.toFixed(2)
    }  (target >= ${target}) ${ratio >= target ? "met" : "NOT met"}`,
  );
}

console.log(
  `cold start of main.ts (all surfaces) to first /health 200: ${
    (await coldStart()).toFixed(0)
  } ms` +
    " (no target)",
);
const one = await server(0);
const many = await server(EXTRA_KEYS);
const auth = { "X-Service-API-Key": KEY };
const health = (port: number): Side => ({
  label: "health",
  port,
  path: "/health",
  headers: {},
  status: "200",
});
const rotating: Side = {
  label: "rotating",
  port: many.port,
  path: "/no-such-route",
  headers: {},
  rotate: {
    header: "X-Service-API-Key",
    values: Array.from({ length: EXTRA_KEYS }, (_, i) => extraKey(i)),
  },
  status: "404",
};
const cached: Side = {
  label: "cached",
  port: one.port,
  path: "/no-such-route",
  headers: auth,
  status: "404",
};
console.log(
  `${"socket, load from a separate process (baseline vs candidate)".padEnd(72)} baseline candidate`,
);
{
  // Alternating rounds (A, B, C, D, A, B, ...) so background load hits every side alike.
  const sides = [health(one.port), cached, health(many.port), rotating];
  for (const side of sides) await load(side); // warm-up
  const sums = sides.map(() => 0);
  for (let i = 0; i < ROUNDS; i++) {
    for (const [k, side] of sides.entries()) sums[k] += await load(side);
  }
  const [h1, c, h2, r] = sums.map((x) => x / ROUNDS);
  report("socket: exempt /health vs authenticated 404, one key (cached)", h1, c, 0.8);
  report(
    "socket: exempt /health vs authenticated 404, keys rotating over 10,000 (uncached)",
    h2,
    r,
    0.8,
  );
}
{
  let a = 0, b = 0;
  for (let i = 0; i < ROUNDS; i++) {
    a += await lookupRound(one.store);
    b += await lookupRound(many.store);
  }
  report(
    "in-process: uncached digest + KV lookup, 1 key vs 10,001 keys",
    a / ROUNDS,
    b / ROUNDS,
    0.9,
  );
}
await one.close();
await many.close();
const missed = results.filter((r) => r.ratio < r.target);
console.log(
  missed.length === 0
    ? `backend bench: all ${results.length} targets met`
    : `backend bench: NOT met: ${missed.map((r) => r.name).join("; ")}`,
);
