/**
 * Backend figures (issue 2):
 * - authenticated request vs exempt /health on one real server, same run (target ratio ≥ 0.8);
 * - key lookup with 10,000 registered keys vs 1 (target ratio ≥ 0.9);
 * - cold start of main.ts to the first /health 200 (printed once).
 * Run: deno task bench (or deno bench -A bench/backend_bench.ts).
 */
import { createBackendApp } from "../routes/backend/mod.ts";
import { parseConfig } from "../config.ts";
import { MemoryLogger } from "../domain/logger.ts";
import { KvApiKeyStore } from "../storage/kv/api_keys.ts";
import { digestKey } from "../domain/api_keys.ts";

const KEY = "b".repeat(64);

async function server(extraKeys: number) {
  const kv = await Deno.openKv(":memory:");
  const store = new KvApiKeyStore(kv);
  await store.claimFirst(await digestKey(KEY), "bench", Date.now() / 1000);
  for (let i = 0; i < extraKeys; i++) {
    await store.create(await digestKey(`extra-${i}`.padEnd(40, "x")), "", 0);
  }
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
  return { url: `http://127.0.0.1:${srv.addr.port}`, kv, srv };
}

async function coldStart(): Promise<number> {
  const dir = await Deno.makeTempDir();
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts"],
    cwd: new URL("..", import.meta.url).pathname,
    env: {
      PORT: "18931",
      SERVICE_KV_PATH: `${dir}/kv`,
      ...(Deno.env.get("BENCH_SURFACES")
        ? { SERVICE_SURFACES: Deno.env.get("BENCH_SURFACES")! }
        : {}),
    },
    stdout: "null",
    stderr: "null",
  }).spawn();
  let elapsed = NaN;
  for (let i = 0; i < 600; i++) {
    try {
      const res = await fetch("http://127.0.0.1:18931/health");
      await res.body?.cancel();
      if (res.status === 200) {
        elapsed = performance.now() - started;
        break;
      }
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 10));
  }
  try {
    child.kill("SIGTERM");
  } catch { /* it exited on its own: elapsed stays NaN and says so */ }
  await child.status;
  await Deno.remove(dir, { recursive: true });
  return elapsed;
}

console.log(`cold start of main.ts to first /health 200: ${(await coldStart()).toFixed(0)} ms`);

const one = await server(0);
const many = await server(10_000);
const auth = { "X-Service-API-Key": KEY };

async function get(url: string, headers?: HeadersInit) {
  const res = await fetch(url, { headers });
  await res.body?.cancel();
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
}

Deno.bench(
  "exempt GET /health",
  { group: "auth overhead", baseline: true },
  () => get(`${one.url}/health`),
);
Deno.bench(
  "authenticated GET /inventory/endpoint",
  { group: "auth overhead" },
  () => get(`${one.url}/inventory/endpoint`, auth),
);

Deno.bench(
  "authenticated, 1 key",
  { group: "key count", baseline: true },
  () => get(`${one.url}/inventory/endpoint`, auth),
);
Deno.bench(
  "authenticated, 10,001 keys",
  { group: "key count" },
  () => get(`${many.url}/inventory/endpoint`, auth),
);
