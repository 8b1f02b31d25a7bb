/**
 * Diff then write: compare what the hypervisor says with what the inventory holds (read in
 * bulk beforehand), then create, update and mark in bulk. Nothing is written for an object
 * whose fields already match, so a second run with nothing changed writes nothing.
 */
import { readLog } from "./ledger.ts";
import type { StageContext } from "./context.ts";
import {
  type CallFailure,
  type InventoryBody,
  type InventoryObject,
  versionAtLeast,
} from "./ports.ts";

export interface Desired {
  /** Identity of the object (never a display name alone). */
  key: string;
  body: InventoryBody;
  /** Names the object in errors ("virtual machine vm-101 (vmid 101)"). */
  label: string;
}

export interface ReconcileOptions {
  path: string;
  /** Existing objects of this endpoint, by the same identity key. */
  existing: Map<string, InventoryObject>;
  desired: Desired[];
  /** Fields written only together with a real change (timestamps such as last_synced). */
  touch?: InventoryBody;
  /**
   * Tags the sync manages on this model. Other tags (set by hand) are kept; `body.tags` lists
   * the managed ones the object should carry.
   */
  managedTags?: ReadonlySet<number>;
  /**
   * Fields written when the object is created and never again: those whose family the admin
   * owns (docs/sync.md, "Who owns a field").
   */
  createOnly?: ReadonlySet<string>;
  /** What to do with existing objects nobody wants any more: a patch (mark), delete, or keep. */
  orphan?: "keep" | "delete" | ((object: InventoryObject) => InventoryBody | null);
  /**
   * A create the inventory refused (its per-item answer given): adopt an object already there
   * (returned, written), report a conflict ("conflict": left with its owner, not a failure), or
   * null for a plain failure. Used for NetBox's unique IP space (address_space.ts).
   */
  resolveRefused?: (
    desired: Desired,
    answer: Record<string, unknown>,
  ) => Promise<InventoryObject | "conflict" | null>;
  /**
   * The fields the stage reads of the objects it gets back (those it read `existing` with):
   * the writes ask the inventory to answer only those (InventoryApi.create). Absent: whole
   * objects.
   */
  answer?: readonly string[];
}

export interface Reconciled {
  /** Every wanted object after the writes, by key. */
  objects: Map<string, InventoryObject>;
}

/** Items per bulk write, and bytes: NetBox-style APIs cap both (this app: 1,000 and 1 MiB). */
const CHUNK = 500;
const CHUNK_BYTES = 512 * 1024;

/** Splits `items` into runs of at most CHUNK items and about CHUNK_BYTES of JSON. */
function chunked<T>(items: T[]): { start: number; items: T[] }[] {
  const out: { start: number; items: T[] }[] = [];
  let start = 0;
  let bytes = 0;
  for (let i = 0; i < items.length; i++) {
    const size = JSON.stringify(items[i]).length + 1;
    if (i > start && (i - start >= CHUNK || bytes + size > CHUNK_BYTES)) {
      out.push({ start, items: items.slice(start, i) });
      start = i;
      bytes = 0;
    }
    bytes += size;
  }
  if (start < items.length) out.push({ start, items: items.slice(start) });
  return out;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** An API value reduced to what one writes: nested objects to ids, choices to values. */
export function plain(value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (Array.isArray(value)) return value.map(plain);
  if (isRecord(value)) {
    if (typeof value.id === "number" && ("url" in value || "display" in value)) return value.id;
    if ("value" in value && "label" in value && Object.keys(value).length === 2) {
      return value.value;
    }
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) out[k] = plain(value[k]);
    return out;
  }
  return value;
}

/** The id behind a rendered FK (nested object or bare id), or null. */
export function refId(value: unknown): number | null {
  if (typeof value === "number") return value;
  if (isRecord(value) && typeof value.id === "number") return value.id;
  return null;
}

const DATE = /^\d{4}-\d\d-\d\dT\d\d:\d\d/;

