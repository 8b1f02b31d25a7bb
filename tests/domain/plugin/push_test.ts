import assert from "node:assert/strict";
import { BackendClient, baseUrl, type HypervisorCopy } from "../../../clients/backend.ts";
import {
  FOREIGN_KEY_HINT,
  hypervisorCopyName,
  pushHypervisorCopy,
  pushInventoryCopy,
  registerBackendKey,
} from "../../../domain/plugin/push.ts";

/** A scripted backend: records each call, answers from `route`. */
function scripted(route: (method: string, path: string, body: unknown) => [number, unknown]) {
  const calls: { method: string; path: string; body: unknown; key: string | null }[] = [];
  const fetchFn = ((input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(String(input));
    const body = init?.body ? JSON.parse(String(init.body)) : undefined;
    const method = init?.method ?? "GET";
    const key = new Headers(init?.headers).get("x-service-api-key");
    calls.push({ method, path: url.pathname, body, key });
    const [status, payload] = route(method, url.pathname, body);
    return Promise.resolve(
      new Response(JSON.stringify(payload), {
        status,
        headers: { "content-type": "application/json" },
      }),
    );
  }) as typeof fetch;
  return { calls, fetchFn };
}

const copy: HypervisorCopy = {
  name: hypervisorCopyName("pve", 3),
  ip: "10.0.0.5",
  port: 8006,
  use_https: true,
  verify_ssl: false,
  username: "root@pam",
  password: "pw",
  token_name: null,
  token_value: null,
  allow_writes: false,
  enabled: true,
};

Deno.test("base URL: scheme from use_https, prefix length dropped, IPv6 bracketed", () => {
  assert.equal(baseUrl(false, "10.0.0.1/24", 8800), "http://10.0.0.1:8800");
  assert.equal(baseUrl(true, "fd00::1/64", 443), "https://[fd00::1]:443");
  assert.equal(baseUrl(true, "backend.local", 8800), "https://backend.local:8800");
});

Deno.test("register: only when needs_bootstrap", async () => {
  const fresh = scripted((_m, path) =>
    path === "/auth/bootstrap-status"
      ? [200, { needs_bootstrap: true, has_db_keys: false }]
      : [201, { detail: "API key registered." }]
  );
  const client = new BackendClient(fresh.fetchFn, { baseUrl: "http://b:1", token: "t".repeat(64) });
  assert.deepEqual(await registerBackendKey(client, "t".repeat(64)), {
    ok: true,
    error: null,
    status: 201,
  });
  assert.deepEqual(fresh.calls.map((c) => `${c.method} ${c.path}`), [
    "GET /auth/bootstrap-status",
    "POST /auth/register-key",
  ]);
  assert.deepEqual(fresh.calls[1].body, { api_key: "t".repeat(64), label: "inventory-plugin" });

  const claimed = scripted(() => [200, { needs_bootstrap: false, has_db_keys: true }]);
  const c2 = new BackendClient(claimed.fetchFn, { baseUrl: "http://b:1", token: "x" });
  assert.equal((await registerBackendKey(c2, "x")).ok, true);
  assert.equal(claimed.calls.length, 1);
});

Deno.test("inventory push: POST when empty, PUT to the first entry otherwise", async () => {
  let list: unknown[] = [];
  const b = scripted((method) =>
    method === "GET" ? [200, list] : [method === "POST" ? 201 : 200, {}]
  );
  const client = new BackendClient(b.fetchFn, { baseUrl: "http://b:1", token: "key" });
  const inv = {
    name: "nb",
    ip: "nb.local",
    port: 443,
    use_https: true,
    verify_ssl: true,
    token_version: "v1" as const,
    token: "abc",
    token_key: null,
  };
  assert.equal((await pushInventoryCopy(client, inv)).ok, true);
  list = [{ id: 7 }, { id: 9 }];
  assert.equal((await pushInventoryCopy(client, inv)).ok, true);
  assert.deepEqual(b.calls.map((c) => `${c.method} ${c.path}`), [
    "GET /inventory/endpoint",
    "POST /inventory/endpoint",
    "GET /inventory/endpoint",
    "PUT /inventory/endpoint/7",
  ]);
  assert.ok(b.calls.every((c) => c.key === "key"));
});

