import assert from "node:assert/strict";
import { createApp } from "../../app.ts";
import { parseConfig } from "../../config.ts";
import { MemoryLogger } from "../../infra/logger.ts";
import { describeStore } from "../../scripts/token_create.ts";
import { createKvStorage } from "../../storage/kv/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

Deno.test("token:create names the store it wrote to, relative paths resolved from where it runs", () => {
  assert.equal(describeStore("./data/bridgebox.kv", "/srv/app"), "/srv/app/data/bridgebox.kv");
  assert.equal(describeStore("/var/lib/bb.kv", "/srv/app"), "/var/lib/bb.kv");
  assert.match(describeStore(":memory:"), /gone when this command ends/);
  assert.match(describeStore(undefined), /platform KV/);
});

Deno.test("token:create: stdout is the token alone, stderr names the store, and a server on that store accepts it", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/nested/tour.kv`;
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["task", "token:create", "readme"],
      cwd: ROOT,
      env: { SERVICE_KV_PATH: kvPath },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, stderr);
    assert.match(stdout, /^[0-9a-f]{40}\n$/);
    assert.ok(stderr.includes(`in ${kvPath}.`), stderr);

    const kv = await Deno.openKv(kvPath);
    try {
      const config = parseConfig({ SERVICE_KV_PATH: kvPath, SERVICE_SURFACES: "plugin" });
      const app = await createApp({
        config,
        storage: createKvStorage(kv, { now: Date.now }),
        fetch: globalThis.fetch,
        now: Date.now,
        logger: new MemoryLogger(),
      });
      const res = await app.request("/api/users/tokens/", {
        headers: { authorization: `Token ${stdout.trim()}` },
      });
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.results[0].description, "readme");
    } finally {
      kv.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("token:create: a bad configuration is a message naming the variable, not a stack trace", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "token:create"],
    cwd: ROOT,
    env: { PORT: "nope" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 2);
  assert.equal(new TextDecoder().decode(out.stdout), "");
  assert.match(new TextDecoder().decode(out.stderr), /Configuration error: PORT/);
});
