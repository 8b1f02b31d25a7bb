/**
 * The README is a runnable tour, and this test keeps it so: it starts the real main.ts on a free
 * port (fresh KV file), then runs every ```sh block of README.md in order, in ONE bash session
 * (`set -euo pipefail`, so variables carry from block to block), with PORT and B set as a reader
 * sets them once. It fails when a command fails, when a curl call answers 4xx/5xx unexpectedly,
 * or when an expected-output comment drifts.
 *
 * Conventions for README authors (see also the comment at the top of README.md):
 * - Every ```sh block runs. Put `<!-- not-run: why -->` on the line(s) just above a block that must
 *   not (it starts a server, runs the test suite, needs a real cluster, ...).
 * - `# → text` on its own line checks that the output of the commands since the previous check
 *   in the same block contains `text` (whitespace-trimmed, literal).
 * - A curl answer of 400 or more fails the tour, unless the check that follows it starts with
 *   `HTTP <status>` (e.g. `# → HTTP 409 {"detail":"An API key is already configured."}`).
 * - `npx -y deno@<version> ...` runs the Deno that runs this test (no download).
 * - `<!-- demo-tour -->` above a block moves it to the demo's tour: those blocks run in order
 *   against `deno task demo` (the second test below), after the `export B=… KEY=… INV=…` line the
 *   demo prints, and are left out of the tour against `task start`.
 */
import assert from "node:assert/strict";
import { hostEnv, startMain } from "../_process.ts";

const ROOT = new URL("../../", import.meta.url);
const ROOT_PATH = decodeURIComponent(ROOT.pathname);

export interface ShBlock {
  /** 1-based README line of the opening fence. */
  line: number;
  code: string;
  skip: string | null;
  /** Which tour it belongs to: the one against `task start` or the one against `task demo`. */
  tour: "start" | "demo";
}

