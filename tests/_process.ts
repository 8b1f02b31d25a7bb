// deno-lint-ignore-file no-explicit-any
/**
 * Bridgebox as a child process (`deno run main.ts`) on a KV file, for crash, restart and
 * scale-out tests: start, wait for a log line, kill -9, start again on the same file.
 */
import { createParser } from "eventsource-parser";

const ROOT_PATH = decodeURIComponent(new URL("../", import.meta.url).pathname);

export interface Child {
  port: number;
  /** The process id (peak RSS is read from /proc/<pid>/status). */
  pid: number;
  base: string;
  /** Every log line so far (parsed JSON where it is JSON). */
  lines: any[];
  /** Every log line so far, as written. */
  log: string[];
  /** Resolves with the first log line (past or future) the predicate accepts. */
  waitFor(match: (line: any) => boolean): Promise<any>;
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/** What a child needs from this process's environment (the child's is cleared). */
export function hostEnv(dir: string): Record<string, string> {
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: Deno.env.get("HOME") ?? dir,
    ...(Deno.env.get("DENO_DIR") ? { DENO_DIR: Deno.env.get("DENO_DIR")! } : {}),
  };
}

export function baseEnv(dir: string): Record<string, string> {
  return {
    ...hostEnv(dir),
    SERVICE_KV_PATH: `${dir}/bridgebox.kv`,
    SERVICE_ALLOW_LOOPBACK_TARGETS: "true",
    SERVICE_TEST_TRACE_REQUESTS: "1",
  };
}

/**
 * The `--v8-flags=…` of `deno task start` (deno.json): a child runs V8 as users' servers do, so
 * the user-path bench measures the memory `task start` gives (docs/sync.md, Memory).
 */
export function startTaskV8Flags(): string[] {
  const config = JSON.parse(Deno.readTextFileSync(`${ROOT_PATH}deno.json`));
  const main = String(config.tasks.start).split("&&").pop()!;
  return main.split(/\s+/).filter((arg) => arg.startsWith("--v8-flags="));
}

/**
 * `runArgs` go to `deno run` before main.ts: the user-path bench's `--cpu-prof` (written when the
 * child stops on SIGTERM).
 */
export async function startMain(
  env: Record<string, string>,
  runArgs: readonly string[] = [],
): Promise<Child> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...startTaskV8Flags(), ...runArgs]
      .concat(["--allow-net", "--allow-env", "--allow-read", "--allow-write", "--allow-sys"])
      .concat(["main.ts"]),
    cwd: ROOT_PATH,
    // Loopback only unless the caller says otherwise: a child server (tests, benches) is never
    // reachable from another machine.
    env: { PORT: "0", SERVICE_LISTEN_HOST: "127.0.0.1", ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: any[] = [];
  const log: string[] = [];
  let waiters: { match: (line: any) => boolean; resolve: (line: any) => void }[] = [];
  const listening = Promise.withResolvers<number>();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    let buffer = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      const parts = buffer.split("\n");
      buffer = parts.pop()!;
      for (const text of parts) {
        log.push(text);
        let line: any;
        try {
          line = JSON.parse(text);
        } catch {
          line = { message: text };
        }
        lines.push(line);
        const match = String(line.message ?? "").match(/listening on https?:\/\/[^:]+:(\d+)\//);
        if (match) listening.resolve(Number(match[1]));
        waiters = waiters.filter((w) => {
          if (!w.match(line)) return true;
          w.resolve(line);
          return false;
        });
      }
    }
  };
  const ended = Promise.all([pump(child.stdout), pump(child.stderr)]).catch(() => {});
  void ended.then(() => listening.reject(new Error(`main.ts ended: ${JSON.stringify(lines)}`)));
  const port = await listening.promise;
  let gone = false;
  return {
    port,
    pid: child.pid,
    base: `http://127.0.0.1:${port}`,
    lines,
    log,
    waitFor(match) {
      const seen = lines.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => waiters.push({ match, resolve }));
    },
    async kill() {
      if (gone) return;
      gone = true;
      child.kill("SIGKILL");
      await child.status;
      await ended;
    },
    async stop() {
      if (gone) return;
      gone = true;
      child.kill("SIGTERM");
      await child.status;
      await ended;
    },
  };
}

/** JSON call with the surface's credentials given in `headers`. */
export async function call(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const res = await fetch(base + path, {
    method,
    headers: {
      accept: "application/json",
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch { /* not JSON: kept as text */ }
  return { status: res.status, body: parsed };
}

/**
 * Reads an SSE route, handing each frame to `onFrame`; `onFrame` answering true disconnects.
 * Resolves with the frames read (a connection cut by a killed server ends the list).
 */
export async function readStream(
  url: string,
  headers: Record<string, string>,
  onFrame: (frame: { event: string; data: any }) => boolean | void = () => false,
): Promise<{ event: string; data: any }[]> {
  const controller = new AbortController();
  const frames: { event: string; data: any }[] = [];
  let stop = false;
  const parser = createParser({
    onEvent(message) {
      let data: any = message.data;
      try {
        data = JSON.parse(message.data);
      } catch { /* kept as text */ }
      const frame = { event: message.event ?? "message", data };
      frames.push(frame);
      if (onFrame(frame)) stop = true;
    },
  });
  try {
    const res = await fetch(url, { headers, signal: controller.signal });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    while (!stop) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.feed(value);
    }
    controller.abort();
    await reader.cancel().catch(() => {});
  } catch {
    // The server went away mid-stream: what was read is the answer.
  }
  return frames;
}
