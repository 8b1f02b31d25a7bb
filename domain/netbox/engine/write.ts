/**
 * Creates and updates, all-or-nothing per request: every item prepared and validated, unique
 * constraints checked (against the store and within the batch), size checked, then written
 * in as few atomics as the store allows; references a concurrent delete removed meanwhile
 * are undone (create) or follow that delete's rule (update). A write whose later atomic fails
 * undoes the ones that committed (rollbackCreates, rollbackUpdates). `afterSave` hooks run last.
 */
import type { IndexValue, ObjectWrite, StoredObject } from "../../../storage/ports.ts";
import { matchesIfMatch } from "../etag.ts";
import { MESSAGES } from "../fields.ts";
import type {
  AuthInfo,
  FieldErrors,
  HookContext,
  ModelDef,
  UniqueDef,
  WriteResult,
} from "../types.ts";
import {
  constraintName,
  type EngineCore,
  fieldEntries,
  indexedKey,
  isEmpty,
  newCache,
  readUncached,
  type RequestCache,
} from "./core.ts";
import { type ChangeRequest, recordChanges } from "./changelog.ts";
import { deleteMany } from "./delete.ts";
import { indexedString, type IndexState, stateOf } from "./index_state.ts";
import { sortByDefaultOrdering } from "./paging.ts";
import { dropRef } from "./patch.ts";
import { prepare, type Prepared } from "./prepare.ts";
import { danglingRefs, type Ref } from "./references.ts";
import { TAG_MODEL } from "./registry.ts";

export interface WriteOptions {
  /**
   * If-Match ETags (single updates): checked against the record read for the write, whose
   * commit is version-checked, so a concurrent edit in between is caught on the retry.
   */
  ifMatch?: readonly string[];
  /** The API request making the write: its changes go to the change log (none without). */
  change?: ChangeRequest;
  /**
   * A bulk (list) update passes over ids that name no object, as NetBox's bulk views do: they
   * filter the request's ids through the queryset (docs/api-behaviour.md, Inventory: errors).
   */
  skipMissing?: boolean;
  /**
   * A bulk (list) PUT or PATCH as NetBox 4.6's bulk view answers it (docs/api-behaviour.md,
   * Inventory: errors): ids that name no object are passed over, an id given twice is updated
   * once with its last item (the view maps the items by id), the answer lists the objects in
   * the model's default ordering (it re-reads them through the queryset), and a refusal is the
   * error object of the first refused object in that ordering (each object is validated and
   * saved in turn, and the first error ends the request), not a list.
   */
  bulkView?: boolean;
}

async function uniqueMessage(
  core: EngineCore,
  def: ModelDef,
  u: UniqueDef,
  holder: number,
  batch: ReadonlyMap<number, StoredObject>,
): Promise<string> {
  if (typeof u.message === "function") {
    const model = core.registry.nameOf(def);
    const record = batch.get(holder) ?? (await core.store.get(model, holder))?.record ?? null;
    return await u.message(record, core.api);
  }
  if (u.message) return u.message;
  if (u.fields.length === 1) {
    return `${def.verbose} with this ${u.fields[0].replaceAll("_", " ")} already exists.`;
  }
  return `The fields ${u.fields.join(", ")} must make a unique set.`;
}

/** A referenced id as a write sends it: a number, or `{id: n}` alone. */
function refIdOf(value: unknown): number | null {
  if (typeof value === "number" && Number.isInteger(value)) return value;
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const keys = Object.keys(value);
    const id = (value as { id?: unknown }).id;
    if (keys.length === 1 && typeof id === "number" && Number.isInteger(id)) return id;
  }
  return null;
}

/**
 * Reads every object a batch refers to by id (FKs, m2m members, tags, generic FKs) in one
 * batched read per model into the request cache, before the items are prepared one by one:
 * 500 interfaces of 500 VMs made 500 reads one after another.
 */
