/** @jsxImportSource hono/jsx */
/**
 * The inventory browser's list pages: virtual machines and containers, nodes, clusters,
 * storage, backup routines, replications, task history. Filters, ordering and paging are the
 * API's own query parameters (`q`, `<field>_id`, `ordering`, `limit`, `offset`).
 */
import { Hono } from "hono";
import type { Child } from "hono/jsx";
import { detailOf, type Json } from "./api.ts";
import type { ConsoleEnv, ConsoleServices, Ctx } from "./context.ts";
import {
  ApiProblem,
  bytes,
  type Column,
  Layout,
  PageHead,
  Pager,
  shown,
  Status,
  Table,
  When,
} from "./layout.tsx";
import { historyHref } from "./changes.tsx";

export const PAGE_SIZE = 50;
const P = "/api/plugins/service";

interface Filter {
  name: string;
  label: string;
  /** Options loaded from the API (`[value, label]`), or fixed ones. */
  options?: Array<[string, string]> | { path: string; value?: string };
}

interface ListSpec {
  key: string;
  /** The model the rows are ("service.node"), for their history links. */
  type: string;
  title: string;
  sub: string;
  api: string;
  what: string;
  filters: Filter[];
  columns: Column<Json>[];
}

const link = (href: string, text: Child) => <a href={href}>{text}</a>;
const ref = (v: Json) => v?.url ? <a href={v.url} class="api">{shown(v)}</a> : shown(v);

const VM_STATUS: Array<[string, string]> = [
  ["active", "Active"],
  ["offline", "Offline"],
  ["paused", "Paused"],
  ["staged", "Staged"],
  ["planned", "Planned"],
  ["failed", "Failed"],
  ["decommissioning", "Decommissioning"],
];

