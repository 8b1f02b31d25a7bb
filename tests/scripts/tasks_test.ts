/**
 * The server tasks run V8 with a bounded heap growth (docs/sync.md, Memory): without
 * `--heap-growing-percent` V8 lets the heap grow to up to four times its live size between two
 * full collections under a sync's allocation rate, its young generation to 64 MiB, and the process
 * keeps that high-water mark.
 */
import assert from "node:assert/strict";
import { startTaskV8Flags } from "../_process.ts";

const FLAGS = "--v8-flags=--heap-growing-percent=30,--max-semi-space-size=8";

Deno.test("deno.json: start, dev and demo run V8 with the bounded heap growth", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  for (const name of ["start", "dev", "demo"]) {
    const server = String(config.tasks[name]).split("&&").pop()!.trim().split(/\s+/);
    assert.equal(server[0], "deno", `task ${name}`);
    assert.ok(server.includes(FLAGS), `task ${name} lacks ${FLAGS}: ${server.join(" ")}`);
  }
  // Child servers of the tests and the user-path bench run as `task start` does.
  assert.deepEqual(startTaskV8Flags(), [FLAGS]);
});
