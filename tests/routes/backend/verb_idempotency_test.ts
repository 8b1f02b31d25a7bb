/**
 * `Idempotency-Key` on verbs: a repeat replays the first answer without a second call, also
 * when both arrive at once; the same key for another request is refused; the window is 60 s.
 */
import assert from "node:assert/strict";
import { createBackendApp, createBackendServices } from "../../../routes/backend/mod.ts";
import { KvIdempotencyStore } from "../../../storage/kv/idempotency.ts";
import { KvVerbAuditStore } from "../../../storage/kv/verb_audit.ts";
import type { IdempotencyStore, VerbAuditStore } from "../../../storage/ports.ts";
import { KEY } from "./_setup.ts";
import { endpoint, guest } from "./_verbs.ts";
import { type WholeApp, wholeApp } from "./_whole_app.ts";

const starts = (h: WholeApp) => h.outbound.filter((o) => /\/status\/start$/.test(o.url)).length;

async function post(h: WholeApp, path: string, key: string, json?: unknown) {
  const res = await h.call(path, { method: "POST", json, headers: { "Idempotency-Key": key } });
  return {
    status: res.status,
    body: await res.json(),
    replayed: res.headers.get("Idempotent-Replayed"),
  };
}

Deno.test("idempotency: a repeat replays the first answer without calling the hypervisor again", async () => {
  await using h = await wholeApp();
  const id = await endpoint(h);
  const g = await guest(h, "qemu", "stopped");
  const path = `/hypervisor/qemu/${g.vmid}/start?endpoint_id=${id}`;
  const first = await post(h, path, "key-1");
  assert.equal(first.status, 200);
  assert.equal(first.body.result, "ok");
  assert.equal(first.replayed, null);
  const second = await post(h, path, "key-1");
  assert.equal(second.status, 200);
  assert.deepEqual(second.body, first.body, "the first answer, not already_running");
  assert.equal(second.replayed, "true");
  assert.equal(starts(h), 1);
  const trail = await (await h.call("/hypervisor/actions")).json();
  assert.equal(trail.count, 1);
  assert.equal(trail.results[0].idempotency_key, "key-1");

  // A failure is replayed as well: the first result, whatever it was.
  const bad = `/hypervisor/qemu/${g.vmid}/migrate?endpoint_id=${id}`;
  const failed = await post(h, bad, "key-2", { target: "nowhere" });
  const again = await post(h, bad, "key-2", { target: "nowhere" });
  assert.equal(failed.status, 400);
  assert.deepEqual([again.status, again.body], [failed.status, failed.body]);
});

Deno.test("idempotency: two concurrent requests with one key make one call and get one answer", async () => {
  const reached = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  await using h = await wholeApp({
    async before(request) {
      if (/\/status\/start$/.test(request.url)) {
        reached.resolve();
        await release.promise;
      }
    },
  });
  // The real store, instrumented to say when a request starts waiting for another's answer.
  const waiting = Promise.withResolvers<void>();
  const store = new KvIdempotencyStore(h.deps.kv);
  const instrumented: IdempotencyStore = {
    claim: (...args) => store.claim(...args),
    complete: (...args) => store.complete(...args),
    release: (...args) => store.release(...args),
    settled(key, signal) {
      waiting.resolve();
      return store.settled(key, signal);
    },
  };
  const backend = await createBackendApp(h.deps, {
    ...createBackendServices(h.deps),
    idempotency: instrumented,
  });
  const id = await endpoint(h);
  const g = await guest(h, "lxc", "stopped");
  const send = async () => {
    const res = await backend.request(`/hypervisor/lxc/${g.vmid}/start?endpoint_id=${id}`, {
      method: "POST",
      headers: { "X-Service-API-Key": KEY, "Idempotency-Key": "same" },
    }, { remoteAddr: { hostname: "192.0.2.10" } });
    return {
      status: res.status,
      body: await res.json(),
      replayed: res.headers.get("Idempotent-Replayed"),
    };
  };
  const first = send();
  await reached.promise; // the first holds the key and is at the hypervisor
  const second = send();
  await waiting.promise; // the second found the key taken and waits for the first's answer
  release.resolve();
  const [a, b] = await Promise.all([first, second]);
  assert.equal(a.status, 200);
  assert.equal(a.replayed, null);
  assert.deepEqual(b.body, a.body);
  assert.equal(b.replayed, "true");
  assert.equal(starts(h), 1);
  assert.equal((await (await h.call("/hypervisor/actions")).json()).count, 1);
});

