/**
 * Deletes in two steps, as Django's deletion collector does. Collect: from the objects
 * asked for, follow every reference to them: CASCADE dependents join the deletion,
 * SET_NULL fields and m2m memberships are to be cleared, PROTECT dependents that are not
 * themselves being deleted refuse the whole delete. Execute: clear the surviving references,
 * delete dependents first, clean up references created meanwhile, run `afterDelete` hooks.
 */
import type { ObjectWrite, StoredObject } from "../../../storage/ports.ts";
import type { AuthInfo, WriteResult } from "../types.ts";
import type { EngineCore } from "./core.ts";
import { stateOf } from "./index_state.ts";
import { dropRef, patchStored } from "./patch.ts";
import { displayOf } from "./render.ts";
import { matchesIfMatch } from "../etag.ts";
import { type Change, type ChangeRequest, recordChanges } from "./changelog.ts";

/** A reference that survives the delete and must be cleared (or an m2m member removed). */
interface Detach {
  model: string;
  id: number;
  field: string;
  /** m2m: the member to take out; absent: set the field to null. */
  remove?: number;
}

/** Everything a delete touches, gathered before anything is written. */
export interface DeletionPlan {
  /** model → id → record, in the order they were reached (roots first). */
  toDelete: Map<string, Map<number, StoredObject>>;
  detach: Detach[];
  /** If-Match ETags the objects asked for must still satisfy when deleted (NetBox 4.6). */
  ifMatch?: { model: string; ids: number[]; etags: readonly string[] };
  /** Change-log context (see DeleteOptions). */
  change?: ChangeRequest;
  messages?: ReadonlyMap<number, string>;
  /** The model the delete was asked for (the one `messages` ids belong to). */
  root?: string;
}

export interface DeleteOptions {
  /** If-Match ETags (single deletes): a mismatch refuses with `precondition_failed`. */
  ifMatch?: readonly string[];
  /** The API request deleting: every deleted object (cascades too) goes to the change log. */
  change?: ChangeRequest;
  /** `changelog_message` per id asked for (cascaded deletes carry none, as in NetBox). */
  messages?: ReadonlyMap<number, string>;
  /** A bulk (list) delete passes over ids that name no object, as NetBox's bulk view does. */
  skipMissing?: boolean;
}

const PRECONDITION_FAILED: Refusal = {
  ok: false,
  reason: "precondition_failed",
  detail: "Precondition failed.",
};

type Refusal = Extract<WriteResult<null>, { ok: false }>;

/** Deletes objects (and their CASCADE dependents); a conflict when PROTECT dependents exist. */
export async function deleteMany(
  core: EngineCore,
  model: string,
  ids: number[],
  auth: AuthInfo | null,
  options: DeleteOptions = {},
): Promise<WriteResult<null>> {
  const collected = await collectDeletion(core, model, ids, auth, options.skipMissing);
  if (!collected.ok) return collected;
  // executeDeletion checks the If-Match on a fresh read before it writes anything.
  if (options.ifMatch?.length) collected.plan.ifMatch = { model, ids, etags: options.ifMatch };
  Object.assign(collected.plan, {
    change: options.change,
    messages: options.messages,
    root: model,
  });
  return executeDeletion(core, collected.plan);
}

/** Do the objects a guarded delete asks for still match its If-Match (re-read)? */
async function stillMatches(core: EngineCore, plan: DeletionPlan): Promise<boolean> {
  if (!plan.ifMatch) return true;
  const { model, ids, etags } = plan.ifMatch;
  const current = await core.store.getMany(model, ids);
  return current.every((r) => matchesIfMatch(r, etags));
}

/** Collect: what deleting `ids` of `model` deletes and detaches, or why it may not. */
export async function collectDeletion(
  core: EngineCore,
  model: string,
  ids: number[],
  auth: AuthInfo | null,
  skipMissing = false,
): Promise<{ ok: true; plan: DeletionPlan } | Refusal> {
  const def = core.registry.definition(model);
  const toDelete = new Map<string, Map<number, StoredObject>>();
  const protectedBy: Array<{ model: string; record: StoredObject }> = [];
  const queue: Array<{ model: string; record: StoredObject }> = [];
  for (const id of ids) {
    const r = (await core.store.get(model, id))?.record ?? null;
    if (!r && skipMissing) continue;
    if (!r) return { ok: false, reason: "not_found", detail: "Not found." };
    if (auth && def.canDelete && !def.canDelete(r, auth)) {
      return {
        ok: false,
        reason: "forbidden",
        detail: "You do not have permission to perform this action.",
      };
    }
    queue.push({ model, record: r });
  }
  if (auth && def.beforeDelete) {
    const refusal = await def.beforeDelete(queue.map((q) => q.record), {
      engine: core.api,
      auth,
      now: core.now,
    });
    if (refusal) return { ok: false, reason: "conflict", detail: refusal };
  }
  const mark = (m: string, r: StoredObject) => {
    let map = toDelete.get(m);
    if (!map) toDelete.set(m, map = new Map());
    if (map.has(r.id)) return false;
    map.set(r.id, r);
    return true;
  };
  const detach: Detach[] = [];
  while (queue.length > 0) {
    const { model: m, record } = queue.shift()!;
    if (!mark(m, record)) continue;
    for (const rel of core.registry.referrersOf(m)) {
      const dependents = await core.store.idsByIndex(
        rel.model,
        rel.field,
        rel.def.type === "gfk" ? `${m}:${record.id}` : record.id,
      );
      if (rel.def.type === "m2m") {
        for (const d of dependents) {
          detach.push({ model: rel.model, id: d, field: rel.field, remove: record.id });
        }
        continue;
      }
      const action = rel.def.onDelete ?? "protect";
      if (action === "set_null" && rel.def.type === "gfk") {
        for (const d of dependents) {
          detach.push({ model: rel.model, id: d, field: rel.def.typeField! });
          detach.push({ model: rel.model, id: d, field: rel.def.idField! });
        }
      } else if (action === "set_null") {
        for (const d of dependents) detach.push({ model: rel.model, id: d, field: rel.field });
      } else if (action === "cascade") {
        for (const r of await core.store.getMany(rel.model, dependents)) {
          queue.push({ model: rel.model, record: r });
        }
      } else {
        for (const r of await core.store.getMany(rel.model, dependents)) {
          protectedBy.push({ model: rel.model, record: r });
        }
      }
    }
  }
  const blocking = protectedBy.filter((p) => !toDelete.get(p.model)?.has(p.record.id));
  if (blocking.length > 0) {
    const names = blocking.map((p) =>
      `${displayOf(core.registry.definition(p.model), p.record)} (${p.record.id})`
    );
    return {
      ok: false,
      reason: "conflict",
      detail: `Unable to delete object. ${blocking.length} dependent objects were found: ${
        names.join(", ")
      }`,
    };
  }
  return { ok: true, plan: { toDelete, detach } };
}

