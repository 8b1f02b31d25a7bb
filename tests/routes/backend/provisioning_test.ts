/**
 * Micro-VM provisioning through the app's own host-agent mock: JSON and SSE end to end, each
 * failing step, the URL rules (nothing sent to a refused URL), and the host-agent token never
 * in an answer.
 */
import assert from "node:assert/strict";
import { createParser } from "eventsource-parser";
import { KEY } from "./_setup.ts";
import { wholeApp } from "./_whole_app.ts";

const AGENT_TOKEN = "agent-secret-token-3f9c2a";
const SHA_A = "a".repeat(64);
const SHA_B = "B".repeat(64);

function provisionBody(base: string, extra: Record<string, unknown> = {}) {
  return {
    host_agent_base_url: `${base}/host-agent`,
    host_agent_token: AGENT_TOKEN,
    host_id: 7,
    host_pool_id: 3,
    name: "edge-1",
    tenant_id: 12,
    inventory_microvm_id: 42,
    image: {
      name: "alpine-3.20",
      image_id: 5,
      kernel_image_url: "https://images.example/vmlinux",
      kernel_image_sha256: SHA_A,
      rootfs_image_url: "https://images.example/rootfs.ext4",
      rootfs_image_sha256: SHA_B,
    },
    ...extra,
  };
}

interface Frame {
  event: string;
  data: Record<string, unknown>;
}

async function frames(response: Response): Promise<Frame[]> {
  const out: Frame[] = [];
  const parser = createParser({
    onEvent: (e) => out.push({ event: e.event ?? "message", data: JSON.parse(e.data) }),
  });
  parser.feed(await response.text());
  return out;
}

/** The mock's token comes from the configuration, like any deployment's would. */
const env = { HOST_AGENT_MOCK_TOKEN: AGENT_TOKEN };

async function agent(h: Awaited<ReturnType<typeof wholeApp>>, path: string, json?: unknown) {
  const res = await h.call(`/host-agent${path}`, {
    method: json === undefined ? "GET" : "POST",
    json,
    key: null,
    headers: { authorization: `Bearer ${AGENT_TOKEN}` },
  });
  return { status: res.status, body: await res.json() };
}