Deno.test("idempotency: requests racing for one key, unsynchronised, still dispatch once", async () => {
  await using h = await wholeApp();
  const id = await endpoint(h);
  const g = await guest(h, "qemu", "stopped");
  const path = `/hypervisor/qemu/${g.vmid}/start?endpoint_id=${id}`;
  const answers = await Promise.all(Array.from({ length: 8 }, () => post(h, path, "race")));
  assert.equal(starts(h), 1);
  assert.ok(answers.every((a) => a.status === 200 && a.body.result === "ok"));
  assert.equal(new Set(answers.map((a) => JSON.stringify(a.body))).size, 1);
  assert.equal(answers.filter((a) => a.replayed === null).length, 1);
});

Deno.test("idempotency: the same key for another verb, guest, endpoint or body is 422", async () => {
  await using h = await wholeApp();
  const id = await endpoint(h);
  const other = await endpoint(h, { name: "other" });
  const g = await guest(h, "qemu", "stopped");
  const first = await post(h, `/hypervisor/qemu/${g.vmid}/snapshot?endpoint_id=${id}`, "k", {
    snapname: "one",
  });
  assert.equal(first.status, 200);
  const variants: [string, unknown][] = [
    [`/hypervisor/qemu/${g.vmid}/start?endpoint_id=${id}`, undefined],
    [`/hypervisor/qemu/${g.vmid + 1}/snapshot?endpoint_id=${id}`, { snapname: "one" }],
    [`/hypervisor/lxc/${g.vmid}/snapshot?endpoint_id=${id}`, { snapname: "one" }],
    [`/hypervisor/qemu/${g.vmid}/snapshot?endpoint_id=${other}`, { snapname: "one" }],
    [`/hypervisor/qemu/${g.vmid}/snapshot?endpoint_id=${id}`, { snapname: "two" }],
  ];
  for (const [path, json] of variants) {
    const res = await post(h, path, "k", json);
    assert.equal(res.status, 422, path);
    assert.deepEqual(res.body, {
      reason: "idempotency_key_reused",
      detail: "This Idempotency-Key was used for a different request (verb, guest, endpoint " +
        "or body) within the last 60 s; use a new key.",
      idempotency_key: "k",
    });
  }
  // Key order in the body does not make a request different.
  const same = await post(h, `/hypervisor/qemu/${g.vmid}/snapshot?endpoint_id=${id}`, "k2", {
    snapname: "three",
    description: "d",
  });
  const reordered = await post(h, `/hypervisor/qemu/${g.vmid}/snapshot?endpoint_id=${id}`, "k2", {
    description: "d",
    snapname: "three",
  });
  assert.equal(reordered.replayed, "true");
  assert.deepEqual(reordered.body, same.body);
  assert.equal((await (await h.call("/hypervisor/actions")).json()).count, 2);
});

Deno.test("idempotency: after 60 s the key runs afresh", async () => {
  const clock = { now: Date.parse("2026-01-01T00:00:00Z") };
  await using h = await wholeApp({ deps: { now: () => clock.now } });
  const id = await endpoint(h);
  const g = await guest(h, "qemu", "stopped");
  const path = `/hypervisor/qemu/${g.vmid}/stop?endpoint_id=${id}`;
  const first = await post(h, path, "window");
  assert.equal(first.body.result, "already_stopped");
  clock.now += 59_000;
  assert.equal((await post(h, path, "window")).replayed, "true");
  clock.now += 2_000;
  const fresh = await post(h, path, "window");
  assert.equal(fresh.replayed, null);
  assert.notEqual(fresh.body.audit_id, first.body.audit_id);
});

Deno.test("idempotency: a malformed key is refused before anything runs", async () => {
  await using h = await wholeApp();
  const id = await endpoint(h);
  for (const key of ["", " ", "x".repeat(201), "tab\there"]) {
    const res = await h.call(`/hypervisor/qemu/100/start?endpoint_id=${id}`, {
      method: "POST",
      headers: { "Idempotency-Key": key },
    });
    assert.equal(res.status, 400, JSON.stringify(key));
    assert.equal((await res.json()).reason, "invalid_idempotency_key");
  }
  assert.deepEqual(h.outbound, []);
});