function canonical(value: unknown): unknown {
  if (value === undefined) return null;
  if (typeof value === "string" && DATE.test(value)) {
    const t = Date.parse(value);
    return Number.isNaN(t) ? value : `@${t}`;
  }
  if (Array.isArray(value)) {
    const items = value.map(canonical);
    return items.every((v) => typeof v === "number")
      ? [...(items as number[])].sort((a, b) => a - b)
      : items;
  }
  if (isRecord(value)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) out[k] = canonical(value[k]);
    return out;
  }
  return value;
}

export function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(plain(a))) === JSON.stringify(canonical(plain(b)));
}

function tagIds(value: unknown): number[] {
  return Array.isArray(value) ? value.map(refId).filter((v): v is number => v !== null) : [];
}

/** The changed fields of `body` against `current` (tags merged with hand-set ones). */
export function changes(
  current: InventoryObject,
  body: InventoryBody,
  managed: ReadonlySet<number> | undefined,
): InventoryBody | null {
  const patch: InventoryBody = {};
  for (const [field, wanted] of Object.entries(body)) {
    if (field === "tags" && managed) {
      const have = tagIds(current.tags);
      const keep = have.filter((id) => !managed.has(id));
      const merged = [...new Set([...keep, ...tagIds(wanted)])];
      if (!same(have, merged)) patch.tags = merged;
      continue;
    }
    if (field === "custom_fields" && isRecord(wanted)) {
      // Only the keys the sync writes: other custom fields are the admin's (NetBox merges a
      // partial custom_fields on update).
      const have = isRecord(current.custom_fields) ? current.custom_fields : {};
      const delta: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(wanted)) if (!same(have[k], v)) delta[k] = v;
      if (Object.keys(delta).length) patch.custom_fields = delta;
      continue;
    }
    if (!same(current[field], wanted)) patch[field] = wanted;
  }
  return Object.keys(patch).length ? patch : null;
}

/**
 * On an inventory offering NetBox 4.6's `add_tags`/`remove_tags`, an update's tag change is sent
 * as those (the tags to add, the sync's own tags to take off), never as the whole list: a tag an
 * admin sets between the sync's read and its write is never clobbered.
 */
function tagDelta(
  ctx: StageContext,
  current: InventoryObject,
  patch: InventoryBody | null,
): InventoryBody | null {
  if (!patch || !Array.isArray(patch.tags)) return patch;
  if (!versionAtLeast(ctx.inv.apiVersion?.() ?? null, 4, 6)) return patch;
  const have = new Set(tagIds(current.tags));
  const next = new Set(tagIds(patch.tags));
  const { tags: _whole, ...rest } = patch;
  const add = [...next].filter((id) => !have.has(id));
  const remove = [...have].filter((id) => !next.has(id));
  return {
    ...rest,
    ...(add.length ? { add_tags: add } : {}),
    ...(remove.length ? { remove_tags: remove } : {}),
  };
}

/** Attach the object an inventory failure was about, so the error frame can name it. */
function nameObject(error: unknown, labels: string[]): never {
  if (error && typeof error === "object") {
    const failure = error as CallFailure & { itemIndex?: number };
    if (typeof failure.itemIndex === "number" && labels[failure.itemIndex] && !failure.object) {
      failure.object = labels[failure.itemIndex];
    } else if (!failure.object && labels.length === 1) failure.object = labels[0];
  }
  throw error;
}

function itemErrorsOf(error: unknown, count: number): Record<string, unknown>[] | null {
  const failure = error as { itemErrors?: unknown; fieldErrors?: unknown } | null;
  const list = failure?.itemErrors;
  if (Array.isArray(list) && list.length === count) return list;
  // One item refused with one error object: that object is the item's answer.
  const one = failure?.fieldErrors;
  return count === 1 && one && typeof one === "object" ? [one as Record<string, unknown>] : null;
}

