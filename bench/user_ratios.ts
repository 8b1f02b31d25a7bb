/**
 * Issue 25's two ratio rows on the path users run: `main.ts` as `deno task start` runs it (every
 * surface, a KV file), over HTTP, with load from a separate process (bench/http_load.ts), in
 * alternating rounds so background load hits every side alike:
 *
 * - an authenticated request to an unknown path (the backend key, a 404) vs `GET /health`
 *   (goal >= 0.8);
 * - the hypervisor's 1,000-VM list (`GET /api2/json/nodes/pve1/qemu`, an API token) vs the same
 *   bytes and headers served static by a bare Deno server in a process of its own, the ceiling of
 *   any answer of that size (goal >= 0.8).
 *
 *   npx -y deno@2.9.6 task bench:ratios   # (not a *_bench.ts: `task bench` leaves it out)
 */
import { hostEnv, startMain } from "../tests/_process.ts";
import { processLoad } from "./http_load.ts";

const ROUNDS = Number(Deno.env.get("BENCH_RATIO_ROUNDS") ?? 5);
const ROUND_MS = 1000;
const KEY = "r".repeat(64);

interface Side {
  label: string;
  port: number;
  path: string;
  headers: Record<string, string>;
  status: string;
}

async function load(side: Side): Promise<number> {
  const r = await processLoad(side.port, side.path, side.headers, ROUND_MS, { connections: 16 });
  const other = Object.keys(r.statuses).filter((s) => s !== side.status);
  if (other.length > 0) throw new Error(`${side.label}: ${JSON.stringify(r.statuses)}`);
  return r.rps;
}

/** Mean requests per second of each side, rounds alternating (after one warm-up round each). */
async function alternate(sides: Side[]): Promise<number[]> {
  for (const side of sides) await load(side);
  const sums = sides.map(() => 0);
  for (let i = 0; i < ROUNDS; i++) {
    for (const [k, side] of sides.entries()) sums[k] += await load(side);
  }
  return sums.map((s) => s / ROUNDS);
}

/** A bare Deno server answering every request with these bytes and headers. */
async function staticServer(dir: string, body: Uint8Array, headers: [string, string][]) {
  await Deno.writeFile(`${dir}/body.bin`, body);
  const script = `
    const body = await Deno.readFile(${JSON.stringify(`${dir}/body.bin`)});
    const headers = ${JSON.stringify(headers)};
    Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: ({ port }) => console.log(port) },
      () => new Response(body, { headers }));
  `;
  await Deno.writeTextFile(`${dir}/static.ts`, script);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-net", "--allow-read", `${dir}/static.ts`],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!/\n/.test(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error("static server ended");
    text += value;
  }
  reader.releaseLock();
  return {
    port: Number(text.trim()),
    async stop() {
      child.kill("SIGTERM");
      await child.stdout.cancel().catch(() => {});
      await child.status;
    },
  };
}

const dir = await Deno.makeTempDir({ prefix: "bridgebox-ratios-" });
const app = await startMain({
  ...hostEnv(dir),
  SERVICE_LISTEN_HOST: "127.0.0.1",
  SERVICE_KV_PATH: `${dir}/bridgebox.kv`,
  HYPERVISOR_MOCK_SEED: "nodes=1,vms=1000,cts=0,storages=2",
});
let blob: Awaited<ReturnType<typeof staticServer>> | null = null;
const results: { name: string; ratio: number }[] = [];
try {
  const base = app.base;
  const registered = await fetch(`${base}/auth/register-key`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ api_key: KEY, label: "bench" }),
  });
  if (registered.status !== 201) throw new Error(`register-key: ${registered.status}`);
  await registered.body?.cancel();

  // An API token of the mock's root: no ticket or CSRF work in the measurement.
  const login = await fetch(`${base}/api2/json/access/ticket`, {
    method: "POST",
    body: new URLSearchParams({ username: "root@pam", password: "bridgebox" }),
  });
  const { data } = await login.json();
  const session = {
    cookie: `PVEAuthCookie=${encodeURIComponent(data.ticket)}`,
    CSRFPreventionToken: data.CSRFPreventionToken,
  };
  const made = await fetch(`${base}/api2/json/access/users/root@pam/token/bench`, {
    method: "POST",
    headers: session,
    body: new URLSearchParams({ privsep: "0" }),
  });
  const token = (await made.json()).data;
  const pveAuth = { authorization: `PVEAPIToken=root@pam!bench=${token.value}` };
  const LIST = "/api2/json/nodes/pve1/qemu";
  // The answer as a client with gzip gets it: those bytes and headers are what is served static.
  const sample = await fetch(`${base}${LIST}`, { headers: { ...pveAuth } });
  if (sample.status !== 200) throw new Error(`${LIST}: ${sample.status}`);
  const vms = (await sample.clone().json()).data.length;
  const raw = await (await fetch(`${base}${LIST}`, {
    headers: { ...pveAuth, "accept-encoding": "gzip" },
  })).arrayBuffer();
  const encodedHeaders = (await fetch(`${base}${LIST}`, {
    headers: { ...pveAuth, "accept-encoding": "gzip" },
  })).headers;
  const kept: [string, string][] = [];
  for (const name of ["content-type", "content-encoding", "vary", "cache-control"]) {
    const value = encodedHeaders.get(name);
    if (value) kept.push([name, value]);
  }
  // fetch decoded the body; serve the encoded bytes as the app does.
  const encoded = kept.some(([n, v]) => n === "content-encoding" && v === "gzip")
    ? await new Response(
      new Blob([new Uint8Array(raw)]).stream().pipeThrough(new CompressionStream("gzip")),
    ).bytes()
    : new Uint8Array(raw);
  blob = await staticServer(dir, encoded, kept);

  console.log(`user-path ratios: main.ts pid ${app.pid} (every surface, KV file), ${vms} VMs`);
  const [health, unknown, list, staticList] = await alternate([
    { label: "/health", port: app.port, path: "/health", headers: {}, status: "200" },
    {
      label: "unknown path",
      port: app.port,
      path: "/no-such-route",
      headers: { "X-Service-API-Key": KEY },
      status: "404",
    },
    {
      label: "1,000-VM list",
      port: app.port,
      path: LIST,
      headers: { ...pveAuth, "accept-encoding": "gzip" },
      status: "200",
    },
    {
      label: "static",
      port: blob.port,
      path: LIST,
      headers: { "accept-encoding": "gzip" },
      status: "200",
    },
  ]);
  const row = (name: string, a: number, b: number, aLabel: string, bLabel: string) => {
    results.push({ name, ratio: b / a });
    console.log(
      `  ${name.padEnd(58)} ${bLabel} ${b.toFixed(0).padStart(6)} /s vs ${aLabel} ${
        a.toFixed(0).padStart(6)
      } /s: ratio ${(b / a).toFixed(2)} (goal >= 0.8) ${b / a >= 0.8 ? "met" : "NOT met"}`,
    );
  };
  row("authenticated request to an unknown path vs /health", health, unknown, "/health", "404");
  row(
    `hypervisor ${vms}-VM list vs the same bytes served static`,
    staticList,
    list,
    "static",
    "list",
  );
} finally {
  await blob?.stop();
  await app.stop();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
const missed = results.filter((r) => r.ratio < 0.8).map((r) => r.name);
console.log(missed.length ? `NOT met: ${missed.join("; ")}` : "all goals met");
