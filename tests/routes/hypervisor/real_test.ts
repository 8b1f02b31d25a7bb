/**
 * Real mode through a real HTTP hop: a second instance of this server, in mock mode, is the
 * "real" Proxmox VE upstream (Deno.serve on 127.0.0.1, plain HTTP and TLS with a private CA
 * generated here with openssl).
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import type { ServeEnv } from "../../../routes/_lib/deps.ts";
import { createHypervisorApp } from "../../../routes/hypervisor/mod.ts";
import {
  hypervisorRealRoutes,
  loadUpstreamSchema,
  type RealModeOptions,
  UPSTREAM_SCHEMA_PATH,
} from "../../../routes/hypervisor/real.ts";
import { type TestDeps, testDeps } from "../../_helpers.ts";
import { refusingListener } from "../../_net.ts";
import { caSignedCertificate, HAS_OPENSSL } from "../../_tls.ts";
import type { MemoryLogger } from "../../../infra/logger.ts";
import { schema92 } from "./_tooling.ts";
import { HAS_SCHEMAS, NEEDS_SCHEMAS, SCHEMA_9111, SCHEMA_92 } from "../../_schemas.ts";

const MOCK_USER = "root@pam";
const MOCK_PASSWORD = "bridgebox";

interface Upstream {
  url: string;
  deps: TestDeps;
  /** Requests the upstream received, as "METHOD /path". */
  seen: string[];
  /** Replaces the upstream app by a fresh one on the same port (its sessions are gone). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

interface Certs {
  dir: string;
  caFile: string;
  cert: string;
  key: string;
}

/** A private CA and a server certificate for 127.0.0.1 signed by it. */
async function makeCerts(): Promise<Certs> {
  const dir = await Deno.makeTempDir({ prefix: "pve-tls-" });
  const { cert, key } = await caSignedCertificate(dir);
  return { dir, caFile: `${dir}/ca.pem`, cert, key };
}

async function startUpstream(tls?: Certs): Promise<Upstream> {
  const deps = await testDeps();
  let app = await createHypervisorApp(deps, { schema: await schema92(), taskDelayMs: 20 });
  const seen: string[] = [];
  const server = Deno.serve(
    {
      hostname: "127.0.0.1",
      port: 0,
      onListen() {},
      ...(tls ? { cert: tls.cert, key: tls.key } : {}),
    },
    (req, info) => {
      const u = new URL(req.url);
      seen.push(`${req.method} ${u.pathname}${u.search}`);
      return app.fetch(req, { remoteAddr: info.remoteAddr as Deno.NetAddr });
    },
  );
  return {
    url: `${tls ? "https" : "http"}://127.0.0.1:${server.addr.port}`,
    deps,
    seen,
    restart: async () => {
      app = await createHypervisorApp(deps, { schema: await schema92(), taskDelayMs: 20 });
    },
    close: async () => {
      await server.shutdown();
      deps.kv.close();
    },
  };
}

interface Proxy {
  app: Hono<{ Bindings: ServeEnv }>;
  deps: TestDeps;
  clock: { now: number };
  logins(): number;
  close(): void;
}

async function startProxy(
  env: Record<string, string>,
  options: RealModeOptions = {},
): Promise<Proxy> {
  const clock = { now: Date.now() };
  const deps = await testDeps({ HYPERVISOR_MODE: "real", ...env }, { now: () => clock.now });
  const { app: routes, handler } = await hypervisorRealRoutes(deps, await schema92(), options);
  const app = new Hono<{ Bindings: ServeEnv }>();
  app.route("/", routes);
  return {
    app,
    deps,
    clock,
    logins: () => handler.client.logins,
    close: () => {
      handler.close();
      deps.kv.close();
    },
  };
}

const ticketEnv = (url: string) => ({
  HYPERVISOR_URL: url,
  HYPERVISOR_USERNAME: MOCK_USER,
  HYPERVISOR_PASSWORD: MOCK_PASSWORD,
});

function form(data: Record<string, string>): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(data).toString(),
  };
}

