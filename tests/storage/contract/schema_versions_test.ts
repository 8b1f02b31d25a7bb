import assert from "node:assert/strict";
import type { StoredSchemaVersion } from "../../../storage/ports.ts";
import { contract } from "./_backends.ts";

const meta = (version: string): Omit<
  StoredSchemaVersion,
  "sha256" | "bytes" | "stored_bytes" | "chunks" | "blob"
> => ({
  version,
  source: "https://schemas.example/pve.json",
  operations: 2,
  paths: 1,
  created_at: "2026-01-01T00:00:00.000Z",
});

/** Larger than one KV value (64 KiB) even compressed: random-ish text. */
function bigText(): string {
  const parts: string[] = [];
  for (let i = 0; i < 30_000; i++) parts.push(crypto.randomUUID());
  return JSON.stringify(parts);
}

contract("schema versions", {
  "a saved text loads back byte for byte, however large": async ({ storage }) => {
    const store = storage.schemaVersions;
    const text = bigText();
    const saved = await store.save(meta("9.3-beta"), text);
    assert.ok(saved.ok);
    assert.equal(saved.record.bytes, new TextEncoder().encode(text).byteLength);
    assert.equal(await store.loadText("9.3-beta"), text);
    assert.deepEqual(await store.get("9.3-beta"), saved.record);
    assert.equal(await store.loadText("nope"), null);
    assert.equal(await store.get("nope"), null);
  },

  "a label is taken once, even by racing saves": async ({ storage }) => {
    const store = storage.schemaVersions;
    const raced = await Promise.all([
      store.save(meta("v1"), '{"a":1}'),
      store.save(meta("v1"), '{"a":2}'),
      store.save(meta("v1"), '{"a":3}'),
    ]);
    assert.equal(raced.filter((r) => r.ok).length, 1);
    for (const r of raced) if (!r.ok) assert.equal(r.reason, "conflict");
    const winner = raced.find((r) => r.ok)!;
    assert.ok(winner.ok);
    assert.equal(await store.loadText("v1"), `{"a":${[1, 2, 3][raced.indexOf(winner)]}}`);
    assert.deepEqual((await store.list()).map((v) => v.version), ["v1"]);
  },

  "delete frees the label; a deleted version is gone": async ({ storage }) => {
    const store = storage.schemaVersions;
    await store.save(meta("v1"), "{}");
    await store.save(meta("v2"), "[]");
    assert.equal(await store.delete("v1"), true);
    assert.equal(await store.delete("v1"), false);
    assert.equal(await store.loadText("v1"), null);
    assert.deepEqual((await store.list()).map((v) => v.version), ["v2"]);
    assert.equal((await store.save(meta("v1"), "{}")).ok, true);
  },
});
