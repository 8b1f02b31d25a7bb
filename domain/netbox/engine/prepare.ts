/**
 * Building the complete draft of a create or update from client input: coercion of every
 * field, references resolved, generic FKs checked, tags, custom fields (validated, defaults
 * applied, required ones present), timestamps, then the model's own `validate` hook.
 */
import type { StoredObject } from "../../../storage/ports.ts";
import { applyCustomFieldDefaults, validateCustomFields } from "../custom_fields.ts";
import { coerce, defaultValue, MESSAGES, pyType } from "../fields.ts";
import type { AuthInfo, FieldErrors, HookContext, ModelDef } from "../types.ts";
import {
  cachedRecords,
  type EngineCore,
  fieldEntries,
  indexedKey,
  isEmpty,
  readUncached,
  type RequestCache,
} from "./core.ts";
import { customFieldsFor } from "./custom_fields.ts";
import { indexedString } from "./index_state.ts";
import { parseRelation, resolveRef } from "./references.ts";
import { TAGS_FIELD } from "./registry.ts";

/** A validated draft and the hook context that goes with it. */
export interface Prepared {
  draft: StoredObject;
  ctx: HookContext;
  /** The client's write-only `changelog_message` ("" when none), for the change log. */
  message: string;
}

/** Longest `changelog_message` kept (NetBox's ObjectChange.message is 200 characters). */
export const CHANGELOG_MESSAGE_MAX = 200;

/**
 * NetBox 4.4's write-only `changelog_message` (a DRF CharField): a string (numbers are taken as
 * text), trimmed, not blank, at most 200 characters (NetBox's database would refuse more).
 */
export function parseChangelogMessage(
  value: unknown,
): { ok: true; value: string } | { ok: false; error: string } {
  if (value === undefined) return { ok: true, value: "" };
  if (value === null) return { ok: false, error: MESSAGES.null };
  if (typeof value !== "string" && typeof value !== "number") {
    return { ok: false, error: "Not a valid string." };
  }
  const text = String(value).trim();
  if (text === "") return { ok: false, error: MESSAGES.blank };
  if (text.length > CHANGELOG_MESSAGE_MAX) {
    return { ok: false, error: MESSAGES.maxLength(CHANGELOG_MESSAGE_MAX) };
  }
  return { ok: true, value: text };
}

/** The tag ids of `data`'s `tags`, `add_tags` and `remove_tags` (absent: undefined). */
interface TagInput {
  tags?: number[];
  add?: number[];
  remove?: number[];
}

/**
 * NetBox 4.6's tag writes: `tags` replaces the set; `add_tags`/`remove_tags` (write-only) change
 * it without naming the tags others set. The three rules are TaggableModelSerializer.validate's,
 * checked once every field parsed, with its texts.
 */
async function tagRules(
  core: EngineCore,
  input: TagInput,
  creating: boolean,
): Promise<FieldErrors | null> {
  const { tags, add, remove } = input;
  if (tags?.length && (add?.length || remove?.length)) {
    return { tags: ['Cannot specify "tags" together with "add_tags" or "remove_tags".'] };
  }
  if (creating && remove?.length) {
    return { remove_tags: ['Cannot use "remove_tags" when creating a new object.'] };
  }
  const both = (add ?? []).filter((id) => remove?.includes(id));
  if (both.length > 0) {
    const names = (await core.store.getMany(TAGS_FIELD.model!, both)).map((t) => String(t.name));
    return {
      remove_tags: [
        `Tags may not be present in both "add_tags" and "remove_tags": ${names.join(", ")}`,
      ],
    };
  }
  return null;
}

/** The tag set a write leaves: `tags` when sent, else the current set plus/minus the changes. */
function nextTags(input: TagInput, current: number[]): number[] {
  if (input.tags !== undefined) return input.tags;
  let out = [...current];
  for (const id of input.add ?? []) if (!out.includes(id)) out.push(id);
  if (input.remove) out = out.filter((id) => !input.remove!.includes(id));
  return out;
}

/**
 * Builds the complete draft for a create (existing null) or update, validating input.
 * `partial` is PATCH semantics; PUT and create require every required field.
 */
