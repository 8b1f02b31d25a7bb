/** @jsxImportSource hono/jsx */
/** Plugin settings: the write-only encryption key (set / not set) and custom fields. */
import { Hono } from "hono";
import { can } from "../../domain/netbox/tokens.ts";
import { detailOf, type Json } from "./api.ts";
import type { ConsoleEnv, ConsoleServices, Ctx } from "./context.ts";
import { ApiProblem, CsrfField, FieldErrors, Layout, Notice, PageHead, When } from "./layout.tsx";

const SETTINGS = "/api/plugins/service/settings/";

function SettingsPage(
  props: { c: Ctx; status: number; body: Json; errors?: Record<string, string[]>; saved?: boolean },
) {
  const { c, body, errors } = props;
  const auth = c.get("auth");
  const session = c.get("session");
  const mayChange = can(auth, "service.change_pluginsettings");
  return (
    <Layout title="Settings" active="settings" auth={auth} session={session}>
      <PageHead title="Plugin settings" />
      {props.saved && <Notice kind="ok">Settings saved.</Notice>}
      {props.status !== 200 && props.status !== 400
        ? (
          <ApiProblem
            status={props.status}
            detail={detailOf(props)}
            what="view the plugin settings"
          />
        )
        : (
          <form method="post" action="/ui/settings" class="form" novalidate>
            <CsrfField session={session} />
            {errors?.non_field_errors && (
              <Notice kind="error">{errors.non_field_errors.join(" ")}</Notice>
            )}
            <fieldset disabled={!mayChange}>
              <legend>Encryption</legend>
              <div class={`field ${errors?.encryption_key ? "invalid" : ""}`}>
                <label for="f-encryption_key">
                  Encryption key
                  <span class={`secret-state ${body?.has_encryption_key ? "set" : ""}`}>
                    {body?.has_encryption_key ? "set" : "not set"}
                  </span>
                </label>
                <input
                  id="f-encryption_key"
                  name="encryption_key"
                  type="password"
                  autocomplete="new-password"
                  placeholder={body?.has_encryption_key ? "stored; leave empty to keep" : ""}
                  aria-invalid={errors?.encryption_key ? "true" : undefined}
                  aria-describedby="f-encryption_key-help"
                />
                <small id="f-encryption_key-help">
                  Seals endpoint secrets; at least 16 characters. Changing it keeps the old key for
                  reading older secrets.
                </small>
                <FieldErrors errors={errors?.encryption_key} />
              </div>
              <div class="field check">
                <input
                  id="f-custom_fields_enabled"
                  type="checkbox"
                  name="custom_fields_enabled"
                  checked={body?.custom_fields_enabled === true}
                />
                <label for="f-custom_fields_enabled">Write custom fields during sync</label>
                <FieldErrors errors={errors?.custom_fields_enabled} />
              </div>
            </fieldset>
            <p class="muted">
              Last changed <When at={body?.last_updated} />
            </p>
            {mayChange
              ? <button type="submit" class="primary">Save settings</button>
              : <p class="muted">Your token may view the settings but not change them.</p>}
          </form>
        )}
    </Layout>
  );
}

export function settingsRoutes(_ctx: ConsoleServices): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();
  app.get("/ui/settings", async (c) => {
    const answer = await c.get("api").get(SETTINGS);
    return c.html(
      <SettingsPage
        c={c}
        status={answer.status}
        body={answer.body}
        saved={c.req.query("notice") === "saved"}
      />,
      answer.status === 200 ? 200 : answer.status as 403,
    );
  });
  app.post("/ui/settings", async (c) => {
    const api = c.get("api");
    const form = await c.req.parseBody();
    const patch: Json = { custom_fields_enabled: form.custom_fields_enabled === "on" };
    if (typeof form.encryption_key === "string" && form.encryption_key !== "") {
      patch.encryption_key = form.encryption_key;
    }
    const answer = await api.call("PATCH", SETTINGS, patch);
    if (answer.status === 200) return c.redirect("/ui/settings?notice=saved", 303);
    const current = await api.get(SETTINGS);
    const errors = answer.status === 400 ? answer.body : { non_field_errors: [detailOf(answer)] };
    return c.html(
      <SettingsPage
        c={c}
        status={current.status === 200 ? 400 : current.status}
        body={current.body}
        errors={errors}
      />,
      answer.status === 400 ? 400 : answer.status as 403,
    );
  });
  return app;
}
