/**
 * The mock hypervisor's login (SECURITY.md "Hypervisor mock"): failed logins are throttled per
 * client address, and every operation but the login itself needs a ticket or a token.
 */
import assert from "node:assert/strict";
import { harness } from "../routes/hypervisor/_hv.ts";
import { NEEDS_SCHEMAS } from "../_schemas.ts";

const from = (hostname: string) => ({ remoteAddr: { hostname } });

function login(
  h: Awaited<ReturnType<typeof harness>>,
  password: string,
  ip: string,
  mount = "/api2/json",
) {
  return (h.app as unknown as {
    request: (p: string, i: RequestInit, e: unknown) => Promise<Response>;
  }).request(`${mount}/access/ticket`, {
    method: "POST",
    body: new URLSearchParams({ username: "root@pam", password }),
  }, from(ip));
}

Deno.test(
  "hypervisor login: the fifth failure locks the address for 300 s (429 + Retry-After)",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      for (let i = 0; i < 5; i++) {
        const res = await login(h, `guess-${i}`, "198.51.100.20");
        assert.equal(res.status, 401, `attempt ${i + 1}`);
        await res.body?.cancel();
      }
      const locked = await login(h, "bridgebox", "198.51.100.20");
      assert.equal(locked.status, 429);
      assert.equal(locked.headers.get("retry-after"), "300");
      assert.deepEqual(await locked.json(), {
        data: null,
        message: "Too many failed login attempts\n",
      });
      const pve = await login(h, "bridgebox", "198.51.100.20", "/pve");
      assert.equal(pve.status, 429);
      assert.deepEqual(await pve.json(), { detail: "Too many failed login attempts", errors: [] });
      // Another address is not affected; the lock ends after 300 s.
      const other = await login(h, "bridgebox", "198.51.100.21");
      assert.equal(other.status, 200);
      await other.body?.cancel();
      h.clock.now += 300_000;
      const later = await login(h, "bridgebox", "198.51.100.20");
      assert.equal(later.status, 200);
      await later.body?.cancel();
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor auth: /version and every non-world operation need a ticket or token",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      for (
        const path of [
          "/api2/json/version",
          "/pve/version",
          "/api2/json/nodes",
          "/pve/cluster/status",
        ]
      ) {
        const res = await h.app.request(path);
        assert.equal(res.status, 401, path);
        await res.body?.cancel();
      }
      const ok = await login(h, "bridgebox", "198.51.100.30");
      const { data } = await ok.json();
      const version = await h.app.request("/api2/json/version", {
        headers: { cookie: `PVEAuthCookie=${data.ticket}` },
      });
      assert.equal(version.status, 200);
      assert.match((await version.json()).data.version, /^9\./);
    } finally {
      h.close();
    }
  },
);

Deno.test("hypervisor login: guesses carried in-process (an endpoint pointed at the app's own port) count against the caller and lock the login", async () => {
  const { ROOT_TOKEN, P } = await import("../routes/plugin/_harness.ts");
  const { createApp } = await import("../../app.ts");
  const { testDeps } = await import("../_helpers.ts");
  const deps = await testDeps({
    INVENTORY_BOOTSTRAP_TOKEN: ROOT_TOKEN,
    HYPERVISOR_MOCK_PASSWORD: "the-real-one",
  });
  const app = await createApp(deps);
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (request, info) => app.fetch(request, info),
  );
  // As main.ts: calls to the app's own port are answered in-process (no socket, no peer).
  deps.self = { port: server.addr.port, fetch: (r) => app.fetch(r, { internal: true }) };
  const base = `http://127.0.0.1:${server.addr.port}`;
  const call = async (auth: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: auth, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  try {
    const root = `Token ${ROOT_TOKEN}`;
    const ep = await call(root, "POST", P + "endpoints/hypervisor/", {
      name: "self",
      ip_address: null,
      domain: "127.0.0.1",
      port: server.addr.port,
      use_https: false,
      username: "root@pam",
    });
    assert.equal(ep.status, 201, JSON.stringify(ep.body));
    const token = await call(root, "POST", "/api/users/tokens/", {
      version: 1,
      permissions: ["service.view_hypervisorendpoint", "service.change_hypervisorendpoint"],
    });
    const editor = token.body.header ?? `Token ${token.body.token}`;
    const item = `${P}endpoints/hypervisor/${ep.body.id}/`;
    const guess = async (password: string) => {
      const patched = await call(editor, "PATCH", item, { password });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      return (await call(editor, "GET", `${item}status/`)).body;
    };
    for (let i = 0; i < 5; i++) {
      const probe = await guess(`guess-${i}`);
      assert.equal(probe.status, "unauthorized", JSON.stringify(probe));
      assert.equal(probe.http_status, 401, JSON.stringify(probe));
    }
    // The sixth try, with the right password, is refused: the login is locked.
    const right = await guess("the-real-one");
    assert.notEqual(right.status, "online", JSON.stringify(right));
    assert.equal(right.http_status, 429, JSON.stringify(right));
    // Any in-process login is locked for now (the shared key: the one login they all reach),
    // even one no outside request caused (a background sync).
    const background = await deps.self.fetch(
      new Request(`http://127.0.0.1:${server.addr.port}/api2/json/access/ticket`, {
        method: "POST",
        body: new URLSearchParams({ username: "root@pam", password: "the-real-one" }),
      }),
    );
    assert.equal(background.status, 429);
    await background.body?.cancel();
    // And the caller's own address is locked out of the login too (it caused the failures).
    const direct = await fetch(`${base}/api2/json/access/ticket`, {
      method: "POST",
      body: new URLSearchParams({ username: "root@pam", password: "the-real-one" }),
    });
    assert.equal(direct.status, 429);
    await direct.body?.cancel();
  } finally {
    await server.shutdown();
    deps.kv.close();
  }
});
