/** @jsxImportSource hono/jsx */
/**
 * Sync: pick stages and endpoints (default everything) and start a durable sync job
 * (`POST /api/plugins/service/sync/`), then watch it on the job's page. Where this server has
 * no job API yet but the backend streams its stages, the stages can be run and watched live
 * straight from the backend instead (not durable: closing the page stops the run).
 */
import { Hono } from "hono";
import { can } from "../../domain/netbox/tokens.ts";
import { STAGES } from "../../domain/sync/runner.ts";
import { detailOf, type Json } from "./api.ts";
import type { ConsoleEnv, ConsoleServices, Ctx } from "./context.ts";
import { CsrfField, FieldErrors, Layout, Notice, PageHead } from "./layout.tsx";
import { StageTable } from "./stage_table.tsx";
import { OPTIONAL_STAGES, OVERWRITE_FAMILIES, stageParam } from "../../domain/sync/options.ts";

/** One item of the backend's dry-run plan (docs/sync.md, "Dry run and plan"). */
interface PlanRow {
  step: string;
  action: string;
  object: string;
  fields?: Record<string, unknown>;
  changes?: Record<string, { old: unknown; new: unknown }>;
}

/** Rows shown on the page; the rest is counted (the JSON has them all). */
const PLAN_ROWS = 500;

/** The run options of the form, as query parameters (only those that differ from the default). */
export function formOptions(form: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  if (form.options_form === undefined) return out;
  const on = (key: string) => form[key] !== undefined;
  for (const f of OVERWRITE_FAMILIES) if (!on(`overwrite_${f}`)) out[`overwrite_${f}`] = "false";
  if (on("delete_orphans")) out.delete_orphans = "true";
  const pref = form.primary_ip_preference;
  if (pref === "v4" || pref === "v6") out.primary_ip_preference = pref;
  for (const s of OPTIONAL_STAGES) if (!on(stageParam(s))) out[stageParam(s)] = "false";
  // Blank: the endpoint's policy (else the sync's own roles) decides.
  for (const role of ["qemu_role", "lxc_role"]) {
    const slug = typeof form[role] === "string" ? (form[role] as string).trim() : "";
    if (slug) out[role] = slug;
  }
  return out;
}

