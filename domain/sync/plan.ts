/**
 * The plan (docs/sync.md, "Dry run and plan"): every write a run makes or would make, per stage
 * and object — created (with its fields), updated (field: old → new), marked (an update that
 * flags an object gone upstream) or deleted. `PlanningInventory` wraps the inventory port: it
 * reads through, records each write, and in a dry run answers writes itself (created objects get
 * negative ids, which later stages of the same dry run hang their children on) so nothing is
 * written. The same wrapper around a real run records what was done: a plan and the real run's
 * record of the same inventory state are equal (tests/e2e/sync_plan_test.ts).
 */
import type { InventoryApi, InventoryBody, InventoryObject } from "./ports.ts";
import { plain, same } from "./reconcile.ts";

export type PlanAction = "create" | "update" | "mark" | "delete";

export interface PlanItem {
  step: string;
  action: PlanAction;
  /** The inventory path, e.g. `virtualization/virtual-machines/`. */
  path: string;
  /** The object's id; negative for an object the dry run would create. */
  id: number;
  /** What the object is, in words: its name, address, vid... */
  object: string;
  /** create: every field written; update/mark: field → {old, new}; delete: none. */
  fields?: Record<string, unknown>;
  changes?: Record<string, { old: unknown; new: unknown }>;
}

/** Status values a sync writes to flag an object gone upstream (docs/sync.md). */
const MARKS = new Set(["decommissioning", "stale", "missing"]);

function describe(path: string, o: Record<string, unknown>): string {
  const model = path.replace(/\/$/, "").split("/").pop()!.replace(/-/g, " ");
  for (const k of ["name", "address", "mac_address", "upid", "volid", "prefix", "slug"]) {
    if (typeof o[k] === "string" && o[k]) return `${model} ${o[k]}`;
  }
  if (o.vmid !== undefined) return `${model} vmid ${o.vmid}`;
  if (o.vid !== undefined) return `${model} vid ${o.vid}`;
  return `${model} #${o.id ?? "?"}`;
}

function hasNegativeId(filters: Record<string, string | string[]>): boolean {
  return Object.values(filters).some((v) =>
    (Array.isArray(v) ? v : [v]).some((x) => /^-\d+$/.test(String(x).trim()))
  );
}

/**
 * Whether an object the dry run would make answers a list filter: `tag` (everything the sync
 * makes carries its tag), a field, or `<field>_id` against the field's id; anything else is
 * not narrowed (the stages filter what they read again).
 */
function matches(o: InventoryObject, filters: Record<string, string | string[]>): boolean {
  for (const [key, value] of Object.entries(filters)) {
    if (key === "tag" || key === "limit" || key === "offset" || key === "ordering") continue;
    const wanted = (Array.isArray(value) ? value : String(value).split(",")).map(String);
    const field = key in o
      ? key
      : key.endsWith("_id") && key.slice(0, -3) in o
      ? key.slice(0, -3)
      : null;
    if (field === null) continue;
    const v = o[field];
    const have = typeof v === "object" && v !== null && "id" in v
      ? String((v as { id: unknown }).id)
      : String(v);
    // An address filter without a mask matches the host, as NetBox's `address` filter does.
    const host = field === "address" ? have.split("/")[0] : have;
    if (!wanted.includes(have) && !wanted.includes(host)) return false;
  }
  return true;
}

/**
 * The tables where NetBox refuses a duplicate (ENFORCE_GLOBAL_UNIQUE, its default): an address
 * (its host, masks ignored) or a prefix in the global table (no VRF). The field and its key.
 */
const UNIQUE_SPACES: Record<string, { field: "address" | "prefix"; key: (v: string) => string }> = {
  "ipam/ip-addresses/": { field: "address", key: (v) => v.split("/")[0].toLowerCase() },
  "ipam/prefixes/": { field: "prefix", key: (v) => v.toLowerCase() },
};

/** Values per list request when a dry run looks for holders of the values it would create. */
const LOOKUP_BATCH = 100;

/** How the inventory refuses a bulk write item by item (as its client reports it). */
class SimulatedRefusal extends Error {
  readonly refused = true;
  constructor(path: string, readonly itemErrors: Record<string, unknown>[]) {
    super(`create ${path} (dry run): the inventory would refuse duplicates`);
  }
}