Deno.test(
  "real mode: both mounts proxy to the upstream with a ticket (plain HTTP)",
  NEEDS_SCHEMAS,
  async () => {
    const up = await startUpstream();
    const proxy = await startProxy(ticketEnv(`${up.url}/api2/json`));
    try {
      // /pve: bare payloads.
      const nodes = await proxy.app.request("/pve/nodes");
      assert.equal(nodes.status, 200);
      const list = await nodes.json();
      assert.ok(Array.isArray(list) && list.length > 0);
      assert.equal(typeof list[0].node, "string");
      const node = list[0].node as string;
      // /api2/json: the upstream envelope unchanged.
      const wire = await proxy.app.request(`/api2/json/nodes/${node}/qemu?limit=2&start=1`);
      assert.equal(wire.status, 200);
      const body = await wire.json();
      assert.ok(Array.isArray(body.data));
      assert.equal(body.data.length, 2);
      // Paging the real API does not define is applied by the proxy, never forwarded.
      assert.ok(body.total > 2);
      assert.equal(wire.headers.get("x-total-count"), String(body.total));
      assert.ok(up.seen.includes(`GET /api2/json/nodes/${node}/qemu`));
      assert.ok(!up.seen.some((s) => s.includes("limit=")));
      const full = await (await proxy.app.request(`/pve/nodes/${node}/qemu`)).json();
      assert.deepEqual(
        body.data.map((v: { vmid: number }) => v.vmid),
        full.slice(1, 3).map((v: { vmid: number }) => v.vmid),
      );
      assert.deepEqual(up.seen.filter((s) => s.endsWith("/access/ticket")).length, 1);
      assert.equal(proxy.logins(), 1);

      // A write: form body forwarded with the CSRF token of the proxy's ticket.
      const create = await proxy.app.request(
        `/api2/json/nodes/${node}/qemu`,
        form({ vmid: "4242", name: "via-proxy", memory: "1024", cores: "2" }),
      );
      assert.equal(create.status, 200, await create.clone().text());
      const upid = (await create.json()).data as string;
      assert.match(upid, /^UPID:/);
      // The creation task runs upstream; its status is read through the proxy until it stops.
      for (let i = 0;; i++) {
        const st = await proxy.app.request(
          `/pve/nodes/${node}/tasks/${encodeURIComponent(upid)}/status`,
        );
        assert.equal(st.status, 200);
        if ((await st.json()).status === "stopped") break;
        assert.ok(i < 100, "task never finished");
        await new Promise((r) => setTimeout(r, 10));
      }
      const config = await proxy.app.request(`/pve/nodes/${node}/qemu/4242/config`);
      assert.equal(config.status, 200);
      assert.equal((await config.json()).name, "via-proxy");
      // Duplicate id: the upstream's field error, in each mount's format.
      const dup = await proxy.app.request(
        `/pve/nodes/${node}/qemu`,
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ vmid: 4242 }),
        },
      );
      assert.equal(dup.status, 400);
      const dupBody = await dup.json();
      assert.ok(dupBody.detail);
      assert.ok(dupBody.errors.some((e: { field: string }) => e.field === "vmid"));
      // A task action on /pve answers {success, task}.
      const start = await proxy.app.request(`/pve/nodes/${node}/qemu/4242/status/start`, {
        method: "POST",
      });
      assert.equal(start.status, 200, await start.clone().text());
      const started = await start.json();
      assert.equal(started.success, true);
      assert.match(started.task, /^UPID:[^:]+:/);

      // Missing resources: Proxmox's 500 on /api2/json, 404 on /pve.
      const gone = await proxy.app.request(`/api2/json/nodes/${node}/qemu/99999/config`);
      assert.equal(gone.status, 500);
      assert.equal((await gone.json()).data, null);
      const gonePve = await proxy.app.request(`/pve/nodes/${node}/qemu/99999/config`);
      assert.equal(gonePve.status, 404);
      assert.match((await gonePve.json()).detail, /does not exist/);
      assert.equal(proxy.logins(), 1, "the ticket is reused");
    } finally {
      proxy.close();
      await up.close();
    }
  },
);

