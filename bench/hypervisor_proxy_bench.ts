/**
 * Real-mode overhead: GET /api2/json/nodes/{node}/qemu answered by a mock instance directly
 * (in process) vs through the real-mode proxy over a real HTTP hop to that instance.
 *
 *   npx -y deno@2.9.6 bench --allow-all bench/hypervisor_proxy_bench.ts
 */
import { createHypervisorApp } from "../routes/hypervisor/mod.ts";
import { hypervisorRealRoutes } from "../routes/hypervisor/real.ts";
import { loadSchema } from "../domain/hypervisor_schema/schema.ts";
import { parseConfig } from "../config.ts";
import { MemoryLogger } from "../infra/logger.ts";
import type { AppDeps } from "../routes/_lib/deps.ts";
import { createKvStorage } from "../storage/kv/mod.ts";

const schema = await loadSchema(
  new URL("../../shared/hypervisor-schema/pve-9.2.json", import.meta.url).pathname,
);
const kv = await Deno.openKv(":memory:");
const deps = (env: Record<string, string>): AppDeps => ({
  config: parseConfig({ SERVICE_KV_PATH: ":memory:", ...env }),
  storage: createKvStorage(kv, { now: Date.now }),
  fetch: globalThis.fetch,
  now: Date.now,
  logger: new MemoryLogger(),
});
const mock = await createHypervisorApp(deps({ HYPERVISOR_MOCK_SEED: "nodes=1,vms=100" }), {
  schema,
});
const server = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen() {} },
  (req) => mock.fetch(req),
);
const { app: proxy, handler } = await hypervisorRealRoutes(
  deps({
    HYPERVISOR_MODE: "real",
    HYPERVISOR_URL: `http://127.0.0.1:${server.addr.port}`,
    HYPERVISOR_USERNAME: "root@pam",
    HYPERVISOR_PASSWORD: "bridgebox",
  }),
  schema,
);
const login = await mock.request("/api2/json/access/ticket", {
  method: "POST",
  body: new URLSearchParams({ username: "root@pam", password: "bridgebox" }),
});
const ticket = (await login.json()).data.ticket as string;
const auth = { headers: { cookie: `PVEAuthCookie=${encodeURIComponent(ticket)}` } };

Deno.bench(
  "direct: mock GET /api2/json/nodes/pve1/qemu (100 VMs)",
  { baseline: true },
  async () => {
    await (await mock.request("/api2/json/nodes/pve1/qemu", auth)).arrayBuffer();
  },
);
Deno.bench("proxied: real mode over HTTP to the mock (100 VMs)", async () => {
  await (await proxy.request("/api2/json/nodes/pve1/qemu")).arrayBuffer();
});

globalThis.addEventListener("unload", () => {
  handler.close();
  server.shutdown();
  kv.close();
});