/**
 * A refusal of several items that does not say which: NetBox's bulk update answers the errors
 * of the first object it refused alone (docs/sync.md, "Bulk writes on NetBox").
 */
function unplacedRefusal(error: unknown, count: number): boolean {
  const failure = error as { refused?: boolean; fieldErrors?: unknown } | null;
  return count > 1 && failure?.refused === true && failure.fieldErrors !== undefined;
}

/**
 * A bulk update's answer paired with its items by id: NetBox answers the objects in the model's
 * ordering (its bulk view re-reads them through the queryset), not in the request's, and leaves
 * out ids no object has any more (null here, as a refused item).
 */
function pairedById(
  items: ReadonlyArray<{ id: number }>,
  answered: InventoryObject[],
): (InventoryObject | null)[] {
  const byId = new Map(answered.map((o) => [o.id, o]));
  return items.map((item) => byId.get(item.id) ?? null);
}

/**
 * Writes in chunks. When the inventory refuses some items of a chunk (one error per item, as
 * NetBox answers a bulk write), those are reported one by one and the rest is written again:
 * one bad object never holds back the others. The answer is aligned with `items` (null for
 * a refused item).
 */
async function inChunks<T, R>(
  ctx: StageContext,
  items: T[],
  labels: string[],
  write: (chunk: T[]) => Promise<R[]>,
  resolve?: (index: number, answer: Record<string, unknown>) => Promise<R | "conflict" | null>,
): Promise<(R | null)[]> {
  const out: (R | null)[] = [];
  // Writes the items at `at` (indexes into `items`); refused ones are resolved or reported, and
  // the rest written again, which may meet a new refusal (a concurrent run took a value meanwhile).
  const attempt = async (at: number[]): Promise<(R | null)[]> => {
    try {
      return await write(at.map((k) => items[k]));
    } catch (error) {
      if (unplacedRefusal(error, at.length) && !ctx.signal.aborted) {
        // Each half is tried on its own until the refused items stand alone; a refused
        // request wrote nothing, so the good items are written by the halves that pass.
        const half = Math.ceil(at.length / 2);
        return [...await attempt(at.slice(0, half)), ...await attempt(at.slice(half))];
      }
      const perItem = itemErrorsOf(error, at.length);
      if (!perItem || ctx.signal.aborted) {
        const failure = error as { itemIndex?: number };
        if (typeof failure?.itemIndex === "number") failure.itemIndex = at[failure.itemIndex];
        nameObject(error, labels);
      }
      const bad = new Set<number>();
      perItem.forEach((e, pos) => {
        if (e && Object.keys(e).length) bad.add(pos);
      });
      if (bad.size === 0) nameObject(error, labels);
      const resolved = new Map<number, R>();
      for (const pos of bad) {
        const index = at[pos];
        const outcome = resolve ? await resolve(index, perItem[pos]) : null;
        if (outcome === "conflict") continue;
        if (outcome !== null) {
          resolved.set(pos, outcome);
          continue;
        }
        const refused = Object.assign(
          Object.create(Object.getPrototypeOf(error)),
          error,
          { object: labels[index], bodyExcerpt: JSON.stringify(perItem[pos]).slice(0, 300) },
        );
        refused.message = `${(error as Error).message.split(": HTTP")[0]}: HTTP ${
          (error as CallFailure).status
        }, the inventory answered ${JSON.stringify(perItem[pos]).slice(0, 300)}`;
        ctx.itemFailed(labels[index], refused);
      }
      const good = at.map((_, pos) => pos).filter((pos) => !bad.has(pos));
      const written = good.length ? await attempt(good.map((pos) => at[pos])) : [];
      const results: (R | null)[] = at.map((_, pos) => resolved.get(pos) ?? null);
      good.forEach((pos, k) => results[pos] = written[k] ?? null);
      return results;
    }
  };
  for (const { start: i, items: chunk } of chunked(items)) {
    out.push(...await attempt(chunk.map((_, k) => i + k)));
  }
  return out;
}

