/** @jsxImportSource hono/jsx */
/**
 * Overview: hypervisor endpoints with live status (keepalive over EventSource), version,
 * last push and last sync; the inventory and backend endpoints; counts of what the sync wrote;
 * the bootstrap-status card with Repair.
 */
import { Hono } from "hono";
import { can } from "../../domain/netbox/tokens.ts";
import { type Answer, detailOf, type Json } from "./api.ts";
import type { ConsoleEnv, ConsoleServices } from "./context.ts";
import { ApiProblem, Badge, Layout, Notice, PageHead, shown, Status, When } from "./layout.tsx";
import { LastPush } from "./endpoints.tsx";

const P = "/api/plugins/service";

/** Bootstrap reasons in plain words; unknown codes fall back to their own words. */
const REASONS: Record<string, string> = {
  backend_not_configured: "No backend endpoint is configured, so nothing can be synced yet.",
  backend_unreachable: "The backend service could not be reached.",
  inventory_not_configured: "The backend has no inventory endpoint to write to.",
  inventory_unreachable: "The backend could not reach the inventory.",
  inventory_auth_failed: "The inventory rejected the token the backend uses.",
  invalid_token: "The inventory rejected the token the backend uses.",
  token_rejected: "The inventory rejected the token the backend uses.",
  custom_fields_missing: "Custom fields the sync writes are missing in the inventory.",
  missing_custom_fields: "Custom fields the sync writes are missing in the inventory.",
  credential_undecryptable: "A stored credential cannot be decrypted with the current key.",
};

export function plainReason(reason: unknown): string {
  if (typeof reason !== "string" || reason === "") return "Something needs attention.";
  const known = REASONS[reason];
  if (known) return known;
  if (reason.includes(" ")) return reason;
  const words = reason.replaceAll("_", " ");
  return words.charAt(0).toUpperCase() + words.slice(1) + ".";
}

const NOTICES: Record<string, string> = {
  repair: "Repair started: custom fields reconciled, full sync queued.",
  repair_unavailable: "Repair is not available on this server yet (its API answered 404).",
  repair_busy: "A repair is already pending or running.",
  repair_denied: "Your token may not start a repair (it needs core.add_job).",
  repair_failed: "The repair could not be started; the server log says why.",
};

const COUNTS: Array<{ label: string; path: string; perm: string; href: string }> = [
  {
    label: "Clusters",
    path: `${P}/clusters/?limit=1&brief=1`,
    perm: "service.view_cluster",
    href: "/ui/clusters",
  },
  {
    label: "Nodes",
    path: `${P}/nodes/?limit=1&brief=1`,
    perm: "service.view_node",
    href: "/ui/nodes",
  },
  {
    label: "Virtual machines",
    path: `${P}/vm-sync-state/?limit=1&brief=1&vm_type=qemu`,
    perm: "service.view_vmsyncstate",
    href: "/ui/vms?type=qemu",
  },
  {
    label: "Containers",
    path: `${P}/vm-sync-state/?limit=1&brief=1&vm_type=lxc`,
    perm: "service.view_vmsyncstate",
    href: "/ui/vms?type=lxc",
  },
  {
    label: "Storage",
    path: `${P}/storage/?limit=1&brief=1`,
    perm: "service.view_storage",
    href: "/ui/storage",
  },
];