Deno.test("hypervisor push: matched by name, failures carry error and status", async () => {
  const b = scripted((method) =>
    method === "GET"
      ? [200, [{ id: 4, name: "other (inv:1)" }, { id: 5, name: "pve (inv:3)" }]]
      : [422, { detail: "password or both token fields are required" }]
  );
  const client = new BackendClient(b.fetchFn, { baseUrl: "http://b:1", token: "key" });
  const out = await pushHypervisorCopy(client, copy);
  assert.equal(out.ok, false);
  assert.equal(out.status, 422);
  assert.match(
    out.error!,
    /PUT http:\/\/b:1\/hypervisor\/endpoints\/5: HTTP 422: password or both/,
  );
  assert.ok(!out.error!.includes("pw"), "no secret in the message");

  const denied = scripted(() => [401, { detail: "Invalid API key" }]);
  const c2 = new BackendClient(denied.fetchFn, { baseUrl: "http://b:1", token: "bad" });
  const listFail = await pushHypervisorCopy(c2, copy);
  assert.deepEqual([listFail.ok, listFail.status], [false, 401]);
  assert.match(listFail.error!, /Invalid API key/);
  assert.equal(denied.calls.length, 1);
});

Deno.test("client: unreachable backend and timeout give ok=false, status null", async () => {
  // A listener that accepts and never answers, to exercise the timeout over a real socket.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  const port = (listener.addr as Deno.NetAddr).port;
  const slow = new BackendClient(fetch, { baseUrl: `http://127.0.0.1:${port}`, token: "k" }, {
    hypervisorTimeoutMs: 200,
  });
  const timedOut = await pushHypervisorCopy(slow, copy);
  assert.equal(timedOut.ok, false);
  assert.equal(timedOut.status, null);
  assert.match(timedOut.error!, /timed out after 0.2 s/);
  listener.close();
  await accepting.catch(() => {});
  for (const conn of held) conn.close();

  const closed = new BackendClient(fetch, { baseUrl: `http://127.0.0.1:${port}`, token: "k" });
  const refused = await closed.bootstrapStatus();
  assert.equal(refused.ok, false);
  assert.equal(refused.status, null);
  assert.match(refused.error!, /unreachable/);
});

Deno.test("client: inventory calls use the inventory timeout, hypervisor calls the hypervisor one", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  const port = (listener.addr as Deno.NetAddr).port;
  const client = new BackendClient(fetch, { baseUrl: `http://127.0.0.1:${port}`, token: "k" }, {
    inventoryTimeoutMs: 100,
    hypervisorTimeoutMs: 150,
  });
  const inv = await client.listInventoryEndpoints();
  const hyp = await client.listHypervisorEndpoints();
  assert.match(inv.error!, /timed out after 0.1 s/);
  assert.match(hyp.error!, /timed out after 0.15 s/);
  listener.close();
  await accepting.catch(() => {});
  for (const conn of held) conn.close();
});

Deno.test("client: default timeouts are 10 s (inventory push) and 15 s (hypervisor push)", async () => {
  const { INVENTORY_PUSH_TIMEOUT_MS, HYPERVISOR_PUSH_TIMEOUT_MS } = await import(
    "../../../clients/backend.ts"
  );
  assert.equal(INVENTORY_PUSH_TIMEOUT_MS, 10_000);
  assert.equal(HYPERVISOR_PUSH_TIMEOUT_MS, 15_000);
});

Deno.test("push: a copy created concurrently (409 on POST) is updated instead", async () => {
  let listed = 0;
  const b = scripted((method) => {
    if (method === "GET") {
      listed++;
      return [200, listed === 1 ? [] : [{ id: 8, name: copy.name }]];
    }
    if (method === "POST") return [409, { detail: "name taken" }];
    return [200, {}];
  });
  const client = new BackendClient(b.fetchFn, { baseUrl: "http://b:1", token: "key" });
  assert.deepEqual(await pushHypervisorCopy(client, copy), { ok: true, error: null, status: 200 });
  assert.deepEqual(b.calls.map((c) => `${c.method} ${c.path}`), [
    "GET /hypervisor/endpoints",
    "POST /hypervisor/endpoints",
    "GET /hypervisor/endpoints",
    "PUT /hypervisor/endpoints/8",
  ]);
});

