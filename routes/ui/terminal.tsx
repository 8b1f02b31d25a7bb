/** @jsxImportSource hono/jsx */
/**
 * The browser terminal (README "Browser terminal", SECURITY.md "Browser terminal"):
 *
 * - `GET  /ui/endpoints/hypervisor/{id}/terminal`          the page (xterm.js, served by the app)
 * - `POST /ui/endpoints/hypervisor/{id}/terminal/session`  a one-time ticket (CSRF-checked form)
 * - `GET  /ui/terminal/socket`                             the WebSocket; first frame: the ticket
 * - `GET  /ui/endpoints/hypervisor/{id}/host-key-fingerprint`  the key the host presents, to pin
 * - `GET  /ui/terminal/sessions`                           every session (superusers; JSON or page)
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
import { clampSize, type SshShell, type TerminalSessionRecord } from "../../domain/terminal.ts";
import { can } from "../plugin/permissions.ts";
import type { ConsoleApi } from "./api.ts";

const ENDPOINT = "/api/plugins/service/endpoints/hypervisor";

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
  has_ssh_terminal_credentials?: boolean;
  enabled?: boolean;
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

export function terminalRoutes(ctx: ConsoleServices): Hono<ConsoleEnv> {
  const t = ctx.terminals;
  const app = new Hono<ConsoleEnv>();
  const idParam = (c: Ctx) => {
    const id = Number(c.req.param("id"));
    return Number.isSafeInteger(id) && id > 0 ? id : null;
  };

  app.get("/ui/endpoints/hypervisor/:id/terminal", async (c) => {
    const id = idParam(c);
    const e = id === null ? null : await endpoint(c, id);
    // xterm.js writes its theme into a <style> element: this page alone allows inline styles
    // (scripts stay 'self' only).
    c.header(
      "content-security-policy",
      "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    const page = (body: Child) =>
      c.html(
        <Layout
          title={e ? `Terminal · ${e.name}` : "Terminal"}
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
    if (!e) {
      return page(<Notice kind="error">No hypervisor endpoint with this id.</Notice>);
    }
    const ready = e.has_ssh_terminal_credentials && e.ssh_known_host_fingerprint;
    return page(
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
          ? (
            <>
              <p id="terminal-status" role="status">Connecting…</p>
              <div
                id="terminal"
                class="terminal"
                data-session-url={`/ui/endpoints/hypervisor/${e.id}/terminal/session`}
                data-socket-url="/ui/terminal/socket"
                data-csrf={c.get("session").csrf}
              >
              </div>
            </>
          )
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
      </>,
    );
  });

  app.post("/ui/endpoints/hypervisor/:id/terminal/session", async (c) => {
    const id = idParam(c);
    if (id === null) return c.json({ detail: "Not found." }, 404);
    const checked = await secrets(c, id);
    if (checked.status !== 200) return c.json(checked.body, checked.status as 403);
    const e = await endpoint(c, id);
    const host = e ? hostOf(e) : null;
    if (!e || !host) return c.json({ detail: "The endpoint has no address." }, 422);
    if (!e.ssh_known_host_fingerprint) {
      return c.json({
        reason: "ssh_fingerprint_required",
        detail: "Pin the host key first (ssh_known_host_fingerprint): read it with " +
          `/ui/endpoints/hypervisor/${id}/host-key-fingerprint and compare it out of band.`,
      }, 422);
    }
    const { ticket, record } = await t.sessions.create({
      endpoint_id: id,
      endpoint_name: e.name,
      host,
      port: e.ssh_port ?? 22,
      ssh_username: String(checked.body.username ?? ""),
      token_id: c.get("session").tokenId,
      user: userOf(c),
      console_session: c.get("session").id,
    });
    return c.json({ ticket, session_id: record.id, socket: "/ui/terminal/socket" }, 201);
  });

  app.get("/ui/endpoints/hypervisor/:id/host-key-fingerprint", async (c) => {
    const id = idParam(c);
    const e = id === null ? null : await endpoint(c, id);
    if (!e) return c.json({ detail: "Not found." }, 404);
    // Reading the key sends nothing secret, but it makes the app connect out: only for those who
    // may change the endpoint (who would pin it).
    if (!can(c.get("auth"), "service.change_hypervisorendpoint") || !c.get("auth").writeEnabled) {
      return c.json({ detail: "You do not have permission to perform this action." }, 403);
    }
    const host = hostOf(e);
    if (!host) {
      return c.json({ detail: "The endpoint has neither a domain nor an IP address." }, 422);
    }
    const port = e.ssh_port ?? 22;
    const read = await t.ssh.readHostKey(host, port);
    if (!read.ok) return c.json({ reason: "ssh_unreachable", detail: read.detail }, 502);
    const pinned = e.ssh_known_host_fingerprint ?? null;
    return c.json(
      {
        endpoint_id: e.id,
        host,
        port,
        algorithm: read.algorithm,
        fingerprint: read.fingerprint,
        pinned,
        matches_pinned: pinned === null ? null : pinned.replace(/=+$/, "") === read.fingerprint,
        detail: "Shown for confirmation only: compare it out of band, then set " +
          "ssh_known_host_fingerprint on the endpoint yourself. Nothing was pinned.",
      },
      200,
      { "cache-control": "no-store" },
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
      const e = await endpointVia(api, taken.endpoint_id);
      const host = e ? hostOf(e) : null;
      if (!e || !host || !e.ssh_known_host_fingerprint) {
        return refuse(TERMINAL_CLOSE.ssh, "The endpoint has no address or no pinned host key.");
      }
      const opened = await t.ssh.openShell({
        host,
        port: e.ssh_port ?? 22,
        username: String(checked.body.username),
        password: String(checked.body.password ?? ""),
        privateKey: String(checked.body.private_key ?? ""),
        pinnedFingerprint: e.ssh_known_host_fingerprint,
      }, clampSize(message.cols, message.rows));
      if (!opened.ok) {
        return refuse(
          opened.reason === "fingerprint_mismatch" ? TERMINAL_CLOSE.hostKey : TERMINAL_CLOSE.ssh,
          opened.detail,
        );
      }
      if (ended) return opened.shell.close();
      shell = opened.shell;
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
