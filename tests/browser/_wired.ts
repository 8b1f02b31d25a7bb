/**
 * The whole app on a real socket, wired to itself as an operator would through the plugin API
 * (encryption key, backend endpoint, inventory endpoint), with a superuser inventory token.
 * The hypervisor endpoint is left to the caller (the browser test adds it through the console).
 */
import { createApp } from "../../app.ts";
import { createInventoryCore, createSuperuserToken } from "../../routes/inventory/mod.ts";
import { type TestDeps, testDeps } from "../_helpers.ts";

export interface Wired {
  base: string;
  port: number;
  token: string;
  tokenId: number;
  deps: TestDeps;
  /** An inventory API call with the superuser token. */
  // deno-lint-ignore no-explicit-any
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

export async function startWired(
  options: { env?: Record<string, string>; hypervisor?: boolean } = {},
): Promise<Wired> {
  const deps = await testDeps({
    SERVICE_ALLOW_LOOPBACK_TARGETS: "true",
    HYPERVISOR_MOCK_SEED: "nodes=2,vms=6,cts=2,storages=2",
    ...options.env,
  });
  const app = await createApp(deps);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request, info) => app.fetch(request, info),
  );
  const port = server.addr.port;
  const base = `http://127.0.0.1:${port}`;
  const { id: tokenId, token } = await createSuperuserToken(
    createInventoryCore(deps),
    "console test",
    1,
  );
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Token ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const here = { domain: "127.0.0.1", port, use_https: false };
  const must = async (method: string, path: string, body: unknown) => {
    const r = await api(method, `/api/plugins/service/${path}`, body);
    if (r.status >= 300 || r.body?.last_push?.ok === false) {
      throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    }
    return r.body;
  };
  await must("PATCH", "settings/", { encryption_key: "console test encryption key" });
  await must("POST", "endpoints/backend/", { name: "this app", ...here });
  await must("POST", "endpoints/inventory/", {
    name: "this app",
    ...here,
    token_version: "v1",
    token: tokenId,
  });
  if (options.hypervisor) {
    await must("POST", "endpoints/hypervisor/", {
      name: "lab",
      ...here,
      username: deps.config.hypervisor.mockUser,
      password: deps.config.hypervisor.mockPassword,
      allow_writes: true,
    });
  }
  return {
    base,
    port,
    token,
    tokenId,
    deps,
    api,
    close: async () => {
      await server.shutdown();
      deps.kv.close();
    },
  };
}
