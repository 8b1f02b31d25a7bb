/** @jsxImportSource hono/jsx */
/**
 * A guest's page: the VM record with its interfaces, IPs, disks, snapshots, backups and sync
 * state, a link to the same object in the API, and start/stop/snapshot buttons (confirmed on
 * their own page) where the endpoint allows writes. Verbs go to the backend with its key.
 */
import { Hono } from "hono";
import { detailOf, type Json } from "./api.ts";
import type { ConsoleEnv, ConsoleServices, Ctx } from "./context.ts";
import {
  Badge,
  bytes,
  CsrfField,
  Layout,
  Notice,
  PageHead,
  shown,
  Status,
  Table,
  When,
} from "./layout.tsx";
import { errorPage } from "./errors.tsx";
import { followedTask, isRunning, pollUrl, TaskCard, taskRoutes } from "./task.tsx";
import { historyOf, HistorySection } from "./changes.tsx";

const P = "/api/plugins/service";
export const VERBS = ["start", "stop", "snapshot"] as const;

/**
 * The buttons a guest in this inventory status gets: Start when it is not running, Stop when it
 * is (the backend would answer already_running / already_stopped), Snapshot always.
 */
export function offeredVerbs(status: string | undefined): Verb[] {
  const running = status === "active";
  return VERBS.filter((v) => v === "snapshot" || (v === "start" ? !running : running));
}

/** What an action's outcome means, in words (the redirect carries `verb:result`). */
export function doneSentence(done: string): string {
  const [verb, result] = done.split(":");
  const sentences: Record<string, string> = {
    "start:ok": "Start sent: the hypervisor is starting the guest.",
    "stop:ok": "Stop sent: the hypervisor is stopping the guest.",
    "snapshot:ok": "Snapshot requested: the hypervisor is taking it.",
    "start:already_running": "The guest was already running: nothing was sent.",
    "stop:already_stopped": "The guest was already stopped: nothing was sent.",
  };
  return sentences[`${verb}:${result}`] ??
    `${(verb ?? "").slice(0, 20)}: ${(result ?? "").slice(0, 20)}.`;
}
type Verb = typeof VERBS[number];

interface Guest {
  vm: Json;
  state: Json | null;
  endpoint: Json | null;
}

async function loadGuest(c: Ctx, id: string): Promise<Guest | { status: number; detail: string }> {
  const api = c.get("api");
  const vm = await api.get(`/api/virtualization/virtual-machines/${id}/`);
  if (vm.status !== 200) return { status: vm.status, detail: detailOf(vm) };
  const states = await api.get(`${P}/vm-sync-state/?virtual_machine_id=${id}&limit=1`);
  const state = states.status === 200 ? states.body.results[0] ?? null : null;
  let endpoint = null;
  if (state?.endpoint?.id) {
    const e = await api.get(`${P}/endpoints/hypervisor/${state.endpoint.id}/`);
    if (e.status === 200) endpoint = e.body;
  }
  return { vm: vm.body, state, endpoint };
}

/** The backend's copy id of a plugin hypervisor endpoint (its name ends in "(inv:<pk>)"). */
async function backendEndpointId(c: Ctx, pluginId: number): Promise<number | null> {
  const answer = await c.get("api").backend("GET", "/hypervisor/endpoints");
  const list: Json[] = Array.isArray(answer.body) ? answer.body : answer.body?.results ?? [];
  const copy = list.find((e) => String(e.name ?? "").endsWith(`(inv:${pluginId})`));
  return copy ? Number(copy.id) : null;
}

function Section(props: { title: string; answer: Json; children?: unknown }) {
  return (
    <section class="card">
      <h2>
        {props.title}
        {props.answer?.status === 200 && <span class="count">{props.answer.body.count}</span>}
      </h2>
      {props.answer?.status === 200
        ? props.children
        : <p class="muted">{props.answer ? detailOf(props.answer) : "—"}</p>}
    </section>
  );
}

