/**
 * Verb audit retention: each endpoint keeps its newest records (docs/verbs.md), pruned in
 * batches on write, with every index copy of a pruned record gone too. A small bound here; the
 * app's is AUDIT_RETAINED_PER_ENDPOINT.
 */
import assert from "node:assert/strict";
import { AUDIT_RETAINED_PER_ENDPOINT, KvVerbAuditStore } from "../../storage/kv/verb_audit.ts";

const start = (endpoint_id: number, vmid: number) => ({
  verb: "start" as const,
  vm_type: "qemu" as const,
  vmid,
  endpoint_id,
  actor: "alice",
  api_key_id: 1,
  idempotency_key: null,
  created_at: new Date(0).toISOString(),
});

Deno.test("verb audit: each endpoint keeps its newest records, pruned in batches, indexes too", async () => {
  assert.equal(AUDIT_RETAINED_PER_ENDPOINT, 10_000);
  await using kv = await Deno.openKv(":memory:");
  const store = new KvVerbAuditStore(kv, { retainedPerEndpoint: 5, pruneBatch: 3 });
  for (let i = 0; i < 3; i++) await store.begin(start(2, 900 + i));
  const ids: number[] = [];
  for (let i = 0; i < 40; i++) {
    ids.push((await store.begin(start(1, 100 + i))).id);
    const held = (await store.list({ endpoint_id: 1 }, { limit: 1000, offset: 0 })).count;
    assert.ok(held <= 5 + 3, `endpoint 1 holds ${held} records after ${i + 1} writes`);
  }
  const one = await store.list({ endpoint_id: 1 }, { limit: 1000, offset: 0 });
  const kept = one.results.map((r) => r.id);
  assert.deepEqual(kept, ids.slice(-kept.length).reverse(), "the newest are kept, in order");
  assert.ok(kept.length >= 5, `${kept.length} kept`);

  // The other endpoint's records are untouched, and no index still names a pruned record.
  assert.equal((await store.list({ endpoint_id: 2 }, { limit: 1000, offset: 0 })).count, 3);
  const all = await store.list({}, { limit: 1000, offset: 0 });
  assert.equal(all.count, kept.length + 3);
  assert.equal((await store.list({ actor: "alice" }, { limit: 1000, offset: 0 })).count, all.count);
  assert.equal((await store.list({ verb: "start" }, { limit: 1000, offset: 0 })).count, all.count);
  assert.equal((await store.list({ vmid: 100 }, { limit: 1000, offset: 0 })).count, 0);
  // A pruned record can no longer be finalised; a kept one can.
  assert.equal(
    await store.finish(ids[0], { result: "ok", task_upid: null, detail: null, finished_at: null }),
    null,
  );
  assert.ok(
    await store.finish(kept[0], { result: "ok", task_upid: null, detail: null, finished_at: null }),
  );
});
