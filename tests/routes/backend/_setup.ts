import { createBackendApp } from "../../../routes/backend/mod.ts";
import { testDeps, type TestOverrides } from "../../_helpers.ts";

export const KEY = "k".repeat(40);

export interface BackendHarness {
  deps: Awaited<ReturnType<typeof testDeps>>;
  /** Sends a request as if from `ip` (the socket peer). */
  call(
    path: string,
    init?: RequestInit & { json?: unknown; key?: string | null; ip?: string },
  ): Promise<Response>;
  [Symbol.asyncDispose](): Promise<void>;
}

export async function backend(
  env: Record<string, string> = {},
  overrides: TestOverrides = {},
): Promise<BackendHarness> {
  const deps = await testDeps({ SERVICE_SURFACES: "backend", ...env }, overrides);
  const app = await createBackendApp(deps);
  return {
    deps,
    call(path, init = {}) {
      const { json, key, ip, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (json !== undefined) headers.set("content-type", "application/json");
      if (key) headers.set("X-Service-API-Key", key);
      return Promise.resolve(app.request(path, {
        ...rest,
        headers,
        body: json !== undefined ? JSON.stringify(json) : rest.body,
      }, { remoteAddr: { hostname: ip ?? "192.0.2.10" } }));
    },
    [Symbol.asyncDispose]() {
      deps.kv.close();
      return Promise.resolve();
    },
  };
}

/** A harness whose first key is registered; `KEY` authenticates. */
export async function registered(
  env: Record<string, string> = {},
  overrides: TestOverrides = {},
) {
  const h = await backend(env, overrides);
  const res = await h.call("/auth/register-key", {
    method: "POST",
    json: { api_key: KEY, label: "first" },
  });
  if (res.status !== 201) throw new Error(`registration failed: ${res.status}`);
  return h;
}
