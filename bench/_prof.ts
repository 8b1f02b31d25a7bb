// In-process app (main.ts wiring) for heap measurements; mock in a child process.
import { type AppDeps, createApp } from "../app.ts";
import { outboundForConfig } from "../clients/outbound.ts";
import { createKvStorage } from "../storage/kv/mod.ts";
import { parseConfig } from "../config.ts";
import { jsonLogger } from "../infra/logger.ts";
import { hostEnv, startMain } from "../tests/_process.ts";
import { createParser } from "eventsource-parser";
import v8 from "node:v8";
import { Session } from "node:inspector";
const sess = new Session(); sess.connect();
const post = (m: string, p?: object) => new Promise<any>((res, rej) => sess.post(m, p ?? {}, (e: unknown, r: unknown) => e ? rej(e) : res(r)));
const SEED = Deno.env.get("SEED") ?? "nodes=2,vms=1600,cts=400,storages=2";
const TOKEN = "0123456789abcdef0123456789abcdef0123beef";
const dir = await Deno.makeTempDir({ prefix: "memapp-" });
const mock = await startMain({ ...hostEnv(dir), SERVICE_SURFACES: "hypervisor", SERVICE_KV_PATH: `${dir}/mock.kv`, HYPERVISOR_MOCK_SEED: SEED, HYPERVISOR_MOCK_TASK_DELAY_MS: "0" });
const config = parseConfig({ PORT: "0", SERVICE_KV_PATH: `${dir}/bridgebox.kv`, SERVICE_ALLOW_LOOPBACK_TARGETS: "true", INVENTORY_BOOTSTRAP_TOKEN: TOKEN, SERVICE_LISTEN_HOST: "127.0.0.1" });
const kv = await Deno.openKv(`${dir}/bridgebox.kv`);
const storage = createKvStorage(kv, { atRestKey: config.encryptionKey, now: Date.now });
const deps: AppDeps = { config, storage, fetch: globalThis.fetch, now: Date.now, logger: jsonLogger() };
deps.fetch = outboundForConfig(config, () => deps.self);
const app = await createApp(deps);
const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (r, i) => app.fetch(r, i));
deps.self = { port: server.addr.port, fetch: (request) => app.fetch(request, { internal: true }) };
const base = `http://127.0.0.1:${server.addr.port}`;
// deno-lint-ignore no-explicit-any
const gc = (globalThis as any).gc as () => void;
const mem = () => {  const m = Deno.memoryUsage(); return `heapUsed=${(m.heapUsed/2**20).toFixed(0)}MB ext=${(m.external/2**20).toFixed(0)}MB rss=${(m.rss/2**20).toFixed(0)}MB`; };
async function json(path: string, init: RequestInit = {}) {
  const res = await fetch(base + path, { ...init, headers: { "content-type": "application/json", ...init.headers } });
  return { status: res.status, body: await res.json() };
}
try {
  const key = crypto.getRandomValues(new Uint8Array(32)).toHex();
  const k = { "X-Service-API-Key": key };
  await json("/auth/register-key", { method: "POST", body: JSON.stringify({ api_key: key, label: "bench" }) });
  console.log((await json("/inventory/endpoint", { method: "POST", headers: k, body: JSON.stringify({ name: "this app", ip: "127.0.0.1", port: server.addr.port, use_https: false, token_version: "v1", token: TOKEN }) })).status);
  await json("/hypervisor/endpoints", { method: "POST", headers: k, body: JSON.stringify({ name: "mock", ip: "127.0.0.1", port: mock.port, use_https: false, username: "root@pam", password: "bridgebox" }) });
  console.log("start", mem());
let peakTotal=0, peakRss=0; let spaces: Record<string, number> = {}; let atPeak = ""; setInterval(()=>{const m=Deno.memoryUsage(); peakTotal=Math.max(peakTotal,m.heapTotal); if (m.rss > peakRss) { peakRss = m.rss; atPeak = v8.getHeapSpaceStatistics().map((x) => `${x.space_name.replace("_space","")}=${(x.space_size/2**20).toFixed(0)}`).join(" ") + ` total=${(m.heapTotal/2**20).toFixed(0)}`; } },50);
const peaks=()=>{const s=`peakHeapTotal=${(peakTotal/2**20).toFixed(0)} peakRss=${(peakRss/2**20).toFixed(0)} [${atPeak}]`; peakTotal=0; peakRss=0; return s;};
  await post("Profiler.enable"); await post("Profiler.setSamplingInterval", { interval: 2000 }); await post("Profiler.start");
  for (const run of (Deno.env.get("RUNS") ?? "first").split(",")) {
    const t0 = performance.now();
    const res = await fetch(base + "/full-update/stream", { headers: k });
    const parser = createParser({ onEvent(e) {
      if (e.event === "step") { const d = JSON.parse(e.data); if (d.status === "started" && Deno.env.get("SNAPAT")?.split(",").includes(d.step)) setTimeout(() => { console.log("snapping", d.step, mem()); v8.writeHeapSnapshot(`/tmp/scale/${d.step}.heapsnapshot`); console.log("snapped"); }, Number(Deno.env.get("SNAPDELAY") ?? 3000));
      if (d.status === "completed") console.log(run, ((performance.now()-t0)/1000).toFixed(1), d.step, JSON.stringify(d.result), peaks(), mem()); }
      if (e.event === "error") console.log("ERR", e.data.slice(0, 300));
      if (e.event === "complete") console.log("complete", JSON.parse(e.data).message);
    } });
    for await (const c of res.body!.pipeThrough(new TextDecoderStream())) parser.feed(c);
    console.log("after", run, mem());
  }
  Deno.writeTextFileSync("/tmp/scale/first.cpuprofile", JSON.stringify((await post("Profiler.stop")).profile));
  if (Deno.env.get("SNAP")) { v8.writeHeapSnapshot(Deno.env.get("SNAP")); console.log("snap written"); }
} finally { await mock.stop(); await Deno.remove(dir, { recursive: true }); Deno.exit(0); }