/** `body` with the touch fields; custom fields are merged key by key, not replaced. */
function withTouch(body: InventoryBody, touch: InventoryBody | undefined): InventoryBody {
  if (!touch) return body;
  const out = { ...body, ...touch };
  if (isRecord(body.custom_fields) && isRecord(touch.custom_fields)) {
    out.custom_fields = { ...body.custom_fields, ...touch.custom_fields };
  }
  return out;
}

export async function reconcile(ctx: StageContext, options: ReconcileOptions): Promise<Reconciled> {
  const objects = new Map<string, InventoryObject>();
  const creates: Desired[] = [];
  const updates: Update[] = [];
  for (const desired of options.desired) {
    const current = options.existing.get(desired.key);
    if (!current) {
      creates.push(desired);
      continue;
    }
    const body = options.createOnly?.size
      ? Object.fromEntries(
        Object.entries(desired.body).filter(([field]) => !options.createOnly!.has(field)),
      )
      : desired.body;
    const patch = tagDelta(ctx, current, changes(current, body, options.managedTags));
    if (patch) {
      updates.push({
        desired,
        current,
        body,
        patch: { id: current.id, ...withTouch(patch, options.touch) },
      });
    } else {
      ctx.result.unchanged++;
      objects.set(desired.key, current);
    }
  }
  const wanted = new Set(options.desired.map((d) => d.key));
  const orphans = [...options.existing].filter(([key]) => !wanted.has(key));
  const deletes: InventoryObject[] = [];
  const marks: { object: InventoryObject; patch: InventoryBody & { id: number } }[] = [];
  for (const [, object] of orphans) {
    if (options.orphan === "delete") deletes.push(object);
    else if (typeof options.orphan === "function") {
      const patch = options.orphan(object);
      const delta = patch
        ? tagDelta(ctx, object, changes(object, patch, options.managedTags))
        : null;
      if (delta) marks.push({ object, patch: { id: object.id, ...delta } });
    }
  }

  ctx.signal.throwIfAborted();
  const adopted = new Set<number>();
  if (creates.length) {
    const made = await inChunks(
      ctx,
      creates.map((d) => withTouch(d.body, options.touch)),
      creates.map((d) => d.label),
      (chunk) => ctx.inv.create(options.path, chunk, ctx.signal, options.answer),
      options.resolveRefused &&
        (async (i, answer) => {
          const outcome = await options.resolveRefused!(creates[i], answer);
          if (outcome && outcome !== "conflict") adopted.add(i);
          return outcome;
        }),
    );
    made.forEach((object, i) => {
      if (!object) return;
      objects.set(creates[i].key, object);
      // An object adopted instead of created was changed, not made.
      if (adopted.has(i)) ctx.result.updated++;
      else ctx.result.created++;
    });
  }
  // Objects edited since the stage read them are re-read and written singly with If-Match;
  // the rest go in bulk, as before.
  const edited = updates.length
    ? await editedSinceRead(ctx, options.path, updates)
    : new Map<number, InventoryObject | null>();
  for (const u of updates) {
    if (!edited.has(u.current.id)) continue;
    const object = await rewriteEdited(ctx, options, u, edited.get(u.current.id) === null);
    objects.set(u.desired.key, object ?? u.current);
  }
  const bulk = updates.filter((u) => !edited.has(u.current.id));
  if (bulk.length) {
    const done = await inChunks(
      ctx,
      bulk.map((u) => u.patch),
      bulk.map((u) => u.desired.label),
      async (chunk) =>
        pairedById(chunk, await ctx.inv.update(options.path, chunk, ctx.signal, options.answer)),
    );
    done.forEach((object, i) => {
      // A refused update leaves the object as it was: later stages still anchor on it.
      objects.set(bulk[i].desired.key, object ?? options.existing.get(bulk[i].desired.key)!);
      if (object) ctx.result.updated++;
    });
  }
  if (marks.length) {
    await inChunks(
      ctx,
      marks.map((m) => m.patch),
      marks.map((m) => `${options.path}${m.object.id}`),
      async (chunk) =>
        pairedById(chunk, await ctx.inv.update(options.path, chunk, ctx.signal, options.answer)),
    );
    ctx.result.updated += marks.length;
  }
  if (deletes.length) {
    const ids = deletes.map((d) => d.id);
    for (let i = 0; i < ids.length; i += CHUNK) {
      await ctx.inv.delete(options.path, ids.slice(i, i + CHUNK), ctx.signal);
    }
    ctx.result.deleted += deletes.length;
  }
  // The ledger reads the change log on after enough writes, so a bounded log never drops an
  // entry it has not read (ledger.ts; a guest stage's slice reads it itself).
  const wrote = creates.length + updates.length + marks.length + deletes.length;
  if (wrote && ctx.ledger?.wrote(wrote)) await readLog(ctx);
  return { objects };
}

