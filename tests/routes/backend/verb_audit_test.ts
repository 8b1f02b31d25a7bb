/**
 * The write-ahead audit of verbs: the record is `in_progress` while the hypervisor works and
 * finalised after; no record, no call; a process that stops in between leaves a record that
 * reads as unfinished.
 */
import assert from "node:assert/strict";
import { createApp } from "../../../app.ts";
import { createBackendApp, createBackendServices } from "../../../routes/backend/mod.ts";
import { KvVerbAuditStore } from "../../../storage/kv/verb_audit.ts";
import type { VerbAuditStore } from "../../../storage/ports.ts";
import { testDeps } from "../../_helpers.ts";
import { KEY } from "./_setup.ts";
import { wholeApp } from "./_whole_app.ts";
import { endpoint, guest, HYPERVISOR, mock } from "./_verbs.ts";

/** A gate the hypervisor call waits at; `reached` resolves when a call is held there. */
function holdAt(pattern: RegExp) {
  const reached = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  return {
    reached: reached.promise,
    release: () => release.resolve(),
    async before(request: Request) {
      if (request.method === "POST" && pattern.test(new URL(request.url).pathname)) {
        reached.resolve();
        await release.promise;
      }
    },
  };
}

Deno.test("audit: in_progress while the hypervisor works, finalised with the outcome after", async () => {
  const hold = holdAt(/\/status\/start$/);
  await using h = await wholeApp({ before: (r) => hold.before(r) });
  const id = await endpoint(h);
  const g = await guest(h, "qemu", "stopped");
  const pending = h.call(`/hypervisor/qemu/${g.vmid}/start?endpoint_id=${id}`, {
    method: "POST",
    headers: { "X-Service-Actor": "ops-bot", "Idempotency-Key": "audit-1" },
  });
  await hold.reached;

  const during = await (await h.call("/hypervisor/actions")).json();
  assert.equal(during.count, 1);
  const { created_at, ...rest } = during.results[0];
  assert.ok(!Number.isNaN(Date.parse(created_at)));
  assert.deepEqual(rest, {
    id: 1,
    verb: "start",
    vm_type: "qemu",
    vmid: g.vmid,
    endpoint_id: id,
    actor: "ops-bot",
    api_key_id: 1, // the key that sent it, beside the free-text actor
    result: null,
    status: "in_progress",
    task_upid: null,
    idempotency_key: "audit-1",
    finished_at: null,
    detail: null,
  });

  const unfinished = async () =>
    (await (await h.call("/hypervisor/actions?status=in_progress")).json()).count;
  assert.equal(await unfinished(), 1);

  hold.release();
  const answer = await (await pending).json();
  assert.equal(await unfinished(), 0);
  const after = (await (await h.call("/hypervisor/actions")).json()).results[0];
  assert.equal(after.status, "finalized");
  assert.equal(after.result, "ok");
  assert.equal(after.task_upid, answer.task_upid);
  assert.equal(after.created_at, created_at);
  assert.ok(Date.parse(after.finished_at) >= Date.parse(created_at));
  assert.equal(answer.audit_id, 1);
});

