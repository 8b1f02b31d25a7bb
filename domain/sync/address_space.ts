/**
 * NetBox's unique IP space meets the sync (docs/sync.md, "Addresses already in the inventory"):
 * an address or prefix the inventory refuses as a duplicate is looked up once, and
 * - adopted when nobody holds it: an unassigned address (made by hand, reserved) is assigned to
 *   the interface that has it, a hand-made prefix gets the sync's fields; hand-set tags stay;
 * - moved when this endpoint's own stage no longer wants it where it is (a guest's address
 *   moved to another of its interfaces or guests);
 * - otherwise left with its holder (another cluster's guest, a node, an admin's assignment):
 *   a conflict, reported with the holder's name, not a failure of the run.
 */
import type { StageContext } from "./context.ts";
import type { InventoryObject } from "./ports.ts";
import { changes, type Desired, refId } from "./reconcile.ts";

const DUPLICATE = /^Duplicate (IP address|prefix) found in /;

/** NetBox's duplicate answer for `field`, or null when the refusal is about something else. */
function duplicateText(answer: Record<string, unknown>, field: string): string | null {
  const messages = answer[field];
  const first = Array.isArray(messages) ? messages.find((m) => typeof m === "string") : null;
  return typeof first === "string" && DUPLICATE.test(first) ? first : null;
}

/** "vm-100 net0", "pve1 vmbr0": the holder of an assigned address, as an operator reads it. */
function holderName(o: InventoryObject): string {
  const assigned = o.assigned_object as Record<string, unknown> | null | undefined;
  if (!assigned) return String(o.display ?? o.address ?? o.prefix);
  const parent = (assigned.virtual_machine ?? assigned.device) as
    | Record<string, unknown>
    | undefined;
  return [parent?.display ?? parent?.name, assigned.display ?? assigned.name]
    .filter(Boolean).join(" ");
}

function hasTag(o: InventoryObject, tag: number): boolean {
  return Array.isArray(o.tags) && o.tags.some((t) => refId(t) === tag);
}

export interface AddressSpaceOptions {
  path: string;
  /** "address" (IP addresses) or "prefix". */
  field: "address" | "prefix";
  /** The stage's own existing objects by key; a moved one leaves this map (not an orphan). */
  existing: Map<string, InventoryObject>;
  /** Keys the stage wants this run. */
  wanted: ReadonlySet<string>;
  managedTags: ReadonlySet<number>;
  /** The ownership tag: an object carrying it belongs to some endpoint's sync. */
  syncedTag: number;
  /**
   * A holder the stage has yet to reach (an address of a guest in a later slice, which may
   * give it up): true leaves `desired` unwritten and unreported, for the stage to try again
   * once it has reached every holder.
   */
  postpone?: (desired: Desired, holder: InventoryObject) => boolean;
  /** Ids of objects the stage no longer wants elsewhere (kept for this): taken as free. */
  released?: ReadonlySet<number>;
}

/** The `resolveRefused` of reconcile for addresses and prefixes. */
export function adoptOrReport(ctx: StageContext, options: AddressSpaceOptions) {
  return async (
    desired: Desired,
    answer: Record<string, unknown>,
  ): Promise<InventoryObject | "conflict" | null> => {
    const refusal = duplicateText(answer, options.field);
    if (!refusal) return null;
    const value = String(desired.body[options.field]);
    const lookup = options.field === "address" ? value.split("/")[0] : value;
    const holders = (await ctx.inv.list(options.path, { [options.field]: lookup }, ctx.signal))
      .filter((o) => refId(o.vrf) === null)
      .sort((a, b) => a.id - b.id);
    const ownOrphans = new Map(
      [...options.existing].filter(([key]) => !options.wanted.has(key)).map(([k, o]) => [o.id, k]),
    );
    const free = holders.find((o) =>
      ownOrphans.has(o.id) || options.released?.has(o.id) ||
      (options.field === "address"
        ? o.assigned_object_id === null || o.assigned_object_id === undefined
        : !hasTag(o, options.syncedTag))
    );
    if (free) {
      const patch = changes(free, desired.body, options.managedTags);
      const [written] = patch
        ? await ctx.inv.update(options.path, [{ id: free.id, ...patch }], ctx.signal)
        : [free];
      const orphanKey = ownOrphans.get(free.id);
      if (orphanKey !== undefined) options.existing.delete(orphanKey);
      return written ?? free;
    }
    const holder = holders[0];
    if (holder && options.postpone?.(desired, holder)) return "conflict";
    ctx.itemConflict(
      desired.label,
      `not written: ${refusal} (NetBox's unique IP space, ENFORCE_GLOBAL_UNIQUE); ` +
        `it stays with ${holder ? holderName(holder) : "its holder"}`,
    );
    return "conflict";
  };
}
