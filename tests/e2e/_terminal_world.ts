/**
 * The terminal tests' world: the app on a real socket (127.0.0.1:0) with the console harness's
 * tokens, an in-process SSH server (tests/_ssh_server.ts) and a hypervisor endpoint whose SSH
 * credentials and pinned key point at it.
 */
import assert from "node:assert/strict";
import { type Client, consoleHarness, type Harness } from "../routes/ui/_console.ts";
import type { TerminalSessionRecord } from "../../domain/terminal.ts";
import { startSshServer, type TestSshServer } from "../_ssh_server.ts";
import type { TestOverrides } from "../_helpers.ts";

export const TERMINAL_PERMISSIONS = [
  "service.view_hypervisorendpoint",
  "service.open_ssh_terminal",
];

export interface TerminalWorld {
  h: Harness;
  ssh: TestSshServer;
  base: string;
  endpointId: number;
  /** A plugin node record of the endpoint (as the sync writes them); its id. */
  addNode(name: string, ipAddress: string | null): Promise<number>;
  /** PATCHes the hypervisor endpoint (e.g. `ssh_node_host_fingerprints`). */
  patchEndpoint(fields: Record<string, unknown>): Promise<void>;
  close(): Promise<void>;
}

export async function terminalWorld(
  options: {
    pinned?: string;
    overrides?: TestOverrides;
    /** The console harness's environment (e.g. SERVICE_ALLOW_LOOPBACK_TARGETS=false). */
    env?: Record<string, string>;
    /** The endpoint's own address (default 127.0.0.1, the SSH server). */
    domain?: string;
  } = {},
): Promise<TerminalWorld> {
  const ssh = await startSshServer();
  const h = await consoleHarness(options.env ?? {}, undefined, options.overrides ?? {});
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request, info) => h.app.fetch(request, info),
  );
  const must = async (method: string, path: string, body: unknown) => {
    const r = await h.api(method, path, body);
    if (r.status >= 300) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  await must("PATCH", "/api/plugins/service/settings/", {
    encryption_key: "terminal-test-encryption-key-0123456789",
  });
  const endpoint = await must("POST", "/api/plugins/service/endpoints/hypervisor/", {
    name: "lab",
    domain: options.domain ?? "127.0.0.1",
    username: "root@pam",
    password: "hypervisor-password",
    ssh_username: "tester",
    ssh_password: "s3cret-ssh",
    ssh_port: ssh.port,
    ssh_known_host_fingerprint: options.pinned ?? ssh.fingerprint,
  });
  return {
    h,
    ssh,
    base: `http://127.0.0.1:${server.addr.port}`,
    endpointId: endpoint.id,
    async addNode(name, ipAddress) {
      const node = await must("POST", "/api/plugins/service/nodes/", {
        endpoint: endpoint.id,
        name,
        ip_address: ipAddress,
        online: true,
      });
      return node.id;
    },
    async patchEndpoint(fields) {
      await must("PATCH", `/api/plugins/service/endpoints/hypervisor/${endpoint.id}/`, fields);
    },
    async close() {
      await server.shutdown();
      await ssh.close();
      h.close();
    },
  };
}

export interface Attached {
  ws: WebSocket;
  messages: Record<string, unknown>[];
  output(): string;
  waitFor(text: string): Promise<void>;
  ready: Promise<Record<string, unknown>>;
  closed: Promise<{ code: number; reason: string }>;
}

export async function signedIn(
  w: TerminalWorld,
  permissions = TERMINAL_PERMISSIONS,
  superuser = false,
) {
  const token = await w.h.token({ permissions, is_superuser: superuser });
  const client = w.h.client();
  const signIn = await client.signIn(token.value);
  assert.equal(signIn.status, 303, signIn.text);
  return { client, token };
}

/**
 * A ticket from `<base>/terminal/session` (base: `/ui/endpoints/hypervisor/{id}` or
 * `/ui/nodes/{id}`), with the CSRF token the terminal page carries (its sign-out form's when the
 * page shows no terminal).
 */
export async function ticketAt(client: Client, base: string) {
  const page = await client.get(`${base}/terminal`);
  const csrf = /data-csrf="([^"]+)"/.exec(page.html)?.[1] ??
    /name="_csrf" value="([^"]+)"/.exec(page.html)?.[1];
  assert.ok(csrf, page.text);
  const made = await client.post(`${base}/terminal/session`, { _csrf: csrf });
  return { status: made.status, body: JSON.parse(made.html) };
}

export function attach(w: TerminalWorld, client: Client, first: unknown): Attached {
  const url = w.base.replace("http:", "ws:") + "/ui/terminal/socket";
  const ws = new WebSocket(url, {
    headers: { cookie: client.cookieHeader, origin: w.base },
  } as unknown as string[]);
  ws.binaryType = "arraybuffer";
  const messages: Record<string, unknown>[] = [];
  let output = "";
  let waiters: { text: string; resolve: () => void }[] = [];
  const ready = Promise.withResolvers<Record<string, unknown>>();
  const closed = Promise.withResolvers<{ code: number; reason: string }>();
  ws.onopen = () => ws.send(JSON.stringify(first));
  ws.onmessage = (event) => {
    if (typeof event.data === "string") {
      const message = JSON.parse(event.data);
      messages.push(message);
      if (message.type === "ready") ready.resolve(message);
      return;
    }
    output += new TextDecoder().decode(new Uint8Array(event.data));
    waiters = waiters.filter((w) => output.includes(w.text) ? (w.resolve(), false) : true);
  };
  ws.onclose = (event) => {
    ready.reject(new Error(`closed ${event.code} ${event.reason}: ${JSON.stringify(messages)}`));
    closed.resolve({ code: event.code, reason: event.reason });
  };
  ready.promise.catch(() => {});
  return {
    ws,
    messages,
    output: () => output,
    waitFor: (text) =>
      output.includes(text) ? Promise.resolve() : new Promise((resolve) => {
        waiters.push({ text, resolve });
      }),
    ready: ready.promise,
    closed: closed.promise,
  };
}

/** Waits (KV watch, no sleep) until the session record says it ended. */
export async function endedRecord(w: TerminalWorld, id: string): Promise<TerminalSessionRecord> {
  for await (const [entry] of w.h.deps.kv.watch([["terminal", "session", id]])) {
    const value = entry.value as TerminalSessionRecord | null;
    if (value?.ended) return value;
  }
  throw new Error("watch ended");
}
