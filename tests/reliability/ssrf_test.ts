/**
 * SSRF through DNS: a user-set host name whose DNS answer is loopback, link-local metadata or a
 * mix of a harmless and a loopback address is refused before any connection, for every outbound
 * URL a user can set (inventory copy, hypervisor copy, host-agent URL, plugin backend endpoint,
 * codegen source). The guard's resolver is injected; a listener on 127.0.0.1 counts connections.
 */
import assert from "node:assert/strict";
import { createOutboundFetch, OutboundRefused } from "../../clients/outbound.ts";
import { createApp } from "../../app.ts";
import { testDeps } from "../_helpers.ts";

const KEY = "ssrf-key-0123456789abcdef0123456789abcdef0123";
const ROOT = "55af0123456789abcdef0123456789abcdef0123";

const ANSWERS: Record<string, string[]> = {
  "loopback.example": ["127.0.0.1"],
  "metadata.example": ["169.254.169.254"],
  "mixed.example": ["10.20.30.40", "127.0.0.1"],
  "v6.example": ["::1"],
  "mapped.example": ["::ffff:127.0.0.1"],
  "zero.example": ["0.0.0.0"],
};

Deno.test({
  name: "ssrf: DNS answers pointing at loopback or metadata are refused for every user-set URL",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  let connections = 0;
  const trap = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    connections++;
    return new Response("{}");
  });
  const asked: string[] = [];
  const guard = createOutboundFetch({
    allowLoopbackTargets: false,
    resolve: (host) => {
      asked.push(host);
      return Promise.resolve(ANSWERS[host] ?? []);
    },
  });
  const port = trap.addr.port;
  try {
    // The guard itself, host by host.
    for (const host of Object.keys(ANSWERS)) {
      await assert.rejects(guard(`http://${host}:${port}/`), OutboundRefused, host);
    }

    // Through the app: every URL a user can set.
    const deps = await testDeps({
      INVENTORY_BOOTSTRAP_TOKEN: ROOT,
      SERVICE_ENCRYPTION_KEY: "ssrf-test-encryption-key-0123456789",
    }, { fetch: guard });
    try {
      const app = await createApp(deps);
      const backend = { "x-service-api-key": KEY, "content-type": "application/json" };
      const inventory = { authorization: `Token ${ROOT}`, "content-type": "application/json" };
      const send = async (path: string, init: RequestInit) => {
        const res = await app.request(path, init);
        const text = await res.text();
        assert.ok(
          res.status < 500 || res.status === 502 || res.status === 503,
          `${path}: ${res.status} ${text}`,
        );
        return { status: res.status, text };
      };
      await send("/auth/register-key", {
        method: "POST",
        headers: backend,
        body: JSON.stringify({ api_key: KEY }),
      });
      await send("/inventory/endpoint", {
        method: "POST",
        headers: backend,
        body: JSON.stringify({
          name: "inv",
          ip: "metadata.example",
          port,
          use_https: false,
          token_version: "v1",
          token: ROOT,
        }),
      });
      for (const [i, host] of Object.keys(ANSWERS).entries()) {
        const hv = await send("/hypervisor/endpoints", {
          method: "POST",
          headers: { ...backend, "x-service-allow-plaintext": "1" },
          body: JSON.stringify({
            name: `hv-${i}`,
            ip: host,
            port,
            use_https: false,
            username: "root@pam",
            password: "pw",
            allow_writes: true,
          }),
        });
        if (hv.status === 201) {
          const id = JSON.parse(hv.text).id;
          await send(`/hypervisor/qemu/100/start?endpoint_id=${id}`, {
            method: "POST",
            headers: backend,
          });
        }
        await send("/cloud/microvm/provision", {
          method: "POST",
          headers: backend,
          body: JSON.stringify({
            host_agent_base_url: `http://${host}:${port}/host-agent`,
            name: "edge",
            image: {
              name: "alpine",
              kernel_image_url: "https://images.example/vmlinux",
              kernel_image_sha256: "a".repeat(64),
              rootfs_image_url: "https://images.example/rootfs.ext4",
              rootfs_image_sha256: "b".repeat(64),
            },
          }),
        });
        await send("/api/plugins/service/endpoints/backend/", {
          method: i === 0 ? "POST" : "PATCH",
          headers: inventory,
          body: JSON.stringify({ name: "backend", domain: host, port, use_https: false }),
        });
      }
      const full = await app.request("/full-update", { headers: backend });
      await full.body?.cancel();
      const login = await app.request("/api2/json/access/ticket", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ username: "root@pam", password: "bridgebox" }),
      });
      const ticket = (await login.json()).data;
      for (const host of Object.keys(ANSWERS)) {
        await send("/pve/codegen/generate", {
          method: "POST",
          headers: {
            "content-type": "application/json",
            cookie: `PVEAuthCookie=${ticket.ticket}`,
            csrfpreventiontoken: ticket.CSRFPreventionToken,
          },
          body: JSON.stringify({ source: `http://${host}:${port}/schema.json` }),
        });
      }
    } finally {
      deps.kv.close();
    }
    assert.equal(connections, 0, "a refused address was connected to");
    // Each hostile name went through the guard from the app itself, not only in the direct
    // checks: at least its verb and the full sync (which tries each endpoint once per run).
    const throughApp = asked.slice(Object.keys(ANSWERS).length);
    for (const host of Object.keys(ANSWERS)) {
      const times = throughApp.filter((h) => h === host).length;
      assert.ok(times >= 2, `${host} resolved ${times} times through the app: ${throughApp}`);
    }
    console.log(`ssrf: ${asked.length} resolutions of hostile names, ${connections} connections`);
  } finally {
    await trap.shutdown();
  }
});