Deno.test(
  "real mode: requests are validated against the schema before forwarding",
  NEEDS_SCHEMAS,
  async () => {
    const up = await startUpstream();
    const proxy = await startProxy(ticketEnv(up.url));
    try {
      const before = up.seen.length;
      const bad = await proxy.app.request("/pve/nodes/pve1/qemu", form({ vmid: "12", name: "x" }));
      assert.equal(bad.status, 400);
      const body = await bad.json();
      assert.equal(body.detail, "Parameter verification failed.");
      assert.ok(body.errors.some((e: { field: string }) => e.field === "vmid"));
      const wire = await proxy.app.request("/api2/json/nodes/pve1/qemu?full=maybe");
      assert.equal(wire.status, 400);
      const wireBody = await wire.json();
      assert.equal(wireBody.data, null);
      assert.ok(wireBody.errors.full);
      const unknown = await proxy.app.request("/api2/json/nodes/pve1/frobnicate");
      assert.equal(unknown.status, 501);
      assert.match(unknown.statusText, /Method 'GET \/nodes\/pve1\/frobnicate' not implemented/);
      await unknown.body?.cancel();
      const notJson = await proxy.app.request("/pve/nodes/pve1/qemu", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{",
      });
      assert.equal(notJson.status, 400);
      await notJson.body?.cancel();
      assert.equal(up.seen.length, before, "nothing invalid reached the upstream");
    } finally {
      proxy.close();
      await up.close();
    }
  },
);

Deno.test(
  "real mode: the ticket is renewed before its 2-hour life ends, and after a 401",
  NEEDS_SCHEMAS,
  async () => {
    const up = await startUpstream();
    const proxy = await startProxy(ticketEnv(up.url));
    try {
      assert.equal((await proxy.app.request("/pve/version")).status, 200);
      assert.equal((await proxy.app.request("/pve/nodes")).status, 200);
      assert.equal(proxy.logins(), 1);
      proxy.clock.now += 89 * 60_000;
      await (await proxy.app.request("/pve/nodes")).body?.cancel();
      assert.equal(proxy.logins(), 1);
      proxy.clock.now += 2 * 60_000; // 91 minutes: renew, well before 120.
      await (await proxy.app.request("/pve/nodes")).body?.cancel();
      assert.equal(proxy.logins(), 2);
      // Concurrent requests after expiry share one login.
      proxy.clock.now += 91 * 60_000;
      const all = await Promise.all([1, 2, 3, 4].map(() => proxy.app.request("/pve/nodes")));
      for (const r of all) {
        assert.equal(r.status, 200);
        await r.body?.cancel();
      }
      assert.equal(proxy.logins(), 3);
      // The upstream forgets its sessions (a restart): one 401, one new login, and success.
      await up.restart();
      const after = await proxy.app.request("/pve/nodes");
      assert.equal(after.status, 200);
      await after.body?.cancel();
      assert.equal(proxy.logins(), 4);
    } finally {
      proxy.close();
      await up.close();
    }
  },
);

Deno.test("real mode: API token auth and client-supplied credentials", NEEDS_SCHEMAS, async () => {
  const up = await startUpstream();
  const ticketProxy = await startProxy(ticketEnv(up.url));
  try {
    // Create an API token upstream through the proxy (configured ticket).
    const made = await ticketProxy.app.request(
      `/api2/json/access/users/${encodeURIComponent(MOCK_USER)}/token/ci`,
      form({ privsep: "0" }),
    );
    assert.equal(made.status, 200, await made.clone().text());
    const token = (await made.json()).data;
    assert.equal(token["full-tokenid"], `${MOCK_USER}!ci`);

    const tokenProxy = await startProxy({
      HYPERVISOR_URL: up.url,
      HYPERVISOR_TOKEN_ID: token["full-tokenid"],
      HYPERVISOR_TOKEN_SECRET: token.value,
    });
    try {
      const r = await tokenProxy.app.request("/pve/cluster/resources?type=vm");
      assert.equal(r.status, 200);
      assert.ok(Array.isArray(await r.json()));
      assert.equal(tokenProxy.logins(), 0, "no ticket with token auth");
    } finally {
      tokenProxy.close();
    }
    const badToken = await startProxy({
      HYPERVISOR_URL: up.url,
      HYPERVISOR_TOKEN_ID: `${MOCK_USER}!ci`,
      HYPERVISOR_TOKEN_SECRET: "00000000-0000-0000-0000-000000000000",
    });
    try {
      const r = await badToken.app.request("/pve/nodes");
      assert.equal(r.status, 401);
      assert.ok((await r.json()).detail);
    } finally {
      badToken.close();
    }

    // A client logs in through the proxy and uses its own ticket, forwarded unchanged.
    const strict = await startProxy(ticketEnv(up.url), { requireClientAuth: true });
    try {
      const anon = await strict.app.request("/api2/json/nodes");
      assert.equal(anon.status, 401);
      await anon.body?.cancel();
      const login = await strict.app.request(
        "/api2/json/access/ticket",
        form({ username: MOCK_USER, password: MOCK_PASSWORD }),
      );
      assert.equal(login.status, 200);
      const t = (await login.json()).data;
      assert.ok(t.ticket && t.CSRFPreventionToken);
      const mine = await strict.app.request("/api2/json/nodes", {
        headers: { cookie: `PVEAuthCookie=${encodeURIComponent(t.ticket)}` },
      });
      assert.equal(mine.status, 200);
      await mine.body?.cancel();
      const wrong = await strict.app.request(
        "/pve/access/ticket",
        form({ username: MOCK_USER, password: "wrong" }),
      );
      assert.equal(wrong.status, 401);
      await wrong.body?.cancel();
      assert.equal(strict.logins(), 0, "the configured identity was never used");
    } finally {
      strict.close();
    }
  } finally {
    ticketProxy.close();
    await up.close();
  }
});

