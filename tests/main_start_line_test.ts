/**
 * The start line of `main.ts` names where the web console is (it is served with the inventory),
 * and only when the inventory surface is served.
 */
import assert from "node:assert/strict";

async function startLine(surfaces?: string): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-net", "--allow-env", "--allow-read", "--allow-write", "--allow-sys"]
      .concat(["--allow-run=ps", "main.ts"]),
    cwd: new URL("..", import.meta.url).pathname,
    env: {
      PORT: "0",
      SERVICE_KV_PATH: ":memory:",
      ...(surfaces ? { SERVICE_SURFACES: surfaces } : {}),
    },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let text = "";
  try {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      const line = text.split("\n").find((l) => l.includes("listening on"));
      if (line) return line;
    }
    throw new Error(`no start line:\n${text}`);
  } finally {
    try {
      child.kill("SIGTERM");
    } catch { /* already gone */ }
    await child.status;
  }
}

Deno.test("start line: names the console URL", async () => {
  const line = JSON.parse(await startLine());
  assert.match(line.message, /; console: http:\/\/localhost:\d+\/ui\/\)$/);
  assert.equal(line.console, `${line.url}ui/`);
});

Deno.test("start line: no console without the inventory surface", async () => {
  const line = JSON.parse(await startLine("backend"));
  assert.doesNotMatch(line.message, /console/);
  assert.equal(line.console, undefined);
});

Deno.test("start on a busy port: one line saying so and what to do, exit 1, no stack trace", async () => {
  // Held on loopback: main.ts binds every address, which includes it, so the start fails.
  const holder = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = (holder.addr as Deno.NetAddr).port;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-net", "--allow-env", "--allow-read", "--allow-write", "--allow-sys"]
        .concat(["--allow-run=ps", "main.ts"]),
      cwd: new URL("..", import.meta.url).pathname,
      env: { PORT: String(port), SERVICE_KV_PATH: ":memory:", HOST_AGENT_MOCK_TOKEN: "agent" },
      stdout: "null",
      stderr: "piped",
    }).output();
    const lines = new TextDecoder().decode(out.stderr).trim().split("\n");
    assert.equal(out.code, 1, lines.join("\n"));
    assert.deepEqual(lines, [
      `port ${port} is in use (is \`npx -y deno@2.9.6 task demo\` or another start running?); ` +
      "stop it (Ctrl-C in its terminal) or choose another port, e.g. " +
      `PORT=${port + 1} npx -y deno@2.9.6 task start`,
    ]);
  } finally {
    holder.close();
  }
});
