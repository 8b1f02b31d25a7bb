/**
 * Hypervisor mock benchmarks.
 *
 *   npx -y deno@2.9.6 run -A bench/hypervisor_bench.ts report   # prints the figures
 *   npx -y deno@2.9.6 bench -A bench/hypervisor_bench.ts         # Deno.bench cases
 *
 * Figures: load + index of pve-9.2.json (target < 500 ms); RSS after load and a 10,000-guest
 * seed; GET /api2/json/nodes/{node}/qemu with 1,000 VMs on that node vs a bare c.text("ok")
 * Hono route in the same process, over real HTTP (target ratio >= 0.5) and in-process.
 */
import { Hono } from "hono";
import { indexSchema, loadSchema } from "../domain/hypervisor_schema/schema.ts";
import { createHypervisorApp } from "../routes/hypervisor/mod.ts";
import { parseConfig } from "../config.ts";
import { MemoryLogger } from "../domain/logger.ts";
import type { AppDeps } from "../routes/_lib/deps.ts";
import type { HypervisorEngine } from "../mock/engine.ts";
import { workerLoad } from "./http_load.ts";

const SCHEMA = new URL("../../shared/hypervisor-schema/pve-9.2.json", import.meta.url).pathname;
const SEED = "nodes=10,vms=10000,cts=0,storages=2";

async function setup() {
  const kv = await Deno.openKv(":memory:");
  const deps: AppDeps = {
    config: parseConfig({ SERVICE_KV_PATH: ":memory:", HYPERVISOR_MOCK_SEED: SEED }),
    kv,
    fetch: globalThis.fetch,
    now: Date.now,
    logger: new MemoryLogger(),
  };
  const schema = await loadSchema(SCHEMA);
  let engine: HypervisorEngine | undefined;
  const hv = await createHypervisorApp(deps, { schema, onEngine: (e) => engine = e });
  const app = new Hono();
  app.get("/ok", (c) => c.text("ok"));
  // The ceiling for any answer of the list's size: a static body, no work at all.
  let blob = new Uint8Array(0);
  app.get("/blob", () => new Response(blob, { headers: { "content-encoding": "gzip" } }));
  app.all("*", (c) => hv.fetch(c.req.raw));
  // An API token: no per-request ticket lookups or CSRF in the measurement.
  const login = await app.request("/api2/json/access/ticket", {
    method: "POST",
    body: new URLSearchParams({ username: "root@pam", password: "bridgebox" }),
  });
  const { data } = await login.json();
  const headers = {
    cookie: `PVEAuthCookie=${encodeURIComponent(data.ticket)}`,
    CSRFPreventionToken: data.CSRFPreventionToken,
  };
  const tok = await app.request("/api2/json/access/users/root@pam/token/bench", {
    method: "POST",
    headers,
  });
  const secret = (await tok.json()).data.value;
  const auth = { authorization: `PVEAPIToken=root@pam!bench=${secret}` };
  const sized = await app.request("/api2/json/nodes/pve1/qemu", {
    headers: { ...auth, "accept-encoding": "gzip" },
  });
  blob = new Uint8Array(await sized.arrayBuffer());
  return { app, engine: engine!, auth, kv };
}

async function throughput(
  url: string,
  headers: Record<string, string>,
  ms: number,
  concurrency = 16,
) {
  let count = 0;
  let bytes = 0;
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const res = await fetch(url, { headers });
        const body = await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
        bytes += body.byteLength;
        count++;
      }
    }),
  );
  return { rps: count / (ms / 1000), bytes: bytes / Math.max(1, count) };
}

async function inProcess(app: Hono, path: string, headers: Record<string, string>, n: number) {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await (await app.request(path, { headers })).arrayBuffer();
  return n / ((performance.now() - t0) / 1000);
}