Deno.test("register: a 409 from register-key (claimed meanwhile) says how to recover; other failures pass through", async () => {
  const answer = (status: number) =>
    scripted((_m, path) =>
      path === "/auth/bootstrap-status"
        ? [200, { needs_bootstrap: true, has_db_keys: false }]
        : [status, { detail: status === 409 ? "API key already configured." : "boom" }]
    );
  const raced = answer(409);
  const c1 = new BackendClient(raced.fetchFn, { baseUrl: "http://b:1", token: "t" });
  const conflict = await registerBackendKey(c1, "t");
  assert.deepEqual([conflict.ok, conflict.status], [false, 409]);
  assert.ok(conflict.error!.includes(FOREIGN_KEY_HINT), conflict.error!);
  const broken = answer(500);
  const c2 = new BackendClient(broken.fetchFn, { baseUrl: "http://b:1", token: "t" });
  const failure = await registerBackendKey(c2, "t");
  assert.deepEqual([failure.ok, failure.status], [false, 500]);
  assert.ok(!failure.error!.includes(FOREIGN_KEY_HINT), failure.error!);
});

Deno.test("inventory push: a failing list is the outcome (nothing else is sent)", async () => {
  const b = scripted(() => [503, { detail: "starting" }]);
  const client = new BackendClient(b.fetchFn, { baseUrl: "http://b:1", token: "key" });
  const out = await pushInventoryCopy(client, {
    name: "nb",
    ip: "nb.local",
    port: 443,
    use_https: true,
    verify_ssl: true,
    token_version: "v1",
    token: "abc",
    token_key: null,
  });
  assert.deepEqual([out.ok, out.status], [false, 503]);
  assert.deepEqual(b.calls.map((c) => c.method), ["GET"]);
});

Deno.test("push: after a 409 on POST, a failing or empty second list is reported, nothing is PUT", async () => {
  for (const second of [[500, { detail: "down" }], [200, []]] as Array<[number, unknown]>) {
    let listed = 0;
    const b = scripted((method) => {
      if (method === "GET") return listed++ === 0 ? [200, []] : second;
      return [409, { detail: "name taken" }];
    });
    const client = new BackendClient(b.fetchFn, { baseUrl: "http://b:1", token: "key" });
    const inv = {
      name: "nb",
      ip: "nb.local",
      port: 443,
      use_https: true,
      verify_ssl: true,
      token_version: "v1" as const,
      token: "abc",
      token_key: null,
    };
    for (
      const push of [() => pushHypervisorCopy(client, copy), () => pushInventoryCopy(client, inv)]
    ) {
      listed = 0;
      b.calls.length = 0;
      const out = await push();
      assert.equal(out.ok, false);
      assert.equal(out.status, second[0] === 500 ? 500 : 409, JSON.stringify(out));
      assert.ok(!b.calls.some((c) => c.method === "PUT"), JSON.stringify(b.calls));
    }
  }
});

Deno.test("hypervisor push: a new endpoint never takes over another endpoint's copy", async () => {
  const b = scripted((method) =>
    method === "GET" ? [200, [{ id: 4, name: "other (inv:1)" }]] : [201, { id: 5 }]
  );
  const client = new BackendClient(b.fetchFn, { baseUrl: "http://b:1", token: "key" });
  assert.equal((await pushHypervisorCopy(client, copy)).ok, true);
  assert.deepEqual(b.calls.map((c) => `${c.method} ${c.path}`), [
    "GET /hypervisor/endpoints",
    "POST /hypervisor/endpoints",
  ]);
});

Deno.test("hypervisor push: after a rename the old copy (same ' (inv:<pk>)' suffix) is renamed, not duplicated", async () => {
  const b = scripted((method) =>
    method === "GET"
      ? [200, [{ id: 4, name: "other (inv:1)" }, { id: 6, name: "old-name (inv:3)" }]]
      : [200, {}]
  );
  const client = new BackendClient(b.fetchFn, { baseUrl: "http://b:1", token: "key" });
  assert.equal((await pushHypervisorCopy(client, copy)).ok, true);
  assert.deepEqual(b.calls.map((c) => `${c.method} ${c.path}`), [
    "GET /hypervisor/endpoints",
    "PUT /hypervisor/endpoints/6",
  ]);
  assert.equal((b.calls[1].body as { name: string }).name, "pve (inv:3)");
});
