/**
 * domain/hypervisor_schema/catalogue_generated.ts is generated (scripts/gen_catalogue.ts) and
 * must stay reproducible: an operation added by hand to that file alone is lost on the next
 * regeneration. The generator run on Proxmox VE 9.2's schema, formatted as the script does,
 * gives the checked-in file byte for byte (an operation the catalogue needs goes into the
 * hand-written catalogue or the generator's ADDED list, never into the generated file).
 */
import assert from "node:assert/strict";
import { CATALOGUE_TARGET, renderCatalogue } from "../../scripts/gen_catalogue.ts";
import { NEEDS_SCHEMAS, SCHEMA_92 } from "../_schemas.ts";

async function formatted(source: string): Promise<string> {
  const root = new URL("../../", import.meta.url);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext", "ts", "-"],
    cwd: root,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(source));
  await writer.close();
  const { code, stdout, stderr } = await child.output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  return new TextDecoder().decode(stdout);
}

Deno.test(
  "gen_catalogue: regenerating from the 9.2 schema gives the checked-in catalogue_generated.ts exactly",
  NEEDS_SCHEMAS,
  async () => {
    const { module } = renderCatalogue(await Deno.readTextFile(SCHEMA_92), "pve-9.2.json");
    const checkedIn = await Deno.readTextFile(CATALOGUE_TARGET);
    const regenerated = await formatted(module);
    if (regenerated !== checkedIn) {
      const a = checkedIn.split("\n");
      const b = regenerated.split("\n");
      const at = a.findIndex((line, i) => line !== b[i]);
      assert.fail(
        `catalogue_generated.ts differs from what scripts/gen_catalogue.ts makes, from line ${
          at + 1
        }: checked in ${JSON.stringify(a[at]?.slice(0, 200))}, generated ${
          JSON.stringify(b[at]?.slice(0, 200))
        }. Rerun the script instead of editing the file.`,
      );
    }
  },
);
