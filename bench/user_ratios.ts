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
import { request as httpRequest } from "node:http";
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

interface Measured {
  rps: number;
  /** Mean body bytes per response, as the load generator read them off the wire. */
  bytes: number;
}

async function load(side: Side): Promise<Measured> {
  const r = await processLoad(side.port, side.path, side.headers, ROUND_MS, { connections: 16 });
  const other = Object.keys(r.statuses).filter((s) => s !== side.status);
  if (other.length > 0) throw new Error(`${side.label}: ${JSON.stringify(r.statuses)}`);
  return { rps: r.rps, bytes: r.bytes };
}

/** Mean requests per second of each side, rounds alternating (after one warm-up round each). */
async function alternate(sides: Side[]): Promise<Measured[]> {
  for (const side of sides) await load(side);
  const sums = sides.map(() => ({ rps: 0, bytes: 0 }));
  for (let i = 0; i < ROUNDS; i++) {
    for (const [k, side] of sides.entries()) {
      const m = await load(side);
      sums[k].rps += m.rps;
      sums[k].bytes += m.bytes;
    }
  }
  return sums.map((s) => ({ rps: s.rps / ROUNDS, bytes: s.bytes / ROUNDS }));
}

/** One GET as its bytes on the wire, still encoded (node:http does not decompress). */
function rawGet(port: number, path: string, headers: Record<string, string>) {
  return new Promise<{ headers: Record<string, string | string[] | undefined>; body: Uint8Array }>(
    (resolve, reject) => {
      const req = httpRequest({ host: "127.0.0.1", port, path, headers }, (res) => {
        const chunks: Uint8Array[] = [];
        res.on("data", (chunk: Uint8Array) => chunks.push(chunk));
        res.on("end", () => {
          if (res.statusCode !== 200) return reject(new Error(`${path}: ${res.statusCode}`));
          const body = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
          chunks.reduce((at, c) => (body.set(c, at), at + c.length), 0);
          resolve({ headers: res.headers, body });
        });
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end();
    },
  );
}

/**
 * A bare Deno server answering every request with these bytes and headers, as a user would write
 * one: `new Response(bytes)` per request, and a handler that takes no argument (Deno then builds
 * no Request object for it; an app that reads the request cannot have that).
 */
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
  // The answer as a client with gzip gets it, off the wire (fetch would decompress it): those
  // bytes and headers are what is served static.
  const sample = await fetch(`${base}${LIST}`, { headers: { ...pveAuth } });
  if (sample.status !== 200) throw new Error(`${LIST}: ${sample.status}`);
  const vms = (await sample.json()).data.length;
  const wire = await rawGet(app.port, LIST, { ...pveAuth, "accept-encoding": "gzip" });
  const kept: [string, string][] = [];
  for (const name of ["content-type", "content-encoding", "vary", "cache-control"]) {
    const value = wire.headers[name];
    if (typeof value === "string") kept.push([name, value]);
  }
  const encoded = wire.body;
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
  row(
    "authenticated request to an unknown path vs /health",
    health.rps,
    unknown.rps,
    "/health",
    "404",
  );
  row(
    `hypervisor ${vms}-VM list vs the same bytes served static`,
    staticList.rps,
    list.rps,
    "static",
    "list",
  );
  // The same bytes: the list is rebuilt every second (uptimes move), so its size moves a little.
  console.log(
    `    body bytes per response: list ${list.bytes.toFixed(0)}, static ${
      staticList.bytes.toFixed(0)
    } (${kept.map(([n, v]) => `${n}: ${v}`).join(", ")})`,
  );
} finally {
  await blob?.stop();
  await app.stop();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
const missed = results.filter((r) => r.ratio < 0.8).map((r) => r.name);
console.log(missed.length ? `NOT met: ${missed.join("; ")}` : "all goals met");
