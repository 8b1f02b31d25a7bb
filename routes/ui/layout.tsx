/** @jsxImportSource hono/jsx */
/**
 * The console's page frame and the small pieces every page shares (tables, pager, badges,
 * field errors, messages). Server-rendered; the only script is /ui/static/console.js.
 */
import type { Child, FC, PropsWithChildren } from "hono/jsx";
import { raw } from "hono/html";
import type { AuthInfo } from "../../domain/netbox/types.ts";
import { can } from "../../domain/netbox/tokens.ts";
import type { Session } from "./session.ts";
import type { Json } from "./api.ts";

export const STATIC = "/ui/static";

interface NavItem {
  href: string;
  label: string;
  key: string;
  /** Any of these permissions shows the item (the page itself asks the API). */
  perms?: string[];
}

const NAV: Array<{ group: string; items: NavItem[] }> = [
  {
    group: "Status",
    items: [{ href: "/ui/", label: "Overview", key: "overview" }],
  },
  {
    group: "Inventory",
    items: [
      {
        href: "/ui/vms",
        label: "Virtual machines",
        key: "vms",
        perms: ["virtualization.view_virtualmachine"],
      },
      { href: "/ui/nodes", label: "Nodes", key: "nodes", perms: ["service.view_node"] },
      { href: "/ui/clusters", label: "Clusters", key: "clusters", perms: ["service.view_cluster"] },
      { href: "/ui/storage", label: "Storage", key: "storage", perms: ["service.view_storage"] },
      {
        href: "/ui/backup-routines",
        label: "Backup routines",
        key: "backup-routines",
        perms: ["service.view_backuproutine"],
      },
      {
        href: "/ui/replications",
        label: "Replications",
        key: "replications",
        perms: ["service.view_replication"],
      },
      {
        href: "/ui/tasks",
        label: "Task history",
        key: "tasks",
        perms: ["service.view_taskhistory"],
      },
      {
        href: "/ui/changes",
        label: "Change log",
        key: "changes",
        perms: ["core.view_objectchange"],
      },
    ],
  },
  {
    group: "Operations",
    items: [
      { href: "/ui/sync", label: "Sync", key: "sync", perms: ["core.add_job", "core.view_job"] },
      { href: "/ui/jobs", label: "Jobs", key: "jobs", perms: ["core.view_job"] },
      {
        href: "/ui/actions",
        label: "Actions",
        key: "actions",
        perms: ["service.change_backendendpoint"],
      },
    ],
  },
  {
    group: "Configuration",
    items: [
      {
        href: "/ui/endpoints",
        label: "Endpoints",
        key: "endpoints",
        perms: ["service.view_hypervisorendpoint", "service.view_backendendpoint"],
      },
      {
        href: "/ui/settings",
        label: "Settings",
        key: "settings",
        perms: ["service.view_pluginsettings", "service.change_pluginsettings"],
      },
    ],
  },
];

export interface PageProps {
  title: string;
  active?: string;
  auth?: AuthInfo;
  session?: Session;
  /** Attributes on <body> that console.js reads (live parts). */
  live?: Record<string, string>;
  /** Extra <head> content (a page that refreshes itself while something runs). */
  head?: unknown;
}

