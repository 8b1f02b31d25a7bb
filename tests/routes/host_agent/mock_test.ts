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
  return { call, [Symbol.dispose]: () => deps.kv.close() };
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

Deno.test("host-agent mock: the bearer token is required when configured, and only then", async () => {
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
  {
    using open = await agent({});
    assert.deepEqual((await open.call("GET", "/health", undefined, {})).body, {
      ok: true,
      status: "ready",
    });
  }
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
