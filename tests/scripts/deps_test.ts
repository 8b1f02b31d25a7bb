/**
 * A first start prints one line about fetching dependencies, not a line per npm package: with
 * `"nodeModulesDir": "auto"` `deno task` itself installs them first and prints ~900 lines that no
 * `--quiet` in a task hides, so deno.json says "manual" and every task begins with
 * scripts/deps.ts (a quiet `deno install` when node_modules does not match the pins).
 */
import assert from "node:assert/strict";
import { ensureDependencies } from "../../scripts/deps.ts";

const STEP =
  "deno run --quiet --allow-read --allow-write=node_modules --allow-run scripts/deps.ts && ";

Deno.test("deno.json: node_modules is managed by scripts/deps.ts, first in every task", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  assert.equal(config.nodeModulesDir, "manual");
  for (const [name, command] of Object.entries(config.tasks as Record<string, string>)) {
    assert.ok(command.startsWith(STEP), `task ${name} does not begin with the dependency step`);
  }
});

Deno.test("deps: a checkout whose node_modules matches the pins says nothing", async () => {
  const said: string[] = [];
  assert.equal(await ensureDependencies((line) => said.push(line)), true);
  assert.equal(await ensureDependencies((line) => said.push(line)), true);
  assert.deepEqual(said, []);
});
