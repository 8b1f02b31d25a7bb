/** @jsxImportSource hono/jsx */
/**
 * Create and edit forms for the three endpoint kinds. The API validates; its 400 body
 * (`{"field": ["message"]}`) is shown next to each field. Secrets are write-only: the form
 * says whether one is set and an empty field keeps it.
 */
import { Hono } from "hono";
import { can } from "../../domain/netbox/tokens.ts";
import { detailOf, type Json } from "./api.ts";
import type { ConsoleEnv, ConsoleServices, Ctx } from "./context.ts";
import { CsrfField, FieldErrors, Layout, Notice, PageHead, Status } from "./layout.tsx";
import { errorPage } from "./errors.tsx";
import { ENDPOINTS, LastPush } from "./endpoints.tsx";

type Kind = "hypervisor" | "inventory" | "backend";
const KINDS: Record<Kind, { label: string; model: string }> = {
  hypervisor: { label: "hypervisor endpoint", model: "hypervisorendpoint" },
  inventory: { label: "inventory endpoint", model: "inventoryendpoint" },
  backend: { label: "backend endpoint", model: "backendendpoint" },
};

interface Field {
  name: string;
  label: string;
  /**
   * `map`: an object of name → text, edited as `name = value` lines. `json`: any JSON value,
   * edited as JSON text (what does not parse is sent as text, so the API's own error shows).
   */
  type: "text" | "number" | "checkbox" | "select" | "secret" | "secret-area" | "map" | "json";
  options?: Array<[string, string]>;
  help?: string;
  /** Read-only field telling whether the secret is stored. */
  hasField?: string;
  /** Blank input is sent as null (optional text) rather than omitted. */
  nullable?: boolean;
}

const ADDRESS: Field[] = [
  { name: "name", label: "Name", type: "text" },
  {
    name: "domain",
    label: "Host (DNS name or IP)",
    type: "text",
    nullable: true,
    help: "Where Bridgebox connects.",
  },
  { name: "port", label: "Port", type: "number" },
  { name: "use_https", label: "Use HTTPS", type: "checkbox" },
  { name: "verify_ssl", label: "Verify the TLS certificate", type: "checkbox" },
];