Deno.test({
  name: "real mode: TLS is verified; a private CA file is trusted; the off switch works",
  ignore: !HAS_OPENSSL || !HAS_SCHEMAS,
}, async () => {
  const certs = await makeCerts();
  const up = await startUpstream(certs);
  try {
    const trusted = await startProxy({ ...ticketEnv(up.url), HYPERVISOR_CA_FILE: certs.caFile });
    try {
      const r = await trusted.app.request("/pve/nodes");
      assert.equal(r.status, 200, await r.clone().text());
      assert.ok((await r.json()).length > 0);
    } finally {
      trusted.close();
    }
    const untrusted = await startProxy(ticketEnv(up.url));
    try {
      const r = await untrusted.app.request("/pve/nodes");
      assert.equal(r.status, 502);
      const body = await r.json();
      assert.match(body.detail, /certificate/i);
      assert.match(body.detail, /HYPERVISOR_CA_FILE/);
      const wire = await untrusted.app.request("/api2/json/nodes");
      assert.equal(wire.status, 502);
      assert.equal((await wire.json()).data, null);
    } finally {
      untrusted.close();
    }
    const insecure = await startProxy({ ...ticketEnv(up.url), HYPERVISOR_VERIFY_TLS: "false" });
    try {
      const r = await insecure.app.request("/api2/json/nodes");
      assert.equal(r.status, 200);
      assert.ok((await r.json()).data.length > 0);
      const w = await insecure.app.request(
        "/pve/nodes/pve1/qemu",
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ vmid: 4343, name: "tls-off" }),
        },
      );
      assert.equal(w.status, 200, await w.clone().text());
      assert.equal((await w.json()).vmid, 4343);
      // A streamed multipart upload goes through node:https as well.
      const upload = new FormData();
      upload.append("content", "iso");
      upload.append("filename", new File([new Uint8Array(150_000)], "tls-off.iso"));
      const u = await insecure.app.request("/api2/json/nodes/pve1/storage/local/upload", {
        method: "POST",
        body: upload,
      });
      assert.equal(u.status, 200, await u.clone().text());
      assert.match((await u.json()).data, /:imgcopy:/);
    } finally {
      insecure.close();
    }
  } finally {
    await up.close();
    await Deno.remove(certs.dir, { recursive: true });
  }
});

Deno.test(
  "real mode: timeouts answer 504, an unreachable upstream 503, in both formats",
  NEEDS_SCHEMAS,
  async () => {
    // An upstream that answers only once the test is done (the proxy's 100 ms timeout fires first).
    let release!: () => void;
    const released = new Promise<void>((resolve) => release = resolve);
    const slow = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async () => {
      await released;
      return Response.json({ data: { version: "9.2" } });
    });
    // An address whose every connection is closed at once (never a port freed for reuse).
    const dead = refusingListener();
    const deadPort = dead.port;
    const timeoutProxy = await startProxy(
      {
        HYPERVISOR_URL: `http://127.0.0.1:${slow.addr.port}`,
        HYPERVISOR_TOKEN_ID: "a@pam!t",
        HYPERVISOR_TOKEN_SECRET: "s",
      },
      { client: { timeoutMs: 100 } },
    );
    const deadProxy = await startProxy(ticketEnv(`http://127.0.0.1:${deadPort}`));
    try {
      const t = await timeoutProxy.app.request("/pve/version");
      assert.equal(t.status, 504);
      const tb = await t.json();
      assert.match(tb.detail, /timed out/);
      assert.deepEqual(tb.errors, []);
      const tw = await timeoutProxy.app.request("/api2/json/version");
      assert.equal(tw.status, 504);
      assert.equal((await tw.json()).data, null);

      const d = await deadProxy.app.request("/pve/nodes");
      assert.equal(d.status, 503);
      assert.match((await d.json()).detail, /unreachable/);
      const dw = await deadProxy.app.request("/api2/json/nodes");
      assert.equal(dw.status, 503);
      assert.equal((await dw.json()).data, null);
    } finally {
      timeoutProxy.close();
      deadProxy.close();
      dead.close();
      release();
      await slow.shutdown();
    }
  },
);

