import assert from "node:assert/strict";
import { KvSchemaVersionStore, SchemaIntegrityError } from "../../storage/kv/schema_versions.ts";
import { KvRateLimiter } from "../../storage/kv/rate_limits.ts";
import { keys } from "../../storage/kv/keys.ts";

import { NEEDS_SCHEMAS, SCHEMA_92 as SCHEMA } from "../_schemas.ts";

function meta(version: string) {
  return {
    version,
    source: "test",
    operations: 1,
    paths: 1,
    created_at: new Date(0).toISOString(),
  };
}

Deno.test(
  "schema versions: a 4 MB schema round-trips through compressed chunks",
  NEEDS_SCHEMAS,
  async () => {
    const kv = await Deno.openKv(":memory:");
    try {
      const store = new KvSchemaVersionStore(kv);
      const text = await Deno.readTextFile(SCHEMA);
      const saved = await store.save(meta("a"), text);
      assert.ok(saved.ok);
      assert.equal(saved.record.bytes, new TextEncoder().encode(text).length);
      assert.equal(await store.loadText("a"), text);
      assert.equal(await store.loadText("nope"), null);
      assert.deepEqual((await store.list()).map((v) => v.version), ["a"]);
      // Tampering is detected, never served.
      await kv.set(keys.hypervisorSchemaChunk(saved.record.blob, 1), new Uint8Array([1, 2, 3]));
      await assert.rejects(() => store.loadText("a"), SchemaIntegrityError);
      assert.equal(await store.delete("a"), true);
      assert.equal(await store.get("a"), null);
      let left = 0;
      for await (
        const _ of kv.list({ prefix: keys.hypervisorSchemaChunkPrefix(saved.record.blob) })
      ) left++;
      assert.equal(left, 0, "deleting a version deletes its chunks");
    } finally {
      kv.close();
    }
  },
);

Deno.test("schema versions: concurrent saves of one label store exactly one", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvSchemaVersionStore(kv);
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) => store.save(meta("same"), `[{"path":"/v${i}"}]`)),
    );
    assert.equal(results.filter((r) => r.ok).length, 1);
    assert.ok(results.filter((r) => !r.ok).every((r) => !r.ok && r.reason === "conflict"));
    // The losers' chunks are gone: only the winner's blob remains.
    const blobs = new Set<unknown>();
    for await (const e of kv.list({ prefix: ["hypervisor", "schema_chunks"] })) blobs.add(e.key[2]);
    assert.equal(blobs.size, 1);
  } finally {
    kv.close();
  }
});

Deno.test("rate limiter: concurrent hits never over-admit", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const limiter = new KvRateLimiter(kv, () => 1_000_000);
    const decisions = await Promise.all(
      Array.from({ length: 12 }, () => limiter.hit("models", "192.0.2.1", 5, 3_600_000)),
    );
    assert.equal(decisions.filter((d) => d.allowed).length, 5);
    for (const d of decisions.filter((d) => !d.allowed)) assert.equal(d.retryAfter, 3600);
  } finally {
    kv.close();
  }
});
