import assert from "node:assert/strict";

/** Starts main.ts as a real process and returns its base URL once it listens. */
async function startMain(env: Record<string, string>) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--allow-write",
      "--allow-sys",
      "main.ts",
    ],
    cwd: new URL("..", import.meta.url).pathname,
    env: { PORT: "0", ...env },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let url = "";
  while (!url) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`main.ts exited early:\n${buffer}`);
    buffer += value;
    for (const line of buffer.split("\n").slice(0, -1)) {
      lines.push(line);
      const match = line.match(/"url":"(http:\/\/[^"]+)"/);
      if (match) url = match[1];
    }
    buffer = buffer.slice(buffer.lastIndexOf("\n") + 1);
  }
  const waiters: Array<{ test: (line: string) => boolean; resolve: (line: string) => void }> = [];
  const rest = (async () => {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      const complete = buffer.split("\n");
      buffer = complete.pop()!;
      for (const line of complete.filter(Boolean)) {
        lines.push(line);
        for (const w of [...waiters]) {
          if (w.test(line)) waiters.splice(waiters.indexOf(w), 1), w.resolve(line);
        }
      }
    }
  })();
  /** Resolves with the first log line (from now on) that contains `text`: the server's signal. */
  const logged = (text: string) =>
    new Promise<string>((resolve) => waiters.push({ test: (l) => l.includes(text), resolve }));
  return { child, url: url.replace("localhost", "127.0.0.1"), lines, rest, logged };
}

Deno.test("main: starts on its defaults; on SIGTERM new requests get 503 while an in-flight one finishes, then KV closes", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/nested/bridgebox.kv`;
  const { child, url, lines, rest, logged } = await startMain({
    SERVICE_KV_PATH: kvPath,
    SERVICE_SURFACES: "backend",
    SERVICE_TEST_TRACE_REQUESTS: "1",
  });
  try {
    assert.deepEqual(await (await fetch(`${url}health`)).json(), {
      status: "ready",
      init_ok: true,
    });

    // A request whose body is still arriving when the stop signal comes.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => release = resolve);
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode('{"api_key":"'));
        await gate;
        controller.enqueue(new TextEncoder().encode(`${"s".repeat(40)}"}`));
        controller.close();
      },
    });
    // Every step waits for the server to say it got there (no sleeps).
    const started = logged('"path":"/auth/register-key"');
    const inFlight = fetch(`${url}auth/register-key`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    await started;
    const stopping = logged("Stopping: finishing in-flight requests");
    child.kill("SIGTERM");
    assert.match(await stopping, /"in_flight":1/);

    // New requests are turned away while the in-flight one drains.
    const late = await fetch(`${url}health`);
    assert.equal(late.status, 503);
    assert.equal(late.headers.get("retry-after"), "1");
    assert.deepEqual(await late.json(), { detail: "Server is shutting down" });

    release();
    const res = await inFlight;
    assert.equal(res.status, 201, lines.join("\n"));
    assert.deepEqual(await res.json(), { detail: "API key registered." });

    const status = await child.status;
    await rest;
    assert.equal(status.code, 0);
    assert.ok(lines.some((l) => l.includes('"Stopped"')), lines.join("\n"));

    // The KV file was closed cleanly and holds the key registered during shutdown.
    const kv = await Deno.openKv(kvPath);
    assert.equal((await kv.get(["backend", "api_keys", "claimed"])).value, true);
    kv.close();
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("main: a bad configuration exits with a message naming the variable", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--allow-write",
      "--allow-sys",
      "main.ts",
    ],
    cwd: new URL("..", import.meta.url).pathname,
    env: { PORT: "not-a-port" },
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 2);
  assert.match(new TextDecoder().decode(out.stderr), /Configuration error: PORT/);
});