const SPECS: ListSpec[] = [
  {
    key: "nodes",
    type: "service.node",
    title: "Nodes",
    sub: "Hypervisor nodes, one device each in the inventory.",
    api: `${P}/nodes/`,
    what: "view nodes",
    filters: [{
      name: "endpoint_id",
      label: "Endpoint",
      options: { path: `${P}/endpoints/hypervisor/` },
    }],
    columns: [
      { label: "Name", sort: "name", cell: (r) => r.name },
      { label: "Online", cell: (r) => <Status value={r.online ? "online" : "offline"} /> },
      { label: "Cluster", cell: (r) => shown(r.cluster) },
      { label: "Endpoint", cell: (r) => shown(r.endpoint) },
      { label: "Version", cell: (r) => r.version ?? "—" },
      {
        label: "CPU",
        // The sync records a node's size, not its load (that would change every run): a
        // record without a load shows the size alone rather than a dash.
        cell: (r) =>
          typeof r.cpu === "number"
            ? `${Math.round(r.cpu * 100)} % of ${r.maxcpu ?? "?"}`
            : typeof r.maxcpu === "number"
            ? `${r.maxcpu} cores`
            : "—",
      },
      {
        label: "Memory",
        cell: (r) =>
          typeof r.mem === "number" ? `${bytes(r.mem)} / ${bytes(r.maxmem)}` : bytes(r.maxmem),
      },
      { label: "Device", cell: (r) => ref(r.device) },
      { label: "Address", cell: (r) => r.ip_address ?? "—" },
      { label: "Last synced", cell: (r) => <When at={r.last_synced} /> },
      {
        // The terminal page says what is missing (credentials, the node's pinned key) and the
        // session route checks the permission (README "Browser terminal").
        label: "",
        cell: (r) => link(`/ui/nodes/${r.id}/terminal`, "Terminal"),
      },
    ],
  },
  {
    key: "clusters",
    type: "service.cluster",
    title: "Clusters",
    sub: "One per hypervisor endpoint (a cluster or a standalone node).",
    api: `${P}/clusters/`,
    what: "view clusters",
    filters: [],
    columns: [
      { label: "Name", sort: "name", cell: (r) => r.name },
      { label: "Endpoint", cell: (r) => shown(r.endpoint) },
      { label: "Mode", cell: (r) => shown(r.mode) },
      { label: "Version", cell: (r) => r.version ?? "—" },
      { label: "Quorate", cell: (r) => r.quorate === null ? "—" : r.quorate ? "yes" : "no" },
      { label: "Nodes online", cell: (r) => `${r.nodes_online ?? "?"} / ${r.nodes_total ?? "?"}` },
      { label: "Inventory cluster", cell: (r) => ref(r.cluster) },
      { label: "Last synced", cell: (r) => <When at={r.last_synced} /> },
    ],
  },
  {
    key: "storage",
    type: "service.storage",
    title: "Storage",
    sub: "Storage pools per cluster.",
    api: `${P}/storage/`,
    what: "view storage",
    filters: [{ name: "cluster_id", label: "Cluster", options: { path: `${P}/clusters/` } }],
    columns: [
      { label: "Name", sort: "name", cell: (r) => r.name },
      { label: "Cluster", cell: (r) => shown(r.cluster) },
      { label: "Type", cell: (r) => r.storage_type ?? "—" },
      { label: "Content", cell: (r) => (r.content ?? []).join(", ") || "—" },
      { label: "Shared", cell: (r) => r.shared ? "yes" : "no" },
      { label: "Used", cell: (r) => `${bytes(r.used)} / ${bytes(r.total)}` },
      { label: "Status", cell: (r) => <Status value={r.status} /> },
    ],
  },
  {
    key: "backup-routines",
    type: "service.backuproutine",
    title: "Backup routines",
    sub: "Scheduled backup jobs of the clusters; gone upstream shows as stale.",
    api: `${P}/backup-routines/`,
    what: "view backup routines",
    filters: [],
    columns: [
      { label: "Job", sort: "job_id", cell: (r) => r.job_id },
      { label: "Endpoint", cell: (r) => shown(r.endpoint) },
      { label: "Enabled", cell: (r) => r.enabled ? "yes" : "no" },
      { label: "Schedule", cell: (r) => r.schedule || "—" },
      { label: "Next run", cell: (r) => r.next_run ?? "—" },
      { label: "Storage", cell: (r) => shown(r.storage) },
      { label: "Guests", cell: (r) => (r.selection ?? []).join(", ") || "all" },
      { label: "Status", cell: (r) => <Status value={r.status} /> },
    ],
  },
  {
    key: "replications",
    type: "service.replication",
    title: "Replications",
    sub: "Storage replication jobs.",
    api: `${P}/replications/`,
    what: "view replications",
    filters: [],
    columns: [
      { label: "Id", sort: "replication_id", cell: (r) => r.replication_id },
      {
        label: "Guest",
        cell: (r) =>
          r.virtual_machine
            ? link(`/ui/vms/${r.virtual_machine.id}`, shown(r.virtual_machine))
            : r.guest ?? "—",
      },
      { label: "Target", cell: (r) => r.target || "—" },
      { label: "Schedule", cell: (r) => r.schedule || "—" },
      { label: "Disabled", cell: (r) => r.disable ? "yes" : "no" },
      { label: "Status", cell: (r) => <Status value={r.status} /> },
    ],
  },
  {
    key: "tasks",
    type: "service.taskhistory",
    title: "Task history",
    sub: "Tasks the hypervisors ran (newest first).",
    api: `${P}/task-history/`,
    what: "view the task history",
    filters: [{ name: "task_type", label: "Type" }, { name: "vmid", label: "Guest id" }],
    columns: [
      { label: "Started", sort: "starttime", cell: (r) => <When at={r.starttime} /> },
      { label: "Type", cell: (r) => r.task_type || "—" },
      { label: "Node", cell: (r) => r.node_name || "—" },
      { label: "Guest", cell: (r) => r.vmid ?? "—" },
      { label: "User", cell: (r) => r.username || "—" },
      { label: "Status", cell: (r) => <Status value={r.status === "OK" ? "ok" : r.status} /> },
      { label: "Ended", cell: (r) => <When at={r.endtime} /> },
      { label: "UPID", cell: (r) => <code class="small">{r.upid}</code> },
    ],
  },
];

/** Role slugs the sync gives guests, by guest type. */
const GUEST_ROLES = { qemu: "virtual-machine", lxc: "container" } as const;

