/** @jsxImportSource hono/jsx */
/**
 * The browser terminal (README "Browser terminal", SECURITY.md "Browser terminal"):
 *
 * - `GET  /ui/endpoints/hypervisor/{id}/terminal`          the page (xterm.js, served by the app)
 * - `POST /ui/endpoints/hypervisor/{id}/terminal/session`  a one-time ticket (CSRF-checked form)
 * - `GET  /ui/terminal/socket`                             the WebSocket; first frame: the ticket
 * - `GET  /ui/endpoints/hypervisor/{id}/host-key-fingerprint`  the key the host presents, to pin
 * - `GET  /ui/terminal/sessions`                           every session (superusers; JSON or page)
 * - `GET  /ui/nodes/{id}/terminal`, `POST …/terminal/session`, `GET …/host-key-fingerprint`:
 *   the same for one cluster node (a plugin node record), at the address the cluster reported
 *   for it, with the endpoint's SSH credentials and `ssh_port` and the node's own pinned key
 *   (domain/terminal.ts nodeTarget)
 *
 * Every SSH target (endpoint or node) passes the outbound policy first (domain/terminal.ts
 * checkSshHost): a node address reported by a hostile cluster reaches no loopback, link-local
 * or metadata address.
 *
 * The permission is the plugin's own check: the secrets are read through
 * `…/ssh-secrets/` with the signed-in token, which answers only to `service.open_ssh_terminal`
 * with view on the endpoint (write-enabled tokens). It is asked when the ticket is made and
 * again when the WebSocket attaches.
 */
import { Hono } from "hono";
import type { Child } from "hono/jsx";
import type { ConsoleEnv, ConsoleServices, Ctx, TerminalServices } from "./context.ts";
import { Layout, Notice, PageHead, STATIC } from "./layout.tsx";
import {
  checkSshHost,
  clampSize,
  nodeTarget,
  type SshShell,
  type TerminalSessionRecord,
} from "../../domain/terminal.ts";
import { can } from "../plugin/permissions.ts";
import type { ConsoleApi } from "./api.ts";

const ENDPOINT = "/api/plugins/service/endpoints/hypervisor";
const NODES = "/api/plugins/service/nodes";

/** Close codes of the terminal socket (4000 range: refusals; 1000: the SSH side ended). */
export const TERMINAL_CLOSE = {
  ticket: 4001,
  denied: 4003,
  idle: 4008,
  hostKey: 4009,
  ssh: 4010,
  signedOut: 4011,
} as const;

/** Ends every terminal the console session holds in this process. */
export type { TerminalServices };

export function endTerminals(services: TerminalServices, consoleSession: string): void {
  for (const end of services.live.get(consoleSession) ?? []) {
    end(TERMINAL_CLOSE.signedOut, "signed out");
  }
}

interface EndpointView {
  id: number;
  name: string;
  display?: string;
  domain?: string | null;
  ip_address?: { address?: string } | null;
  ssh_port?: number;
  ssh_known_host_fingerprint?: string | null;
  ssh_node_host_fingerprints?: Record<string, string> | null;
  has_ssh_terminal_credentials?: boolean;
  enabled?: boolean;
}

interface NodeView {
  id: number;
  name: string;
  ip_address?: string | null;
  online?: boolean;
  endpoint?: { id?: number } | null;
}

/** Where a terminal goes: an endpoint's own address, or one of its nodes'. */
interface Target {
  endpoint: EndpointView;
  node: NodeView | null;
  /** As configured or reported (a name or an address); checked by the policy before use. */
  host: string;
  port: number;
  pinned: string;
  pinnedBy: string;
  /** "lab" or "pve2 (lab)". */
  label: string;
}

type Resolved =
  | { ok: true; target: Target }
  | { ok: false; status: 403 | 404 | 422; body: Record<string, unknown> };

type Refused = Extract<Resolved, { ok: false }>;

const NOT_FOUND: Refused = { ok: false, status: 404, body: { detail: "Not found." } };

