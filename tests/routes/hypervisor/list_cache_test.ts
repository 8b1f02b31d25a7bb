/**
 * The hypervisor's big lists served from the reply cache (routes/hypervisor/wire.ts): the whole app
 * (app.ts) on a real socket, the built-in catalogue, 1,000 guests on one node, the clock held so
 * every request hits one cache entry. Guards issue 25's list-vs-static row by counting, not
 * timing: a request of a cached list builds no Response body (each `new Response(bytes)` copies
 * the bytes) and makes no KV call, and the shared body reaches every client intact. Also the
 * wire format's booleans (0/1), which no other test held.
 */
import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import { request as httpRequest } from "node:http";
import { gunzipSync } from "node:zlib";
import { createApp } from "../../../app.ts";
import { formatReply } from "../../../routes/hypervisor/wire.ts";
import { testDeps } from "../../_helpers.ts";
import { noopMetrics } from "../../../infra/metrics.ts";

const LIST = "/api2/json/nodes/pve1/qemu";

/** A server on 127.0.0.1:0 with the whole app (every surface), 1,000 guests, a held clock. */
async function listServer() {
  const clock = { now: Date.UTC(2026, 2, 1, 12, 0, 0) };
  // The KV calls made while answering a request (storage/kv/timed_kv.ts reports each call to the
  // metrics); the app's timers (the job poller) run outside any request and are not counted.
  const inRequest = new AsyncLocalStorage<true>();
  const kv = { calls: 0 };
  const kvOperation = () => {
    if (inRequest.getStore()) kv.calls++;
  };
  const deps = await testDeps(
    { HYPERVISOR_MOCK_SEED: "nodes=1,vms=1000,cts=0,storages=2" },
    { now: () => clock.now, metrics: { ...noopMetrics, kvOperation } },
  );
  const app = await createApp(deps);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (request, info) => inRequest.run(true, () => app.fetch(request, info)),
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  const login = await fetch(`${base}/api2/json/access/ticket`, {
    method: "POST",
    body: new URLSearchParams({ username: "root@pam", password: "bridgebox" }),
  });
  assert.equal(login.status, 200);
  const { data } = await login.json();
  const made = await fetch(`${base}/api2/json/access/users/root@pam/token/lists`, {
    method: "POST",
    headers: {
      cookie: `PVEAuthCookie=${encodeURIComponent(data.ticket)}`,
      CSRFPreventionToken: data.CSRFPreventionToken,
    },
    body: new URLSearchParams({ privsep: "0" }),
  });
  assert.equal(made.status, 200);
  const token = (await made.json()).data.value;
  return {
    port: server.addr.port,
    kv,
    authorization: `PVEAPIToken=root@pam!lists=${token}`,
    async close() {
      await server.shutdown();
      deps.kv.close();
    },
  };
}

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Uint8Array;
}

/** One GET as the bytes on the wire (node:http does not decompress, as fetch would). */
function rawGet(port: number, path: string, headers: Record<string, string>): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, headers }, (res) => {
      const chunks: Uint8Array[] = [];
      res.on("data", (chunk: Uint8Array) => chunks.push(chunk));
      res.on("end", () => {
        const body = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
        let at = 0;
        for (const c of chunks) {
          body.set(c, at);
          at += c.length;
        }
        resolve({ status: res.statusCode!, headers: res.headers, body });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/**
 * Every `new Response(body)` made while `run` runs, whoever makes it (our handlers, Hono, a
 * middleware): the global constructor behind a Proxy, so `instanceof Response` still holds.
 */
async function countBodies(run: () => Promise<void>): Promise<{ bodies: number; bytes: number }> {
  const original = globalThis.Response;
  const seen = { bodies: 0, bytes: 0 };
  globalThis.Response = new Proxy(original, {
    construct(target, args, newTarget) {
      const body = args[0];
      if (body !== null && body !== undefined) {
        seen.bodies++;
        seen.bytes += typeof body === "string"
          ? body.length
          : body instanceof Uint8Array || body instanceof ArrayBuffer
          ? body.byteLength
          : 0;
      }
      return Reflect.construct(target, args, newTarget);
    },
  });
  try {
    await run();
  } finally {
    globalThis.Response = original;
  }
  return seen;
}

Deno.test("hypervisor list cache: a cached 1,000-guest list builds no body and reads no KV per request", async () => {
  const s = await listServer();
  try {
    const gzip = { authorization: s.authorization, "accept-encoding": "gzip" };
    const identity = { authorization: s.authorization };
    // The first request of each encoding builds the entry's body once.
    const first = await rawGet(s.port, LIST, gzip);
    const firstPlain = await rawGet(s.port, LIST, identity);
    assert.equal(first.headers["content-encoding"], "gzip");
    assert.equal(firstPlain.headers["content-encoding"], undefined);
    const repeats = 20;
    const served: Raw[] = [];
    const kvBefore = s.kv.calls;
    const seen = await countBodies(async () => {
      for (let i = 0; i < repeats; i++) {
        served.push(await rawGet(s.port, LIST, gzip));
        served.push(await rawGet(s.port, LIST, identity));
      }
    });
    // Each body built per request was a copy of the list (37 KB gzip, 277 KB plain).
    assert.deepEqual(seen, { bodies: 0, bytes: 0 }, `bodies built for ${2 * repeats} requests`);
    // The mock's login lives in memory: a list request waits on no KV read.
    assert.equal(s.kv.calls - kvBefore, 0, `KV calls for ${2 * repeats} requests`);
    for (const [i, res] of served.entries()) {
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, i % 2 === 0 ? first.body : firstPlain.body);
    }
  } finally {
    await s.close();
  }
});

Deno.test("hypervisor list cache: concurrent clients all get the shared body intact", async () => {
  const s = await listServer();
  try {
    const gzip = { authorization: s.authorization, "accept-encoding": "gzip" };
    const identity = { authorization: s.authorization };
    const plain = await rawGet(s.port, LIST, identity);
    const list = JSON.parse(new TextDecoder().decode(plain.body));
    assert.equal(list.data.length, 1000);
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(
        Array.from({ length: 16 }, (_, i) => rawGet(s.port, LIST, i % 2 ? identity : gzip)),
      );
      for (const [i, res] of answers.entries()) {
        assert.equal(res.status, 200);
        assert.equal(Number(res.headers["content-length"]), res.body.length);
        if (i % 2) {
          assert.deepEqual(res.body, plain.body);
        } else {
          assert.equal(res.headers["content-encoding"], "gzip");
          assert.equal(res.headers.vary, "Accept-Encoding");
          assert.deepEqual(new Uint8Array(gunzipSync(res.body)), plain.body);
        }
      }
    }
  } finally {
    await s.close();
  }
});

Deno.test("hypervisor wire format: booleans go out as 0/1 at any depth, on /api2/json only", () => {
  const deep = { a: [{ b: { c: [{ d: { e: { f: { g: true } } } }] } }] };
  const data = [{ vmid: 100, template: false, agent: true, name: "true", deep }];
  const result = {
    ok: true as const,
    status: 200,
    data,
    total: 1,
    template: "/nodes/{node}/qemu",
    operation: { method: "GET" as const },
  };
  const api2 = JSON.parse(formatReply("api2", "GET", result).body);
  assert.deepEqual(api2.data, [{
    vmid: 100,
    template: 0,
    agent: 1,
    name: "true",
    deep: { a: [{ b: { c: [{ d: { e: { f: { g: 1 } } } }] } }] },
  }]);
  // The bare mount answers JSON as it is.
  assert.deepEqual(JSON.parse(formatReply("pve", "GET", result).body), data);
});
