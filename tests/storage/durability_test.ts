import assert from "node:assert/strict";
import { createBackendApp } from "../../routes/backend/mod.ts";
import { parseConfig } from "../../config.ts";
import { MemoryLogger } from "../../infra/logger.ts";
import { createKvStorage } from "../../storage/kv/mod.ts";

const KEY = "d".repeat(48);

Deno.test("durability: keys and endpoint copies survive a restart on the same KV file", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/bridgebox.kv`;
  const env = { SERVICE_SURFACES: "backend", SERVICE_ENCRYPTION_KEY: "durable" };
  const start = async () => {
    const kv = await Deno.openKv(path);
    const app = await createBackendApp({
      config: parseConfig(env),
      storage: createKvStorage(kv, { atRestKey: env.SERVICE_ENCRYPTION_KEY, now: Date.now }),
      fetch: globalThis.fetch,
      now: Date.now,
      logger: new MemoryLogger(),
    });
    const call = (p: string, method = "GET", json?: unknown, key = KEY) =>
      app.request(p, {
        method,
        headers: { "X-Service-API-Key": key, "content-type": "application/json" },
        body: json ? JSON.stringify(json) : undefined,
      }, { remoteAddr: { hostname: "192.0.2.1" } });
    return { kv, call };
  };
  try {
    const first = await start();
    assert.equal((await first.call("/auth/register-key", "POST", { api_key: KEY })).status, 201);
    const second = await (await first.call("/auth/keys", "POST", { label: "ops" })).json();
    await first.call("/inventory/endpoint", "POST", {
      name: "nb",
      ip: "10.0.0.1",
      port: 443,
      token_version: "v2",
      token_key: "k1",
      token: "s1",
    });
    await first.call("/hypervisor/endpoints", "POST", {
      name: "pve",
      ip: "10.0.0.2",
      password: "pw",
    });
    assert.equal(
      (await first.call("/auth/keys/1/deactivate", "POST", undefined, second.raw_key)).status,
      200,
    );
    first.kv.close();

    const again = await start();
    try {
      assert.equal(
        (await again.call("/auth/keys", "GET", undefined, KEY)).status,
        401,
        "still deactivated",
      );
      const keys = await (await again.call("/auth/keys", "GET", undefined, second.raw_key)).json();
      assert.deepEqual(
        keys.keys.map((k: { id: number; is_active: boolean }) => [k.id, k.is_active]),
        [[2, true], [
          1,
          false,
        ]],
      );
      assert.equal(
        (await again.call("/auth/register-key", "POST", { api_key: "n".repeat(40) })).status,
        409,
      );
      const inv = await (await again.call("/inventory/endpoint", "GET", undefined, second.raw_key))
        .json();
      assert.equal(inv[0].token_key, "k1");
      const check = await again.call(
        "/hypervisor/endpoints/1/credentials/check",
        "GET",
        undefined,
        second.raw_key,
      );
      assert.equal(check.status, 200, "secrets stored before the restart still decrypt");
      const invCheck = await again.call(
        "/inventory/endpoint/1/credentials/check",
        "GET",
        undefined,
        second.raw_key,
      );
      assert.equal(invCheck.status, 200);
      // Sequences continue rather than reuse ids.
      const third = await (await again.call("/auth/keys", "POST", {}, second.raw_key)).json();
      assert.equal(third.id, 3);
    } finally {
      again.kv.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