Deno.test("provision (JSON): every step runs, the micro-VM exists and runs on the host-agent", async () => {
  await using h = await wholeApp({ env });
  const res = await h.call("/cloud/microvm/provision", {
    method: "POST",
    json: provisionBody(h.base),
    headers: { "X-Service-Actor": "alice" },
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.match(body.microvm_id, /^[0-9a-f-]{36}$/);
  assert.deepEqual({ ...body, microvm_id: "x" }, {
    ok: true,
    microvm_id: "x",
    instance_ref: "microvm:42",
    host_id: 7,
    host_pool_id: 3,
    image_id: 5,
    status: "running",
    guest_ip: body.guest_ip,
    detail: null,
  });
  assert.match(body.guest_ip, /^10\.200\./);

  // The five calls, in order, each with the bearer token.
  assert.deepEqual(
    h.outbound.map((o) => `${o.method} ${new URL(o.url).pathname}`),
    [
      "GET /host-agent/health",
      "GET /host-agent/capabilities",
      "POST /host-agent/assets/prepare",
      "POST /host-agent/microvms",
      `POST /host-agent/microvms/${body.microvm_id}/actions/start`,
    ],
  );
  assert.ok(h.outbound.every((o) => o.authorization === `Bearer ${AGENT_TOKEN}`));

  const listed = await agent(h, "/microvms");
  assert.equal(listed.body.microvms.length, 1);
  const vm = listed.body.microvms[0];
  assert.equal(vm.microvm_id, body.microvm_id);
  assert.equal(vm.status, "running");
  // Defaults of every omitted field, and the metadata the service adds.
  assert.deepEqual(
    [vm.vcpus, vm.memory_mib, vm.disk_mib, vm.network, vm.ssh_authorized_keys],
    [1, 512, 1024, { mode: "nat" }, []],
  );
  assert.deepEqual(vm.metadata, {
    actor: "alice",
    tenant_id: 12,
    inventory_microvm_id: 42,
    instance_ref: "microvm:42",
  });
  assert.match(vm.kernel_image_path, new RegExp(`/x86_64/${SHA_A}/vmlinux$`));
});

Deno.test("provision: the service's metadata keys win over the caller's; no instance_ref without an inventory id", async () => {
  await using h = await wholeApp({ env });
  const res = await h.call("/cloud/microvm/provision", {
    method: "POST",
    json: {
      ...provisionBody(h.base, { metadata: { actor: "mallory", purpose: "ci" } }),
      inventory_microvm_id: undefined,
    },
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal("instance_ref" in body, false);
  const vm = (await agent(h, `/microvms/${body.microvm_id}`)).body;
  assert.deepEqual(vm.metadata, {
    actor: "service",
    purpose: "ci",
    tenant_id: 12,
    inventory_microvm_id: null,
    instance_ref: null,
  });
});

Deno.test("provision: start_after_provision false creates a stopped micro-VM that can be started later", async () => {
  await using h = await wholeApp({ env });
  const microvm_id = crypto.randomUUID();
  const res = await h.call("/cloud/microvm/provision/stream", {
    method: "POST",
    json: provisionBody(h.base, { start_after_provision: false, microvm_id }),
  });
  const events = await frames(res);
  const start = events.find((f) => f.data.step === "start_microvm");
  assert.deepEqual(start?.data, {
    step: "start_microvm",
    label: "Starting the micro-VM",
    status: "skipped",
  });
  const complete = events.at(-1)!;
  assert.equal(complete.event, "complete");
  assert.equal(complete.data.status, "stopped");
  assert.equal(complete.data.microvm_id, microvm_id);
  assert.equal((await agent(h, `/microvms/${microvm_id}`)).body.status, "stopped");
  const started = await agent(h, `/microvms/${microvm_id}/actions/start`, {});
  assert.equal(started.body.status, "running");
});

Deno.test("provision (SSE over a socket): steps, terminal lines, then exactly one complete", async () => {
  await using h = await wholeApp({ env, socket: true });
  const res = await h.call("/cloud/microvm/provision/stream", {
    method: "POST",
    json: provisionBody(h.base),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  assert.equal(res.headers.get("cache-control"), "no-cache");
  const events = await frames(res);
  const steps = events.filter((f) => f.event === "provision_step").map((f) =>
    `${f.data.step}:${f.data.status}`
  );
  assert.deepEqual(steps, [
    "host_agent_health:started",
    "host_agent_health:done",
    "capabilities:started",
    "capabilities:done",
    "prepare_assets:started",
    "prepare_assets:done",
    "create_microvm:started",
    "create_microvm:done",
    "start_microvm:started",
    "start_microvm:done",
  ]);
  const lines = events.filter((f) => f.event === "terminal_line").map((f) => f.data.line);
  assert.ok(lines.some((l) => /^kernel: \/var\/lib\/host-agent\/images\//.test(String(l))));
  assert.ok(lines.some((l) => /^rootfs: .*rootfs\.ext4$/.test(String(l))));
  assert.equal(events.filter((f) => f.event === "complete").length, 1);
  assert.equal(events.at(-1)!.event, "complete");
  assert.equal(events.at(-1)!.data.ok, true);
  assert.equal(events.at(-1)!.data.instance_ref, "microvm:42");
});

for (
  const step of [
    "host_agent_health",
    "capabilities",
    "prepare_assets",
    "create_microvm",
    "start_microvm",
  ] as const
) {
  Deno.test(`provision: a failing ${step} is reported failed by name (JSON 502, SSE complete)`, async () => {
    await using h = await wholeApp({ env });
    await agent(h, "/mock/faults", { fail_step: step, fail_status: 503 });
    const res = await h.call("/cloud/microvm/provision", {
      method: "POST",
      json: provisionBody(h.base),
    });
    const body = await res.json();
    assert.equal(res.status, 502);
    assert.equal(body.ok, false);
    assert.equal(body.step, step);
    assert.match(body.error, /HTTP 503: injected fault/);
    assert.deepEqual(Object.keys(body).sort(), ["error", "ok", "step"]);

    const events = await frames(
      await h.call("/cloud/microvm/provision/stream", {
        method: "POST",
        json: provisionBody(h.base),
      }),
    );
    const failed = events.filter((f) => f.data.status === "failed");
    assert.deepEqual(failed.map((f) => f.data.step), [step]);
    // Nothing runs after the failed step.
    assert.equal(events.at(-2)!.data.step, step);
    const complete = events.at(-1)!;
    assert.equal(complete.event, "complete");
    assert.deepEqual(Object.keys(complete.data).sort(), ["error", "ok", "step"]);
    assert.deepEqual([complete.data.ok, complete.data.step], [false, step]);
    assert.match(String(complete.data.error), /HTTP 503: injected fault/);
  });
}

Deno.test("provision: a request over capacity or for an unsupported network fails the capabilities step", async () => {
  await using h = await wholeApp({ env });
  await agent(h, "/mock/capacity", { vcpus: 2, supports_bridge: false });
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ vcpus: 4 }, /4 vCPUs requested, 2 available/],
    [{ network: { mode: "bridge", bridge_name: "br0" } }, /does not support bridged/],
    [{ memory_mib: 10_000_000 }, /MiB memory requested/],
  ];
  for (const [extra, error] of cases) {
    const res = await h.call("/cloud/microvm/provision", {
      method: "POST",
      json: provisionBody(h.base, extra),
    });
    const body = await res.json();
    assert.equal(res.status, 502, JSON.stringify(extra));
    assert.equal(body.step, "capabilities");
    assert.match(body.error, error);
  }
  assert.equal((await agent(h, "/microvms")).body.microvms.length, 0);
});

Deno.test("provision: capacity is checked at its edges, each resource against its own free figure", async () => {
  await using h = await wholeApp({ env });
  await agent(h, "/mock/capacity", { vcpus: 2, memory_mib: 1024, disk_mib: 8192 });
  const provision = async (extra: Record<string, unknown>) => {
    const res = await h.call("/cloud/microvm/provision", {
      method: "POST",
      json: provisionBody(h.base, { name: `edge-${crypto.randomUUID().slice(0, 8)}`, ...extra }),
    });
    return { status: res.status, body: await res.json() };
  };
  // Exactly what is free fits; the disk asked for is more than the free memory, which is fine.
  const exact = await provision({ vcpus: 2, memory_mib: 1024, disk_mib: 4096 });
  assert.equal(exact.status, 200, JSON.stringify(exact.body));
  assert.equal(exact.body.status, "running");
  // It now holds every vCPU: one more is refused, naming the figures.
  const more = await provision({ vcpus: 1, memory_mib: 64, disk_mib: 64 });
  assert.equal(more.status, 502);
  assert.equal(more.body.step, "capabilities");
  assert.match(more.body.error, /1 vCPUs requested, 0 available/);
  // Room for two more vCPUs and 1024 MiB: the disk left (4096 MiB) is the limit now.
  await agent(h, "/mock/capacity", { vcpus: 4, memory_mib: 2048 });
  const disk = await provision({ vcpus: 1, memory_mib: 512, disk_mib: 4097 });
  assert.equal(disk.status, 502);
  assert.match(disk.body.error, /4097 MiB disk requested, 4096 MiB available/);
  const memory = await provision({ vcpus: 1, memory_mib: 1025, disk_mib: 64 });
  assert.equal(memory.status, 502);
  assert.match(memory.body.error, /1025 MiB memory requested, 1024 MiB available/);
  const fits = await provision({ vcpus: 2, memory_mib: 1024, disk_mib: 4096 });
  assert.equal(fits.status, 200, JSON.stringify(fits.body));
  const listed = await agent(h, "/microvms");
  assert.deepEqual(
    listed.body.microvms.map((vm: { vcpus: number; disk_mib: number }) => [vm.vcpus, vm.disk_mib]),
    [[2, 4096], [2, 4096]],
  );
});

Deno.test("provision: a wrong token fails the health step, and no token is in any answer", async () => {
  await using h = await wholeApp({ env });
  const wrong = "wrong-token-7d1e0b5a";
  const res = await h.call("/cloud/microvm/provision", {
    method: "POST",
    json: provisionBody(h.base, { host_agent_token: wrong }),
  });
  const text = await res.text();
  assert.equal(res.status, 502);
  assert.match(text, /HTTP 401.*check host_agent_token/);
  assert.ok(!text.includes(wrong));
  assert.ok(!text.includes(AGENT_TOKEN));
});

Deno.test("provision: a host-agent echoing the token back never gets it into an error or frame", async () => {
  const token = "echoed-secret-9a8b7c6d";
  // A hostile or careless agent: every answer repeats the Authorization header it received.
  const echo = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const path = new URL(req.url).pathname;
    const auth = req.headers.get("authorization") ?? "";
    if (path === "/health") return Response.json({ ok: true, status: `ready ${auth}` });
    return Response.json({ error: `denied for ${auth}` }, { status: 500 });
  });
  try {
    await using h = await wholeApp({ env, socket: true });
    const json = provisionBody(h.base, {
      host_agent_base_url: `http://127.0.0.1:${echo.addr.port}`,
      host_agent_token: token,
    });
    const plain = await h.call("/cloud/microvm/provision", { method: "POST", json });
    const plainText = await plain.text();
    assert.equal(plain.status, 502);
    assert.match(plainText, /denied for Bearer \*\*\*/);
    const stream = await h.call("/cloud/microvm/provision/stream", { method: "POST", json });
    const streamText = await stream.text();
    assert.match(streamText, /event: complete/);
    for (const text of [plainText, streamText]) assert.ok(!text.includes(token), text);
    assert.ok(!JSON.stringify(h.deps.logger.lines).includes(token));
  } finally {
    await echo.shutdown();
  }
});

Deno.test("provision: URL rules refuse before any call (422 on both routes, nothing sent)", async () => {
  await using h = await wholeApp({ env: { ...env, SERVICE_ALLOW_LOOPBACK_TARGETS: "false" } });
  const cases: [string, RegExp][] = [
    ["ftp://10.0.0.5/", /http or https/],
    ["http://user:pw@10.0.0.5/", /user name or password/],
    ["http://10.0.0.5/?x=1", /query/],
    ["http://10.0.0.5/#top", /fragment/],
    ["10.0.0.5:8080", /absolute http/],
    ["http://127.0.0.1:8800/host-agent", /loopback/],
    ["http://127.1/", /loopback/],
    ["http://[::1]:8080/", /loopback/],
    ["http://localhost:8080/", /loopback/],
    ["http://169.254.169.254/latest", /link-local or metadata/],
    ["http://[fe80::1]/", /link-local/],
    ["http://metadata.google.internal/", /metadata/],
    ["http://0.0.0.0:8080/", /unspecified/],
    ["http://[::ffff:127.0.0.1]/", /loopback/],
  ];
  for (const path of ["/cloud/microvm/provision", "/cloud/microvm/provision/stream"]) {
    for (const [url, reason] of cases) {
      const res = await h.call(path, {
        method: "POST",
        json: provisionBody(h.base, { host_agent_base_url: url }),
      });
      const body = await res.json();
      assert.equal(res.status, 422, `${path} ${url}`);
      assert.deepEqual(body.detail[0].loc, ["body", "host_agent_base_url"]);
      assert.match(body.detail[0].msg, reason, url);
      assert.ok(!JSON.stringify(body).includes(AGENT_TOKEN));
    }
  }
  assert.deepEqual(h.outbound, []);
});

Deno.test("provision: loopback targets are allowed when the configuration says so", async () => {
  await using h = await wholeApp({ env });
  const res = await h.call("/cloud/microvm/provision", {
    method: "POST",
    json: provisionBody(h.base, { host_agent_base_url: "http://localhost:8800/host-agent" }),
  });
  // localhost is not resolved here (in-process fetch): the request reached the mock.
  assert.equal(res.status, 200, await res.clone().text());
  await res.body?.cancel();
});

Deno.test("provision: field rules and unknown fields answer 422 in the backend's validation shape", async () => {
  await using h = await wholeApp({ env });
  const base = provisionBody(h.base);
  const cases: [Record<string, unknown>, (string | number)[]][] = [
    [{ ...base, surprise: 1 }, ["body"]],
    [{ ...base, image: { ...base.image, extra: true } }, ["body", "image"]],
    [{ ...base, image: { ...base.image, kernel_image_sha256: "abc" } }, [
      "body",
      "image",
      "kernel_image_sha256",
    ]],
    [{ ...base, memory_mib: 63 }, ["body", "memory_mib"]],
    [{ ...base, vcpus: 0 }, ["body", "vcpus"]],
    [{ ...base, microvm_id: "not-a-uuid" }, ["body", "microvm_id"]],
    [{ ...base, network: { mode: "overlay" } }, ["body", "network", "mode"]],
    [{ ...base, network: { mode: "nat", vlan: 4 } }, ["body", "network"]],
    [{ ...base, name: undefined }, ["body", "name"]],
    [{ ...base, image: undefined }, ["body", "image"]],
    [{ ...base, host_agent_base_url: undefined }, ["body", "host_agent_base_url"]],
  ];
  for (const [json, loc] of cases) {
    const res = await h.call("/cloud/microvm/provision", { method: "POST", json });
    const body = await res.json();
    assert.equal(res.status, 422, JSON.stringify(json));
    assert.deepEqual(body.detail[0].loc, loc, JSON.stringify(body));
    assert.equal(typeof body.detail[0].msg, "string");
  }
  assert.deepEqual(h.outbound, []);
});

Deno.test("provision: both routes need the API key", async () => {
  await using h = await wholeApp({ env });
  for (const path of ["/cloud/microvm/provision", "/cloud/microvm/provision/stream"]) {
    const res = await h.call(path, { method: "POST", json: provisionBody(h.base), key: null });
    assert.equal(res.status, 401);
    assert.deepEqual(await res.json(), {
      detail: "Invalid API key",
      hint: "Send the backend API key in the X-Service-API-Key header.",
    });
  }
  assert.deepEqual(h.outbound, []);
});

Deno.test("provision: the routes are in the backend's OpenAPI document", async () => {
  await using h = await wholeApp({ env });
  const doc = await (await h.call("/openapi.json", { key: null })).json();
  assert.ok(doc.paths["/cloud/microvm/provision"].post);
  assert.ok(
    doc.paths["/cloud/microvm/provision/stream"].post.responses["200"].content[
      "text/event-stream"
    ],
  );
  const request = doc.components.schemas.MicrovmProvisionRequest;
  assert.deepEqual(request.required.sort(), ["host_agent_base_url", "image", "name"]);
  assert.equal(request.properties.memory_mib.default, 512);
});

Deno.test("provision (SSE): a client that disconnects stops the run before the next call", async () => {
  await using h = await wholeApp({ env, socket: true });
  const ended = Promise.withResolvers<void>();
  const log = h.deps.logger.log.bind(h.deps.logger);
  h.deps.logger.log = (level, message, fields) => {
    log(level, message, fields);
    if (message === "micro-VM provisioning") ended.resolve();
  };
  await agent(h, "/mock/faults", { delay_ms: 300 });
  const before = h.outbound.length;
  const abort = new AbortController();
  const res = await fetch(`${h.base}/cloud/microvm/provision/stream`, {
    method: "POST",
    headers: { "X-Service-API-Key": KEY, "content-type": "application/json" },
    body: JSON.stringify(provisionBody(h.base)),
    signal: abort.signal,
  });
  const reader = res.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  assert.match(first, /event: provision_step[\s\S]*"host_agent_health"[\s\S]*"started"/);
  abort.abort();
  await reader.cancel().catch(() => {});
  await ended.promise;
  const calls = h.outbound.slice(before).map((o) => new URL(o.url).pathname);
  assert.deepEqual(calls, ["/host-agent/health"]);
  assert.equal((await agent(h, "/microvms")).body.microvms.length, 0);
});

Deno.test("provision: a host name that does not resolve fails the health step, nothing is sent", async () => {
  await using h = await wholeApp({ env: { ...env, SERVICE_ALLOW_LOOPBACK_TARGETS: "false" } });
  const json = provisionBody(h.base, { host_agent_base_url: "http://agent.invalid:8080" });
  const res = await h.call("/cloud/microvm/provision", { method: "POST", json });
  assert.equal(res.status, 502);
  assert.deepEqual(await res.json(), {
    ok: false,
    step: "host_agent_health",
    error: 'host "agent.invalid" does not resolve',
  });
  const events = await frames(
    await h.call("/cloud/microvm/provision/stream", { method: "POST", json }),
  );
  assert.deepEqual(events.map((f) => `${f.event}:${f.data.status ?? f.data.ok}`), [
    "provision_step:started",
    "provision_step:failed",
    "complete:false",
  ]);
  assert.deepEqual(h.outbound, []);
});
