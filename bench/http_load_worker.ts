/**
 * A minimal HTTP/1.1 keep-alive load generator, run in a Web Worker (the server keeps its own
 * thread) or as its own process (`deno run --allow-net bench/http_load_worker.ts` with the job
 * as JSON on stdin, the result as JSON on stdout: the load shares nothing with the server). It
 * reads each response's bytes (Content-Length or chunked) without decoding or decompressing
 * them, as wrk or oha would.
 */

interface Job {
  hostname: string;
  port: number;
  path: string;
  headers: Record<string, string>;
  durationMs: number;
  connections: number;
  /** One header whose value changes on every request, taken from `values` in turn. */
  rotate?: { header: string; values: string[] };
  /** A query parameter with a new value on every request (defeats caches keyed by URL). */
  uniqueQuery?: string;
}

/** Requests sent so far by this load generator (all connections): picks the rotating value. */
let sent = 0;

const encoder = new TextEncoder();
const CRLFCRLF = [13, 10, 13, 10];

class Reader {
  #buf = new Uint8Array(0);
  constructor(private readonly conn: Deno.Conn) {}

  readonly #scratch = new Uint8Array(256 * 1024);

  async #fill(): Promise<void> {
    const n = await this.conn.read(this.#scratch);
    if (n === null) throw new Error("connection closed");
    if (this.#buf.length === 0) {
      this.#buf = this.#scratch.slice(0, n);
      return;
    }
    const next = new Uint8Array(this.#buf.length + n);
    next.set(this.#buf);
    next.set(this.#scratch.subarray(0, n), this.#buf.length);
    this.#buf = next;
  }

  async until(pattern: number[]): Promise<Uint8Array> {
    for (;;) {
      const at = indexOf(this.#buf, pattern);
      if (at >= 0) {
        const head = this.#buf.subarray(0, at);
        this.#buf = this.#buf.subarray(at + pattern.length);
        return head;
      }
      await this.#fill();
    }
  }

  async skip(n: number): Promise<void> {
    for (;;) {
      if (this.#buf.length >= n) {
        this.#buf = this.#buf.subarray(n);
        return;
      }
      n -= this.#buf.length;
      this.#buf = new Uint8Array(0);
      await this.#fill();
    }
  }
}

function indexOf(buf: Uint8Array, pattern: number[]): number {
  outer: for (let i = 0; i <= buf.length - pattern.length; i++) {
    for (let j = 0; j < pattern.length; j++) if (buf[i + j] !== pattern[j]) continue outer;
    return i;
  }
  return -1;
}

async function connection(
  job: Job,
  end: number,
): Promise<{ count: number; bytes: number; statuses: Record<string, number> }> {
  const conn = await Deno.connect({ hostname: job.hostname, port: job.port });
  const reader = new Reader(conn);
  const head = [`GET ${job.path} HTTP/1.1`, `Host: ${job.hostname}:${job.port}`];
  for (const [k, v] of Object.entries(job.headers)) head.push(`${k}: ${v}`);
  const fixed = encoder.encode(head.join("\r\n") + "\r\n\r\n");
  const { rotate, uniqueQuery } = job;
  const next = () => {
    if (!rotate && !uniqueQuery) return fixed;
    const n = sent++;
    const lines = [...head];
    if (uniqueQuery) {
      lines[0] = `GET ${job.path}${job.path.includes("?") ? "&" : "?"}${uniqueQuery}=${n} HTTP/1.1`;
    }
    if (rotate) lines.push(`${rotate.header}: ${rotate.values[n % rotate.values.length]}`);
    return encoder.encode(lines.join("\r\n") + "\r\n\r\n");
  };
  let count = 0;
  let bytes = 0;
  const statuses: Record<string, number> = {};
  try {
    while (performance.now() < end) {
      await conn.write(next());
      const header = new TextDecoder().decode(await reader.until(CRLFCRLF));
      const status = header.slice(9, 12);
      statuses[status] = (statuses[status] ?? 0) + 1;
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(header);
      if (length) {
        await reader.skip(Number(length[1]));
        bytes += Number(length[1]);
      } else if (/\r\ntransfer-encoding:\s*chunked/i.test(header)) {
        for (;;) {
          const size = parseInt(new TextDecoder().decode(await reader.until([13, 10])), 16);
          await reader.skip(size + 2);
          bytes += size;
          if (size === 0) break;
        }
      }
      count++;
    }
  } finally {
    conn.close();
  }
  return { count, bytes, statuses };
}

async function run(job: Job) {
  const end = performance.now() + job.durationMs;
  const results = await Promise.all(
    Array.from({ length: job.connections }, () => connection(job, end)),
  );
  const statuses: Record<string, number> = {};
  for (const r of results) {
    for (const [k, v] of Object.entries(r.statuses)) statuses[k] = (statuses[k] ?? 0) + v;
  }
  return {
    count: results.reduce((a, r) => a + r.count, 0),
    bytes: results.reduce((a, r) => a + r.bytes, 0),
    statuses,
  };
}

if ("WorkerGlobalScope" in globalThis) {
  /** The worker global, typed narrowly (this file is type-checked with the window lib). */
  const worker = self as unknown as {
    onmessage: (e: MessageEvent<Job>) => void;
    postMessage: (message: unknown) => void;
  };
  worker.onmessage = async (e: MessageEvent<Job>) => worker.postMessage(await run(e.data));
} else if (import.meta.main) {
  const job = JSON.parse(await new Response(Deno.stdin.readable).text()) as Job;
  console.log(JSON.stringify(await run(job)));
}
