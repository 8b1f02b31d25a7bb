/**
 * Stage 7, vm-snapshots: each guest's snapshots (`/nodes/{n}/{type}/{vmid}/snapshot`, the
 * "current" pseudo-entry left out) into plugin snapshot records, identified by endpoint +
 * vmid + snapshot name. Only guests whose config names a `parent` have snapshots, so only
 * those are asked. A snapshot gone upstream is marked stale.
 */
import { mapLimit, type StageContext } from "../context.ts";
import { clusterBase, PATHS } from "../base.ts";
import { nodeIndex } from "./devices.ts";
import { eachPage, guests, listByIds, onlyFields, SLICE, vmAnchors } from "../guests.ts";
import { type Desired, indexBy, reconcile } from "../reconcile.ts";
import { epochToIso } from "../proxmox.ts";
import { digestOf, LEDGER_MODELS, readLog, SliceLogReads, SNAPSHOT_STAGE } from "../ledger.ts";

interface SnapshotEntry {
  name: string;
  description?: string;
  parent?: string;
  snaptime?: number;
  vmstate?: number;
}

/**
 * Slice by slice of guests (guests.ts): one slice's snapshot lists and records are read,
 * written, and let go; the records of guests gone upstream are marked after every slice. What
 * the stage keeps throughout is the vmids that have records.
 */
export async function syncSnapshots(ctx: StageContext): Promise<void> {
  const base = await clusterBase(ctx);
  const { nodes } = await nodeIndex(ctx);
  const list = await guests(ctx);
  const anchors = await vmAnchors(ctx);
  const endpoint = { endpoint_id: String(base.pluginEndpoint) };
  const recorded = new Set<number>();
  await eachPage(ctx, PATHS.snapshots, { ...endpoint, ...onlyFields(["id", "vmid"]) }, (page) => {
    for (const s of page) recorded.add(Number(s.vmid));
  });
  /** The records of `vmids` (those that have any), by vmid + name (the first by id wins). */
  const recordsOf = async (vmids: number[]) =>
    indexBy(
      await listByIds(ctx, PATHS.snapshots, "vmid", vmids.filter((v) => recorded.has(v)), endpoint),
      (s) => `${s.vmid}:${s.name}`,
    );
  ctx.progress(0, list.count, `snapshots of ${list.count} guests`);
  // The ledger (docs/sync.md, "Re-runs: guests that did not change"): a guest whose snapshot
  // list upstream would write the same records as when the ledger recorded them, untouched since,
  // is not read again (its snapshot list is still asked for: it is what the digest is made of).
  const ledger = await readLog(ctx);
  let total = 0;
  const closing = new SliceLogReads(ctx);
  for (const slice of list.slices()) {
    const mark = ledger?.beginSlice() ?? 0;
    try {
      const withSnapshots = slice.filter((g) => typeof g.config.parent === "string");
      const lists = await mapLimit(
        withSnapshots,
        ctx.concurrency,
        ctx.signal,
        (g) =>
          ctx.hv.get<SnapshotEntry[]>(
            `/nodes/${g.node}/${g.type}/${g.vmid}/snapshot`,
            undefined,
            ctx.signal,
          ),
      );
      const byGuest = new Map<number, Desired[]>(slice.map((g) => [g.vmid, []]));
      withSnapshots.forEach((g, i) => {
        for (const s of lists[i] ?? []) {
          if (!s.name || s.name === "current") continue;
          byGuest.get(g.vmid)!.push({
            key: `${g.vmid}:${s.name}`,
            label: `snapshot ${s.name} of vmid ${g.vmid}`,
            body: {
              endpoint: base.pluginEndpoint,
              virtual_machine: anchors.get(g.vmid) ?? null,
              node: nodes.get(g.node)?.id ?? null,
              vmid: g.vmid,
              vm_type: g.type,
              name: s.name,
              description: s.description ?? "",
              parent: s.parent ?? null,
              snaptime: epochToIso(s.snaptime),
              vmstate: s.vmstate === 1,
              status: "active",
              raw_config: s,
            },
          });
        }
      });
      const digests = new Map<number, number>();
      const desired: Desired[] = [];
      for (const [vmid, wanted] of byGuest) {
        total += wanted.length;
        const digest = digestOf(wanted.map((d) => d.body));
        // Its records, as a compare would have counted them (those gone upstream are stale).
        if (ledger?.unchanged(SNAPSHOT_STAGE, vmid, digest)) ctx.result.unchanged += wanted.length;
        else {
          digests.set(vmid, digest);
          desired.push(...wanted);
        }
      }
      if (!digests.size) continue;
      const existing = await recordsOf([...digests.keys()]);
      const track = (records: Map<string, { id: number }>) => {
        for (const [key, record] of records) {
          ledger?.track(Number(key.split(":")[0]), [[LEDGER_MODELS.snapshot, record.id]]);
        }
      };
      track(existing);
      const failed = ctx.result.failed;
      const saved = await reconcile(ctx, {
        path: PATHS.snapshots,
        existing,
        desired,
        orphan: () => ({ status: "stale" }),
        answer: ["id"], // nothing of what the writes answer is read
      });
      if (!ledger) continue;
      track(saved.objects);
      const refused = ctx.result.failed !== failed; // compared again next run
      // Entries made since the slice's read (someone's edit meanwhile) forget their guest; read
      // while the next slice is written.
      await closing.close(ledger, () => {
        if (!refused) {
          for (const [vmid, digest] of digests) ledger.record(SNAPSHOT_STAGE, vmid, digest, mark);
        }
      });
    } finally {
      ledger?.endSlice();
    }
  }
  await closing.settle();
  // Snapshots of guests gone upstream are marked stale.
  const present = new Set(list.vmids);
  const gone = [...recorded].filter((vmid) => !present.has(vmid)).sort((a, b) => a - b);
  for (let i = 0; i < gone.length; i += SLICE) {
    await reconcile(ctx, {
      path: PATHS.snapshots,
      existing: await recordsOf(gone.slice(i, i + SLICE)),
      desired: [],
      orphan: () => ({ status: "stale" }),
      answer: ["id"], // nothing of what the writes answer is read
    });
  }
  ctx.progress(total, total, `${total} snapshots synced`);
}
