import assert from "node:assert/strict";
import { contract } from "./_backends.ts";

const NOW = 1_700_000_000_000;
const TTL = 60_000;

contract("idempotency keys", {
  "a key is claimed by one of racing requests; the others see its entry": async ({ storage }) => {
    const store = storage.idempotency;
    const raced = await Promise.all(
      Array.from({ length: 5 }, (_, i) => store.claim("k", `fp-${i}`, NOW, TTL)),
    );
    assert.equal(raced.filter((r) => r.claimed).length, 1);
    for (const r of raced) {
      if (!r.claimed) {
        assert.equal(r.entry.expires_at, NOW + TTL);
        assert.equal(r.entry.answer, null);
        assert.match(r.entry.fingerprint, /^fp-\d$/);
      }
    }
  },

  "a completed key replays its answer until it expires, then is free": async ({ storage }) => {
    const store = storage.idempotency;
    assert.deepEqual(await store.claim("k", "fp", NOW, TTL), { claimed: true });
    await store.complete("k", { status: 202, body: { task: "UPID" } });
    const again = await store.claim("k", "fp", NOW + 1, TTL);
    assert.ok(!again.claimed);
    assert.deepEqual(again.entry.answer, { status: 202, body: { task: "UPID" } });
    assert.equal(again.entry.fingerprint, "fp");
    assert.deepEqual(await store.claim("k", "fp2", NOW + TTL + 1, TTL), { claimed: true });
  },

  "a released key can be claimed afresh; keys are independent": async ({ storage }) => {
    const store = storage.idempotency;
    await store.claim("a", "fp", NOW, TTL);
    assert.deepEqual(await store.claim("b", "fp", NOW, TTL), { claimed: true });
    await store.release("a");
    assert.deepEqual(await store.claim("a", "other", NOW, TTL), { claimed: true });
  },

  "settled waits for the answer (or the key's release), and ends on abort": async ({ storage }) => {
    const store = storage.idempotency;
    await store.claim("k", "fp", NOW, TTL);
    const abort = new AbortController();
    const waiting = store.settled("k", abort.signal);
    await store.complete("k", { status: 200, body: 1 });
    assert.deepEqual((await waiting)!.answer, { status: 200, body: 1 });

    await store.claim("r", "fp", NOW, TTL);
    const released = store.settled("r", abort.signal);
    await store.release("r");
    assert.equal(await released, null);

    await store.claim("h", "fp", NOW, TTL);
    const held = store.settled("h", abort.signal);
    abort.abort();
    assert.equal(await held, null);
  },
});