Deno.test(
  "real mode: the upstream host's own API-viewer schema can be loaded",
  NEEDS_SCHEMAS,
  async () => {
    const text = await Deno.readTextFile(
      SCHEMA_9111,
    );
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (req) =>
        new URL(req.url).pathname === UPSTREAM_SCHEMA_PATH
          ? new Response(`const apiSchema = ${text};`)
          : new Response("no", { status: 404 }),
    );
    const deps = await testDeps({
      HYPERVISOR_MODE: "real",
      HYPERVISOR_URL: `http://127.0.0.1:${server.addr.port}/api2/json`,
    });
    try {
      const loaded = await loadUpstreamSchema(deps);
      assert.ok(loaded);
      assert.equal(loaded.source, `http://127.0.0.1:${server.addr.port}${UPSTREAM_SCHEMA_PATH}`);
      assert.equal(loaded.tree.length, 6);
    } finally {
      deps.kv.close();
      await server.shutdown();
    }
  },
);

Deno.test(
  "real mode: createHypervisorApp with HYPERVISOR_MODE=real proxies, docs still served",
  NEEDS_SCHEMAS,
  async () => {
    const up = await startUpstream();
    const deps = await testDeps({
      HYPERVISOR_MODE: "real",
      HYPERVISOR_SCHEMA: SCHEMA_92
        .pathname,
      ...ticketEnv(up.url),
    });
    try {
      const app = await createHypervisorApp(deps);
      // By default a request without its own credentials never borrows the configured identity.
      const anonymous = await app.request("/api2/json/nodes");
      assert.equal(anonymous.status, 401);
      await anonymous.body?.cancel();
      assert.ok(!up.seen.includes("GET /api2/json/nodes"), "nothing was forwarded");
      // A client that logs in through the proxy gets the real cluster's ticket and uses it.
      const login = await app.request("/api2/json/access/ticket", {
        method: "POST",
        body: new URLSearchParams({ username: "root@pam", password: "bridgebox" }),
      });
      assert.equal(login.status, 200);
      const { data: ticket } = await login.json();
      const nodes = await app.request("/api2/json/nodes", {
        headers: { cookie: `PVEAuthCookie=${encodeURIComponent(ticket.ticket)}` },
      });
      assert.equal(nodes.status, 200);
      assert.ok((await nodes.json()).data.length > 0);
      assert.ok(up.seen.includes("GET /api2/json/nodes"), "answered by the upstream");
      // Versions are for callers the real cluster accepts (SECURITY.md).
      const signedIn = { cookie: `PVEAuthCookie=${encodeURIComponent(ticket.ticket)}` };
      const doc = await app.request("/pve/openapi.json", { headers: signedIn });
      assert.equal(doc.status, 200);
      assert.equal((await doc.json()).info.version, "9.2");
      const anonymousDoc = await (await app.request("/pve/openapi.json")).json();
      assert.equal(anonymousDoc.info.version, "unspecified");
      const versions = await (await app.request("/pve/versions", { headers: signedIn })).json();
      assert.equal(versions.active, "9.2");
      const anonymousVersions = await app.request("/pve/versions");
      assert.equal(anonymousVersions.status, 401);
      await anonymousVersions.body?.cancel();
      // The mock-only reset route does not exist in real mode.
      const reset = await app.request("/pve/mock/reset", { method: "POST" });
      assert.equal(reset.status, 501);
      await reset.body?.cancel();
    } finally {
      deps.kv.close();
      await up.close();
    }
  },
);