function notFoundPage(c: Ctx, status: number, detail: string) {
  return errorPage(
    c,
    status,
    status === 404 ? "Virtual machine not found" : "Cannot show this virtual machine",
    status === 403 ? "Your token may not view virtual machines." : detail,
  );
}

export function vmRoutes(_ctx: ConsoleServices): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();

  app.get("/ui/vms/:id{[0-9]+}", async (c) => {
    const id = c.req.param("id");
    const guest = await loadGuest(c, id);
    if (!("vm" in guest)) return notFoundPage(c, guest.status, guest.detail);
    const { vm, state, endpoint } = guest;
    const api = c.get("api");
    const [ifaces, ips, disks, snaps, backups] = await api.all([
      `/api/virtualization/interfaces/?virtual_machine_id=${id}&limit=100`,
      `/api/ipam/ip-addresses/?virtual_machine_id=${id}&limit=100`,
      `/api/virtualization/virtual-disks/?virtual_machine_id=${id}&limit=100`,
      `${P}/snapshots/?virtual_machine_id=${id}&limit=100`,
      `${P}/backups/?virtual_machine_id=${id}&limit=100`,
    ]);
    const history = await historyOf(c, "virtualization.virtualmachine", id, 10, 0);
    const writes = endpoint?.allow_writes === true;
    const notice = c.req.query("done");
    const followed = await followedTask(c, c.req.query("task"), c.req.query("endpoint"));
    const running = isRunning(followed);
    return c.html(
      <Layout
        title={vm.name}
        active="vms"
        auth={c.get("auth")}
        session={c.get("session")}
        // Without JavaScript the page reloads while the task runs; console.js polls instead.
        head={running && (
          <noscript>
            <meta http-equiv="refresh" content="2" />
          </noscript>
        )}
        live={running && followed ? { "data-task-poll": pollUrl(id, followed) } : undefined}
      >
        <PageHead
          title={vm.name}
          sub={
            <>
              {state?.vm_type?.value === "lxc" ? "Container" : "Virtual machine"}
              {state ? ` ${state.vmid}` : ""} · <Status value={vm.status} />
            </>
          }
        >
          <a class="button" href={vm.url}>API object</a>
        </PageHead>
        {notice && (
          <Notice kind="ok">
            {doneSentence(notice)}{" "}
            {c.req.query("task") && "Its hypervisor task is followed below. "}
            The status shown on this page is the inventory's: the next sync of this endpoint updates
            it. <a href="/ui/actions">See the audit entry</a>.
          </Notice>
        )}
        {followed && (
          <TaskCard followed={followed} here={c.req.path + "?" + new URL(c.req.url).searchParams} />
        )}
        <div class="two">
          <section class="card">
            <h2>Virtual machine</h2>
            <dl class="kv">
              <dt>Cluster</dt>
              <dd>{shown(vm.cluster)}</dd>
              <dt>Node</dt>
              <dd>{vm.device ? shown(vm.device) : state?.node_name ?? "—"}</dd>
              <dt>vCPUs</dt>
              <dd>{vm.vcpus ?? "—"}</dd>
              <dt>Memory</dt>
              <dd>{vm.memory ? `${vm.memory} MB` : "—"}</dd>
              <dt>Disk</dt>
              <dd>{vm.disk ? `${vm.disk} MB` : "—"}</dd>
              <dt>Primary IP</dt>
              <dd>{shown(vm.primary_ip)}</dd>
              <dt>Role</dt>
              <dd>{shown(vm.role)}</dd>
              <dt>Tags</dt>
              <dd>{(vm.tags ?? []).map((t: Json) => <Badge key={t.id}>{t.name}</Badge>)}</dd>
              <dt>Description</dt>
              <dd>{vm.description || "—"}</dd>
            </dl>
          </section>
          <section class="card">
            <h2>Sync state</h2>
            {state
              ? (
                <dl class="kv">
                  <dt>Upstream</dt>
                  <dd>
                    <Status value={state.status} />
                  </dd>
                  <dt>Endpoint</dt>
                  <dd>
                    {endpoint
                      ? <a href={`/ui/endpoints/hypervisor/${endpoint.id}`}>{endpoint.display}</a>
                      : shown(state.endpoint)}
                  </dd>
                  <dt>Guest id</dt>
                  <dd>{state.vm_type?.value}/{state.vmid}</dd>
                  <dt>Last seen</dt>
                  <dd>
                    <When at={state.last_seen} />
                  </dd>
                  <dt>Config digest</dt>
                  <dd>
                    <code class="small">{state.config_digest ?? "—"}</code>
                  </dd>
                </dl>
              )
              : <p class="muted">Not written by a sync (no sync state).</p>}
            <h3>Actions</h3>
            {!state
              ? <p class="muted">Actions need the guest's sync state.</p>
              : !writes
              ? <p class="muted">The endpoint does not allow writes (allow_writes is off).</p>
              : (
                <div class="verbs">
                  {offeredVerbs(vm.status?.value).map((v) => (
                    <a class="button" href={`/ui/vms/${id}/confirm?verb=${v}`}>
                      {v[0].toUpperCase() + v.slice(1)}…
                    </a>
                  ))}
                </div>
              )}
          </section>
        </div>
        <Section title="Interfaces" answer={ifaces}>
          <Table
            rows={ifaces.body?.results ?? []}
            columns={[
              { label: "Name", cell: (r) => r.name },
              { label: "Enabled", cell: (r) => r.enabled ? "yes" : "no" },
              { label: "MAC", cell: (r) => shown(r.primary_mac_address ?? r.mac_address) },
              { label: "VLAN", cell: (r) => shown(r.untagged_vlan) },
              { label: "MTU", cell: (r) => r.mtu ?? "—" },
            ]}
          />
        </Section>
        <Section title="IP addresses" answer={ips}>
          <Table
            rows={ips.body?.results ?? []}
            columns={[
              { label: "Address", cell: (r) => r.address },
              { label: "Interface", cell: (r) => shown(r.assigned_object) },
              { label: "Status", cell: (r) => <Status value={r.status} /> },
              { label: "DNS name", cell: (r) => r.dns_name || "—" },
            ]}
          />
        </Section>
        <Section title="Disks" answer={disks}>
          <Table
            rows={disks.body?.results ?? []}
            columns={[
              { label: "Name", cell: (r) => r.name },
              { label: "Size", cell: (r) => typeof r.size === "number" ? `${r.size} MB` : "—" },
              { label: "Description", cell: (r) => r.description || "—" },
            ]}
          />
        </Section>
        <div class="two halves">
          <Section title="Snapshots" answer={snaps}>
            <Table
              rows={snaps.body?.results ?? []}
              columns={[
                { label: "Name", cell: (r) => r.name },
                { label: "Taken", cell: (r) => <When at={r.snaptime} /> },
                { label: "Parent", cell: (r) => r.parent ?? "—" },
                { label: "Description", cell: (r) => r.description || "—" },
              ]}
            />
          </Section>
          <Section title="Backups" answer={backups}>
            <Table
              rows={backups.body?.results ?? []}
              columns={[
                { label: "Volume", cell: (r) => <code class="small">{r.volid}</code> },
                { label: "Created", cell: (r) => <When at={r.creation_time} /> },
                { label: "Size", cell: (r) => bytes(r.size) },
                { label: "Storage", cell: (r) => shown(r.storage) },
              ]}
            />
          </Section>
        </div>
        <HistorySection found={history} type="virtualization.virtualmachine" id={id} />
      </Layout>,
    );
  });

  app.get("/ui/vms/:id{[0-9]+}/confirm", async (c) => {
    const id = c.req.param("id");
    const verb = c.req.query("verb") as Verb;
    if (!VERBS.includes(verb)) return c.redirect(`/ui/vms/${id}`, 303);
    const guest = await loadGuest(c, id);
    if (!("vm" in guest)) return notFoundPage(c, guest.status, guest.detail);
    const session = c.get("session");
    return c.html(
      <Layout
        title={`${verb} ${guest.vm.name}`}
        active="vms"
        auth={c.get("auth")}
        session={session}
      >
        <PageHead title={`${verb[0].toUpperCase() + verb.slice(1)} ${guest.vm.name}?`} />
        <p>
          This sends <code>{verb}</code> to the hypervisor{" "}
          {guest.endpoint ? <strong>{guest.endpoint.display}</strong> : null} for guest{" "}
          {guest.state?.vm_type?.value}/{guest.state?.vmid}. The backend records it in the audit
          trail.
        </p>
        <form method="post" action={`/ui/vms/${id}/action`} class="form">
          <CsrfField session={session} />
          <input type="hidden" name="verb" value={verb} />
          {verb === "snapshot" && (
            <div class="grid">
              <div class="field">
                <label for="f-snapname">Snapshot name</label>
                <input id="f-snapname" name="snapname" pattern="[A-Za-z][A-Za-z0-9_\-]*" />
                <small>Letters, digits, _ and -; empty: a generated name.</small>
              </div>
              <div class="field">
                <label for="f-description">Description</label>
                <input id="f-description" name="description" />
              </div>
            </div>
          )}
          <div class="form-actions">
            <button type="submit" class="primary" autofocus>
              {verb[0].toUpperCase() + verb.slice(1)}
            </button>
            <a href={`/ui/vms/${id}`}>Cancel</a>
          </div>
        </form>
      </Layout>,
    );
  });

  app.post("/ui/vms/:id{[0-9]+}/action", async (c) => {
    const id = c.req.param("id");
    const form = await c.req.parseBody();
    const verb = String(form.verb) as Verb;
    if (!VERBS.includes(verb)) {
      return errorPage(c, 400, "Unknown action", "Choose start, stop or snapshot.");
    }
    const guest = await loadGuest(c, id);
    if (!("vm" in guest)) return notFoundPage(c, guest.status, guest.detail);
    if (!guest.state || !guest.endpoint) {
      return errorPage(c, 409, "Cannot act on this guest", "It has no sync state or endpoint.");
    }
    const backendId = await backendEndpointId(c, guest.endpoint.id);
    if (backendId === null) {
      const access = await c.get("api").backendAccess();
      return errorPage(
        c,
        access.ok ? 409 : access.status || 502,
        "Cannot reach the hypervisor",
        access.ok
          ? "The backend has no copy of this endpoint; save the endpoint to push it again."
          : access.reason,
      );
    }
    const body: Json = {};
    if (verb === "snapshot") {
      if (typeof form.snapname === "string" && form.snapname) body.snapname = form.snapname;
      if (typeof form.description === "string" && form.description) {
        body.description = form.description;
      }
    }
    const type = guest.state.vm_type?.value === "lxc" ? "lxc" : "qemu";
    const answer = await c.get("api").backend(
      "POST",
      `/hypervisor/${type}/${guest.state.vmid}/${verb}?endpoint_id=${backendId}`,
      body,
    );
    if (answer.status === 404 && !answer.body?.reason) {
      return errorPage(
        c,
        404,
        "Not available yet",
        "This server's backend does not offer the operational verbs yet.",
      );
    }
    if (answer.status >= 300 || answer.status === 0) {
      return errorPage(
        c,
        answer.status || 502,
        `${verb} failed`,
        answer.reason ?? detailOf(answer),
      );
    }
    const done = new URLSearchParams({ done: `${verb}:${answer.body?.result ?? "ok"}` });
    if (typeof answer.body?.task_upid === "string") {
      done.set("task", answer.body.task_upid);
      done.set("endpoint", String(backendId));
    }
    return c.redirect(`/ui/vms/${id}?${done}`, 303);
  });

  taskRoutes(app);
  return app;
}
