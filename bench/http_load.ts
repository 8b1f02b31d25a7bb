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
