/** @jsxImportSource hono/jsx */
/**
 * Endpoints: the hypervisor endpoints with bulk enable/disable/delete, and the inventory and
 * backend endpoints. Every change is a request to the plugin REST API with the signed-in token.
 */
import { Hono } from "hono";
import { can } from "../../domain/netbox/tokens.ts";
import { detailOf, type Json } from "./api.ts";
import type { ConsoleEnv, ConsoleServices } from "./context.ts";
import { ApiProblem, Badge, CsrfField, Layout, Notice, PageHead, Status, When } from "./layout.tsx";

export const ENDPOINTS = "/api/plugins/service/endpoints";

/** The outcome of the last push to the backend, kept on every endpoint record. */
export function LastPush({ value }: { value: unknown }) {
  if (!value || typeof value !== "object") return <span class="muted">not pushed</span>;
  const p = value as { ok?: boolean; error?: string | null; at?: string };
  return (
    <span class="last-push" title={p.error ?? undefined}>
      {p.ok ? <Badge tone="ok">pushed</Badge> : <Badge tone="bad">push failed</Badge>}{" "}
      <When at={p.at} />
      {!p.ok && p.error && <span class="error-text">{p.error}</span>}
    </span>
  );
}

const NOTICES: Record<string, [kind: "ok" | "error", text: string]> = {
  enabled: ["ok", "The selected endpoints are enabled."],
  disabled: ["ok", "The selected endpoints are disabled."],
  deleted: ["ok", "The selected endpoints are deleted."],
  none: ["error", "Select at least one endpoint first."],
};

function selectedIds(form: Record<string, unknown>): number[] {
  const raw = form["ids"];
  const list = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  return [...new Set(list.map(Number).filter((n) => Number.isInteger(n) && n > 0))];
}

