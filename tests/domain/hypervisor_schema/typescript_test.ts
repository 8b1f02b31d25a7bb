import assert from "node:assert/strict";
import { loadSchema, type SchemaTree } from "../../../domain/hypervisor_schema/schema.ts";
import {
  generateTypeScript,
  tsType,
  TypeScriptCache,
} from "../../../domain/hypervisor_schema/typescript.ts";

import { NEEDS_SCHEMAS, SCHEMA_DIR as SHARED } from "../../_schemas.ts";

async function denoCheck(text: string, extra = ""): Promise<{ ok: boolean; output: string }> {
  const dir = await Deno.makeTempDir({ prefix: "pve-types-" });
  try {
    await Deno.writeTextFile(`${dir}/pve.ts`, text);
    await Deno.writeTextFile(`${dir}/use.ts`, extra);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["check", "--no-config", "--quiet", `${dir}/pve.ts`, `${dir}/use.ts`],
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const decode = (b: Uint8Array) => new TextDecoder().decode(b);
    return { ok: out.success, output: decode(out.stdout) + decode(out.stderr) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

// Uses the generated types: a correct call type-checks, a wrong one must not.
const USAGE = `import type { Operations, ParamsOf, PveEnvelope, ReturnsOf } from "./pve.ts";
const p: ParamsOf<"POST /nodes/{node}/qemu"> = { node: "pve1", vmid: 100, net0: "virtio,bridge=vmbr0", start: true };
const list: ReturnsOf<"GET /nodes/{node}/qemu"> = [{ vmid: 100, status: "running" }];
const v: Operations["GET /version"]["returns"] = { version: "9.2", release: "9.2", repoid: "abcdef12" };
const e: PveEnvelope<ReturnsOf<"GET /nodes/{node}/qemu">> = { data: list, total: 1 };
export { e, list, p, v };
`;

for (const [file, operations] of [["pve-9.2.json", 675], ["pve-9.1.11.json", 649]] as const) {
  Deno.test(
    `typescript: ${file} types every operation and type-checks`,
    NEEDS_SCHEMAS,
    async () => {
      const tree: SchemaTree = await loadSchema(new URL(file, SHARED).pathname);
      const text = generateTypeScript(tree, { version: file });
      const keys = text.match(/^ {2}"(GET|POST|PUT|DELETE) \/[^"]*": \{ params: /gm) ?? [];
      assert.equal(keys.length, operations);
      assert.match(text, /export interface GetNodesNodeQemuParams \{/);
      assert.match(text, /export type GetNodesNodeQemuReturns = Array<\{/);
      const good = await denoCheck(text, USAGE);
      assert.ok(good.ok, good.output.slice(0, 4000));
      const bad = await denoCheck(
        text,
        `import type { ParamsOf } from "./pve.ts";\nexport const p: ParamsOf<"POST /nodes/{node}/qemu"> = { node: "pve1", vmid: "x" };\n`,
      );
      assert.ok(!bad.ok, "a string vmid must not type-check");
      assert.match(bad.output, /vmid/);
    },
  );
}

Deno.test("typescript: schema types map to TypeScript", () => {
  assert.equal(tsType({ type: "boolean" }, "returns"), "PveBoolean");
  assert.equal(tsType({ type: "boolean" }, "params"), "PveBooleanInput");
  assert.equal(tsType({ type: "string", enum: ["a", "b"] }, "returns"), '"a" | "b"');
  assert.equal(tsType({ type: "array", items: { type: "integer" } }, "returns"), "number[]");
  assert.equal(tsType({ type: "null" }, "returns"), "null");
  assert.equal(tsType({ type: "any" }, "returns"), "unknown");
  assert.equal(
    tsType({ type: "object", properties: { "a-b": { type: "string", optional: 1 } } }, "returns"),
    '{\n  "a-b"?: string;\n}',
  );
  assert.equal(
    tsType({ type: "object", additionalProperties: { type: "integer" } }, "returns"),
    "{\n  [key: string]: number;\n}",
  );
});

Deno.test(
  "typescript: the cache returns the same text per tree and version",
  NEEDS_SCHEMAS,
  async () => {
    const tree = await loadSchema(new URL("pve-9.1.11.json", SHARED).pathname);
    const cache = new TypeScriptCache();
    assert.equal(cache.get(tree, { version: "a" }), cache.get(tree, { version: "a" }));
    assert.match(cache.get(tree, { version: "b" }), /schema version b\./);
  },
);