export async function prepare(
  core: EngineCore,
  def: ModelDef,
  input: unknown,
  existing: StoredObject | null,
  partial: boolean,
  auth: AuthInfo | null,
  cache: RequestCache,
  id: number,
): Promise<{ ok: true; prepared: Prepared } | { ok: false; errors: FieldErrors }> {
  const errors: FieldErrors = {};
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    // DRF's serializer texts: a null item is refused as null, anything else by its Python type.
    const text = input === null
      ? MESSAGES.null
      : `Invalid data. Expected a dictionary, but got ${pyType(input)}.`;
    return { ok: false, errors: { non_field_errors: [text] } };
  }
  const data = input as Record<string, unknown>;
  const nowIso = new Date(core.now()).toISOString();
  const draft: StoredObject = existing ? structuredClone(existing) : { id };
  const accepted: Record<string, unknown> = {};
  for (const [name, f] of fieldEntries(def)) {
    if (f.type === "gfk") continue;
    if (f.readOnly || f.hidden || f.compute) {
      // Computed, counted and resolved fields are rendered, never stored.
      const rendered = f.compute || f.count || f.resolve;
      // A create starts with each stored one's default; an object stored without one (saved
      // before the field existed) gets it on its next update.
      if (!(name in draft)) draft[name] = rendered ? undefined : defaultValue(f);
      if (rendered) delete draft[name];
      continue;
    }
    if (name in data && data[name] !== undefined) {
      const value = data[name];
      const r = f.type === "fk" || f.type === "m2m"
        ? await parseRelation(core, f, value, cache, auth)
        : coerce(f, value);
      if (!r.ok) errors[name] = [r.error];
      else {
        draft[name] = r.value;
        accepted[name] = r.value;
      }
      continue;
    }
    if (!existing) {
      if (f.required && f.default === undefined) errors[name] = [MESSAGES.required];
      else draft[name] = defaultValue(f);
    } else if (!partial && f.required && f.default === undefined) {
      errors[name] = [MESSAGES.required];
    }
  }
  for (const [, f] of fieldEntries(def)) {
    if (f.type !== "gfk") continue;
    const t = draft[f.typeField!];
    const i = draft[f.idField!];
    if (isEmpty(t) && isEmpty(i)) continue;
    if (isEmpty(t) || isEmpty(i)) {
      const missing = isEmpty(t) ? f.typeField! : f.idField!;
      if (!errors[missing]) errors[missing] = [MESSAGES.required];
      continue;
    }
    const allowed = f.models === "*"
      ? core.registry.has(String(t))
      : (f.models ?? []).includes(String(t));
    if (!allowed) {
      errors[f.typeField!] ??= [MESSAGES.contentType(t)];
      continue;
    }
    const found = await resolveRef(core, String(t), { id: i as number }, cache);
    if (!found.ok) errors[f.idField!] ??= [found.error];
  }
  const tagInput: TagInput = {};
  if (def.tags !== false) {
    for (const [key, slot] of [["tags", "tags"], ["add_tags", "add"], ["remove_tags", "remove"]]) {
      if (!(key in data) || data[key] === undefined) continue;
      const r = await parseRelation(core, TAGS_FIELD, data[key], cache, auth);
      if (!r.ok) errors[key] = [r.error];
      else tagInput[slot as keyof TagInput] = r.value as number[];
    }
  }
  const message = parseChangelogMessage(data.changelog_message);
  if (!message.ok) errors.changelog_message = [message.error];
  if (def.customFields !== false) {
    const model = core.registry.nameOf(def);
    const cfs = await customFieldsFor(core, model, cache);
    const current = (existing?.custom_fields as Record<string, unknown> | undefined) ?? {};
    let next = { ...current };
    if (
      "custom_fields" in data && data.custom_fields !== undefined && data.custom_fields !== null
    ) {
      const r = validateCustomFields(cfs, data.custom_fields, current, cache.patterns);
      // Unknown keys come back keyed per key, as NetBox 4.6 answers them ({"x": "…"}).
      if (!r.ok) errors.custom_fields = r.errors as string[];
      else next = r.value;
    }
    // Values of custom fields that no longer apply are dropped on save, as NetBox 4.6 does.
    next = Object.fromEntries(
      Object.entries(next).filter(([n]) => cfs.some((cf) => cf.name === n)),
    );
    if (!existing) next = applyCustomFieldDefaults(cfs, next);
    const missing = cfs.filter((cf) => cf.required && isEmpty(next[cf.name]));
    if (missing.length > 0 && !errors.custom_fields) {
      errors.custom_fields = missing.map((cf) => `Required field cannot be empty: ${cf.name}`);
    }
    draft.custom_fields = next;
  }
  if (!existing) draft.created = nowIso;
  draft.last_updated = nowIso;
  const ctx: HookContext = {
    engine: core.api,
    op: existing ? "update" : "create",
    existing,
    input: accepted,
    responseExtras: {},
    auth,
    logger: core.logger,
    now: core.now,
    settings: core.settings,
    read: async (model, id) => {
      const known = cachedRecords(cache, model);
      if (known.has(id)) return known.get(id)!;
      const found = (await core.store.get(model, id))?.record ?? null;
      known.set(id, found);
      return found;
    },
    byIndex: async (model, field, value) => {
      // A value too long for the index is not in it: the filter finds it (by scanning).
      if (!indexedString(core.store, value)) {
        return await core.api.find(model, { [field]: [value] });
      }
      const key = indexedKey(model, field, value);
      let ids = cache.indexed.get(key);
      if (!ids) cache.indexed.set(key, ids = await core.store.idsByIndex(model, field, value));
      if (ids.length === 0) return [];
      await readUncached(core.store, cache, model, ids);
      const known = cachedRecords(cache, model);
      return ids.map((id) => known.get(id)).filter((r): r is StoredObject => !!r);
    },
  };
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  if (def.tags !== false) {
    const refused = await tagRules(core, tagInput, !existing);
    if (refused) return { ok: false, errors: refused };
    draft.tags = nextTags(tagInput, (existing?.tags as number[] | undefined) ?? []);
  }
  if (def.validate) {
    const more = await def.validate(draft, ctx);
    if (more && Object.keys(more).length > 0) return { ok: false, errors: more };
  }
  return { ok: true, prepared: { draft, ctx, message: message.ok ? message.value : "" } };
}