export function endpointRoutes(_ctx: ConsoleServices): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();

  app.get("/ui/endpoints", async (c) => {
    const api = c.get("api");
    const auth = c.get("auth");
    const session = c.get("session");
    const [hyp, inv, be] = await api.all([
      `${ENDPOINTS}/hypervisor/?limit=1000&ordering=name`,
      `${ENDPOINTS}/inventory/?limit=100`,
      `${ENDPOINTS}/backend/?limit=1`,
    ]);
    const mayChange = can(auth, "service.change_hypervisorendpoint");
    const mayAdd = can(auth, "service.add_hypervisorendpoint");
    const mayDelete = can(auth, "service.delete_hypervisorendpoint");
    const notice = NOTICES[c.req.query("notice") ?? ""];
    const failed = c.req.query("failed");
    const rows: Json[] = hyp.status === 200 ? hyp.body.results : [];
    return c.html(
      <Layout
        title="Endpoints"
        active="endpoints"
        auth={auth}
        session={session}
        live={rows.length > 0 ? { "data-live-status": rows.map((r) => r.id).join(",") } : undefined}
      >
        <PageHead title="Endpoints" sub="Where Bridgebox reads from and writes to.">
          {mayAdd && (
            <a class="button primary" href="/ui/endpoints/hypervisor/new">
              Add hypervisor endpoint
            </a>
          )}
        </PageHead>
        {notice && <Notice kind={notice[0]}>{notice[1]}</Notice>}
        {failed && (
          <Notice kind="error">
            Some endpoints could not be changed ({failed}); the API refused them.
          </Notice>
        )}
        <section class="card">
          <h2>Hypervisor endpoints</h2>
          {hyp.status !== 200
            ? (
              <ApiProblem
                status={hyp.status}
                detail={detailOf(hyp)}
                what="view hypervisor endpoints"
              />
            )
            : (
              <form method="post" action="/ui/endpoints/bulk">
                <CsrfField session={session} />
                <div class="table-wrap">
                  <table class="data">
                    <thead>
                      <tr>
                        {(mayChange || mayDelete) && (
                          <th scope="col" class="check">
                            <input
                              type="checkbox"
                              data-select-all="ids"
                              aria-label="Select all endpoints"
                            />
                          </th>
                        )}
                        <th scope="col">Name</th>
                        <th scope="col">Status</th>
                        <th scope="col">Enabled</th>
                        <th scope="col">Writes</th>
                        <th scope="col">Auth</th>
                        <th scope="col">Version</th>
                        <th scope="col">Last push</th>
                      </tr>
                    </thead>
                    <tbody>
                      {rows.length === 0 && (
                        <tr>
                          <td colspan={8} class="empty">No hypervisor endpoint yet.</td>
                        </tr>
                      )}
                      {rows.map((r) => (
                        <tr>
                          {(mayChange || mayDelete) && (
                            <td class="check">
                              <input
                                type="checkbox"
                                name="ids"
                                value={String(r.id)}
                                aria-label={`Select ${r.name}`}
                              />
                            </td>
                          )}
                          <td>
                            <a href={`/ui/endpoints/hypervisor/${r.id}`}>{r.display}</a>
                            {r.has_ssh_terminal_credentials && (
                              <>
                                {" "}
                                <a
                                  class="button small"
                                  href={`/ui/endpoints/hypervisor/${r.id}/terminal`}
                                >
                                  Terminal
                                </a>
                              </>
                            )}
                          </td>
                          <td data-status-for={String(r.id)}>
                            {r.enabled === false ? <Status value="disabled" /> : "—"}
                          </td>
                          <td>{r.enabled === false ? "no" : "yes"}</td>
                          <td>
                            {r.allow_writes ? <Badge tone="warn">allowed</Badge> : "read-only"}
                          </td>
                          <td>
                            {r.token_name ? `token ${r.token_name}` : `password (${r.username})`}
                          </td>
                          <td data-version-for={String(r.id)}>{r.version ?? "—"}</td>
                          <td>
                            <LastPush value={r.last_push} />
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
                {rows.length > 0 && (mayChange || mayDelete) && (
                  <div class="bulk">
                    <span>With the selected:</span>
                    {mayChange && (
                      <button type="submit" name="action" value="enable">Enable</button>
                    )}
                    {mayChange && (
                      <button type="submit" name="action" value="disable">Disable</button>
                    )}
                    {mayDelete && (
                      <button type="submit" name="action" value="delete" class="danger">
                        Delete…
                      </button>
                    )}
                  </div>
                )}
              </form>
            )}
        </section>
        <div class="two">
          <section class="card">
            <h2>Inventory endpoint</h2>
            {inv.status !== 200
              ? (
                <ApiProblem
                  status={inv.status}
                  detail={detailOf(inv)}
                  what="view inventory endpoints"
                />
              )
              : (inv.body.results as Json[]).length === 0
              ? (
                <p class="muted">
                  Not configured.{" "}
                  {can(auth, "service.add_inventoryendpoint") && (
                    <a href="/ui/endpoints/inventory/new">Add the inventory endpoint</a>
                  )}
                </p>
              )
              : (inv.body.results as Json[]).map((r) => (
                <p>
                  <a href={`/ui/endpoints/inventory/${r.id}`}>{r.display}</a> · token{" "}
                  {r.token_version?.value ?? r.token_version} · <LastPush value={r.last_push} />
                </p>
              ))}
          </section>
          <section class="card">
            <h2>Backend endpoint</h2>
            {be.status !== 200
              ? (
                <ApiProblem
                  status={be.status}
                  detail={detailOf(be)}
                  what="view the backend endpoint"
                />
              )
              : (be.body.results as Json[]).length === 0
              ? (
                <p class="muted">
                  Not configured.{" "}
                  {can(auth, "service.add_backendendpoint") && (
                    <a href="/ui/endpoints/backend/new">Add the backend endpoint</a>
                  )}
                </p>
              )
              : (be.body.results as Json[]).map((r) => (
                <p>
                  <a href={`/ui/endpoints/backend/${r.id}`}>{r.display}</a> · key{" "}
                  {typeof r.token === "string" || r.has_token ? "set" : "not set"} ·{" "}
                  <LastPush value={r.last_push} />
                </p>
              ))}
          </section>
        </div>
      </Layout>,
    );
  });

  app.post("/ui/endpoints/bulk", async (c) => {
    const api = c.get("api");
    const form = await c.req.parseBody({ all: true });
    const ids = selectedIds(form);
    const action = String(form.action ?? "");
    if (ids.length === 0) return c.redirect("/ui/endpoints?notice=none", 303);
    if (action === "enable" || action === "disable") {
      const answer = await api.call(
        "PATCH",
        `${ENDPOINTS}/hypervisor/`,
        ids.map((id) => ({ id, enabled: action === "enable" })),
      );
      if (answer.status !== 200) {
        return c.redirect(
          `/ui/endpoints?failed=${encodeURIComponent(`HTTP ${answer.status}`)}`,
          303,
        );
      }
      return c.redirect(`/ui/endpoints?notice=${action}d`, 303);
    }
    if (action === "delete") {
      // Deleting is confirmed on its own page (works without JavaScript).
      const names = await api.get(
        `${ENDPOINTS}/hypervisor/?brief=1&limit=1000&${ids.map((i) => `id=${i}`).join("&")}`,
      );
      const session = c.get("session");
      const rows: Json[] = names.status === 200 ? names.body.results : [];
      return c.html(
        <Layout title="Delete endpoints" active="endpoints" auth={c.get("auth")} session={session}>
          <PageHead title="Delete endpoints?" />
          <Notice kind="warn">
            Deleting an endpoint also deletes what the sync wrote for it (clusters, nodes, storage,
            tasks) and removes its backend copy.
          </Notice>
          <ul>
            {rows.map((r) => <li key={r.id}>{r.display}</li>)}
          </ul>
          <form method="post" action="/ui/endpoints/delete">
            <CsrfField session={session} />
            {rows.map((r) => <input key={r.id} type="hidden" name="ids" value={String(r.id)} />)}
            <button type="submit" class="danger">Delete {rows.length} endpoint(s)</button>{" "}
            <a href="/ui/endpoints">Cancel</a>
          </form>
        </Layout>,
      );
    }
    return c.redirect("/ui/endpoints", 303);
  });

  app.post("/ui/endpoints/delete", async (c) => {
    const form = await c.req.parseBody({ all: true });
    const ids = selectedIds(form);
    if (ids.length === 0) return c.redirect("/ui/endpoints?notice=none", 303);
    const answer = await c.get("api").call(
      "DELETE",
      `${ENDPOINTS}/hypervisor/`,
      ids.map((id) => ({ id })),
    );
    if (answer.status !== 204) {
      return c.redirect(
        `/ui/endpoints?failed=${encodeURIComponent(`HTTP ${answer.status}: ${detailOf(answer)}`)}`,
        303,
      );
    }
    return c.redirect("/ui/endpoints?notice=deleted", 303);
  });

  return app;
}
