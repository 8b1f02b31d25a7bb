/** Tasks: per-node and cluster task lists, a task's status and log, stopping a task. */
import { type Task } from "../state.ts";
import { type HandlerContext, type HandlerTable } from "./context.ts";

/** Recent tasks of all nodes, newest first (GET /cluster/tasks). */
function clusterTasks(ctx: HandlerContext): unknown[] {
  const all: Task[] = [];
  for (const list of ctx.state.tasksByNode.values()) all.push(...list.slice(-50));
  all.sort((a, b) => b.starttime - a.starttime || b.pid - a.pid);
  return all.map(taskEntry);
}

function taskEntry(t: Task): Record<string, unknown> {
  const e: Record<string, unknown> = {
    upid: t.upid,
    node: t.node,
    pid: t.pid,
    pstart: t.pstart,
    starttime: t.starttime,
    type: t.type,
    id: t.id,
    user: t.user,
  };
  if (t.status === "stopped") {
    e.endtime = t.endtime;
    e.status = t.exitstatus;
  } else e.status = "running";
  return e;
}

function taskList(ctx: HandlerContext): unknown[] {
  const list = ctx.state.tasksByNode.get(String(ctx.values.node)) ?? [];
  const v = ctx.values;
  const source = String(v.source ?? "archive");
  const out: unknown[] = [];
  for (let i = list.length - 1; i >= 0; i--) {
    const t = list[i];
    if (source === "archive" && t.status === "running") continue;
    if (source === "active" && t.status !== "running") continue;
    if (v.vmid !== undefined && t.id !== String(v.vmid)) continue;
    if (v.typefilter !== undefined && t.type !== v.typefilter) continue;
    if (v.userfilter !== undefined && !t.user.includes(String(v.userfilter))) continue;
    if (v.errors === 1 && (t.status === "running" || t.exitstatus === "OK")) continue;
    if (v.since !== undefined && t.starttime < Number(v.since)) continue;
    if (v.until !== undefined && t.starttime > Number(v.until)) continue;
    if (typeof v.statusfilter === "string") {
      const wanted = v.statusfilter.split(",");
      const state = t.status === "running" ? "running" : t.exitstatus === "OK" ? "ok" : "error";
      if (!wanted.includes(state)) continue;
    }
    out.push(taskEntry(t));
  }
  return out;
}

/** Proxmox's default `source=archive` hides running tasks; we list them too so a fresh UPID shows. */
function taskListAll(ctx: HandlerContext): unknown[] {
  if (ctx.values.source === undefined) ctx.values.source = "all";
  return taskList(ctx);
}

function taskStatus(ctx: HandlerContext) {
  const t = ctx.state.tasks.get(String(ctx.values.upid))!;
  const e: Record<string, unknown> = { ...taskEntry(t), status: t.status };
  if (t.status === "stopped") e.exitstatus = t.exitstatus;
  return e;
}

function taskLog(ctx: HandlerContext) {
  const t = ctx.state.tasks.get(String(ctx.values.upid))!;
  return t.log.map((line, i) => ({ n: i + 1, t: line }));
}

function taskStop(ctx: HandlerContext) {
  const t = ctx.state.tasks.get(String(ctx.values.upid))!;
  ctx.tasks.finish(t, ctx.nowMs, "interrupted by signal");
  return null;
}

export const taskHandlers: HandlerTable = {
  "GET /cluster/tasks": clusterTasks,
  "GET /nodes/{node}/tasks": taskListAll,
  "GET /nodes/{node}/tasks/{upid}/status": taskStatus,
  "GET /nodes/{node}/tasks/{upid}/log": taskLog,
  "DELETE /nodes/{node}/tasks/{upid}": taskStop,
};