/** The ```sh blocks of a Markdown text, each with the not-run reason written above it, if any. */
export function shBlocks(markdown: string): ShBlock[] {
  const lines = markdown.split("\n");
  const blocks: ShBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = lines[i].match(/^(\s*)(`{3,}|~{3,})\s*(\w+)?/);
    if (!fence) continue;
    const [, , marks, lang] = fence;
    let end = i + 1;
    while (end < lines.length && !lines[end].trim().startsWith(marks)) end++;
    if (lang === "sh" || lang === "bash" || lang === "shell") {
      // The marker is the first non-blank line above the fence.
      let j = i - 1;
      while (j >= 0 && lines[j].trim() === "") j--;
      const above = j >= 0 ? lines[j] : "";
      const marker = above.match(/<!--\s*not-run\s*(?::\s*(.*?))?\s*-->/);
      const skip = marker ? marker[1] || "no reason given" : null;
      const tour = /<!--\s*demo-tour\s*-->/.test(above) ? "demo" : "start";
      blocks.push({ line: i + 1, code: lines.slice(i + 1, end).join("\n"), skip, tour });
    }
    i = end;
  }
  return blocks;
}

export interface Segment {
  block: number;
  /** README line of the segment's first line. */
  line: number;
  code: string;
  /** What the output must contain (after `# →`), or null for a segment with no check. */
  expect: string | null;
}

/** Splits a block at its `# → expected` lines: each check covers the commands above it. */
export function segments(block: ShBlock, index: number): Segment[] {
  const out: Segment[] = [];
  let start = 0;
  let current: string[] = [];
  const lines = block.code.split("\n");
  lines.forEach((text, i) => {
    const check = text.match(/^\s*#\s*→\s?(.*)$/);
    if (check) {
      out.push({
        block: index,
        line: block.line + 1 + start,
        code: current.join("\n"),
        expect: check[1].trim(),
      });
      current = [];
      start = i + 1;
    } else {
      current.push(text);
    }
  });
  if (current.some((l) => l.trim() && !l.trim().startsWith("#"))) {
    out.push({
      block: index,
      line: block.line + 1 + start,
      code: current.join("\n"),
      expect: null,
    });
  }
  return out;
}

const PRELUDE = [
  "set -euo pipefail",
  "npx() {",
  '  if [[ "$#" -ge 2 && "$1" == "-y" && "$2" == deno@* ]]; then shift 2; "$TOUR_DENO" "$@";',
  '  else command npx "$@"; fi',
  "}",
  // Records each answer's status for the checks; the body is printed as curl printed it.
  "curl() {",
  "  local out code",
  "  out=$(command curl -w '\\n%{http_code}' \"$@\") || return $?",
  "  code=${out##*$'\\n'}",
  "  printf '%s\\n' \"${out%$'\\n'*}\"",
  '  echo "$code" >> "$TOUR_DIR/status"',
  "}",
].join("\n");

function script(all: Segment[]): string {
  const parts = [PRELUDE];
  all.forEach((s, i) => {
    parts.push(
      `echo ${i} > "$TOUR_DIR/current"; : > "$TOUR_DIR/status"`,
      `{\n${s.code}\n} > "$TOUR_DIR/out-${i}" 2> "$TOUR_DIR/err-${i}"`,
      `mv "$TOUR_DIR/status" "$TOUR_DIR/status-${i}"`,
    );
  });
  parts.push(`echo done > "$TOUR_DIR/current"`);
  return parts.join("\n");
}

Deno.test("README: the shell blocks parse into a tour with checks", () => {
  const blocks = shBlocks(
    "a\n\n<!-- not-run: starts a server -->\n\n```sh\nnpx start\n```\n\n```sh\nX=1\necho $X\n# → 1\necho 2\n```\n",
  );
  assert.deepEqual(blocks.map((b) => [b.line, b.skip, b.tour]), [
    [5, "starts a server", "start"],
    [9, null, "start"],
  ]);
  assert.deepEqual(
    shBlocks("<!-- demo-tour -->\n```sh\ncurl $B\n```\n").map((b) => [b.skip, b.tour]),
    [[null, "demo"]],
  );
  assert.deepEqual(segments(blocks[1], 1).map((s) => [s.line, s.code, s.expect]), [
    [10, "X=1\necho $X", "1"],
    [13, "echo 2", null],
  ]);
});

/**
 * Runs a tour's segments in one bash session. Returns the first problem found, in words that
 * point at the README line, or null when every command ran and every check held.
 */
export async function runTour(
  markdown: string,
  env: Record<string, string>,
  extra: (dir: string) => string = () => "",
  tour: "start" | "demo" = "start",
): Promise<string | null> {
  const blocks = shBlocks(markdown);
  const all = blocks.flatMap((b, i) => b.skip || b.tour !== tour ? [] : segments(b, i));
  const dir = await Deno.makeTempDir({ prefix: "readme-tour-" });
  try {
    const result = await new Deno.Command("bash", {
      args: ["-c", script(all)],
      cwd: ROOT_PATH,
      env: { ...env, TOUR_DIR: dir, TOUR_DENO: Deno.execPath() },
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(180_000),
    }).output();
    const read = (name: string) => Deno.readTextFile(`${dir}/${name}`).catch(() => "");
    const where = (i: number) =>
      `README line ${all[i].line} (block at line ${blocks[all[i].block].line})`;
    const reached = (await read("current")).trim();
    if (reached !== "done") {
      const i = Number(reached);
      return `the tour stopped at ${where(i)} (exit ${result.code}):\n${all[i].code}\n` +
        `--- output ---\n${await read(`out-${i}`)}\n--- stderr ---\n${await read(`err-${i}`)}` +
        `${new TextDecoder().decode(result.stderr)}${extra(dir)}`;
    }
    for (let i = 0; i < all.length; i++) {
      const output = await read(`out-${i}`);
      const statuses = (await read(`status-${i}`)).split("\n").filter(Boolean).map(Number);
      const expect = all[i].expect;
      const allowed = expect?.match(/^HTTP (\d{3})\b/)?.[1];
      const bad = statuses.find((status) => status >= 400 && String(status) !== allowed);
      if (bad) {
        return `${where(i)}: curl got HTTP ${bad}:\n${all[i].code}\n--- output ---\n${output}`;
      }
      if (allowed && !statuses.includes(Number(allowed))) {
        return `${where(i)}: expected HTTP ${allowed}, got ${statuses.join(", ") || "no answer"}`;
      }
      const text = expect?.replace(/^HTTP \d{3}\s*/, "") ?? "";
      if (text && !output.includes(text)) {
        return `${where(i)}: the output no longer contains what the README says.\n` +
          `expected: ${text}\n--- output ---\n${output}\n--- stderr ---\n${await read(`err-${i}`)}`;
      }
    }
    return null;
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

Deno.test("README tour runner: a failed command, an unexpected 4xx, a missing status and drift all fail", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const path = new URL(req.url).pathname;
    return path === "/ok"
      ? Response.json({ detail: "fine" })
      : Response.json({ detail: "Invalid token" }, { status: 403 });
  });
  const env = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", PORT: String(server.addr.port) };
  const tour = (body: string) =>
    runTour("```sh\nB=http://127.0.0.1:$PORT\n" + body + "\n```\n", env);
  try {
    assert.equal(await tour("curl -s $B/ok\n# → fine\nV=1\necho $V\n# → 1"), null);
    assert.match((await tour("curl -s $B/ok\nfalse\necho never"))!, /stopped at README line 2/);
    assert.match((await tour("echo $UNSET_VARIABLE"))!, /stopped at/);
    assert.match((await tour("X=$(curl -s $B/forbidden)\necho $X"))!, /curl got HTTP 403/);
    assert.equal(await tour("curl -s $B/forbidden\n# → HTTP 403 Invalid token"), null);
    assert.match((await tour("curl -s $B/ok\n# → HTTP 403"))!, /expected HTTP 403, got 200/);
    assert.match((await tour("curl -s $B/ok\n# → not fine"))!, /no longer contains[\s\S]*not fine/);
    assert.equal(
      await runTour("<!-- not-run: would fail -->\n```sh\nfalse\n```\n```sh\ntrue\n```\n", env),
      null,
    );
  } finally {
    await server.shutdown();
  }
});

Deno.test({
  name: "README: every sh block runs as written against a started server",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const readme = await Deno.readTextFile(new URL("README.md", ROOT));
  assert.ok(shBlocks(readme).filter((b) => !b.skip).length >= 2, "the README has a tour");
  const dir = await Deno.makeTempDir({ prefix: "readme-server-" });
  const env = {
    SERVICE_KV_PATH: `${dir}/tour.kv`,
    HYPERVISOR_MOCK_TASK_DELAY_MS: "200",
    ...hostEnv(dir),
  };
  const server = await startMain(env);
  try {
    const problem = await runTour(
      readme,
      { ...env, PORT: String(server.port) },
      () => `\n--- server log (tail) ---\n${server.log.slice(-15).join("\n")}`,
    );
    assert.equal(problem, null, problem ?? "");
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

/** `deno task demo` as a user runs it, until it prints the line its tour starts from. */
async function startDemoProcess(env: Record<string, string>) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-run=ps", "--allow-net", "--allow-env", "--allow-read"]
      .concat(["--allow-write", "--allow-sys", "scripts/demo.ts"]),
    cwd: ROOT_PATH,
    env: { PORT: "0", ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let found: RegExpMatchArray | null = null;
  while (!found) {
    const { value, done } = await reader.read();
    if (done) {
      throw new Error(`the demo ended without its tour line:\n${out}\n${await stderr}`);
    }
    out += value;
    found = out.match(/^ {2}export B=(\S+) KEY=(\S+) INV=(\S+)$/m);
  }
  const drained = (async () => {
    while (!(await reader.read()).done) { /* keep the pipe flowing */ }
  })();
  return {
    tour: { B: found[1], KEY: found[2], INV: found[3] },
    port: new URL(found[1]).port,
    output: () => out,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
      await drained;
      await stderr;
    },
  };
}

Deno.test({
  name: "README: the demo's tour runs as written against `task demo`, from the line it prints",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const readme = await Deno.readTextFile(new URL("README.md", ROOT));
  assert.ok(shBlocks(readme).some((b) => b.tour === "demo" && !b.skip), "the README has one");
  const dir = await Deno.makeTempDir({ prefix: "readme-demo-" });
  const demo = await startDemoProcess({ HYPERVISOR_MOCK_TASK_DELAY_MS: "200", ...hostEnv(dir) });
  try {
    const problem = await runTour(
      readme,
      { ...hostEnv(dir), ...demo.tour, PORT: demo.port },
      () => `\n--- demo output ---\n${demo.output()}`,
      "demo",
    );
    assert.equal(problem, null, problem ?? "");
  } finally {
    await demo.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
