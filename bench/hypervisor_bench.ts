/**
 * Hypervisor mock benchmarks.
 *
 *   npx -y deno@2.9.6 run -A bench/hypervisor_bench.ts report   # prints the figures
 *   npx -y deno@2.9.6 bench -A bench/hypervisor_bench.ts         # Deno.bench cases
 *
 * Figures, each with its target and met / NOT met, then one summary line:
 * - load + index of pve-9.2.json (target < 500 ms); RSS after load and a 10,000-guest seed;
 * - GET /api2/json/nodes/pve1/qemu with 1,000 VMs on that node vs a bare c.text("ok") Hono
 *   route in the same server, over a socket with load from a separate process, rounds
 *   alternating: "cached" repeats one URL (the mock caches a serialised GET answer for up to a
 *   second), "uncached" varies the query on every request (`_dc`, the ExtJS cache buster the
 *   mock ignores), so each request rebuilds and serialises the list. Target ratio >= 0.5 each,
 *   and the cached list >= 0.8 of the same bytes served static (the payload's ceiling);
 * - the same in-process (app.request, no socket), reported without a target.
 */
import { Hono } from "hono";
import { indexSchema, loadSchema } from "../domain/hypervisor_schema/schema.ts";
import { createHypervisorApp } from "../routes/hypervisor/mod.ts";
import { parseConfig } from "../config.ts";
import { MemoryLogger } from "../infra/logger.ts";
import type { AppDeps } from "../routes/_lib/deps.ts";
import type { HypervisorEngine } from "../mock/engine.ts";
import { processLoad } from "./http_load.ts";
import { createKvStorage } from "../storage/kv/mod.ts";

const SCHEMA = new URL("../../shared/hypervisor-schema/pve-9.2.json", import.meta.url).pathname;
const SEED = "nodes=10,vms=10000,cts=0,storages=2";

async function setup() {
  const kv = await Deno.openKv(":memory:");
  const deps: AppDeps = {
    config: parseConfig({ SERVICE_KV_PATH: ":memory:", HYPERVISOR_MOCK_SEED: SEED }),
    storage: createKvStorage(kv, { now: Date.now }),
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

async function inProcess(app: Hono, path: string, headers: Record<string, string>, n: number) {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const unique = path.replace("{n}", String(i));
    await (await app.request(unique, { headers })).arrayBuffer();
  }
  return n / ((performance.now() - t0) / 1000);
}

const results: Array<{ name: string; met: boolean }> = [];

function verdict(name: string, met: boolean): string {
  results.push({ name, met });
  return met ? "met" : "NOT met";
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
    } ms (target < 500 ms, first load) ${verdict("schema load", loads[0] < 500)}`,
  );
  console.log(
    `app (load, trie, 10,000-guest seed) built in ${
      setupMs.toFixed(0)
    } ms; guests ${engine.state.guests.size}, on pve1 ${onNode}`,
  );
  console.log(
    `RSS: before ${(rss0 / 2 ** 20).toFixed(0)} MiB, after load + 10,000-guest seed ${
      (rss / 2 ** 20).toFixed(0)
    } MiB (no target)`,
  );

  const list = "/api2/json/nodes/pve1/qemu";
  const ipOk = await inProcess(app, "/ok", {}, 3000);
  const ipCached = await inProcess(app, list, auth, 300);
  const ipUncached = await inProcess(app, `${list}?_dc={n}`, auth, 300);
  console.log(
    `in-process app.request: bare ${ipOk.toFixed(0)} req/s; list cached ${
      ipCached.toFixed(0)
    } req/s (ratio ${(ipCached / ipOk).toFixed(2)}); list uncached ${
      ipUncached.toFixed(0)
    } req/s (ratio ${(ipUncached / ipOk).toFixed(2)}) (no target)`,
  );

  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, app.fetch);
  const port = server.addr.port;
  const gz = { ...auth, "accept-encoding": "gzip" };
  const sides = [
    { name: "bare /ok", path: "/ok", headers: {}, uniqueQuery: undefined },
    { name: "list cached", path: list, headers: gz, uniqueQuery: undefined },
    { name: "list uncached", path: list, headers: gz, uniqueQuery: "_dc" },
    { name: "static body of the list's size", path: "/blob", headers: {}, uniqueQuery: undefined },
  ];
  const ROUNDS = 4;
  const ROUND_MS = 1500;
  const sums = sides.map(() => ({ rps: 0, bytes: 0 }));
  for (const side of sides) await processLoad(port, side.path, side.headers, 300, side);
  for (let r = 0; r < ROUNDS; r++) {
    for (const [k, side] of sides.entries()) {
      const res = await processLoad(port, side.path, side.headers, ROUND_MS, side);
      if (Object.keys(res.statuses).some((s) => s !== "200")) {
        throw new Error(`${side.name}: ${JSON.stringify(res.statuses)}`);
      }
      sums[k].rps += res.rps / ROUNDS;
      sums[k].bytes = res.bytes;
    }
  }
  const [ok, cached, uncached, blob] = sums;
  console.log(
    `socket, load from a separate process, ${ROUNDS} alternating rounds of ${ROUND_MS} ms:`,
  );
  console.log(`  GET /ok (c.text("ok")): ${ok.rps.toFixed(0)} req/s`);
  for (const [label, side] of [["cached", cached], ["uncached (?_dc=<n>)", uncached]] as const) {
    const ratio = side.rps / ok.rps;
    console.log(
      `  GET ${list} ${label}, ${onNode} VMs, gzip (${(side.bytes / 1024).toFixed(0)} KiB): ${
        side.rps.toFixed(0)
      } req/s, ratio ${ratio.toFixed(2)} (target >= 0.5) ${
        verdict(`list ${label}`, ratio >= 0.5)
      }; vs a static body of its size ${(side.rps / blob.rps).toFixed(2)}${
        label === "cached"
          ? ` (target >= 0.8) ${verdict("list cached vs static", side.rps / blob.rps >= 0.8)}`
          : ""
      }`,
    );
  }
  console.log(
    `  static body of the same size (ceiling for this payload): ${blob.rps.toFixed(0)} req/s, ` +
      `ratio ${(blob.rps / ok.rps).toFixed(2)} (no target)`,
  );
  await server.shutdown();
  kv.close();
  const missed = results.filter((r) => !r.met);
  console.log(
    missed.length === 0
      ? `hypervisor bench: all ${results.length} targets met`
      : `hypervisor bench: NOT met: ${missed.map((r) => r.name).join("; ")}`,
  );
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