function BootstrapCard(
  props: { answer: Answer; mayRepair: boolean; csrf: string; repaired?: string },
) {
  const { answer } = props;
  if (answer.status === 403) {
    return (
      <section class="card">
        <h2>Bootstrap</h2>
        <p class="muted">Your token may not view the backend endpoint.</p>
      </section>
    );
  }
  const body: Json = answer.body ?? {};
  const ok = answer.status === 200 && body.ok === true;
  const reason = answer.status === 200
    ? body.reason
    : answer.status === 404
    ? "The backend does not report its bootstrap status (it answered 404)."
    : body.reason ?? detailOf(answer);
  const warnings: Json[] = Array.isArray(body.warnings) ? body.warnings : [];
  return (
    <section class={`card bootstrap ${ok ? "ok" : "bad"}`} id="bootstrap">
      <h2>Bootstrap {ok ? <Badge tone="ok">ok</Badge> : <Badge tone="bad">needs repair</Badge>}</h2>
      {ok
        ? (
          <p>
            Custom fields and endpoints are in place ({body.created ?? 0} created,{" "}
            {body.patched ?? 0} patched, {body.unchanged ?? 0} unchanged).
          </p>
        )
        : (
          <>
            <p class="reason">{plainReason(reason)}</p>
            {answer.status !== 200 && answer.status !== 404 && (
              <p class="muted">{detailOf(answer)}</p>
            )}
            {warnings.length > 0 && (
              <ul class="warnings">
                {warnings.map((w) => (
                  <li>
                    <strong>{shown(w.object)}</strong>: {shown(w.error)}
                  </li>
                ))}
              </ul>
            )}
            {props.mayRepair
              ? (
                <form method="post" action="/ui/repair">
                  <input type="hidden" name="_csrf" value={props.csrf} />
                  <button type="submit" class="primary">Repair</button>
                  <span class="hint">
                    Reconciles the custom fields, then queues a full sync.
                  </span>
                </form>
              )
              : <p class="muted">Repair needs a token with core.add_job.</p>}
          </>
        )}
    </section>
  );
}

