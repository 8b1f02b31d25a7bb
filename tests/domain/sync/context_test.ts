/**
 * The small helpers every stage leans on: which NetBox API version a feature needs
 * (versionAtLeast), and work over many items with a bound on how many run at once (mapLimit).
 */
import assert from "node:assert/strict";
import { versionAtLeast } from "../../../domain/sync/ports.ts";
import { mapLimit } from "../../../domain/sync/context.ts";

Deno.test("versions: an announced API version is compared by major, then minor; unknown is no", () => {
  const cases: [string | null, boolean][] = [
    ["4.6", true],
    ["4.6.1", true],
    ["4.7", true],
    ["5.0", true],
    ["4.10", true],
    ["4.5", false],
    ["3.9", false],
    ["3.7", false],
    ["", false],
    ["dev", false],
    [null, false],
  ];
  for (const [version, want] of cases) {
    assert.equal(versionAtLeast(version, 4, 6), want, String(version));
  }
});

Deno.test("mapLimit: every item once, in order, at most `limit` at a time; an abort stops what is not started", async () => {
  let running = 0;
  let most = 0;
  const gates: (() => void)[] = [];
  const started: number[] = [];
  const work = (item: number) => {
    started.push(item);
    running++;
    most = Math.max(most, running);
    return new Promise<number>((resolve) =>
      gates.push(() => {
        running--;
        resolve(item * 10);
      })
    );
  };
  const done = mapLimit([1, 2, 3, 4, 5], 2, new AbortController().signal, work);
  // Open the gates one by one, each after the work it lets go has started the next.
  // Bounded: a worker that never starts the next item fails the test instead of hanging it.
  for (let turn = 0; turn < 100 && (started.length < 5 || gates.length); turn++) {
    await Promise.resolve();
    gates.shift()?.();
  }
  assert.deepEqual(await done, [10, 20, 30, 40, 50]);
  assert.equal(most, 2);
  assert.deepEqual(started, [1, 2, 3, 4, 5]);
  assert.deepEqual(await mapLimit([], 4, new AbortController().signal, work), []);

  const stop = new AbortController();
  const seen: number[] = [];
  await assert.rejects(
    mapLimit([1, 2, 3], 1, stop.signal, (item) => {
      seen.push(item);
      stop.abort();
      return Promise.resolve(item);
    }),
    (e: Error) => e.name === "AbortError",
  );
  assert.deepEqual(seen, [1]);
});
