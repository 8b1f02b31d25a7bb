import assert from "node:assert/strict";
import { createInventoryApp } from "../../../routes/inventory/mod.ts";
import { testDeps, type TestOverrides } from "../../_helpers.ts";

export const TOKEN = "0123456789abcdef0123456789abcdef01234567";

export interface Inv {
  app: Awaited<ReturnType<typeof createInventoryApp>>;
  deps: Awaited<ReturnType<typeof testDeps>>;
  /** JSON request with the superuser token (or `token` when given; null for none). */
  call(
    method: string,
    path: string,
    body?: unknown,
    token?: string | null,
    // deno-lint-ignore no-explicit-any
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /** POST with the superuser token that must create (201); the created body. */
  // deno-lint-ignore no-explicit-any
  created(path: string, body: unknown): Promise<any>;
  close(): void;
}

/** An inventory app on :memory: KV with a v1 superuser bootstrap token. */
export async function setup(
  env: Record<string, string> = {},
  overrides: TestOverrides = {},
): Promise<Inv> {
  const deps = await testDeps({ INVENTORY_BOOTSTRAP_TOKEN: TOKEN, ...env }, overrides);
  const app = await createInventoryApp(deps);
  const inv: Inv = {
    app,
    deps,
    async call(method, path, body, token = `Token ${TOKEN}`) {
      const headers: Record<string, string> = {};
      if (token !== null) headers.authorization = token;
      let payload: string | undefined;
      if (body !== undefined) {
        headers["content-type"] = "application/json";
        payload = typeof body === "string" ? body : JSON.stringify(body);
      }
      const res = await app.request(`http://inv.test${path}`, { method, headers, body: payload });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch { /* not JSON */ }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async created(path, body) {
      const r = await inv.call("POST", path, body);
      assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
      return r.body;
    },
    close() {
      deps.kv.close();
    },
  };
  return inv;
}
