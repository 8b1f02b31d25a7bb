import assert from "node:assert/strict";
import { ModelEngine } from "../../domain/netbox/engine.ts";
import { CORE_MODELS } from "../../domain/netbox/models/core.ts";
import type { ModelDef } from "../../domain/netbox/types.ts";
import { MemoryLogger } from "../../infra/logger.ts";
import type { ObjectWrite } from "../../storage/ports.ts";
import { KvModelStore } from "../../storage/kv/models.ts";

/**
 * The engine checks unique values before it commits; only the commit-time check in the
 * store's atomic keeps two writers that both passed that check from both landing. These tests
 * hold every writer at the store's `beforeCommit` hook until all of them have passed the
 * engine's check, then release them together, one constraint per model so that no second
 * constraint can catch the clash instead.
 */

/** A gate that opens once `parties` commits have arrived (armed on demand). */
class CommitBarrier {
  #waiting = 0;
  #parties = 0;
  #open: () => void = () => {};
  #opened: Promise<void> = Promise.resolve();
  /** Every writer has reached the commit (resolves when the gate opens). */
  arrived: Promise<void> = Promise.resolve();

  arm(parties: number) {
    this.#parties = parties;
    this.#waiting = 0;
    this.#opened = new Promise((resolve) => (this.#open = resolve));
    this.arrived = this.#opened;
  }