async function prefetchRefs(
  core: EngineCore,
  def: ModelDef,
  inputs: readonly unknown[],
  cache: RequestCache,
): Promise<void> {
  if (inputs.length < 2) return;
  const wanted = new Map<string, Set<number>>();
  const want = (model: string | undefined, value: unknown) => {
    if (!model || !core.registry.has(model)) return;
    const id = refIdOf(value);
    if (id === null || id <= 0) return;
    let ids = wanted.get(model);
    if (!ids) wanted.set(model, ids = new Set());
    ids.add(id);
  };
  for (const input of inputs) {
    if (!input || typeof input !== "object" || Array.isArray(input)) continue;
    const data = input as Record<string, unknown>;
    for (const [name, f] of fieldEntries(def)) {
      if (f.type === "fk") want(f.model, data[name]);
      else if (f.type === "m2m" && Array.isArray(data[name])) {
        for (const v of data[name] as unknown[]) want(f.model, v);
      } else if (f.type === "gfk" && typeof data[f.typeField!] === "string") {
        want(data[f.typeField!] as string, data[f.idField!]);
      }
    }
    if (def.tags !== false) {
      for (const key of ["tags", "add_tags", "remove_tags"]) {
        if (Array.isArray(data[key])) {
          for (const v of data[key] as unknown[]) want(TAG_MODEL, v);
        }
      }
    }
  }
  const fetch = (wanted: Map<string, Set<number>>) =>
    Promise.all([...wanted].map(async ([model, ids]) => {
      // Through the store's read cache: the check for references deleted meanwhile, made after
      // the commit (danglingRefs), and the answer's nested objects read the same records, and a
      // model the request does not write (a new interface's VM) keeps them cached for both.
      const found = await readUncached(core.store, cache, model, ids);
      return found.map((record) => ({ model, record }));
    }));
  const referred = (await fetch(wanted)).flat();
  // One hop further: the object a referred record is attached to (an IP's or MAC's interface),
  // which the rules of a primary IP or primary MAC read for every item (ctx.read).
  wanted.clear();
  for (const { model, record } of referred) {
    for (const f of Object.values(core.registry.definition(model).fields)) {
      if (f.type === "gfk" && typeof record[f.typeField!] === "string") {
        want(record[f.typeField!] as string, record[f.idField!]);
      }
    }
  }
  if (wanted.size > 0) await fetch(wanted);
}

/**
 * Reads the index values the model's rules look up per item (ModelDef.batchIndexReads) for the
 * whole batch at once, into the request cache that HookContext.byIndex answers from.
 */
async function prefetchIndexed(
  core: EngineCore,
  def: ModelDef,
  inputs: readonly unknown[],
  cache: RequestCache,
): Promise<void> {
  if (inputs.length < 2) return;
  for (const read of def.batchIndexReads ?? []) {
    const values = new Set<string>();
    for (const input of inputs) {
      if (!input || typeof input !== "object" || Array.isArray(input)) continue;
      const v = read.value(input as Record<string, unknown>);
      if (typeof v === "string" && indexedString(core.store, v)) {
        values.add(v);
      }
    }
    if (values.size < 2) continue;
    const asked = [...values];
    const lists = await core.store.idsByIndexMany(read.model, read.field, asked);
    asked.forEach((v, i) => cache.indexed.set(indexedKey(read.model, read.field, v), lists[i]));
  }
}

/**
 * Unique checks against the store (and the batch itself) before committing. The store's
 * holders of every value combination are read together first (a bulk write of 500 objects
 * made 500 reads one after another).
 */
