/**
 * The change log through the engine's API: which writes it records (those made for an API
 * request, of models it logs, when the engine has its model) and when it prunes (after it
 * recorded something, within its bounds when the engine has them). The HTTP side is
 * tests/routes/inventory/changelog_test.ts (docs/api-behaviour.md, Inventory: change log).
 */
import assert from "node:assert/strict";
import { ModelEngine } from "../../../domain/netbox/engine.ts";
import type { ChangelogBounds } from "../../../domain/netbox/engine/changelog.ts";
import { CORE_MODELS } from "../../../domain/netbox/models/core.ts";
import { OBJECT_CHANGE, OBJECT_CHANGE_MODEL } from "../../../domain/netbox/models/changes.ts";
import type { ModelDef } from "../../../domain/netbox/types.ts";
import { MemoryLogger } from "../../../infra/logger.ts";
import { stateOf } from "../../../domain/netbox/engine/index_state.ts";
import { KvModelStore } from "../../../storage/kv/models.ts";
import type { StoredObject } from "../../../storage/ports.ts";

const DAY = 86_400_000;
const REQUEST = { requestId: "3f1c2a4e-0000-4000-8000-000000000001", userName: "admin" };

/** A model the change log leaves out, as it leaves out tokens. */
const UNLOGGED: ModelDef = {
  app: "test",
  model: "note",
  verbose: "note",
  path: "test/notes/",
  fields: { name: { type: "string", required: true } },
  brief: ["name"],
  changelog: false,
};

/**
 * The real store, where another process's pruner can be made to act at one point of ours: it
 * deletes entries (real commits) just before our next page or version read of the change log.
 */
class RacingStore extends KvModelStore {
  beforePage?: () => Promise<void>;
  beforeVersioned?: (ids: readonly number[]) => Promise<void>;
  /** Change-log pages read; past 50 in a test, a prune that never ends is stopped here. */
  pages = 0;

  /** Deletes entries as a pruner does (version-checked commits). */
  async take(ids: readonly number[]): Promise<void> {
    for (const found of await super.getVersioned(OBJECT_CHANGE_MODEL, ids)) {
      if (!found) continue;
      const record: StoredObject = found.record;
      const prev = { record, ...stateOf(this, OBJECT_CHANGE, record), version: found.version };
      const done = await this.commit([{
        model: OBJECT_CHANGE_MODEL,
        id: record.id,
        prev,
        next: null,
      }]);
      assert.ok(done.ok);
    }
  }

  override async page(model: string, offset: number, limit: number, reverse: boolean) {
    if (model === OBJECT_CHANGE_MODEL) {
      if (++this.pages > 50) throw new Error("the prune did not end");
      const hook = this.beforePage;
      this.beforePage = undefined;
      await hook?.();
    }
    return super.page(model, offset, limit, reverse);
  }

  override async getVersioned(model: string, ids: readonly number[]) {
    if (model === OBJECT_CHANGE_MODEL) {
      const hook = this.beforeVersioned;
      this.beforeVersioned = undefined;
      await hook?.(ids);
    }
    return super.getVersioned(model, ids);
  }
}

async function engine(
  options: { log?: boolean; bounds?: ChangelogBounds; now?: () => number } = {},
) {
  const kv = await Deno.openKv(":memory:");
  const logger = new MemoryLogger();
  const store = new RacingStore(kv);
  const e = new ModelEngine({
    store,
    logger,
    now: options.now ?? Date.now,
    changelog: options.bounds,
  }).register(...CORE_MODELS, UNLOGGED, ...(options.log === false ? [] : [OBJECT_CHANGE]));
  const site = async (name: string, change = REQUEST) =>
    assert.ok((await e.create("dcim.site", { name, slug: name }, null, { change })).ok);
  const entries = async () =>
    (await store.scan(OBJECT_CHANGE_MODEL)).map((r) => [r.action, r.object_repr]);
  return { kv, logger, store, e, site, entries };
}

