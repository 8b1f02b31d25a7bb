/**
 * The browser terminal end to end on real sockets (README "Browser terminal"): the app on
 * 127.0.0.1:0, an in-process SSH server, a console user signed in with a cookie, the one-time
 * ticket in the first WebSocket frame. The browser itself: tests/browser/terminal_flow.ts.
 */
import assert from "node:assert/strict";
import { type Client, ORIGIN } from "../routes/ui/_console.ts";
import {
  attach,
  endedRecord,
  signedIn,
  TERMINAL_PERMISSIONS,
  type TerminalWorld,
  terminalWorld,
  ticketAt,
} from "./_terminal_world.ts";

function ticketFor(w: TerminalWorld, client: Client) {
  return ticketAt(client, `/ui/endpoints/hypervisor/${w.endpointId}`);
}

Deno.test("terminal: echo hello comes back, resizes reach the PTY, a dropped WebSocket closes the SSH session, and the session is recorded for admins", async () => {
  const w = await terminalWorld();
  try {
    const { client, token } = await signedIn(w);
    const ticket = await ticketFor(w, client);
    assert.equal(ticket.status, 201, JSON.stringify(ticket.body));
    const shellOpened = w.ssh.nextShell();
    const t = attach(w, client, { ticket: ticket.body.ticket, cols: 100, rows: 30 });
    const ready = await t.ready;
    await shellOpened;
    assert.equal(ready.session_id, ticket.body.session_id);
    assert.deepEqual(w.ssh.ptys, [{ cols: 100, rows: 30, term: "xterm-256color" }]);
    // An open terminal is an open stream on GET /metrics (docs/metrics.md).
    const openTerminals = async () =>
      Number(
        /^bridgebox_open_streams\{kind="terminal"\} (\d+)$/m.exec(
          (await w.h.deps.metrics!.exposition()).body,
        )?.[1],
      );
    assert.equal(await openTerminals(), 1);
    // ssh2 asks "none" first (the methods the server offers), then sends the stored password.
    assert.deepEqual(w.ssh.authAttempts.filter((a) => a.method !== "none"), [
      { method: "password", username: "tester", password: "s3cret-ssh" },
    ]);
    t.ws.send(JSON.stringify({ type: "input", data: "echo hello\r" }));
    await t.waitFor("\r\nhello\r\n");
    t.ws.send(JSON.stringify({ type: "resize", cols: 132, rows: 43 }));
    t.ws.send(JSON.stringify({ type: "input", data: "echo after-resize\r" }));
    await t.waitFor("\r\nafter-resize\r\n");
    assert.deepEqual(w.ssh.resizes, [{ cols: 132, rows: 43 }]);
    // The browser goes away: the SSH session must end with it.
    const shellClosed = w.ssh.nextShellClosed();
    t.ws.close();
    await shellClosed;
    assert.equal(await openTerminals(), 0);
    const record = await endedRecord(w, ticket.body.session_id);
    assert.equal(record.end_reason, "browser closed");
    assert.equal(record.token_id, token.id);
    assert.equal(record.endpoint_id, w.endpointId);
    assert.equal(record.ssh_username, "tester");
    assert.equal(typeof record.duration_seconds, "number");
    assert.ok(record.attached);
    // Admins read it; nobody else does.
    const admin = await signedIn(w, [], true);
    const list = await admin.client.send("/ui/terminal/sessions", {
      headers: { accept: "application/json" },
    });
    const body = JSON.parse(list.html);
    assert.equal(body.count, 1);
    assert.equal(body.results[0].id, ticket.body.session_id);
    assert.equal(body.results[0].host, "127.0.0.1");
    const page = await admin.client.get("/ui/terminal/sessions");
    assert.match(page.text, /browser closed/);
    const notAdmin = await client.send("/ui/terminal/sessions", {
      headers: { accept: "application/json" },
    });
    assert.equal(notAdmin.status, 403);
    // The ticket was one-time.
    const again = attach(w, client, { ticket: ticket.body.ticket });
    assert.equal((await again.closed).code, 4001);
  } finally {
    await w.close();
  }
});

