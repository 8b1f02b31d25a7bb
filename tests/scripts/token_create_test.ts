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

/** Runs `deno task token:create <args>` on a fresh store; the server on that store answers. */
async function tokenCreate(
  args: string[],
  check: (stdout: string, stderr: string) => void,
) {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/nested/tour.kv`;
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["task", "token:create", ...args],
      cwd: ROOT,
      env: { SERVICE_KV_PATH: kvPath },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, stderr);
    assert.ok(stderr.includes(`in ${kvPath}.`), stderr);
    check(stdout, stderr);
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
      const token = stdout.trim();
      // v2 as `Bearer`, and as `Token` (what pynetbox 7.0 and netbox.netbox 3.13 send): the
      // prefix tells the version, as in NetBox 4.6. A v1 token as `Token`.
      const headers = token.startsWith("nbt_")
        ? [`Bearer ${token}`, `Token ${token}`]
        : [`Token ${token}`];
      for (const authorization of headers) {
        const res = await app.request("/api/users/tokens/", { headers: { authorization } });
        const body = await res.json();
        assert.equal(res.status, 200, `${authorization.split(" ")[0]}: ${JSON.stringify(body)}`);
        assert.equal(body.results[0].description, "readme");
        assert.equal(body.results[0].version, token.startsWith("nbt_") ? 2 : 1);
      }
    } finally {
      kv.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("token:create: a v2 token by default, stdout the token alone, stderr the store; a server on that store accepts it", async () => {
  await tokenCreate(["readme"], (stdout, stderr) => {
    assert.match(stdout, /^nbt_[A-Za-z0-9]{12}\.[A-Za-z0-9]{40}\n$/);
    assert.match(stderr, /Created v2 superuser token/);
    assert.match(stderr, /Authorization: Bearer <token>/);
  });
});

Deno.test("token:create --v1: a deprecated v1 token, said so", async () => {
  await tokenCreate(["--v1", "readme"], (stdout, stderr) => {
    assert.match(stdout, /^[0-9a-f]{40}\n$/);
    assert.match(stderr, /Created v1 \(deprecated\) superuser token/);
    assert.match(stderr, /Authorization: Token <token>/);
  });
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
