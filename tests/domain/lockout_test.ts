import assert from "node:assert/strict";
import { Lockout, LOCKOUT_SECONDS, MAX_FAILURES } from "../../domain/lockout.ts";

Deno.test("lockout: the fifth failure locks for 300 s, then the IP may try again", () => {
  let now = 0;
  const lockout = new Lockout(() => now);
  for (let i = 1; i < MAX_FAILURES; i++) {
    lockout.recordFailure("a");
    assert.equal(lockout.secondsLocked("a"), 0, `after ${i} failures`);
  }
  lockout.recordFailure("a");
  assert.equal(lockout.secondsLocked("a"), LOCKOUT_SECONDS);
  now = 299_500;
  assert.equal(lockout.secondsLocked("a"), 1, "rounded up, never 0 while locked");
  now = 300_000;
  assert.equal(lockout.secondsLocked("a"), 0);
  assert.equal(lockout.size, 0, "an expired lock is forgotten");
});

Deno.test("lockout: memory stays bounded under a flood of distinct IPs", () => {
  let now = 0;
  const lockout = new Lockout(() => now, 1000);
  for (let i = 0; i < 50_000; i++) {
    now += 1;
    lockout.recordFailure(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
  }
  assert.ok(lockout.size <= 1000, `size ${lockout.size}`);
});

Deno.test("lockout: a locked IP survives eviction pressure from counting-only IPs while room remains", () => {
  let now = 0;
  const lockout = new Lockout(() => now, 100);
  for (let i = 0; i < MAX_FAILURES; i++) lockout.recordFailure("attacker");
  // Counting entries older than the lock window are dropped first.
  for (let i = 0; i < 99; i++) lockout.recordFailure(`old-${i}`);
  now += (LOCKOUT_SECONDS + 1) * 1000 - 5000;
  for (let i = 0; i < 50; i++) lockout.recordFailure(`new-${i}`);
  assert.ok(lockout.secondsLocked("attacker") > 0);
});

Deno.test("lockout: a full table drops only the oldest counting entries; a recent guesser keeps its count", () => {
  const now = 0;
  const lockout = new Lockout(() => now, 100);
  for (let i = 0; i < 100; i++) lockout.recordFailure(`old-${i}`);
  for (let i = 0; i < MAX_FAILURES - 1; i++) lockout.recordFailure("guesser"); // overflows
  assert.equal(lockout.size, 90, "trimmed to 90%, not emptied");
  assert.equal(lockout.secondsLocked("guesser"), 0);
  lockout.recordFailure("guesser");
  assert.equal(lockout.secondsLocked("guesser"), LOCKOUT_SECONDS, "its earlier failures counted");
});

Deno.test("lockout: a table full of locks still counts and locks a new address", () => {
  let now = 0;
  const lockout = new Lockout(() => now, 10);
  for (let n = 0; n < 10; n++) {
    now += 1;
    for (let i = 0; i < MAX_FAILURES; i++) lockout.recordFailure(`locked-${n}`);
  }
  for (let n = 0; n < 10; n++) assert.ok(lockout.secondsLocked(`locked-${n}`) > 0, `locked-${n}`);
  // A new attacker address, its failures interleaved with other newcomers' single failures.
  for (let i = 0; i < MAX_FAILURES; i++) {
    now += 1;
    lockout.recordFailure("attacker");
    lockout.recordFailure(`passer-by-${i}`);
  }
  assert.equal(lockout.secondsLocked("attacker"), LOCKOUT_SECONDS, "its failures were kept");
  assert.equal(lockout.secondsLocked("locked-0"), 0, "the lock that ends first made room");
  for (let n = 1; n < 10; n++) assert.ok(lockout.secondsLocked(`locked-${n}`) > 0, `locked-${n}`);
  assert.ok(lockout.size <= 20, `size ${lockout.size}`);
});

Deno.test("lockout: a flood of new addresses never frees a locked one", () => {
  let now = 0;
  const lockout = new Lockout(() => now, 10);
  for (let i = 0; i < MAX_FAILURES; i++) lockout.recordFailure("locked");
  for (let i = 0; i < 1000; i++) {
    now += 1;
    lockout.recordFailure(`flood-${i}`);
  }
  assert.ok(lockout.secondsLocked("locked") > 0);
  assert.ok(lockout.size <= 20, `size ${lockout.size}`);
});
