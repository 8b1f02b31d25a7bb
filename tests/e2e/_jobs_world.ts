// deno-lint-ignore-file no-explicit-any
/**
 * The whole plugin loop on one real socket, as deployed: this app serves the backend, the
 * inventory with its plugin, and the hypervisor mock; the plugin's endpoint records point at
 * this same port (answered in-process by the outbound guard, as main.ts wires it), so a sync
 * job drives the backend's stage streams over HTTP exactly as a separate plugin would.
 */
import type { TestDeps, TestOverrides } from "../_helpers.ts";
import { call as callJson } from "../_process.ts";
import { type Frame, readSse, serveApp } from "./_served_app.ts";

export type { Frame };

export const ROOT = "jobs0123456789abcdef0123456789abcdef0123";
export const P = "/api/plugins/service/";

export interface JobsWorld {
  base: string;
  port: number;
  deps: TestDeps;
  seen: string[];
  call(
    method: string,
    path: string,
    body?: unknown,
    auth?: string,
  ): Promise<{ status: number; body: any }>;
  /** Reads an SSE route to its end (or until `until` is true, then disconnects). */
  sse(path: string, until?: (f: Frame) => boolean, auth?: string): Promise<Frame[]>;
  /** Backend endpoint, inventory endpoint (a superuser v1 token), the mock as hypervisor. */
  wire(): Promise<{ hypervisor: number; backend: any }>;
  job(id: number): Promise<any>;
  close(): Promise<void>;
}

export async function jobsWorld(
  env: Record<string, string> = {},
  overrides: TestOverrides = {},
  handler?: (request: Request, next: () => Promise<Response>) => Promise<Response>,
): Promise<JobsWorld> {
  const served = await serveApp({
    INVENTORY_BOOTSTRAP_TOKEN: ROOT,
    HYPERVISOR_MOCK_SEED: "nodes=2,vms=4,cts=2,storages=2",
    HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
    ...env,
  }, overrides);
  const { app, base, deps, port, seen } = served;
  deps.self = {
    port,
    fetch: (request) => {
      seen.push(`${request.method} ${new URL(request.url).pathname}`);
      const next = async () => await app.fetch(request, { internal: true });
      return handler ? handler(request, next) : next();
    },
  };
  const call: JobsWorld["call"] = (method, path, body, auth = `Token ${ROOT}`) =>
    callJson(base, method, path, { authorization: auth }, body);
  const sse: JobsWorld["sse"] = (path, until, auth = `Token ${ROOT}`) =>
    readSse(base + path, { authorization: auth }, until);
  const must = async (method: string, path: string, body: unknown) => {
    const r = await call(method, path, body);
    if (r.status !== 201 && r.status !== 200) {
      throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    }
    return r.body;
  };
  return {
    base,
    port,
    deps,
    seen,
    call,
    sse,
    async wire() {
      const backend = await must("POST", P + "endpoints/backend/", {
        name: "backend",
        domain: "127.0.0.1",
        port,
        use_https: false,
      });
      const token = await must("POST", "/api/users/tokens/", {
        version: 1,
        is_superuser: true,
        write_enabled: true,
        description: "the backend writes the inventory with this",
      });
      await must("POST", P + "endpoints/inventory/", {
        name: "self",
        domain: "127.0.0.1",
        port,
        use_https: false,
        token: token.id,
      });
      const hv = await must("POST", P + "endpoints/hypervisor/", {
        name: "pve",
        domain: "127.0.0.1",
        port,
        use_https: false,
        username: deps.config.hypervisor.mockUser,
        password: deps.config.hypervisor.mockPassword,
      });
      return { hypervisor: hv.id, backend };
    },
    async job(id) {
      const r = await call("GET", `/api/core/jobs/${id}/`);
      if (r.status !== 200) throw new Error(`job ${id}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },
    close: served.close,
  };
}

export const statusOf = (job: any) => job.status?.value ?? job.status;