export const Layout: FC<PropsWithChildren<PageProps>> = (props) => {
  const { auth, session } = props;
  return (
    <>
      {raw("<!DOCTYPE html>")}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>{props.title} · Bridgebox</title>
          <link rel="icon" href="/ui/favicon.svg" type="image/svg+xml" />
          <link rel="stylesheet" href={`${STATIC}/console.css`} />
          <script src={`${STATIC}/console.js`} defer></script>
          {props.head}
        </head>
        <body {...(props.live ?? {})}>
          <a class="skip" href="#main">Skip to content</a>
          <header class="top">
            <a class="brand" href="/ui/">
              <img src="/ui/favicon.svg" alt="" width="22" height="22" /> Bridgebox
            </a>
            {session && auth && (
              <div class="who">
                <span>
                  token #{session.tokenId}
                  {auth.isSuperuser ? " · superuser" : ""}
                  {auth.writeEnabled ? "" : " · read-only"}
                </span>
                <form method="post" action="/ui/logout" class="inline">
                  <input type="hidden" name="_csrf" value={session.csrf} />
                  <button type="submit" class="link">Sign out</button>
                </form>
              </div>
            )}
          </header>
          <div class="frame">
            {auth && (
              <nav class="side" aria-label="Console">
                {NAV.map((g) => {
                  const items = g.items.filter((i) =>
                    !i.perms || i.perms.some((p) => can(auth, p))
                  );
                  if (items.length === 0) return null;
                  return (
                    <div class="group">
                      <h2>{g.group}</h2>
                      <ul>
                        {items.map((i) => (
                          <li>
                            <a
                              href={i.href}
                              aria-current={props.active === i.key ? "page" : undefined}
                            >
                              {i.label}
                            </a>
                          </li>
                        ))}
                      </ul>
                    </div>
                  );
                })}
                <div class="group">
                  <h2>API</h2>
                  <ul>
                    <li>
                      <a href="/api/docs">Inventory API docs</a>
                    </li>
                  </ul>
                </div>
              </nav>
            )}
            <main id="main" tabindex={-1}>
              {props.children}
            </main>
          </div>
        </body>
      </html>
    </>
  );
};

export const PageHead: FC<PropsWithChildren<{ title: string; sub?: Child }>> = (p) => (
  <div class="page-head">
    <div>
      <h1>{p.title}</h1>
      {p.sub && <p class="sub">{p.sub}</p>}
    </div>
    <div class="actions">{p.children}</div>
  </div>
);

export const Notice: FC<{ kind: "ok" | "error" | "warn" | "info"; children?: Child }> = (p) => (
  <div class={`notice ${p.kind}`} role={p.kind === "error" ? "alert" : "status"}>
    {p.children}
  </div>
);

export const Badge: FC<{ tone?: string; children?: Child }> = (p) => (
  <span class={`badge ${p.tone ?? ""}`}>{p.children}</span>
);

const TONES: Record<string, string> = {
  online: "ok",
  active: "ok",
  running: "ok",
  ok: "ok",
  completed: "ok",
  finalized: "ok",
  present: "ok",
  offline: "bad",
  error: "bad",
  errored: "bad",
  failed: "bad",
  unauthorized: "bad",
  missing: "warn",
  stale: "warn",
  disabled: "muted",
  stopped: "muted",
  pending: "info",
  in_progress: "info",
  scheduled: "info",
};

/** A status word as a coloured badge. */
export const Status: FC<{ value: unknown }> = ({ value }) => {
  const v = typeof value === "object" && value !== null
    ? String((value as { value?: unknown }).value ?? "")
    : String(value ?? "");
  if (!v) return <span class="muted">—</span>;
  return <Badge tone={TONES[v.toLowerCase()] ?? ""}>{v}</Badge>;
};

export const FieldErrors: FC<{ errors?: string[]; id?: string }> = (p) =>
  p.errors && p.errors.length > 0
    ? (
      <ul class="field-errors" id={p.id}>
        {p.errors.map((e) => <li key={e}>{e}</li>)}
      </ul>
    )
    : null;

export const CsrfField: FC<{ session: Session }> = ({ session }) => (
  <input type="hidden" name="_csrf" value={session.csrf} />
);

/** "3 minutes ago" style, with the exact time as a tooltip. */
export const When: FC<{ at: unknown; now?: number }> = ({ at, now }) => {
  if (typeof at !== "string" || at === "") return <span class="muted">never</span>;
  const t = Date.parse(at);
  if (Number.isNaN(t)) return <span>{at}</span>;
  return <time datetime={at} title={at}>{ago(t, now ?? Date.now())}</time>;
};

export function ago(t: number, now: number): string {
  const s = Math.round((now - t) / 1000);
  if (s < 0) return new Date(t).toISOString().replace("T", " ").slice(0, 16);
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  // Older times keep the hour: a day's task history would otherwise be one repeated date.
  return new Date(t).toISOString().replace("T", " ").slice(0, 16);
}

