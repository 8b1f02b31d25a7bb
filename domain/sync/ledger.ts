/**
 * The sync's ledger of one endpoint on one inventory (docs/sync.md, "Re-runs: guests that did
 * not change"): for each guest and guest stage, a digest of what the stage last wrote or found
 * right (its desired objects and the run options that shape them), and the ids of the objects
 * it found so. A later run skips a guest in a stage, without reading its objects, when the
 * digest is the same and nobody else has touched those objects since: the inventory's change
 * log, read from a cursor, tells (entries made by the sync's own requests, known by their
 * `X-Request-ID`, are not someone else's).
 *
 * Whenever the log cannot tell, the guests are compared in full: a ledger just made (the
 * process's first run), entries missing that should be there (pruned before they were read), an
 * object of a guest model made by someone else (whose guest is unknown), any delete by someone
 * else but of an IP address (a referenced object gone may have changed the guests' objects
 * without an entry of theirs), a custom field changed, an inventory without a change log.
 *
 * Kept in the process's memory and saved in the app's store at the end of each run
 * (`SyncLedgers`, docs/sync.md, "The ledger across restarts and processes"): a restarted
 * process, or another process on the same store, takes the newest saved ledger and reads the
 * log on from its cursor, as the process that saved it would have.
 */
import type { SyncLedgerStore } from "../../storage/ports.ts";
import type { ChangeEntry, InventoryApi } from "./ports.ts";

/** Entries the sync's own writes may leave unread before the ledger reads on (well below a log's bound). */
const READ_AFTER_WRITES = 5_000;

/** Ids seen missing at most: past this the ledger starts over (the log cannot tell). */
const MAX_PENDING = 10_000;

/** Change-log ids asked for per read of the log (the port splits them into requests). */
const READ_PAGE = 2_000;

/** Request ids longer than this are not shared with other processes (`SyncLedgers.noteOwn`). */
const MAX_SHARED_REQUEST_ID = 200;

/** Entries after the cursor read at most; past this the ledger starts over from the log's end. */
const MAX_SCAN = 50_000;

/** The models of the objects a ledger records, as the change log names them (`app_label.model`). */
export const LEDGER_MODELS = {
  vm: "virtualization.virtualmachine",
  state: "service.vmsyncstate",
  disk: "virtualization.virtualdisk",
  vmInterface: "virtualization.vminterface",
  mac: "dcim.macaddress",
  ip: "ipam.ipaddress",
  snapshot: "service.snapshot",
  backup: "service.backup",
} as const;

/** The stage that skips guests' IP addresses (stages/ip_addresses.ts). */
export const IP_STAGE = "ip-addresses";

/** The stages that skip guests' snapshot records and the endpoint's backup records. */
export const SNAPSHOT_STAGE = "vm-snapshots";
export const BACKUP_STAGE = "vm-backups";

/**
 * Records one stage alone writes and compares (the plugin's snapshot and backup records): one
 * made by someone else makes that stage compare every guest, the other stages skip on.
 */
const OWN_STAGE = new Map<string, string>([
  [LEDGER_MODELS.snapshot, SNAPSHOT_STAGE],
  [LEDGER_MODELS.backup, BACKUP_STAGE],
]);

/**
 * Guest models whose objects someone else may make for a guest (whose is not known): such a
 * create makes every guest compared. Addresses are made by hand all the time (IPAM): one made by
 * someone else makes the ip-addresses stage compare every guest, the other stages skip on.
 */
const TRACKED = new Set<string>(
  Object.values(LEDGER_MODELS).filter((m) => m !== LEDGER_MODELS.ip && !OWN_STAGE.has(m)),
);

/** A model a ledger records (the sync-state by its model name, whatever the plugin's app). */
function tracked(model: string): boolean {
  return TRACKED.has(model) || model.endsWith(".vmsyncstate");
}