async function endpointTarget(api: ConsoleApi, id: number): Promise<Resolved> {
  const e = await endpointVia(api, id);
  if (!e) return NOT_FOUND;
  const host = hostOf(e);
  if (!host) {
    return {
      ok: false,
      status: 422,
      body: { reason: "ssh_host_missing", detail: "The endpoint has no address." },
    };
  }
  if (!e.ssh_known_host_fingerprint) {
    return {
      ok: false,
      status: 422,
      body: {
        reason: "ssh_fingerprint_required",
        detail: "Pin the host key first (ssh_known_host_fingerprint): read it with " +
          `/ui/endpoints/hypervisor/${id}/host-key-fingerprint and compare it out of band.`,
      },
    };
  }
  return {
    ok: true,
    target: {
      endpoint: e,
      node: null,
      host,
      port: e.ssh_port ?? 22,
      pinned: e.ssh_known_host_fingerprint,
      pinnedBy: "the endpoint",
      label: e.name,
    },
  };
}

/** The node record (read with the signed-in token: it needs view on nodes) and its endpoint. */
async function nodeAndEndpoint(
  api: ConsoleApi,
  nodeId: number,
): Promise<{ node: NodeView; endpoint: EndpointView; siblings: number } | Refused> {
  const answer = await api.get(`${NODES}/${nodeId}/`);
  if (answer.status === 403) return { ok: false, status: 403, body: answer.body };
  if (answer.status !== 200) return NOT_FOUND;
  const node = answer.body as NodeView;
  const endpointId = node.endpoint?.id;
  const endpoint = typeof endpointId === "number" ? await endpointVia(api, endpointId) : null;
  if (!endpoint) return NOT_FOUND;
  const siblings = await api.get(`${NODES}/?endpoint_id=${endpoint.id}&limit=1&brief=1`);
  const count = siblings.status === 200 ? Number(siblings.body.count) : NaN;
  return { node, endpoint, siblings: Number.isFinite(count) ? count : 0 };
}

async function nodeTargetVia(api: ConsoleApi, nodeId: number): Promise<Resolved> {
  const found = await nodeAndEndpoint(api, nodeId);
  if ("ok" in found) return found;
  const { node, endpoint: e, siblings } = found;
  const decided = nodeTarget(
    {
      host: hostOf(e),
      pinned: e.ssh_known_host_fingerprint ?? null,
      nodePins: e.ssh_node_host_fingerprints ?? null,
    },
    { name: node.name, ip_address: node.ip_address ?? null },
    siblings,
  );
  if (!decided.ok) {
    return { ok: false, status: 422, body: { reason: decided.reason, detail: decided.detail } };
  }
  return {
    ok: true,
    target: {
      endpoint: e,
      node,
      host: decided.host,
      port: e.ssh_port ?? 22,
      pinned: decided.pinned,
      pinnedBy: decided.pinnedBy,
      label: `${node.name} (${e.name})`,
    },
  };
}

function hostOf(e: EndpointView): string | null {
  if (e.domain) return e.domain;
  const address = e.ip_address?.address;
  return address ? address.split("/")[0] : null;
}

function userOf(c: Ctx): string {
  return `token #${c.get("session").tokenId}`;
}

function endpoint(c: Ctx, id: number): Promise<EndpointView | null> {
  return endpointVia(c.get("api"), id);
}

async function endpointVia(api: ConsoleApi, id: number): Promise<EndpointView | null> {
  const answer = await api.get(`${ENDPOINT}/${id}/`);
  return answer.status === 200 ? answer.body as EndpointView : null;
}

/** The plugin's own permission check (and the secrets): 200 or its refusal, relayed. */
async function secrets(c: Ctx, id: number) {
  return await c.get("api").get(`${ENDPOINT}/${id}/ssh-secrets/`);
}

/** The session record of a target: who, where, which node. */
function recordFields(c: Ctx, target: Target, sshUsername: string) {
  return {
    endpoint_id: target.endpoint.id,
    endpoint_name: target.endpoint.name,
    node_id: target.node?.id ?? null,
    node_name: target.node?.name ?? null,
    host: target.host,
    port: target.port,
    ssh_username: sshUsername,
    token_id: c.get("session").tokenId,
    user: userOf(c),
    console_session: c.get("session").id,
  };
}