interface Update {
  desired: Desired;
  /** The object as the stage read it. */
  current: InventoryObject;
  /** What the sync wants of it on an update (create-only fields left out). */
  body: InventoryBody;
  /** The changed fields of `body` against `current`, with the touch fields. */
  patch: InventoryBody & { id: number };
}

/** Objects the edit re-check asks about per list request (their ids go in the query string). */
const RECHECK_IDS = 100;
/** Attempts at one edited object before it is reported as failed (each re-reads it first). */
const EDIT_ATTEMPTS = 3;

/** Fields that change on every write and say nothing about what was edited. */
const BOOKKEEPING = new Set(["last_updated", "created", "display", "url", "display_url"]);

/**
 * Which objects about to be updated someone changed since the stage read them: their
 * `last_updated` moved (or they are gone, null). NetBox 4.6 ignores If-Match on a bulk (list)
 * PATCH (`BulkUpdateModelMixin` never checks it), so the sync asks first, just before its bulk
 * write, and writes the edited ones singly with If-Match (docs/sync.md, "Edits made while a run
 * writes"). Only with an inventory that offers guarded single writes, never on a dry run.
 */
async function editedSinceRead(
  ctx: StageContext,
  path: string,
  updates: Update[],
): Promise<Map<number, InventoryObject | null>> {
  const edited = new Map<number, InventoryObject | null>();
  if (!ctx.inv.readOne || !ctx.inv.updateGuarded || ctx.options.dryRun) return edited;
  const watched = updates.filter((u) =>
    u.current.id > 0 && typeof u.current.last_updated === "string"
  );
  for (let i = 0; i < watched.length; i += RECHECK_IDS) {
    const batch = watched.slice(i, i + RECHECK_IDS);
    const now = new Map(
      // Only what the check compares (NetBox 4's dynamic `fields`): a tenth of a full page.
      (await ctx.inv.list(
        path,
        { id: batch.map((u) => String(u.current.id)), fields: "id,last_updated" },
        ctx.signal,
      ))
        .map((o) => [o.id, o]),
    );
    for (const u of batch) {
      const fresh = now.get(u.current.id);
      if (!fresh) edited.set(u.current.id, null);
      else if (
        fresh.last_updated !== u.current.last_updated &&
        // The run's own earlier write (another stage) is no one else's edit.
        !ctx.inv.isOwnWrite?.(path, u.current.id, fresh.last_updated)
      ) edited.set(u.current.id, fresh);
    }
  }
  return edited;
}

/** The fields of the stage's read whose values differ in a later rendering of the object. */
function editedFields(before: InventoryObject, after: InventoryObject): string[] {
  return Object.keys(before).filter((k) => !BOOKKEEPING.has(k) && !same(before[k], after[k]))
    .sort();
}