function guestType(vm: Json, state: Json | undefined): string {
  const t = state?.vm_type?.value ?? (vm.role?.slug === GUEST_ROLES.lxc ? "lxc" : null);
  if (t === "lxc") return "container";
  if (t === "qemu" || vm.role?.slug === GUEST_ROLES.qemu) return "VM";
  return "—";
}

const VM_COLUMNS = (types: Map<number, Json>): Column<Json>[] => [
  { label: "Name", sort: "name", cell: (r) => link(`/ui/vms/${r.id}`, r.name) },
  { label: "Status", sort: "status", cell: (r) => <Status value={r.status} /> },
  {
    label: "Type",
    cell: (r) => guestType(r, types.get(r.id)),
  },
  { label: "Id", cell: (r) => types.get(r.id)?.vmid ?? "—" },
  { label: "Cluster", sort: "cluster", cell: (r) => shown(r.cluster) },
  {
    label: "Node",
    cell: (r) => r.device ? shown(r.device) : (types.get(r.id)?.node_name || "—"),
  },
  { label: "vCPUs", sort: "vcpus", cell: (r) => r.vcpus ?? "—", class: "num" },
  {
    label: "Memory",
    sort: "memory",
    cell: (r) => typeof r.memory === "number" ? `${r.memory} MB` : "—",
    class: "num",
  },
  {
    label: "Disk",
    sort: "disk",
    cell: (r) => typeof r.disk === "number" ? `${r.disk} MB` : "—",
    class: "num",
  },
  { label: "Primary IP", cell: (r) => shown(r.primary_ip) },
];

interface Query {
  limit: number;
  offset: number;
  params: URLSearchParams;
}

/** The API query from the page's query string: only known filters, bounded paging. */
function apiQuery(url: URL, filters: string[], sorts: string[]): Query {
  const params = new URLSearchParams();
  const offset = Math.max(0, Math.min(Number(url.searchParams.get("offset") ?? 0) || 0, 1e7));
  params.set("limit", String(PAGE_SIZE));
  if (offset) params.set("offset", String(Math.floor(offset)));
  const q = url.searchParams.get("q")?.trim();
  if (q) params.set("q", q.slice(0, 200));
  for (const f of filters) {
    const v = url.searchParams.get(f)?.trim();
    if (v) params.set(f, v.slice(0, 200));
  }
  const ordering = url.searchParams.get("ordering") ?? "";
  if (sorts.includes(ordering.replace(/^-/, ""))) params.set("ordering", ordering);
  return { limit: PAGE_SIZE, offset: Math.floor(offset), params };
}

async function optionsFor(c: Ctx, f: Filter): Promise<Array<[string, string]>> {
  if (!f.options) return [];
  if (Array.isArray(f.options)) return f.options;
  const a = await c.get("api").get(`${f.options.path}?brief=1&limit=1000`);
  if (a.status !== 200) return [];
  return (a.body.results as Json[]).map((r) => [String(r.id), String(r.display)]);
}

function FilterBar(
  props: { url: URL; filters: Filter[]; options: Array<Array<[string, string]>>; extra?: Child },
) {
  const { url } = props;
  return (
    <form method="get" class="filters" role="search">
      <div class="field">
        <label for="q">Search</label>
        <input id="q" name="q" type="search" value={url.searchParams.get("q") ?? ""} />
      </div>
      {props.filters.map((f, i) => (
        <div class="field">
          <label for={`flt-${f.name}`}>{f.label}</label>
          {f.options
            ? (
              <select id={`flt-${f.name}`} name={f.name}>
                <option value="">any</option>
                {props.options[i].map(([v, l]) => (
                  <option value={v} selected={url.searchParams.get(f.name) === v}>{l}</option>
                ))}
              </select>
            )
            : (
              <input
                id={`flt-${f.name}`}
                name={f.name}
                value={url.searchParams.get(f.name) ?? ""}
              />
            )}
        </div>
      ))}
      {props.extra}
      {url.searchParams.get("ordering") && (
        <input type="hidden" name="ordering" value={url.searchParams.get("ordering")!} />
      )}
      <button type="submit">Filter</button>
      <a href={url.pathname}>Reset</a>
    </form>
  );
}