  hook = async (_writes: readonly ObjectWrite[]): Promise<void> => {
    if (this.#parties === 0) return;
    const gate = this.#opened;
    if (++this.#waiting === this.#parties) {
      this.#parties = 0;
      this.#open();
    }
    await gate;
  };
}

const MODELS: ModelDef[] = [
  {
    app: "t",
    model: "plain",
    verbose: "plain thing",
    path: "t/plain/",
    fields: { name: { type: "string", required: true } },
    brief: ["name"],
    unique: [{ fields: ["name"] }],
  },
  {
    app: "t",
    model: "folded",
    verbose: "folded thing",
    path: "t/folded/",
    fields: { name: { type: "string", required: true } },
    brief: ["name"],
    unique: [{ fields: ["name"], ci: true }],
  },
  {
    app: "t",
    model: "pair",
    verbose: "pair thing",
    path: "t/pair/",
    fields: {
      group: { type: "string", required: true },
      name: { type: "string", required: true },
    },
    brief: ["name"],
    unique: [{ fields: ["group", "name"], message: "name must be unique per group." }],
  },
];

async function setup() {
  const kv = await Deno.openKv(":memory:");
  const barrier = new CommitBarrier();
  const store = new KvModelStore(kv, { beforeCommit: barrier.hook });
  const engine = new ModelEngine({ store, logger: new MemoryLogger(), now: Date.now })
    .register(...MODELS);
  return { kv, barrier, engine };
}

type Engine = Awaited<ReturnType<typeof setup>>["engine"];

/** Runs the writes with all of them held at the commit until each has passed its checks. */
async function race<T>(
  barrier: CommitBarrier,
  writes: Array<() => Promise<T>>,
): Promise<T[]> {
  barrier.arm(writes.length);
  return await Promise.all(writes.map((w) => w()));
}

async function names(engine: Engine, model: string): Promise<string[]> {
  return (await engine.find(model)).map((r) => String(r.name)).sort();
}

Deno.test("model store: two creates of one plain unique value, raced at the commit: one lands", async () => {
  const { kv, barrier, engine } = await setup();
  try {
    const results = await race(barrier, [
      () => engine.insert("t.plain", { name: "same" }),
      () => engine.insert("t.plain", { name: "same" }),
    ]);
    assert.deepEqual(results.map((r) => r.ok).sort(), [false, true]);
    const lost = results.find((r) => !r.ok)!;
    assert.equal(lost.ok === false && lost.reason, "invalid");
    assert.deepEqual(lost.ok === false && "errors" in lost && lost.errors, {
      name: ["plain thing with this name already exists."],
    });
    assert.deepEqual(await names(engine, "t.plain"), ["same"]);
    assert.equal(await engine.store.count("t.plain"), 1);
  } finally {
    kv.close();
  }
});

Deno.test("model store: case-insensitive unique, raced at the commit: 'Web' and 'WEB' never both land", async () => {
  const { kv, barrier, engine } = await setup();
  try {
    const results = await race(barrier, [
      () => engine.insert("t.folded", { name: "Web" }),
      () => engine.insert("t.folded", { name: "WEB" }),
    ]);
    assert.deepEqual(results.map((r) => r.ok).sort(), [false, true]);
    assert.equal((await names(engine, "t.folded")).length, 1);
  } finally {
    kv.close();
  }
});

Deno.test("model store: composite unique, raced at the commit: same pair once, other groups free", async () => {
  const { kv, barrier, engine } = await setup();
  try {
    const results = await race(barrier, [
      () => engine.insert("t.pair", { group: "a", name: "x" }),
      () => engine.insert("t.pair", { group: "a", name: "x" }),
      () => engine.insert("t.pair", { group: "b", name: "x" }),
    ]);
    assert.equal(results.filter((r) => r.ok).length, 2, JSON.stringify(results));
    const lost = results.find((r) => !r.ok)!;
    assert.deepEqual(lost.ok === false && "errors" in lost && lost.errors, {
      name: ["name must be unique per group."],
    });
    const pairs = (await engine.find("t.pair")).map((r) => `${r.group}/${r.name}`).sort();
    assert.deepEqual(pairs, ["a/x", "b/x"]);
  } finally {
    kv.close();
  }
});

Deno.test("model store: two renames onto one free name, raced at the commit: one lands", async () => {
  const { kv, barrier, engine } = await setup();
  try {
    const a = await engine.insert("t.plain", { name: "a" });
    const b = await engine.insert("t.plain", { name: "b" });
    assert.ok(a.ok && b.ok);
    const results = await race(barrier, [
      () => engine.update("t.plain", a.value.id, { name: "taken" }),
      () => engine.update("t.plain", b.value.id, { name: "taken" }),
    ]);
    assert.deepEqual(results.map((r) => r.ok).sort(), [false, true]);
    const stored = await names(engine, "t.plain");
    assert.equal(stored.filter((n) => n === "taken").length, 1, JSON.stringify(stored));
    // The loser keeps its old name, and that name is still claimed by it alone.
    assert.equal(stored.length, 2);
    const again = await engine.insert("t.plain", { name: stored.find((n) => n !== "taken")! });
    assert.equal(again.ok, false);
  } finally {
    kv.close();
  }
});

Deno.test("model store: one IP host in the global table, raced at the commit: one lands (ENFORCE_GLOBAL_UNIQUE)", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const barrier = new CommitBarrier();
    const store = new KvModelStore(kv, { beforeCommit: barrier.hook });
    const engine = new ModelEngine({ store, logger: new MemoryLogger(), now: Date.now })
      .register(...CORE_MODELS);
    // Both pass NetBox's duplicate look-up before either commits; the claim in the store's
    // unique index (docs/netbox-rules.md) is what keeps the second out.
    const results = await race(barrier, [
      () => engine.insert("ipam.ipaddress", { address: "10.7.0.1/24" }),
      () => engine.insert("ipam.ipaddress", { address: "10.7.0.1/32" }),
    ]);
    assert.deepEqual(results.map((r) => r.ok).sort(), [false, true]);
    const lost = results.find((r) => !r.ok)!;
    const errors = lost.ok === false && "errors" in lost ? lost.errors : null;
    assert.match(
      JSON.stringify(errors),
      /Duplicate IP address found in global table: 10\.7\.0\.1\/(24|32)/,
    );
    assert.equal((await engine.find("ipam.ipaddress")).length, 1);
    // Exempt roles claim nothing: two VIPs raced both land.
    const vips = await race(barrier, [
      () => engine.insert("ipam.ipaddress", { address: "10.7.0.9/24", role: "vip" }),
      () => engine.insert("ipam.ipaddress", { address: "10.7.0.9/24", role: "vip" }),
    ]);
    assert.deepEqual(vips.map((r) => r.ok), [true, true]);
  } finally {
    kv.close();
  }
});
