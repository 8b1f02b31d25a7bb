/**
 * 200 creators at once on one model (one id sequence): every one is created, none waits out the
 * store's retry budget (under `deno task reliability` some 1,268 of 3,950 writes answered 500
 * "storage contention" before id allocation was queued per model in the process).
 */
import assert from "node:assert/strict";
import { reliabilityWorld, ROOT } from "./_world.ts";

Deno.test({
  name: "contention: 200 concurrent creates of one model all answer 201 with distinct ids",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const world = await reliabilityWorld();
  try {
    const headers = { authorization: `Token ${ROOT}`, "content-type": "application/json" };
    const answers = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
      const res = await world.app.request("/api/dcim/sites/", {
        method: "POST",
        headers,
        body: JSON.stringify({ name: `c${i}`, slug: `c${i}` }),
      });
      return { status: res.status, body: await res.json() };
    }));
    const failed = answers.filter((a) => a.status !== 201);
    assert.deepEqual(failed.slice(0, 3), [], `${failed.length} of 200 failed`);
    assert.equal(new Set(answers.map((a) => a.body.id)).size, 200);
    const count = await world.app.request("/api/dcim/sites/?limit=1", { headers });
    assert.equal((await count.json()).count, 200);
  } finally {
    world.close();
  }
});
