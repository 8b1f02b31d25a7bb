import assert from "node:assert/strict";
import { isDenoTaskCommand, parentPid, watchLauncher } from "../launcher_watch.ts";

Deno.test("launcher watch: the parent pid is read past a command name with spaces and parentheses", () => {
  const files: Record<string, string> = {
    "/proc/42/stat": "42 (deno (task) x) S 7 42 42 0 -1 4194560 1 0",
  };
  const read = (path: string) => {
    if (!(path in files)) throw new Deno.errors.NotFound(path);
    return files[path];
  };
  assert.equal(parentPid(42, read), 7);
  assert.equal(parentPid(99, read), null);
  assert.equal(isDenoTaskCommand(["/usr/bin/deno", "task", "start"]), true);
  assert.equal(isDenoTaskCommand(["deno", "run", "main.ts"]), false);
  assert.equal(isDenoTaskCommand(["node", "task"]), false);
  assert.equal(isDenoTaskCommand(null), false);
});

Deno.test("launcher watch: fires once the task's launcher changes, never while it stays, never outside deno task", async () => {
  let launcher = 7;
  const task = Deno.ppid;
  // Each look at the process table is counted, so "it has not fired" is asserted after the
  // watch has looked several times, not after some time has passed.
  let looks = 0;
  let looked: { count: number; resolve: () => void } | null = null;
  const lookedAgain = (count: number) =>
    new Promise<void>((resolve) => looked = { count: looks + count, resolve });
  const table = {
    parentPid: (pid: number) => {
      looks++;
      if (looked && looks >= looked.count) looked.resolve();
      return Promise.resolve(pid === task ? launcher : null);
    },
    commandLine: () => Promise.resolve(["deno", "task", "start"]),
  };
  let fired = "";
  let gone!: () => void;
  const done = new Promise<void>((resolve) => gone = resolve);
  const stop = await watchLauncher((reason) => {
    fired = reason;
    gone();
  }, { intervalMs: 5, table });
  const held = setTimeout(() => {}, 5000);
  await lookedAgain(3);
  clearTimeout(held);
  assert.equal(fired, "");
  launcher = 1;
  // The watch timer is unref'ed (it must not keep a server alive): hold the loop open here.
  const hold = setTimeout(() => {}, 5000);
  await done;
  clearTimeout(hold);
  assert.match(fired, /pid 7\) has exited/);
  stop();

  const before = looks;
  const outside = await watchLauncher(() => assert.fail("not under deno task"), {
    intervalMs: 5,
    table: { ...table, commandLine: () => Promise.resolve(["deno", "run", "main.ts"]) },
  });
  launcher = 2;
  // Outside `deno task` the process table is never even looked at: nothing is watched.
  assert.equal(looks, before);
  outside();
});

Deno.test({
  name:
    "launcher watch: killing what ran `deno task start` stops the server (it no longer lingers)",
  ignore: Deno.build.os !== "linux",
}, async () => {
  const dir = await Deno.makeTempDir();
  // `; true` keeps bash from exec-ing deno: bash is the launcher, as npx is for a user.
  const launcher = new Deno.Command("bash", {
    args: ["-c", `"${Deno.execPath()}" task start; true`],
    cwd: new URL("..", import.meta.url).pathname,
    env: { PORT: "0", SERVICE_KV_PATH: `${dir}/kv`, SERVICE_SURFACES: "backend" },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const seen = async (pattern: RegExp) => {
    for await (const chunk of reader.values({ preventCancel: true })) {
      lines.push(...chunk.split("\n"));
      if (lines.some((l) => pattern.test(l))) return true;
    }
    return false;
  };
  const reader = launcher.stderr.pipeThrough(new TextDecoderStream());
  try {
    assert.ok(await seen(/listening on http/), lines.join("\n"));
    // A start says one thing: where it listens and where the docs are (after deno's task line).
    const said = lines.filter((l) => l.trim());
    assert.equal(said.length, 2, said.join("\n"));
    assert.match(
      said[1],
      /listening on http:\/\/localhost:\d+\/ \(docs: http:\/\/localhost:\d+\/docs\)/,
    );
    const url = lines.join("\n").match(/"url":"(http:[^"]+)"/)![1].replace(
      "localhost",
      "127.0.0.1",
    );
    assert.equal((await fetch(`${url}health`).then((r) => r.json())).status, "ready");

    launcher.kill("SIGKILL");
    // The stderr pipe is shared by `deno task` and main.ts, so it ends only when both are gone.
    assert.ok(await seen(/"Stopped"/), lines.join("\n"));
    assert.ok(lines.some((l) => l.includes("has exited")), lines.join("\n"));
    await assert.rejects(fetch(`${url}health`));
  } finally {
    await launcher.status;
    await Deno.remove(dir, { recursive: true });
  }
});
