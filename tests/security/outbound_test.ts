/**
 * One outbound guard for every client (SECURITY.md "Outbound requests"): loopback in every
 * spelling, link-local and metadata addresses are refused unless SERVICE_ALLOW_LOOPBACK_TARGETS,
 * redirects are never followed, and the app's own port is answered in-process.
 */
import assert from "node:assert/strict";
import { harness, P, startBackend } from "../routes/plugin/_harness.ts";
import { KEY, registered } from "../routes/backend/_setup.ts";

/** A listener standing in for an attacker's host: records every request it gets. */
function trap(answer: (req: Request) => Response = () => Response.json({ data: null })) {
  const hits: string[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    hits.push(`${req.method} ${new URL(req.url).pathname} ${await req.text()}`);
    return answer(req);
  });
  return { port: server.addr.port, hits, close: () => server.shutdown() };
}

/** Host spellings of this machine: names in `domain`, IPv6 literals as IP address records. */
const LOOPBACK_SPELLINGS: [string, "domain" | "ip"][] = [
  ["localhost", "domain"],
  ["LOCALHOST.", "domain"],
  ["app.localhost", "domain"],
  ["127.1", "domain"],
  ["127.0.0.1", "domain"],
  ["2130706433", "domain"],
  ["0x7f000001", "domain"],
  ["0.0.0.0", "domain"],
  ["0", "domain"],
  ["127.0.0.1/8", "ip"],
  ["::1/128", "ip"],
  ["::ffff:127.0.0.1/128", "ip"],
  ["0.0.0.0/32", "ip"],
];

Deno.test("outbound: keepalive refuses every loopback spelling and never sends the password", async () => {
  const attacker = trap();
  const h = await harness({ SERVICE_ALLOW_LOOPBACK_TARGETS: "false" });
  try {
    for (const [i, [domain, field]] of LOOPBACK_SPELLINGS.entries()) {
      const ep = await h.call("POST", P + "endpoints/hypervisor/", {
        name: `pve${i}`,
        ...(field === "ip" ? { ip_address: await h.ip(domain) } : { domain }),
        port: attacker.port,
        use_https: false,
        username: "root@pam",
        password: "hunter2-secret",
      });
      assert.equal(ep.status, 201, `${domain}: ${JSON.stringify(ep.body)}`);
      const status = await h.call("GET", `${P}endpoints/hypervisor/${ep.body.id}/status/`);
      assert.notEqual(status.body.status, "online", domain);
      assert.match(status.body.detail, /refused|loopback/, `${domain}: ${status.body.detail}`);
    }
    assert.deepEqual(attacker.hits, [], "nothing reached the listener");
  } finally {
    await h.close();
    await attacker.close();
  }
});

Deno.test("outbound: link-local and metadata addresses are refused before any connection", async () => {
  const h = await harness({ SERVICE_ALLOW_LOOPBACK_TARGETS: "false" });
  try {
    const targets: [string, "domain" | "ip"][] = [
      ["169.254.169.254", "ip"],
      // Alibaba Cloud's metadata service, inside the shared (CGNAT) range endpoints may use.
      ["100.100.100.200", "ip"],
      ["::ffff:100.100.100.200", "ip"],
      ["metadata.google.internal", "domain"],
      ["fd00:ec2::254", "ip"],
      ["fe80::1", "ip"],
    ];
    for (const [i, [host, field]] of targets.entries()) {
      const body: Record<string, unknown> = { name: `meta${i}`, port: 80, password: "pw" };
      if (field === "ip") body.ip_address = await h.ip(`${host}/${host.includes(":") ? 128 : 32}`);
      else body.domain = host;
      const ep = await h.call("POST", P + "endpoints/hypervisor/", body);
      assert.equal(ep.status, 201, JSON.stringify(ep.body));
      const status = await h.call("GET", `${P}endpoints/hypervisor/${ep.body.id}/status/`);
      // The guard's own words (never a connect timeout's): refused before any connection.
      assert.match(status.body.detail, /refused: a (link-local|metadata)|metadata service name/);
    }
  } finally {
    await h.close();
  }
});

