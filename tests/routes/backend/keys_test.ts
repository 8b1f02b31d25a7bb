import assert from "node:assert/strict";
import { HeldLookup } from "../../_kv_api_keys.ts";
import { KEY, registered } from "./_setup.ts";

const LAST_ACTIVE = {
  detail: {
    code: "last_active_api_key_required",
    message: "Create and verify another active API key before retiring this key.",
  },
};

Deno.test("keys: create shows raw_key once; list is newest first with no secret material", async () => {
  let now = 1_700_000_000_000;
  await using h = await registered({}, { now: () => (now += 1000) });
  const res = await h.call("/auth/keys", { method: "POST", key: KEY, json: { label: "ci" } });
  assert.equal(res.status, 201);
  const created = await res.json();
  assert.match(created.raw_key, /^[A-Za-z0-9_-]{64}$/);
  assert.equal(created.label, "ci");
  assert.equal(created.is_active, true);
  assert.equal(typeof created.created_at, "number");
  assert.ok(!Number.isInteger(created.created_at) || created.created_at > 1e9);

  const noBody = await h.call("/auth/keys", { method: "POST", key: KEY });
  assert.equal(noBody.status, 201);
  const third = await noBody.json();
  assert.equal(third.label, "");

  const list = await (await h.call("/auth/keys", { key: created.raw_key })).json();
  assert.deepEqual(list.keys.map((k: { id: number }) => k.id), [3, 2, 1]);
  for (const k of list.keys) {
    assert.deepEqual(Object.keys(k).sort(), ["created_at", "id", "is_active", "label"]);
  }
  assert.ok(!JSON.stringify(list).includes(created.raw_key));
});

Deno.test("keys: deactivate/activate change authentication; the last active key is guarded", async () => {
  await using h = await registered();
  const second = await (await h.call("/auth/keys", { method: "POST", key: KEY })).json();

  const off = await h.call(`/auth/keys/${second.id}/deactivate`, { method: "POST", key: KEY });
  assert.equal(off.status, 200);
  assert.equal((await off.json()).is_active, false);
  assert.equal((await h.call("/auth/keys", { key: second.raw_key })).status, 401);

  const lastOff = await h.call("/auth/keys/1/deactivate", { method: "POST", key: KEY });
  assert.equal(lastOff.status, 409);
  assert.deepEqual(await lastOff.json(), LAST_ACTIVE);
  const lastDelete = await h.call("/auth/keys/1", { method: "DELETE", key: KEY });
  assert.equal(lastDelete.status, 409);
  assert.deepEqual(await lastDelete.json(), LAST_ACTIVE);

  // Deleting an inactive key is always allowed.
  const on = await h.call(`/auth/keys/${second.id}/activate`, { method: "POST", key: KEY });
  assert.equal((await on.json()).is_active, true);
  assert.equal((await h.call("/auth/keys", { key: second.raw_key })).status, 200);
  const del = await h.call("/auth/keys/1", { method: "DELETE", key: second.raw_key });
  assert.equal(del.status, 204);
  assert.equal(await del.text(), "");
  assert.equal((await h.call("/auth/keys", { key: KEY })).status, 401);
});

Deno.test("keys: concurrent retirements never leave zero active keys", async () => {
  await using h = await registered();
  const others: { id: number; raw_key: string }[] = [];
  for (let i = 0; i < 4; i++) {
    others.push(await (await h.call("/auth/keys", { method: "POST", key: KEY })).json());
  }
  // Each key retires itself, so no retirement can log out another request before it is
  // authenticated: the only refusal left is the last-active rule.
  const holders = [{ id: 1, raw_key: KEY }, ...others];
  const results = await Promise.all(
    holders.map(({ id, raw_key }) =>
      h.call(`/auth/keys/${id}/deactivate`, { method: "POST", key: raw_key })
    ),
  );
  const statuses = results.map((r) => r.status);
  assert.equal(statuses.filter((s) => s === 200).length, 4);
  assert.equal(statuses.filter((s) => s === 409).length, 1);
  await Promise.all(results.map((r) => r.body?.cancel()));
  // Read back: exactly one key is still active.
  const survivor = holders[statuses.indexOf(409)];
  const list = await (await h.call("/auth/keys", { key: survivor.raw_key })).json();
  assert.deepEqual(
    list.keys.filter((k: { is_active: boolean }) => k.is_active).map((k: { id: number }) => k.id),
    [survivor.id],
  );
});

Deno.test("keys: unknown ids answer 404 with the exact text; bad ids are 422", async () => {
  await using h = await registered();
  for (
    const [method, path] of [["POST", "/auth/keys/99/deactivate"], [
      "POST",
      "/auth/keys/99/activate",
    ], [
      "DELETE",
      "/auth/keys/99",
    ]]
  ) {
    const res = await h.call(path, { method, key: KEY });
    assert.equal(res.status, 404, path);
    assert.deepEqual(await res.json(), { detail: "API key not found." });
  }
  for (const id of ["abc", "0", "-1", "1e400", "99999999999999999999"]) {
    const res = await h.call(`/auth/keys/${id}/deactivate`, { method: "POST", key: KEY });
    assert.equal(res.status, 422, id);
    assert.ok(Array.isArray((await res.json()).detail));
  }
});

Deno.test("keys: a key retired through another process stops working here too (cache follows KV)", async () => {
  await using a = await registered();
  const second = await (await a.call("/auth/keys", { method: "POST", key: KEY })).json();
  // A second app instance on the same store stands for another isolate or process.
  const { createBackendApp } = await import("../../../routes/backend/mod.ts");
  const other = await createBackendApp(a.deps);
  assert.equal(
    (await a.call("/auth/keys", { key: second.raw_key })).status,
    200,
    "now cached in a",
  );

  const off = await other.request("/auth/keys/" + second.id + "/deactivate", {
    method: "POST",
    headers: { "X-Service-API-Key": KEY },
  }, { remoteAddr: { hostname: "192.0.2.99" } });
  assert.equal(off.status, 200);
  await off.body?.cancel();

  let status = 200;
  for (let i = 0; i < 100 && status === 200; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    const res = await a.call("/auth/keys", { key: second.raw_key });
    status = res.status;
    await res.body?.cancel();
  }
  assert.equal(status, 401);
});

Deno.test("keys: a key retired while a request with it was being looked up is refused after the retirement", async () => {
  const held = new HeldLookup(await Deno.openKv(":memory:"));
  await using h = await registered({}, { kv: held.kv });
  const second = await (await h.call("/auth/keys", { method: "POST", key: KEY })).json();

  // A request with the second key reads it (active) and is held before its verdict.
  const read = held.hold(second.raw_key);
  const before = h.call("/auth/keys", { key: second.raw_key });
  await read;
  const off = await h.call(`/auth/keys/${second.id}/deactivate`, { method: "POST", key: KEY });
  assert.equal(off.status, 200);
  assert.equal((await off.json()).is_active, false);
  // Every invalidation the retirement makes has run: the route's and the key-set watch's.
  await held.settled();
  held.release();
  // It read the key before the retirement, so it is answered as then.
  const first = await before;
  assert.equal(first.status, 200);
  await first.body?.cancel();

  // Every later request is refused, not accepted from what that read saw.
  const after = await h.call("/auth/keys", { key: second.raw_key, ip: "198.51.100.31" });
  assert.equal(after.status, 401);
  assert.deepEqual(await after.json(), { detail: "Invalid API key" });
  const list = await (await h.call("/auth/keys", { key: KEY })).json();
  assert.equal(list.keys.find((k: { id: number }) => k.id === second.id).is_active, false);
});
