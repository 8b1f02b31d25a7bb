import assert from "node:assert/strict";
import { contract } from "./_backends.ts";

contract("request limits", {
  "a window admits `limit` hits, then refuses with the time left": async ({ storage, clock }) => {
    const limits = storage.rateLimits;
    const start = clock.now();
    for (let i = 1; i <= 3; i++) {
      const d = await limits.hit("models", "203.0.113.5", 3, 10_000);
      assert.deepEqual(d, {
        allowed: true,
        limit: 3,
        remaining: 3 - i,
        resetAt: start + 10_000,
        retryAfter: 10,
      });
    }
    clock.advance(2_500);
    assert.deepEqual(await limits.hit("models", "203.0.113.5", 3, 10_000), {
      allowed: false,
      limit: 3,
      remaining: 0,
      resetAt: start + 10_000,
      retryAfter: 8,
    });
  },

  "concurrent hits never over-admit": async ({ storage }) => {
    const decisions = await Promise.all(
      Array.from({ length: 12 }, () => storage.rateLimits.hit("models", "c", 5, 60_000)),
    );
    assert.equal(decisions.filter((d) => d.allowed).length, 5);
  },

  "a closed window opens afresh; routes and clients count apart": async ({ storage, clock }) => {
    const limits = storage.rateLimits;
    await limits.hit("models", "a", 1, 1_000);
    assert.equal((await limits.hit("models", "a", 1, 1_000)).allowed, false);
    assert.equal((await limits.hit("models", "b", 1, 1_000)).allowed, true);
    assert.equal((await limits.hit("openapi", "a", 1, 1_000)).allowed, true);
    clock.advance(1_000);
    const fresh = await limits.hit("models", "a", 1, 1_000);
    assert.equal(fresh.allowed, true);
    assert.equal(fresh.resetAt, clock.now() + 1_000);
  },
});