/** The plugin's models by their model name, whatever its app. */
function modelKey(model: string): string {
  if (model.endsWith(".vmsyncstate")) return LEDGER_MODELS.state;
  if (model.endsWith(".snapshot")) return LEDGER_MODELS.snapshot;
  if (model.endsWith(".backup")) return LEDGER_MODELS.backup;
  return model;
}

/**
 * A 52-bit digest of a JSON-able value (two FNV-1a lanes): a guest's desired objects. Not a
 * secret's hash: nothing secret goes in.
 */
export function digestOf(value: unknown): number {
  const text = JSON.stringify(value);
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return (a >>> 0) * 0x100000 + ((b >>> 0) & 0xfffff);
}

/**
 * What a run's walks read, kept for the next run (docs/sync.md, "Re-runs: guests that did not
 * change"): this endpoint's sync-states as vmid → record id and vmid → VM id, and the names of
 * every VM of its cluster (hand-made ones included) by id.
 */
export interface KeptWalks {
  stateIds: Map<number, number>;
  stateVms: Map<number, number>;
  clusterNames: Map<number, string>;
}

/** The layout of a saved ledger (`exportState`); another version is not read. */
const STATE_VERSION = 1;

interface StateHead {
  v: number;
  cursor: number;
  /** The request id of the entry at the cursor, when read (`SyncLedger` #atCursor). */
  at?: string | null;
  /** How many ids are missing (the body's first numbers). */
  pending: number;
  /** Each stage and how many (vmid, digest) pairs follow. */
  stages: (readonly [string, number])[];
  /** Each model and how many (object id, vmid) pairs follow. */
  models: (readonly [string, number])[];
  /** The kept walks: pairs of each map, then one id per name (the names are here). */
  walks: { stateIds: number; stateVms: number; names: string[] } | null;
}

const isCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;

/** How many numbers follow a state's head. */
function countOf(head: StateHead): number {
  const walks = head.walks;
  return head.pending +
    2 * [...head.stages, ...head.models].reduce((sum, [, count]) => sum + count, 0) +
    (walks ? 2 * (walks.stateIds + walks.stateVms) + walks.names.length : 0);
}

/**
 * A saved state's head and numbers, or null when it is not one this build wrote whole: another
 * version, or counts that do not add up to the numbers that follow (a head of the wrong shape
 * counts to NaN or throws), or a number that is not an integer.
 */
function parseState(state: Uint8Array): { head: StateHead; numbers: Float64Array } | null {
  try {
    const length = new DataView(state.buffer, state.byteOffset, state.byteLength).getUint32(0);
    const head = JSON.parse(new TextDecoder().decode(state.subarray(8, 8 + length))) as StateHead;
    // Copied out (the stored bytes' offset need not be a multiple of 8); a body that is not
    // whole numbers throws.
    const numbers = new Float64Array(state.slice(8 + Math.ceil(length / 8) * 8).buffer);
    const whole = head.v === STATE_VERSION && isCount(head.cursor) &&
      numbers.length === countOf(head) && numbers.every((n) => Number.isSafeInteger(n));
    return whole ? { head, numbers } : null;
  } catch {
    return null;
  }
}

export class SyncLedger {
  /** The newest change-log id read; null: nothing is known (every guest is compared). */
  #cursor: number | null = null;
  /**
   * The request id of the entry at the cursor, when it was read and named one: another one
   * there later is another log (another inventory behind the same address, one restored from a
   * backup and written past the cursor since), and the ledger starts over.
   */
  #atCursor: string | null = null;
  /** Ids below the cursor not seen yet (an entry still being written), with the run that saw them missing. */
  #pending = new Map<number, number>();
  #run = 0;
  /** stage → vmid → digest */
  #digests = new Map<string, Map<number, number>>();
  /** model → object id → vmid */
  #owners = new Map<string, Map<number, number>>();
  /** A counter of what was forgotten: a guest (its number in `#touched`) or everything. */
  #seq = 0;
  #touched = new Map<number, number>();
  #resetAt = 0;
  /** stage → the counter when its digests were last forgotten, every guest's. */
  #stageResetAt = new Map<string, number>();
  #unread = 0;
  /**
   * Guest stages' slices between their read and their record (a slice's closing read of the log
   * holds one too, `SliceLogReads`): while any is, the log is read by the stages only.
   */
  #slices = 0;
  /** The catch-up under way: catch-ups run one at a time (`SliceLogReads` starts them early). */
  #reading: Promise<void> = Promise.resolve();
  /** The walks the last virtual-machines stage ended with; null: the next run walks. */
  #walks: KeptWalks | null = null;
  /** Bumped whenever kept walks may be wrong: walks read before a bump are not kept. */
  #walkSeq = 0;
  /** Bumped by every change of what `exportState` saves (`SyncLedgers` saves only a changed one). */
  #changes = 0;

