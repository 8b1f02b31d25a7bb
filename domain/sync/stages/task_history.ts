/**
 * Stage 4, task-history: each node's task list (`/nodes/{n}/tasks`) into plugin task
 * records, upserted by UPID (globally unique on Proxmox). Tasks are history: they are never
 * marked or deleted when they age out of the hypervisor's list.
 */
import { hvGet, mapLimit, type StageContext } from "../context.ts";
import { clusterBase, PATHS } from "../base.ts";
import { nodeIndex } from "./devices.ts";
import { vmAnchors } from "../guests.ts";
import { type Desired, indexBy, reconcile, refId } from "../reconcile.ts";

import { epochToIso } from "../proxmox.ts";

const UPIDS_PER_QUERY = 100;
/** Tasks per page of `/nodes/{n}/tasks` (Proxmox answers 50 without a limit). */
export const TASK_PAGE = 500;
/** At most this many tasks per node and run: the archive of a busy node can be huge. */
export const TASK_PAGES_MAX = 20;

interface TaskEntry {
  upid: string;
  node?: string;
  type?: string;
  id?: string;
  user?: string;
  status?: string;
  starttime?: number;
  endtime?: number;
  pid?: number;
  pstart?: number;
}

/**
 * A node's task archive, newest first, page by page (`start`, `limit`) until a short page: the
 * first page alone misses everything older than Proxmox's default 50.
 */
async function taskArchive(ctx: StageContext, node: string): Promise<TaskEntry[]> {
  const out: TaskEntry[] = [];
  for (let page = 0; page < TASK_PAGES_MAX; page++) {
    const list = await hvGet<TaskEntry[]>(ctx, `/nodes/${node}/tasks`, {
      start: page * TASK_PAGE,
      limit: TASK_PAGE,
    }) ?? [];
    out.push(...list);
    if (list.length < TASK_PAGE) break;
  }
  return out;
}

export async function syncTaskHistory(ctx: StageContext): Promise<void> {
  const base = await clusterBase(ctx);
  const { nodes } = await nodeIndex(ctx);
  const anchors = await vmAnchors(ctx);
  const names = (await hvGet<{ node: string; status?: string }[]>(ctx, "/nodes") ?? [])
    .filter((n) => n.status !== "offline").map((n) => n.node).sort();
  const lists = await mapLimit(
    names,
    ctx.concurrency,
    ctx.signal,
    (node) => taskArchive(ctx, node),
  );
  const tasks = lists.flatMap((l, i) => (l ?? []).map((t) => ({ ...t, node: t.node ?? names[i] })))
    .filter((t) => typeof t.upid === "string" && t.upid);
  ctx.progress(0, tasks.length, `${tasks.length} tasks`);
  // Looked up by UPID (history only grows: never list it whole). A UPID is unique in the
  // inventory; one already recorded for another endpoint (two copies of one cluster) stays there.
  const found = [];
  const upids = tasks.map((t) => t.upid);
  for (let i = 0; i < upids.length; i += UPIDS_PER_QUERY) {
    found.push(
      ...await ctx.inv.list(PATHS.tasks, { upid: upids.slice(i, i + UPIDS_PER_QUERY) }, ctx.signal),
    );
  }
  const byUpid = indexBy(found, (t) => String(t.upid));
  const existing = new Map(
    [...byUpid].filter(([, t]) => refId(t.endpoint) === base.pluginEndpoint),
  );
  const foreign = new Set([...byUpid.keys()].filter((upid) => !existing.has(upid)));
  const desired: Desired[] = tasks.filter((t) => !foreign.has(t.upid)).map((t) => {
    const vmid = /^\d+$/.test(t.id ?? "") ? Number(t.id) : null;
    const running = t.status === undefined || t.status === "running" || !t.endtime;
    return {
      key: t.upid,
      label: `task ${t.upid}`,
      body: {
        endpoint: base.pluginEndpoint,
        node: nodes.get(t.node!)?.id ?? null,
        virtual_machine: vmid !== null ? anchors.get(vmid) ?? null : null,
        upid: t.upid,
        node_name: t.node ?? "",
        task_type: t.type ?? "",
        task_id: t.id ?? "",
        vmid,
        username: t.user ?? "",
        status: running ? "running" : (t.status ?? ""),
        exitstatus: running ? null : (t.status ?? null),
        starttime: epochToIso(t.starttime),
        endtime: epochToIso(t.endtime),
        pid: t.pid ?? null,
        pstart: t.pstart ?? null,
        raw_config: t,
      },
    };
  });
  await reconcile(ctx, { path: PATHS.tasks, existing, desired, orphan: "keep" });
  ctx.progress(tasks.length, tasks.length, `${tasks.length} tasks synced`);
}
