/**
 * A clone with nothing beside it passes the suite: only tests/_schemas.ts looks outside the
 * checkout for the Proxmox VE schema files, and every test that reads them goes through it (and
 * is ignored, with a banner, when they are absent). `.ci/run` relies on this to run only the
 * files that import it a second time, in a copy with no `../shared`.
 */
import assert from "node:assert/strict";

const TESTS = new URL("./", import.meta.url);

async function* files(dir: URL): AsyncGenerator<URL> {
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory) yield* files(url);
    else if (entry.name.endsWith(".ts")) yield url;
  }
}

Deno.test("tests reach the Proxmox schema files only through tests/_schemas.ts", async () => {
  const offenders: string[] = [];
  for await (const file of files(TESTS)) {
    const rel = file.pathname.slice(TESTS.pathname.length);
    if (rel === "_schemas.ts" || rel === "schema_location_test.ts") continue;
    const text = await Deno.readTextFile(file);
    if (/\.\.\/shared\b|shared\/hypervisor-schema/.test(text)) offenders.push(rel);
  }
  assert.deepEqual(offenders, [], "read the schema files through tests/_schemas.ts");
});

Deno.test("the files .ci/run reruns without ../shared are the ones that use the schema files", async () => {
  const ci = await Deno.readTextFile(new URL("../.ci/run", import.meta.url));
  const pattern = ci.match(/grep -rlE '([^']+)' tests/)?.[1];
  assert.ok(pattern, ".ci/run selects the files of its run without ../shared with grep -rlE");
  const selects = new RegExp(pattern);
  for await (const file of files(TESTS)) {
    const text = await Deno.readTextFile(file);
    if (!file.pathname.endsWith("_test.ts")) continue;
    if (
      /\bSCHEMA_(92|9111|DIR|DIR_PATH)\b|NEEDS_SCHEMAS|HAS_SCHEMAS|sharedSchema|schema92/.test(text)
    ) {
      assert.ok(selects.test(text), `${file.pathname} uses the schema files but .ci/run skips it`);
    }
  }
});