Deno.test("change log: an engine without its model records nothing for a request's writes, and logs no error", async () => {
  const { kv, logger, e, site } = await engine({ log: false });
  try {
    await site("ams1");
    assert.equal((await e.find("dcim.site", { slug: ["ams1"] })).length, 1);
    assert.deepEqual(logger.lines, []);
  } finally {
    kv.close();
  }
});

Deno.test("change log: an engine without bounds records every request's writes and prunes none, with no error", async () => {
  const { kv, logger, site, entries } = await engine();
  try {
    for (const name of ["ams1", "ams2", "ams3"]) await site(name);
    assert.deepEqual(await entries(), [
      ["create", "ams1"],
      ["create", "ams2"],
      ["create", "ams3"],
    ]);
    assert.deepEqual(logger.lines, []);
  } finally {
    kv.close();
  }
});

Deno.test("change log: writes made for no request (the engine's own) are not recorded", async () => {
  const { kv, logger, e, entries } = await engine({ bounds: { retentionDays: 0, maxEntries: 10 } });
  try {
    assert.ok((await e.insert("dcim.site", { name: "ams1", slug: "ams1" })).ok);
    assert.ok((await e.create("dcim.site", { name: "ams2", slug: "ams2" })).ok);
    assert.deepEqual(await entries(), []);
    assert.deepEqual(logger.lines, []);
  } finally {
    kv.close();
  }
});

Deno.test("change log: a request's write of a model it leaves out records nothing and prunes nothing", async () => {
  let now = Date.parse("2026-01-01T00:00:00Z");
  const { kv, logger, e, site, entries } = await engine({
    bounds: { retentionDays: 1, maxEntries: 10 },
    now: () => now,
  });
  try {
    await site("ams1");
    assert.deepEqual(await entries(), [["create", "ams1"]]);
    // Two days on, the entry is past the retention; a note written for a request is not
    // logged, and so prunes nothing: the entry goes with the next write the log records.
    now += 2 * DAY;
    const note = await e.create("test.note", { name: "n1" }, null, { change: REQUEST });
    assert.ok(note.ok);
    assert.deepEqual(await entries(), [["create", "ams1"]]);
    await site("ams2");
    assert.deepEqual(await entries(), [["create", "ams2"]]);
    assert.deepEqual(logger.lines, []);
  } finally {
    kv.close();
  }
});

Deno.test("change log: a prune whose oldest entries another pruner took meanwhile deletes the rest and logs no error", async () => {
  const { kv, logger, store, site, entries } = await engine({
    bounds: { retentionDays: 0, maxEntries: 2 },
  });
  try {
    await site("ams1");
    await site("ams2");
    // The next prune reads the oldest entry (ams1's); another pruner deletes it first.
    store.beforeVersioned = (ids) => store.take(ids);
    await site("ams3");
    assert.equal(store.beforeVersioned, undefined, "the race happened");
    assert.deepEqual(await entries(), [["create", "ams2"], ["create", "ams3"]]);
    assert.deepEqual(logger.lines, []);
  } finally {
    kv.close();
  }
});

Deno.test("change log: a prune that finds the log emptied by another pruner stops at once and logs no error", async () => {
  const { kv, logger, store, site, entries } = await engine({
    bounds: { retentionDays: 0, maxEntries: 1 },
  });
  try {
    await site("ams1");
    // One entry past the bound: before the prune reads its page, another pruner takes all.
    store.beforePage = async () =>
      await store.take((await store.scan(OBJECT_CHANGE_MODEL)).map((r) => r.id));
    store.pages = 0;
    await site("ams2");
    assert.equal(store.beforePage, undefined, "the race happened");
    assert.deepEqual(await entries(), []);
    assert.equal(store.pages, 1);
    assert.deepEqual(logger.lines, []);
  } finally {
    kv.close();
  }
});
