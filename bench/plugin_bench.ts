/**
 * Plugin figures (issue 4):
 * - save of a hypervisor endpoint with push-on-save to a real backend over a socket
 *   (validate + store + GET bootstrap-status + GET list + PUT copy + last_push write);
 * - the same save with the endpoint disabled (no push), for the cost of the push itself;
 * - hypervisor endpoint list scoped by X-Cloud-Tenant among 1,000 endpoints;
 * - keepalive of a disabled endpoint (answered locally).
 * Run: deno task bench (or deno bench -A bench/plugin_bench.ts).
 */
import { createInventoryApp } from "../routes/inventory/mod.ts";
import { createBackendApp } from "../routes/backend/mod.ts";
import { parseConfig } from "../config.ts";
import { MemoryLogger } from "../infra/logger.ts";
import { createKvStorage } from "../storage/kv/mod.ts";

const ROOT = "bench-root-token-0123456789abcdef01234567";
const P = "/api/plugins/service/";

async function deps(env: Record<string, string>) {
  const kv = await Deno.openKv(":memory:");
  const config = parseConfig({ SERVICE_KV_PATH: ":memory:", ...env });
  return {
    config,
    kv,
    storage: createKvStorage(kv, { atRestKey: config.encryptionKey, now: Date.now }),
    fetch,
    now: Date.now,
    logger: new MemoryLogger(),
  };
}

const backendDeps = await deps({ SERVICE_SURFACES: "backend" });
const backendApp = await createBackendApp(backendDeps);
const backend = Deno.serve(
  { port: 0, hostname: "127.0.0.1", onListen() {} },
  (r, i) => backendApp.fetch(r, { remoteAddr: i.remoteAddr }),
);
const inventoryDeps = await deps({ INVENTORY_BOOTSTRAP_TOKEN: ROOT });
const inventory = await createInventoryApp(inventoryDeps);

async function call(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const r = await inventory.request(`http://bench${path}`, {
    method,
    headers: { authorization: `Token ${ROOT}`, "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await r.json();
  if (r.status >= 400) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
  return json;
}

await call("POST", P + "endpoints/backend/", {
  name: "backend",
  domain: "127.0.0.1",
  port: backend.addr.port,
  use_https: false,
});
const pushed = await call("POST", P + "endpoints/hypervisor/", {
  name: "pushed",
  domain: "pve.local",
  password: "pw",
});
if (!pushed.last_push.ok) throw new Error(JSON.stringify(pushed.last_push));
const quiet = await call("POST", P + "endpoints/hypervisor/", {
  name: "quiet",
  domain: "pve.local",
  password: "pw",
  enabled: false,
});

const tenants: number[] = [];
for (let i = 0; i < 20; i++) {
  tenants.push((await call("POST", "/api/tenancy/tenants/", { name: `T${i}`, slug: `t${i}` })).id);
}
const bulk = [];
for (let i = 0; i < 1000; i++) {
  bulk.push({
    name: `ep-${i}`,
    domain: `ep-${i}.local`,
    enabled: false,
    allowed_tenants: i % 10 === 0 ? [tenants[i % 20]] : [],
  });
}
await call("POST", P + "endpoints/hypervisor/", bulk);

let port = 8000;
Deno.bench("save + push-on-save to a real backend (PATCH hypervisor endpoint)", async () => {
  const r = await call("PATCH", `${P}endpoints/hypervisor/${pushed.id}/`, { port: ++port });
  if (!r.last_push.ok) throw new Error(r.last_push.error);
});

Deno.bench("save without push (disabled endpoint)", async () => {
  await call("PATCH", `${P}endpoints/hypervisor/${quiet.id}/`, { port: ++port });
});

Deno.bench("list with X-Cloud-Tenant among 1,000 endpoints (explicit grants)", async () => {
  await call("GET", `${P}endpoints/hypervisor/?limit=50`, undefined, { "x-cloud-tenant": "t0" });
});

Deno.bench("list with X-Cloud-Tenant among 1,000 endpoints (global pool)", async () => {
  await call("GET", `${P}endpoints/hypervisor/?limit=50`, undefined, { "x-cloud-tenant": "t1" });
});

Deno.bench("keepalive of a disabled endpoint (no contact)", async () => {
  const r = await call("GET", `${P}endpoints/hypervisor/${quiet.id}/status/`);
  if (r.status !== "disabled") throw new Error(JSON.stringify(r));
});

globalThis.addEventListener("unload", () => {
  backend.shutdown();
  backendDeps.kv.close();
  inventoryDeps.kv.close();
});
