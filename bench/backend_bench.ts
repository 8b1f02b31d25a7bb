/**
 * Backend figures (issue 2), printed as a table:
 * - authenticated request vs exempt /health on one real server, same run (target ratio ≥ 0.8);
 * - key lookup with 10,000 registered keys vs 1 (target ratio ≥ 0.9);
 * - cold start of main.ts to the first /health 200.
 * Throughput is measured in alternating rounds (A, B, A, B, …) so background load on a shared
 * machine hits both sides alike. Run: deno task bench, or deno bench -A bench/backend_bench.ts.
 */
import { createBackendApp } from "../routes/backend/mod.ts";
import { parseConfig } from "../config.ts";
import { MemoryLogger } from "../domain/logger.ts";
import { KvApiKeyStore } from "../storage/kv/api_keys.ts";
import { digestKey } from "../domain/api_keys.ts";

const KEY = "b".repeat(64);
const ROUNDS = 8;
const ROUND_MS = 500;
const CONCURRENCY = 8;

async function server(extraKeys: number) {
  const kv = await Deno.openKv(":memory:");
  const store = await seededStore(kv, extraKeys);
  const app = await createBackendApp({
    config: parseConfig({ SERVICE_SURFACES: "backend", SERVICE_KV_PATH: ":memory:" }),
    kv,
    fetch,
    now: Date.now,
    logger: new MemoryLogger(),
  });
  const srv = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (r, i) => app.fetch(r, i),
  );
  return {
    url: `http://127.0.0.1:${srv.addr.port}`,
    store,
    close: async () => (await srv.shutdown(), kv.close()),
  };
}

async function seededStore(kv: Deno.Kv, extraKeys: number) {
  const store = new KvApiKeyStore(kv);
  await store.claimFirst(await digestKey(KEY), "bench", Date.now() / 1000);
  for (let i = 0; i < extraKeys; i++) {
    await store.create(await digestKey(`extra-${i}`.padEnd(40, "x")), "", 0);
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

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

async function coldStart(): Promise<number> {
  const dir = await Deno.makeTempDir();
  const port = freePort();
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts"],
    cwd: new URL("..", import.meta.url).pathname,
    env: { PORT: String(port), SERVICE_KV_PATH: `${dir}/kv` },
    stdout: "null",
    stderr: "null",
  }).spawn();
  let elapsed = NaN;
  for (let i = 0; i < 1000; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      await res.body?.cancel();
      if (res.status === 200) {
        elapsed = performance.now() - started;
        break;
      }
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 5));
  }
  try {
    child.kill("SIGTERM");
  } catch { /* it exited on its own: elapsed stays NaN and says so */ }
  await child.status;
  await Deno.remove(dir, { recursive: true });
  return elapsed;
}

interface Target {
  url: string;
  headers?: Record<string, string>;
  status: number;
}

/** Requests completed by CONCURRENCY keep-alive loops during one round. */
async function round(target: Target): Promise<number> {
  const until = performance.now() + ROUND_MS;
  let done = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < until) {
      const res = await fetch(target.url, { headers: target.headers });
      await res.body?.cancel();
      if (res.status !== target.status) throw new Error(`${target.url}: ${res.status}`);
      done++;
    }
  }));
  return done / (ROUND_MS / 1000);
}

async function compare(name: string, baseline: Target, candidate: Target) {
  await round(baseline); // warm-up
  await round(candidate);
  let a = 0, b = 0;
  for (let i = 0; i < ROUNDS; i++) {
    a += await round(baseline);
    b += await round(candidate);
  }
  a /= ROUNDS;
  b /= ROUNDS;
  console.log(
    `${name.padEnd(58)} ${a.toFixed(0).padStart(7)} /s  ${b.toFixed(0).padStart(7)} /s  ratio ${
      (b / a).toFixed(2)
    }`,
  );
}

console.log(
  `cold start of main.ts (all surfaces) to first /health 200: ${(await coldStart()).toFixed(0)} ms`,
);
const one = await server(0);
const many = await server(10_000);
const auth = { "X-Service-API-Key": KEY };
console.log(`${"comparison (baseline vs candidate)".padEnd(58)} baseline   candidate`);
await compare(
  "exempt /health vs authenticated unknown path (auth only)",
  { url: `${one.url}/health`, status: 200 },
  { url: `${one.url}/no-such-route`, headers: auth, status: 404 },
);
await compare(
  "exempt /health vs authenticated GET /inventory/endpoint",
  { url: `${one.url}/health`, status: 200 },
  { url: `${one.url}/inventory/endpoint`, headers: auth, status: 200 },
);
await compare(
  "1 key vs 10,001 keys, authenticated GET /inventory/endpoint",
  { url: `${one.url}/inventory/endpoint`, headers: auth, status: 200 },
  { url: `${many.url}/inventory/endpoint`, headers: auth, status: 200 },
);
{
  let a = 0, b = 0;
  for (let i = 0; i < ROUNDS; i++) {
    a += await lookupRound(one.store);
    b += await lookupRound(many.store);
  }
  console.log(
    `${"1 key vs 10,001 keys, uncached digest + KV lookup".padEnd(58)} ${
      (a / ROUNDS).toFixed(0).padStart(7)
    } /s  ${(b / ROUNDS).toFixed(0).padStart(7)} /s  ratio ${(b / a).toFixed(2)}`,
  );
}
await one.close();
await many.close();
