/**
 * The lockout's edge cases: keys that once worked, and clients behind chains of proxies.
 * Failures here are always a presented key (a request without a key is not counted).
 */
import assert from "node:assert/strict";
import { MAX_FAILURES } from "../../../domain/lockout.ts";
import { KEY, registered } from "./_setup.ts";

type Harness = Awaited<ReturnType<typeof registered>>;

async function status(h: Harness, init: Parameters<Harness["call"]>[1]): Promise<number> {
  const res = await h.call("/auth/keys", init);
  await res.body?.cancel();
  return res.status;
}

Deno.test("lockout: a deactivated key and a deleted key count as failed logins", async () => {
  await using h = await registered();
  const make = async () => await (await h.call("/auth/keys", { method: "POST", key: KEY })).json();
  const deactivated = await make();
  const deleted = await make();
  assert.equal(await status(h, { key: deactivated.raw_key, ip: "192.0.2.61" }), 200);
  const off = await h.call(`/auth/keys/${deactivated.id}/deactivate`, { method: "POST", key: KEY });
  assert.equal(off.status, 200);
  await off.body?.cancel();
  const gone = await h.call(`/auth/keys/${deleted.id}`, { method: "DELETE", key: KEY });
  assert.equal(gone.status, 204);

  for (const [ip, raw] of [["192.0.2.61", deactivated.raw_key], ["192.0.2.62", deleted.raw_key]]) {
    for (let i = 0; i < MAX_FAILURES; i++) assert.equal(await status(h, { key: raw, ip }), 401);
    // Locked: even the good key is refused from that address, and only from it.
    assert.equal(await status(h, { key: KEY, ip }), 429, ip);
  }
  assert.equal(await status(h, { key: KEY, ip: "192.0.2.63" }), 200);
});

Deno.test("lockout: behind a chain of trusted proxies the right-most untrusted hop is the client", async () => {
  await using h = await registered({ SERVICE_TRUSTED_PROXIES: "10.0.0.1,10.0.0.2" });
  // The client 198.51.100.7 reaches proxy 10.0.0.2, which forwards to 10.0.0.1 (our peer).
  // It writes any left-most value it likes; the hops the proxies append cannot be forged.
  for (let i = 0; i < MAX_FAILURES; i++) {
    const forged = `203.0.113.${i}, 198.51.100.7, 10.0.0.2`;
    const code = await status(h, {
      key: "wrong",
      ip: "10.0.0.1",
      headers: { "x-forwarded-for": forged },
    });
    assert.equal(code, 401);
  }
  const again = await status(h, {
    key: KEY,
    ip: "10.0.0.1",
    headers: { "x-forwarded-for": "203.0.113.200, 198.51.100.7, 10.0.0.2" },
  });
  assert.equal(again, 429, "a fresh forged left-most hop does not escape the lock");
  // Neither the proxies nor another client behind them are locked.
  const neighbour = await status(h, {
    key: KEY,
    ip: "10.0.0.1",
    headers: { "x-forwarded-for": "198.51.100.7, 198.51.100.8, 10.0.0.2" },
  });
  assert.equal(neighbour, 200);
  assert.equal(await status(h, { key: KEY, ip: "10.0.0.1" }), 200);
});

Deno.test("lockout: a success served from the auth cache also clears the failure count", async () => {
  await using h = await registered();
  const ip = "192.0.2.71";
  assert.equal(await status(h, { key: KEY, ip }), 200); // verified once: now cached
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < MAX_FAILURES - 1; i++) {
      assert.equal(await status(h, { key: "wrong", ip }), 401);
    }
    assert.equal(await status(h, { key: KEY, ip }), 200, `round ${round}: the cached key`);
  }
});

Deno.test("lockout: requests without a key are never counted", async () => {
  await using h = await registered();
  const ip = "192.0.2.72";
  for (let i = 0; i < MAX_FAILURES * 2; i++) assert.equal(await status(h, { ip }), 401);
  assert.equal(await status(h, { key: KEY, ip }), 200);
});

Deno.test("register-key: a key of exactly 32 characters is long enough", async () => {
  const { backend } = await import("./_setup.ts");
  await using h = await backend();
  const res = await h.call("/auth/register-key", {
    method: "POST",
    json: { api_key: "k".repeat(32), label: "min" },
  });
  assert.equal(res.status, 201);
  assert.deepEqual(await res.json(), { detail: "API key registered." });
  assert.equal(await status(h as Harness, { key: "k".repeat(32), ip: "192.0.2.73" }), 200);
});