export function bytes(n: unknown): string {
  if (typeof n !== "number" || !Number.isFinite(n)) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 && i > 0 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** A nested object's display text (`{id, display, ...}`), or a dash. */
export function shown(value: unknown): string {
  if (value === null || value === undefined || value === "") return "—";
  if (typeof value === "object") {
    const o = value as Record<string, unknown>;
    if ("display" in o) return String(o.display);
    if ("label" in o) return String(o.label);
    if ("name" in o) return String(o.name);
    if (Array.isArray(value)) return value.map(shown).join(", ");
    return JSON.stringify(value);
  }
  return String(value);
}

export interface Column<T> {
  label: string;
  /** Sort key passed as `ordering` (omit when the column does not sort). */
  sort?: string;
  cell: (row: T) => Child;
  class?: string;
}

/** A dense table; sortable headers are links that keep the other query parameters. */
export function Table(
  props: { rows: Json[]; columns: Column<Json>[]; url?: URL; empty?: string; caption?: string },
) {
  const ordering = props.url?.searchParams.get("ordering") ?? "";
  return (
    <div class="table-wrap">
      <table class="data">
        {props.caption && <caption>{props.caption}</caption>}
        <thead>
          <tr>
            {props.columns.map((col) => {
              if (!col.sort || !props.url) {
                return <th key={col.label} scope="col" class={col.class}>{col.label}</th>;
              }
              const next = new URL(props.url);
              const desc = ordering === col.sort;
              next.searchParams.set("ordering", desc ? `-${col.sort}` : col.sort);
              next.searchParams.delete("offset");
              const state = ordering === col.sort
                ? "ascending"
                : ordering === `-${col.sort}`
                ? "descending"
                : undefined;
              return (
                <th scope="col" class={col.class} aria-sort={state}>
                  <a href={next.pathname + next.search}>
                    {col.label}
                    {state === "ascending" ? " ▲" : state === "descending" ? " ▼" : ""}
                  </a>
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>
          {props.rows.length === 0
            ? (
              <tr>
                <td colspan={props.columns.length} class="empty">
                  {props.empty ?? "Nothing here yet."}
                </td>
              </tr>
            )
            : props.rows.map((row) => (
              <tr>
                {props.columns.map((col) => (
                  <td key={col.label} class={col.class}>{col.cell(row)}</td>
                ))}
              </tr>
            ))}
        </tbody>
      </table>
    </div>
  );
}

export const Pager: FC<{ url: URL; count: number; limit: number; offset: number }> = (p) => {
  if (p.count <= p.limit && p.offset === 0) {
    return <p class="pager muted">{p.count} {p.count === 1 ? "item" : "items"}</p>;
  }
  const link = (offset: number) => {
    const u = new URL(p.url);
    if (offset > 0) u.searchParams.set("offset", String(offset));
    else u.searchParams.delete("offset");
    return u.pathname + u.search;
  };
  const last = Math.min(p.offset + p.limit, p.count);
  return (
    <nav class="pager" aria-label="Pages">
      {p.offset > 0
        ? <a href={link(Math.max(0, p.offset - p.limit))} rel="prev">← Previous</a>
        : <span class="muted">← Previous</span>}
      <span>
        {p.count === 0 ? 0 : p.offset + 1}–{last} of {p.count}
      </span>
      {last < p.count
        ? <a href={link(p.offset + p.limit)} rel="next">Next →</a>
        : <span class="muted">Next →</span>}
    </nav>
  );
};

/** What a page shows when the API refused or failed (never a stack). */
export const ApiProblem: FC<{ status: number; detail: string; what: string }> = (p) => (
  <Notice kind={p.status === 404 ? "info" : "error"}>
    {p.status === 403
      ? <>Your token may not {p.what}. {p.detail}</>
      : p.status === 404
      ? <>Not available: {p.detail}</>
      : <>Could not {p.what}: {p.detail}</>}
  </Notice>
);