export function inventoryRoutes(_ctx: ConsoleServices): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();

  for (const spec of SPECS) {
    app.get(`/ui/${spec.key}`, async (c) => {
      const url = new URL(c.req.url);
      const sorts = spec.columns.map((col) => col.sort).filter((s): s is string => !!s);
      const q = apiQuery(url, spec.filters.map((f) => f.name), sorts);
      const [answer, options] = await Promise.all([
        c.get("api").get(`${spec.api}?${q.params}`),
        Promise.all(spec.filters.map((f) => optionsFor(c, f))),
      ]);
      return c.html(
        <Layout
          title={spec.title}
          active={spec.key}
          auth={c.get("auth")}
          session={c.get("session")}
        >
          <PageHead title={spec.title} sub={spec.sub} />
          <FilterBar url={url} filters={spec.filters} options={options} />
          {answer.status !== 200
            ? <ApiProblem status={answer.status} detail={detailOf(answer)} what={spec.what} />
            : (
              <>
                <Table
                  rows={answer.body.results}
                  columns={[...spec.columns, {
                    label: "History",
                    cell: (r) => <a href={historyHref(spec.type, r.id)}>history</a>,
                  }]}
                  url={url}
                />
                <Pager url={url} count={answer.body.count} limit={q.limit} offset={q.offset} />
              </>
            )}
        </Layout>,
        answer.status === 200 ? 200 : answer.status as 403,
      );
    });
  }

  app.get("/ui/vms", async (c) => {
    const api = c.get("api");
    const url = new URL(c.req.url);
    const filters: Filter[] = [
      { name: "cluster_id", label: "Cluster", options: { path: "/api/virtualization/clusters/" } },
      { name: "device_id", label: "Node", options: { path: "/api/dcim/devices/" } },
      { name: "status", label: "Status", options: VM_STATUS },
    ];
    const columns = VM_COLUMNS(new Map());
    const sorts = columns.map((col) => col.sort).filter((s): s is string => !!s);
    const q = apiQuery(url, filters.map((f) => f.name), sorts);
    const type = url.searchParams.get("type");
    // The sync gives every guest the role of its type ("container" or "virtual-machine").
    if (type === "qemu" || type === "lxc") q.params.set("role", GUEST_ROLES[type]);
    const [answer, options] = await Promise.all([
      api.get(`/api/virtualization/virtual-machines/?${q.params}`),
      Promise.all(filters.map((f) => optionsFor(c, f))),
    ]);
    const rows: Json[] = answer.status === 200 ? answer.body.results : [];
    const types = new Map<number, Json>();
    if (rows.length > 0) {
      const ids = rows.map((r) => `virtual_machine_id=${r.id}`).join("&");
      const states = await api.get(`${P}/vm-sync-state/?limit=${PAGE_SIZE}&${ids}`);
      if (states.status === 200) {
        for (const s of states.body.results as Json[]) {
          if (s.virtual_machine?.id) types.set(s.virtual_machine.id, s);
        }
      }
    }
    const title = type === "lxc"
      ? "Containers"
      : type === "qemu"
      ? "Virtual machines (QEMU)"
      : "Virtual machines";
    return c.html(
      <Layout title={title} active="vms" auth={c.get("auth")} session={c.get("session")}>
        <PageHead
          title={title}
          sub="Guests the sync wrote to the inventory (VMs and containers)."
        />
        <FilterBar
          url={url}
          filters={filters}
          options={options}
          extra={
            <div class="field">
              <label for="flt-type">Type</label>
              <select id="flt-type" name="type">
                <option value="">any</option>
                <option value="qemu" selected={type === "qemu"}>VM</option>
                <option value="lxc" selected={type === "lxc"}>container</option>
              </select>
            </div>
          }
        />
        {answer.status !== 200
          ? (
            <ApiProblem
              status={answer.status}
              detail={detailOf(answer)}
              what="view virtual machines"
            />
          )
          : (
            <>
              <Table
                rows={rows}
                columns={VM_COLUMNS(types)}
                url={url}
                empty="No virtual machine matches. Run a sync, or change the filters."
              />
              <Pager url={url} count={answer.body.count} limit={q.limit} offset={q.offset} />
            </>
          )}
      </Layout>,
      answer.status === 200 ? 200 : answer.status as 403,
    );
  });

  return app;
}
