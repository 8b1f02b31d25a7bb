/**
 * The rendered answers stay byte-for-byte what they were before rendering was made cheap
 * (bench/inventory_render_bench.ts): full, brief, `fields`, `omit` and offset pages of a
 * representative VM list (nested site/cluster/role/tenant, computed primary_ip, tags, custom
 * fields with an object one), plus cluster (generic-FK scope), IP (generic-FK assignment)
 * and interface pages. The recording is fixtures/rendered_pages.json, taken before the
 * change; a difference prints the first differing offset.
 */
import assert from "node:assert/strict";
import { pagePaths, TOKEN, vmStore } from "./_vm_page.ts";

const FIXTURE = new URL("./fixtures/rendered_pages.json", import.meta.url);

/** Every pinned page of a 200-VM store (clusters of 100), as the exact response text. */
export async function renderedPages(): Promise<Record<string, string>> {
  const s = await vmStore(200, 100);
  try {
    const out: Record<string, string> = {};
    for (const path of pagePaths(s.cluster)) {
      const res = await s.app.request(`http://inv.test${path}`, {
        headers: { authorization: `Token ${TOKEN}` },
      });
      assert.equal(res.status, 200, path);
      out[path] = await res.text();
    }
    return out;
  } finally {
    s.close();
  }
}

Deno.test("rendered pages are byte-identical to the recording", async () => {
  const recorded: Record<string, string> = JSON.parse(await Deno.readTextFile(FIXTURE));
  const now = await renderedPages();
  assert.deepEqual(Object.keys(now), Object.keys(recorded));
  for (const [path, text] of Object.entries(recorded)) {
    if (now[path] === text) continue;
    let at = 0;
    while (at < text.length && now[path][at] === text[at]) at++;
    assert.fail(
      `${path} differs at ${at}: recorded …${text.slice(at - 60, at + 60)}… now …${
        now[path].slice(at - 60, at + 60)
      }…`,
    );
  }
});

Deno.test("the recording is a real page (50 rows with nested objects and custom fields)", async () => {
  const recorded: Record<string, string> = JSON.parse(await Deno.readTextFile(FIXTURE));
  const first = JSON.parse(Object.values(recorded)[0]);
  assert.equal(first.results.length, 50);
  assert.equal(first.count, 100);
  const vm = first.results[0];
  assert.equal(vm.cluster.display, "pve-cluster-1");
  assert.equal(vm.tags.length, 2);
  assert.equal(vm.custom_fields.backup_cluster.display, "pve-cluster-0");
  assert.equal(vm.primary_ip.address, vm.primary_ip4.address);
});