function PlanSection(props: { plan: PlanRow[]; message: string }) {
  const show = (v: unknown) => JSON.stringify(v) ?? "null";
  const rows = props.plan.slice(0, PLAN_ROWS);
  return (
    <section class="card" id="plan">
      <h2>Plan (dry run, nothing written)</h2>
      <p>{props.message}</p>
      {props.plan.length === 0
        ? <p class="muted">Nothing to write: the inventory is current.</p>
        : (
          <table class="table">
            <thead>
              <tr>
                <th>Stage</th>
                <th>Action</th>
                <th>Object</th>
                <th>What</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((p) => (
                <tr data-plan-action={p.action}>
                  <td>{p.step}</td>
                  <td>{p.action}</td>
                  <td>{p.object}</td>
                  <td>
                    {p.action === "create"
                      ? Object.entries(p.fields ?? {}).map(([k, v]) => `${k}=${show(v)}`).join(", ")
                      : Object.entries(p.changes ?? {}).map(([k, c]) =>
                        `${k}: ${show(c.old)} → ${show(c.new)}`
                      ).join("; ")}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      {props.plan.length > PLAN_ROWS && (
        <p class="muted">
          … and {props.plan.length - PLAN_ROWS}{" "}
          more (the backend's /full-update?dry_run=true has them all).
        </p>
      )}
    </section>
  );
}

export const SYNC_API = "/api/plugins/service/sync/";

/** Is the durable job API served? (404: no such route; anything else: it exists.) */
export async function jobApiAvailable(c: Ctx): Promise<boolean> {
  const answer = await c.get("api").call("GET", SYNC_API);
  return answer.status !== 404;
}

/** Does the backend stream its stages? Its OpenAPI document lists the paths it serves. */
export async function backendHasPath(
  c: Ctx,
  path: string,
): Promise<{ ok: boolean; reason: string }> {
  const answer = await c.get("api").backend("GET", "/openapi.json");
  if (answer.status !== 200) {
    return { ok: false, reason: answer.reason ?? `the backend answered HTTP ${answer.status}.` };
  }
  const paths = answer.body?.paths ?? {};
  return path in paths
    ? { ok: true, reason: "" }
    : { ok: false, reason: `the backend does not serve ${path} yet.` };
}

function SyncForm(
  props: {
    c: Ctx;
    endpoints: Json[];
    jobs: boolean;
    live: { ok: boolean; reason: string } | null;
    error?: string;
    errors?: Record<string, string[]>;
    values?: Record<string, string>;
    plan?: { plan: PlanRow[]; message: string };
  },
) {
  const errors = props.errors ?? {};
  const values = props.values ?? {};
  const field = (name: string, label: string, input: unknown, help?: string) => (
    <div class={`field ${errors[name] ? "invalid" : ""}`}>
      <label for={`f-${name}`}>{label}</label>
      {input}
      {help && <small>{help}</small>}
      <FieldErrors errors={errors[name]} id={`f-${name}-errors`} />
    </div>
  );
  const { c } = props;
  const session = c.get("session");
  const mayStart = can(c.get("auth"), "core.add_job");
  return (
    <Layout title="Sync" active="sync" auth={c.get("auth")} session={session}>
      <PageHead
        title="Sync"
        sub="Read the hypervisors and write what they hold into the inventory."
      />
      {props.error && <Notice kind="error">{props.error}</Notice>}
      {!props.jobs && (
        <Notice kind="info">
          Durable sync jobs are not available on this server yet (the job API answered 404).
          {props.live?.ok
            ? " You can still run the stages live from the backend below; the run stops when you leave the page."
            : props.live
            ? ` Live runs from the backend are not possible either: ${props.live.reason}`
            : ""}
        </Notice>
      )}
      {!mayStart && <Notice kind="info">Starting a sync needs a token with core.add_job.</Notice>}
      <form
        method="post"
        action="/ui/sync"
        class="form"
        data-sync-form={props.jobs ? undefined : "live"}
      >
        <CsrfField session={session} />
        <fieldset disabled={!mayStart || (!props.jobs && !props.live?.ok)}>
          <legend>Stages</legend>
          <div class="checks">
            <label>
              <input type="checkbox" name="sync_types" value="all" checked /> <strong>all</strong>
              {" "}
              (in order)
            </label>
            {STAGES.map((s, i) => (
              <label>
                <input type="checkbox" name="sync_types" value={s.type} /> {i + 1}. {s.type}
              </label>
            ))}
          </div>
        </fieldset>
        <fieldset disabled={!mayStart || (!props.jobs && !props.live?.ok)}>
          <legend>Hypervisor endpoints</legend>
          {props.endpoints.length === 0
            ? <p class="muted">No hypervisor endpoint yet.</p>
            : (
              <div class="checks">
                {props.endpoints.map((e) => (
                  <label>
                    <input
                      type="checkbox"
                      name="endpoint_ids"
                      value={String(e.id)}
                      checked={e.enabled !== false}
                    />{" "}
                    {e.display}
                    {e.enabled === false ? " (disabled)" : ""}
                  </label>
                ))}
              </div>
            )}
          <small>Leave all unchecked to sync every enabled endpoint.</small>
        </fieldset>
        <fieldset disabled={!mayStart}>
          <legend>Run options</legend>
          <input type="hidden" name="options_form" value="1" />
          <div class="checks">
            <span>The hypervisor owns (unchecked: the admin does, written on create only):</span>
            {OVERWRITE_FAMILIES.map((f) => (
              <label>
                <input type="checkbox" name={`overwrite_${f}`} value="true" checked />{" "}
                {f.replace("_", " ")}
              </label>
            ))}
          </div>
          <div class="checks">
            <span>Optional stages:</span>
            {OPTIONAL_STAGES.map((s) => (
              <label>
                <input type="checkbox" name={stageParam(s)} value="true" checked /> {s}
              </label>
            ))}
          </div>
          <div class="checks">
            <label>
              <input type="checkbox" name="delete_orphans" value="true" />{" "}
              delete VMs whose guest is gone (default: mark them decommissioning)
            </label>
            <label>
              primary IP{" "}
              <select name="primary_ip_preference">
                <option value="both" selected>IPv4 and IPv6</option>
                <option value="v4">IPv4 preferred</option>
                <option value="v6">IPv6 preferred</option>
              </select>
            </label>
            <label>
              QEMU role <input name="qemu_role" placeholder="endpoint's policy" maxlength={100} />
            </label>
            <label>
              LXC role <input name="lxc_role" placeholder="endpoint's policy" maxlength={100} />
            </label>
          </div>
          <small>See docs/sync.md, "Run options" and "Who owns a field".</small>
        </fieldset>
        {props.jobs && (
          <fieldset disabled={!mayStart}>
            <legend>When</legend>
            <div class="grid">
              {field(
                "job_name",
                "Job name",
                <input id="f-job_name" name="job_name" value={values.job_name ?? ""} />,
                "Optional; default: the stages it runs.",
              )}
              {field(
                "schedule_at",
                "Start at (UTC)",
                <input
                  id="f-schedule_at"
                  name="schedule_at"
                  type="datetime-local"
                  value={values.schedule_at ?? ""}
                />,
                "Empty: now.",
              )}
              {field(
                "interval_value",
                "Repeat every",
                <input
                  id="f-interval_value"
                  name="interval_value"
                  inputmode="numeric"
                  value={values.interval_value ?? ""}
                />,
                "Empty: once.",
              )}
              {field(
                "interval_unit",
                "Unit",
                <select id="f-interval_unit" name="interval_unit">
                  {["minutes", "hours", "days"].map((u) => (
                    <option key={u} value={u} selected={values.interval_unit === u}>{u}</option>
                  ))}
                </select>,
              )}
            </div>
          </fieldset>
        )}
        {mayStart && props.jobs && (
          <div class="form-actions">
            <button type="submit" name="intent" value="plan">Show the plan (dry run)</button>
            <button type="submit" class="primary">Start sync</button>
          </div>
        )}
        {mayStart && !props.jobs && props.live?.ok && (
          <div class="form-actions">
            <button type="submit" name="intent" value="plan">Show the plan (dry run)</button>
            <button type="submit" class="primary" name="mode" value="live">
              Run the stages now (live)
            </button>
          </div>
        )}
      </form>
      {props.plan && <PlanSection plan={props.plan.plan} message={props.plan.message} />}
      {!props.jobs && (
        <section class="card" id="live-run" hidden>
          <h2>Live run</h2>
          <StageTable />
          <pre class="log" data-log aria-live="polite"></pre>
        </section>
      )}
    </Layout>
  );
}

function chosen(form: Record<string, unknown>, key: string): string[] {
  const raw = form[key];
  const list = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  return list.map(String);
}

export function syncRoutes(_ctx: ConsoleServices): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();

  const page = async (
    c: Ctx,
    error?: string,
    status = 200,
    extra: {
      errors?: Record<string, string[]>;
      values?: Record<string, string>;
      plan?: { plan: PlanRow[]; message: string };
    } = {},
  ) => {
    const [jobs, endpoints] = await Promise.all([
      jobApiAvailable(c),
      c.get("api").get("/api/plugins/service/endpoints/hypervisor/?limit=1000&brief=0"),
    ]);
    const live = jobs ? null : await backendHasPath(c, "/full-update/stream");
    return c.html(
      <SyncForm
        c={c}
        endpoints={endpoints.status === 200 ? endpoints.body.results : []}
        jobs={jobs}
        live={live}
        error={error}
        errors={extra.errors}
        values={extra.values}
        plan={extra.plan}
      />,
      status as 200,
    );
  };

  app.get("/ui/sync", (c) => page(c));

  /**
   * The plan before the admin presses Start: the backend's dry run (JSON) for the chosen
   * stages, endpoints and options. Plugin endpoint ids become the backend copies pushed from
   * them (their names end with "(inv:<id>)").
   */
  const plan = async (
    c: Ctx,
    types: string[],
    ids: number[],
    options: Record<string, string>,
  ) => {
    const stages = types.length === 0 || types.includes("all")
      ? null
      : STAGES.filter((s) => types.includes(s.type));
    const query = new URLSearchParams({ ...options, dry_run: "true" });
    if (ids.length) {
      const copies = await c.get("api").backend("GET", "/hypervisor/endpoints");
      const list: Json[] = Array.isArray(copies.body) ? copies.body : [];
      const scoped = list.filter((e) =>
        ids.some((id) => String(e.name ?? "").endsWith(` (inv:${id})`))
      ).map((e) => e.id);
      if (scoped.length) query.set("hypervisor_endpoint_ids", scoped.join(","));
    }
    const paths = stages ? stages.map((s) => s.path) : ["/full-update"];
    const rows: PlanRow[] = [];
    const messages: string[] = [];
    for (const path of paths) {
      const answer = await c.get("api").backend("GET", `${path}?${query}`);
      if (answer.status !== 200 && !Array.isArray(answer.body?.plan)) {
        return page(c, `The plan could not be made: ${answer.reason ?? detailOf(answer)}`, 502);
      }
      rows.push(...(answer.body?.plan ?? []));
      messages.push(String(answer.body?.message ?? answer.body?.detail ?? ""));
    }
    return page(c, undefined, 200, { plan: { plan: rows, message: messages.join(" ") } });
  };

  app.post("/ui/sync", async (c) => {
    const form = await c.req.parseBody({ all: true });
    const types = chosen(form, "sync_types");
    const ids = chosen(form, "endpoint_ids").map(Number).filter((n) => Number.isInteger(n));
    const options = formOptions(form);
    if (form.intent === "plan") return plan(c, types, ids, options);
    const body: Json = {
      sync_types: types.length === 0 || types.includes("all") ? ["all"] : types,
    };
    if (ids.length > 0) body.hypervisor_endpoint_ids = ids;
    if (Object.keys(options).length) body.sync_options = options;
    const values: Record<string, string> = {};
    for (const key of ["job_name", "schedule_at", "interval_value", "interval_unit"]) {
      const v = form[key];
      if (typeof v === "string" && v.trim() !== "") values[key] = v.trim();
    }
    if (values.job_name) body.job_name = values.job_name;
    // datetime-local has no zone: the form says UTC.
    if (values.schedule_at) {
      const v = values.schedule_at;
      body.schedule_at = /T\d\d:\d\d$/.test(v)
        ? `${v}:00Z`
        : /T\d\d:\d\d:\d\d$/.test(v)
        ? `${v}Z`
        : v;
    }
    if (values.interval_value) {
      body.interval_value = values.interval_value;
      body.interval_unit = values.interval_unit ?? "minutes";
    }
    const answer = await c.get("api").call("POST", SYNC_API, body);
    if (answer.status === 201 || answer.status === 200 || answer.status === 202) {
      return c.redirect(`/ui/jobs/${answer.body.job_id}`, 303);
    }
    if (answer.status === 404) {
      return page(c, "Durable sync jobs are not available on this server yet.", 404);
    }
    if (answer.status === 409) {
      const running = answer.body?.job_id;
      return page(
        c,
        `A sync is already running${running ? ` (job ${running})` : ""}; wait for it to finish.`,
        409,
      );
    }
    if (answer.status === 400) {
      const errors: Record<string, string[]> = {};
      for (const [k, v] of Object.entries(answer.body ?? {})) {
        errors[k] = Array.isArray(v) ? v.map(String) : [String(v)];
      }
      const elsewhere = Object.entries(errors).filter(([k]) =>
        !["job_name", "schedule_at", "interval_value", "interval_unit"].includes(k)
      ).map(([k, v]) => `${k === "non_field_errors" ? "" : `${k}: `}${v.join(" ")}`);
      return page(
        c,
        `The sync was not started${
          elsewhere.length ? `: ${elsewhere.join("; ")}` : "; see below."
        }`,
        400,
        { errors, values },
      );
    }
    return page(c, `The sync was not started: ${detailOf(answer)}`, answer.status);
  });

  return app;
}
