/**
 * The inventory keeps a list's sorted ids under the filters that made it (SECURITY.md "Limits"):
 * filter values a reader picks must not grow the process past the cache's bounds.
 */
import assert from "node:assert/strict";
import { KvModelStore } from "../../storage/kv/models.ts";
import { harness } from "../routes/plugin/_harness.ts";

Deno.test("list cache: a read-only token's long filter values keep at most 1,000,000 key characters per model", async () => {
  const h = await harness();
  try {
    const created = await h.call("POST", "/api/dcim/sites/", { name: "edge-01", slug: "edge-01" });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const reader = await h.token({ permissions: ["dcim.view_site"], write_enabled: false });
    const store = h.deps.storage.models;
    assert.ok(store instanceof KvModelStore);
    // 40 lists of 60,000-character values (a URL holds up to 64 KiB): 2,400,000 characters.
    for (let i = 0; i < 40; i++) {
      const value = `${i}-`.padEnd(60_000, "x");
      const res = await h.call(
        "GET",
        `/api/dcim/sites/?description__ic=${value}&ordering=name`,
        undefined,
        { auth: reader },
      );
      assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 200));
      assert.equal(res.body.count, 0);
    }
    // Kept up to the bound (the lists read last), not past it.
    const held = store.cacheSize().listKeyChars;
    assert.ok(held <= 1_000_000 && held > 900_000, `the list cache keeps ${held} key characters`);
    const res = await h.call("GET", "/api/dcim/sites/?name__ic=edge&ordering=name", undefined, {
      auth: reader,
    });
    assert.deepEqual(res.body.results.map((s: { name: string }) => s.name), ["edge-01"]);
  } finally {
    await h.close();
  }
});
