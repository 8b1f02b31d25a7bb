/**
 * NetBox's change log, read-only at `core/object-changes/`: one entry per object created, updated
 * or deleted through the API (engine/changelog.ts writes them), with NetBox 4.6's fields and
 * filters (docs/api-behaviour.md, Inventory: change log).
 */
import type { CustomFilter, ModelDef, StoredObject } from "../types.ts";
import { alwaysNull } from "./shapes.ts";

export const OBJECT_CHANGE_MODEL = "core.objectchange";

export const CHANGE_ACTIONS = [
  ["create", "Created"],
  ["update", "Updated"],
  ["delete", "Deleted"],
] as const;

/** `time_after` / `time_before` (NetBox's DateTimeFromToRangeFilter on `time`). */
function timeBound(after: boolean): CustomFilter {
  return (values) => {
    const bounds = values.map((v) => Date.parse(v)).filter((t) => Number.isFinite(t));
    return Promise.resolve({
      predicate: (r: StoredObject) => {
        const t = Date.parse(String(r.time));
        return bounds.every((b) => after ? t >= b : t <= b);
      },
    });
  };
}

/**
 * The ids of the entries logged with `r` by one request at once, `[first, last]`: written on every
 * entry since index layout 5; an entry an earlier build wrote names none (a batch of its own).
 */
function batchOf(r: StoredObject): [number, number] {
  const batch = r.request_batch;
  if (Array.isArray(batch) && batch.length === 2) {
    const [first, last] = batch;
    if (
      Number.isSafeInteger(first) && Number.isSafeInteger(last) && first <= r.id && r.id <= last
    ) {
      return [first, last];
    }
  }
  return [r.id, r.id];
}

/**
 * Whether the value index of `request_id` holds `r`: the last entry of each batch (the one a
 * batch's ids are found from), and every entry an earlier build wrote. A request logging 500
 * changes writes one index entry for them, not 500 (docs/sync.md, "Writes: round 5").
 */
export function indexedByRequest(r: StoredObject): boolean {
  return batchOf(r)[1] === r.id;
}

/**
 * `request_id`: every entry the requests named logged. Their index entries name each batch's
 * last entry, which names the batch's ids; the entries read are tested, so an id a prune took
 * (the oldest go first, a batch's last entry after the rest) is not answered.
 */
const byRequest: CustomFilter = async (values, engine) => {
  const wanted = new Set(values.map((v) => v.trim()).filter((v) => v !== ""));
  if (wanted.size === 0) return { predicate: () => true }; // no value: filters nothing
  const test = (r: StoredObject) => wanted.has(String(r.request_id));
  const heads = await engine.idsIndexed(OBJECT_CHANGE_MODEL, "request_id", [...wanted]);
  if (heads === null) return { predicate: test }; // a value no index holds: scanned
  const ids = new Set<number>();
  for (const head of await engine.getMany(OBJECT_CHANGE_MODEL, heads.flat())) {
    if (!test(head)) continue;
    const [first, last] = batchOf(head);
    for (let id = first; id <= last; id++) ids.add(id);
  }
  const entries = await engine.getMany(OBJECT_CHANGE_MODEL, [...ids]);
  return { ids: new Set(entries.filter(test).map((r) => r.id)) };
};

/** NetBox's ObjectChange __str__: "<type> <object> <action> by <user>". */
function display(r: StoredObject): string {
  const label = CHANGE_ACTIONS.find(([a]) => a === r.action)?.[1] ?? String(r.action);
  return `${r.changed_object_type} ${r.object_repr} ${label.toLowerCase()} by ${r.user_name}`;
}

export const OBJECT_CHANGE: ModelDef = {
  app: "core",
  model: "objectchange",
  verbose: "object change",
  path: "core/object-changes/",
  readOnly: true,
  changelog: false,
  timestamps: false,
  tags: false,
  customFields: false,
  fields: {
    time: { type: "datetime" },
    /** NetBox's user account: the inventory has tokens, not users (see user_name). */
    user: alwaysNull(),
    user_name: { type: "string", maxLength: 150 },
    request_id: { type: "string", partialIndex: indexedByRequest },
    /** `[first id, last id]` of the entries the same request logged at once (batchOf). */
    request_batch: { type: "json", nullable: true, hidden: true },
    action: {
      type: "choice",
      choices: CHANGE_ACTIONS,
    },
    changed_object_type: { type: "string" },
    changed_object_id: { type: "int", index: true },
    changed_object: {
      type: "gfk",
      models: "*",
      weak: true,
      typeField: "changed_object_type",
      idField: "changed_object_id",
    },
    // The parent an entry also belongs to (a VM for its interface): filters, not rendered.
    related_object_type: { type: "string", nullable: true, hidden: true, filter: true },
    related_object_id: { type: "int", nullable: true, hidden: true, filter: true },
    object_repr: { type: "string", maxLength: 200 },
    message: { type: "string", maxLength: 200 },
    /**
     * Stored once per entry: an update keeps only the fields its change touched (`pre`), the
     * rest of its prechange_data is its postchange_data, so an entry costs one copy of the
     * object, not two (docs/api-behaviour.md, Inventory: change log).
     */
    pre: { type: "json", nullable: true, hidden: true },
    prechange_data: {
      type: "json",
      compute: (r) =>
        r.action === "update" && r.pre && r.postchange_data
          ? { ...(r.postchange_data as object), ...(r.pre as object) }
          : r.pre ?? null,
    },
    postchange_data: { type: "json", nullable: true, filter: false },
  },
  brief: ["time", "user_name", "action", "changed_object_type", "changed_object_id", "object_repr"],
  display,
  filters: { time_after: timeBound(true), time_before: timeBound(false), request_id: byRequest },
  search: ["user_name", "object_repr", "message"],
  ordering: ["-id"],
};
