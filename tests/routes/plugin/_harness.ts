/**
 * Test harness for the plugin API: the inventory surface (createInventoryApp) on :memory: KV
 * with a bootstrap superuser token, plus helpers to create the core objects plugin records
 * reference, a real backend surface over a socket, and a fake hypervisor API.
 */
import { createInventoryApp } from "../../../routes/inventory/mod.ts";
import { createBackendApp } from "../../../routes/backend/mod.ts";
import { type TestDeps, testDeps, type TestOverrides } from "../../_helpers.ts";

export const ROOT_TOKEN = "0123456789abcdef0123456789abcdef01234567";
export const P = "/api/plugins/service/";
export const FP = "SHA256:" + "q".repeat(43);

export interface Answer {
  status: number;
  // deno-lint-ignore no-explicit-any
  body: any;
  headers: Headers;
}

export interface Harness {
  deps: TestDeps;
  call(
    method: string,
    path: string,
    body?: unknown,
    options?: { auth?: string | null; headers?: Record<string, string> },
  ): Promise<Answer>;
  /** A token with exactly these permissions; returns the Authorization header value. */
  token(options: {
    permissions?: string[];
    write_enabled?: boolean;
    is_superuser?: boolean;
  }): Promise<string>;
  ip(address: string): Promise<number>;
  tenant(slug: string): Promise<number>;
  close(): Promise<void>;
}

export async function harness(
  env: Record<string, string> = {},
  overrides: TestOverrides = {},
): Promise<Harness> {
  // The backends and hypervisors these tests talk to listen on 127.0.0.1.
  const deps = await testDeps({
    INVENTORY_BOOTSTRAP_TOKEN: ROOT_TOKEN,
    SERVICE_ALLOW_LOOPBACK_TARGETS: "true",
    ...env,
  }, overrides);
  const app = await createInventoryApp(deps);
  const call: Harness["call"] = async (method, path, body, options = {}) => {
    const headers: Record<string, string> = { accept: "application/json", ...options.headers };
    const auth = options.auth === undefined ? `Token ${ROOT_TOKEN}` : options.auth;
    if (auth) headers.authorization = auth;
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await app.request(`http://inventory.test${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    return { status: response.status, body: parsed, headers: response.headers };
  };
  const created = async (path: string, body: unknown): Promise<number> => {
    const r = await call("POST", path, body);
    if (r.status !== 201) throw new Error(`POST ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.id;
  };
  return {
    deps,
    call,
    async token(options) {
      const r = await call("POST", "/api/users/tokens/", {
        version: 1,
        write_enabled: options.write_enabled ?? true,
        is_superuser: options.is_superuser ?? false,
        permissions: options.permissions ?? [],
      });
      if (r.status !== 201) throw new Error(`token: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.header ?? `Token ${r.body.token}`;
    },
    ip: (address) => created("/api/ipam/ip-addresses/", { address, status: "active" }),
    tenant: (slug) => created("/api/tenancy/tenants/", { name: slug.toUpperCase(), slug }),
    async close() {
      deps.kv.close();
      await Promise.resolve();
    },
  };
}

/** A real backend surface (routes/backend) on its own :memory: KV, over a real socket. */
export async function startBackend(): Promise<{
  port: number;
  request(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}> {
  const deps = await testDeps({ SERVICE_SURFACES: "backend" });
  const app = await createBackendApp(deps);
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (request, info) => app.fetch(request, { remoteAddr: info.remoteAddr }),
  );
  const port = server.addr.port;
  return {
    port,
    request: (path, init) => fetch(`http://127.0.0.1:${port}${path}`, init),
    async close() {
      await server.shutdown();
      deps.kv.close();
    },
  };
}

/** A port nothing listens on (bound, then released). */
export function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/**
 * A minimal hypervisor API (`/api2/json/version`, `/api2/json/access/ticket`) that records
 * every request, for the keepalive.
 */
export function startFakeHypervisor(options: { password?: string; token?: string } = {}) {
  const calls: string[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    const url = new URL(req.url);
    calls.push(`${req.method} ${url.pathname}`);
    if (url.pathname === "/api2/json/access/ticket" && req.method === "POST") {
      const form = new URLSearchParams(await req.text());
      if (form.get("password") !== options.password) {
        return Response.json({ data: null }, { status: 401 });
      }
      return Response.json({ data: { ticket: "PVE:ticket", CSRFPreventionToken: "csrf" } });
    }
    if (url.pathname === "/api2/json/version") {
      const auth = req.headers.get("authorization") ?? "";
      const cookie = req.headers.get("cookie") ?? "";
      const ok = (options.token && auth === `PVEAPIToken=${options.token}`) ||
        cookie === "PVEAuthCookie=PVE:ticket";
      if (!ok) return Response.json({ data: null }, { status: 401 });
      return Response.json({ data: { version: "9.2", release: "9.2", repoid: "abc123" } });
    }
    return Response.json({ data: null }, { status: 501 });
  });
  return {
    port: server.addr.port,
    calls,
    close: () => server.shutdown(),
  };
}

/** Saves the backend endpoint record pointing at a local backend on `port` (plain HTTP). */
export async function addBackendEndpoint(h: Harness, port: number) {
  const res = await h.call("POST", P + "endpoints/backend/", {
    name: "backend",
    domain: "127.0.0.1",
    port,
    use_https: false,
  });
  if (res.status !== 201) {
    throw new Error(`backend endpoint not saved: ${JSON.stringify(res.body)}`);
  }
  return res.body;
}