async function checkUnique(
  core: EngineCore,
  def: ModelDef,
  drafts: StoredObject[],
): Promise<Array<FieldErrors | null>> {
  const model = core.registry.nameOf(def);
  const maxLength = core.store.maxIndexedLength;
  type Item = { u: UniqueDef; key: string; long?: string; lookup?: number };
  const lookups: Array<{ constraint: string; values: IndexValue[] }> = [];
  const lookupAt = new Map<string, number>();
  const plans: Item[][] = drafts.map((draft) => {
    const items: Item[] = [];
    for (const u of def.unique ?? []) {
      const values = u.fields.map((f) =>
        u.ci && typeof draft[f] === "string" ? (draft[f] as string).toLowerCase() : draft[f]
      );
      if (values.some(isEmpty) || (u.when && !u.when(draft))) continue;
      const long = u.fields.find((_f, i) =>
        typeof values[i] === "string" && (values[i] as string).length > maxLength
      );
      const key = JSON.stringify([constraintName(u), values]);
      if (long) {
        items.push({ u, key, long });
        continue;
      }
      let at = lookupAt.get(key);
      if (at === undefined) {
        at = lookups.push({ constraint: constraintName(u), values: values as IndexValue[] }) - 1;
        lookupAt.set(key, at);
      }
      items.push({ u, key, lookup: at });
    }
    return items;
  });
  const holders = lookups.length ? await core.store.idsByUnique(model, lookups) : [];
  const seen = new Map<string, number>();
  const batch = new Map(drafts.map((d) => [d.id, d]));
  const out: Array<FieldErrors | null> = [];
  for (const [i, draft] of drafts.entries()) {
    let errors: FieldErrors | null = null;
    for (const { u, key, long, lookup } of plans[i]) {
      if (long) {
        // Unique values are key parts in the store: refuse rather than fail in storage.
        errors ??= {};
        (errors[long] ??= []).push(MESSAGES.maxLength(maxLength));
        continue;
      }
      const holder = seen.get(key) ?? holders[lookup!];
      if (holder !== null && holder !== draft.id) {
        errors ??= {};
        const field = u.errorField ?? u.fields[u.fields.length - 1];
        (errors[field] ??= []).push(await uniqueMessage(core, def, u, holder, batch));
      }
      seen.set(key, draft.id);
    }
    out.push(errors);
  }
  return out;
}

function sizeError(core: EngineCore, draft: StoredObject): FieldErrors | null {
  const limit = core.store.maxRecordBytes;
  if (core.store.recordSize(draft) > limit) {
    return { non_field_errors: [`The object is too large to store (limit ${limit} bytes).`] };
  }
  return null;
}

/** The first refused item's errors (a bulk create that saves its items in turn). */
function firstRefused(errors: FieldErrors[]): FieldErrors {
  return errors.find((e) => Object.keys(e).length > 0) ?? {};
}

/**
 * The errors of the refused object a NetBox bulk view meets first: it walks the objects in the
 * model's default ordering, as they stood before the request. `records[i]` is the stored object
 * `errors[i]` is about (null: none, passed over).
 */
async function firstInOrder(
  core: EngineCore,
  def: ModelDef,
  records: ReadonlyArray<StoredObject | null>,
  errors: FieldErrors[],
): Promise<FieldErrors> {
  const refused = new Map<StoredObject, FieldErrors>();
  records.forEach((r, i) => {
    if (r && Object.keys(errors[i]).length) refused.set(r, errors[i]);
  });
  const ordered = [...refused.keys()];
  await sortByDefaultOrdering(core, def, ordered);
  return ordered.length ? refused.get(ordered[0])! : {};
}

/**
 * The checks every prepared batch passes before it is written: uniqueness, then the before-save
 * hooks, then the stored size. Null when all may be written, else one error object per draft.
 */
async function checkDrafts(
  core: EngineCore,
  def: ModelDef,
  prepared: Prepared[],
): Promise<FieldErrors[] | null> {
  const uniq = await checkUnique(core, def, prepared.map((p) => p.draft));
  if (uniq.some((e) => e !== null)) return uniq.map((e) => e ?? {});
  if (def.beforeSave) {
    for (const p of prepared) await def.beforeSave(p.draft, p.ctx);
  }
  const sizes = prepared.map((p) => sizeError(core, p.draft));
  if (sizes.some((e) => e !== null)) return sizes.map((e) => e ?? {});
  return null;
}

/**
 * Deletes what a create that then failed had committed (its writes, all of `model`). An object
 * another writer referred to meanwhile is deleted as a delete request would delete it (its
 * referrers follow CASCADE and SET_NULL; a PROTECT reference keeps it, logged), never from under
 * a reference (docs/netbox-rules.md).
 */
