/** @jsxImportSource hono/jsx */
/**
 * An object's history from the inventory's change log (`/api/core/object-changes/`): who changed
 * what, when, with which message and request, and the fields each change touched. Shown as a
 * section of the VM page and as its own page for any object (linked from every list), so an
 * admin sees what a sync run changed (docs/console.md, History).
 */
import { Hono } from "hono";
import type { Child } from "hono/jsx";
import { detailOf, type Json } from "./api.ts";
import type { ConsoleEnv, ConsoleServices, Ctx } from "./context.ts";
import { ApiProblem, Layout, PageHead, Pager, Table, When } from "./layout.tsx";

const CHANGES = "/api/core/object-changes/";
const PAGE = 50;
const TYPE_RE = /^[a-z_]+\.[a-z_]+$/;

/** The link to an object's history page. */
export function historyHref(type: string, id: number | string): string {
  return `/ui/changes?type=${encodeURIComponent(type)}&id=${encodeURIComponent(String(id))}`;
}

/** The fields a change touched: "name: a → b" per field (creates and deletes list none). */
function touched(entry: Json): Child {
  const before = entry.prechange_data ?? {};
  const after = entry.postchange_data ?? {};
  if (!entry.prechange_data || !entry.postchange_data) return <span class="muted">—</span>;
  const keys = Object.keys(after).filter((k) =>
    JSON.stringify(before[k]) !== JSON.stringify(after[k])
  );
  if (keys.length === 0) return <span class="muted">no field changed</span>;
  const show = (v: unknown) => {
    const text = v === null || v === undefined || v === "" ? "—" : JSON.stringify(v);
    return text.length > 80 ? text.slice(0, 77) + "…" : text;
  };
  return (
    <ul class="plain">
      {keys.slice(0, 12).map((k) => (
        <li>
          <code class="small">{k}</code>: {show(before[k])} → {show(after[k])}
        </li>
      ))}
      {keys.length > 12 && <li class="muted">and {keys.length - 12} more</li>}
    </ul>
  );
}

const COLUMNS = [
  { label: "Time", cell: (r: Json) => <When at={r.time} /> },
  { label: "Action", cell: (r: Json) => r.action?.label ?? "—" },
  {
    label: "Object",
    cell: (r: Json) => `${r.changed_object_type} ${r.object_repr}`,
  },
  { label: "By", cell: (r: Json) => r.user_name },
  { label: "Message", cell: (r: Json) => r.message || "—" },
  { label: "Fields", cell: touched },
  {
    label: "Request",
    cell: (r: Json) => (
      <a href={`/ui/changes?request_id=${encodeURIComponent(r.request_id)}`} class="small">
        {String(r.request_id).slice(0, 8)}
      </a>
    ),
  },
];

export interface History {
  status: number;
  count?: number;
  rows?: Json[];
  answer?: Json;
}

/** The changes of an object and of what belongs to it (a VM's interfaces), newest first. */
export async function historyOf(
  c: Ctx,
  type: string,
  id: string,
  limit: number,
  offset: number,
): Promise<History> {
  const api = c.get("api");
  const [own, related] = await api.all([
    `${CHANGES}?changed_object_type=${type}&changed_object_id=${id}&limit=1000`,
    `${CHANGES}?related_object_type=${type}&related_object_id=${id}&limit=1000`,
  ]);
  if (own.status !== 200) return { status: own.status, answer: own };
  const rows = [...own.body.results, ...(related.status === 200 ? related.body.results : [])]
    .sort((a: Json, b: Json) => b.id - a.id);
  return { status: 200, count: rows.length, rows: rows.slice(offset, offset + limit) };
}

/** An object page's section: its latest changes (historyOf), and a link to the whole history. */
export function HistorySection(props: { found: History; type: string; id: string }) {
  const { found } = props;
  return (
    <section class="card">
      <h2>
        History {found.status === 200 && <span class="count">{found.count}</span>}
      </h2>
      {found.status === 200
        ? (
          <>
            <Table rows={found.rows!} columns={COLUMNS} empty="No recorded change." />
            <p>
              <a href={historyHref(props.type, props.id)}>Whole history</a>
            </p>
          </>
        )
        : <p class="muted">{detailOf(found.answer!)}</p>}
    </section>
  );
}

export function changeRoutes(_ctx: ConsoleServices): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();
  app.get("/ui/changes", async (c) => {
    const url = new URL(c.req.url);
    const type = url.searchParams.get("type") ?? "";
    const id = url.searchParams.get("id") ?? "";
    const requestId = url.searchParams.get("request_id") ?? "";
    const offset = Math.max(0, Math.floor(Number(url.searchParams.get("offset")) || 0));
    let title = "Change log";
    let found: History;
    if (TYPE_RE.test(type) && /^\d{1,15}$/.test(id)) {
      title = `History of ${type} ${id}`;
      found = await historyOf(c, type, id, PAGE, offset);
    } else {
      const params = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
      if (/^[0-9a-f-]{1,36}$/i.test(requestId)) {
        params.set("request_id", requestId);
        title = `Changes of request ${requestId.slice(0, 8)}`;
      }
      const answer = await c.get("api").get(`${CHANGES}?${params}`);
      found = answer.status === 200
        ? { status: 200, count: answer.body.count, rows: answer.body.results }
        : { status: answer.status, answer };
    }
    return c.html(
      <Layout title={title} active="changes" auth={c.get("auth")} session={c.get("session")}>
        <PageHead
          title={title}
          sub="What was created, updated and deleted through the API (the sync included)."
        />
        {found.status !== 200
          ? (
            <ApiProblem
              status={found.status}
              detail={detailOf(found.answer)}
              what="view the change log"
            />
          )
          : (
            <>
              <Table rows={found.rows!} columns={COLUMNS} empty="No recorded change." />
              <Pager url={url} count={found.count!} limit={PAGE} offset={offset} />
            </>
          )}
      </Layout>,
      found.status === 200 ? 200 : found.status as 403,
    );
  });
  return app;
}
