import assert from "node:assert/strict";
import { ConfigError, DEFAULT_KV_PATH, parseConfig, SURFACES } from "../config.ts";

Deno.test("config: embedded defaults need no environment at all", () => {
  const config = parseConfig({});
  assert.equal(config.port, 8800);
  assert.equal(config.kvPath, DEFAULT_KV_PATH);
  assert.deepEqual([...config.surfaces], [...SURFACES]);
  assert.equal(config.encryptionKey, undefined);
  assert.equal(config.allowLoopbackTargets, false);
  assert.equal(config.hypervisor.mode, "mock");
  assert.equal(config.hypervisor.version, "9.2");
  assert.equal(config.hypervisor.verifyTls, true);
  assert.equal(config.hypervisor.mockUser, "root@pam");
  assert.equal(config.hypervisor.proxySharedIdentity, false);
  assert.equal(config.hypervisor.timeoutMs, 30_000);
  assert.equal(config.hypervisor.taskDelayMs, 1_000);
});

Deno.test("config: values are parsed and typed", () => {
  const config = parseConfig({
    PORT: "9000",
    SERVICE_KV_PATH: ":memory:",
    SERVICE_SURFACES: "backend, hypervisor",
    SERVICE_ENCRYPTION_KEY: "  secret  ",
    SERVICE_TRUSTED_PROXIES: "10.0.0.1,10.0.0.2",
    SERVICE_ALLOW_LOOPBACK_TARGETS: "true",
    HYPERVISOR_MODE: "real",
    HYPERVISOR_URL: "https://pve.lan:8006",
    HYPERVISOR_VERIFY_TLS: "0",
    HYPERVISOR_MOCK_SEED: "nodes=2,vms=5",
  });
  assert.equal(config.port, 9000);
  assert.equal(config.kvPath, ":memory:");
  assert.deepEqual([...config.surfaces], ["backend", "hypervisor"]);
  assert.equal(config.encryptionKey, "secret");
  assert.deepEqual([...config.trustedProxies], ["10.0.0.1", "10.0.0.2"]);
  assert.equal(config.allowLoopbackTargets, true);
  assert.equal(config.hypervisor.verifyTls, false);
  assert.deepEqual(config.hypervisor.seed, { nodes: 2, vms: 5, cts: 4, storages: 2 });
});

Deno.test("config: on Deno Deploy the platform KV is the default", () => {
  assert.equal(parseConfig({ DENO_DEPLOYMENT_ID: "abc" }).kvPath, undefined);
});

Deno.test("config: bad values name the variable", () => {
  const cases: Record<string, string>[] = [
    { PORT: "eighty" },
    { PORT: "70000" },
    { SERVICE_SURFACES: "backend,frontend" },
    { SERVICE_ALLOW_LOOPBACK_TARGETS: "maybe" },
    { HYPERVISOR_MODE: "fake" },
    { HYPERVISOR_MODE: "real" },
    { HYPERVISOR_VERSION: "8.0" },
    { HYPERVISOR_MOCK_SEED: "nodes=0" },
    { HYPERVISOR_MOCK_SEED: "planets=3" },
    { HYPERVISOR_TIMEOUT_MS: "soon" },
    { HYPERVISOR_MOCK_TASK_DELAY_MS: "-5" },
  ];
  for (const env of cases) {
    assert.throws(() => parseConfig(env), (error) => {
      assert.ok(error instanceof ConfigError);
      const name = Object.keys(env)[0] === "HYPERVISOR_MODE" && env.HYPERVISOR_MODE === "real"
        ? "HYPERVISOR_URL"
        : Object.keys(env)[0];
      assert.equal(error.variable, name);
      return true;
    }, JSON.stringify(env));
  }
});

Deno.test("config: HOST_AGENT_MOCK_TOKEN turns on the host-agent mock's bearer auth", () => {
  assert.equal(parseConfig({}).hostAgentMock.token, undefined);
  assert.equal(parseConfig({ HOST_AGENT_MOCK_TOKEN: "  " }).hostAgentMock.token, undefined);
  assert.equal(parseConfig({ HOST_AGENT_MOCK_TOKEN: " s3cret " }).hostAgentMock.token, "s3cret");
});

Deno.test("config: METRICS_ACCESS and METRICS_TOKEN (docs/metrics.md)", () => {
  assert.deepEqual(parseConfig({}).metrics, { access: "key", token: undefined });
  assert.deepEqual(parseConfig({ METRICS_ACCESS: " Open " }).metrics, {
    access: "open",
    token: undefined,
  });
  const token = "t".repeat(32);
  assert.deepEqual(parseConfig({ METRICS_TOKEN: token }).metrics, { access: "key", token });
  const refused: [Record<string, string>, string, RegExp][] = [
    [{ METRICS_ACCESS: "public" }, "METRICS_ACCESS", /expected key, open or off, got "public"/],
    [{ METRICS_TOKEN: "short" }, "METRICS_TOKEN", /at least 32 characters/],
    // A token that would never be checked is a mistake worth stopping for.
    [{ METRICS_ACCESS: "open", METRICS_TOKEN: token }, "METRICS_TOKEN", /only checked with/],
  ];
  for (const [env, variable, message] of refused) {
    assert.throws(() => parseConfig(env), (error) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.variable, variable);
      assert.match(error.message, message);
      return true;
    }, JSON.stringify(env));
  }
});

Deno.test("config: the inventory's read cache bounds are settable, and a bad value is refused", () => {
  assert.deepEqual(parseConfig({}).inventoryCache, { recordsPerModel: 40_000, records: 120_000 });
  assert.deepEqual(
    parseConfig({ INVENTORY_CACHE_RECORDS_PER_MODEL: "400000", INVENTORY_CACHE_RECORDS: "0" })
      .inventoryCache,
    { recordsPerModel: 400_000, records: 0 },
  );
  for (const bad of ["-1", "many", "1e6", "99999999999"]) {
    assert.throws(
      () => parseConfig({ INVENTORY_CACHE_RECORDS_PER_MODEL: bad }),
      (error) => error instanceof ConfigError && error.message.includes("INVENTORY_CACHE"),
    );
  }
});