const FORMS: Record<Kind, Array<{ legend: string; fields: Field[] }>> = {
  hypervisor: [
    {
      legend: "Connection",
      fields: [
        ...ADDRESS,
        {
          name: "mode",
          label: "Mode",
          type: "select",
          options: [["undefined", "Undefined"], ["standalone", "Standalone"], [
            "cluster",
            "Cluster",
          ]],
        },
        { name: "enabled", label: "Enabled", type: "checkbox" },
        {
          name: "allow_writes",
          label: "Allow writes (start, stop, snapshot, migrate)",
          type: "checkbox",
        },
      ],
    },
    {
      // docs/sync.md "An endpoint's policy" and "Roles and tenants".
      legend: "Sync policy",
      fields: [
        {
          name: "sync_policy",
          label: "Run options this endpoint's syncs default to (JSON)",
          type: "json",
          help: 'e.g. {"qemu_role": "server", "lxc_role": "container", "stage_sdn": false, ' +
            '"tenant_rules": [{"match": "name", "pattern": "^web-", "tenant": "web"}]}. ' +
            "Blank: none. A run's own options win (docs/sync.md, Run options).",
        },
      ],
    },
    {
      legend: "Credentials",
      fields: [
        { name: "username", label: "Username", type: "text", help: "e.g. root@pam" },
        { name: "password", label: "Password", type: "secret", hasField: "has_password" },
        { name: "token_name", label: "API token id", type: "text", nullable: true },
        {
          name: "token_value",
          label: "API token secret",
          type: "secret",
          hasField: "has_token_value",
        },
      ],
    },
    {
      legend: "SSH settings and secrets",
      fields: [
        {
          name: "ssh_credential_source",
          label: "SSH credentials",
          type: "select",
          options: [["dedicated", "Dedicated"], ["reuse_endpoint", "Reuse endpoint credentials"]],
        },
        { name: "ssh_username", label: "SSH username", type: "text", nullable: true },
        { name: "ssh_port", label: "SSH port", type: "number" },
        {
          name: "ssh_auth_method",
          label: "SSH authentication",
          type: "select",
          options: [["password", "Password"], ["key", "Private key"]],
        },
        {
          name: "ssh_known_host_fingerprint",
          label: "Pinned host key",
          type: "text",
          nullable: true,
          help: "SHA256:<base64>",
        },
        {
          name: "ssh_node_host_fingerprints",
          label: "Pinned host keys of the cluster's nodes",
          type: "map",
          help: "One node per line: pve2 = SHA256:<base64>. A node's terminal needs its own " +
            "key unless its address is the endpoint's; read it on the node's host-key-fingerprint.",
        },
        {
          name: "ssh_password",
          label: "SSH password",
          type: "secret",
          hasField: "has_ssh_password",
        },
        {
          name: "ssh_private_key",
          label: "SSH private key",
          type: "secret-area",
          hasField: "has_ssh_private_key",
        },
      ],
    },
  ],
  inventory: [
    {
      legend: "Connection",
      fields: [
        ...ADDRESS,
        {
          name: "token_version",
          label: "Token version",
          type: "select",
          options: [["v1", "v1"], ["v2", "v2"]],
        },
        {
          name: "token",
          label: "v1 token (id of an inventory token)",
          type: "number",
          nullable: true,
        },
        { name: "token_key", label: "v2 key", type: "text", nullable: true },
        {
          name: "token_secret",
          label: "v2 secret",
          type: "secret",
          hasField: "has_token_secret",
        },
      ],
    },
  ],
  backend: [
    { legend: "Connection", fields: ADDRESS },
    {
      // docs/sync.md "WebSocket streams".
      legend: "Sync stage streams",
      fields: [
        {
          name: "use_websocket",
          label: "Read the stage streams over WebSocket",
          type: "checkbox",
          help: "Off: Server-Sent Events on the connection above (the default).",
        },
        {
          name: "websocket_domain",
          label: "WebSocket host",
          type: "text",
          nullable: true,
          help: "Blank: the host above.",
        },
        {
          name: "websocket_port",
          label: "WebSocket port",
          type: "number",
          help: "The backend's own port unless a proxy in front of it serves WebSockets apart.",
        },
        {
          name: "server_side_websocket",
          label: "Server-side WebSocket",
          type: "checkbox",
          help: "Kept for compatibility: the plugin's server always opens the socket.",
        },
      ],
    },
  ],
};

const DEFAULTS: Record<Kind, Json> = {
  hypervisor: {
    port: 8006,
    use_https: true,
    verify_ssl: false,
    enabled: true,
    allow_writes: false,
    username: "root@pam",
    mode: "undefined",
    ssh_credential_source: "dedicated",
    ssh_port: 22,
    ssh_auth_method: "password",
  },
  inventory: { port: 443, use_https: true, verify_ssl: true, token_version: "v1" },
  backend: {
    port: 8800,
    use_https: true,
    verify_ssl: true,
    use_websocket: false,
    websocket_port: 8800,
    server_side_websocket: false,
  },
};

type Errors = Record<string, string[]>;

const MAP_FIELDS: ReadonlySet<string> = new Set(
  Object.values(FORMS).flatMap((groups) =>
    groups.flatMap((g) =>
      g.fields.filter((f) => f.type === "map" || f.type === "json").map((f) => f.name)
    )
  ),
);

/** `name = value` lines → an object (a line without `=` keeps its text as a name: the API names it). */
export function mapFromLines(text: string): Record<string, string> | null {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const trimmed = line.trim();
    if (!trimmed) continue;
    const at = trimmed.indexOf("=");
    if (at < 0) out[trimmed] = "";
    else out[trimmed.slice(0, at).trim()] = trimmed.slice(at + 1).trim();
  }
  return Object.keys(out).length ? out : null;
}