Deno.test("terminal: a wrong pinned fingerprint is refused naming both, before any credential is sent", async () => {
  const pinned = "SHA256:" + "A".repeat(43);
  const w = await terminalWorld({ pinned });
  try {
    const { client } = await signedIn(w);
    const ticket = await ticketFor(w, client);
    assert.equal(ticket.status, 201, JSON.stringify(ticket.body));
    const t = attach(w, client, { ticket: ticket.body.ticket });
    const closed = await t.closed;
    assert.equal(closed.code, 4009);
    const error = t.messages.find((m) => m.type === "error");
    assert.ok(error, JSON.stringify(t.messages));
    assert.match(String(error.detail), new RegExp(pinned));
    assert.ok(String(error.detail).includes(w.ssh.fingerprint), String(error.detail));
    assert.deepEqual(w.ssh.authAttempts, [], "no username or password may reach the server");
    assert.equal(w.ssh.ptys.length, 0);
  } finally {
    await w.close();
  }
});

Deno.test("terminal: a token without open_ssh_terminal gets no ticket, and one losing it before attaching is refused on attach", async () => {
  const w = await terminalWorld();
  try {
    const viewer = await signedIn(w, ["service.view_hypervisorendpoint"]);
    const refused = await ticketFor(w, viewer.client);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.detail, "You do not have permission to perform this action.");

    const { client, token } = await signedIn(w);
    const ticket = await ticketFor(w, client);
    assert.equal(ticket.status, 201);
    const patched = await w.h.api("PATCH", `/api/users/tokens/${token.id}/`, {
      permissions: ["service.view_hypervisorendpoint"],
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const t = attach(w, client, { ticket: ticket.body.ticket });
    assert.equal((await t.closed).code, 4003);
    assert.deepEqual(w.ssh.authAttempts, []);
    // A ticket is bound to the console session that asked for it.
    const other = await signedIn(w);
    const stolen = await ticketFor(w, other.client);
    const t2 = attach(w, client, { ticket: stolen.body.ticket });
    assert.equal((await t2.closed).code, 4001);
  } finally {
    await w.close();
  }
});

Deno.test("terminal: signing out and the SSH side closing both end the session", async () => {
  const w = await terminalWorld();
  try {
    const { client } = await signedIn(w);
    const first = await ticketFor(w, client);
    const t = attach(w, client, { ticket: first.body.ticket });
    await t.ready;
    w.ssh.closeShells();
    assert.equal((await t.closed).code, 1000);
    assert.equal((await endedRecord(w, first.body.session_id)).end_reason, "ssh closed");

    const second = await ticketFor(w, client);
    const opened = w.ssh.nextShell();
    const t2 = attach(w, client, { ticket: second.body.ticket });
    await t2.ready;
    await opened;
    const shellClosed = w.ssh.nextShellClosed();
    const page = await client.get("/ui/");
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.html)![1];
    await client.post("/ui/logout", { _csrf: csrf }, { origin: ORIGIN });
    assert.equal((await t2.closed).code, 4011);
    await shellClosed;
    assert.equal((await endedRecord(w, second.body.session_id)).end_reason, "signed out");
  } finally {
    await w.close();
  }
});

Deno.test("terminal: an idle session is closed after the idle timeout", async () => {
  const w = await terminalWorld({ overrides: { terminalIdleTimeoutMs: 150 } });
  try {
    const { client } = await signedIn(w);
    const ticket = await ticketFor(w, client);
    const shellClosed = w.ssh.nextShellClosed();
    const t = attach(w, client, { ticket: ticket.body.ticket });
    await t.ready;
    assert.equal((await t.closed).code, 4008);
    await shellClosed;
    assert.equal((await endedRecord(w, ticket.body.session_id)).end_reason, "idle timeout");
  } finally {
    await w.close();
  }
});

Deno.test("terminal: host-key-fingerprint shows the key the host presents and pins nothing", async () => {
  const w = await terminalWorld({ pinned: "SHA256:" + "B".repeat(43) });
  try {
    const admin = await signedIn(w, [], true);
    const read = await admin.client.get(
      `/ui/endpoints/hypervisor/${w.endpointId}/host-key-fingerprint`,
    );
    assert.equal(read.status, 200, read.text);
    const body = JSON.parse(read.html);
    assert.equal(body.fingerprint, w.ssh.fingerprint);
    assert.equal(body.algorithm, "ssh-rsa");
    assert.equal(body.matches_pinned, false);
    const stored = await w.h.api(
      "GET",
      `/api/plugins/service/endpoints/hypervisor/${w.endpointId}/`,
    );
    assert.equal(stored.body.ssh_known_host_fingerprint, "SHA256:" + "B".repeat(43));
    assert.deepEqual(w.ssh.authAttempts, []);
    const viewer = await signedIn(w, TERMINAL_PERMISSIONS);
    const refused = await viewer.client.get(
      `/ui/endpoints/hypervisor/${w.endpointId}/host-key-fingerprint`,
    );
    assert.equal(refused.status, 403);
  } finally {
    await w.close();
  }
});
