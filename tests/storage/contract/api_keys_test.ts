import assert from "node:assert/strict";
import { contract } from "./_backends.ts";

const T = 1_700_000_000;

contract("api keys", {
  "the registry is claimed once, by exactly one of racing first keys": async ({ storage }) => {
    const keys = storage.apiKeys;
    assert.equal(await keys.isClaimed(), false);
    const raced = await Promise.all(
      Array.from({ length: 8 }, (_, i) => keys.claimFirst(`digest-${i}`, `first ${i}`, T)),
    );
    const winners = raced.filter((r) => r !== null);
    assert.equal(winners.length, 1);
    assert.equal(await keys.isClaimed(), true);
    assert.equal(await keys.claimFirst("late", "late", T), null);
    assert.deepEqual((await keys.list()).map((r) => r.id), [winners[0]!.id]);
  },

  "lookup answers claimed and the record by digest in one call": async ({ storage }) => {
    const keys = storage.apiKeys;
    assert.deepEqual(await keys.lookup("nope"), { claimed: false, record: null });
    const first = (await keys.claimFirst("d1", "one", T))!;
    assert.deepEqual(first, {
      id: first.id,
      label: "one",
      is_active: true,
      created_at: T,
      digest: "d1",
    });
    assert.deepEqual(await keys.lookup("d1"), { claimed: true, record: first });
    assert.deepEqual(await keys.lookup("d2"), { claimed: true, record: null });
    assert.deepEqual(await keys.get(first.id), first);
    assert.equal(await keys.get(first.id + 1000), null);
  },

  "ids grow and the list is newest first": async ({ storage }) => {
    const keys = storage.apiKeys;
    const a = (await keys.claimFirst("a", "a", T))!;
    const b = await keys.create("b", "b", T + 1);
    const c = await keys.create("c", "c", T + 2);
    assert.ok(a.id < b.id && b.id < c.id);
    assert.deepEqual((await keys.list()).map((r) => r.label), ["c", "b", "a"]);
  },

  "the last active key can be neither deactivated nor deleted": async ({ storage }) => {
    const keys = storage.apiKeys;
    const a = (await keys.claimFirst("a", "a", T))!;
    assert.deepEqual(await keys.setActive(a.id, false), { ok: false, reason: "last_active" });
    assert.deepEqual(await keys.delete(a.id), { ok: false, reason: "last_active" });
    const b = await keys.create("b", "b", T);
    const off = await keys.setActive(a.id, false);
    assert.equal(off.ok && off.record.is_active, false);
    assert.deepEqual(await keys.setActive(b.id, false), { ok: false, reason: "last_active" });
    // An inactive key may always go; the registry stays claimed.
    assert.equal((await keys.delete(a.id)).ok, true);
    assert.equal(await keys.get(a.id), null);
    assert.deepEqual(await keys.delete(a.id), { ok: false, reason: "not_found" });
    assert.deepEqual(await keys.setActive(a.id, true), { ok: false, reason: "not_found" });
    assert.equal(await keys.isClaimed(), true);
  },

  "racing deactivations of the last two active keys leave one active": async ({ storage }) => {
    const keys = storage.apiKeys;
    const a = (await keys.claimFirst("a", "a", T))!;
    const b = await keys.create("b", "b", T);
    const results = await Promise.all([keys.setActive(a.id, false), keys.setActive(b.id, false)]);
    assert.deepEqual(results.map((r) => r.ok).sort(), [false, true]);
    assert.equal((await keys.list()).filter((r) => r.is_active).length, 1);
  },

  "watch calls back at once and on every change, from another handle too": async (opened) => {
    const keys = opened.storage.apiKeys;
    const other = (await opened.reopen()).apiKeys;
    const abort = new AbortController();
    let calls = 0;
    let wake: () => void = () => {};
    const changed = () => new Promise<void>((resolve) => (wake = resolve));
    let next = changed();
    const watching = keys.watch(() => {
      calls++;
      wake();
    }, abort.signal);
    await next;
    assert.equal(calls, 1);
    next = changed();
    await other.claimFirst("x", "x", T);
    await next;
    assert.ok(calls >= 2);
    abort.abort();
    await watching;
  },
});
