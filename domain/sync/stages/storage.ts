/**
 * Stage 2, storage: the plugin storage records, upserted by cluster + storage name, from the
 * cluster's storage configuration (`/storage`) and each node's view of it
 * (`/nodes/{n}/storage`). A storage gone upstream is marked stale, never deleted.
 */
import { hvGet, mapLimit, memo, type StageContext } from "../context.ts";
import { clusterBase, PATHS } from "../base.ts";
import { type Desired, indexBy, reconcile } from "../reconcile.ts";
import type { InventoryObject } from "../ports.ts";

interface StorageConfig {
  storage: string;
  type?: string;
  content?: string;
  path?: string;
  shared?: number;
  disable?: number;
  nodes?: string;
}

interface NodeStorage {
  storage: string;
  type?: string;
  content?: string;
  active?: number;
  enabled?: number;
  shared?: number;
  total?: number;
  used?: number;
  avail?: number;
}

interface NodeEntry {
  node: string;
  status?: string;
}

/** Node name → its storage list; offline nodes are skipped. */
export function nodeStorages(ctx: StageContext): Promise<Map<string, NodeStorage[]>> {
  return memo(ctx, "node-storages", async () => {
    const nodes = (await hvGet<NodeEntry[]>(ctx, "/nodes") ?? [])
      .filter((n) => n.status !== "offline")
      .map((n) => n.node)
      .sort();
    const lists = await mapLimit(
      nodes,
      ctx.concurrency,
      ctx.signal,
      (node) => hvGet<NodeStorage[]>(ctx, `/nodes/${node}/storage`),
    );
    return new Map(nodes.map((n, i) => [n, lists[i] ?? []]));
  });
}

/** Plugin storage records of this cluster, by storage name. */
export function storageIndex(ctx: StageContext): Promise<Map<string, InventoryObject>> {
  return memo(ctx, "storage-index", async () => {
    const base = await clusterBase(ctx);
    const list = await ctx.inv.list(
      PATHS.pluginStorage,
      { cluster_id: String(base.pluginCluster.id) },
      ctx.signal,
    );
    return indexBy(list, (s) => String(s.name));
  });
}

export async function syncStorage(ctx: StageContext): Promise<void> {
  const base = await clusterBase(ctx);
  const configs = await hvGet<StorageConfig[]>(ctx, "/storage") ?? [];
  const perNode = await nodeStorages(ctx);
  ctx.progress(0, configs.length, `${configs.length} storages`);
  const existing = await storageIndex(ctx);
  const desired: Desired[] = [...configs].sort((a, b) => a.storage.localeCompare(b.storage))
    .map((cfg) => {
      const seen = [...perNode].flatMap(([node, list]) =>
        list.filter((s) => s.storage === cfg.storage).map((s) => ({ node, s }))
      );
      const shared = cfg.shared === 1;
      const sum = (f: "total" | "used" | "avail") => {
        const values = seen.map(({ s }) => s[f]).filter((v): v is number => typeof v === "number");
        if (!values.length) return null;
        return shared ? values[0] : values.reduce((a, b) => a + b, 0);
      };
      return {
        key: cfg.storage,
        label: `storage ${cfg.storage}`,
        body: {
          cluster: base.pluginCluster.id,
          name: cfg.storage,
          storage_type: cfg.type ?? null,
          content: (cfg.content ?? "").split(",").map((c) => c.trim()).filter(Boolean).sort(),
          path: cfg.path ?? null,
          nodes: cfg.nodes
            ? cfg.nodes.split(",").map((n) => n.trim()).filter(Boolean).sort()
            : seen.map(({ node }) => node).sort(),
          shared,
          enabled: cfg.disable !== 1,
          total: sum("total"),
          used: sum("used"),
          avail: sum("avail"),
          status: "active",
          raw_config: cfg,
        },
      };
    });
  const saved = await reconcile(ctx, {
    path: PATHS.pluginStorage,
    existing,
    desired,
    touch: { last_synced: new Date(ctx.now()).toISOString() },
    orphan: () => ({ status: "stale" }),
  });
  for (const [k, v] of saved.objects) existing.set(k, v);
  ctx.progress(configs.length, configs.length, `${configs.length} storages synced`);
}
