// deno-lint-ignore-file no-explicit-any
/**
 * The in-process world the reliability tests share: every surface in one app over `:memory:` KV,
 * a backend key, an inventory superuser token and a hypervisor mock ticket, and the operations
 * of every surface read from the app's own OpenAPI documents (so a route added later is covered
 * without touching these tests).
 */
import { createApp } from "../../app.ts";
import { type TestDeps, testDeps, type TestOverrides } from "../_helpers.ts";

export const KEY = "reliability-key-0123456789abcdef0123456789abcdef";
export const ROOT = "0123456789abcdef0123456789abcdef01234567";

export interface Operation {
  surface: "backend" | "inventory" | "hypervisor";
  method: string;
  /** Path template as served, e.g. `/api/dcim/sites/{id}/`. */
  path: string;
  params: string[];
}

export interface World {
  deps: TestDeps;
  app: { request: (input: string, init?: RequestInit) => Response | Promise<Response> };
  operations: Operation[];
  /** Headers that authenticate on the surface serving `path`. */
  auth(path: string): Record<string, string>;
  close(): void;
}

const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"]);

export async function reliabilityWorld(
  env: Record<string, string> = {},
  overrides: TestOverrides = {},
): Promise<World> {
  const deps = await testDeps({
    INVENTORY_BOOTSTRAP_TOKEN: ROOT,
    HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
    ...env,
  }, {
    // Nothing leaves the process: a user-supplied URL fails at once instead of resolving names.
    fetch: () => Promise.reject(new TypeError("network unreachable in this test")),
    ...overrides,
  });
  const app = await createApp(deps);
  const registered = await app.request("/auth/register-key", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ api_key: KEY }),
  });
  if (registered.status !== 201) throw new Error(`register: ${await registered.text()}`);
  const login = await app.request("/api2/json/access/ticket", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ username: "root@pam", password: "bridgebox" }),
  });
  const ticket = (await login.json()).data;
  const hypervisorAuth = {
    cookie: `PVEAuthCookie=${ticket.ticket}`,
    csrfpreventiontoken: ticket.CSRFPreventionToken,
  };
  const auth = (path: string): Record<string, string> => {
    if (path.startsWith("/api2/") || path.startsWith("/pve")) return hypervisorAuth;
    if (path.startsWith("/api")) return { authorization: `Token ${ROOT}` };
    return { "x-service-api-key": KEY };
  };
  const operations: Operation[] = [];
  const docs: [Operation["surface"], string, string][] = [
    ["backend", "/openapi.json", ""],
    ["inventory", "/api/schema/", ""],
    ["hypervisor", "/pve/openapi.json", "/api2/json"],
  ];
  for (const [surface, doc, prefix] of docs) {
    const res = await app.request(doc, { headers: auth(doc) });
    const spec = await res.json();
    for (const [path, item] of Object.entries<any>(spec.paths)) {
      for (const method of Object.keys(item)) {
        if (!METHODS.has(method.toUpperCase())) continue;
        const full = path.startsWith("/codegen") ? `/pve${path}` : `${prefix}${path}`;
        operations.push({
          surface,
          method: method.toUpperCase(),
          path: full,
          params: [...full.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]),
        });
      }
    }
  }
  return { deps, app, operations, auth, close: () => deps.kv.close() };
}

/** Reads a response whatever it is; an event stream is cancelled after its headers. */
export async function drain(res: Response): Promise<string> {
  if (res.headers.get("content-type")?.includes("text/event-stream")) {
    await res.body?.cancel();
    return "";
  }
  return await res.text();
}