/** Execute a collected plan. */
export async function executeDeletion(
  core: EngineCore,
  plan: DeletionPlan,
): Promise<WriteResult<null>> {
  const { toDelete } = plan;
  if (!(await stillMatches(core, plan))) return PRECONDITION_FAILED;
  // Detach references that survive (SET_NULL and m2m memberships), then delete.
  for (const n of plan.detach) {
    if (toDelete.get(n.model)?.has(n.id)) continue;
    const current = (await core.store.get(n.model, n.id))?.record ?? null;
    if (!current) continue;
    const value = n.remove !== undefined
      ? ((current[n.field] as number[] | undefined) ?? []).filter((x) => x !== n.remove)
      : null;
    await patchStored(core, n.model, n.id, { [n.field]: value });
  }
  const writes: ObjectWrite[] = [];
  for (const [m, records] of toDelete) {
    const mdef = core.registry.definition(m);
    for (const r of records.values()) {
      const cur = await core.store.get(m, r.id);
      if (!cur) continue;
      // The commit is checked against this version: a guarded object must still match here.
      if (
        plan.ifMatch && m === plan.ifMatch.model && plan.ifMatch.ids.includes(r.id) &&
        !matchesIfMatch(cur.record, plan.ifMatch.etags)
      ) return PRECONDITION_FAILED;
      writes.push({
        model: m,
        id: r.id,
        prev: {
          record: cur.record,
          ...stateOf(core.store, mdef, cur.record),
          version: cur.version,
        },
        next: null,
      });
    }
  }
  // Dependents first, so a failure half-way never leaves a dangling reference.
  writes.reverse();
  for (const group of core.store.plan(writes)) {
    if (!(await core.store.commit(group)).ok) {
      return {
        ok: false,
        reason: "conflict",
        detail: "The object was changed concurrently; please retry.",
      };
    }
  }
  const gone: Change[] = [];
  for (const [m, records] of toDelete) {
    for (const r of records.values()) {
      const message = m === plan.root ? plan.messages?.get(r.id) ?? "" : "";
      gone.push({ model: m, action: "delete", before: r, after: null, message });
    }
  }
  await recordChanges(core, plan.change, gone);
  await followUpDeletes(core, toDelete);
  for (const [m, records] of toDelete) {
    const mdef = core.registry.definition(m);
    if (!mdef.afterDelete) continue;
    for (const r of records.values()) {
      try {
        await mdef.afterDelete(r, { engine: core.api, logger: core.logger });
      } catch (error) {
        core.logger.log("error", "after-delete hook failed", {
          model: m,
          id: r.id,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }
  return { ok: true, value: null };
}

/**
 * A reference created concurrently with a delete (after its dependents scan, before its
 * commit) would dangle: look again once deleted, and remove or detach what appeared.
 */
async function followUpDeletes(
  core: EngineCore,
  toDelete: Map<string, Map<number, StoredObject>>,
): Promise<void> {
  for (const [m, records] of toDelete) {
    for (const record of records.values()) {
      for (const rel of core.registry.referrersOf(m)) {
        const ids = (await core.store.idsByIndex(
          rel.model,
          rel.field,
          rel.def.type === "gfk" ? `${m}:${record.id}` : record.id,
        )).filter((id) => !toDelete.get(rel.model)?.has(id));
        if (ids.length === 0) continue;
        core.logger.log("warning", "references created during a delete were cleaned up", {
          model: m,
          id: record.id,
          referrer: rel.model,
          ids,
        });
        const action = rel.def.onDelete ?? "protect";
        const detach = rel.def.type === "m2m" || action === "set_null" ||
          (action === "protect" && rel.def.nullable === true);
        if (detach) {
          for (const id of ids) await dropRef(core, rel.model, id, rel.field, record.id);
        } else {
          await deleteMany(core, rel.model, ids, null);
        }
      }
    }
  }
}
