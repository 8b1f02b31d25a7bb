/**
 * storage/kv/timed_kv.ts: every KV call the stores make is timed under its operation name, and the
 * wrapped handle answers exactly as the raw one (the whole suite runs on it: tests/_helpers.ts).
 */
import assert from "node:assert/strict";
import { noopMetrics } from "../../infra/metrics.ts";
import { timedKv } from "../../storage/kv/timed_kv.ts";
import { retryWhenBusy } from "../../storage/kv/busy_retry.ts";

function recording() {
  const calls: [string, boolean][] = [];
  return {
    calls,
    metrics: {
      ...noopMetrics,
      kvOperation: (operation: string, seconds: number, ok: boolean) => {
        assert.ok(seconds >= 0);
        calls.push([operation, ok]);
      },
    },
  };
}

Deno.test("timed kv: get, getMany, set, delete, commit and a whole list are each timed once", async () => {
  const raw = await Deno.openKv(":memory:");
  const { calls, metrics } = recording();
  const kv = timedKv(raw, metrics);
  try {
    await kv.set(["a"], 1);
    const committed = await kv.atomic().check({ key: ["b"], versionstamp: null }).set(["b"], 2)
      .commit();
    assert.equal(committed.ok, true);
    assert.equal((await kv.get<number>(["a"])).value, 1);
    assert.deepEqual((await kv.getMany<number[]>([["a"], ["b"]])).map((e) => e.value), [1, 2]);
    const listed = [];
    for await (const entry of kv.list<number>({ prefix: [] })) listed.push(entry.value);
    assert.deepEqual(listed, [1, 2]);
    // A loop left early still reports its list once.
    for await (const _ of kv.list({ prefix: [] })) break;
    await kv.delete(["a"]);
    assert.deepEqual(calls, [
      ["set", true],
      ["commit", true],
      ["get", true],
      ["getMany", true],
      ["list", true],
      ["list", true],
      ["delete", true],
    ]);
  } finally {
    raw.close();
  }
});

Deno.test("timed kv: a call that throws is counted as failed and still throws", async () => {
  const raw = await Deno.openKv(":memory:");
  const { calls, metrics } = recording();
  const kv = timedKv(raw, metrics);
  try {
    const tooBig = new Uint8Array(70_000);
    await assert.rejects(() => kv.set(["big"], tooBig), /too large/i);
    assert.deepEqual(calls, [["set", false]]);
  } finally {
    raw.close();
  }
});

Deno.test("timed kv: a committed atomic reports its mutations once, a refused one none", async () => {
  const raw = await Deno.openKv(":memory:");
  const reported: number[] = [];
  const kv = timedKv(raw, { ...noopMetrics, kvMutations: (n: number) => reported.push(n) });
  try {
    const committed = await kv.atomic()
      .check({ key: ["a"], versionstamp: null })
      .set(["a"], 1)
      .set(["b"], 2)
      .delete(["c"])
      .sum(["n"], 1n)
      .min(["lo"], 3n)
      .max(["hi"], 4n)
      .mutate({ type: "set", key: ["d"], value: 5 }, { type: "delete", key: ["e"] })
      .commit();
    assert.equal(committed.ok, true);
    // The atomic wrote what it was given (the counting changes nothing).
    assert.deepEqual((await raw.getMany<unknown[]>([["a"], ["b"], ["d"]])).map((e) => e.value), [
      1,
      2,
      5,
    ]);
    assert.equal((await raw.get<Deno.KvU64>(["n"])).value?.value, 1n);
    const refused = await kv.atomic().check({ key: ["a"], versionstamp: null }).set(["a"], 9)
      .commit();
    assert.equal(refused.ok, false);
    assert.deepEqual(reported, [8]);
    assert.equal((await raw.get<number>(["a"])).value, 1);
  } finally {
    raw.close();
  }
});

Deno.test("timed kv under the stores' busy retry: a commit is timed and its mutations counted once, and a busy commit is tried again", async () => {
  const raw = await Deno.openKv(":memory:");
  const commits: boolean[] = [];
  const reported: number[] = [];
  // The first commit meets another process's lock (as SQLite answers it), then goes through.
  let busy = 1;
  const locking = new Proxy(raw, {
    get(target, name) {
      const member = Reflect.get(target, name, target);
      if (name !== "atomic") return typeof member === "function" ? member.bind(target) : member;
      return () => {
        const op = target.atomic();
        const commit = op.commit.bind(op);
        op.commit = () => busy-- > 0 ? Promise.reject(new Error("database is locked")) : commit();
        return op;
      };
    },
  });
  const kv = retryWhenBusy(timedKv(locking, {
    ...noopMetrics,
    kvOperation: (operation: string, _s: number, ok: boolean) => {
      if (operation === "commit") commits.push(ok);
    },
    kvMutations: (n: number) => reported.push(n),
  }));
  try {
    // Chained, as the stores write: the chain's result must keep the retry.
    const result = await kv.atomic().check({ key: ["a"], versionstamp: null }).set(["a"], 1)
      .sum(["n"], 1n).commit();
    assert.equal(result.ok, true);
    assert.equal((await raw.get<number>(["a"])).value, 1);
    // One failed attempt (the lock) and one that committed: each timed once, mutations once.
    assert.deepEqual(commits, [false, true]);
    assert.deepEqual(reported, [2]);
  } finally {
    raw.close();
  }
});

Deno.test("timed kv: reads report the entries they returned or looked up", async () => {
  const raw = await Deno.openKv(":memory:");
  const read: [string, number][] = [];
  const kv = timedKv(raw, {
    ...noopMetrics,
    kvKeysRead: (op: string, n: number) => read.push([op, n]),
  });
  try {
    for (let i = 0; i < 5; i++) await raw.set(["k", i], i);
    await kv.get(["k", 0]);
    await kv.getMany([["k", 1], ["k", 2], ["missing"]]);
    const all = [];
    for await (const e of kv.list({ prefix: ["k"] })) all.push(e.key);
    assert.equal(all.length, 5);
    // A loop left early counts what it took; a limit counts what the list yielded.
    for await (const _ of kv.list({ prefix: ["k"] })) break;
    for await (const _ of kv.list({ prefix: ["k"] }, { limit: 2 })) { /* two */ }
    assert.deepEqual(read, [["get", 1], ["getMany", 3], ["list", 5], ["list", 1], ["list", 2]]);
  } finally {
    raw.close();
  }
});
