/** @jsxImportSource hono/jsx */
/**
 * Jobs: the list (status, stages, duration, who started it) and a job's page with its
 * per-stage results and log. A running job's page follows the job stream live; a reload or
 * a second tab picks the live view up again from the stored log.
 */
import { Hono } from "hono";
import { detailOf, type Json } from "./api.ts";
import type { ConsoleEnv, ConsoleServices } from "./context.ts";
import { can } from "../../domain/netbox/tokens.ts";
import { ApiProblem, Layout, Notice, PageHead, Pager, Status, Table, When } from "./layout.tsx";
import { errorPage } from "./errors.tsx";
import { StageTable } from "./stage_table.tsx";
import { PAGE_SIZE } from "./inventory.tsx";

const JOBS = "/api/core/jobs/";

function duration(job: Json): string {
  const start = Date.parse(job.started ?? "");
  const end = Date.parse(job.completed ?? "") || Date.now();
  if (Number.isNaN(start)) return "—";
  const s = Math.max(0, Math.round((end - start) / 1000));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

function stagesOf(job: Json): Json[] {
  const data = job.data;
  if (Array.isArray(data)) return data;
  if (data && Array.isArray(data.stages)) return data.stages;
  return [];
}

/** Who asked for the job: the job's `user` (the token that queued it). */
function startedBy(job: Json): string {
  if (typeof job.user?.display === "string") return job.user.display;
  // Jobs made before the requester was recorded on the job: their first log line, if kept.
  const first = Array.isArray(job.log) ? job.log[0]?.message : null;
  const by = typeof first === "string" ? /\bby ([^:]+):/.exec(first)?.[1] : null;
  return by ?? "—";
}

const statusOf = (job: Json): string => String(job.status?.value ?? job.status ?? "");

const NOTICES: Record<string, [("ok" | "error"), string]> = {
  cancelled: ["ok", "The job is cancelled."],
  running: ["error", "A running job cannot be cancelled; wait for it to finish."],
  denied: ["error", "Your token may not cancel jobs (it needs core.delete_job)."],
  unavailable: ["error", "Cancelling jobs is not available on this server yet."],
  gone: ["error", "That job no longer exists."],
};

const FINISHED = new Set(["completed", "errored", "failed"]);
const CANCELLABLE = new Set(["scheduled", "pending"]);

export function jobRoutes(_ctx: ConsoleServices): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();

  app.get("/ui/jobs", async (c) => {
    const url = new URL(c.req.url);
    const offset = Math.max(0, Math.floor(Number(url.searchParams.get("offset") ?? 0) || 0));
    const status = url.searchParams.get("status");
    const params = new URLSearchParams({ limit: String(PAGE_SIZE), ordering: "-created" });
    if (offset) params.set("offset", String(offset));
    if (status) params.set("status", status.slice(0, 20));
    const answer = await c.get("api").get(`${JOBS}?${params}`);
    const session = c.get("session");
    const mayCancel = can(c.get("auth"), "core.delete_job");
    const notice = NOTICES[c.req.query("notice") ?? ""];
    return c.html(
      <Layout title="Jobs" active="jobs" auth={c.get("auth")} session={c.get("session")}>
        <PageHead title="Jobs" sub="Sync and repair runs, newest first.">
          <a class="button primary" href="/ui/sync">Start a sync</a>
        </PageHead>
        {notice && <Notice kind={notice[0]}>{notice[1]}</Notice>}
        {answer.status !== 200
          ? <ApiProblem status={answer.status} detail={detailOf(answer)} what="view jobs" />
          : (
            <>
              <Table
                rows={answer.body.results}
                empty="No job yet."
                columns={[
                  {
                    label: "Job",
                    cell: (j: Json) => <a href={`/ui/jobs/${j.id}`}>#{j.id} {j.name}</a>,
                  },
                  { label: "Status", cell: (j: Json) => <Status value={j.status} /> },
                  { label: "Stages", cell: (j: Json) => stagesOf(j).length || "—", class: "num" },
                  { label: "Created", cell: (j: Json) => <When at={j.created} /> },
                  { label: "Duration", cell: (j: Json) => duration(j) },
                  { label: "Started by", cell: (j: Json) => startedBy(j) },
                  {
                    label: "Schedule",
                    cell: (j: Json) => (
                      <>
                        {j.scheduled ? <When at={j.scheduled} /> : "—"}
                        {j.interval ? ` · every ${j.interval} min` : ""}
                      </>
                    ),
                  },
                  {
                    label: "",
                    cell: (j: Json) =>
                      mayCancel && CANCELLABLE.has(statusOf(j))
                        ? (
                          <form method="post" action={`/ui/jobs/${j.id}/cancel`} class="inline">
                            <input type="hidden" name="_csrf" value={session.csrf} />
                            <button type="submit" class="danger">Cancel</button>
                          </form>
                        )
                        : null,
                  },
                ]}
              />
              <Pager url={url} count={answer.body.count} limit={PAGE_SIZE} offset={offset} />
            </>
          )}
      </Layout>,
      answer.status === 200 ? 200 : answer.status as 403,
    );
  });

  app.post("/ui/jobs/:id{[0-9]+}/cancel", async (c) => {
    const answer = await c.get("api").call("DELETE", `${JOBS}${c.req.param("id")}/`);
    const code = answer.status === 204
      ? "cancelled"
      : answer.status === 409
      ? "running"
      : answer.status === 403
      ? "denied"
      : answer.status === 404
      ? "gone"
      : "unavailable";
    return c.redirect(`/ui/jobs?notice=${code}`, 303);
  });

  app.get("/ui/jobs/:id{[0-9]+}", async (c) => {
    const id = c.req.param("id");
    const [answer, endpoints] = await c.get("api").all([
      `${JOBS}${id}/`,
      "/api/plugins/service/endpoints/hypervisor/?brief=1&limit=1000",
    ]);
    const endpointName = new Map<number, string>(
      endpoints.status === 200
        ? (endpoints.body.results as Json[]).map((e) => [e.id, e.display])
        : [],
    );
    if (answer.status !== 200) {
      return errorPage(
        c,
        answer.status,
        answer.status === 404 ? "Job not found" : "Cannot show this job",
        answer.status === 403 ? "Your token may not view jobs." : detailOf(answer),
      );
    }
    const job = answer.body;
    const running = !FINISHED.has(job.status?.value ?? job.status);
    const log: Json[] = Array.isArray(job.log) ? job.log : [];
    return c.html(
      <Layout
        title={`Job ${id}`}
        active="jobs"
        auth={c.get("auth")}
        session={c.get("session")}
        live={running ? { "data-job-stream": id } : undefined}
      >
        <PageHead
          title={`Job #${id}: ${job.name}`}
          sub={
            <span data-job-status>
              <Status value={job.status} />
            </span>
          }
        >
          <a class="button" href={job.url}>API object</a>
        </PageHead>
        <dl class="kv card">
          <dt>Created</dt>
          <dd>
            <When at={job.created} />
          </dd>
          <dt>Started</dt>
          <dd data-job-started>
            <When at={job.started} />
          </dd>
          <dt>Completed</dt>
          <dd>
            <When at={job.completed} />
          </dd>
          <dt>Duration</dt>
          <dd>{duration(job)}</dd>
          <dt>Started by</dt>
          <dd>{startedBy(job)}</dd>
          {job.error && (
            <>
              <dt>Error</dt>
              <dd class="error-text">{job.error}</dd>
            </>
          )}
        </dl>
        <section class="card">
          <h2>Stages</h2>
          <StageTable endpoint time>
            {stagesOf(job).map((s) => {
              const r = s.result_summary ?? s.result ?? {};
              return (
                <tr data-stage={`${s.sync_type}@${s.endpoint_id ?? ""}`}>
                  <td>{s.sync_type}</td>
                  <td>{endpointName.get(s.endpoint_id) ?? s.endpoint_id ?? "—"}</td>
                  <td>
                    <Status
                      value={r.skipped
                        ? "skipped"
                        : r.failed > 0 || r.error
                        ? "failed"
                        : "completed"}
                    />
                  </td>
                  <td>
                    {/* A full bar only for a stage that did its work; a failed one says why. */}
                    {r.skipped || r.failed > 0 || r.error
                      ? (
                        <span class="error-text">
                          {r.error ? String(r.error).slice(0, 300) : "—"}
                        </span>
                      )
                      : <progress max={1} value={1}>done</progress>}
                  </td>
                  <td class="num">{r.created ?? "—"}</td>
                  <td class="num">{r.updated ?? "—"}</td>
                  <td class="num">{r.unchanged ?? "—"}</td>
                  <td class="num">{r.failed ?? "—"}</td>
                  <td class="num">
                    {typeof s.runtime_seconds === "number"
                      ? `${s.runtime_seconds.toFixed(1)} s`
                      : "—"}
                  </td>
                </tr>
              );
            })}
          </StageTable>
        </section>
        <section class="card">
          <h2>Log</h2>
          <pre class="log" data-log aria-live="polite">
            {log.map((l) => `${l.timestamp ?? ""} ${String(l.level ?? "").toUpperCase()} ${l.message ?? ""}\n`).join("")}
          </pre>
        </section>
      </Layout>,
    );
  });

  return app;
}
