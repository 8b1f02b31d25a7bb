/**
 * The change log: every create, update and delete made through the API becomes one
 * `core.objectchange` entry, as NetBox records them (docs/api-behaviour.md, Inventory: change
 * log). Entries are written after the objects' own commit, in as few atomics as the store
 * allows (one batch per request, never one write per object), then the log is pruned to its
 * bounds. A failure to record is logged and never fails the write it describes.
 */
import type { ObjectWrite, StoredObject } from "../../../storage/ports.ts";
import { OBJECT_CHANGE_MODEL } from "../models/changes.ts";
import type { ModelDef } from "../types.ts";
import { type EngineCore, fieldEntries } from "./core.ts";
export type { ChangelogBounds } from "./core.ts";
import { stateOf } from "./index_state.ts";
import { TAG_MODEL } from "./registry.ts";
import { displayOf } from "./render.ts";

/** Who made the changes of one API request, and the request's id (shared by its entries). */
export interface ChangeRequest {
  requestId: string;
  userName: string;
}

export interface Change {
  model: string;
  action: "create" | "update" | "delete";
  before: StoredObject | null;
  after: StoredObject | null;
  /** The client's `changelog_message` ("" when none). */
  message: string;
}

const AGE_SWEEP_EVERY_MS = 60_000;
/** Entries deleted per atomic-sized batch while pruning, and at most per prune. */
const PRUNE_PAGE = 500;
const PRUNE_MAX = 5_000;

/**
 * The parent an entry also belongs to, as NetBox's related_object: a component's device or VM,
 * an IP's or MAC's interface. Its changes then show on the parent's page too.
 */
const RELATED: Record<
  string,
  { field: string; model: string } | { typeField: string; idField: string }
> = {
  "dcim.interface": { field: "device", model: "dcim.device" },
  "virtualization.vminterface": {
    field: "virtual_machine",
    model: "virtualization.virtualmachine",
  },
  "virtualization.virtualdisk": {
    field: "virtual_machine",
    model: "virtualization.virtualmachine",
  },
  "ipam.ipaddress": { typeField: "assigned_object_type", idField: "assigned_object_id" },
  "dcim.macaddress": { typeField: "assigned_object_type", idField: "assigned_object_id" },
};

function relatedOf(model: string, r: StoredObject): [string | null, number | null] {
  const rel = RELATED[model];
  if (!rel) return [null, null];
  if ("field" in rel) {
    return typeof r[rel.field] === "number" ? [rel.model, r[rel.field] as number] : [null, null];
  }
  const t = r[rel.typeField];
  const i = r[rel.idField];
  return typeof t === "string" && typeof i === "number" ? [t, i] : [null, null];
}

/**
 * NetBox's serialize_object: the stored fields (references as ids, tags as names, custom fields
 * as stored), without `id`, `created` and `last_updated`. Secrets (write-only), internal
 * (hidden) and engine-kept read-only fields such as a generated key are never copied; counts and
 * resolved fields (config_context, nested lists) are all declared read-only.
 */
function snapshot(
  def: ModelDef,
  record: StoredObject,
  tagNames: Map<number, string>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of snapshotFields(def)) out[name] = record[name] ?? null;
  if (def.customFields !== false) out.custom_fields = record.custom_fields ?? {};
  if (def.tags !== false) {
    out.tags = ((record.tags as number[] | undefined) ?? [])
      .map((id) => tagNames.get(id) ?? String(id))
      .sort();
  }
  return out;
}

const snapshotted = new WeakMap<ModelDef, readonly string[]>();

/**
 * The fields snapshot() copies, worked out once per model (every logged change of a bulk write
 * walked the model's field definitions and their flags again; docs/sync.md, "Writes: round 9").
 */
function snapshotFields(def: ModelDef): readonly string[] {
  let names = snapshotted.get(def);
  if (!names) {
    snapshotted.set(
      def,
      names = fieldEntries(def).filter(([, f]) =>
        !(f.compute || f.hidden || f.writeOnly || f.readOnly) &&
        f.type !== "gfk" // its type and id fields are stored fields of their own
      ).map(([name]) => name),
    );
  }
  return names;
}

/** The fields of `before` whose value `after` does not share (an update's stored pre-data). */
function changedFields(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(before)) {
    const w = after[k];
    if (v === w) continue;
    if (typeof v === "object" && v !== null && JSON.stringify(v) === JSON.stringify(w)) continue;
    out[k] = v;
  }
  return out;
}

