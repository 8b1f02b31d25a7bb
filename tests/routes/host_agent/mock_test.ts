/**
 * The host-agent mock on its own: state across calls, its bearer token, fault injection,
 * JSON on every error, its own OpenAPI document and docs page.
 */
import assert from "node:assert/strict";
import { createHostAgentApp } from "../../../routes/host_agent/mod.ts";
import { testDeps } from "../../_helpers.ts";

const TOKEN = "mock-agent-token-1234";
const SHA = "c".repeat(64);
const IMAGE = {
  name: "img",
  kernel_image_url: "https://x/k",
  kernel_image_sha256: SHA,
  rootfs_image_url: "https://x/r",
  rootfs_image_sha256: SHA,
};

async function agent(env: Record<string, string> = { HOST_AGENT_MOCK_TOKEN: TOKEN }) {
  const deps = await testDeps({ SERVICE_SURFACES: "host-agent", ...env });
  const app = await createHostAgentApp(deps);
  const call = async (
    method: string,
    path: string,
    json?: unknown,
    headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` },
  ) => {
    const res = await app.request(path, {
      method,
      headers: {
        ...headers,
        ...(json === undefined ? {} : { "content-type": "application/json" }),
      },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch { /* HTML docs page */ }
    return { status: res.status, body: body as Record<string, unknown>, headers: res.headers };
  };
  /** A body sent as given, with exactly these headers. */
  const raw = async (
    method: string,
    path: string,
    body: BodyInit,
    headers: Record<string, string>,
  ) => {
    const res = await app.request(path, { method, headers, body });
    const text = await res.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(text);
    } catch { /* asserted by the caller */ }
    return { status: res.status, body: parsed, type: res.headers.get("content-type") ?? "" };
  };
  return { call, raw, [Symbol.dispose]: () => deps.kv.close() };
}

Deno.test("host-agent mock: created micro-VMs are listed and can be started and stopped", async () => {
  {
    using a = await agent();
    const assets = await a.call("POST", "/assets/prepare", { image: IMAGE });
    assert.equal(assets.status, 200);
    const vm = {
      microvm_id: "vm-1",
      name: "one",
      vcpus: 2,
      memory_mib: 256,
      disk_mib: 100,
      ...assets.body,
      network: { mode: "nat" },
    };
    const created = await a.call("POST", "/microvms", vm);
    assert.equal(created.status, 201);
    assert.equal(created.body.status, "stopped");
    assert.equal((await a.call("POST", "/microvms", vm)).status, 409);
    const listed = await a.call("GET", "/microvms");
    assert.deepEqual((listed.body.microvms as { microvm_id: string }[]).map((m) => m.microvm_id), [
      "vm-1",
    ]);
    const before = (await a.call("GET", "/capabilities")).body;
    const started = await a.call("POST", "/microvms/vm-1/actions/start");
    assert.equal(started.body.status, "running");
    const after = (await a.call("GET", "/capabilities")).body;
    assert.equal(Number(before.available_vcpus) - Number(after.available_vcpus), 2);
    assert.equal((await a.call("POST", "/microvms/vm-1/actions/stop")).body.status, "stopped");
    assert.equal((await a.call("POST", "/microvms/nope/actions/start")).status, 404);
    const unprepared = await a.call("POST", "/microvms", {
      ...vm,
      microvm_id: "vm-2",
      kernel_image_path: "/etc/passwd",
    });
    assert.equal(unprepared.status, 409);
    assert.match(String(unprepared.body.error), /was not prepared/);
    assert.equal((await a.call("DELETE", "/microvms/vm-1")).status, 204);
    assert.equal((await a.call("GET", "/microvms/vm-1")).status, 404);
  }
});

Deno.test("host-agent mock: the configured bearer token is required", async () => {
  {
    using a = await agent();
    const attempts: Record<string, string>[] = [{}, { authorization: "Bearer wrong" }, {
      authorization: TOKEN,
    }];
    for (const headers of attempts) {
      const res = await a.call("GET", "/health", undefined, headers);
      assert.equal(res.status, 401);
      assert.deepEqual(res.body, { error: "Missing or invalid bearer token" });
      assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer/);
    }
    assert.equal((await a.call("GET", "/health")).status, 200);
    // The docs stay readable without the token.
    assert.equal((await a.call("GET", "/openapi.json", undefined, {})).status, 200);
    assert.equal((await a.call("GET", "/docs", undefined, {})).status, 200);
  }
});

Deno.test("host-agent mock: without HOST_AGENT_MOCK_TOKEN a token is generated, logged once, and wanted everywhere but the docs", async () => {
  const deps = await testDeps({ SERVICE_SURFACES: "host-agent" });
  try {
    const app = await createHostAgentApp(deps);
    const logged = deps.logger.lines.filter((l) => "host_agent_mock_token" in l);
    assert.equal(logged.length, 1);
    const token = String(logged[0].host_agent_mock_token);
    assert.ok(token.length >= 32, token);
    assert.ok(logged[0].message.includes(`Bearer ${token}`), logged[0].message);
    const send = async (method: string, path: string, json?: unknown, auth?: string) => {
      const res = await app.request(path, {
        method,
        headers: {
          ...(auth ? { authorization: auth } : {}),
          ...(json === undefined ? {} : { "content-type": "application/json" }),
        },
        body: json === undefined ? undefined : JSON.stringify(json),
      });
      return { status: res.status, body: await res.json().catch(() => null) };
    };
    // Anonymous: every state-changing and /mock/* route is refused, and nothing changed.
    const anonymous: [string, string, unknown][] = [
      ["POST", "/mock/faults", { fail_step: "create_microvm" }],
      ["POST", "/mock/capacity", { vcpus: 0 }],
      ["POST", "/mock/reset", undefined],
      ["GET", "/mock/faults", undefined],
      ["POST", "/assets/prepare", { image: IMAGE }],
      ["POST", "/microvms/x/actions/start", undefined],
      ["DELETE", "/microvms/x", undefined],
      ["GET", "/microvms", undefined],
      ["GET", "/health", undefined],
    ];
    for (const [method, path, json] of anonymous) {
      const res = await send(method, path, json);
      assert.equal(res.status, 401, `${method} ${path}`);
      assert.deepEqual(res.body, { error: "Missing or invalid bearer token" });
    }
    const bearer = `Bearer ${token}`;
    assert.deepEqual((await send("GET", "/mock/faults", undefined, bearer)).body, {
      fail_step: null,
      fail_status: 500,
      delay_ms: 0,
    });
    assert.equal((await send("GET", "/capabilities", undefined, bearer)).body.available_vcpus, 16);
    // The docs stay public.
    assert.equal((await app.request("/openapi.json")).status, 200);
  } finally {
    deps.kv.close();
  }
});

Deno.test("host-agent mock: a body over 256 KiB is refused on the bytes read (chunked too), and nothing is created", async () => {
  const deps = await testDeps({ SERVICE_SURFACES: "host-agent", HOST_AGENT_MOCK_TOKEN: TOKEN });
  const app = await createHostAgentApp(deps);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request, info) => app.fetch(request, info),
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  const auth = { authorization: `Bearer ${TOKEN}` };
  try {
    const prepared = await fetch(`${base}/assets/prepare`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ image: IMAGE }),
    });
    const paths = await prepared.json();
    const vm = JSON.stringify({
      microvm_id: "big",
      name: "big",
      vcpus: 1,
      memory_mib: 64,
      disk_mib: 1,
      ...paths,
      network: { mode: "nat" },
      metadata: { blob: "m".repeat(300 * 1024) },
    });
    // A stream body goes out chunked: no Content-Length for a header check to see.
    const bytes = new TextEncoder().encode(vm);
    let sent = 0;
    const chunked = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= bytes.length) return controller.close();
        controller.enqueue(bytes.subarray(sent, sent + 16 * 1024));
        sent += 16 * 1024;
      },
    });
    const res = await fetch(`${base}/microvms`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: chunked,
    });
    assert.equal(res.status, 413);
    assert.deepEqual(await res.json(), { error: "Request body too large (limit 256 KiB)" });
    const listed = await fetch(`${base}/microvms`, { headers: auth });
    assert.deepEqual(await listed.json(), { microvms: [] });
  } finally {
    await server.shutdown();
    deps.kv.close();
  }
});

Deno.test("host-agent mock: bodies that are not JSON answer 415 or 400 JSON, never 500", async () => {
  using a = await agent();
  const cases: [string, string, BodyInit, number][] = [
    ["/microvms", "text/plain", JSON.stringify({ microvm_id: "x" }), 415],
    ["/microvms", "application/xml", "<microvm/>", 415],
    ["/microvms", "multipart/form-data", "--x\r\n", 415],
    ["/microvms", "application/x-www-form-urlencoded", "%%%=%", 415],
    ["/mock/faults", "application/x-www-form-urlencoded", "fail_step=create_microvm", 415],
    ["/mock/capacity", "", '{"vcpus":1}', 415],
    ["/assets/prepare", "application/json", "{", 400],
    ["/mock/faults", "application/json", "[]", 400],
    ["/mock/faults", "application/json", "null", 400],
    ["/microvms", "application/json", "", 400],
  ];
  for (const [path, type, body, status] of cases) {
    const raw = await a.raw("POST", path, body, {
      authorization: `Bearer ${TOKEN}`,
      ...(type ? { "content-type": type } : {}),
    });
    assert.equal(raw.status, status, `${type || "(none)"} ${path}: ${JSON.stringify(raw.body)}`);
    assert.equal(typeof raw.body.error, "string", `${type} ${path}`);
  }
  // Nothing was changed by the refused bodies.
  assert.deepEqual((await a.call("GET", "/mock/faults")).body.fail_step, null);
});

Deno.test("host-agent mock: faults make a step fail or every call slow, until cleared", async () => {
  using a = await agent();
  const set = await a.call("POST", "/mock/faults", {
    fail_step: "prepare_assets",
    fail_status: 507,
  });
  assert.deepEqual(set.body, { fail_step: "prepare_assets", fail_status: 507, delay_ms: 0 });
  const failed = await a.call("POST", "/assets/prepare", { image: IMAGE });
  assert.equal(failed.status, 507);
  assert.deepEqual(failed.body, { error: "injected fault: prepare_assets fails" });
  assert.equal((await a.call("GET", "/health")).status, 200);
  await a.call("POST", "/mock/faults", { fail_step: null, delay_ms: 30 });
  const started = performance.now();
  assert.equal((await a.call("POST", "/assets/prepare", { image: IMAGE })).status, 200);
  assert.ok(performance.now() - started >= 25);
  await a.call("POST", "/mock/reset");
  assert.deepEqual((await a.call("GET", "/mock/faults")).body, {
    fail_step: null,
    fail_status: 500,
    delay_ms: 0,
  });
  const bad = await a.call("POST", "/mock/faults", { fail_step: "reboot" });
  assert.equal(bad.status, 400);
  assert.match(String(bad.body.error), /^Invalid request: fail_step/);
});

Deno.test("host-agent mock: every error is JSON", async () => {
  using a = await agent();
  const cases: [string, string, unknown, number][] = [
    ["GET", "/nope", undefined, 404],
    ["DELETE", "/health", undefined, 404],
    ["POST", "/microvms", { name: "x" }, 400],
    ["POST", "/assets/prepare", { image: { ...IMAGE, kernel_image_sha256: "zz" } }, 400],
  ];
  for (const [method, path, json, status] of cases) {
    const res = await a.call(method, path, json);
    assert.equal(res.status, status, `${method} ${path}`);
    assert.match(res.headers.get("content-type") ?? "", /application\/json/);
    assert.equal(typeof res.body.error, "string");
  }
  const raw = await a.call("POST", "/assets/prepare", undefined, {
    authorization: `Bearer ${TOKEN}`,
    "content-type": "application/json",
  });
  assert.equal(raw.status, 400);
  assert.equal(typeof raw.body.error, "string");
});

Deno.test("host-agent mock: its own OpenAPI document lists the five calls and the controls", async () => {
  using a = await agent();
  const doc = (await a.call("GET", "/openapi.json", undefined, {})).body as {
    info: { title: string };
    paths: Record<string, Record<string, unknown>>;
  };
  assert.match(doc.info.title, /host-agent mock/);
  for (
    const [path, method] of [
      ["/health", "get"],
      ["/capabilities", "get"],
      ["/assets/prepare", "post"],
      ["/microvms", "post"],
      ["/microvms/{id}/actions/start", "post"],
      ["/mock/faults", "post"],
    ]
  ) assert.ok(doc.paths[path]?.[method], `${method} ${path}`);
  const page = (await a.call("GET", "/docs", undefined, {})).body as unknown as string;
  assert.match(page, /openapi\.json/);
  assert.doesNotMatch(page, /cdn\.jsdelivr|unpkg/);
});