export function overviewRoutes(ctx: ConsoleServices): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();

  app.get("/ui/", async (c) => {
    const api = c.get("api");
    const auth = c.get("auth");
    const session = c.get("session");
    const countAnswers = COUNTS.map((k) =>
      can(auth, k.perm) ? api.get(k.path) : Promise.resolve(null)
    );
    const [hypervisors, inventories, backends, clusters, bootstrap, jobs, ...counts] = await Promise
      .all([
        api.get(`${P}/endpoints/hypervisor/?limit=1000&ordering=name`),
        api.get(`${P}/endpoints/inventory/?limit=10`),
        api.get(`${P}/endpoints/backend/?limit=1`),
        can(auth, "service.view_cluster")
          ? api.get(`${P}/clusters/?limit=1000`)
          : Promise.resolve(null),
        api.get(`${P}/bootstrap-status/`),
        can(auth, "core.view_job")
          ? api.get(`/api/core/jobs/?limit=25&ordering=-created`)
          : Promise.resolve(null),
        ...countAnswers,
      ]);
    const lastSynced = new Map<number, string>();
    for (const cl of clusters?.body?.results ?? []) {
      const id = cl.endpoint?.id;
      if (typeof id === "number" && typeof cl.last_synced === "string") {
        const prev = lastSynced.get(id);
        if (!prev || prev < cl.last_synced) lastSynced.set(id, cl.last_synced);
      }
    }
    // The newest job that ran a stage for the endpoint (a job's data has one record per
    // stage and endpoint), else the newest job for every endpoint.
    const recent: Json[] = jobs?.body?.results ?? [];
    const jobFor = (endpointId: number): Json | undefined =>
      recent.find((j) =>
        Array.isArray(j.data) && j.data.some((r: Json) => r?.endpoint_id === endpointId)
      ) ?? recent.find((j) => !Array.isArray(j.data) || j.data.length === 0);
    const rows: Json[] = hypervisors.status === 200 ? hypervisors.body.results : [];
    const notice = c.req.query("notice");
    return c.html(
      <Layout
        title="Overview"
        active="overview"
        auth={auth}
        session={session}
        live={rows.length > 0 ? { "data-live-status": rows.map((r) => r.id).join(",") } : undefined}
      >
        <PageHead
          title="Overview"
          sub="Endpoints, what the last sync wrote, and bootstrap health."
        />
        {notice && NOTICES[notice] && (
          <Notice kind={notice === "repair" ? "ok" : "error"}>{NOTICES[notice]}</Notice>
        )}
        <div class="cards">
          {COUNTS.map((k, i) => {
            const a = counts[i];
            const n = a && a.status === 200 ? a.body.count : null;
            if (!can(auth, k.perm)) {
              return (
                <div class="card count">
                  <span class="n">—</span>
                  <span class="label">{k.label}</span>
                </div>
              );
            }
            return (
              <a class="card count" href={k.href}>
                <span class="n">{n === null ? "—" : n.toLocaleString("en")}</span>
                <span class="label">{k.label}</span>
              </a>
            );
          })}
        </div>
        <div class="two">
          <section class="card wide">
            <h2>Hypervisor endpoints</h2>
            {hypervisors.status !== 200
              ? (
                <ApiProblem
                  status={hypervisors.status}
                  detail={detailOf(hypervisors)}
                  what="view hypervisor endpoints"
                />
              )
              : (
                <div class="table-wrap">
                  <table class="data">
                    <thead>
                      <tr>
                        <th scope="col">Name</th>
                        <th scope="col">Status</th>
                        <th scope="col">Version</th>
                        <th scope="col">Last push</th>
                        <th scope="col">Last sync</th>
                      </tr>
                    </thead>
                    <tbody>
                      {rows.length === 0 && (
                        <tr>
                          <td colspan={5} class="empty">
                            No hypervisor endpoint yet.{" "}
                            <a href="/ui/endpoints/hypervisor/new">Add one</a>.
                          </td>
                        </tr>
                      )}
                      {rows.map((r) => (
                        <tr>
                          <td>
                            <a href={`/ui/endpoints/hypervisor/${r.id}`}>{r.display}</a>
                          </td>
                          <td data-status-for={String(r.id)}>
                            {r.enabled === false
                              ? <Status value="disabled" />
                              : (
                                <span class="muted">
                                  <a href={`/ui/endpoints/hypervisor/${r.id}#status`}>check</a>
                                </span>
                              )}
                          </td>
                          <td data-version-for={String(r.id)}>{r.version ?? "—"}</td>
                          <td>
                            <LastPush value={r.last_push} />
                          </td>
                          <td>
                            <When at={lastSynced.get(r.id)} />
                            {jobFor(r.id) && (
                              <>
                                {" "}
                                <a href={`/ui/jobs/${jobFor(r.id)!.id}`} class="small">
                                  job #{jobFor(r.id)!.id} <Status value={jobFor(r.id)!.status} />
                                </a>
                              </>
                            )}
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
          </section>
          <div class="stack-cards">
            <BootstrapCard
              answer={bootstrap}
              mayRepair={can(auth, "core.add_job")}
              csrf={session.csrf}
            />
            <section class="card">
              <h2>Inventory and backend</h2>
              <dl class="kv">
                {inventories.status === 200
                  ? (inventories.body.results as Json[]).map((r) => (
                    <>
                      <dt>Inventory</dt>
                      <dd>
                        {r.display} <LastPush value={r.last_push} />
                      </dd>
                    </>
                  ))
                  : (
                    <>
                      <dt>Inventory</dt>
                      <dd class="muted">{detailOf(inventories)}</dd>
                    </>
                  )}
                {inventories.status === 200 && inventories.body.count === 0 && (
                  <>
                    <dt>Inventory</dt>
                    <dd class="muted">not configured</dd>
                  </>
                )}
                <dt>Backend</dt>
                {backends.status === 200
                  ? (
                    <dd>
                      {backends.body.results[0]
                        ? (
                          <>
                            {backends.body.results[0].display}{" "}
                            <LastPush value={backends.body.results[0].last_push} />
                          </>
                        )
                        : <span class="muted">not configured</span>}
                    </dd>
                  )
                  : <dd class="muted">{detailOf(backends)}</dd>}
              </dl>
            </section>
          </div>
        </div>
      </Layout>,
    );
  });

  app.post("/ui/repair", async (c) => {
    const answer = await c.get("api").call("POST", `${P}/repair/`, {});
    if (answer.status >= 200 && answer.status < 300) {
      const jobId = answer.body?.job_id ?? answer.body?.job?.id;
      return c.redirect(jobId ? `/ui/jobs/${jobId}` : "/ui/?notice=repair", 303);
    }
    const code = answer.status === 404
      ? "repair_unavailable"
      : answer.status === 409
      ? "repair_busy"
      : answer.status === 403
      ? "repair_denied"
      : "repair_failed";
    if (code === "repair_failed") {
      ctx.deps.logger.log("warning", "console: repair refused", {
        status: answer.status,
        detail: detailOf(answer),
      });
    }
    return c.redirect(`/ui/?notice=${code}#bootstrap`, 303);
  });

  return app;
}
