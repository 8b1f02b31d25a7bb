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
