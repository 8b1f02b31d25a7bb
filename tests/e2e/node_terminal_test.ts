/**
 * The browser terminal to one cluster node (README "Browser terminal", per node) on real sockets:
 * the app on 127.0.0.1:0, an in-process SSH server standing in for the node, a plugin node record
 * carrying the address the cluster reported, the node's own pinned key on the endpoint
 * (`ssh_node_host_fingerprints`), and the outbound policy applied to that address.
 */
import assert from "node:assert/strict";
import {
  attach,
  endedRecord,
  signedIn,
  TERMINAL_PERMISSIONS,
  terminalWorld,
  ticketAt,
} from "./_terminal_world.ts";

const OTHER_KEY = "SHA256:" + "A".repeat(43);
const ENDPOINT_KEY = "SHA256:" + "B".repeat(43);

Deno.test("node terminal: echo hello over SSH to the node's reported address with the node's own pinned key; the session names the node; a dropped WebSocket closes the SSH session", async () => {
  // The endpoint's own address and pin are another machine's: only the node's pin may vouch.
  const w = await terminalWorld({ domain: "10.0.0.1", pinned: OTHER_KEY });
  try {
    const nodeId = await w.addNode("pve2", "127.0.0.1");
    await w.patchEndpoint({ ssh_node_host_fingerprints: { pve2: w.ssh.fingerprint } });
    const { client, token } = await signedIn(w, [...TERMINAL_PERMISSIONS, "service.view_node"]);
    const page = await client.get(`/ui/nodes/${nodeId}/terminal`);
    assert.match(page.text, /127\.0\.0\.1:\d+ · host key SHA256:\S+ \(pinned by node pve2\)/);
    // The endpoint's terminal page lists its nodes, each with its own Terminal.
    const endpointPage = await client.get(`/ui/endpoints/hypervisor/${w.endpointId}/terminal`);
    assert.ok(endpointPage.html.includes(`href="/ui/nodes/${nodeId}/terminal"`));
    const ticket = await ticketAt(client, `/ui/nodes/${nodeId}`);
    assert.equal(ticket.status, 201, JSON.stringify(ticket.body));
    const shellOpened = w.ssh.nextShell();
    const t = attach(w, client, { ticket: ticket.body.ticket, cols: 90, rows: 20 });
    await t.ready;
    await shellOpened;
    assert.deepEqual(w.ssh.ptys, [{ cols: 90, rows: 20, term: "xterm-256color" }]);
    t.ws.send(JSON.stringify({ type: "input", data: "echo hello\r" }));
    await t.waitFor("\r\nhello\r\n");
    const shellClosed = w.ssh.nextShellClosed();
    t.ws.close();
    await shellClosed;
    const record = await endedRecord(w, ticket.body.session_id);
    assert.equal(record.node_id, nodeId);
    assert.equal(record.node_name, "pve2");
    assert.equal(record.endpoint_id, w.endpointId);
    assert.equal(record.host, "127.0.0.1");
    assert.equal(record.port, w.ssh.port);
    assert.equal(record.token_id, token.id);
    assert.equal(record.end_reason, "browser closed");
    const admin = await signedIn(w, [], true);
    const list = await admin.client.get("/ui/terminal/sessions");
    assert.match(list.text, /lab pve2 127\.0\.0\.1:\d+ tester/);
  } finally {
    await w.close();
  }
});

