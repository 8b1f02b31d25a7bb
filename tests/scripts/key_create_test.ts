/**
 * `deno task key:create`: the way back in when no backend key is at hand (README, "Lost the
 * backend key"). It writes to the store the configuration names, and the backend there accepts
 * what it printed.
 */
import assert from "node:assert/strict";
import { createApp } from "../../app.ts";
import { parseConfig } from "../../config.ts";
import { MemoryLogger } from "../../infra/logger.ts";
import { createKvStorage } from "../../storage/kv/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

Deno.test("key:create: stdout is the key alone, stderr names the store, and a backend already holding other keys accepts it", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/nested/backend.kv`;
  const config = parseConfig({ SERVICE_KV_PATH: kvPath, SERVICE_SURFACES: "backend" });
  const serve = async (check: (app: Awaited<ReturnType<typeof createApp>>) => Promise<void>) => {
    const kv = await Deno.openKv(kvPath);
    try {
      await check(
        await createApp({
          config,
          storage: createKvStorage(kv, { now: Date.now }),
          fetch: globalThis.fetch,
          now: Date.now,
          logger: new MemoryLogger(),
        }),
      );
    } finally {
      kv.close();
    }
  };
  try {
    await Deno.mkdir(`${dir}/nested`);
    // Bootstrapped with a key nobody kept.
    await serve(async (app) => {
      const res = await app.request("/auth/register-key", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ api_key: "forgotten-".repeat(4), label: "lost" }),
      });
      assert.equal(res.status, 201);
    });
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["task", "key:create", "plugin again"],
      cwd: ROOT,
      env: { SERVICE_KV_PATH: kvPath },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, stderr);
    assert.match(stdout, /^[A-Za-z0-9_-]{64}\n$/);
    assert.ok(stderr.includes(`in ${kvPath}.`), stderr);
    await serve(async (app) => {
      const res = await app.request("/auth/keys", {
        headers: { "x-service-api-key": stdout.trim() },
      });
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.match(JSON.stringify(body), /"label":"plugin again"/);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
