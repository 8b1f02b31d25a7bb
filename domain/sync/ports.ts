/**
 * The two narrow ports the sync stages talk through (docs/sync.md). Implementations live in
 * clients/ (HTTP) and in tests (in-memory fakes); the stages never know which.
 */
import type { HypervisorEndpointRecord } from "../../storage/ports.ts";

/** Reads the hypervisor API (Proxmox VE paths such as `/cluster/resources`), returning `data`. */
export interface HypervisorReader {
  get<T = unknown>(
    path: string,
    params?: Record<string, string | number | boolean | undefined>,
    signal?: AbortSignal,
  ): Promise<T>;
}

/** An inventory object as the NetBox REST API renders it (nested FKs, `{value,label}` choices). */
export interface InventoryObject {
  id: number;
  [field: string]: unknown;
}

/** A write body: FKs as ids, choices as values, tags as tag ids. */
export type InventoryBody = Record<string, unknown>;

/**
 * The inventory's REST API, NetBox style. `path` is relative to `/api/`, e.g.
 * `virtualization/virtual-machines/`. Lists read every page (`limit=1000`); writes are bulk
 * (list bodies) and may be split into chunks by the implementation.
 */
export interface InventoryApi {
  list(
    path: string,
    filters: Record<string, string | string[]>,
    signal?: AbortSignal,
  ): Promise<InventoryObject[]>;
  /**
   * The same walk as `list`, page by page, so a caller keeps only what it needs of each page.
   * Absent (a test fake): `list` is read whole instead.
   */
  pages?(
    path: string,
    filters: Record<string, string | string[]>,
    signal?: AbortSignal,
  ): AsyncIterable<InventoryObject[]>;
  /**
   * `answer` names the fields the caller reads of the objects written (NetBox's `fields`, which
   * a bulk write's answer honours as a list does): the inventory renders those only. An
   * inventory that ignores `fields` answers whole objects, which hold them.
   */
  create(
    path: string,
    bodies: InventoryBody[],
    signal?: AbortSignal,
    answer?: readonly string[],
  ): Promise<InventoryObject[]>;
  /** Each body carries its `id`; PATCH semantics (only the fields given change). */
  update(
    path: string,
    bodies: (InventoryBody & { id: number })[],
    signal?: AbortSignal,
    answer?: readonly string[],
  ): Promise<InventoryObject[]>;
  delete(path: string, ids: number[], signal?: AbortSignal): Promise<void>;
  /**
   * One object as it is now, with the ETag its detail GET answered (NetBox 4.6; null from an
   * older inventory); null when the object is gone. With `updateGuarded`, it lets the sync
   * re-read an object someone edited between its read and its write (docs/sync.md).
   */
  readOne?(
    path: string,
    id: number,
    signal?: AbortSignal,
  ): Promise<{ object: InventoryObject; etag: string | null } | null>;
  /**
   * Whether `lastUpdated` is what the inventory answered to this client's own latest write of
   * the object (create or update): the edit re-check tells the run's own writes from someone
   * else's.
   */
  isOwnWrite?(path: string, id: number, lastUpdated: unknown): boolean;
  /**
   * PATCH one object with `If-Match: <etag>` (no header when null): the object, or "changed"
   * when the inventory refused the precondition (edited since that ETag), or "gone". NetBox 4.6
   * honours If-Match on single writes only, never on a bulk (list) write.
   */
  updateGuarded?(
    path: string,
    body: InventoryBody & { id: number },
    etag: string | null,
    signal?: AbortSignal,
  ): Promise<InventoryObject | "changed" | "gone">;
  /**
   * The change log's entries (`core/object-changes/`) of `ids` (those there are), with the
   * fields the sync's ledger reads (docs/sync.md, "Re-runs: guests that did not change").
   * Absent: the ledger is not kept and every run compares every guest.
   */
  changesById?(ids: number[], signal?: AbortSignal): Promise<ChangeEntry[]>;
  /**
   * The change log's lowest (`oldest`) or highest (`newest`) id now, one read of one entry;
   * null when the log is empty.
   */
  changeEnd?(end: "oldest" | "newest", signal?: AbortSignal): Promise<number | null>;
  /** GET one document that is not a list (a settings singleton); null when there is none. */
  read?(path: string, signal?: AbortSignal): Promise<Record<string, unknown> | null>;
  /**
   * The `API-Version` the inventory announced ("4.6", "4.2"), null before its first answer or
   * when it sent none: the stages use what that version offers (docs/sync.md, NetBox versions).
   */
  apiVersion?(): string | null;
}

/** One change-log entry, as far as the sync reads it. */
export interface ChangeEntry {
  id: number;
  /** The request that made the change (its answer's `X-Request-ID`). */
  request_id: string | null;
  /** `create`, `update` or `delete`; NetBox renders it as a choice (`{value, label}`). */
  action: string | { value: string; label?: string };
  /** `app_label.model`, e.g. `virtualization.virtualmachine`. */
  changed_object_type: string;
  changed_object_id: number;
}

/**
 * What a failed call can tell an operator. Clients throw errors carrying these fields; the
 * runner copies them into the `error` frame. Nothing here may hold a secret.
 */
export interface CallFailure {
  operation?: string;
  url?: string;
  status?: number | null;
  bodyExcerpt?: string;
  hint?: string;
  /** Which object a failed inventory write was about. */
  object?: string;
  /** The inventory answered and refused the data (validation, "already exists"). */
  refused?: boolean;
  /** The hypervisor endpoint cannot be used at all (no connection, login refused). */
  unusable?: boolean;
}

/** The hypervisor endpoint a stage runs for, as the stages need to know it. */
export type SyncEndpoint = Pick<
  HypervisorEndpointRecord,
  "id" | "name" | "ip" | "port" | "use_https" | "verify_ssl" | "username"
>;

/** Is an announced API version ("4.6") at least major.minor? Unknown (null) counts as no. */
export function versionAtLeast(version: string | null, major: number, minor: number): boolean {
  const m = /^(\d+)\.(\d+)/.exec(version ?? "");
  if (!m) return false;
  return Number(m[1]) > major || (Number(m[1]) === major && Number(m[2]) >= minor);
}
