import assert from "node:assert/strict";

Deno.test("deno.json: request.signal aborts only when a client goes, and Deno says nothing about it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const script = `${dir}/serve.ts`;
    await Deno.writeTextFile(
      script,
      `let aborted = false;
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
  req.signal.addEventListener("abort", () => aborted = true);
  return new Response("ok");
});
await (await fetch(\`http://127.0.0.1:\${server.addr.port}/\`)).text();
await new Promise((resolve) => setTimeout(resolve, 100));
await server.shutdown();
console.log(JSON.stringify({ aborted }));`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-net",
        "--config",
        new URL("../deno.json", import.meta.url).pathname,
        script,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, stderr);
    assert.deepEqual(JSON.parse(new TextDecoder().decode(out.stdout)), { aborted: false });
    assert.ok(!/legacy/i.test(stderr), stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno.json: the tasks a user runs start Deno with --quiet (a first start would list ~900 npm download and unpack lines)", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url)));
  for (const task of ["start", "dev", "demo", "token:create", "sync", "rekey"]) {
    const command: string = config.tasks[task];
    assert.match(command, /^deno run --quiet /, `${task}: ${command}`);
  }
});