Deno.test(
  "real mode: HYPERVISOR_PROXY_SHARED_IDENTITY lets anonymous requests use the configured identity",
  NEEDS_SCHEMAS,
  async () => {
    const up = await startUpstream();
    const deps = await testDeps({
      HYPERVISOR_MODE: "real",
      HYPERVISOR_PROXY_SHARED_IDENTITY: "true",
      HYPERVISOR_SCHEMA: SCHEMA_92
        .pathname,
      ...ticketEnv(up.url),
    });
    try {
      const app = await createHypervisorApp(deps);
      const nodes = await app.request("/api2/json/nodes");
      assert.equal(nodes.status, 200);
      await nodes.body?.cancel();
    } finally {
      deps.kv.close();
      await up.close();
    }
  },
);

Deno.test(
  "real mode: an upstream answer of the wrong shape is proxied and logged",
  NEEDS_SCHEMAS,
  async () => {
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => Response.json({ data: { not: "a list" } }),
    );
    const proxy = await startProxy({
      HYPERVISOR_URL: `http://127.0.0.1:${server.addr.port}`,
      HYPERVISOR_TOKEN_ID: "a@pam!t",
      HYPERVISOR_TOKEN_SECRET: "s",
    });
    try {
      const r = await proxy.app.request("/api2/json/nodes");
      assert.equal(r.status, 200);
      assert.deepEqual(await r.json(), { data: { not: "a list" } });
      const warning = (proxy.deps.logger as MemoryLogger).at("warning")
        .find((l) => l.message.includes("does not match the schema"));
      assert.ok(warning);
      assert.equal(warning.mismatch, "expected array, got object");
      assert.equal(warning.operation, "GET /nodes");
    } finally {
      proxy.close();
      await server.shutdown();
    }
  },
);

Deno.test(
  "real mode: HEAD, oversized bodies and multipart uploads are handled like the mock",
  NEEDS_SCHEMAS,
  async () => {
    const up = await startUpstream();
    const proxy = await startProxy(ticketEnv(up.url));
    try {
      const head = await proxy.app.request("/api2/json/nodes", { method: "HEAD" });
      assert.equal(head.status, 200);
      assert.equal(await head.text(), "");
      assert.ok(up.seen.includes("GET /api2/json/nodes"));

      const before = up.seen.length;
      const big = await proxy.app.request(
        "/api2/json/nodes/pve1/qemu",
        form({ vmid: "4243", description: "x".repeat(2 * 1024 * 1024) }),
      );
      assert.equal(big.status, 413);
      assert.equal((await big.json()).data, null);
      assert.equal(up.seen.length, before, "an oversized body is not forwarded");

      // A file upload is streamed to the upstream with its multipart body intact.
      const body = new FormData();
      body.append("content", "iso");
      body.append("filename", new File([new Uint8Array(200_000).fill(7)], "proxied.iso"));
      const res = await proxy.app.request("/api2/json/nodes/pve1/storage/local/upload", {
        method: "POST",
        body,
      });
      const text = await res.text();
      assert.equal(res.status, 200, text);
      const upid = JSON.parse(text).data as string;
      assert.match(upid, /^UPID:pve1:.*:imgcopy:/);
      for (let i = 0;; i++) {
        const st = await proxy.app.request(
          `/pve/nodes/pve1/tasks/${encodeURIComponent(upid)}/status`,
        );
        if ((await st.json()).status === "stopped") break;
        assert.ok(i < 100, "task never finished");
        await new Promise((r) => setTimeout(r, 10));
      }
      const list = await proxy.app.request("/pve/nodes/pve1/storage/local/content?content=iso");
      const vols = await list.json();
      const vol = vols.find((v: { volid: string }) => v.volid === "local:iso/proxied.iso");
      assert.ok(vol, JSON.stringify(vols));
      assert.equal(vol.size, 200_000);
      // Path and query are still validated before anything is sent.
      const seen = up.seen.length;
      const bad = new FormData();
      bad.append("content", "iso");
      const rejected = await proxy.app.request(
        "/api2/json/nodes/pve1/storage/local/upload?bogus=1",
        { method: "POST", body: bad },
      );
      assert.equal(rejected.status, 400);
      await rejected.body?.cancel();
      assert.equal(up.seen.length, seen);
    } finally {
      proxy.close();
      await up.close();
    }
  },
);
