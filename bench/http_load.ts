/**
 * Load from a Web Worker over raw keep-alive HTTP/1.1 (bench/http_load_worker.ts): the
 * server keeps its own thread, and bodies are read, not decoded, as wrk or oha would.
 */
export interface LoadResult {
  rps: number;
  /** Mean body bytes per response. */
  bytes: number;
  statuses: Record<string, number>;
}

export function workerLoad(
  port: number,
  path: string,
  headers: Record<string, string>,
  durationMs: number,
  connections = 32,
): Promise<LoadResult> {
  const worker = new Worker(new URL("./http_load_worker.ts", import.meta.url), { type: "module" });
  return new Promise<LoadResult>((resolve, reject) => {
    worker.onmessage = (e) => {
      worker.terminate();
      resolve({
        rps: e.data.count / (durationMs / 1000),
        bytes: e.data.bytes / Math.max(1, e.data.count),
        statuses: e.data.statuses,
      });
    };
    worker.onerror = (e) => {
      worker.terminate();
      reject(e);
    };
    worker.postMessage({ hostname: "127.0.0.1", port, path, headers, durationMs, connections });
  });
}

/**
 * The same load from a separate process (`deno run bench/http_load_worker.ts`): nothing of the
 * load generator runs in the server's process. `rotate` changes one header on every request, `uniqueQuery` adds a
 * query parameter with a new value to every request.
 */
export async function processLoad(
  port: number,
  path: string,
  headers: Record<string, string>,
  durationMs: number,
  options: {
    connections?: number;
    rotate?: { header: string; values: string[] };
    uniqueQuery?: string;
  } = {},
): Promise<LoadResult> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-net", new URL("./http_load_worker.ts", import.meta.url).pathname],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const job = {
    hostname: "127.0.0.1",
    port,
    path,
    headers,
    durationMs,
    connections: options.connections ?? 32,
    rotate: options.rotate,
    uniqueQuery: options.uniqueQuery,
  };
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(JSON.stringify(job)));
  await writer.close();
  const out = await child.output();
  if (!out.success) throw new Error("load process failed");
  const result = JSON.parse(new TextDecoder().decode(out.stdout));
  return {
    rps: result.count / (durationMs / 1000),
    bytes: result.bytes / Math.max(1, result.count),
    statuses: result.statuses,
  };
}