Deno.test("node terminal: the endpoint's pin vouches only for the endpoint's own address; a node without its pin is refused before any connection, a wrong node pin is refused naming both before any credential", async () => {
  const w = await terminalWorld({ pinned: ENDPOINT_KEY });
  try {
    // Same address as the endpoint (127.0.0.1): the endpoint's pin applies, and it is wrong.
    const same = await w.addNode("pve1", "127.0.0.1");
    // Another address, no pin of its own: refused outright.
    const other = await w.addNode("pve3", "10.0.0.3");
    const { client } = await signedIn(w, [...TERMINAL_PERMISSIONS, "service.view_node"]);
    const unpinned = await ticketAt(client, `/ui/nodes/${other}`);
    assert.equal(unpinned.status, 422);
    assert.equal(unpinned.body.reason, "ssh_fingerprint_required");
    assert.match(unpinned.body.detail, /Pin node pve3's host key first/);
    assert.match(unpinned.body.detail, /ssh_node_host_fingerprints/);
    // The page says it once, with the helper's link (it repeated the advice in other words).
    const page = await client.get(`/ui/nodes/${other}/terminal`);
    assert.match(page.text, /Pin node pve3's host key first/);
    assert.equal(page.text.split("out of band").length - 1, 1, page.text);
    assert.ok(page.html.includes(`href="/ui/nodes/${other}/host-key-fingerprint"`));

    const mismatch = await ticketAt(client, `/ui/nodes/${same}`);
    assert.equal(mismatch.status, 201, JSON.stringify(mismatch.body));
    const t = attach(w, client, { ticket: mismatch.body.ticket });
    assert.equal((await t.closed).code, 4009);
    const error = String(t.messages.find((m) => m.type === "error")?.detail);
    assert.ok(error.includes(`the endpoint pins ${ENDPOINT_KEY}`), error);
    assert.ok(error.includes(w.ssh.fingerprint), error);
    const connectionsBefore = w.ssh.connections;

    // A pin of its own wins over the endpoint's, and a wrong one is named as the node's.
    await w.patchEndpoint({ ssh_node_host_fingerprints: { pve1: OTHER_KEY } });
    const own = await ticketAt(client, `/ui/nodes/${same}`);
    const t2 = attach(w, client, { ticket: own.body.ticket });
    assert.equal((await t2.closed).code, 4009);
    const error2 = String(t2.messages.find((m) => m.type === "error")?.detail);
    assert.ok(error2.includes(`node pve1 pins ${OTHER_KEY}`), error2);
    assert.ok(error2.includes(w.ssh.fingerprint), error2);
    assert.deepEqual(w.ssh.authAttempts, [], "no username or secret may reach the server");
    assert.equal(w.ssh.connections, connectionsBefore + 1, "pve3 was never connected to");
    // A bad pin map is a field error, not a stored value.
    const bad = await w.h.api(
      "PATCH",
      `/api/plugins/service/endpoints/hypervisor/${w.endpointId}/`,
      { ssh_node_host_fingerprints: { "pve 1": OTHER_KEY, pve2: "md5:00" } },
    );
    assert.equal(bad.status, 400);
    assert.equal(bad.body.ssh_node_host_fingerprints.length, 2);
  } finally {
    await w.close();
  }
});

Deno.test("node terminal: without open_ssh_terminal no ticket, without view on nodes no node, and a permission withdrawn before attaching is refused on attach", async () => {
  const w = await terminalWorld();
  try {
    const nodeId = await w.addNode("pve2", "127.0.0.1");
    await w.patchEndpoint({ ssh_node_host_fingerprints: { pve2: w.ssh.fingerprint } });
    const viewer = await signedIn(w, ["service.view_hypervisorendpoint", "service.view_node"]);
    const refused = await ticketAt(viewer.client, `/ui/nodes/${nodeId}`);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.detail, "You do not have permission to perform this action.");
    const blind = await signedIn(w, TERMINAL_PERMISSIONS);
    const hidden = await ticketAt(blind.client, `/ui/nodes/${nodeId}`);
    assert.notEqual(hidden.status, 201, JSON.stringify(hidden.body));
    assert.equal(hidden.body.ticket, undefined);

    const { client, token } = await signedIn(w, [...TERMINAL_PERMISSIONS, "service.view_node"]);
    const ticket = await ticketAt(client, `/ui/nodes/${nodeId}`);
    assert.equal(ticket.status, 201);
    const patched = await w.h.api("PATCH", `/api/users/tokens/${token.id}/`, {
      permissions: ["service.view_hypervisorendpoint", "service.view_node"],
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const t = attach(w, client, { ticket: ticket.body.ticket });
    assert.equal((await t.closed).code, 4003);
    assert.equal(w.ssh.connections, 0);
  } finally {
    await w.close();
  }
});

Deno.test("node terminal: the outbound policy applies to the address the cluster reports (loopback and metadata refused, also when it changes after the ticket), for the session and the host-key helper", async () => {
  const w = await terminalWorld({
    env: { SERVICE_ALLOW_LOOPBACK_TARGETS: "false" },
    domain: "10.0.0.1",
  });
  try {
    const loopback = await w.addNode("pve2", "127.0.0.1");
    const metadata = await w.addNode("pve3", "169.254.169.254");
    const lan = await w.addNode("pve4", "10.0.0.4");
    await w.patchEndpoint({
      ssh_node_host_fingerprints: {
        pve2: w.ssh.fingerprint,
        pve3: w.ssh.fingerprint,
        pve4: w.ssh.fingerprint,
      },
    });
    const { client } = await signedIn(w, [...TERMINAL_PERMISSIONS, "service.view_node"]);
    for (
      const [id, reason] of [[loopback, /a loopback address/], [metadata, /metadata/]] as const
    ) {
      const refused = await ticketAt(client, `/ui/nodes/${id}`);
      assert.equal(refused.status, 422, JSON.stringify(refused.body));
      assert.equal(refused.body.reason, "ssh_target_refused");
      assert.match(refused.body.detail, reason);
      assert.match(refused.body.detail, /SERVICE_ALLOW_LOOPBACK_TARGETS/);
    }
    // A ticket for a LAN address, then the cluster reports the metadata address instead.
    const ticket = await ticketAt(client, `/ui/nodes/${lan}`);
    assert.equal(ticket.status, 201, JSON.stringify(ticket.body));
    const moved = await w.h.api("PATCH", `/api/plugins/service/nodes/${lan}/`, {
      ip_address: "169.254.169.254",
    });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    const t = attach(w, client, { ticket: ticket.body.ticket });
    assert.equal((await t.closed).code, 4010);
    assert.match(String(t.messages.find((m) => m.type === "error")?.detail), /metadata/);
    // The helper that reads a node's key connects out too: same policy.
    const admin = await signedIn(w, [], true);
    const probe = await admin.client.get(`/ui/nodes/${loopback}/host-key-fingerprint`);
    assert.equal(probe.status, 422, probe.text);
    assert.equal(JSON.parse(probe.html).reason, "ssh_target_refused");
    assert.equal(w.ssh.connections, 0, "nothing connected to the loopback SSH server");
  } finally {
    await w.close();
  }
});

Deno.test("node terminal: host-key-fingerprint reads the node's key at its reported address, names the node, and pins nothing", async () => {
  const w = await terminalWorld({ domain: "10.0.0.1" });
  try {
    const nodeId = await w.addNode("pve2", "127.0.0.1");
    const admin = await signedIn(w, [], true);
    const read = await admin.client.get(`/ui/nodes/${nodeId}/host-key-fingerprint`);
    assert.equal(read.status, 200, read.text);
    const body = JSON.parse(read.html);
    assert.equal(body.node, "pve2");
    assert.equal(body.node_id, nodeId);
    assert.equal(body.host, "127.0.0.1");
    assert.equal(body.fingerprint, w.ssh.fingerprint);
    assert.equal(body.pinned, null);
    assert.match(body.detail, /ssh_node_host_fingerprints/);
    const stored = await w.h.api(
      "GET",
      `/api/plugins/service/endpoints/hypervisor/${w.endpointId}/`,
    );
    assert.equal(stored.body.ssh_node_host_fingerprints, null);
    assert.deepEqual(w.ssh.authAttempts, []);
    const user = await signedIn(w, [...TERMINAL_PERMISSIONS, "service.view_node"]);
    const refused = await user.client.get(`/ui/nodes/${nodeId}/host-key-fingerprint`);
    assert.equal(refused.status, 403);
  } finally {
    await w.close();
  }
});

Deno.test("node terminal: an admin pins a node's key on the endpoint form (one 'node = key' line each), and a bad line is a field error naming it", async () => {
  const w = await terminalWorld({ domain: "10.0.0.1" });
  try {
    const nodeId = await w.addNode("pve2", "127.0.0.1");
    const admin = await signedIn(w, [], true);
    const form = `/ui/endpoints/hypervisor/${w.endpointId}`;
    const bad = await admin.client.submit(form, form, {
      ssh_node_host_fingerprints: `pve2 = ${w.ssh.fingerprint}\nnot a node = ${OTHER_KEY}`,
    });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /"not a node": not a node name/);
    const unchanged = await w.h.api(
      "GET",
      `/api/plugins/service/endpoints/hypervisor/${w.endpointId}/`,
    );
    assert.equal(unchanged.body.ssh_node_host_fingerprints, null);

    const saved = await admin.client.submit(form, form, {
      ssh_node_host_fingerprints: `\n  pve2 = ${w.ssh.fingerprint}  \n`,
    });
    assert.equal(saved.status, 303, saved.text.slice(0, 300));
    const stored = await w.h.api(
      "GET",
      `/api/plugins/service/endpoints/hypervisor/${w.endpointId}/`,
    );
    assert.deepEqual(stored.body.ssh_node_host_fingerprints, { pve2: w.ssh.fingerprint });
    const page = await admin.client.get(form);
    assert.ok(page.html.includes(`pve2 = ${w.ssh.fingerprint}`), "the form shows the pin");
    // The pin opens the node's terminal.
    const user = await signedIn(w, [...TERMINAL_PERMISSIONS, "service.view_node"]);
    const ticket = await ticketAt(user.client, `/ui/nodes/${nodeId}`);
    assert.equal(ticket.status, 201, JSON.stringify(ticket.body));
    const t = attach(w, user.client, { ticket: ticket.body.ticket });
    await t.ready;
    t.ws.close();
    await t.closed;
  } finally {
    await w.close();
  }
});