async function report() {
  const rss0 = Deno.memoryUsage().rss;
  const loads: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const tree = await loadSchema(SCHEMA);
    const index = indexSchema(tree);
    loads.push(performance.now() - t0);
    if (index.operations.length !== 675) throw new Error("unexpected operation count");
  }
  const t1 = performance.now();
  const { app, engine, auth, kv } = await setup();
  const setupMs = performance.now() - t1;
  const onNode = [...engine.state.guestsByNode.get("pve1")!].length;
  const rss = Deno.memoryUsage().rss;
  console.log(
    `load+index pve-9.2.json: first ${loads[0].toFixed(1)} ms, best ${
      Math.min(...loads).toFixed(1)
    } ms (target < 500 ms)`,
  );
  console.log(
    `app (load, trie, 10,000-guest seed) built in ${
      setupMs.toFixed(0)
    } ms; guests ${engine.state.guests.size}, on pve1 ${onNode}`,
  );
  console.log(
    `RSS: before ${(rss0 / 2 ** 20).toFixed(0)} MiB, after load + 10,000-guest seed ${
      (rss / 2 ** 20).toFixed(0)
    } MiB`,
  );

  const list = "/api2/json/nodes/pve1/qemu";
  const ipList = await inProcess(app, list, auth, 300);
  const ipOk = await inProcess(app, "/ok", {}, 3000);
  console.log(
    `in-process: list ${ipList.toFixed(0)} req/s, bare ${ipOk.toFixed(0)} req/s, ratio ${
      (ipList / ipOk).toFixed(2)
    }`,
  );

  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, app.fetch);
  const base = `http://127.0.0.1:${server.addr.port}`;
  await throughput(`${base}/ok`, {}, 500);
  await throughput(`${base}${list}`, auth, 500);
  const ok = await throughput(`${base}/ok`, {}, 3000);
  const hv = await throughput(`${base}${list}`, auth, 3000);
  const plain = await throughput(
    `${base}${list}`,
    { ...auth, "accept-encoding": "identity" },
    3000,
  );
  const one = await throughput(`${base}${list}?limit=1`, auth, 3000);
  console.log(`HTTP: GET /ok (c.text("ok")): ${ok.rps.toFixed(0)} req/s`);
  console.log(
    `HTTP: GET ${list} (${onNode} VMs, gzip): ${hv.rps.toFixed(0)} req/s, ratio ${
      (hv.rps / ok.rps).toFixed(2)
    } (target >= 0.5)`,
  );
  console.log(
    `HTTP: same, identity (${(plain.bytes / 1024).toFixed(0)} KiB body): ${
      plain.rps.toFixed(0)
    } req/s, ratio ${(plain.rps / ok.rps).toFixed(2)}`,
  );
  console.log(
    `HTTP: GET ${list}?limit=1 (dispatch, auth, validation, same handler; tiny body): ${
      one.rps.toFixed(0)
    } req/s, ratio ${(one.rps / ok.rps).toFixed(2)}`,
  );
  // A separate load generator thread (like wrk/oha): bodies are read, not decoded.
  const gz = { ...auth, "accept-encoding": "gzip" };
  await workerLoad(server.addr.port, "/ok", {}, 500);
  await workerLoad(server.addr.port, list, gz, 500);
  const wOk = await workerLoad(server.addr.port, "/ok", {}, 3000);
  const wGz = await workerLoad(server.addr.port, list, gz, 3000);
  const wBlob = await workerLoad(server.addr.port, "/blob", {}, 3000);
  const wId = await workerLoad(
    server.addr.port,
    list,
    { ...auth, "accept-encoding": "identity" },
    3000,
  );
  console.log(`load thread: GET /ok ${wOk.rps.toFixed(0)} req/s ${JSON.stringify(wOk.statuses)}`);
  console.log(
    `load thread: GET ${list} gzip (${(wGz.bytes / 1024).toFixed(0)} KiB on the wire) ${
      wGz.rps.toFixed(0)
    } req/s, ratio ${(wGz.rps / wOk.rps).toFixed(2)} (target >= 0.5) ${
      JSON.stringify(wGz.statuses)
    }`,
  );
  console.log(
    `load thread: static body of the same size (ceiling for this payload) ${
      wBlob.rps.toFixed(0)
    } req/s, ratio ${(wBlob.rps / wOk.rps).toFixed(2)}; list/static ${
      (wGz.rps / wBlob.rps).toFixed(2)
    }`,
  );
  console.log(
    `load thread: GET ${list} identity (${(wId.bytes / 1024).toFixed(0)} KiB) ${
      wId.rps.toFixed(0)
    } req/s, ratio ${(wId.rps / wOk.rps).toFixed(2)}`,
  );
  await server.shutdown();
  kv.close();
}

if (import.meta.main && Deno.args[0] === "report") await report();

Deno.bench("load + index pve-9.2.json", async () => {
  indexSchema(await loadSchema(SCHEMA));
});

const bench = await setup().catch(() => undefined);
if (bench) {
  Deno.bench(
    "GET /api2/json/nodes/pve1/qemu (1,000 VMs), in-process",
    { group: "list" },
    async () => {
      await (await bench.app.request("/api2/json/nodes/pve1/qemu", { headers: bench.auth }))
        .arrayBuffer();
    },
  );
  Deno.bench("bare c.text('ok'), in-process", { group: "list", baseline: true }, async () => {
    await (await bench.app.request("/ok")).arrayBuffer();
  });
}
