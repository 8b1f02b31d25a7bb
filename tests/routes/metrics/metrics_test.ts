/**
 * `GET /metrics` on a real socket (docs/metrics.md): the exposition read by the Prometheus
 * client's own parser, the three access modes, and label cardinality that random paths cannot
 * grow.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { serveApp } from "../../e2e/_served_app.ts";
import { HAS_PROMETHEUS_PARSER, parseExposition, samples, valueOf } from "../../_prometheus.ts";
import { MAX_FAILURES } from "../../../domain/lockout.ts";
import { texts } from "../../../routes/metrics/mod.ts";
import { wholeApp } from "../backend/_whole_app.ts";
import { endpoint, guest } from "../backend/_verbs.ts";

const KEY = "metrics-test-backend-key-0123456789abcdef";
const TOKEN = "metrics-test-scrape-token-0123456789abcdef";
const ROOT = "metrics0123456789abcdef0123456789abcdef00";
const PARSER = { ignore: !HAS_PROMETHEUS_PARSER };

async function scrape(base: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/metrics`, { headers });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch { /* the exposition */ }
  return { status: res.status, headers: res.headers, text, body };
}

async function registerKey(base: string) {
  const res = await fetch(`${base}/auth/register-key`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ api_key: KEY }),
  });
  assert.equal(res.status, 201, await res.text());
}

/** Every metric name docs/metrics.md lists in its tables (first column, in backticks). */
async function documentedMetrics(): Promise<string[]> {
  const doc = await Deno.readTextFile(new URL("../../../docs/metrics.md", import.meta.url));
  return [...doc.matchAll(/^\| `([a-z]+_[a-z_]+)`/gm)].map((m) => m[1]).sort();
}