/** Records `changes` under one request (nothing without one: internal writes are not logged). */
export async function recordChanges(
  core: EngineCore,
  request: ChangeRequest | undefined,
  changes: Change[],
): Promise<void> {
  if (!request || changes.length === 0 || !core.registry.has(OBJECT_CHANGE_MODEL)) return;
  const logged = changes.filter((c) => core.registry.definition(c.model).changelog !== false);
  if (logged.length === 0) return;
  try {
    const tagIds = new Set<number>();
    for (const c of logged) {
      for (const r of [c.before, c.after]) {
        for (const id of (r?.tags as number[] | undefined) ?? []) tagIds.add(id);
      }
    }
    const tagNames = new Map<number, string>();
    if (tagIds.size > 0) {
      for (const t of await core.store.getMany(TAG_MODEL, [...tagIds])) {
        tagNames.set(t.id, String(t.name));
      }
    }
    const def = core.registry.definition(OBJECT_CHANGE_MODEL);
    const time = new Date(core.now()).toISOString();
    const limit = core.store.maxRecordBytes;
    // Each entry names the batch's ids; the last one alone is indexed by request_id
    // (models/changes.ts), and goes first, into the atomic that reserves the ids: a batch whose
    // later atomics failed is still found by its request.
    const entriesFrom = (first: number): ObjectWrite[] =>
      logged.map((c, i) => {
        const objectDef = core.registry.definition(c.model);
        const subject = (c.after ?? c.before)!;
        const [relatedType, relatedId] = relatedOf(c.model, subject);
        const entry: StoredObject = {
          id: first + i,
          time,
          user_name: request.userName,
          request_id: request.requestId,
          request_batch: [first, first + logged.length - 1],
          action: c.action,
          changed_object_type: c.model,
          changed_object_id: subject.id,
          related_object_type: relatedType,
          related_object_id: relatedId,
          object_repr: displayOf(objectDef, subject).slice(0, 200),
          message: c.message,
          pre: null,
          postchange_data: null,
        };
        const after = c.after ? snapshot(objectDef, c.after, tagNames) : null;
        entry.postchange_data = after;
        if (c.before) {
          const before = snapshot(objectDef, c.before, tagNames);
          entry.pre = after ? changedFields(before, after) : before;
        }
        // An object near the store's size limit: its entry keeps what fits.
        // Measured once when it fits (each measure is a JSON string of the entry).
        if (core.store.recordSize(entry) > limit) {
          entry.pre = null;
          if (core.store.recordSize(entry) > limit) entry.postchange_data = null;
        }
        return {
          model: OBJECT_CHANGE_MODEL,
          id: entry.id,
          prev: null,
          next: { record: entry, ...stateOf(core.store, def, entry) },
        };
      }).reverse();
    // The entries' ids are reserved by the atomic writing the first of them (one atomic fewer
    // per request than reserving them first).
    const written = await core.store.createWithFreshIds(
      OBJECT_CHANGE_MODEL,
      logged.length,
      entriesFrom,
    );
    if (!written.ok) throw new Error("the change log's atomic failed");
    await prune(core);
  } catch (error) {
    core.logger.log("error", "could not record changes in the change log", {
      request_id: request.requestId,
      count: logged.length,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/** Deletes the oldest entries beyond the bounds (at most PRUNE_MAX per call). */
async function prune(core: EngineCore): Promise<void> {
  const state = core.changelog;
  if (!state) return;
  const { store } = core;
  let budget = PRUNE_MAX;
  let excess = (await store.count(OBJECT_CHANGE_MODEL)) - state.bounds.maxEntries;
  while (excess > 0 && budget > 0) {
    const oldest = await store.page(OBJECT_CHANGE_MODEL, 0, Math.min(excess, PRUNE_PAGE), false);
    if (oldest.length === 0) break;
    await deleteEntries(core, oldest);
    excess -= oldest.length;
    budget -= oldest.length;
  }
  const now = core.now();
  if (state.bounds.retentionDays === 0 || now - state.lastAgeSweep < AGE_SWEEP_EVERY_MS) return;
  state.lastAgeSweep = now;
  const cutoff = now - state.bounds.retentionDays * 86_400_000;
  while (budget > 0) {
    const oldest = await store.page(OBJECT_CHANGE_MODEL, 0, PRUNE_PAGE, false);
    const expired = oldest.filter((r) => Date.parse(String(r.time)) < cutoff);
    if (expired.length === 0) break;
    await deleteEntries(core, expired);
    budget -= expired.length;
    if (expired.length < oldest.length) break;
  }
}

async function deleteEntries(core: EngineCore, entries: StoredObject[]): Promise<void> {
  const def = core.registry.definition(OBJECT_CHANGE_MODEL);
  const writes: ObjectWrite[] = [];
  // One batched read of the versions: a write request past the bound prunes as many entries
  // as it logged (500 for a bulk write), and reading them one after another cost the first
  // run of a large estate a wait per entry (docs/sync.md, "At 100,000 guests").
  const found = await core.store.getVersioned(OBJECT_CHANGE_MODEL, entries.map((e) => e.id));
  for (const current of found) {
    if (!current) continue;
    writes.push({
      model: OBJECT_CHANGE_MODEL,
      id: current.record.id,
      prev: {
        record: current.record,
        ...stateOf(core.store, def, current.record),
        version: current.version,
      },
      next: null,
    });
  }
  // A concurrent pruner may have taken some: its group fails and the next prune tries again.
  for (const group of core.store.plan(writes)) await core.store.commit(group);
}
