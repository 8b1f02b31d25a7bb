// deno-lint-ignore-file no-explicit-any
/**
 * Security regressions under a whole run: known secrets (backend key, inventory tokens, the
 * hypervisor password, the host-agent token) never appear in a log line, an SSE frame, a job
 * record, an error body or a backend read; the lockout under a flood from 10,000+ addresses
 * behind a trusted proxy keeps its memory bounded and keeps a locked address locked.
 * (SSRF rules per outbound URL, redirects and DNS answers: tests/security/outbound_test.ts and
 * destination_test.ts.)
 */
import assert from "node:assert/strict";
import { jobsWorld, P, ROOT } from "../e2e/_jobs_world.ts";
import { createApp } from "../../app.ts";
import { testDeps } from "../_helpers.ts";

const HV_PASSWORD = "hv-Secret-Pass-9731";
const AGENT_TOKEN = "agent-Secret-Token-5521-abcdef";

Deno.test({
  name:
    "security: no secret in any log line, SSE frame, job record, error or backend read of a full run",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const world = await jobsWorld({
    HYPERVISOR_MOCK_SEED: "nodes=2,vms=8,cts=2,storages=2",
    HYPERVISOR_MOCK_PASSWORD: HV_PASSWORD,
    HOST_AGENT_MOCK_TOKEN: AGENT_TOKEN,
    SERVICE_ALLOW_LOOPBACK_TARGETS: "true",
  });
  const produced: string[] = [];
  try {
    world.deps.config.hypervisor.mockPassword = HV_PASSWORD;
    const { backend } = await world.wire();
    const token = await world.call("GET", "/api/users/tokens/?limit=100");
    const secrets = [
      backend.token,
      ROOT,
      HV_PASSWORD,
      AGENT_TOKEN,
      ...token.body.results.map((t: any) => t.token).filter((t: any) =>
        typeof t === "string" && t.length > 20
      ),
    ].filter(Boolean) as string[];
    assert.ok(secrets.length >= 4);
    const key = { "x-service-api-key": backend.token };
    const grab = async (path: string, init: RequestInit = {}) => {
      const res = await fetch(world.base + path, init);
      const text = await res.text();
      produced.push(`${init.method ?? "GET"} ${path} ${res.status}\n${text}`);
      return { status: res.status, text };
    };

    // A durable sync job, followed live; its record; the stage streams directly.
    const job = await world.call("POST", P + "sync/", { sync_types: ["all"] });
    assert.equal(job.status, 201, JSON.stringify(job.body));
    await grab(`${P}jobs/${job.body.job_id}/stream`, {
      headers: { authorization: `Token ${ROOT}` },
    });
    await grab(`/api/core/jobs/${job.body.job_id}/`, {
      headers: { authorization: `Token ${ROOT}` },
    });
    const record = JSON.parse(produced.at(-1)!.split("\n").slice(1).join("\n"));
    assert.equal(record.status?.value ?? record.status, "completed", record.error);
    assert.ok(record.log.length > 0 && record.data.length >= 13);
    await grab("/full-update/stream", { headers: key });
    for (
      const path of [
        "/hypervisor/endpoints",
        "/inventory/endpoint",
        "/auth/keys",
        "/hypervisor/actions",
      ]
    ) {
      await grab(path, { headers: key });
    }
    // A verb, a provisioning run (with the agent token), errors on purpose.
    await grab("/hypervisor/qemu/100/start?endpoint_id=1", { method: "POST", headers: key });
    await grab("/cloud/microvm/provision/stream", {
      method: "POST",
      headers: { ...key, "content-type": "application/json" },
      body: JSON.stringify({
        host_agent_base_url: `${world.base}/host-agent`,
        host_agent_token: AGENT_TOKEN,
        name: "edge-1",
        image: {
          name: "alpine",
          kernel_image_url: "https://images.example/vmlinux",
          kernel_image_sha256: "a".repeat(64),
          rootfs_image_url: "https://images.example/rootfs.ext4",
          rootfs_image_sha256: "b".repeat(64),
        },
      }),
    });
    await grab("/hypervisor/endpoints", {
      method: "POST",
      headers: { ...key, "content-type": "application/json" },
      body: JSON.stringify({ name: "bad", ip: "not a host!", password: HV_PASSWORD }),
    });
    await grab("/inventory/endpoint", {
      method: "POST",
      headers: { ...key, "content-type": "application/json" },
      body: `{"token": "${ROOT}", `,
    });
    await grab("/auth/keys", { headers: { "x-service-api-key": `${backend.token}x` } });

    const logs = world.deps.logger.lines.map((l) => JSON.stringify(l));
    const everything = [...produced, ...logs];
    for (const secret of secrets) {
      const leaks = everything.filter((text) => text.includes(secret));
      assert.deepEqual(
        leaks.map((t) => t.slice(0, 200)),
        [],
        `secret ${secret.slice(0, 4)}… found`,
      );
    }
    console.log(
      `security: ${secrets.length} secrets, ${produced.length} responses/streams and ` +
        `${logs.length} log lines scanned, none found`,
    );
  } finally {
    await world.close();
  }
});

Deno.test({
  name:
    "security: a flood of wrong keys from 12,000 forwarded addresses keeps the lockout bounded and a locked address locked",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const deps = await testDeps({ SERVICE_TRUSTED_PROXIES: "10.9.9.9" });
  try {
    const app = await createApp(deps);
    const viaProxy = { remoteAddr: { transport: "tcp", hostname: "10.9.9.9", port: 1 } };
    const register = await app.request("/auth/register-key", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ api_key: "k".repeat(48) }),
    }, viaProxy);
    assert.equal(register.status, 201);
    const attempt = async (ip: string) => {
      const res = await app.request("/auth/keys", {
        headers: { "x-service-api-key": "wrong-key", "x-forwarded-for": `${ip}, 10.9.9.9` },
      }, viaProxy);
      await res.body?.cancel();
      return res.status;
    };
    for (let i = 0; i < 5; i++) await attempt("203.0.113.7");
    assert.equal(await attempt("203.0.113.7"), 429);
    (globalThis as any).gc?.();
    const before = Deno.memoryUsage().heapUsed;
    for (let i = 0; i < 12_000; i++) {
      const status = await attempt(`198.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
      assert.equal(status, 401);
    }
    const growth = Deno.memoryUsage().heapUsed - before;
    assert.equal(await attempt("203.0.113.7"), 429, "the flood unlocked a locked address");
    console.log(`security: 12,000-address flood, heap growth ${(growth / 2 ** 20).toFixed(1)} MiB`);
    assert.ok(growth < 64 * 2 ** 20, `heap grew ${growth} bytes`);
  } finally {
    deps.kv.close();
  }
});