export class PlanningInventory implements InventoryApi {
  /** The stage being run (the runner's `started` frames set it). */
  step = "";
  readonly items: PlanItem[] = [];
  #known = new Map<string, InventoryObject>();
  #next = -1;
  /** Dry run: objects it would have made (path → id → object) and patches it would have sent. */
  #made = new Map<string, Map<number, InventoryObject>>();
  #patches = new Map<string, InventoryBody>();
  /** Dry run: objects of the inventory it would have deleted (`path#id`). */
  #deleted = new Set<string>();

  readOne?: InventoryApi["readOne"];
  updateGuarded?: InventoryApi["updateGuarded"];

  isOwnWrite(path: string, id: number, lastUpdated: unknown): boolean {
    return this.inner.isOwnWrite?.(path, id, lastUpdated) ?? false;
  }

  constructor(
    private readonly inner: InventoryApi,
    private readonly dryRun: boolean,
    private readonly onItem: (item: PlanItem) => void = () => {},
  ) {
    // Guarded single writes (If-Match) pass through a run that writes, recorded as updates; a
    // dry run writes nothing, so it has nothing to guard.
    const { readOne, updateGuarded } = inner;
    if (!dryRun && readOne && updateGuarded) {
      this.readOne = async (path, id, signal) => {
        const got = await readOne.call(inner, path, id, signal);
        if (got) this.#remember(path, [got.object]);
        return got;
      };
      this.updateGuarded = async (path, body, etag, signal) => {
        let outcome: InventoryObject | "changed" | "gone" = "gone";
        await this.#update(path, [body], async () => {
          outcome = await updateGuarded.call(inner, path, body, etag, signal);
          return typeof outcome === "string" ? null : [outcome];
        });
        return outcome;
      };
    }
  }

  /**
   * Keeps what the run saw of each object, for the plan's "old → new". A list of some fields
   * only (NetBox's `fields`: the stages' sliced reads, the edit re-check) adds to what is known
   * of an object instead of replacing it.
   */
  #remember(path: string, objects: InventoryObject[], partial = false) {
    for (const o of objects) {
      const key = `${path}#${o.id}`;
      const known = partial ? this.#known.get(key) : undefined;
      this.#known.set(key, known ? { ...known, ...o } : o);
    }
  }

  #record(item: Omit<PlanItem, "step">) {
    const full = { step: this.step, ...item };
    this.items.push(full);
    this.onItem(full);
  }

  apiVersion(): string | null {
    return this.inner.apiVersion?.() ?? null;
  }

  async list(path: string, filters: Record<string, string | string[]>, signal?: AbortSignal) {
    // An object only this dry run made has no children upstream yet.
    const found = hasNegativeId(filters) ? [] : await this.inner.list(path, filters, signal);
    const partial = "fields" in filters || "omit" in filters;
    if (!this.dryRun) {
      this.#remember(path, found, partial);
      return found;
    }
    // A dry run sees its own writes: what it patched, deleted, and would have made.
    const seen = found.filter((o) => !this.#deleted.has(`${path}#${o.id}`)).map((o) => {
      const patch = this.#patches.get(`${path}#${o.id}`);
      return patch ? { ...o, ...patch } as InventoryObject : o;
    });
    this.#remember(path, seen, partial);
    const made = [...(this.#made.get(path)?.values() ?? [])].filter((o) => matches(o, filters));
    return [...seen, ...made];
  }

  read(path: string, signal?: AbortSignal) {
    return this.inner.read ? this.inner.read(path, signal) : Promise.resolve(null);
  }

  /**
   * A dry run meets NetBox's unique IP space as the real run will: a body whose address or
   * prefix is already held (in the inventory, or made earlier in this dry run) is refused item
   * by item, so the stage adopts it or reports the conflict, and the plan says what the real
   * run will do (adopt: an update) instead of a create the inventory would refuse.
   */
  async #refuseDuplicates(path: string, bodies: InventoryBody[], signal?: AbortSignal) {
    const space = UNIQUE_SPACES[path];
    if (!space) return;
    const valueOf = (o: Record<string, unknown>) =>
      typeof o[space.field] === "string" && (o.vrf === undefined || o.vrf === null)
        ? space.key(o[space.field] as string)
        : null;
    const wanted = [...new Set(bodies.map(valueOf).filter((v): v is string => v !== null))];
    if (!wanted.length) return;
    const held = new Set<string>();
    for (let i = 0; i < wanted.length; i += LOOKUP_BATCH) {
      const found = await this.inner.list(
        path,
        { [space.field]: wanted.slice(i, i + LOOKUP_BATCH) },
        signal,
      );
      for (const o of found) {
        if (this.#deleted.has(`${path}#${o.id}`)) continue;
        const key = this.#patches.has(`${path}#${o.id}`)
          ? valueOf({ ...o, ...this.#patches.get(`${path}#${o.id}`) })
          : valueOf({ ...o, vrf: o.vrf ?? null });
        if (key !== null) held.add(key);
      }
    }
    for (const o of this.#made.get(path)?.values() ?? []) {
      const key = valueOf(o);
      if (key !== null) held.add(key);
    }
    const errors = bodies.map((b) => {
      const key = valueOf(b);
      if (key === null) return {};
      if (held.has(key)) {
        const label = space.field === "address" ? "IP address" : "prefix";
        return {
          [space.field]: [`Duplicate ${label} found in global table: ${b[space.field]}`],
        };
      }
      held.add(key);
      return {};
    });
    if (errors.some((e) => Object.keys(e).length)) throw new SimulatedRefusal(path, errors);
  }

  // A stage's `answer` fields are not passed on: the plan's "old → new" of a later update reads
  // the whole object a write answered.
  async create(path: string, bodies: InventoryBody[], signal?: AbortSignal) {
    if (this.dryRun) await this.#refuseDuplicates(path, bodies, signal);
    const made = this.dryRun
      ? bodies.map((b) => ({ ...structuredClone(b), id: this.#next-- }) as InventoryObject)
      : await this.inner.create(path, bodies, signal);
    this.#remember(path, made);
    if (this.dryRun) {
      let mine = this.#made.get(path);
      if (!mine) this.#made.set(path, mine = new Map());
      for (const o of made) mine.set(o.id, o);
    }
    made.forEach((o, i) => {
      const fields: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(bodies[i])) fields[k] = plain(v);
      this.#record({ action: "create", path, id: o.id, object: describe(path, bodies[i]), fields });
    });
    return made;
  }

  update(
    path: string,
    bodies: (InventoryBody & { id: number })[],
    signal?: AbortSignal,
  ): Promise<InventoryObject[]> {
    return this.#update(path, bodies, () => this.inner.update(path, bodies, signal))
      .then((done) => done ?? []);
  }

  /** Applies (dry run) or writes an update and records it; `write` answers null: not written. */
  async #update(
    path: string,
    bodies: (InventoryBody & { id: number })[],
    write: () => Promise<InventoryObject[] | null>,
  ): Promise<InventoryObject[] | null> {
    // A copy: a dry run applies the patch to the objects it made, in place.
    const before = bodies.map((b) => {
      const known = this.#known.get(`${path}#${b.id}`);
      return known ? { ...known } : undefined;
    });
    const done = this.dryRun
      ? bodies.map((b, i) => ({ ...(before[i] ?? {}), ...structuredClone(b) }) as InventoryObject)
      : await write();
    if (done === null) return null;
    this.#remember(path, done);
    if (this.dryRun) {
      for (const b of bodies) {
        const made = this.#made.get(path)?.get(b.id);
        if (made) Object.assign(made, structuredClone(b));
        else {
          const key = `${path}#${b.id}`;
          this.#patches.set(key, { ...this.#patches.get(key), ...structuredClone(b) });
        }
      }
    }
    bodies.forEach((b, i) => {
      const old = (before[i] ?? {}) as Record<string, unknown>;
      const changes: Record<string, { old: unknown; new: unknown }> = {};
      for (const [k, v] of Object.entries(b)) {
        if (k === "id" || same(old[k], v)) continue;
        changes[k] = { old: plain(old[k]), new: plain(v) };
      }
      const mark = typeof b.status === "string" && MARKS.has(b.status) ||
        b.online === false;
      this.#record({
        action: mark ? "mark" : "update",
        path,
        id: b.id,
        // Named as the inventory knows it now (a rename shows under the old name).
        object: describe(path, { ...b, ...old }),
        changes,
      });
    });
    return done;
  }

  async delete(path: string, ids: number[], signal?: AbortSignal) {
    if (!this.dryRun) await this.inner.delete(path, ids, signal);
    else {
      for (const id of ids) {
        if (!this.#made.get(path)?.delete(id)) this.#deleted.add(`${path}#${id}`);
      }
    }
    for (const id of ids) {
      const old = this.#known.get(`${path}#${id}`) ?? { id };
      this.#record({ action: "delete", path, id, object: describe(path, old) });
    }
  }
}
