// deno-lint-ignore-file no-explicit-any
/**
 * The whole plugin loop on one real socket, as deployed: this app serves the backend, the
 * inventory with its plugin, and the hypervisor mock; the plugin's endpoint records point at
 * this same port (answered in-process by the outbound guard, as main.ts wires it), so a sync
 * job drives the backend's stage streams over HTTP exactly as a separate plugin would.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { createApp } from "../../app.ts";
import { type TestDeps, testDeps, type TestOverrides } from "../_helpers.ts";

export const ROOT = "jobs0123456789abcdef0123456789abcdef0123";
export const P = "/api/plugins/service/";

export interface Frame {
  event: string;
  data: any;
}

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
  const deps = await testDeps({
    INVENTORY_BOOTSTRAP_TOKEN: ROOT,
    HYPERVISOR_MOCK_SEED: "nodes=2,vms=4,cts=2,storages=2",
    HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
    ...env,
  }, overrides);
  const app = await createApp(deps);
  const seen: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (r, i) => {
    seen.push(`${r.method} ${new URL(r.url).pathname}`);
    return app.fetch(r, i);
  });
  const port = server.addr.port;
  deps.self = {
    port,
    fetch: (request) => {
      seen.push(`${request.method} ${new URL(request.url).pathname}`);
      const next = async () => await app.fetch(request, { internal: true });
      return handler ? handler(request, next) : next();
    },
  };
  const base = `http://127.0.0.1:${port}`;
  const call: JobsWorld["call"] = async (method, path, body, auth = `Token ${ROOT}`) => {
    const res = await fetch(base + path, {
      method,
      headers: {
        authorization: auth,
        accept: "application/json",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch { /* text */ }
    return { status: res.status, body: parsed };
  };
  const sse: JobsWorld["sse"] = async (path, until, auth = `Token ${ROOT}`) => {
    const controller = new AbortController();
    const res = await fetch(base + path, {
      headers: { authorization: auth },
      signal: controller.signal,
    });
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
    const frames: Frame[] = [];
    let stop = false;
    const parser = createParser({
      onEvent(m: EventSourceMessage) {
        let data: any = m.data;
        try {
          data = JSON.parse(m.data);
        } catch { /* text */ }
        const f = { event: m.event ?? "message", data };
        frames.push(f);
        if (until?.(f)) stop = true;
      },
    });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    try {
      while (!stop) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
    } finally {
      if (stop) controller.abort();
      await reader.cancel().catch(() => {});
    }
    return frames;
  };
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
    async close() {
      await server.shutdown();
      deps.kv.close();
    },
  };
}

export const statusOf = (job: any) => job.status?.value ?? job.status;