/** A JSON field's text: blank is null, JSON is parsed, anything else is sent as the text. */
export function jsonFromText(text: string): unknown {
  if (text.trim() === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function textFromJson(value: unknown): string {
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function linesFromMap(value: unknown): string {
  if (!value || typeof value !== "object" || Array.isArray(value)) return "";
  return Object.entries(value as Record<string, unknown>).map(([k, v]) => `${k} = ${v}`).join(
    "\n",
  );
}

function valueOf(record: Json, name: string): unknown {
  const v = record?.[name];
  // A map or JSON is shown as it is (a node may be called "id" or "value").
  if (MAP_FIELDS.has(name)) return v;
  if (v && typeof v === "object" && "value" in v) return v.value;
  if (v && typeof v === "object" && "id" in v) return v.id;
  return v;
}

/** The JSON body for the API from a submitted form (blank secrets are left out: kept). */
export function bodyFromForm(kind: Kind, form: Record<string, unknown>): Json {
  const body: Json = {};
  for (const group of FORMS[kind]) {
    for (const f of group.fields) {
      const raw = form[f.name];
      // A field the form did not carry is left alone (a checkbox always carries its hidden
      // "off", so an unchecked box still counts as sent).
      if (raw === undefined && form[`clear_${f.name}`] === undefined) continue;
      const text = typeof raw === "string" ? raw : "";
      switch (f.type) {
        case "checkbox": {
          const values = Array.isArray(raw) ? raw : [raw];
          body[f.name] = values.includes("on") || values.includes("true");
          break;
        }
        case "select":
          if (text !== "") body[f.name] = text;
          break;
        case "secret":
        case "secret-area":
          if (form[`clear_${f.name}`] === "on") body[f.name] = null;
          else if (text !== "") body[f.name] = text;
          break;
        case "map":
          body[f.name] = mapFromLines(text);
          break;
        case "json":
          body[f.name] = jsonFromText(text);
          break;
        case "number":
          if (text.trim() === "") {
            if (f.nullable) body[f.name] = null;
          } else body[f.name] = /^\d+$/.test(text.trim()) ? Number(text.trim()) : text;
          break;
        default:
          body[f.name] = text.trim() === "" && f.nullable ? null : text.trim();
      }
    }
  }
  return body;
}

/** The form's single host field stands for the API's `domain` and `ip_address`. */
const FIELD_ALIASES: Record<string, string> = { ip_address: "domain" };

/** The form's errors from a refused save: field errors on 400, else the answer's detail. */
function errorsOf(answer: { status: number; body: Json }): Errors {
  if (answer.status !== 400) return { non_field_errors: [detailOf(answer)] };
  const body = answer.body;
  if (!body || typeof body !== "object" || Array.isArray(body)) return {};
  const out: Errors = {};
  for (const [key, v] of Object.entries(body)) {
    const k = FIELD_ALIASES[key] ?? key;
    const messages = Array.isArray(v) ? v.map(String) : typeof v === "string" ? [v] : [];
    out[k] = [...new Set([...(out[k] ?? []), ...messages])];
  }
  return out;
}

function Input(props: { f: Field; value: unknown; record: Json; errors?: string[] }) {
  const { f, value, errors } = props;
  const id = `f-${f.name}`;
  const errId = errors ? `${id}-errors` : undefined;
  const help = f.help ? `${id}-help` : undefined;
  const described = [errId, help].filter(Boolean).join(" ") || undefined;
  const invalid = errors ? "true" : undefined;
  if (f.type === "checkbox") {
    return (
      <div class={`field check ${errors ? "invalid" : ""}`}>
        <input type="hidden" name={f.name} value="off" />
        <input
          id={id}
          type="checkbox"
          name={f.name}
          checked={value === true}
          aria-invalid={invalid}
          aria-describedby={described}
        />
        <label for={id}>{f.label}</label>
        {f.help && <small id={help}>{f.help}</small>}
        <FieldErrors errors={errors} id={errId} />
      </div>
    );
  }
  const isSet = f.hasField ? props.record?.[f.hasField] === true : false;
  return (
    <div class={`field ${f.type === "json" ? "wide " : ""}${errors ? "invalid" : ""}`}>
      <label for={id}>
        {f.label}
        {f.hasField && props.record && (
          <span class={`secret-state ${isSet ? "set" : ""}`}>{isSet ? "set" : "not set"}</span>
        )}
      </label>
      {f.type === "select"
        ? (
          <select id={id} name={f.name} aria-invalid={invalid} aria-describedby={described}>
            {f.options!.map(([v, l]) => (
              <option key={v} value={v} selected={value === v}>{l}</option>
            ))}
          </select>
        )
        : f.type === "json" || f.type === "map"
        ? (
          <textarea
            id={id}
            name={f.name}
            rows={f.type === "json" ? 4 : 3}
            autocomplete="off"
            spellcheck={false}
            aria-invalid={invalid}
            aria-describedby={described}
          >
            {f.type === "json" ? textFromJson(value) : linesFromMap(value)}
          </textarea>
        )
        : f.type === "secret-area"
        ? (
          <textarea
            id={id}
            name={f.name}
            rows={3}
            autocomplete="off"
            placeholder={isSet ? "stored; leave empty to keep" : ""}
            aria-invalid={invalid}
            aria-describedby={described}
          >
          </textarea>
        )
        : (
          <input
            id={id}
            name={f.name}
            type={f.type === "secret" ? "password" : f.type === "number" ? "text" : "text"}
            inputmode={f.type === "number" ? "numeric" : undefined}
            value={f.type === "secret"
              ? ""
              : value === null || value === undefined
              ? ""
              : String(value)}
            autocomplete={f.type === "secret" ? "new-password" : "off"}
            placeholder={f.type === "secret" && isSet ? "stored; leave empty to keep" : ""}
            aria-invalid={invalid}
            aria-describedby={described}
          />
        )}
      {f.help && <small id={help}>{f.help}</small>}
      {(f.type === "secret" || f.type === "secret-area") && isSet && (
        <label class="clear">
          <input type="checkbox" name={`clear_${f.name}`} /> remove the stored{" "}
          {f.label.toLowerCase()}
        </label>
      )}
      <FieldErrors errors={errors} id={errId} />
    </div>
  );
}

function EndpointForm(
  props: {
    c: Ctx;
    kind: Kind;
    record: Json | null;
    values: Json;
    errors: Errors;
    notice?: [("ok" | "error" | "warn"), string];
  },
) {
  const { c, kind, record, values, errors } = props;
  const auth = c.get("auth");
  const session = c.get("session");
  const label = KINDS[kind].label;
  const title = record ? `${record.display}` : `Add a ${label}`;
  const known = new Set(FORMS[kind].flatMap((g) => g.fields.map((f) => f.name)));
  const other = Object.entries(errors).filter(([k]) => !known.has(k));
  const action = record ? `/ui/endpoints/${kind}/${record.id}` : `/ui/endpoints/${kind}/new`;
  const mayWrite = can(
    auth,
    record ? `service.change_${KINDS[kind].model}` : `service.add_${KINDS[kind].model}`,
  );
  return (
    <Layout
      title={title}
      active="endpoints"
      auth={auth}
      session={session}
      live={record && kind === "hypervisor" ? { "data-live-status": String(record.id) } : undefined}
    >
      <PageHead title={title} sub={record ? label : undefined}>
        {record && (
          <a class="button" href={record.url}>
            API object
          </a>
        )}
      </PageHead>
      {props.notice && <Notice kind={props.notice[0]}>{props.notice[1]}</Notice>}
      {Object.keys(errors).length > 0 && (
        <Notice kind="error">
          The {label} was not saved: fix the fields marked below.
          {other.length > 0 && (
            <ul>
              {other.map(([k, v]) => (
                <li>
                  {k === "non_field_errors" ? "" : `${k}: `}
                  {v.join(" ")}
                </li>
              ))}
            </ul>
          )}
        </Notice>
      )}
      {record && (
        <dl class="kv card">
          {kind === "hypervisor" && (
            <>
              <dt id="status">Status</dt>
              <dd data-status-for={String(record.id)}>
                {record.enabled === false ? <Status value="disabled" /> : "—"}
              </dd>
              <dt>Version</dt>
              <dd data-version-for={String(record.id)}>{record.version ?? "—"}</dd>
            </>
          )}
          <dt>Last push</dt>
          <dd>
            <LastPush value={record.last_push} />
          </dd>
        </dl>
      )}
      {!mayWrite && <Notice kind="info">Your token may view this {label} but not change it.
      </Notice>}
      <form method="post" action={action} class="form" novalidate>
        <CsrfField session={session} />
        {FORMS[kind].map((g) => (
          <fieldset disabled={!mayWrite}>
            <legend>{g.legend}</legend>
            <div class="grid">
              {g.fields.map((f) => (
                <Input
                  f={f}
                  value={valueOf(values, f.name)}
                  record={record}
                  errors={errors[f.name]}
                />
              ))}
            </div>
          </fieldset>
        ))}
        {mayWrite && (
          <div class="form-actions">
            <button type="submit" class="primary">{record ? "Save" : `Create ${label}`}</button>
            <a href="/ui/endpoints">Cancel</a>
          </div>
        )}
      </form>
      {record && kind === "hypervisor" && can(auth, "service.delete_hypervisorendpoint") && (
        <form method="post" action="/ui/endpoints/bulk" class="danger-zone">
          <CsrfField session={session} />
          <input type="hidden" name="ids" value={String(record.id)} />
          <button type="submit" name="action" value="delete" class="danger">
            Delete this endpoint…
          </button>
        </form>
      )}
    </Layout>
  );
}

function kindOf(c: Ctx): Kind | null {
  const k = c.req.param("kind");
  return k === "hypervisor" || k === "inventory" || k === "backend" ? k : null;
}

export function endpointFormRoutes(_ctx: ConsoleServices): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();
  const notFound = (c: Ctx, message: string) => errorPage(c, 404, "Not found", message);

  app.get("/ui/endpoints/:kind/new", (c) => {
    const kind = kindOf(c);
    if (!kind) return notFound(c, "There is no such kind of endpoint.");
    return c.html(
      <EndpointForm c={c} kind={kind} record={null} values={DEFAULTS[kind]} errors={{}} />,
    );
  });

  app.post("/ui/endpoints/:kind/new", async (c) => {
    const kind = kindOf(c);
    if (!kind) return notFound(c, "There is no such kind of endpoint.");
    const form = await c.req.parseBody({ all: true });
    const body = bodyFromForm(kind, form);
    const answer = await c.get("api").call("POST", `${ENDPOINTS}/${kind}/`, body);
    if (answer.status === 201) {
      return c.redirect(`/ui/endpoints/${kind}/${answer.body.id}?notice=created`, 303);
    }
    const errors = errorsOf(answer);
    return c.html(
      <EndpointForm
        c={c}
        kind={kind}
        record={null}
        values={{ ...DEFAULTS[kind], ...body }}
        errors={errors}
      />,
      answer.status === 400 ? 400 : answer.status as 403,
    );
  });

  app.get("/ui/endpoints/:kind/:id{[0-9]+}", async (c) => {
    const kind = kindOf(c);
    if (!kind) return notFound(c, "There is no such kind of endpoint.");
    const answer = await c.get("api").get(`${ENDPOINTS}/${kind}/${c.req.param("id")}/`);
    if (answer.status === 404) return notFound(c, `There is no ${KINDS[kind].label} with this id.`);
    if (answer.status !== 200) {
      return errorPage(
        c,
        answer.status,
        "Cannot show this endpoint",
        answer.status === 403 ? `Your token may not view ${KINDS[kind].label}s.` : detailOf(answer),
      );
    }
    const notice: [("ok" | "warn"), string] | undefined = c.req.query("notice") === "created"
      ? ["ok", `The ${KINDS[kind].label} was created.`]
      : c.req.query("notice") === "saved"
      ? ["ok", "Saved."]
      : undefined;
    const push = answer.body.last_push;
    const pushNotice: [("warn"), string] | undefined = notice && push && push.ok === false
      ? ["warn", `Saved, but the push to the backend failed: ${push.error ?? "unknown error"}`]
      : undefined;
    return c.html(
      <EndpointForm
        c={c}
        kind={kind}
        record={answer.body}
        values={answer.body}
        errors={{}}
        notice={pushNotice ?? notice}
      />,
    );
  });

  app.post("/ui/endpoints/:kind/:id{[0-9]+}", async (c) => {
    const kind = kindOf(c);
    if (!kind) return notFound(c, "There is no such kind of endpoint.");
    const api = c.get("api");
    const path = `${ENDPOINTS}/${kind}/${c.req.param("id")}/`;
    const form = await c.req.parseBody({ all: true });
    const body = bodyFromForm(kind, form);
    const answer = await api.call("PATCH", path, body);
    if (answer.status === 200) {
      return c.redirect(`/ui/endpoints/${kind}/${answer.body.id}?notice=saved`, 303);
    }
    const current = await api.get(path);
    if (current.status !== 200) {
      return notFound(c, `There is no ${KINDS[kind].label} with this id.`);
    }
    const errors = errorsOf(answer);
    return c.html(
      <EndpointForm
        c={c}
        kind={kind}
        record={current.body}
        values={{ ...current.body, ...body }}
        errors={errors}
      />,
      answer.status === 400 ? 400 : answer.status as 403,
    );
  });

  return app;
}
