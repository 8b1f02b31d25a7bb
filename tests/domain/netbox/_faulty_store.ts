/**
 * A test model and the real KV store with faults planted at its commit, shared by the engine's
 * write and patch tests (write_test.ts, patch_test.ts).
 */
import type { ModelDef } from "../../../domain/netbox/types.ts";
import { KvModelStore } from "../../../storage/kv/models.ts";
import type { CommitResult, ObjectWrite } from "../../../storage/ports.ts";

export const MODEL = "test.item";

export const ITEM: ModelDef = {
  app: "test",
  model: "item",
  verbose: "item",
  path: "test/items/",
  fields: {
    name: { type: "string", required: true },
    note: { type: "string" },
  },
  unique: [{ fields: ["name"] }],
  brief: ["name"],
};

/**
 * What the store does with the model's next commits, in order: null commits as usual, "throw"
 * fails in storage, "refuse" answers a failed check (a concurrent write), a function runs first
 * (a concurrent writer's turn) and then the commit is refused; `before` runs first and the commit
 * goes on; `after` runs once the commit went through. Commits past the list: as usual.
 */
export type Fault =
  | null
  | "throw"
  | "refuse"
  | (() => Promise<unknown>)
  | { before: () => Promise<unknown> }
  | { after: () => unknown };

export class FaultyStore extends KvModelStore {
  faults: Fault[] = [];
  /** Refuse every commit of the model (a record some writer keeps changing). */
  refuseAll = false;
  commits = 0;
  /** Commits refused by refuseAll past which a retry loop is taken to have no end. */
  runaway = 20;
  /** The model whose commits the faults apply to. */
  watched = MODEL;
  override async commit(writes: readonly ObjectWrite[]): Promise<CommitResult> {
    if (!writes.some((w) => w.model === this.watched)) return await super.commit(writes);
    this.commits++;
    // Taken before any await: the groups of one write are handed over in order.
    const fault = this.faults.shift() ?? null;
    if (fault === "throw") throw new Error("storage unavailable");
    if (fault === "refuse") return { ok: false };
    if (this.refuseAll) {
      // A retry loop without end fails here at once rather than when the test times out.
      if (this.commits > this.runaway) throw new Error("retried without end");
      return { ok: false };
    }
    if (typeof fault === "function") {
      await fault();
      return { ok: false };
    }
    if (fault && "before" in fault) await fault.before();
    const result = await super.commit(writes);
    if (fault && "after" in fault) await fault.after();
    return result;
  }
}
