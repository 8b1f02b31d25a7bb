/**
 * Objects the sync owns below a VM or device (disks, interfaces, MACs, IPs): found by the
 * ownership tag and then kept only when their parent is one of this endpoint's, so several
 * endpoints never see each other's objects and hand-made objects are never touched.
 */
import { memo, memoShared, type StageContext } from "./context.ts";
import { createOrRead, PATHS, syncTags } from "./base.ts";
import type { InventoryObject } from "./ports.ts";
import { refId } from "./reconcile.ts";

/** Every object of `path` carrying the ownership tag (one paged read per run). */
export function taggedObjects(ctx: StageContext, path: string): Promise<InventoryObject[]> {
  return memo(ctx, `tagged:${path}`, async () => {
    await syncTags(ctx);
    return await ctx.inv.list(path, { tag: "bridgebox-synced" }, ctx.signal);
  });
}

/** Forget a tagged list after writing to it (the next stage reads it fresh). */
export function refreshTagged(ctx: StageContext, path: string): void {
  ctx.cache.delete(`tagged:${path}`);
}

/** Owned children of `parents` (parent id → key prefix), keyed `${parentId}:${name}`. */
export function childrenOf(
  objects: InventoryObject[],
  parentField: string,
  parents: ReadonlySet<number>,
  nameOf: (o: InventoryObject) => string = (o) => String(o.name),
): Map<string, InventoryObject> {
  const out = new Map<string, InventoryObject>();
  for (const o of [...objects].sort((a, b) => a.id - b.id)) {
    const parent = refId(o[parentField]);
    if (parent === null || !parents.has(parent)) continue;
    const key = `${parent}:${nameOf(o)}`;
    if (!out.has(key)) out.set(key, o);
  }
  return out;
}

/** Owned objects assigned to interfaces (IPs, MACs) of `type`, keyed `${ifaceId}:${value}`. */
export function assignedTo(
  objects: InventoryObject[],
  type: string,
  interfaces: ReadonlySet<number>,
  valueOf: (o: InventoryObject) => string,
): Map<string, InventoryObject> {
  const out = new Map<string, InventoryObject>();
  for (const o of [...objects].sort((a, b) => a.id - b.id)) {
    const t = typeof o.assigned_object_type === "object" && o.assigned_object_type !== null
      ? (o.assigned_object_type as { value?: string }).value
      : o.assigned_object_type;
    const id = Number(o.assigned_object_id);
    if (t !== type || !interfaces.has(id)) continue;
    const key = `${id}:${valueOf(o)}`;
    if (!out.has(key)) out.set(key, o);
  }
  return out;
}

/**
 * VLANs of a site by vid (any, hand-made ones too: they are referenced, never changed). Known
 * run-wide, not per endpoint: two endpoints may share a site, and a VLAN the first one made must
 * not be made again by the second (the rerun would then move prefixes to the older copy).
 */
export async function ensureVlans(
  ctx: StageContext,
  site: number,
  wanted: Map<number, string>,
): Promise<Map<number, number>> {
  const known = await memoShared(ctx, `vlans:${site}`, async () => {
    const list = await ctx.inv.list(PATHS.vlans, { site_id: String(site) }, ctx.signal);
    const out = new Map<number, number>();
    for (const v of [...list].sort((a, b) => a.id - b.id)) {
      if (refId(v.site) === site && !out.has(Number(v.vid))) out.set(Number(v.vid), v.id);
    }
    return out;
  });
  const missing = [...wanted].filter(([vid]) => !known.has(vid)).sort((a, b) => a[0] - b[0]);
  if (missing.length) {
    const tags = await syncTags(ctx);
    const write = (list: [number, string][]) =>
      list.length
        ? ctx.inv.create(
          PATHS.vlans,
          list.map(([vid, name]) => ({
            vid,
            name: name.slice(0, 64),
            site,
            status: "active",
            tags: [tags.synced],
          })),
          ctx.signal,
        )
        : Promise.resolve([]);
    const { value: made, made: allMade } = await createOrRead(
      ctx,
      () => write(missing),
      async () => {
        // Another run made some of them: use those, create only the rest.
        const now = await ctx.inv.list(PATHS.vlans, { site_id: String(site) }, ctx.signal);
        for (const v of [...now].sort((a, b) => a.id - b.id)) {
          if (refId(v.site) === site && !known.has(Number(v.vid))) known.set(Number(v.vid), v.id);
        }
        const rest = await write(missing.filter(([vid]) => !known.has(vid)));
        ctx.result.created += rest.length;
        return rest;
      },
    );
    made.forEach((v) => known.set(Number(v.vid), v.id));
    if (allMade) ctx.result.created += made.length;
  }
  return known;
}
