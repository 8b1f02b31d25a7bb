import assert from "node:assert/strict";
import type { VerbAuditStart } from "../../../storage/ports.ts";
import { contract } from "./_backends.ts";

const start = (
  vmid: number,
  actor = "key:1",
  verb: VerbAuditStart["verb"] = "start",
): VerbAuditStart => ({
  verb,
  vm_type: "qemu",
  vmid,
  endpoint_id: 1,
  actor,
  api_key_id: 1,
  idempotency_key: null,
  created_at: "2026-01-01T00:00:00.000Z",
});

contract("verb audit", {
  "a record begins in progress and is finalised once written": async ({ storage }) => {
    const audit = storage.verbAudit;
    const begun = await audit.begin(start(100));
    assert.equal(begun.status, "in_progress");
    assert.equal(begun.result, null);
    const done = await audit.finish(begun.id, {
      result: "ok",
      task_upid: "UPID:x",
      detail: null,
      finished_at: "2026-01-01T00:00:01.000Z",
    });
    assert.deepEqual(done, {
      ...begun,
      status: "finalized",
      result: "ok",
      task_upid: "UPID:x",
      finished_at: "2026-01-01T00:00:01.000Z",
    });
    const listed = await audit.list({}, { limit: 10, offset: 0 });
    assert.deepEqual(listed, { count: 1, results: [done] });
    assert.equal(
      await audit.finish(begun.id + 50, {
        result: "ok",
        task_upid: null,
        detail: null,
        finished_at: null,
      }),
      null,
    );
  },

  "concurrent begins get distinct ids; lists are newest first, filtered and paged": async (
    { storage },
  ) => {
    const audit = storage.verbAudit;
    const begun = await Promise.all(
      [1, 2, 3, 4, 5, 6].map((i) => audit.begin(start(100 + (i % 2), i % 3 ? "key:1" : "key:2"))),
    );
    assert.equal(new Set(begun.map((r) => r.id)).size, 6);
    const all = await audit.list({}, { limit: 100, offset: 0 });
    assert.equal(all.count, 6);
    assert.deepEqual(all.results.map((r) => r.id), begun.map((r) => r.id).sort((a, b) => b - a));
    const byVm = await audit.list({ vmid: 101 }, { limit: 2, offset: 1 });
    assert.equal(byVm.count, 3);
    assert.equal(byVm.results.length, 2);
    assert.ok(byVm.results.every((r) => r.vmid === 101));
    const both = await audit.list({ vmid: 101, actor: "key:2" }, { limit: 10, offset: 0 });
    assert.ok(both.results.every((r) => r.vmid === 101 && r.actor === "key:2"));
    const finished = await audit.list({ status: "finalized" }, { limit: 10, offset: 0 });
    assert.deepEqual(finished, { count: 0, results: [] });
  },
});
