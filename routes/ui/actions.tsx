/** @jsxImportSource hono/jsx */
/** Actions: the backend's audit trail of operational verbs (`GET /hypervisor/actions`). */
import { Hono } from "hono";
import { detailOf, type Json } from "./api.ts";
import type { ConsoleEnv, ConsoleServices } from "./context.ts";
import { Layout, Notice, PageHead, Status, Table, When } from "./layout.tsx";

export function actionRoutes(_ctx: ConsoleServices): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();
  app.get("/ui/actions", async (c) => {
    const [answer, copies] = await Promise.all([
      c.get("api").backend("GET", "/hypervisor/actions"),
      c.get("api").backend("GET", "/hypervisor/endpoints"),
    ]);
    // The audit trail records the backend copy's id; people know the endpoint by its name.
    const names = new Map<number, string>(
      Array.isArray(copies.body)
        ? copies.body.map((e: Json) => [Number(e.id), String(e.name)] as [number, string])
        : [],
    );
    const list: Json[] | null = answer.status === 200
      ? (Array.isArray(answer.body)
        ? answer.body
        : answer.body?.results ?? answer.body?.actions ?? [])
      : null;
    return c.html(
      <Layout title="Actions" active="actions" auth={c.get("auth")} session={c.get("session")}>
        <PageHead
          title="Actions"
          sub="Start, stop, snapshot and migrate requests sent through the backend, newest first."
        />
        {list === null
          ? (
            <Notice kind={answer.status === 404 ? "info" : "error"}>
              {answer.status === 404
                ? "The audit trail is not available on this server yet (the backend answered 404)."
                : answer.reason ?? `The audit trail could not be read: ${detailOf(answer)}`}
            </Notice>
          )
          : (
            <Table
              rows={list}
              empty="No action yet. Start, stop or snapshot a guest from its page."
              columns={[
                { label: "When", cell: (a) => <When at={a.created_at} /> },
                { label: "Verb", cell: (a) => a.verb },
                { label: "Guest", cell: (a) => `${a.vm_type}/${a.vmid}` },
                {
                  label: "Endpoint",
                  cell: (a) => names.get(Number(a.endpoint_id)) ?? `#${a.endpoint_id}`,
                },
                { label: "Actor", cell: (a) => a.actor },
                { label: "Result", cell: (a) => <Status value={a.result} /> },
                { label: "State", cell: (a) => <Status value={a.status} /> },
                {
                  label: "Task",
                  cell: (a) => a.task_upid ? <code class="small upid">{a.task_upid}</code> : "—",
                },
                { label: "Finished", cell: (a) => <When at={a.finished_at} /> },
              ]}
            />
          )}
      </Layout>,
      list !== null || answer.status === 404 ? 200 : answer.status === 403 ? 403 : 502,
    );
  });
  return app;
}
