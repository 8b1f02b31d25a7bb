/** The hypervisor client against the mock on a real socket: ticket, token, errors, abort. */
import assert from "node:assert/strict";
import { createApp } from "../../app.ts";
import { testDeps } from "../_helpers.ts";
import { HAS_OPENSSL, selfSigned } from "../_tls.ts";
import { createOutboundFetch } from "../../clients/outbound.ts";
import { refusingListener } from "../_net.ts";
import {
  HypervisorApiClient,
  type HypervisorApiClient as Client,
  HypervisorApiError,
} from "../../clients/hypervisor_api.ts";

async function withMock(
  run: (port: number, counts: Map<string, number>) => Promise<void>,
) {
  const deps = await testDeps({ SERVICE_SURFACES: "hypervisor" });
  const app = await createApp(deps);
  const counts = new Map<string, number>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (r, i) => {
    const key = `${r.method} ${new URL(r.url).pathname}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    return app.fetch(r, i);
  });
  try {
    await run(server.addr.port, counts);
  } finally {
    await server.shutdown();
    deps.kv.close();
  }
}

function client(
  port: number,
  secrets: { password?: string; token_value?: string } = {},
  extra = {},
): Client {
  return new HypervisorApiClient({
    id: 1,
    name: "lab",
    ip: "127.0.0.1",
    port,
    use_https: false,
    verify_ssl: false,
    username: "root@pam",
    token_name: null,
    timeout: 5,
    ...extra,
  }, {
    fetch: globalThis.fetch,
    secrets: () =>
      Promise.resolve({
        password: secrets.password ?? null,
        token_value: secrets.token_value ?? null,
      }),
  });
}

Deno.test("hypervisor client: a ticket is fetched once and reused across calls", async () => {
  await withMock(async (port, counts) => {
    const api = client(port, { password: "bridgebox" });
    const version = await api.get<{ version: string }>("/version");
    assert.ok(version.version);
    const nodes = await api.get<{ node: string }[]>("/nodes");
    assert.ok(nodes.length > 0);
    assert.equal(counts.get("POST /api2/json/access/ticket"), 1);
  });
});

Deno.test("hypervisor client: POST goes as a form with the CSRF token", async () => {
  await withMock(async (port) => {
    const api = client(port, { password: "bridgebox" });
    const [node] = await api.get<{ node: string }[]>("/nodes");
    const upid = await api.request<string>("POST", `/nodes/${node.node}/qemu`, {
      vmid: 4242,
      name: "made-by-client",
    });
    assert.match(String(upid), /^UPID:/);
    const config = await api.get<{ name: string }>(`/nodes/${node.node}/qemu/4242/config`);
    assert.equal(config.name, "made-by-client");
  });
});

Deno.test("hypervisor client: a wrong password is an error naming the login and never the password", async () => {
  await withMock(async (port) => {
    const api = client(port, { password: "not-the-password-xyz" });
    const error = await api.get("/version").catch((e) => e);
    assert.ok(error instanceof HypervisorApiError);
    assert.equal(error.status, 401);
    assert.match(error.message, /access\/ticket/);
    assert.match(error.message, /rejected/);
    assert.ok(!error.message.includes("not-the-password-xyz"));
  });
});

Deno.test("hypervisor client: an unknown path carries status, URL and body excerpt", async () => {
  await withMock(async (port) => {
    const api = client(port, { password: "bridgebox" });
    const error = await api.get("/nodes/nope-node/qemu/999999/config").catch((e) => e);
    assert.ok(error instanceof HypervisorApiError);
    assert.ok(error.status !== null && error.status >= 400);
    assert.match(error.url, /\/api2\/json\/nodes\/nope-node\/qemu\/999999\/config$/);
    assert.equal(error.operation, "GET");
  });
});

Deno.test("hypervisor client: unreachable port names the URL and a hint", async () => {
  const refusing = refusingListener();
  const error = await client(refusing.port, { password: "x" }).get("/version").catch((e) => e);
  refusing.close();
  assert.ok(error instanceof HypervisorApiError);
  assert.equal(error.status, null);
  assert.match(error.message, /127\.0\.0\.1/);
  assert.match(error.hint, new RegExp(`127\\.0\\.0\\.1:${refusing.port} closed the connection`));
  assert.equal(error.unusable, true, "a sync skips this endpoint for the rest of its run");
});

Deno.test("hypervisor client: the hint names the real cause (a refused port is a wrong port, a refused local target is the switch)", async () => {
  const failureOf = (call: Promise<unknown>) =>
    call.then(() => assert.fail("expected a failure"), (e) => e as HypervisorApiError);
  const failing = (message: string): typeof fetch => () =>
    Promise.reject(Object.assign(new TypeError("fetch failed"), { cause: new Error(message) }));
  const withFetch = (fetchFn: typeof fetch) =>
    new HypervisorApiClient({
      id: 1,
      name: "lab",
      ip: "127.0.0.1",
      port: 8007,
      use_https: false,
      verify_ssl: false,
      username: "root@pam",
      token_name: null,
      timeout: 5,
    }, {
      fetch: fetchFn,
      secrets: () => Promise.resolve({ password: "x", token_value: null }),
    });
  const refused = await failureOf(
    withFetch(failing("connect ECONNREFUSED 127.0.0.1:8007")).get("/version"),
  );
  assert.match(refused.hint, /Nothing accepts connections on 127\.0\.0\.1:8007: the port is wrong/);
  assert.doesNotMatch(refused.hint, /LOOPBACK/);
  assert.equal(refused.unusable, true);
  // The guarded transport without the switch refuses the local target before connecting.
  const guarded = createOutboundFetch({ allowLoopbackTargets: false });
  const local = await failureOf(withFetch(guarded).get("/version"));
  assert.match(local.hint, /SERVICE_ALLOW_LOOPBACK_TARGETS=true/);
  const unknown = await failureOf(
    withFetch(failing("getaddrinfo ENOTFOUND pve.invalid")).get("/version"),
  );
  assert.match(unknown.hint, /does not resolve/);
});

Deno.test("hypervisor client: an aborted signal stops the call with the abort reason", async () => {
  await withMock(async (port) => {
    const api = client(port, { password: "bridgebox" });
    const controller = new AbortController();
    controller.abort(new Error("client went away"));
    const error = await api.get("/version", {}, { signal: controller.signal }).catch((e: Error) =>
      e
    );
    assert.equal((error as Error).message, "client went away");
  });
});

const tls = HAS_OPENSSL ? await selfSigned("localhost") : null;

Deno.test({
  name: "hypervisor client: verify_ssl false reaches a self-signed HTTPS host; true refuses it",
  ignore: !HAS_OPENSSL,
  async fn() {
    const deps = await testDeps({ SERVICE_SURFACES: "hypervisor" });
    const app = await createApp(deps);
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, cert: tls!.cert, key: tls!.key, onListen() {} },
      (r, i) => app.fetch(r, i),
    );
    const outbound = createOutboundFetch({ allowLoopbackTargets: true });
    const make = (verify: boolean) =>
      new HypervisorApiClient({
        id: 1,
        name: "tls",
        ip: "127.0.0.1",
        port: server.addr.port,
        use_https: true,
        verify_ssl: verify,
        username: "root@pam",
        token_name: null,
        timeout: 5,
      }, {
        fetch: outbound,
        secrets: () => Promise.resolve({ password: "bridgebox", token_value: null }),
      });
    try {
      const version = await make(false).get<{ version: string }>("/version");
      assert.ok(version.version);
      const error = await make(true).get("/version").catch((e) => e);
      assert.ok(error instanceof HypervisorApiError);
      assert.equal(error.status, null);
      assert.match(error.url, /^https:\/\/127\.0\.0\.1:\d+\/api2\/json\/access\/ticket$/);
    } finally {
      await server.shutdown();
      deps.kv.close();
    }
  },
});

Deno.test("hypervisor client: an API token authenticates without any login", async () => {
  await withMock(async (port, counts) => {
    const admin = client(port, { password: "bridgebox" });
    const made = await admin.request<{ value: string; "full-tokenid": string }>(
      "POST",
      "/access/users/root@pam/token/sync",
      { privsep: 0 },
    );
    assert.ok(made.value);
    const before = counts.get("POST /api2/json/access/ticket") ?? 0;
    const api = client(port, { token_value: made.value }, { token_name: "sync" });
    const nodes = await api.get<{ node: string }[]>("/nodes");
    assert.ok(nodes.length > 0);
    assert.equal(counts.get("POST /api2/json/access/ticket") ?? 0, before, "no ticket login");
    const wrong = await client(port, { token_value: "not-the-value" }, { token_name: "sync" })
      .get("/nodes").catch((e) => e);
    assert.ok(wrong instanceof HypervisorApiError);
    assert.equal(wrong.status, 401);
    assert.ok(!wrong.message.includes("not-the-value"));
  });
});

Deno.test("hypervisor client: the ticket is renewed before Proxmox's two-hour expiry", async () => {
  await withMock(async (port, counts) => {
    let now = Date.UTC(2026, 0, 1);
    const api = new HypervisorApiClient({
      id: 1,
      name: "lab",
      ip: "127.0.0.1",
      port,
      use_https: false,
      verify_ssl: true,
      username: "root@pam",
      token_name: null,
      timeout: 5,
    }, {
      fetch: globalThis.fetch,
      now: () => now,
      secrets: () => Promise.resolve({ password: "bridgebox", token_value: null }),
    });
    await api.get("/version");
    now += 89 * 60_000;
    await api.get("/version");
    assert.equal(counts.get("POST /api2/json/access/ticket"), 1);
    now += 2 * 60_000; // 91 minutes after the login
    await api.get("/version");
    assert.equal(counts.get("POST /api2/json/access/ticket"), 2);
  });
});

Deno.test("hypervisor client: an answer that echoes the API token shows it nowhere in the error", async () => {
  // A proxy in front of the cluster that repeats the request headers in its error pages.
  const value = "3f1c2a9e-token-value-7b44";
  let notJson = false;
  const echo = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const text = `denied: ${req.headers.get("authorization")}`;
    return notJson ? new Response(text, { status: 200 }) : new Response(text, { status: 500 });
  });
  try {
    const api = client(echo.addr.port, { token_value: value }, { token_name: "sync" });
    const failed = await api.get("/nodes").catch((e) => e);
    assert.ok(failed instanceof HypervisorApiError);
    assert.equal(failed.status, 500);
    // The excerpt is kept (the user needs it), with the secret replaced.
    assert.match(failed.message, /denied: PVEAPIToken=root@pam!sync=\*\*\*/);
    assert.ok(!JSON.stringify({ ...failed, message: failed.message }).includes(value));
    notJson = true;
    const garbled = await api.get("/nodes").catch((e) => e);
    assert.ok(garbled instanceof HypervisorApiError);
    assert.match(garbled.message, /denied: PVEAPIToken=root@pam!sync=\*\*\*/);
    assert.ok(!JSON.stringify({ ...garbled, message: garbled.message }).includes(value));
  } finally {
    await echo.shutdown();
  }
});
