/**
 * The sync end to end on one real socket: the mock hypervisor, the backend and the inventory
 * of this app wired to each other, read back through the inventory's REST API as a NetBox
 * client would.
 */
import assert from "node:assert/strict";
import { addInventoryCopy, type SseFrame, syncWorld } from "./_sync_harness.ts";

function summary(frames: SseFrame[]) {
  const complete = frames.filter((f) => f.event === "complete");
  return { complete, errors: frames.filter((f) => f.event === "error") };
}

Deno.test("e2e sync: a full update streams every stage and fills the inventory", async () => {
  const world = await syncWorld();
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const frames = await world.stream("/full-update/stream");
    const { complete, errors } = summary(frames);
    assert.deepEqual(errors.map((e) => e.data), []);
    assert.equal(complete.length, 1);
    console.log(JSON.stringify(complete[0].data.stages));
  } finally {
    await world.close();
  }
});
