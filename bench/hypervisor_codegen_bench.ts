/**
 * Code generation figures for the hypervisor surface (pve-9.2.json, 675 operations):
 * OpenAPI build + JSON text, TypeScript text, a cached /pve/codegen/openapi answer, and a
 * stored version's save (gzip + chunked KV) and load.
 *
 *   npx -y deno@2.9.6 bench --allow-all bench/hypervisor_codegen_bench.ts
 */
import { loadSchema } from "../domain/hypervisor_schema/schema.ts";
import { buildOpenApi, OpenApiCache } from "../domain/hypervisor_schema/openapi.ts";
import { generateTypeScript } from "../domain/hypervisor_schema/typescript.ts";
import { KvSchemaVersionStore } from "../storage/kv/schema_versions.ts";

const file = new URL("../../shared/hypervisor-schema/pve-9.2.json", import.meta.url).pathname;
const tree = await loadSchema(file);
const text = await Deno.readTextFile(file);
const cache = new OpenApiCache();
cache.get(tree, { flavour: "pve", version: "9.2" });
const kv = await Deno.openKv(":memory:");
const store = new KvSchemaVersionStore(kv);
await store.save(
  { version: "bench", source: file, operations: 675, paths: 444, created_at: "" },
  text,
);
let n = 0;

Deno.bench("openapi: build 9.2 document (pve flavour)", () => {
  buildOpenApi(tree, { flavour: "pve", version: "9.2" });
});
Deno.bench("openapi: build + JSON.stringify (api2 flavour)", () => {
  JSON.stringify(buildOpenApi(tree, { flavour: "api2", version: "9.2" }));
});
Deno.bench("openapi: cached answer", () => {
  cache.get(tree, { flavour: "pve", version: "9.2" });
});
Deno.bench("typescript: generate 9.2 models", () => {
  generateTypeScript(tree, { version: "9.2" });
});
Deno.bench("schema versions: save 4 MB schema (gzip, chunked KV)", async () => {
  const r = await store.save(
    { version: `v${n++}`, source: file, operations: 675, paths: 444, created_at: "" },
    text,
  );
  if (r.ok) await store.delete(r.record.version);
});
Deno.bench("schema versions: load + verify stored schema", async () => {
  await store.loadText("bench");
});

globalThis.addEventListener("unload", () => kv.close());