Deno.test("outbound: a redirect is an error naming the location; credentials are not re-sent", async () => {
  const second = trap();
  const first = trap(() =>
    new Response(null, {
      status: 307,
      headers: { location: `http://127.0.0.1:${second.port}/api2/json/access/ticket` },
    })
  );
  const h = await harness();
  try {
    const ep = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "redirecting",
      domain: "127.0.0.1",
      port: first.port,
      use_https: false,
      username: "root@pam",
      password: "hunter2-secret",
    });
    const status = await h.call("GET", `${P}endpoints/hypervisor/${ep.body.id}/status/`);
    assert.equal(status.body.status, "offline");
    assert.match(
      status.body.detail,
      new RegExp(`redirect \\(HTTP 307\\) to http://127\\.0\\.0\\.1:${second.port}/`),
    );
    assert.equal(first.hits.length, 1);
    assert.deepEqual(second.hits, [], "the password never reached the redirect target");
  } finally {
    await h.close();
    await first.close();
    await second.close();
  }
});

Deno.test("outbound: the plugin's push to a loopback backend is refused (any spelling)", async () => {
  const backend = await startBackend();
  const h = await harness({ SERVICE_ALLOW_LOOPBACK_TARGETS: "false" });
  try {
    for (const domain of ["2130706433", "localhost", "127.0.0.1"]) {
      const be = await h.call("POST", P + "endpoints/backend/", {
        name: `backend-${domain}`,
        domain,
        port: backend.port,
        use_https: false,
      });
      assert.equal(be.status, 201, JSON.stringify(be.body));
      assert.equal(be.body.last_push.ok, false);
      assert.match(be.body.last_push.error, /refused/, JSON.stringify(be.body.last_push));
      await h.call("DELETE", `${P}endpoints/backend/${be.body.id}/`);
    }
    const status = await (await backend.request("/auth/bootstrap-status")).json();
    assert.equal(status.needs_bootstrap, true, "no key was registered on the backend");
  } finally {
    await h.close();
    await backend.close();
  }
});

Deno.test("outbound: the backend's inventory client refuses 0.0.0.0 (the plugin key is not read there)", async () => {
  const inventory = trap(() => Response.json({ encryption_key: "attacker chooses the key" }));
  await using h = await registered();
  try {
    const copy = await h.call("/inventory/endpoint", {
      method: "POST",
      key: KEY,
      json: {
        name: "inv",
        ip: "0.0.0.0",
        port: inventory.port,
        use_https: false,
        token_version: "v1",
        token: "inv-token",
      },
    });
    assert.equal(copy.status, 201);
    const hv = await h.call("/hypervisor/endpoints", {
      method: "POST",
      key: KEY,
      json: { name: "pve", ip: "192.0.2.5", port: 8006, password: "pw" },
    });
    assert.equal(hv.status, 502, "the key could not be read, so nothing is stored");
    assert.match(JSON.stringify(await hv.json()), /refused/);
    assert.deepEqual(inventory.hits, []);
  } finally {
    await inventory.close();
  }
});

Deno.test("outbound: the app's own port is answered in-process with loopback targets refused", async () => {
  const { createApp } = await import("../../app.ts");
  const { testDeps } = await import("../_helpers.ts");
  const { ROOT_TOKEN } = await import("../routes/plugin/_harness.ts");
  const deps = await testDeps({
    SERVICE_SURFACES: "backend,plugin",
    INVENTORY_BOOTSTRAP_TOKEN: ROOT_TOKEN,
  });
  const app = await createApp(deps);
  const other = trap();
  deps.self = { port: 8800, fetch: (request) => app.fetch(request, { internal: true }) };
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      headers: { authorization: `Token ${ROOT_TOKEN}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  try {
    const own = await call("POST", P + "endpoints/backend/", {
      name: "self",
      domain: "localhost",
      port: 8800,
      use_https: false,
    });
    assert.equal(own.status, 201);
    assert.equal(own.body.last_push.ok, true, JSON.stringify(own.body.last_push));
    // Another local port is not the app: refused.
    const elsewhere = await call("PATCH", `${P}endpoints/backend/${own.body.id}/`, {
      port: other.port,
    });
    assert.equal(elsewhere.body.last_push.ok, false);
    assert.match(elsewhere.body.last_push.error, /refused: a loopback name/);
    assert.deepEqual(other.hits, []);
  } finally {
    await other.close();
    deps.kv.close();
  }
});
