/**
 * Sync routes through HTTP with the whole app dispatched in-process (no socket): the read
 * routes, the in-process sync path, the OpenAPI document, undecryptable credentials and the
 * keepalive comment.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { Hono } from "hono";
import { wholeApp } from "./_whole_app.ts";
import { testDeps } from "../../_helpers.ts";
import { createBackendServices } from "../../../routes/backend/mod.ts";
import { syncRoutes } from "../../../routes/backend/sync.ts";
import { STAGES } from "../../../domain/sync/runner.ts";

const ROOT = "routes0sync0123456789abcdef0123456789abcd";

async function wired(env: Record<string, string> = {}) {
  const app = await wholeApp({ env: { INVENTORY_BOOTSTRAP_TOKEN: ROOT, ...env } });
  const host = new URL(app.base);
  const post = async (path: string, json: unknown) => {
    const r = await app.call(path, { method: "POST", json });
    assert.equal(r.status, 201, `${path}: ${await r.clone().text()}`);
    return await r.json();
  };
  await post("/inventory/endpoint", {
    name: "self",
    ip: host.hostname,
    port: Number(host.port || 80),
    use_https: false,
    token_version: "v1",
    token: ROOT,
  });
  const lab = await post("/hypervisor/endpoints", {
    name: "lab",
    ip: host.hostname,
    port: Number(host.port || 80),
    use_https: false,
    username: "root@pam",
    password: "bridgebox",
  });
  return { app, lab: lab.id as number, post, host };
}

Deno.test("read routes: nodes, cluster status, resources and version from the stored copies", async () => {
  const { app, lab, post, host } = await wired();
  await using _ = app;
  const nodes = await (await app.call("/hypervisor/nodes/")).json();
  assert.ok(nodes.length >= 1);
  assert.ok(nodes.every((n: any) => n.endpoint_id === lab && n.endpoint_name === "lab" && n.node));
  const status = await (await app.call(`/hypervisor/cluster/status?endpoint_id=${lab}`)).json();
  assert.ok(status.some((s: any) => s.type === "cluster"));
  const vms = await (await app.call("/hypervisor/cluster/resources?type=vm")).json();
  assert.ok(vms.length > 0 && vms.every((v: any) => v.type === "qemu" || v.type === "lxc"));
  const version = await (await app.call(`/hypervisor/version?endpoint_id=${lab}`)).json();
  assert.equal(version.length, 1);
  assert.ok(version[0].version);

  const unknown = await app.call("/hypervisor/nodes/?endpoint_id=999");
  assert.equal(unknown.status, 404);
  assert.deepEqual(await unknown.json(), { detail: "Hypervisor endpoint not found." });
  const off = await post("/hypervisor/endpoints", {
    name: "off",
    ip: host.hostname,
    port: 1,
    use_https: false,
    password: "x",
    enabled: false,
  });
  const disabled = await app.call(`/hypervisor/nodes/?endpoint_id=${off.id}`);
  assert.equal(disabled.status, 409);
  // Disabled endpoints are left out of the all-endpoints answer, not an error.
  assert.equal((await app.call("/hypervisor/nodes/")).status, 200);
  const wrong = await post("/hypervisor/endpoints", {
    name: "wrong",
    ip: host.hostname,
    port: Number(host.port || 80),
    use_https: false,
    password: "not-the-password",
  });
  const rejected = await app.call(`/hypervisor/version?endpoint_id=${wrong.id}`);
  assert.equal(rejected.status, 502);
  const body = await rejected.json();
  assert.match(body.detail, /access\/ticket/);
  assert.ok(!JSON.stringify(body).includes("not-the-password"));
});

Deno.test("sync in-process: a full update through the app's own fetch, then quiet", async () => {
  const { app } = await wired();
  await using _ = app;
  const first = await app.call("/full-update");
  const body = await first.json();
  assert.equal(first.status, 200, JSON.stringify(body));
  assert.equal(body.ok, true);
  assert.deepEqual(body.stages.map((s: any) => s.step), STAGES.map((s) => s.type));
  assert.ok(body.result.created > 0);
  const again = await (await app.call("/full-update")).json();
  assert.equal(again.result.created + again.result.updated + again.result.deleted, 0);
});

Deno.test("sync: a misspelt scope parameter is a 422 naming it, never a run over every endpoint", async () => {
  const { app } = await wired();
  await using _ = app;
  for (const path of ["/full-update", "/full-update/stream", "/dcim/devices/create/stream"]) {
    const res = await app.call(`${path}?hypervisor_endpoint_id=1`);
    const body = await res.json();
    assert.equal(res.status, 422, `${path}: ${JSON.stringify(body)}`);
    assert.match(JSON.stringify(body.detail), /hypervisor_endpoint_id/, path);
  }
});

Deno.test("sync: a secret that no longer decrypts is a 409 on JSON and a reasoned error frame on SSE", async () => {
  const { app, lab } = await wired({
    SERVICE_ENCRYPTION_KEY: "the key the secrets were sealed with",
  });
  await using _ = app;
  // The same KV opened under another key: the stored secrets cannot be opened any more.
  const services = createBackendServices({
    ...app.deps,
    config: { ...app.deps.config, encryptionKey: "a different key" },
  });
  const routes = new Hono().route("/", syncRoutes(services));
  const json = await routes.request("/dcim/devices/create");
  assert.equal(json.status, 409);
  const body = await json.json();
  assert.equal(body.reason, "credential_undecryptable");
  assert.match(body.detail, /cannot be decrypted/);
  const sse =
    await (await routes.request(`/dcim/devices/create/stream?hypervisor_endpoint_ids=${lab}`))
      .text();
  assert.match(sse, /event: error\ndata: .*"reason":"credential_undecryptable"/);
  assert.equal(sse.match(/event: complete/g)?.length, 1);
});

Deno.test("sync: a quiet stream gets ': keepalive' and still ends with one complete", async () => {
  const deps = await testDeps({ SERVICE_ALLOW_LOOPBACK_TARGETS: "true" });
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  let sawKeepalive!: () => void;
  const keepaliveSeen = new Promise<void>((r) => sawKeepalive = r);
  // The inventory never answers until the keepalive went out.
  deps.fetch = async () => {
    await released;
    return new Response(JSON.stringify({ detail: "Invalid token" }), {
      status: 403,
      headers: { "content-type": "application/json" },
    });
  };
  const services = createBackendServices(deps);
  await services.inventoryEndpoints.create({
    name: "inv",
    ip: "192.0.2.1",
    port: 443,
    use_https: false,
    verify_ssl: true,
    token_version: "v1",
    token: "plain-token",
    token_key: null,
    key_source: "none",
  });
  await services.hypervisorEndpoints.create({
    name: "lab",
    ip: "192.0.2.2",
    port: 8006,
    use_https: false,
    verify_ssl: false,
    username: "root@pam",
    password: "x",
    token_name: null,
    token_value: null,
    allow_writes: false,
    enabled: true,
    timeout: 5,
    key_source: "none",
  });
  const routes = new Hono().route("/", syncRoutes(services, { keepaliveMs: 30 }));
  const response = await routes.request("/dcim/devices/create/stream");
  assert.equal(response.headers.get("content-type"), "text/event-stream");
  assert.equal(response.headers.get("cache-control"), "no-cache");
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (true) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
    if (text.includes(": keepalive\n\n")) {
      sawKeepalive();
      release();
    }
  }
  await keepaliveSeen;
  assert.ok(text.indexOf(": keepalive") < text.indexOf("event: error"));
  assert.equal(text.match(/event: complete/g)?.length, 1);
  assert.ok(text.trimEnd().split("\n\n").at(-1)!.startsWith("event: complete"));
  deps.kv.close();
});

Deno.test("openapi: every stage path, /full-update and the read routes are documented", async () => {
  const { app } = await wired();
  await using _ = app;
  const doc = await (await app.call("/openapi.json", { key: null })).json();
  for (const stage of STAGES) {
    assert.ok(doc.paths[stage.path]?.get, stage.path);
    assert.ok(doc.paths[`${stage.path}/stream`]?.get, `${stage.path}/stream`);
  }
  for (
    const path of [
      "/full-update",
      "/full-update/stream",
      "/hypervisor/nodes/",
      "/hypervisor/cluster/status",
      "/hypervisor/cluster/resources",
      "/hypervisor/version",
    ]
  ) assert.ok(doc.paths[path]?.get, path);
  assert.ok(doc.paths["/full-update/stream"].get.responses["200"].content["text/event-stream"]);
});
