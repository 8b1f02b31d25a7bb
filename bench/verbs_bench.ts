/**
 * Operational verb figures, in-process over the app's own mock hypervisor (task delay 0):
 * - verb latency p50/p99 (POST /hypervisor/qemu/{vmid}/start|stop: API key, audit record
 *   before and after, guest lookup in /cluster/resources, the call);
 * - the verb layer's cost over a direct call to the same hypervisor route
 *   (POST /api2/json/nodes/{node}/qemu/{vmid}/status/start|stop), target < 2 ms at p50;
 * - the audit's own cost: the same verb with the KV audit store vs with a store that keeps
 *   nothing, target < 2 ms at p50.
 * Samples alternate between the sides (A, B, A, B, …) so background load hits both alike.
 * Run: deno task bench, or deno bench -A bench/verbs_bench.ts.
 */
import { createApp } from "../app.ts";
import { parseConfig } from "../config.ts";
import { MemoryLogger } from "../infra/logger.ts";
import type { AppDeps } from "../routes/_lib/deps.ts";
import { createBackendApp, createBackendServices } from "../routes/backend/mod.ts";
import type { VerbAuditRecord, VerbAuditStore } from "../storage/ports.ts";
import { createKvStorage } from "../storage/kv/mod.ts";

const SAMPLES = 600;
const WARMUP = 50;
const TARGET_MS = 2;
const KEY = "v".repeat(48);
const ADDR = { remoteAddr: { hostname: "192.0.2.10" } };

const kv = await Deno.openKv(":memory:");
let whole: Awaited<ReturnType<typeof createApp>> | null = null;
const deps: AppDeps = {
  config: parseConfig({
    SERVICE_KV_PATH: ":memory:",
    SERVICE_ALLOW_LOOPBACK_TARGETS: "true",
    HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
  }),
  storage: createKvStorage(kv, { now: Date.now }),
  fetch: (input, init) => Promise.resolve(whole!.fetch(new Request(input, init), ADDR)),
  now: Date.now,
  logger: new MemoryLogger(),
};
whole = await createApp(deps);

const noAudit: VerbAuditStore = {
  begin: (start) =>
    Promise.resolve(
      {
        id: 1,
        ...start,
        result: null,
        status: "in_progress",
        task_upid: null,
        finished_at: null,
        detail: null,
      } satisfies VerbAuditRecord,
    ),
  finish: () => Promise.resolve(null),
  list: () => Promise.resolve({ count: 0, results: [] }),
};
const audited = await createBackendApp(deps);
const unaudited = await createBackendApp(deps, {
  ...createBackendServices(deps),
  verbAudit: noAudit,
});

const json = { "content-type": "application/json" };
await audited.request("/auth/register-key", {
  method: "POST",
  headers: json,
  body: JSON.stringify({ api_key: KEY }),
}, ADDR);
const created = await audited.request("/hypervisor/endpoints", {
  method: "POST",
  headers: { ...json, "X-Service-API-Key": KEY },
  body: JSON.stringify({
    name: "bench",
    ip: "127.0.0.1",
    port: 8800,
    use_https: false,
    username: "root@pam",
    password: "bridgebox",
    allow_writes: true,
  }),
}, ADDR);
const endpointId = (await created.json()).id;

const login = await whole.fetch(
  new Request("http://127.0.0.1:8800/api2/json/access/ticket", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "username=root@pam&password=bridgebox",
  }),
  ADDR,
);
const ticket = (await login.json()).data;
const resources = await (await whole.fetch(
  new Request("http://127.0.0.1:8800/api2/json/cluster/resources?type=vm", {
    headers: { cookie: `PVEAuthCookie=${ticket.ticket}` },
  }),
  ADDR,
)).json();
const guests = (resources.data as { vmid: number; type: string; node: string }[])
  .filter((g) => g.type === "qemu");

/** One guest per side, so each side toggles its own guest start, stop, start, … */
function toggler(index: number) {
  const g = guests[index];
  let running = (resources.data as { vmid: number; status: string }[])
    .find((r) => r.vmid === g.vmid)!.status === "running";
  return () => {
    const verb = running ? "stop" : "start";
    running = !running;
    return { ...g, verb };
  };
}

async function timed(work: () => Response | Promise<Response>): Promise<number> {
  const start = performance.now();
  const res = await work();
  await res.body?.cancel();
  if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
  return performance.now() - start;
}

type Side = () => Promise<number>;

function verbSide(app: typeof audited, next: ReturnType<typeof toggler>): Side {
  return () => {
    const g = next();
    return timed(() =>
      app.request(`/hypervisor/qemu/${g.vmid}/${g.verb}?endpoint_id=${endpointId}`, {
        method: "POST",
        headers: { "X-Service-API-Key": KEY },
      }, ADDR)
    );
  };
}

function directSide(next: ReturnType<typeof toggler>): Side {
  return () => {
    const g = next();
    return timed(() =>
      whole!.fetch(
        new Request(
          `http://127.0.0.1:8800/api2/json/nodes/${g.node}/qemu/${g.vmid}/status/${g.verb}`,
          {
            method: "POST",
            headers: {
              cookie: `PVEAuthCookie=${ticket.ticket}`,
              csrfpreventiontoken: ticket.CSRFPreventionToken,
            },
          },
        ),
        ADDR,
      )
    );
  };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

async function compare(a: Side, b: Side) {
  for (let i = 0; i < WARMUP; i++) (await a(), await b());
  const as: number[] = [], bs: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    as.push(await a());
    bs.push(await b());
  }
  as.sort((x, y) => x - y);
  bs.sort((x, y) => x - y);
  return {
    a: { p50: percentile(as, 0.5), p99: percentile(as, 0.99) },
    b: { p50: percentile(bs, 0.5), p99: percentile(bs, 0.99) },
  };
}

const ms = (n: number) => `${n.toFixed(3)} ms`;
const verdict = (n: number) => n < TARGET_MS ? "met" : "NOT met";

const layer = await compare(directSide(toggler(0)), verbSide(audited, toggler(1)));
console.log(
  `verb latency over the mock (start/stop, audited): p50 ${ms(layer.b.p50)}, p99 ${
    ms(layer.b.p99)
  }`,
);
console.log(
  `direct hypervisor route (same calls):            p50 ${ms(layer.a.p50)}, p99 ${ms(layer.a.p99)}`,
);
const overhead = layer.b.p50 - layer.a.p50;
console.log(
  `verb layer over the direct call at p50: ${ms(overhead)} (target < ${TARGET_MS} ms: ${
    verdict(overhead)
  })`,
);
const audit = await compare(verbSide(unaudited, toggler(2)), verbSide(audited, toggler(3)));
const auditCost = audit.b.p50 - audit.a.p50;
console.log(
  `audit cost at p50 (KV audit ${ms(audit.b.p50)} vs none ${ms(audit.a.p50)}): ${
    ms(auditCost)
  } (target < ${TARGET_MS} ms: ${verdict(auditCost)})`,
);
console.log(overhead < TARGET_MS && auditCost < TARGET_MS ? "met" : "NOT met");
kv.close();