Deno.test({
  name: "metrics: the exposition parses with the Prometheus parser and holds what docs list",
  ...PARSER,
  async fn() {
    const served = await serveApp({ METRICS_ACCESS: "open", INVENTORY_BOOTSTRAP_TOKEN: ROOT }, {});
    try {
      for (let i = 0; i < 3; i++) await (await fetch(`${served.base}/health`)).body?.cancel();
      const page = await fetch(`${served.base}/api/dcim/devices/`, {
        headers: { authorization: `Token ${ROOT}` },
      });
      assert.equal(page.status, 200, await page.text());
      const got = await scrape(served.base);
      assert.equal(got.status, 200, got.text);
      assert.equal(got.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
      const families = await parseExposition(got.text);
      // The parser names counters without `_total`; the docs name what a query uses.
      const exposed = new Set(
        families.map((f) => f.type === "counter" ? `${f.name}_total` : f.name),
      );
      const documented = await documentedMetrics();
      assert.ok(documented.length >= 15, `docs/metrics.md lists ${documented.length} metrics`);
      assert.deepEqual(documented.filter((name) => !exposed.has(name)), [], "documented, absent");
      assert.deepEqual(
        [...exposed].filter((name) => !documented.includes(name)),
        [],
        "undocumented",
      );
      // Requests are counted by route pattern, with their latency.
      const health = { surface: "backend", method: "GET", route: "/health", status: "200" };
      assert.equal(valueOf(families, "bridgebox_http_requests_total", health), 3);
      assert.equal(
        valueOf(families, "bridgebox_http_request_duration_seconds_count", {
          surface: "backend",
          route: "/health",
        }),
        3,
      );
      assert.equal(
        valueOf(families, "bridgebox_http_requests_total", { surface: "plugin", status: "200" }),
        1,
      );
      // Every KV call of those requests was timed.
      assert.ok(valueOf(families, "bridgebox_kv_operation_duration_seconds_count") > 0);
      assert.equal(valueOf(families, "bridgebox_open_streams", { kind: "sse" }), 0);
      // The V8 heap in use (the sync's memory, docs/sync.md "Memory"): more than nothing, less
      // than the whole process.
      const heap = valueOf(families, "process_heap_used_bytes");
      assert.ok(heap > 1024 ** 2 && heap < valueOf(families, "process_resident_memory_bytes"));
    } finally {
      await served.close();
    }
  },
});

Deno.test("metrics: METRICS_ACCESS=key (the default) wants the scrape token or the backend key", async () => {
  const served = await serveApp({ METRICS_TOKEN: TOKEN }, {});
  try {
    await registerKey(served.base);
    const none = await scrape(served.base);
    assert.equal(none.status, 401);
    assert.deepEqual(none.body, { detail: texts.missing });
    assert.equal(none.headers.get("www-authenticate"), 'Bearer realm="metrics"');
    const accepted: Record<string, string>[] = [
      { authorization: `Bearer ${TOKEN}` },
      { "x-service-api-key": KEY },
    ];
    for (const headers of accepted) {
      const ok = await scrape(served.base, headers);
      assert.equal(ok.status, 200, ok.text);
      assert.match(ok.text, /^# HELP bridgebox_/m);
    }
    const wrongBearer = await scrape(served.base, { authorization: `Bearer ${TOKEN}x` });
    assert.equal(wrongBearer.status, 401);
    assert.deepEqual(wrongBearer.body, { detail: texts.wrong });
    const wrongKey = await scrape(served.base, { "x-service-api-key": `${KEY}x` });
    assert.equal(wrongKey.status, 401);
    assert.deepEqual(wrongKey.body, { detail: texts.wrong });
    // A scraper cannot guess its way in: the fifth failure locks the address out.
    for (let i = 2; i < MAX_FAILURES; i++) {
      assert.equal((await scrape(served.base, { authorization: "Bearer guess" })).status, 401);
    }
    const locked = await scrape(served.base, { authorization: `Bearer ${TOKEN}` });
    assert.equal(locked.status, 429);
    assert.deepEqual(locked.body, { detail: texts.locked });
    assert.ok(Number(locked.headers.get("retry-after")) > 0);
    // …and the failures and the lock are what the metrics say.
    const exposition = await served.deps.metrics!.exposition();
    assert.match(exposition.body, /^bridgebox_login_failures_total\{surface="metrics"\} 5$/m);
    assert.match(exposition.body, /^bridgebox_login_lockouts_total\{surface="metrics"\} 1$/m);
  } finally {
    await served.close();
  }
});

Deno.test("metrics: METRICS_ACCESS=off leaves /metrics an unknown path of the backend", async () => {
  const served = await serveApp({ METRICS_ACCESS: "off" }, {});
  try {
    await registerKey(served.base);
    const anonymous = await scrape(served.base);
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.detail, "Invalid API key");
    const keyed = await scrape(served.base, { "x-service-api-key": KEY });
    assert.equal(keyed.status, 404);
    assert.deepEqual(keyed.body, { detail: "Not Found" });
  } finally {
    await served.close();
  }
});

Deno.test("metrics: METRICS_ACCESS=open answers anyone, and only GET/HEAD", async () => {
  const served = await serveApp({ METRICS_ACCESS: "open" }, {});
  try {
    const got = await scrape(served.base);
    assert.equal(got.status, 200);
    assert.match(got.text, /^# TYPE bridgebox_http_requests_total counter$/m);
    const head = await fetch(`${served.base}/metrics`, { method: "HEAD" });
    assert.equal(head.status, 200);
    const post = await fetch(`${served.base}/metrics`, { method: "POST" });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get("allow"), "GET, HEAD");
    assert.deepEqual(await post.json(), { detail: 'Method "POST" not allowed.' });
  } finally {
    await served.close();
  }
});

Deno.test({
  name: "metrics: random unknown paths on every surface add no series (labels are patterns)",
  ...PARSER,
  async fn() {
    const served = await serveApp({ METRICS_ACCESS: "open", INVENTORY_BOOTSTRAP_TOKEN: ROOT }, {});
    try {
      const prefixes = ["/", "/api/", "/api/dcim/", "/api2/json/", "/pve/", "/ui/", "/host-agent/"];
      const methods = ["GET", "POST", "DELETE", "PROPFIND"];
      const round = async (count: number) => {
        for (let i = 0; i < count; i++) {
          const marker = `zz${crypto.randomUUID().slice(0, 8)}`;
          const path = `${prefixes[i % prefixes.length]}${marker}/${i}`;
          const res = await fetch(`${served.base}${path}?q=${marker}`, {
            method: methods[i % methods.length],
            headers: { authorization: `Token ${ROOT}` },
          });
          await res.body?.cancel();
        }
        return parseExposition((await scrape(served.base)).text);
      };
      const series = (families: Awaited<ReturnType<typeof round>>) =>
        samples(families).filter((s) => s.name.startsWith("bridgebox_http_")).map((s) =>
          JSON.stringify([s.name, s.labels])
        ).sort();
      await scrape(served.base); // the scrape's own series exist from here on
      const first = series(await round(28));
      const after = await round(400);
      // Nothing a client sent became a label value…
      const leaked = samples(after).filter((s) =>
        Object.values(s.labels).some((v) => v.includes("zz"))
      );
      // (Compared by count, with a few examples: a diff of thousands of series takes minutes.)
      assert.equal(leaked.length, 0, JSON.stringify(leaked.slice(0, 3)));
      // …and 400 more random requests (the same surfaces and methods) made no new series.
      const added = series(after).filter((s) => !first.includes(s));
      assert.equal(added.length, 0, added.slice(0, 3).join("\n"));
      assert.ok(
        valueOf(after, "bridgebox_http_requests_total", { route: "(unmatched)" }) > 0,
        "unknown paths are counted as (unmatched)",
      );
    } finally {
      await served.close();
    }
  },
});

Deno.test({
  name: "metrics: inventory models and hypervisor paths are counted by their registered pattern",
  ...PARSER,
  async fn() {
    const served = await serveApp({ METRICS_ACCESS: "open", INVENTORY_BOOTSTRAP_TOKEN: ROOT }, {});
    try {
      const inventory = { authorization: `Token ${ROOT}` };
      for (const path of ["/api/dcim/devices/", "/api/dcim/devices/41/", "/api/dcim/devices/42/"]) {
        await (await fetch(served.base + path, { headers: inventory })).body?.cancel();
      }
      for (const vmid of [100, 101]) {
        const path = `/api2/json/nodes/pve1/qemu/${vmid}/status/current`;
        await (await fetch(served.base + path)).body?.cancel();
      }
      const families = await parseExposition((await scrape(served.base)).text);
      const count = (labels: Record<string, string>) =>
        valueOf(families, "bridgebox_http_requests_total", labels);
      assert.equal(count({ route: "/api/dcim/devices/", status: "200" }), 1);
      assert.equal(count({ route: "/api/dcim/devices/:id/", status: "404" }), 2);
      assert.equal(
        count({
          surface: "hypervisor",
          route: "/api2/json/nodes/{node}/qemu/{vmid}/status/current",
        }),
        2,
      );
    } finally {
      await served.close();
    }
  },
});

Deno.test({
  name: "metrics: verb outcomes are counted by verb and result (routes/backend/verbs.ts)",
  ...PARSER,
  async fn() {
    await using h = await wholeApp({ socket: true, env: { METRICS_ACCESS: "open" } });
    const id = await endpoint(h);
    const g = await guest(h, "qemu", "stopped");
    const start = () =>
      h.call(`/hypervisor/qemu/${g.vmid}/start?endpoint_id=${id}`, { method: "POST" });
    const first = await start();
    assert.equal((await first.json()).result, "ok");
    const second = await start();
    assert.equal((await second.json()).result, "already_running");
    const missing = await h.call(`/hypervisor/qemu/99999/stop?endpoint_id=${id}`, {
      method: "POST",
    });
    assert.equal(missing.status, 404, await missing.text());
    const families = await parseExposition((await scrape(h.base)).text);
    const verbs = (labels: Record<string, string>) =>
      valueOf(families, "bridgebox_verbs_total", labels);
    assert.equal(verbs({ verb: "start", outcome: "ok" }), 1);
    assert.equal(verbs({ verb: "start", outcome: "already_running" }), 1);
    assert.equal(verbs({ verb: "stop", outcome: "guest_not_found" }), 1);
    assert.equal(verbs({}), 3);
  },
});

Deno.test("metrics: failed backend keys, hypervisor logins and their lockouts by surface", async () => {
  const served = await serveApp({ METRICS_ACCESS: "open" }, {});
  try {
    await registerKey(served.base);
    for (let i = 0; i < MAX_FAILURES; i++) {
      const res = await fetch(`${served.base}/health/nothing`, {
        headers: { "x-service-api-key": `${KEY}-wrong` },
      });
      await res.body?.cancel();
    }
    for (let i = 0; i < MAX_FAILURES; i++) {
      const res = await fetch(`${served.base}/api2/json/access/ticket`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "username=root@pam&password=wrong",
      });
      await res.body?.cancel();
    }
    const body = (await scrape(served.base)).text;
    for (const surface of ["backend", "hypervisor"]) {
      assert.match(
        body,
        new RegExp(
          `^bridgebox_login_failures_total\\{surface="${surface}"\\} ${MAX_FAILURES}$`,
          "m",
        ),
      );
      assert.match(
        body,
        new RegExp(`^bridgebox_login_lockouts_total\\{surface="${surface}"\\} 1$`, "m"),
      );
    }
  } finally {
    await served.close();
  }
});