async function rollbackCreates(
  core: EngineCore,
  model: string,
  committed: ObjectWrite[],
): Promise<void> {
  // Read together, as rollbackUpdates reads (no ids: no KV call).
  const currents = await core.store.getVersioned(model, committed.map((w) => w.id));
  const referred = await referredTo(core, model, committed.map((w) => w.id));
  const deletes: ObjectWrite[] = [];
  committed.forEach((w, at) => {
    const cur = currents[at];
    if (!cur || !w.next || referred.has(w.id)) return;
    deletes.push({
      model,
      id: w.id,
      prev: { ...w.next, record: cur.record, version: cur.version },
      next: null,
    });
  });
  for (const group of core.store.plan(deletes)) await core.store.commit(group);
  // One by one: a PROTECT reference keeps the object it protects, and only that one (one gone
  // meanwhile is passed over).
  for (const id of referred) {
    const r = await deleteMany(core, model, [id], null, { skipMissing: true });
    if (r.ok) continue;
    core.logger.log("warning", "kept an object of a failed create that another object protects", {
      model,
      id,
      reason: r.reason,
    });
  }
}

/** Which of `ids` (objects of `model`) some object refers to now, by any reference. */
async function referredTo(core: EngineCore, model: string, ids: number[]): Promise<Set<number>> {
  const out = new Set<number>();
  for (const rel of core.registry.referrersOf(model)) {
    const values = rel.def.type === "gfk" ? ids.map((id) => `${model}:${id}`) : ids;
    const lists = await core.store.idsByIndexMany(rel.model, rel.field, values);
    lists.forEach((found, at) => {
      if (found.length > 0) out.add(ids[at]);
    });
  }
  return out;
}

/**
 * Puts back what an update that then failed had already committed (an earlier group, or an
 * earlier attempt), so a refused or failed bulk update leaves the store as it found it and writes
 * nothing the change log would not show. A record changed again since (it no longer holds this
 * update's draft) is left as that other writer made it; a group the store refuses (a unique value
 * the update freed and another writer took) stays as it is.
 */
async function rollbackUpdates(
  core: EngineCore,
  def: ModelDef,
  model: string,
  done: readonly Prepared[],
): Promise<void> {
  // Nothing committed (the common refusal, on a first attempt): getVersioned of no ids makes no
  // KV call, danglingRefs of no records reads nothing, and there is nothing to write.
  const currents = await core.store.getVersioned(model, done.map((p) => p.draft.id));
  type Back = {
    before: StoredObject;
    draft: StoredObject;
    cur: { record: StoredObject; version: string };
  };
  const back: Back[] = [];
  done.forEach((p, at) => {
    const cur = currents[at];
    const before = p.ctx.existing;
    if (!cur || !before || JSON.stringify(cur.record) !== JSON.stringify(p.draft)) return;
    back.push({ before, draft: p.draft, cur });
  });
  // A reference the update let go of, to an object deleted since (that delete found no
  // reference here to refuse or follow), is not put back: the record stays as the update made
  // it, as one changed since stays as its writer made it (docs/netbox-rules.md).
  const released = (list: Back[]) =>
    danglingRefs(core, def, list.map(({ before, draft }) => ({ record: before, before: draft })));
  const gone = await released(back);
  const restored = back.filter(({ before }) => !gone.has(before.id));
  const writes: ObjectWrite[] = restored.map(({ before, cur }) => ({
    model,
    id: before.id,
    prev: { record: cur.record, ...stateOf(core.store, def, cur.record), version: cur.version },
    next: { record: before, ...stateOf(core.store, def, before) },
  }));
  const put = new Set<number>();
  for (const group of core.store.plan(writes)) {
    if ((await core.store.commit(group)).ok) { for (const w of group) put.add(w.id); }
  }
  // A delete that came between that read and these commits: settled as an update's are.
  const late = await released(restored.filter(({ before }) => put.has(before.id)));
  await settleDangling(core, def, model, late);
}

/**
 * Settles references to objects a concurrent delete removed (`dangling`, by record id) as that
 * delete's own follow-up would have: CASCADE (or a required FK) takes the record along, anything
 * else loses the reference.
 */
