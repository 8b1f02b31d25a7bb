/** @jsxImportSource hono/jsx */
/**
 * A hypervisor task a verb started, followed on the guest's page until it stops: read through
 * the backend's `GET /hypervisor/tasks/{upid}` with the backend key the console already uses
 * for verbs. Without JavaScript the page refreshes itself while the task runs; console.js
 * polls the JSON route below instead and fills the same cells.
 */
import type { Hono } from "hono";
import { detailOf, type Json } from "./api.ts";
import type { ConsoleEnv, Ctx } from "./context.ts";
import { Badge, When } from "./layout.tsx";

export interface FollowedTask {
  upid: string;
  endpointId: number;
  /** The backend's answer, or why there is none. */
  task: Json | null;
  problem?: string;
}

const ENDPOINT_ID = /^[1-9]\d{0,14}$/;

/** The task named in the page's query (`task`, `endpoint`), read from the backend. */
export async function followedTask(
  c: Ctx,
  upid: string | undefined,
  endpoint: string | undefined,
): Promise<FollowedTask | null> {
  if (!upid || !endpoint || !ENDPOINT_ID.test(endpoint) || upid.length > 512) return null;
  const endpointId = Number(endpoint);
  const answer = await c.get("api").backend(
    "GET",
    `/hypervisor/tasks/${encodeURIComponent(upid)}?endpoint_id=${endpointId}`,
  );
  if (answer.status === 200 && answer.body && typeof answer.body === "object") {
    return { upid, endpointId, task: answer.body };
  }
  return { upid, endpointId, task: null, problem: answer.reason ?? detailOf(answer) };
}

export const isRunning = (t: FollowedTask | null) => t?.task?.status === "running";

/** Where console.js polls while the task runs. */
export const pollUrl = (vmId: string, t: FollowedTask) =>
  `/ui/vms/${vmId}/task?${new URLSearchParams({ upid: t.upid, endpoint: String(t.endpointId) })}`;

function ExitBadge(props: { task: Json }) {
  if (props.task.status !== "stopped") return <Badge tone="info">not yet</Badge>;
  const exit = String(props.task.exitstatus ?? "");
  return exit === "OK"
    ? <Badge tone="ok">succeeded</Badge>
    : <Badge tone="bad">{`failed: ${exit || "unknown"}`}</Badge>;
}

export function TaskCard(props: { followed: FollowedTask; here: string }) {
  const { followed, here } = props;
  const t = followed.task;
  return (
    <section class="card" data-task={followed.upid}>
      <h2>Hypervisor task</h2>
      <dl class="kv">
        <dt>Task</dt>
        <dd>
          <code class="small">{followed.upid}</code>
        </dd>
        {t
          ? (
            <>
              <dt>Status</dt>
              {/* Proxmox says "stopped" for a task that has ended, whatever the guest did. */}
              <dd data-task-status>{t.status === "stopped" ? "finished" : "running"}</dd>
              <dt>Result</dt>
              <dd data-task-exit>
                <ExitBadge task={t} />
              </dd>
              <dt>Type</dt>
              <dd>{t.type} {t.id}</dd>
              <dt>Started</dt>
              <dd>
                <When
                  at={Number.isInteger(t.starttime) && t.starttime > 0
                    ? new Date(t.starttime * 1000).toISOString()
                    : undefined}
                />
              </dd>
            </>
          )
          : (
            <>
              <dt>Status</dt>
              <dd class="error-text">{followed.problem}</dd>
            </>
          )}
      </dl>
      {(isRunning(followed) || !t) && <a href={here}>Refresh</a>}
    </section>
  );
}

/** The JSON console.js polls: the backend's task status, proxied with the backend key. */
export function taskRoutes(app: Hono<ConsoleEnv>) {
  app.get("/ui/vms/:id{[0-9]+}/task", async (c) => {
    const followed = await followedTask(c, c.req.query("upid"), c.req.query("endpoint"));
    if (!followed) {
      return c.json({ detail: "Give upid and endpoint (a backend endpoint id)." }, 400);
    }
    if (!followed.task) return c.json({ detail: followed.problem }, 502);
    return c.json(followed.task, 200);
  });
}
