/** The mutation script: which mutants a line yields, the seeded sample, the groups, the test order. */
import assert from "node:assert/strict";
import { GROUPS, isEquivalent, mutantsOf, runInOrder, shuffled } from "../../scripts/mutate.ts";

Deno.test("mutate: operators, removable lines and no duplicates; strings and comments untouched", () => {
  const source = [
    "// if (a === b) return;",
    'const label = "a === b";',
    "if (count >= limit) return null;",
    "const page = ids.slice(offset, offset + limit);",
    "seen.add(key);",
  ].join("\n");
  const found = mutantsOf(source).map((m) => `${m.line} ${m.what}: ${m.text.trim()}`);
  assert.deepEqual(found, [
    "3 >= → >: if (count > limit) return null;",
    "3 return null → undefined: if (count >= limit) return undefined as never;",
    "3 remove line: ",
    "4 + → -: const page = ids.slice(offset, offset - limit);",
    "5 remove line: ",
  ]);
});

Deno.test("mutate: one seed, one sample; another seed, another order", () => {
  const items = Array.from({ length: 50 }, (_, i) => i);
  assert.deepEqual(shuffled(items, "2026-11-26"), shuffled(items, "2026-11-26"));
  assert.notDeepEqual(shuffled(items, "2026-11-26"), shuffled(items, "2026-11-27"));
  assert.deepEqual([...shuffled(items, "x")].sort((a, b) => a - b), items);
});

Deno.test("mutate: every group names modules and tests that exist", async () => {
  for (const [name, group] of Object.entries(GROUPS)) {
    for (const path of [...group.modules, ...group.tests]) {
      const stat = await Deno.stat(path).catch(() => null);
      assert.ok(stat, `${name}: ${path} is missing`);
    }
  }
  assert.equal(
    isEquivalent("domain/verbs/run.ts", "    return null;", {
      line: 1,
      what: "return null → undefined",
      text: "",
    }),
    true,
  );
});

Deno.test("mutate: an equivalent entry naming its mutant covers that place of the line only", () => {
  // A listed entry of the jobs service (scripts/mutate_equivalent.ts), whose line holds the same
  // swap twice.
  const module = "domain/jobs/service.ts";
  const original = "    if (!job || status === null || FINISHED.has(status)) return;";
  const swap = (from: string, to: string) => ({
    line: 1,
    what: "|| → &&",
    text: original.replace(from, to),
  });
  assert.equal(
    isEquivalent(module, original, swap("!job || status", "!job && status")),
    true,
  );
  // The same swap elsewhere on the line stops a finished job's early return: not equivalent.
  assert.equal(
    isEquivalent(module, original, swap("null || FINISHED", "null && FINISHED")),
    false,
  );
});

Deno.test("mutate: a mutant of a signature's return type line is equivalent (types vanish); a body line is not", () => {
  const flip = { line: 1, what: "false → true", text: "" };
  for (
    const line of [
      "): { ok: true; value: string } | { ok: false; message: string } {",
      "): Promise<{ ok: true; plan: DeletionPlan } | Refusal> {",
    ]
  ) assert.equal(isEquivalent("domain/sync/options.ts", `  ${line}`, flip), true, line);
  for (
    const line of [
      "  ): { ok: boolean } => ({ ok: false }) {",
      "  return { ok: false, message: text };",
      "  if (flag === false) {",
    ]
  ) assert.equal(isEquivalent("domain/sync/options.ts", line, flip), false, line);
});

Deno.test("mutate: a group's tests run in the order listed, a folder first too, and stop at the first that fails", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mutate-order-" });
  try {
    await Deno.mkdir(`${dir}/fast`);
    const marks = `${dir}/marks.txt`;
    const test = (name: string, ok: boolean) =>
      `Deno.test("${name}", () => { Deno.writeTextFileSync(${
        JSON.stringify(marks)
      }, "${name}\\n", { append: true }); if (${!ok}) throw new Error("red"); });\n`;
    await Deno.writeTextFile(`${dir}/fast/a_test.ts`, test("fast", true));
    await Deno.writeTextFile(`${dir}/slow_test.ts`, test("slow", false));
    await Deno.writeTextFile(`${dir}/last_test.ts`, test("last", true));
    const cmd = ["deno", "test", "-A", "--no-check", "--quiet"];
    const r = await runInOrder(cmd, ["fast/", "slow_test.ts", "last_test.ts"], dir, 120_000);
    assert.notEqual(r.code, 0);
    assert.equal(r.signal, null, "a failing test, not the clock");
    assert.deepEqual((await Deno.readTextFile(marks)).trim().split("\n"), ["fast", "slow"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
