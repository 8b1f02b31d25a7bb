// deno-lint-ignore-file no-explicit-any
/**
 * The app with every surface on one real socket (127.0.0.1, a free port), recording each
 * request it is sent, and an SSE reader: the core the e2e worlds (_jobs_world.ts,
 * _sync_harness.ts) build on.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { createApp } from "../../app.ts";
import { type TestDeps, testDeps, type TestOverrides } from "../_helpers.ts";

export interface Frame {
  event: string;
  data: any;
}

export interface ServedApp {
  base: string;
  port: number;
  deps: TestDeps;
  app: Awaited<ReturnType<typeof createApp>>;
  /** Requests seen by the server, "METHOD /path" (query stripped), in order. */
  seen: string[];
  /** The same requests with their query strings, "METHOD /path?query", in order. */
  requests: string[];
  /**
   * Each write to the inventory API (POST, PUT, PATCH on /api/): "METHOD /path?query" and the
   * bytes its answer's body held, in order of the answers.
   */
  writeAnswers: { request: string; bytes: number; objects: number }[];
  close(): Promise<void>;
}

export async function serveApp(
  env: Record<string, string>,
  overrides: TestOverrides,
): Promise<ServedApp> {
  const deps = await testDeps(env, overrides);
  const app = await createApp(deps);
  const seen: string[] = [];
  const requests: string[] = [];
  const writeAnswers: ServedApp["writeAnswers"] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (r, i) => {
    const url = new URL(r.url);
    seen.push(`${r.method} ${url.pathname}`);
    requests.push(`${r.method} ${url.pathname}${url.search}`);
    const response = await app.fetch(r, i);
    if (!/^(POST|PUT|PATCH)$/.test(r.method) || !url.pathname.startsWith("/api/")) return response;
    // The answer's bytes are passed on as they are (whatever their encoding), counted on the way.
    const body = await response.arrayBuffer();
    let objects = 0;
    try {
      const parsed = JSON.parse(new TextDecoder().decode(body));
      objects = Array.isArray(parsed) ? parsed.length : 1;
    } catch { /* not JSON: no objects */ }
    const request = `${r.method} ${url.pathname}${url.search}`;
    writeAnswers.push({ request, bytes: body.byteLength, objects });
    return new Response(body, response);
  });
  const port = server.addr.port;
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    deps,
    app,
    seen,
    requests,
    writeAnswers,
    async close() {
      await server.shutdown();
      deps.kv.close();
    },
  };
}

/**
 * Reads an SSE route to its end (or until `until` is true, then disconnects). A status other
 * than 200 is an error; frame data is parsed as JSON where it is JSON.
 */
export async function readSse(
  url: string,
  headers: Record<string, string>,
  until?: (frame: Frame) => boolean,
): Promise<Frame[]> {
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  if (res.status !== 200) {
    throw new Error(`GET ${url}: ${res.status} ${await res.text()}`);
  }
  const frames: Frame[] = [];
  let stop = false;
  const parser = createParser({
    onEvent(message: EventSourceMessage) {
      let data: any = message.data;
      try {
        data = JSON.parse(message.data);
      } catch { /* text */ }
      const frame = { event: message.event ?? "message", data };
      frames.push(frame);
      if (until?.(frame)) stop = true;
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
}