Deno.test("audit: a record that cannot be written refuses the verb (409) and sends nothing; once storage is back the same key runs", async () => {
  const deps = await testDeps({
    SERVICE_ALLOW_LOOPBACK_TARGETS: "true",
    HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
  });
  const sent: string[] = [];
  let hypervisor: Awaited<ReturnType<typeof createApp>> | null = null;
  deps.fetch = (input, init) => {
    const request = new Request(input, init);
    sent.push(`${request.method} ${new URL(request.url).pathname}`);
    return Promise.resolve(hypervisor!.fetch(request, { remoteAddr: { hostname: "127.0.0.1" } }));
  };
  hypervisor = await createApp(deps);
  const real = new KvVerbAuditStore(deps.kv);
  // The audit store's storage is down: every write is refused (until it comes back).
  let down = true;
  const broken: VerbAuditStore = {
    begin: (record) => down ? Promise.reject(new Error("storage unavailable")) : real.begin(record),
    finish: (id, outcome) => real.finish(id, outcome),
    list: (filter, page) => real.list(filter, page),
  };
  const backend = await createBackendApp(deps, {
    ...createBackendServices(deps),
    verbAudit: broken,
  });
  const call = (path: string, init: RequestInit = {}) =>
    backend.request(path, {
      ...init,
      headers: { "X-Service-API-Key": KEY, "content-type": "application/json", ...init.headers },
    }, { remoteAddr: { hostname: "192.0.2.10" } });
  try {
    await backend.request("/auth/register-key", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ api_key: KEY }),
    }, { remoteAddr: { hostname: "192.0.2.10" } });
    const created = await call("/hypervisor/endpoints", {
      method: "POST",
      body: JSON.stringify({ ...HYPERVISOR, allow_writes: true }),
    });
    const { id } = await created.json();
    for (const v of ["start", "stop", "snapshot"]) {
      const res = await call(`/hypervisor/qemu/100/${v}?endpoint_id=${id}`, {
        method: "POST",
        headers: { "Idempotency-Key": `refused-${v}` },
      });
      assert.equal(res.status, 409);
      assert.deepEqual(await res.json(), {
        reason: "audit_unavailable",
        detail: "The audit record could not be written, so nothing was sent to the hypervisor.",
      });
    }
    assert.deepEqual(sent, [], "the hypervisor was not called at all");
    const listed = await (await call("/hypervisor/actions")).json();
    assert.equal(listed.count, 0);
    assert.ok(deps.logger.lines.some((l) => /audit record could not be written/.test(l.message)));

    // Storage is back: a retry with the same key runs (a refusal did nothing, so it is not
    // an answer to replay), and the hypervisor gets the call now.
    down = false;
    const retried = await call(`/hypervisor/qemu/100/start?endpoint_id=${id}`, {
      method: "POST",
      headers: { "Idempotency-Key": "refused-start" },
    });
    const body = await retried.json();
    assert.equal(retried.headers.get("Idempotent-Replayed"), null);
    assert.notEqual(body.reason, "audit_unavailable", JSON.stringify(body));
    assert.equal(body.verb, "start", JSON.stringify(body));
    assert.ok(sent.some((s) => /\/qemu\/100\/status\//.test(s)), JSON.stringify(sent));
    const trail = await (await call("/hypervisor/actions")).json();
    assert.equal(trail.count, 1);
    assert.equal(trail.results[0].idempotency_key, "refused-start");
  } finally {
    deps.kv.close();
  }
});

Deno.test("audit: a process stopped mid-verb leaves an in_progress record the next process lists", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/bridgebox.kv`;
  const hold = holdAt(/\/status\/stop$/);
  // First process: the hypervisor call never returns, and the process goes away.
  {
    await using h = await wholeApp({
      before: (r) => hold.before(r),
      deps: { kv: await Deno.openKv(path) },
    });
    const id = await endpoint(h);
    const g = await guest(h, "lxc", "running");
    void h.call(`/hypervisor/lxc/${g.vmid}/stop?endpoint_id=${id}`, { method: "POST" })
      .catch(() => {});
    await hold.reached;
  }
  // Second process on the same store: the verb reads as unfinished.
  const kv = await Deno.openKv(path);
  try {
    const deps = await testDeps({}, { kv });
    const backend = await createBackendApp(deps);
    const res = await backend.request("/hypervisor/actions", {
      headers: { "X-Service-API-Key": KEY },
    }, { remoteAddr: { hostname: "192.0.2.10" } });
    const listed = await res.json();
    assert.equal(listed.count, 1);
    assert.equal(listed.results[0].status, "in_progress");
    assert.equal(listed.results[0].result, null);
    assert.equal(listed.results[0].finished_at, null);
    assert.equal(listed.results[0].verb, "stop");
  } finally {
    hold.release();
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("audit: verbs are recorded even when the guest state makes the call unnecessary", async () => {
  await using h = await wholeApp();
  const id = await endpoint(h);
  const g = await guest(h, "qemu", "running");
  const res = await h.call(`/hypervisor/qemu/${g.vmid}/start?endpoint_id=${id}`, {
    method: "POST",
  });
  assert.equal((await res.json()).result, "already_running");
  const record = (await (await h.call("/hypervisor/actions")).json()).results[0];
  assert.equal(record.result, "already_running");
  assert.equal(record.status, "finalized");
  assert.equal(record.detail, "nothing sent: the guest is running");
  assert.equal((await mock(h, `/nodes/${g.node}/qemu/${g.vmid}/status/current`)).status, "running");
});