  /** `own`: whether a request id is one of the sync's own writes (this process's). */
  /**
   * `own`: whether a request id is one of the sync's own writes. `learnOwn`: asked, before a
   * page of entries is applied, about the request ids `own` does not know (another process's
   * sync writes on the same store, `SyncLedgers`); it teaches `own` the ones that are.
   * `learnt`: whether an own request id is one learnt so (another process's). Another process's
   * write of an object one of this ledger's guests holds forgets that guest, as someone else's
   * does: this ledger's digest of it does not know what that run wrote (a run of the endpoint
   * there that ended without saving its ledger, cancelled or refused).
   */
  constructor(
    readonly own: (requestId: string) => boolean,
    readonly learnOwn?: (requestIds: string[]) => Promise<void>,
    readonly learnt?: (requestId: string) => boolean,
  ) {}

  /** A number that changes whenever what `exportState` would save changes. */
  get changes(): number {
    return this.#changes;
  }

  /** Whether the ledger can skip at all (its cursor is known). */
  get usable(): boolean {
    return this.#cursor !== null;
  }

  /** How many guests a stage holds a digest for (tests, docs). */
  size(stage: string): number {
    return this.#digests.get(stage)?.size ?? 0;
  }

  /**
   * What a later process needs to go on from here (`importState`): the cursor, the ids still
   * missing, every stage's digests, the objects' owners and the kept walks. Null when the
   * ledger cannot skip (nothing worth saving). Numbers go into one Float64Array after a JSON
   * head naming how many there are of each (and the VM names of the kept walks).
   */
  exportState(): Uint8Array | null {
    if (this.#cursor === null) return null;
    const walked = this.#walks;
    const stages = [...this.#digests].map(([stage, map]) => [stage, map.size] as const);
    const models = [...this.#owners].map(([model, map]) => [model, map.size] as const);
    const head: StateHead = {
      v: STATE_VERSION,
      cursor: this.#cursor,
      at: this.#atCursor,
      pending: this.#pending.size,
      stages,
      models,
      walks: walked
        ? {
          stateIds: walked.stateIds.size,
          stateVms: walked.stateVms.size,
          names: [...walked.clusterNames.values()],
        }
        : null,
    };
    const text = new TextEncoder().encode(JSON.stringify(head));
    const bodyAt = 8 + Math.ceil(text.length / 8) * 8;
    // Written straight into the state's bytes: a ledger of 100,000 guests holds millions of
    // numbers, and an array of them first would double what the save needs.
    const out = new Uint8Array(bodyAt + countOf(head) * 8);
    new DataView(out.buffer).setUint32(0, text.length);
    out.set(text, 8);
    const numbers = new Float64Array(out.buffer, bodyAt);
    let at = 0;
    const pairs = (map: Map<number, number>) => {
      for (const [a, b] of map) {
        numbers[at++] = a;
        numbers[at++] = b;
      }
    };
    for (const id of this.#pending.keys()) numbers[at++] = id;
    for (const map of this.#digests.values()) pairs(map);
    for (const map of this.#owners.values()) pairs(map);
    if (walked) {
      pairs(walked.stateIds);
      pairs(walked.stateVms);
      for (const id of walked.clusterNames.keys()) numbers[at++] = id;
    }
    return out;
  }

  /**
   * Takes a state `exportState` made (in this process or another): what this ledger knew is
   * replaced. False, with the ledger left as it was, when the state is not one this build
   * reads or does not add up.
   */
  importState(state: Uint8Array): boolean {
    const parsed = parseState(state);
    if (parsed === null) return false;
    this.#startOver(null);
    const { head, numbers } = parsed;
    let at = 0;
    const take = (count: number) => {
      const map = new Map<number, number>();
      for (let i = 0; i < count; i++, at += 2) map.set(numbers[at], numbers[at + 1]);
      return map;
    };
    for (let i = 0; i < head.pending; i++) this.#pending.set(numbers[at++], 0);
    for (const [stage, count] of head.stages) this.#digests.set(stage, take(count));
    for (const [model, count] of head.models) this.#owners.set(model, take(count));
    if (head.walks) {
      const stateIds = take(head.walks.stateIds);
      const stateVms = take(head.walks.stateVms);
      const clusterNames = new Map<number, string>();
      for (const name of head.walks.names) clusterNames.set(numbers[at++], name);
      this.#walks = { stateIds, stateVms, clusterNames };
    }
    this.#cursor = head.cursor;
    this.#atCursor = typeof head.at === "string" ? head.at : null;
    return true;
  }

  /** Every digest and object forgotten: each guest is compared in full once more. */
  reset(): void {
    this.#digests.clear();
    this.#owners.clear();
    this.#touched.clear();
    this.#resetAt = ++this.#seq;
    this.#dropWalks();
  }

  #dropWalks(): void {
    this.#changes++;
    this.#walks = null;
    this.#walkSeq++;
  }

  /**
   * The walks kept by the last run, handed over once (null: walk), and the mark to keep the
   * walks this run ends with by (`keepWalks`). Taken before the walks are read.
   */
  takeWalks(): { kept: KeptWalks | null; mark: number } {
    const kept = this.#cursor === null ? null : this.#walks;
    if (this.#walks) this.#changes++;
    this.#walks = null;
    return { kept, mark: this.#walkSeq };
  }

  /**
   * The virtual-machines stage ended with `walks` (what the run's walks read, with its own
   * writes applied) and read the log past its writes: the next run may take them instead of
   * walking, unless an entry since `mark` (`takeWalks`) may have changed them.
   */
  keepWalks(walks: KeptWalks, mark: number): void {
    if (this.#cursor === null || mark !== this.#walkSeq) return;
    this.#changes++;
    this.#walks = {
      stateIds: new Map(walks.stateIds),
      stateVms: new Map(walks.stateVms),
      clusterNames: new Map(walks.clusterNames),
    };
  }

  /** Every guest forgotten in one stage: it compares each once more. */
  forgetStage(stage: string): void {
    this.#changes++;
    this.#digests.get(stage)?.clear();
    this.#stageResetAt.set(stage, ++this.#seq);
  }

  /** One guest forgotten in every stage (someone else touched one of its objects). */
  forgetGuest(vmid: number): void {
    this.#changes++;
    for (const stage of this.#digests.values()) stage.delete(vmid);
    this.#touched.set(vmid, ++this.#seq);
  }

  /**
   * Whether `stage` may skip `vmid`: the same digest, its objects untouched since. A guest not
   * skipped is compared and may be written: its old digest is dropped here, as the sync's own
   * writes forget nothing, so a run that ends before its `record` (cancelled, a write refused,
   * another process's run not saved) leaves the guest compared next time, not skipped on the
   * old digest while its objects hold what that run wrote (docs/sync.md, "Re-runs").
   */
  unchanged(stage: string, vmid: number, digest: number): boolean {
    const digests = this.#digests.get(stage);
    const held = digests?.get(vmid);
    if (this.#cursor !== null && held === digest) return true;
    if (held !== undefined) {
      this.#changes++;
      digests!.delete(vmid);
    }
    return false;
  }

  /**
   * A stage starts on a slice (after `catchUp`): what it reads from now on is checked by the
   * `catchUp` before its `record`s, which take the mark returned here. Until then the log is
   * read by the stage only (not after writes), so no entry about an object the slice reads or
   * writes is read before that object is `track`ed.
   */
  beginSlice(): number {
    this.#slices++;
    return this.#seq;
  }

  /** The slice's records are made (or given up). */
  endSlice(): void {
    this.#slices = Math.max(0, this.#slices - 1);
  }

  /** The objects of `vmid` a stage read or wrote: someone else's entry about one forgets it. */
  track(vmid: number, objects: Iterable<readonly [model: string, id: number]>): void {
    if (this.#cursor === null) return;
    this.#changes++;
    for (const [model, id] of objects) {
      let owners = this.#owners.get(model);
      if (!owners) this.#owners.set(model, owners = new Map());
      owners.set(id, vmid);
    }
  }

  /**
   * `stage` wrote or found right `vmid`'s objects (tracked), made from what `digest` digests,
   * with nothing forgotten since `mark` (`beginSlice`): a later run may skip it.
   */
  record(stage: string, vmid: number, digest: number, mark: number): void {
    if (this.#cursor === null || this.#resetAt > mark) return;
    if ((this.#stageResetAt.get(stage) ?? 0) > mark) return;
    if ((this.#touched.get(vmid) ?? 0) > mark) return;
    let digests = this.#digests.get(stage);
    if (!digests) this.#digests.set(stage, digests = new Map());
    if (digests.get(vmid) !== digest) this.#changes++;
    digests.set(vmid, digest);
  }

  /** The sync wrote `count` objects: whether the log should be read on now. */
  wrote(count: number): boolean {
    this.#unread += count;
    return this.#slices === 0 && this.#unread >= READ_AFTER_WRITES;
  }

  /** Marks a new run: ids still missing since an earlier run are taken as never written. */
  startRun(): void {
    this.#run++;
  }

  /**
   * Reads the change log from the cursor to its end and forgets what others touched. Without a
   * cursor (a new ledger), it starts from the log's end with nothing recorded. A failure leaves
   * the ledger unusable for the run (every guest compared) and is thrown. `bounded` is called
   * once the newest entry it reads is known (or it reads none): no entry committed after that
   * is read by this catch-up. Catch-ups run one after another, each after the one before ends.
   */
  catchUp(inv: InventoryApi, signal: AbortSignal, bounded?: () => void): Promise<void> {
    const run = this.#reading.then(() => this.#catchUp(inv, signal, bounded));
    this.#reading = run.catch(() => {});
    return run;
  }

  async #catchUp(inv: InventoryApi, signal: AbortSignal, bounded?: () => void): Promise<void> {
    this.#unread = 0;
    if (!inv.changesById || !inv.changeEnd) {
      this.#startOver(null);
      bounded?.();
      return;
    }
    try {
      // The log's newest entry (a read of one entry); its oldest is asked for only when an id
      // is missing (was it pruned?), which a catch-up past the sync's own writes seldom finds.
      const newest = await inv.changeEnd("newest", signal) ?? 0;
      bounded?.();
      if (this.#cursor === null || newest < this.#cursor || newest - this.#cursor > MAX_SCAN) {
        // A new ledger, a log that went back (another inventory behind the same address), or
        // more entries than are worth reading (someone else's large run): it cannot tell.
        this.#startOver(newest);
        return;
      }
      // The entries after the cursor and those missing before, by id: the client reads a run
      // of consecutive ids as one range (`id__gte`/`id__lte`), the scattered ones by id.
      const before = new Map(this.#pending);
      const ids = [...before.keys()];
      // The entry at the cursor again (one id more in the range read): is it the same log?
      const check = newest > this.#cursor ? this.#atCursor : null;
      for (let id = this.#cursor + (check === null ? 1 : 0); id <= newest; id++) ids.push(id);
      let atNewest: string | null = null;
      const found = new Set<number>();
      for (let i = 0; i < ids.length; i += READ_PAGE) {
        const page = await inv.changesById(ids.slice(i, i + READ_PAGE), signal);
        if (this.learnOwn) {
          const unknown = new Set<string>();
          for (const { request_id } of page) {
            if (request_id && !this.own(request_id)) unknown.add(request_id);
          }
          if (unknown.size) await this.learnOwn([...unknown]);
        }
        for (const entry of page) {
          if (found.has(entry.id)) continue;
          found.add(entry.id);
          if (entry.id === newest) atNewest = entry.request_id ?? null;
          if (check !== null && entry.id === this.#cursor) {
            if (entry.request_id !== check) {
              this.#startOver(newest);
              return;
            }
            continue;
          }
          this.#apply(entry);
        }
      }
      // Read after the entries: a prune meanwhile only makes more ids count as pruned.
      let oldest: number | null | undefined;
      const pruned = async (id: number) => {
        if (oldest === undefined) oldest = await inv.changeEnd!("oldest", signal);
        return oldest === null || id < oldest;
      };
      let unknown = false;
      for (const [id, run] of before) {
        if (found.has(id)) this.#pending.delete(id);
        else if (await pruned(id)) unknown = true; // pruned unread
        else if (run < this.#run) this.#pending.delete(id); // a write that failed before its entry
      }
      for (let id = this.#cursor + 1; id <= newest; id++) {
        if (found.has(id)) continue;
        if (await pruned(id)) unknown = true;
        else this.#pending.set(id, this.#run); // still being written, or never
      }
      if (newest !== this.#cursor || before.size) this.#changes++;
      if (newest !== this.#cursor) this.#atCursor = atNewest;
      this.#cursor = newest;
      if (unknown || this.#pending.size > MAX_PENDING) {
        this.#pending.clear();
        this.reset();
      }
    } catch (error) {
      this.#startOver(null);
      throw error;
    } finally {
      bounded?.();
    }
  }

  #startOver(cursor: number | null): void {
    this.#cursor = cursor;
    this.#atCursor = null;
    this.#pending.clear();
    this.reset();
  }

  /** One entry: the sync's own is nothing; someone else's forgets what it may have changed. */
  #apply(entry: ChangeEntry): void {
    const model = String(entry.changed_object_type);
    const action = actionOf(entry);
    const key = modelKey(model);
    // The guest holding the object, if one of this ledger's does.
    const vmid = this.#owners.get(key)?.get(Number(entry.changed_object_id));
    const own = Boolean(
      entry.request_id && this.own(entry.request_id) &&
        !(vmid !== undefined && this.learnt?.(entry.request_id)),
    );
    // The kept walks hold every VM of the cluster and every sync-state of the endpoint: any
    // entry about one that the stage did not write for one of its guests (someone else's; the
    // sync's own about an object no guest holds: another endpoint's, a guest's written outside
    // a slice) may have changed what they read.
    if (
      (key === LEDGER_MODELS.vm || key === LEDGER_MODELS.state) && (!own || vmid === undefined)
    ) this.#dropWalks();
    if (own) return;
    if (vmid !== undefined) {
      this.forgetGuest(vmid);
      return;
    }
    const stage = OWN_STAGE.get(key);
    if (stage) {
      // A record no guest holds: one made may be taken for a guest's (a compare finds it by its
      // identity); one edited or deleted changes nothing the ledger skips (a delete by someone
      // else forgets every guest below).
      if (action === "create") this.forgetStage(stage);
      else if (action === "delete") this.reset();
      return;
    }
    if (model === LEDGER_MODELS.ip) {
      // An address no guest holds: one made may be tagged as the sync's on a guest's interface
      // (a compare deletes it); one edited or deleted changes nothing the ledger skips.
      if (action === "create") this.forgetStage(IP_STAGE);
      return;
    }
    if (tracked(model)) {
      // Another object of a guest model: one made by hand may be a guest's (which one is not
      // known); one edited or deleted that no guest holds changes nothing the ledger skips.
      if (action === "create") this.reset();
      return;
    }
    // A referenced object gone may have cleared references without entries of their own (a
    // device's VMs, a tag's members); a custom field renamed moves values the same way.
    if (action === "delete" && model !== "ipam.ipaddress") this.reset();
    else if (model === "extras.customfield") this.reset();
  }
}

/**
 * An entry's action: NetBox renders it as a choice (`{"value": "create", "label": "Created"}`),
 * which compared as a string never matched, so creates and deletes by others went unnoticed.
 */
function actionOf(entry: ChangeEntry): string {
  const action = entry.action as unknown;
  if (action !== null && typeof action === "object") {
    return String((action as { value?: unknown }).value ?? "");
  }
  return String(action ?? "");
}

/**
 * Reads the change log on for a stage (`ctx.ledger`): the ledger when it can skip, else null (a
 * log that could not be read leaves this run comparing every guest; an abort is thrown).
 */
export async function readLog(
  ctx: { ledger?: SyncLedger; inv: InventoryApi; signal: AbortSignal },
  bounded?: () => void,
): Promise<SyncLedger | null> {
  const ledger = ctx.ledger;
  if (!ledger) {
    bounded?.();
    return null;
  }
  try {
    await ledger.catchUp(ctx.inv, ctx.signal, bounded);
  } catch (error) {
    if (ctx.signal.aborted) throw error;
  }
  return ledger.usable ? ledger : null;
}

/**
 * The reads of the change log that close a guest stage's slices (docs/sync.md, "Writes: round
 * 8"): the read after slice _n_ goes on while slice _n_+1 is read and written, so the app has
 * another request to serve while a slice's writes commit. Slice _n_+1 starts once that read knows
 * the newest entry it will read: every entry it reads was committed before slice _n_+1 read
 * anything, so an edit of one of that slice's objects is either seen by the slice's own read of
 * it or left for the slice's own closing read, which comes after it `track`ed the object (as when
 * the reads did not overlap). One closing read at a time, in slice order; each holds a slice of
 * the ledger (`beginSlice`) until its records are made, so no read after writes comes between.
 */
export class SliceLogReads {
  #last: Promise<void> = Promise.resolve();

  constructor(readonly ctx: { ledger?: SyncLedger; inv: InventoryApi; signal: AbortSignal }) {}

  /**
   * Closes a slice: reads the log on, then `record()` (the slice's `ledger.record`s). Resolves
   * when the next slice may start; `settle()` waits for the read itself.
   */
  async close(ledger: SyncLedger, record: () => void): Promise<void> {
    ledger.beginSlice();
    let bounded!: () => void;
    const known = new Promise<void>((resolve) => bounded = resolve);
    const previous = this.#last;
    const read = (async () => {
      try {
        await previous;
        await readLog(this.ctx, bounded);
        record();
      } finally {
        bounded();
        ledger.endSlice();
      }
    })();
    this.#last = read;
    read.catch(() => {}); // thrown by settle(), or by the next close() through `previous`
    await Promise.race([known, read]);
  }

  /** Every closing read done (and its records made); an abort meanwhile is thrown. */
  settle(): Promise<void> {
    return this.#last;
  }
}

/**
 * The ledgers of one process, by inventory address and endpoint, and the request ids of the
 * sync's own writes there (every run's, so one endpoint's run does not take another's writes for
 * an admin's). Made by the app (`createApp`), never a module singleton. With a store, each run
 * ends by saving its ledger and each run starts from the newest saved one (docs/sync.md, "The
 * ledger across restarts and processes").
 */
export class SyncLedgers {
  /** Each ledger, the tag of the state it saved or took last, and its `changes` then. */
  #ledgers = new Map<
    string,
    { ledger: SyncLedger; saved: string | null; savedChanges: number }
  >();
  #own = new Map<string, Set<string>>();
  /** The ones of `#own` learnt from the store (other processes' writes). */
  #learnt = new Map<string, Set<string>>();

  constructor(readonly store?: SyncLedgerStore) {}

  /** Request ids kept per inventory: far more than the writes between two reads of the log. */
  static readonly OWN_REQUESTS = 50_000;

  /**
   * Notes a request id of the sync's own writes on `inventory`; with a store, for the other
   * processes too (written in the background: one not written yet when another process reads
   * its entries only has that process compare the guests they name).
   */
  noteOwn(inventory: string, requestId: string): Promise<void> {
    this.#learn(inventory, requestId);
    // An id no inventory makes (NetBox's are UUIDs) stays this process's: a KV key is bounded.
    if (!this.store || requestId.length > MAX_SHARED_REQUEST_ID) return Promise.resolve();
    return this.store.noteOwn(inventory, requestId).catch(() => {});
  }

  #learn(inventory: string, requestId: string, into = this.#own): void {
    let own = into.get(inventory);
    if (!own) into.set(inventory, own = new Set());
    own.add(requestId);
    if (own.size > SyncLedgers.OWN_REQUESTS) own.delete(own.values().next().value!);
  }

  #entry(inventory: string, endpointId: number) {
    const key = `${inventory} ${endpointId}`;
    let entry = this.#ledgers.get(key);
    if (!entry) {
      const store = this.store;
      const ledger = new SyncLedger(
        (id) => this.#own.get(inventory)?.has(id) ?? false,
        store &&
          (async (ids) => {
            const shared = ids.filter((id) => id.length <= MAX_SHARED_REQUEST_ID);
            for (const id of await store.ownOf(inventory, shared)) {
              this.#learn(inventory, id);
              this.#learn(inventory, id, this.#learnt);
            }
          }),
        (id) => this.#learnt.get(inventory)?.has(id) ?? false,
      );
      this.#ledgers.set(key, entry = { ledger, saved: null, savedChanges: -1 });
    }
    return { key, entry };
  }

  /**
   * The ledger of `endpointId` on `inventory` for a run starting now: the one in memory, or
   * the store's when another process (or this one before a restart) saved one since. A store
   * that cannot be read leaves the one in memory (made empty on first use).
   */
  async ledger(inventory: string, endpointId: number): Promise<SyncLedger> {
    const { key, entry } = this.#entry(inventory, endpointId);
    if (!this.store) return entry.ledger;
    const loaded = await this.store.load(key, entry.saved).catch(() => null);
    if (loaded && loaded !== "unchanged") {
      // A state this build cannot read is not tried again: this run's save replaces it.
      entry.ledger.importState(loaded.state);
      entry.saved = loaded.tag;
      entry.savedChanges = entry.ledger.changes;
    }
    return entry.ledger;
  }

  /**
   * A run of `endpointId` ended with its ledger read past its writes: saved for the next run,
   * whichever process makes it. Whether it was saved: not (and nothing thrown) without a store,
   * when the ledger cannot skip (its log was not read), or when another process saved since
   * this run took its ledger (the next run takes that one).
   */
  async keep(inventory: string, endpointId: number): Promise<boolean> {
    const { key, entry } = this.#entry(inventory, endpointId);
    // Unchanged since it was saved or taken (a run of stages that skipped every guest, each
    // stage of a job being a run of its own): the saved one is this one.
    const changes = entry.ledger.changes;
    if (changes === entry.savedChanges) return false;
    const state = entry.ledger.exportState();
    if (!state || !this.store) return false;
    const tag = await this.store.save(key, state, entry.saved);
    if (tag) [entry.saved, entry.savedChanges] = [tag, changes];
    return tag !== null;
  }
}
