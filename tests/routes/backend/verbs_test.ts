/**
 * Operational verbs against the app's own mock hypervisor (an endpoint copy pointing at the
 * app): the check order with exact bodies, each verb on both guest types with its effect seen
 * in the mock, upstream failures, and the audit trail's listing.
 */
import assert from "node:assert/strict";
import { type WholeApp, wholeApp } from "./_whole_app.ts";
import { endpoint, guest, mock } from "./_verbs.ts";
import { createBackendApp } from "../../../routes/backend/mod.ts";
import { KEY } from "./_setup.ts";

async function verb(
  h: WholeApp,
  path: string,
  json?: unknown,
  headers: Record<string, string> = {},
) {
  const res = await h.call(path, { method: "POST", json, headers });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

const dispatched = (h: WholeApp) =>
  h.outbound.filter((o) => o.method === "POST" && !o.url.endsWith("/access/ticket"));

async function actions(h: WholeApp, query = "") {
  const res = await h.call(`/hypervisor/actions${query}`);
  assert.equal(res.status, 200);
  return await res.json();
}

Deno.test("verbs: the checks run in order, with exact bodies, before any body is read", async () => {
  await using h = await wholeApp();
  const open = await endpoint(h);
  const closed = await endpoint(h, { name: "read-only", allow_writes: false });
  const garbage = { body: "{not json", headers: { "content-type": "text/plain" } };

  const missing = await h.call("/hypervisor/qemu/100/migrate", { method: "POST", ...garbage });
  assert.equal(missing.status, 400);
  assert.deepEqual(await missing.json(), {
    reason: "endpoint_id_required",
    detail:
      "Query parameter endpoint_id is required: the id of the hypervisor endpoint copy to act on.",
  });

  const unknown = await h.call("/hypervisor/qemu/100/migrate?endpoint_id=99", {
    method: "POST",
    ...garbage,
  });
  assert.equal(unknown.status, 404);
  assert.deepEqual(await unknown.json(), {
    reason: "endpoint_not_found",
    detail: "Hypervisor endpoint 99 not found.",
    endpoint_id: 99,
  });

  // A body that is not even JSON, and a migrate without target: the gate answers first.
  for (const init of [garbage, { json: {} }]) {
    const gated = await h.call(`/hypervisor/lxc/100/migrate?endpoint_id=${closed}`, {
      method: "POST",
      ...init,
    });
    assert.equal(gated.status, 403);
    assert.deepEqual(await gated.json(), {
      reason: "writes_disabled_for_endpoint",
      detail: `Writes are disabled for hypervisor endpoint ${closed} (read-only): ` +
        "set allow_writes to true on it to allow operational verbs.",
      endpoint_id: closed,
    });
  }

  const noTarget = await verb(h, `/hypervisor/qemu/100/migrate?endpoint_id=${open}`, {});
  assert.equal(noTarget.status, 400);
  assert.deepEqual(noTarget.body, {
    reason: "target_required",
    detail: 'migrate needs a target node: {"target": "<node>"}.',
  });
  const bare = await h.call(`/hypervisor/qemu/100/migrate?endpoint_id=${open}`, {
    method: "POST",
  });
  assert.equal(bare.status, 400);
  assert.equal((await bare.json()).reason, "target_required");

  const extra = await verb(h, `/hypervisor/qemu/100/snapshot?endpoint_id=${open}`, {
    snapname: "ok_name",
    surprise: 1,
  });
  assert.equal(extra.status, 422);
  assert.deepEqual(extra.body.detail[0].loc, ["body"]);
  const badName = await verb(h, `/hypervisor/qemu/100/snapshot?endpoint_id=${open}`, {
    snapname: "1-starts-with-digit",
  });
  assert.equal(badName.status, 422);
  assert.deepEqual(badName.body.detail[0].loc, ["body", "snapname"]);
  const startBody = await verb(h, `/hypervisor/qemu/100/start?endpoint_id=${open}`, {
    force: true,
  });
  assert.equal(startBody.status, 422);
  const notJson = await h.call(`/hypervisor/qemu/100/snapshot?endpoint_id=${open}`, {
    method: "POST",
    body: "{oops",
    headers: { "content-type": "application/json" },
  });
  assert.equal(notJson.status, 400);
  assert.deepEqual(await notJson.json(), { detail: "The request body is not valid JSON." });

  // None of these reached the hypervisor or wrote an audit record.
  assert.deepEqual(h.outbound, []);
  assert.equal((await actions(h)).count, 0);
});

Deno.test("verbs: the API key comes before everything, and unknown verbs are 404", async () => {
  await using h = await wholeApp();
  const id = await endpoint(h);
  const res = await h.call(`/hypervisor/qemu/100/start?endpoint_id=${id}`, {
    method: "POST",
    key: null,
  });
  assert.equal(res.status, 401);
  const reboot = await h.call(`/hypervisor/qemu/100/reboot?endpoint_id=${id}`, {
    method: "POST",
  });
  assert.equal(reboot.status, 404);
  const vmid = await verb(h, `/hypervisor/qemu/abc/start?endpoint_id=${id}`);
  assert.equal(vmid.status, 400);
  assert.equal(vmid.body.reason, "invalid_vmid");
  assert.deepEqual(h.outbound, []);
});

for (const type of ["qemu", "lxc"] as const) {
  Deno.test(`verbs (${type}): start, stop, snapshot and migrate change the mock`, async () => {
    await using h = await wholeApp();
    const id = await endpoint(h);
    const g = await guest(h, type, "stopped");
    const path = (v: string) => `/hypervisor/${type}/${g.vmid}/${v}?endpoint_id=${id}`;
    const current = () => mock(h, `/nodes/${g.node}/${type}/${g.vmid}/status/current`);

    const started = await verb(h, path("start"), undefined, { "X-Service-Actor": "alice" });
    assert.equal(started.status, 200);
    assert.match(started.body.task_upid, new RegExp(`^UPID:${g.node}:.*:(qm|vz)start:${g.vmid}:`));
    assert.deepEqual({ ...started.body, task_upid: "u", dispatched_at: "t" }, {
      verb: "start",
      vm_type: type,
      vmid: g.vmid,
      endpoint_id: id,
      actor: "alice",
      result: "ok",
      task_upid: "u",
      dispatched_at: "t",
      audit_id: 1,
    });
    assert.ok(!Number.isNaN(Date.parse(started.body.dispatched_at)));
    assert.equal((await current()).status, "running");

    const before = dispatched(h).length;
    const again = await verb(h, path("start"));
    assert.equal(again.status, 200);
    assert.equal(again.body.result, "already_running");
    assert.equal("task_upid" in again.body, false);
    assert.equal(dispatched(h).length, before, "nothing sent for an already running guest");

    const stopped = await verb(h, path("stop"));
    assert.equal(stopped.body.result, "ok");
    assert.equal((await current()).status, "stopped");
    const stopAgain = await verb(h, path("stop"));
    assert.equal(stopAgain.body.result, "already_stopped");

    const snap = await verb(h, path("snapshot"), {
      snapname: "before_upgrade",
      description: "taken by the test",
    });
    assert.equal(snap.status, 200);
    assert.equal(snap.body.result, "ok");
    const snapshots = await mock(h, `/nodes/${g.node}/${type}/${g.vmid}/snapshot`) as {
      name: string;
      description?: string;
    }[];
    const taken = snapshots.find((s) => s.name === "before_upgrade");
    assert.equal(taken?.description, "taken by the test");
    const unnamed = await verb(h, path("snapshot"));
    assert.equal(unnamed.body.result, "ok");
    const names = (await mock(h, `/nodes/${g.node}/${type}/${g.vmid}/snapshot`) as {
      name: string;
    }[]).map((s) => s.name);
    assert.ok(names.some((n) => /^snap_\d{8}_\d{6}$/.test(n)), names.join());

    const nodes = (await mock(h, "/nodes") as { node: string }[]).map((n) => n.node);
    const target = nodes.find((n) => n !== g.node)!;
    const moved = await verb(h, path("migrate"), { target });
    assert.equal(moved.status, 202);
    assert.equal(moved.body.result, "accepted");
    assert.match(moved.body.task_upid, /:(qmigrate|vzmigrate):/);
    const after = (await mock(h, "/cluster/resources?type=vm") as {
      vmid: number;
      node: string;
    }[]).find((r) => r.vmid === g.vmid);
    assert.equal(after?.node, target);

    // Every verb is in the audit trail, newest first, finalised with its outcome.
    const trail = await actions(h);
    assert.deepEqual(
      trail.results.map((r: { verb: string; result: string; status: string }) =>
        `${r.verb}:${r.result}:${r.status}`
      ),
      [
        "migrate:accepted:finalized",
        "snapshot:ok:finalized",
        "snapshot:ok:finalized",
        "stop:already_stopped:finalized",
        "stop:ok:finalized",
        "start:already_running:finalized",
        "start:ok:finalized",
      ],
    );
    assert.equal(trail.results.at(-1).actor, "alice");
    assert.equal(trail.results.at(-2).actor, "service");
  });
}

Deno.test("verbs: a hypervisor refusal answers with its status and message, never a bare 500", async () => {
  await using h = await wholeApp();
  const id = await endpoint(h);
  const g = await guest(h, "qemu", "stopped");
  const nowhere = await verb(h, `/hypervisor/qemu/${g.vmid}/migrate?endpoint_id=${id}`, {
    target: "no-such-node",
  });
  assert.equal(nowhere.status, 400);
  assert.equal(nowhere.body.result, "failed");
  assert.equal(nowhere.body.reason, "hypervisor_error");
  assert.equal(nowhere.body.hypervisor_status, 400);
  assert.match(nowhere.body.detail, /target: no such cluster node 'no-such-node'/);

  const missing = await verb(h, `/hypervisor/qemu/4242/start?endpoint_id=${id}`);
  assert.equal(missing.status, 404);
  assert.equal(missing.body.reason, "guest_not_found");
  const wrongType = await verb(h, `/hypervisor/lxc/${g.vmid}/start?endpoint_id=${id}`);
  assert.equal(wrongType.status, 404);
  assert.match(wrongType.body.detail, /is a QEMU VM, not an LXC container/);

  const trail = await actions(h);
  assert.deepEqual(trail.results.map((r: { result: string }) => r.result), [
    "failed",
    "failed",
    "failed",
  ]);
  assert.match(trail.results[2].detail, /no such cluster node/);
});

Deno.test("verbs: rejected credentials and an unreachable hypervisor are 502 with the cause", async () => {
  await using h = await wholeApp({ socket: true });
  const badPassword = await endpoint(h, { name: "bad", password: "not-the-password-123" });
  const g = await guest(h, "qemu", "stopped");
  const rejected = await verb(h, `/hypervisor/qemu/${g.vmid}/start?endpoint_id=${badPassword}`);
  assert.equal(rejected.status, 502);
  assert.equal(rejected.body.reason, "hypervisor_error");
  assert.equal(rejected.body.hypervisor_status, 401);
  assert.ok(!JSON.stringify(rejected.body).includes("not-the-password-123"));

  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = closed.addr.port;
  closed.close();
  const gone = await endpoint(h, { name: "gone", port });
  const down = await verb(h, `/hypervisor/qemu/${g.vmid}/start?endpoint_id=${gone}`);
  assert.equal(down.status, 502);
  assert.equal(down.body.reason, "hypervisor_unreachable");
  assert.equal(down.body.hypervisor_status, null);
  assert.match(down.body.detail, new RegExp(`127\\.0\\.0\\.1:${port}`));
});

Deno.test("actions: filters by endpoint, vmid, actor and verb; paged newest first", async () => {
  await using h = await wholeApp();
  const a = await endpoint(h);
  const b = await endpoint(h, { name: "second" });
  const q = await guest(h, "qemu", "stopped");
  const c = await guest(h, "lxc", "stopped");
  const run = (ep: number, type: string, vmid: number, v: string, actor: string) =>
    verb(h, `/hypervisor/${type}/${vmid}/${v}?endpoint_id=${ep}`, undefined, {
      "X-Service-Actor": actor,
    });
  await run(a, "qemu", q.vmid, "start", "alice");
  await run(a, "qemu", q.vmid, "stop", "bob");
  await run(b, "lxc", c.vmid, "start", "alice");
  await run(b, "lxc", c.vmid, "stop", "carol");
  await run(a, "lxc", c.vmid, "start", "bob");

  const ids = async (query: string) =>
    (await actions(h, query)).results.map((r: { id: number }) => r.id);
  assert.deepEqual(await ids(""), [5, 4, 3, 2, 1]);
  assert.deepEqual(await ids(`?endpoint_id=${a}`), [5, 2, 1]);
  assert.deepEqual(await ids(`?vmid=${c.vmid}`), [5, 4, 3]);
  assert.deepEqual(await ids("?actor=alice"), [3, 1]);
  assert.deepEqual(await ids("?verb=stop"), [4, 2]);
  assert.deepEqual(await ids(`?endpoint_id=${b}&actor=alice&verb=start`), [3]);
  const page = await actions(h, "?limit=2&offset=1");
  assert.deepEqual([page.count, page.limit, page.offset], [5, 2, 1]);
  assert.deepEqual(page.results.map((r: { id: number }) => r.id), [4, 3]);
  const record = (await actions(h, "?limit=1")).results[0];
  assert.deepEqual(Object.keys(record).sort(), [
    "actor",
    "api_key_id",
    "created_at",
    "detail",
    "endpoint_id",
    "finished_at",
    "id",
    "idempotency_key",
    "result",
    "status",
    "task_upid",
    "verb",
    "vm_type",
    "vmid",
  ]);
  for (const bad of ["?limit=0", "?limit=1001", "?verb=reboot", "?vmid=x", "?offset=-1"]) {
    const res = await h.call(`/hypervisor/actions${bad}`);
    assert.equal(res.status, 422, bad);
    await res.body?.cancel();
  }
});

Deno.test("verbs: every verb path is in the backend's OpenAPI document", async () => {
  await using h = await wholeApp();
  const doc = await (await h.call("/openapi.json", { key: null })).json();
  for (const type of ["qemu", "lxc"]) {
    for (const v of ["start", "stop", "snapshot", "migrate"]) {
      assert.ok(doc.paths[`/hypervisor/${type}/{vmid}/${v}`]?.post, `${type} ${v}`);
    }
  }
  assert.ok(doc.paths["/hypervisor/qemu/{vmid}/migrate"].post.responses["202"]);
  assert.ok(doc.paths["/hypervisor/actions"].get);
});

Deno.test("verbs: stored secrets that no longer open are a 409 naming the endpoint, nothing sent", async () => {
  await using h = await wholeApp({ env: { SERVICE_ENCRYPTION_KEY: "the key it was sealed with" } });
  const id = await endpoint(h);
  // The same store, restarted without the key the secrets were sealed under.
  const deps = { ...h.deps, config: { ...h.deps.config, encryptionKey: undefined } };
  const backend = await createBackendApp(deps);
  const res = await backend.request(`/hypervisor/qemu/100/start?endpoint_id=${id}`, {
    method: "POST",
    headers: { "X-Service-API-Key": KEY },
  }, { remoteAddr: { hostname: "192.0.2.10" } });
  const body = await res.json();
  assert.equal(res.status, 409);
  assert.equal(body.reason, "credential_undecryptable");
  assert.equal(body.result, "failed");
  assert.match(body.detail, /cannot be decrypted/);
  assert.deepEqual(h.outbound, []);
  const trail = await (await h.call("/hypervisor/actions")).json();
  assert.equal(trail.results[0].result, "failed");
  assert.equal(trail.results[0].status, "finalized");
});

Deno.test("verbs: a disabled endpoint copy is refused (409 endpoint_disabled) after the 403, nothing sent", async () => {
  await using h = await wholeApp();
  const off = await endpoint(h, { name: "parked", enabled: false });
  const offReadOnly = await endpoint(h, { name: "parked-ro", enabled: false, allow_writes: false });
  const garbage = { body: "{not json", headers: { "content-type": "text/plain" } };

  // allow_writes false still answers first (the documented order 400 → 404 → 403 stays exact).
  const closed = await h.call(`/hypervisor/qemu/100/start?endpoint_id=${offReadOnly}`, {
    method: "POST",
    ...garbage,
  });
  assert.equal(closed.status, 403);
  assert.equal((await closed.json()).reason, "writes_disabled_for_endpoint");

  for (const init of [garbage, { json: { target: "pve2" } }]) {
    const refused = await h.call(`/hypervisor/qemu/100/migrate?endpoint_id=${off}`, {
      method: "POST",
      ...init,
    });
    assert.equal(refused.status, 409);
    assert.deepEqual(await refused.json(), {
      reason: "endpoint_disabled",
      detail: `Hypervisor endpoint ${off} (parked) is disabled: ` +
        "set enabled to true on it to act on its guests.",
      endpoint_id: off,
    });
  }
  assert.deepEqual(dispatched(h), [], "nothing reached the hypervisor");
  assert.equal((await actions(h)).count, 0, "no audit record either");
});

/** Someone else acting on the cluster directly (as another Proxmox client would). */
async function elsewhere(h: WholeApp, method: string, path: string) {
  const login = await h.call("/api2/json/access/ticket", {
    method: "POST",
    key: null,
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "username=root@pam&password=bridgebox",
  });
  const { ticket, CSRFPreventionToken } = (await login.json()).data;
  const res = await h.call(`/api2/json${path}`, {
    method,
    key: null,
    headers: { cookie: `PVEAuthCookie=${ticket}`, csrfpreventiontoken: CSRFPreventionToken },
  });
  assert.equal(res.status, 200, `${method} ${path}: ${await res.clone().text()}`);
}

Deno.test("verbs: a start that loses a race to another client is already_running, audited; a refusal for another cause is failed", async () => {
  // Between the service's look at the guest and its call, someone else acts on the guest.
  let meanwhile: (() => Promise<void>) | null = null;
  await using h = await wholeApp({
    env: { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" },
    async before(request) {
      if (request.method !== "POST" || !/\/status\//.test(request.url) || !meanwhile) return;
      const act = meanwhile;
      meanwhile = null;
      await act();
    },
  });
  const id = await endpoint(h);
  const stopped = await guest(h, "qemu", "stopped");
  meanwhile = () =>
    elsewhere(h, "POST", `/nodes/${stopped.node}/qemu/${stopped.vmid}/status/start`);
  const started = await verb(h, `/hypervisor/qemu/${stopped.vmid}/start?endpoint_id=${id}`);
  assert.deepEqual([started.status, started.body.result], [200, "already_running"]);

  const running = await guest(h, "lxc", "running");
  meanwhile = () => elsewhere(h, "POST", `/nodes/${running.node}/lxc/${running.vmid}/status/stop`);
  const halted = await verb(h, `/hypervisor/lxc/${running.vmid}/stop?endpoint_id=${id}`);
  // Stopping a stopped guest is no error for Proxmox (only shutdown says "not running").
  assert.deepEqual([halted.status, halted.body.result], [200, "ok"]);

  // Stopped and destroyed meanwhile: that refusal is no "already stopped".
  const doomed = (await mock(h, "/cluster/resources?type=vm") as {
    vmid: number;
    type: string;
    status: string;
    node: string;
  }[]).find((g) => g.status === "running" && ![stopped.vmid, running.vmid].includes(g.vmid))!;
  const at = `/nodes/${doomed.node}/${doomed.type}/${doomed.vmid}`;
  meanwhile = async () => {
    await elsewhere(h, "POST", `${at}/status/stop`);
    await elsewhere(h, "DELETE", at);
  };
  const gone = await verb(h, `/hypervisor/${doomed.type}/${doomed.vmid}/stop?endpoint_id=${id}`);
  assert.equal(gone.body.result, "failed", JSON.stringify(gone.body));
  assert.equal(gone.body.reason, "hypervisor_error");

  // Each outcome is in the audit trail, finalised, with the hypervisor's words.
  const trail = (await actions(h)).results as {
    vmid: number;
    status: string;
    result: string;
    detail: string;
  }[];
  const of = (vmid: number) => trail.find((r) => r.vmid === vmid)!;
  assert.deepEqual([of(stopped.vmid).status, of(stopped.vmid).result], [
    "finalized",
    "already_running",
  ]);
  assert.match(of(stopped.vmid).detail, /already running/);
  assert.deepEqual([of(running.vmid).status, of(running.vmid).result], ["finalized", "ok"]);
  assert.deepEqual([of(doomed.vmid).status, of(doomed.vmid).result], ["finalized", "failed"]);
});
