/**
 * NetBox 4.6's optimistic locking: a weak ETag made from an object's `last_updated` (as Python's
 * isoformat writes it), and the If-Match list a write must match (docs/api-behaviour.md,
 * Inventory: concurrency).
 */
import type { StoredObject } from "./types.ts";

/** `W/"2026-08-11T10:00:00.123000+00:00"` for a record (its creation time when never updated). */
export function etagOf(record: StoredObject): string | null {
  const stamp = record.last_updated ?? record.created;
  if (typeof stamp !== "string") return null;
  const time = Date.parse(stamp);
  if (!Number.isFinite(time)) return null;
  // Python's isoformat: microseconds only when non-zero, UTC as +00:00.
  const iso = new Date(time).toISOString();
  const ms = iso.slice(20, 23);
  const base = iso.slice(0, 19);
  return `W/"${ms === "000" ? base : `${base}.${ms}000`}+00:00"`;
}

/** The ETags an If-Match header lists; an absent header or `*` asks for nothing. */
export function parseIfMatch(header: string | null | undefined): string[] {
  if (!header || header.trim() === "*") return [];
  return header.split(",").map((e) => e.trim()).filter((e) => e !== "");
}

/** Does the record satisfy the If-Match list (an empty list always does)? */
export function matchesIfMatch(record: StoredObject, ifMatch: readonly string[]): boolean {
  if (ifMatch.length === 0) return true;
  const current = etagOf(record);
  return current === null || ifMatch.includes(current);
}
