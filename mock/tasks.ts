/**
 * Proxmox tasks: real UPIDs, a per-node task list, and completion after a configurable delay.
 * Completion is lazy: every request first calls `settle(now)`, which finishes the tasks whose
 * time has come and applies their effects. No timers, so nothing outlives the engine.
 */
import type { MockState, Task } from "./state.ts";

const hex8 = (n: number) => (n >>> 0).toString(16).toUpperCase().padStart(8, "0");

export function formatUpid(
  t: Pick<Task, "node" | "pid" | "pstart" | "starttime" | "type" | "id" | "user">,
): string {
  return `UPID:${t.node}:${hex8(t.pid)}:${hex8(t.pstart)}:${
    hex8(t.starttime)
  }:${t.type}:${t.id}:${t.user}:`;
}

export interface ParsedUpid {
  node: string;
  pid: number;
  pstart: number;
  starttime: number;
  type: string;
  id: string;
  user: string;
}

export function parseUpid(upid: string): ParsedUpid | undefined {
  const m =
    /^UPID:([a-zA-Z0-9][a-zA-Z0-9.-]*):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s]+):([^:\s]*):([^:\s]+):$/
      .exec(upid);
  if (!m) return undefined;
  return {
    node: m[1],
    pid: parseInt(m[2], 16),
    pstart: parseInt(m[3], 16),
    starttime: parseInt(m[4], 16),
    type: m[5],
    id: m[6],
    user: m[7],
  };
}

export interface StartTask {
  node: string;
  type: string;
  id: string;
  user: string;
  /** Log lines written while running; "TASK OK" is appended on completion. */
  log?: string[];
  effect?: () => void;
  /** Exit status; default "OK". */
  exitstatus?: string;
}

/** Finished tasks kept per node (the oldest go first, like a rotated task archive). */
export const DEFAULT_MAX_TASKS_PER_NODE = 10_000;

export class TaskRunner {
  /** Running tasks ordered by end time (few at a time; a sorted array is enough). */
  #pending: Task[] = [];

  constructor(
    private readonly state: () => MockState,
    private readonly delayMs: number,
    private readonly maxPerNode = DEFAULT_MAX_TASKS_PER_NODE,
  ) {}

  /**
   * Drops the oldest finished tasks of a node once it holds more than `maxPerNode` (in
   * batches of a tenth, so the cost is amortised); running tasks are always kept.
   */
  #trim(state: MockState, list: Task[]): void {
    const slack = Math.max(1, Math.floor(this.maxPerNode / 10));
    if (list.length <= this.maxPerNode + slack - 1) return;
    let excess = list.length - this.maxPerNode;
    const kept: Task[] = [];
    for (const t of list) {
      if (excess > 0 && t.status !== "running") {
        state.tasks.delete(t.upid);
        excess--;
      } else kept.push(t);
    }
    list.splice(0, list.length, ...kept);
  }

  reset(): void {
    this.#pending = [];
  }

  start(req: StartTask, nowMs: number): Task {
    const state = this.state();
    const starttime = Math.floor(nowMs / 1000);
    const pid = 0x1000 + (++state.counter % 0xfffff);
    const task: Task = {
      upid: "",
      node: req.node,
      pid,
      pstart: 0x100000 + state.counter * 7,
      starttime,
      type: req.type,
      // A UPID is colon-separated: escape colons in the id (volume ids have them).
      id: req.id.replaceAll(":", "\\x3a").replace(/\s+/g, "_"),
      user: req.user,
      endsAtMs: nowMs + this.delayMs,
      status: "running",
      log: [...(req.log ?? [])],
      effect: req.effect,
      exitstatus: req.exitstatus,
    };
    task.upid = formatUpid(task);
    state.tasks.set(task.upid, task);
    let list = state.tasksByNode.get(task.node);
    if (!list) state.tasksByNode.set(task.node, list = []);
    list.push(task);
    this.#trim(state, list);
    this.#pending.push(task);
    this.#pending.sort((a, b) => a.endsAtMs - b.endsAtMs);
    if (this.delayMs <= 0) this.settle(nowMs);
    return task;
  }

  /** Finish every task due by `nowMs`, applying its effect. */
  /** Returns how many tasks finished. */
  settle(nowMs: number): number {
    let n = 0;
    while (this.#pending.length && this.#pending[0].endsAtMs <= nowMs) {
      const task = this.#pending.shift()!;
      this.finish(task, nowMs);
      n++;
    }
    return n;
  }

  /** Finish one task now (also used by DELETE /tasks/{upid} with an error status). */
  finish(task: Task, nowMs: number, exitstatus?: string): void {
    if (task.status !== "running") return;
    this.#pending = this.#pending.filter((t) => t !== task);
    let status = exitstatus ?? task.exitstatus ?? "OK";
    if (!exitstatus && task.effect) {
      try {
        task.effect();
      } catch (err) {
        status = (err as Error).message || "unexpected error";
      }
    }
    task.effect = undefined;
    task.status = "stopped";
    task.exitstatus = status;
    task.endtime = Math.max(task.starttime, Math.floor(nowMs / 1000));
    task.log.push(status === "OK" ? "TASK OK" : `TASK ERROR: ${status}`);
  }
}
