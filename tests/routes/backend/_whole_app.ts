/**
 * The whole app (every surface) for tests that need the backend to reach the app's own mocks
 * (host-agent, hypervisor): outbound calls go to the app in-process, or, with `socket`, over a
 * real socket on 127.0.0.1:0 through the guarded outbound transport (clients/outbound.ts).
 * Loopback targets are allowed (SERVICE_ALLOW_LOOPBACK_TARGETS).
 */
import { createApp } from "../../../app.ts";
import { createOutboundFetch } from "../../../clients/outbound.ts";
import { testDeps, type TestOverrides } from "../../_helpers.ts";
import { KEY } from "./_setup.ts";

export interface WholeApp {
  deps: Awaited<ReturnType<typeof testDeps>>;
  /** Where the app answers: a real socket, or a made-up origin reached in-process. */
  base: string;
  /** Every outbound request the backend made (URL and headers), in order. */
  outbound: { url: string; method: string; authorization: string | null }[];
  call(
    path: string,
    init?: RequestInit & { json?: unknown; key?: string | null },
  ): Promise<Response>;
  [Symbol.asyncDispose](): Promise<void>;
}

export async function wholeApp(
  options: {
    env?: Record<string, string>;
    socket?: boolean;
    deps?: TestOverrides;
    /** Runs before each outbound request is sent (to hold it back, or to count it). */
    before?: (request: Request) => void | Promise<void>;
  } = {},
): Promise<WholeApp> {
  const outbound: WholeApp["outbound"] = [];
  let app: Awaited<ReturnType<typeof createApp>> | null = null;
  let server: Deno.HttpServer<Deno.NetAddr> | null = null;
  const inProcess: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    return Promise.resolve(app!.fetch(request, { remoteAddr: { hostname: "127.0.0.1" } }));
  };
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    outbound.push({
      url: request.url,
      method: request.method,
      authorization: request.headers.get("authorization"),
    });
    await options.before?.(request.clone());
    return await (options.socket ? guarded! : inProcess)(input, init);
  };
  const deps = await testDeps(
    { SERVICE_ALLOW_LOOPBACK_TARGETS: "true", HYPERVISOR_MOCK_TASK_DELAY_MS: "0", ...options.env },
    { fetch: recording, ...options.deps },
  );
  // Over a socket, outbound calls take the app's one guarded transport, as in main.ts.
  const guarded = createOutboundFetch({ allowLoopbackTargets: deps.config.allowLoopbackTargets });
  app = await createApp(deps);
  let base = "http://127.0.0.1:8800";
  if (options.socket) {
    const a = app;
    server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (r, i) => a.fetch(r, { remoteAddr: i.remoteAddr }),
    );
    base = `http://127.0.0.1:${server.addr.port}`;
  }
  const call: WholeApp["call"] = async (path, init = {}) => {
    const { json, key, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (json !== undefined) headers.set("content-type", "application/json");
    if (key !== null) headers.set("X-Service-API-Key", key ?? KEY);
    const request = new Request(base + path, {
      ...rest,
      headers,
      body: json !== undefined ? JSON.stringify(json) : rest.body,
    });
    return options.socket
      ? await fetch(request)
      : await app!.fetch(request, { remoteAddr: { hostname: "192.0.2.10" } });
  };
  const registered = await call("/auth/register-key", {
    method: "POST",
    json: { api_key: KEY, label: "first" },
    key: null,
  });
  if (registered.status !== 201) throw new Error(`registration failed: ${registered.status}`);
  await registered.body?.cancel();
  return {
    deps,
    base,
    outbound,
    call,
    async [Symbol.asyncDispose]() {
      await server?.shutdown();
      deps.kv.close();
    },
  };
}
