/**
 * A config's digest is kept between reads of an unchanged config, and follows every change,
 * including changes made in place to the same object.
 */
import assert from "node:assert/strict";
import { digestOf } from "../../mock/handlers/context.ts";

Deno.test("mock digest: kept for an unchanged config, recomputed after an in-place change", () => {
  const config: Record<string, unknown> = { name: "vm-100", memory: 2048, net0: "virtio=AA" };
  const first = digestOf(config);
  assert.match(first, /^[0-9a-f]{40}$/);
  assert.equal(digestOf(config), first);
  assert.equal(digestOf({ ...config }), first, "same content, same digest");
  config.memory = 4096;
  const changed = digestOf(config);
  assert.notEqual(changed, first);
  assert.equal(changed, digestOf({ ...config }));
  config.memory = 2048;
  assert.equal(digestOf(config), first);
  config.tags = "prod";
  assert.notEqual(digestOf(config), first, "a key added in place");
  delete config.tags;
  assert.equal(digestOf(config), first);
  delete config.net0;
  config.net1 = "virtio=AA";
  assert.notEqual(digestOf(config), first, "a key renamed in place (same count)");
  // The digest field itself does not count.
  assert.equal(digestOf({ ...config, digest: "x" }), digestOf(config));
});