/**
 * Writes one object someone edited since the stage read it: re-read it (with its ETag), apply
 * the owner policy to what it holds now (the fields the admin owns are not in `body`, so they
 * stay), and PATCH only what still differs, with If-Match. A 412 (edited again) starts over, at
 * most EDIT_ATTEMPTS times. Reported through `itemEdited`; the object as written, or null.
 */
async function rewriteEdited(
  ctx: StageContext,
  options: ReconcileOptions,
  update: Update,
  gone: boolean,
): Promise<InventoryObject | null> {
  const label = update.desired.label;
  const id = update.current.id;
  const report = (detail: string) => ctx.itemEdited?.(label, detail);
  for (let attempt = 1; attempt <= EDIT_ATTEMPTS; attempt++) {
    const fresh = gone ? null : await ctx.inv.readOne!(options.path, id, ctx.signal);
    if (!fresh) {
      report("deleted from the inventory while the sync ran: not written in this run");
      return null;
    }
    const patch = tagDelta(
      ctx,
      fresh.object,
      changes(fresh.object, update.body, options.managedTags),
    );
    const changed = editedFields(update.current, fresh.object);
    if (!patch) {
      ctx.result.unchanged++;
      report(
        `edited in the inventory while the sync ran${
          changed.length ? ` (${changed.join(", ")})` : ""
        }; ` +
          "re-read: it already holds what the sync writes, nothing written",
      );
      return fresh.object;
    }
    let outcome: InventoryObject | "changed" | "gone";
    try {
      outcome = await ctx.inv.updateGuarded!(
        options.path,
        { id, ...withTouch(patch, options.touch) },
        fresh.etag,
        ctx.signal,
      );
    } catch (error) {
      if ((error as CallFailure)?.refused) {
        ctx.itemFailed(label, Object.assign(error as object, { object: label }));
        return null;
      }
      throw error;
    }
    if (outcome === "changed") continue;
    if (outcome === "gone") {
      report("deleted from the inventory while the sync ran: not written in this run");
      return null;
    }
    ctx.result.updated++;
    const written = Object.keys(patch).sort();
    const rewritten = (f: string) =>
      f in patch || (f === "tags" && ("add_tags" in patch || "remove_tags" in patch));
    const kept = changed.filter((f) => !rewritten(f));
    report(
      `edited in the inventory while the sync ran${
        changed.length ? ` (${changed.join(", ")})` : ""
      }; re-read and the ` +
        `owner policy applied again: wrote ${written.join(", ")}` +
        (kept.length ? `; kept the edit of ${kept.join(", ")}` : ""),
    );
    return outcome;
  }
  ctx.itemFailed(
    label,
    Object.assign(new Error(`${label} was edited again at each of ${EDIT_ATTEMPTS} attempts`), {
      object: label,
      hint: "Someone keeps editing this object: the next run writes it again.",
    }),
  );
  return null;
}

/** Index a list by a key function (later duplicates lose: first by id wins). */
export function indexBy(
  objects: InventoryObject[],
  key: (o: InventoryObject) => string | null,
): Map<string, InventoryObject> {
  const out = new Map<string, InventoryObject>();
  for (const o of [...objects].sort((a, b) => a.id - b.id)) {
    const k = key(o);
    if (k !== null && !out.has(k)) out.set(k, o);
  }
  return out;
}

/**
 * Deletes the existing objects no desired one claims (after references to them were moved:
 * a primary MAC or IP must be released before its object goes).
 */
export async function deleteOrphans(
  ctx: StageContext,
  path: string,
  existing: Map<string, InventoryObject>,
  desired: Desired[],
): Promise<void> {
  const wanted = new Set(desired.map((d) => d.key));
  const ids = [...existing].filter(([key]) => !wanted.has(key)).map(([, o]) => o.id);
  for (let i = 0; i < ids.length; i += CHUNK) {
    await ctx.inv.delete(path, ids.slice(i, i + CHUNK), ctx.signal);
  }
  ctx.result.deleted += ids.length;
}