Deno.test("idempotency: a key is scoped to the API key that made it; the audit trail names each key", async () => {
  await using h = await wholeApp();
  const id = await endpoint(h);
  const g = await guest(h, "qemu", "stopped");
  const minted = await (await h.call("/auth/keys", { method: "POST", json: { label: "other" } }))
    .json();
  const mine = (await (await h.call("/auth/keys")).json()).keys
    .find((k: { label: string }) => k.label === "first");
  const path = `/hypervisor/qemu/${g.vmid}/start?endpoint_id=${id}`;
  const first = await h.call(path, {
    method: "POST",
    headers: { "Idempotency-Key": "shared-key", "X-Service-Actor": "alice" },
  });
  assert.equal(first.status, 200);
  const firstBody = await first.json();
  // Another API key, claiming to be alice too, with the same Idempotency-Key: its own request.
  const second = await h.call(path, {
    method: "POST",
    key: minted.raw_key,
    headers: { "Idempotency-Key": "shared-key", "X-Service-Actor": "alice" },
  });
  const secondBody = await second.json();
  assert.equal(second.headers.get("Idempotent-Replayed"), null, "not the first caller's answer");
  assert.notEqual(secondBody.audit_id, firstBody.audit_id);
  assert.equal(secondBody.result, "already_running");
  const trail = await (await h.call("/hypervisor/actions")).json();
  assert.equal(trail.count, 2, "both callers are on the record");
  const byAudit = new Map(trail.results.map((r: { id: number }) => [r.id, r]));
  // deno-lint-ignore no-explicit-any
  const a = byAudit.get(firstBody.audit_id) as any, b = byAudit.get(secondBody.audit_id) as any;
  assert.deepEqual([a.actor, a.api_key_id], ["alice", mine.id]);
  assert.deepEqual([b.actor, b.api_key_id], ["alice", minted.id]);
  assert.notEqual(mine.id, minted.id);
  // The first key's own repeat is still a replay.
  const again = await post(h, path, "shared-key");
  assert.equal(again.replayed, "true");
  assert.equal(again.body.audit_id, firstBody.audit_id);
});

Deno.test("idempotency: a request waiting on a key whose first request did nothing runs afresh", async () => {
  await using h = await wholeApp();
  // The first request's audit write hangs, then fails (storage down for a moment): it did
  // nothing, so it gives the key up. The second, waiting on that key, must then run itself.
  const real = new KvVerbAuditStore(h.deps.kv);
  const beginReached = Promise.withResolvers<void>();
  const beginFails = Promise.withResolvers<void>();
  let broken = true;
  const audit: VerbAuditStore = {
    async begin(record) {
      if (!broken) return real.begin(record);
      broken = false;
      beginReached.resolve();
      await beginFails.promise;
      throw new Error("storage unavailable");
    },
    finish: (id, outcome) => real.finish(id, outcome),
    list: (filter, page) => real.list(filter, page),
  };
  const waiting = Promise.withResolvers<void>();
  const store = new KvIdempotencyStore(h.deps.kv);
  const instrumented: IdempotencyStore = {
    claim: (...args) => store.claim(...args),
    complete: (...args) => store.complete(...args),
    release: (...args) => store.release(...args),
    settled(key, signal) {
      waiting.resolve();
      return store.settled(key, signal);
    },
  };
  const backend = await createBackendApp(h.deps, {
    ...createBackendServices(h.deps),
    idempotency: instrumented,
    verbAudit: audit,
  });
  const id = await endpoint(h);
  const g = await guest(h, "qemu", "stopped");
  const send = async () => {
    const res = await backend.request(`/hypervisor/qemu/${g.vmid}/start?endpoint_id=${id}`, {
      method: "POST",
      headers: { "X-Service-API-Key": KEY, "Idempotency-Key": "gave-up" },
    }, { remoteAddr: { hostname: "192.0.2.10" } });
    return {
      status: res.status,
      body: await res.json(),
      replayed: res.headers.get("Idempotent-Replayed"),
    };
  };
  const first = send();
  await beginReached.promise; // the first holds the key
  const second = send();
  await waiting.promise; // the second waits for the first's answer
  beginFails.resolve();
  const [a, b] = await Promise.all([first, second]);
  assert.deepEqual([a.status, a.body.reason], [409, "audit_unavailable"]);
  assert.equal(b.status, 200, JSON.stringify(b.body));
  assert.deepEqual([b.body.result, b.replayed], ["ok", null]);
  assert.equal(starts(h), 1);
  const trail = await (await h.call("/hypervisor/actions")).json();
  assert.deepEqual([trail.count, trail.results[0].idempotency_key], [1, "gave-up"]);
});
