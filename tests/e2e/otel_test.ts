/**
 * Deno's built-in OpenTelemetry (README, Metrics and tracing): `main.ts` run as a user would with
 * `OTEL_DENO=true` and an OTLP/HTTP endpoint on loopback (this test's receiver, JSON encoding).
 * A full update's run and stages arrive as spans, the stages children of the run.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { baseEnv, call, startMain } from "../_process.ts";
import { STAGES } from "../../domain/sync/runner.ts";

const KEY = "otel-e2e-backend-key-0123456789abcdef0123";
const ROOT = "otel0123456789abcdef0123456789abcdef0123";

interface Span {
  name: string;
  spanId: string;
  parentSpanId?: string;
  traceId: string;
  attributes: { key: string; value: Record<string, unknown> }[];
  status?: { code?: number; message?: string };
}

/** A loopback OTLP/HTTP receiver (JSON): every span posted to /v1/traces, and their scopes. */
function otlpReceiver() {
  const spans: Span[] = [];
  const scopes = new Set<string>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.text();
    if (new URL(req.url).pathname === "/v1/traces") {
      const data = JSON.parse(body);
      for (const resource of data.resourceSpans ?? []) {
        for (const scope of resource.scopeSpans ?? []) {
          scopes.add(scope.scope?.name);
          spans.push(...(scope.spans ?? []));
        }
      }
    }
    return Response.json({});
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    spans,
    scopes,
    close: () => server.shutdown(),
  };
}

Deno.test("otel e2e: with OTEL_DENO=true a full update's run and stages are exported as spans", async () => {
  const dir = await Deno.makeTempDir();
  const receiver = otlpReceiver();
  const child = await startMain({
    ...baseEnv(dir),
    OTEL_DENO: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: "bridgebox-otel-test",
    INVENTORY_BOOTSTRAP_TOKEN: ROOT,
    HYPERVISOR_MOCK_SEED: "nodes=1,vms=2,cts=1,storages=1",
    HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
  });
  try {
    const backend = (method: string, path: string, body?: unknown) =>
      call(child.base, method, path, { "x-service-api-key": KEY }, body);
    assert.equal((await backend("POST", "/auth/register-key", { api_key: KEY })).status, 201);
    const inventory = await backend("POST", "/inventory/endpoint", {
      name: "self",
      ip: "127.0.0.1",
      port: child.port,
      use_https: false,
      token_version: "v1",
      token: ROOT,
    });
    assert.equal(inventory.status, 201, JSON.stringify(inventory.body));
    const hypervisor = await backend("POST", "/hypervisor/endpoints", {
      name: "lab",
      ip: "127.0.0.1",
      port: child.port,
      use_https: false,
      username: "root@pam",
      password: "bridgebox",
    });
    assert.equal(hypervisor.status, 201, JSON.stringify(hypervisor.body));
    const run = await backend("GET", "/full-update");
    assert.equal(run.status, 200, JSON.stringify(run.body));

    // A graceful stop ends the process, and Deno sends what it has not sent yet: read after it
    // (no waiting on a batch timer, and a missing span fails here instead of hanging).
    await child.stop();
    const stageNames = STAGES.map((s) => `sync.stage ${s.type}`);
    const names = new Set(receiver.spans.map((s) => s.name));
    assert.deepEqual(["sync.run", ...stageNames].filter((n) => !names.has(n)), [], "spans missing");
    assert.ok(receiver.scopes.has("bridgebox"), [...receiver.scopes].join(", "));
    const root = receiver.spans.find((s) => s.name === "sync.run")!;
    const attribute = (span: Span, key: string) =>
      Object.values(span.attributes.find((a) => a.key === key)?.value ?? {})[0];
    assert.equal(Number(attribute(root, "bridgebox.sync.created")), run.body.result.created);
    for (const name of stageNames) {
      const stage = receiver.spans.find((s) => s.name === name)!;
      assert.equal(stage.parentSpanId, root.spanId, `${name} is a child of sync.run`);
      assert.equal(stage.traceId, root.traceId);
    }
    const devices = receiver.spans.find((s) => s.name === "sync.stage devices")!;
    const reported = run.body.stages.find((s: any) => s.step === "devices").result;
    assert.equal(Number(attribute(devices, "bridgebox.sync.created")), reported.created);
  } finally {
    await child.stop();
    await receiver.close();
    await Deno.remove(dir, { recursive: true });
  }
});