async function settleDangling(
  core: EngineCore,
  def: ModelDef,
  model: string,
  dangling: ReadonlyMap<number, Ref[]>,
): Promise<void> {
  for (const [id, refs] of dangling) {
    const goes = refs.some((x) => {
      const f = def.fields[x.field];
      if (!f || f.type === "m2m") return false;
      return f.onDelete === "cascade" || (f.type === "fk" && f.nullable !== true);
    });
    if (goes) await deleteMany(core, model, [id], null);
    else for (const x of refs) await dropRef(core, model, id, x.field, x.id);
    core.logger.log("warning", "dropped references to objects deleted concurrently", {
      model,
      id,
      refs,
    });
  }
}

/** The model's batch hook after a whole create/update request (best-effort, as afterSave). */
async function afterSaveBatch(
  core: EngineCore,
  def: ModelDef,
  records: StoredObject[],
  op: "create" | "update",
): Promise<void> {
  if (!def.afterSaveBatch || records.length === 0) return;
  try {
    await def.afterSaveBatch(records, core.api, op);
  } catch (error) {
    core.logger.log("error", "after-save batch hook failed", {
      model: core.registry.nameOf(def),
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

async function afterSave(
  core: EngineCore,
  def: ModelDef,
  record: StoredObject,
  ctx: HookContext,
): Promise<void> {
  if (!def.afterSave) return;
  try {
    await def.afterSave(record, ctx);
  } catch (error) {
    core.logger.log("error", "after-save hook failed", {
      model: core.registry.nameOf(def),
      id: record.id,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/**
 * Commits a write's groups (`plan`), each in its own atomic with every check it carries, handing
 * atomic k+1 to the store while atomic k commits (docs/sync.md, "Writes: round 8"): the app
 * builds the next atomic, or serves another request, while KV's worker writes. Every group is
 * tried and settled before the caller goes on; `committed` holds the writes of the groups that
 * committed (whatever their order), `failed` whether one's check failed, `error` a group's throw.
 */
async function commitGroups(
  core: EngineCore,
  groups: readonly ObjectWrite[][],
): Promise<{ committed: ObjectWrite[]; failed: boolean; error?: unknown }> {
  const results = await Promise.allSettled(groups.map((group) => core.store.commit(group)));
  const committed: ObjectWrite[] = [];
  let failed = false;
  let error: unknown = undefined;
  results.forEach((result, i) => {
    if (result.status === "rejected") error ??= result.reason ?? new Error("commit failed");
    else if (result.value.ok) committed.push(...groups[i]);
    else failed = true;
  });
  return error === undefined ? { committed, failed } : { committed, failed, error };
}

/**
 * Creates one or many objects, all-or-nothing. Many objects are written in as few atomics
 * as the store's limits allow (one per batch, not per object or field).
 */
export async function createMany(
  core: EngineCore,
  model: string,
  inputs: unknown[],
  auth: AuthInfo | null,
  options: WriteOptions,
): Promise<WriteResult<StoredObject[]>> {
  const def = core.registry.definition(model);
  const cache = newCache();
  if (inputs.length === 0) return { ok: true, value: [] };
  const first = await core.store.allocateIds(model, inputs.length);
  await prefetchRefs(core, def, inputs, cache);
  await prefetchIndexed(core, def, inputs, cache);
  const prepared: Prepared[] = [];
  const errors: FieldErrors[] = [];
  let failed = false;
  for (let i = 0; i < inputs.length; i++) {
    const r = await prepare(core, def, inputs[i], null, false, auth, cache, first + i);
    if (!r.ok) {
      failed = true;
      errors.push(r.errors);
      continue;
    }
    prepared.push(r.prepared);
    errors.push({});
  }
  if (failed) {
    return {
      ok: false,
      reason: "invalid",
      errors: def.sequentialBulkCreate ? firstRefused(errors) : errors,
    };
  }
  const refused = await checkDrafts(core, def, prepared);
  if (refused) {
    return {
      ok: false,
      reason: "invalid",
      errors: def.sequentialBulkCreate ? firstRefused(refused) : refused,
    };
  }
  const writes: ObjectWrite[] = prepared.map((p) => ({
    model,
    id: p.draft.id,
    prev: null,
    next: { record: p.draft, ...stateOf(core.store, def, p.draft) },
  }));
  const { committed, failed: conflicted, error } = await commitGroups(
    core,
    core.store.plan(writes),
  );
  if (error !== undefined) {
    await rollbackCreates(core, model, committed);
    throw error;
  }
  if (conflicted) {
    await rollbackCreates(core, model, committed);
    // A concurrent writer took a unique value (or an id): report it like a validation error.
    const again = await checkUnique(core, def, prepared.map((p) => p.draft));
    if (again.some((e) => e !== null)) {
      return { ok: false, reason: "invalid", errors: again.map((e) => e ?? {}) };
    }
    return {
      ok: false,
      reason: "conflict",
      detail: "The object was changed concurrently; please retry.",
    };
  }
  // A target deleted between validation and commit: undo, and answer as validation would.
  const dangling = await danglingRefs(
    core,
    def,
    prepared.map((p) => ({ record: p.draft, before: null })),
  );
  if (dangling.size > 0) {
    await rollbackCreates(core, model, committed);
    return {
      ok: false,
      reason: "invalid",
      errors: prepared.map((p) => {
        const e: FieldErrors = {};
        for (const x of dangling.get(p.draft.id) ?? []) {
          const f = def.fields[x.field];
          const key = f?.type === "gfk" ? f.idField! : x.field;
          (e[key] ??= []).push(MESSAGES.pk(x.id));
        }
        return e;
      }),
    };
  }
  await recordChanges(
    core,
    options.change,
    prepared.map((p) => ({
      model,
      action: "create",
      before: null,
      after: p.draft,
      message: p.message,
    })),
  );
  const out: StoredObject[] = [];
  for (const p of prepared) await afterSave(core, def, p.draft, p.ctx);
  await afterSaveBatch(core, def, prepared.map((p) => p.draft), "create");
  // What was committed is the answer, unless a hook ran that may have changed it since.
  const reread = def.afterSave !== undefined;
  const fresh = reread ? await core.store.getMany(model, prepared.map((p) => p.draft.id)) : [];
  const byId = new Map(fresh.map((r) => [r.id, r]));
  for (const p of prepared) out.push(byId.get(p.draft.id) ?? p.draft);
  return {
    ok: true,
    value: out,
    extras: prepared.length === 1 ? prepared[0].ctx.responseExtras : undefined,
  };
}

/**
 * Updates many objects (bulk PUT/PATCH: each input carries its id), all validated first.
 */
export async function updateMany(
  core: EngineCore,
  model: string,
  inputs: Array<{ id: number; data: unknown }>,
  partial: boolean,
  auth: AuthInfo | null,
  options: WriteOptions,
): Promise<WriteResult<StoredObject[]>> {
  const def = core.registry.definition(model);
  if (options.bulkView) {
    const lastById = new Map<number, unknown>();
    for (const { id, data } of inputs) lastById.set(id, data);
    inputs = [...lastById].map(([id, data]) => ({ id, data }));
    options = { ...options, skipMissing: true };
  }
  // Groups (atomics) already committed by an earlier attempt: a conflict in a later group
  // retries only the items not yet written; an attempt that then fails (refused, throws, gives
  // up) puts them back first, so a bulk update is never left half done.
  const done: Prepared[] = [];
  const undone = async <T>(answer: T): Promise<T> => {
    await rollbackUpdates(core, def, model, done);
    return answer;
  };
  /** Ids no object has (bulk updates pass over them, `skipMissing`). */
  const missing = new Set<number>();
  let pending = inputs;
  // Attempts that wrote nothing are bounded; one that made progress shrinks `pending`.
  for (let attempt = 0; attempt < 8;) {
    const cache = newCache();
    const prepared: Array<Prepared & { version: string; prevState: IndexState }> = [];
    const errors: FieldErrors[] = [];
    let failed = false;
    // Every record read at once (one read after another made a 500-object PATCH wait 500 times).
    const currents = pending.length === 1
      ? [await core.store.get(model, pending[0].id)]
      : await core.store.getVersioned(model, pending.map((i) => i.id));
    await prefetchRefs(core, def, pending.map((i) => i.data), cache);
    await prefetchIndexed(core, def, pending.map((i) => i.data), cache);
    for (const [at, { id, data }] of pending.entries()) {
      const current = currents[at];
      if (!current && options.skipMissing) {
        missing.add(id);
        errors.push({});
        continue;
      }
      if (!current) {
        if (inputs.length === 1) return { ok: false, reason: "not_found", detail: "Not found." };
        if (done.length > 0) {
          return undone({
            ok: false,
            reason: "conflict",
            detail: "The objects were changed concurrently; please retry.",
          });
        }
        failed = true;
        errors.push({ id: [`Object with id ${id} does not exist.`] });
        continue;
      }
      if (options.ifMatch && !matchesIfMatch(current.record, options.ifMatch)) {
        return undone({ ok: false, reason: "precondition_failed", detail: "Precondition failed." });
      }
      const r = await prepare(core, def, data, current.record, partial, auth, cache, id);
      if (!r.ok) {
        failed = true;
        errors.push(r.errors);
        continue;
      }
      errors.push({});
      prepared.push({
        ...r.prepared,
        version: current.version,
        prevState: stateOf(core.store, def, current.record),
      });
    }
    if (failed) {
      if (!options.bulkView) return undone({ ok: false, reason: "invalid", errors });
      const records = currents.map((c) => c?.record ?? null);
      return undone({
        ok: false,
        reason: "invalid",
        errors: await firstInOrder(core, def, records, errors),
      });
    }
    const refused = await checkDrafts(core, def, prepared);
    if (refused) {
      if (!options.bulkView) return undone({ ok: false, reason: "invalid", errors: refused });
      const records = prepared.map((p) => p.ctx.existing ?? null);
      return undone({
        ok: false,
        reason: "invalid",
        errors: await firstInOrder(core, def, records, refused),
      });
    }
    const writes: ObjectWrite[] = prepared.map((p) => ({
      model,
      id: p.draft.id,
      prev: { record: p.ctx.existing!, ...p.prevState, version: p.version },
      next: { record: p.draft, ...stateOf(core.store, def, p.draft) },
    }));
    const outcome = await commitGroups(core, core.store.plan(writes));
    const committed = new Set(outcome.committed.map((w) => w.id));
    done.push(...prepared.filter((p) => committed.has(p.draft.id)));
    if (outcome.error !== undefined) throw await undone(outcome.error);
    if (outcome.failed) {
      if (committed.size === 0) {
        attempt++;
        // Writers contending for one record: back off a little (jittered) before retrying.
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(25, 2 ** attempt)));
      }
      pending = pending.filter((i) => !committed.has(i.id));
      continue;
    }
    // References to objects a concurrent delete removed after validation are dropped,
    // as that delete's own follow-up would (no dangling references, ever).
    const dangling = await danglingRefs(
      core,
      def,
      done.map((p) => ({ record: p.draft, before: p.ctx.existing })),
    );
    await settleDangling(core, def, model, dangling);
    await recordChanges(
      core,
      options.change,
      done.map((p) => ({
        model,
        action: "update",
        before: p.ctx.existing,
        after: p.draft,
        message: p.message,
      })),
    );
    for (const p of done) await afterSave(core, def, p.draft, p.ctx);
    await afterSaveBatch(core, def, done.map((p) => p.draft), "update");
    const order = inputs.map((i) => i.id).filter((id) => !missing.has(id));
    // The committed drafts are the answer unless something may have changed them since (a hook,
    // a dropped reference) or an id came twice.
    const written = new Map(done.map((p) => [p.draft.id, p.draft]));
    const reread = dangling.size > 0 || written.size !== order.length ||
      def.afterSave !== undefined;
    const fresh = reread
      ? await core.store.getMany(model, order)
      : order.map((id) => written.get(id)!);
    if (options.bulkView) await sortByDefaultOrdering(core, def, fresh);
    return {
      ok: true,
      value: fresh,
      extras: done.length === 1 ? done[0].ctx.responseExtras : undefined,
    };
  }
  return undone({
    ok: false,
    reason: "conflict",
    detail: "The object was changed concurrently; please retry.",
  });
}