export function terminalRoutes(ctx: ConsoleServices): Hono<ConsoleEnv> {
  const t = ctx.terminals;
  const app = new Hono<ConsoleEnv>();
  const idParam = (c: Ctx) => {
    const id = Number(c.req.param("id"));
    return Number.isSafeInteger(id) && id > 0 ? id : null;
  };

  // xterm.js writes its theme into a <style> element: the terminal pages alone allow inline
  // styles (scripts stay 'self' only).
  const terminalPage = (c: Ctx, title: string, body: Child) => {
    c.header(
      "content-security-policy",
      "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    return c.html(
      <Layout
        title={title}
        active="endpoints"
        auth={c.get("auth")}
        session={c.get("session")}
        head={
          <>
            <link rel="stylesheet" href={`${STATIC}/xterm.css`} />
            <script src={`${STATIC}/xterm.js`} defer></script>
            <script src={`${STATIC}/addon-fit.js`} defer></script>
            <script src={`${STATIC}/terminal.js`} defer></script>
          </>
        }
      >
        {body}
      </Layout>,
    );
  };

  const terminalBox = (c: Ctx, sessionUrl: string) => (
    <>
      <p id="terminal-status" role="status">Connecting…</p>
      <div
        id="terminal"
        class="terminal"
        data-session-url={sessionUrl}
        data-socket-url="/ui/terminal/socket"
        data-csrf={c.get("session").csrf}
      >
      </div>
    </>
  );

  /** The endpoint's nodes, each with its own Terminal (when the token may view nodes). */
  const nodeList = async (c: Ctx, e: EndpointView) => {
    const answer = await c.get("api").get(`${NODES}/?endpoint_id=${e.id}&limit=200`);
    if (answer.status !== 200 || !Array.isArray(answer.body?.results)) return null;
    const nodes = answer.body.results as NodeView[];
    if (nodes.length === 0) return null;
    const pins = e.ssh_node_host_fingerprints ?? {};
    return (
      <section class="card" id="node-terminals">
        <h2>Nodes of this endpoint</h2>
        <table>
          <thead>
            <tr>
              <th>Node</th>
              <th>Address</th>
              <th>Host key</th>
              <th></th>
            </tr>
          </thead>
          <tbody>
            {nodes.map((n) => (
              <tr>
                <td>{n.name}</td>
                <td>{n.ip_address ?? "—"}</td>
                <td>{pins[n.name] ?? "not pinned"}</td>
                <td>
                  <a class="button small" href={`/ui/nodes/${n.id}/terminal`}>Terminal</a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    );
  };

  app.get("/ui/endpoints/hypervisor/:id/terminal", async (c) => {
    const id = idParam(c);
    const e = id === null ? null : await endpoint(c, id);
    if (!e) {
      return terminalPage(
        c,
        "Terminal",
        <Notice kind="error">No hypervisor endpoint with this id.</Notice>,
      );
    }
    const ready = e.has_ssh_terminal_credentials && e.ssh_known_host_fingerprint;
    return terminalPage(
      c,
      `Terminal · ${e.name}`,
      <>
        <PageHead
          title={`Terminal · ${e.display ?? e.name}`}
          sub={`${hostOf(e) ?? "?"}:${e.ssh_port ?? 22} · host key ${
            e.ssh_known_host_fingerprint ?? "not pinned"
          }`}
        >
          <a class="button" href={`/ui/endpoints/hypervisor/${e.id}`}>Back to endpoint</a>
        </PageHead>
        {ready
          ? terminalBox(c, `/ui/endpoints/hypervisor/${e.id}/terminal/session`)
          : (
            <Notice kind="warn">
              This endpoint has no complete SSH credentials or no pinned host key. Set them on the
              endpoint; read the key to pin with{" "}
              <a href={`/ui/endpoints/hypervisor/${e.id}/host-key-fingerprint`}>
                host-key-fingerprint
              </a>{" "}
              and compare it out of band before pinning it.
            </Notice>
          )}
        {await nodeList(c, e)}
      </>,
    );
  });

  app.get("/ui/nodes/:id/terminal", async (c) => {
    const id = idParam(c);
    const found = id === null ? NOT_FOUND : await nodeAndEndpoint(c.get("api"), id);
    if ("ok" in found) {
      return terminalPage(
        c,
        "Terminal",
        <Notice kind="error">
          {found.status === 403
            ? "Your token may not view this node."
            : "No hypervisor node with this id."}
        </Notice>,
      );
    }
    const { node, endpoint: e } = found;
    const decided = await nodeTargetVia(c.get("api"), node.id);
    const ready = e.has_ssh_terminal_credentials && decided.ok;
    return terminalPage(
      c,
      `Terminal · ${node.name}`,
      <>
        <PageHead
          title={`Terminal · ${node.name} (${e.display ?? e.name})`}
          sub={decided.ok
            ? `${decided.target.host}:${decided.target.port} · host key ${decided.target.pinned} (pinned by ${decided.target.pinnedBy})`
            : `${node.ip_address ?? "?"}:${e.ssh_port ?? 22}`}
        >
          <a class="button" href={`/ui/endpoints/hypervisor/${e.id}/terminal`}>
            The endpoint's terminal
          </a>
        </PageHead>
        {ready ? terminalBox(c, `/ui/nodes/${node.id}/terminal/session`) : (
          <Notice kind="warn">
            {!e.has_ssh_terminal_credentials
              ? "The node's endpoint has no complete SSH credentials; set them on the endpoint. "
              : ""}
            {!decided.ok ? `${decided.body.detail} ` : ""}
            {
              // The refusal already says how to pin; the page adds the helper's link, once.
              !decided.ok && decided.body.reason === "ssh_fingerprint_required" && (
                <>
                  The node's helper:{" "}
                  <a href={`/ui/nodes/${node.id}/host-key-fingerprint`}>host-key-fingerprint</a>.
                </>
              )
            }
          </Notice>
        )}
      </>,
    );
  });

  /** A one-time ticket: the plugin's permission check, the target, the outbound policy. */
  const openSession = async (
    c: Ctx,
    endpointId: number | null,
    resolve: () => Promise<Resolved>,
  ) => {
    if (endpointId === null) return c.json({ detail: "Not found." }, 404);
    const checked = await secrets(c, endpointId);
    if (checked.status !== 200) return c.json(checked.body, checked.status as 403);
    const resolved = await resolve();
    if (!resolved.ok) return c.json(resolved.body, resolved.status);
    const allowed = await checkSshHost(resolved.target.host, t.hostPolicy);
    if (!allowed.ok) {
      return c.json({ reason: "ssh_target_refused", detail: allowed.detail }, 422);
    }
    const { ticket, record } = await t.sessions.create(
      recordFields(c, resolved.target, String(checked.body.username ?? "")),
    );
    return c.json({ ticket, session_id: record.id, socket: "/ui/terminal/socket" }, 201);
  };

  app.post("/ui/endpoints/hypervisor/:id/terminal/session", (c) => {
    const id = idParam(c);
    return openSession(c, id, () => endpointTarget(c.get("api"), id!));
  });

  app.post("/ui/nodes/:id/terminal/session", async (c) => {
    const id = idParam(c);
    const found = id === null ? NOT_FOUND : await nodeAndEndpoint(c.get("api"), id);
    if ("ok" in found) return c.json(found.body, found.status);
    return openSession(c, found.endpoint.id, () => nodeTargetVia(c.get("api"), id!));
  });

  /**
   * Reads the key a host presents (no credential sent) for an admin to compare and pin.
   * Reading sends nothing secret, but it makes the app connect out: only for those who may
   * change the endpoint (who would pin it), and only to where the outbound policy allows.
   */
  const readKey = async (
    c: Ctx,
    target: { host: string; port: number; pinned: string | null },
    extra: Record<string, unknown>,
    pinHint: string,
  ) => {
    if (!can(c.get("auth"), "service.change_hypervisorendpoint") || !c.get("auth").writeEnabled) {
      return c.json({ detail: "You do not have permission to perform this action." }, 403);
    }
    const allowed = await checkSshHost(target.host, t.hostPolicy);
    if (!allowed.ok) {
      return c.json({ reason: "ssh_target_refused", detail: allowed.detail }, 422);
    }
    const read = await t.ssh.readHostKey(allowed.address, target.port);
    if (!read.ok) return c.json({ reason: "ssh_unreachable", detail: read.detail }, 502);
    const pinned = target.pinned;
    return c.json(
      {
        ...extra,
        host: target.host,
        port: target.port,
        algorithm: read.algorithm,
        fingerprint: read.fingerprint,
        pinned,
        matches_pinned: pinned === null ? null : pinned.replace(/=+$/, "") === read.fingerprint,
        detail: `Shown for confirmation only: compare it out of band, then ${pinHint} yourself. ` +
          "Nothing was pinned.",
      },
      200,
      { "cache-control": "no-store" },
    );
  };

  app.get("/ui/endpoints/hypervisor/:id/host-key-fingerprint", async (c) => {
    const id = idParam(c);
    const e = id === null ? null : await endpoint(c, id);
    if (!e) return c.json({ detail: "Not found." }, 404);
    const host = hostOf(e);
    if (!host) {
      return c.json({ detail: "The endpoint has neither a domain nor an IP address." }, 422);
    }
    return readKey(
      c,
      { host, port: e.ssh_port ?? 22, pinned: e.ssh_known_host_fingerprint ?? null },
      { endpoint_id: e.id },
      "set ssh_known_host_fingerprint on the endpoint",
    );
  });

  app.get("/ui/nodes/:id/host-key-fingerprint", async (c) => {
    const id = idParam(c);
    const found = id === null ? NOT_FOUND : await nodeAndEndpoint(c.get("api"), id);
    if ("ok" in found) return c.json(found.body, found.status);
    const { node, endpoint: e, siblings } = found;
    // The address as the terminal would use it; the pin is this node's own (if any).
    const host = node.ip_address?.trim().split("/")[0] || (siblings === 1 ? hostOf(e) : null);
    if (!host) {
      return c.json({
        reason: "ssh_host_missing",
        detail: `Node ${node.name} has no address (the cluster reported no ip for it).`,
      }, 422);
    }
    return readKey(
      c,
      { host, port: e.ssh_port ?? 22, pinned: e.ssh_node_host_fingerprints?.[node.name] ?? null },
      { endpoint_id: e.id, node_id: node.id, node: node.name },
      `add {"${node.name}": "<fingerprint>"} to the endpoint's ssh_node_host_fingerprints`,
    );
  });

  app.get("/ui/terminal/sessions", async (c) => {
    if (!c.get("auth").isSuperuser) {
      return c.json({ detail: "Only superusers may read terminal sessions." }, 403);
    }
    const results = await t.sessions.list();
    if ((c.req.header("accept") ?? "").includes("application/json")) {
      return c.json({ count: results.length, results });
    }
    return c.html(
      <Layout
        title="Terminal sessions"
        active="endpoints"
        auth={c.get("auth")}
        session={c.get("session")}
      >
        <PageHead title="Terminal sessions" sub="Every browser terminal opened, newest first." />
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Opened</th>
                <th>Who</th>
                <th>Endpoint</th>
                <th>Node</th>
                <th>Host</th>
                <th>SSH user</th>
                <th>Seconds</th>
                <th>Ended</th>
              </tr>
            </thead>
            <tbody>
              {results.map((r) => (
                <tr>
                  <td>{r.created}</td>
                  <td>{r.user}</td>
                  <td>{r.endpoint_name}</td>
                  <td>{r.node_name ?? "—"}</td>
                  <td>{`${r.host}:${r.port}`}</td>
                  <td>{r.ssh_username}</td>
                  <td>{r.duration_seconds ?? "open"}</td>
                  <td>{r.end_reason ?? "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Layout>,
    );
  });

  app.get("/ui/terminal/socket", (c) => {
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
      return c.json({ detail: "This address takes a WebSocket." }, 426);
    }
    // Cookies ride along on cross-site WebSockets: only this console's own pages may attach.
    const origin = c.req.header("origin");
    if (origin && origin !== new URL(c.req.url).origin) {
      return c.json({ detail: "WebSocket from another site refused." }, 403);
    }
    const api = c.get("api").detached();
    const { socket, response } = Deno.upgradeWebSocket(c.req.raw);
    attach(c.get("session").id, api, socket, t);
    return response;
  });

  return app;
}

function attach(
  consoleSession: string,
  api: ConsoleApi,
  socket: WebSocket,
  t: TerminalServices,
): void {
  let shell: SshShell | null = null;
  let record: TerminalSessionRecord | null = null;
  let ended = false;
  /** Set while an SSH shell is open: the open-terminal count goes down when it is called. */
  let shellCounted: (() => void) | undefined;
  let idle: ReturnType<typeof setTimeout> | undefined;
  const send = (message: Record<string, unknown>) => {
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  };
  const finish = (code: number, reason: string) => {
    if (ended) return;
    ended = true;
    clearTimeout(idle);
    t.live.get(consoleSession)?.delete(finish);
    if (t.live.get(consoleSession)?.size === 0) t.live.delete(consoleSession);
    shell?.close();
    shellCounted?.();
    if (record) {
      // The socket is gone either way; a failed write (e.g. storage closing at shutdown) is
      // logged, never an unhandled rejection.
      t.sessions.ended(record, reason).catch((error) =>
        t.onRecordFailed(error instanceof Error ? error.message : String(error))
      );
    }
    if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING) {
      try {
        socket.close(code, reason);
      } catch { /* already closing */ }
    }
  };
  const refuse = (code: number, detail: string) => {
    send({ type: "error", detail });
    finish(code, detail.slice(0, 120));
  };
  const touch = () => {
    clearTimeout(idle);
    idle = setTimeout(() => {
      send({ type: "error", detail: "Closed after inactivity." });
      finish(TERMINAL_CLOSE.idle, "idle timeout");
    }, t.idleTimeoutMs);
  };

  let first = true;
  socket.onmessage = async (event) => {
    if (ended) return;
    let message: Record<string, unknown>;
    try {
      message = typeof event.data === "string" ? JSON.parse(event.data) : {};
    } catch {
      message = {};
    }
    if (first) {
      first = false;
      const taken = await t.sessions.redeem(message.ticket, consoleSession);
      if (!taken) return refuse(TERMINAL_CLOSE.ticket, "Unknown, expired or used ticket.");
      record = taken;
      // Checked again on attach: a permission withdrawn since the ticket counts.
      const checked = await api.get(`${ENDPOINT}/${taken.endpoint_id}/ssh-secrets/`);
      if (checked.status !== 200) {
        return refuse(
          TERMINAL_CLOSE.denied,
          String(checked.body?.detail ?? "You do not have permission to perform this action."),
        );
      }
      // The target is read again too: a node's address or pin changed since the ticket counts.
      const resolved = typeof taken.node_id === "number"
        ? await nodeTargetVia(api, taken.node_id)
        : await endpointTarget(api, taken.endpoint_id);
      if (!resolved.ok) {
        return refuse(
          resolved.status === 403 ? TERMINAL_CLOSE.denied : TERMINAL_CLOSE.ssh,
          String(resolved.body.detail ?? "The target has no address or no pinned host key."),
        );
      }
      const target = resolved.target;
      if (target.endpoint.id !== taken.endpoint_id) {
        return refuse(TERMINAL_CLOSE.ssh, "The node moved to another endpoint; open it again.");
      }
      const allowed = await checkSshHost(target.host, t.hostPolicy);
      if (!allowed.ok) return refuse(TERMINAL_CLOSE.ssh, allowed.detail);
      const opened = await t.ssh.openShell({
        host: allowed.address,
        port: target.port,
        username: String(checked.body.username),
        password: String(checked.body.password ?? ""),
        privateKey: String(checked.body.private_key ?? ""),
        pinnedFingerprint: target.pinned,
        pinnedBy: target.pinnedBy,
      }, clampSize(message.cols, message.rows));
      if (!opened.ok) {
        return refuse(
          opened.reason === "fingerprint_mismatch" ? TERMINAL_CLOSE.hostKey : TERMINAL_CLOSE.ssh,
          opened.detail,
        );
      }
      if (ended) return opened.shell.close();
      shell = opened.shell;
      shellCounted = t.metrics.streamOpened("terminal");
      record = await t.sessions.attached(taken);
      let set = t.live.get(consoleSession);
      if (!set) t.live.set(consoleSession, set = new Set());
      set.add(finish);
      shell.onData((chunk) => {
        if (socket.readyState === WebSocket.OPEN) socket.send(chunk);
      });
      shell.closed.then(() => finish(1000, "ssh closed"));
      send({ type: "ready", session_id: taken.id });
      touch();
      return;
    }
    if (!shell) return;
    if (message.type === "input" && typeof message.data === "string") {
      if (message.data.length > 65536) return;
      touch();
      shell.write(message.data);
    } else if (message.type === "resize") {
      shell.resize(clampSize(message.cols, message.rows));
    }
  };
  socket.onclose = () => finish(1000, "browser closed");
  socket.onerror = () => finish(1000, "browser closed");
}
