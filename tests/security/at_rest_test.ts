/**
 * Secrets at rest (SECURITY.md): with SERVICE_ENCRYPTION_KEY set, the plugin's own encryption
 * key (and the keys a rotation replaced) and the backend endpoint's key are sealed with it; the
 * KV file and its directory are owner-only.
 */
import assert from "node:assert/strict";
import { harness, P, startBackend } from "../routes/plugin/_harness.ts";

/** Every value in the store as text: what a copy of the KV file would give away. */
async function everything(kv: Deno.Kv): Promise<string> {
  const parts: string[] = [];
  for await (const entry of kv.list({ prefix: [] })) {
    parts.push(JSON.stringify(entry.value, (_k, v) => typeof v === "bigint" ? String(v) : v));
  }
  return parts.join("\n");
}

Deno.test("at rest: plugin encryption keys and the backend key are sealed with SERVICE_ENCRYPTION_KEY", async () => {
  const backend = await startBackend();
  const h = await harness({ SERVICE_ENCRYPTION_KEY: "operator at-rest key 0123456789" });
  try {
    const first = "first plugin key 0123456789";
    const second = "second plugin key 0123456789";
    assert.equal((await h.call("PATCH", P + "settings/", { encryption_key: first })).status, 200);
    assert.equal((await h.call("PATCH", P + "settings/", { encryption_key: second })).status, 200);
    const runtime = await h.call("GET", P + "settings/runtime/");
    assert.equal(runtime.body.encryption_key, second, "read back in plaintext through the API");

    const be = await h.call("POST", P + "endpoints/backend/", {
      name: "backend",
      domain: "127.0.0.1",
      port: backend.port,
      use_https: false,
    });
    assert.equal(be.status, 201);
    assert.match(be.body.token, /^[A-Za-z0-9_-]{64}$/, "the superuser sees the plaintext key");
    assert.equal(be.body.last_push.ok, true, JSON.stringify(be.body.last_push));
    // The key the backend registered is the plaintext one (it authenticates there).
    const keys = await backend.request("/auth/keys", {
      headers: { "x-service-api-key": be.body.token },
    });
    assert.equal(keys.status, 200);
    await keys.body?.cancel();

    const dump = await everything(h.deps.kv);
    for (const secret of [first, second, be.body.token]) {
      assert.ok(!dump.includes(secret), `stored in plaintext: ${secret.slice(0, 12)}...`);
    }
    assert.match(dump, /"encryption_key":"enc:gAAAAA/);
  } finally {
    await h.close();
    await backend.close();
  }
});

Deno.test("at rest: main.ts creates the KV directory 0700 and the KV file 0600", async () => {
  if (Deno.build.os === "windows") return;
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/fresh/bridgebox.kv`;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts"],
    cwd: new URL("../..", import.meta.url).pathname,
    env: { PORT: "0", SERVICE_KV_PATH: kvPath, SERVICE_SURFACES: "backend" },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  try {
    const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    while (!seen.includes("listening")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`main.ts exited early:\n${seen}`);
      seen += value;
    }
    assert.equal((await Deno.stat(`${dir}/fresh`)).mode! & 0o777, 0o700);
    assert.equal((await Deno.stat(kvPath)).mode! & 0o777, 0o600);
    child.kill("SIGTERM");
    await reader.cancel();
    await child.status;
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("at rest: with SERVICE_ENCRYPTION_KEY and no plugin encryption_key, endpoint secrets are sealed with the env key", async () => {
  const h = await harness({ SERVICE_ENCRYPTION_KEY: "operator at-rest key 0123456789" });
  try {
    const settings = await h.call("GET", P + "settings/");
    assert.equal(settings.body.has_encryption_key, false, "the plugin has no key of its own");
    const password = "root-pw-Plain-4242";
    const tokenValue = "5e1f0c3a-token-value-plain-9999";
    const reuse = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
      username: "root@pam",
      password,
      ssh_credential_source: "reuse_endpoint",
      ssh_known_host_fingerprint: "SHA256:" + "A".repeat(43),
    });
    assert.equal(reuse.status, 201, JSON.stringify(reuse.body));
    const byToken = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve-token",
      domain: "pve2.example.com",
      username: "root@pam",
      token_name: "sync",
      token_value: tokenValue,
    });
    assert.equal(byToken.status, 201, JSON.stringify(byToken.body));

    const dump = await everything(h.deps.kv);
    for (const secret of [password, tokenValue]) {
      assert.ok(!dump.includes(secret), `stored in plaintext: ${secret.slice(0, 8)}...`);
    }
    assert.match(dump, /"password":"enc:gAAAAA/);
    assert.match(dump, /"token_value":"enc:gAAAAA/);
    // Still usable: the superuser reads the reused password back through the API.
    const back = await h.call("GET", `${P}endpoints/hypervisor/${reuse.body.id}/ssh-secrets/`);
    assert.equal(back.status, 200, JSON.stringify(back.body));
    assert.equal(back.body.password, password);
    // Setting a plugin key later re-seals them under it (and they still open).
    const key = "plugin key set later 0123456789";
    assert.equal((await h.call("PATCH", P + "settings/", { encryption_key: key })).status, 200);
    const after = await h.call("GET", `${P}endpoints/hypervisor/${reuse.body.id}/ssh-secrets/`);
    assert.equal(after.body.password, password);
  } finally {
    await h.close();
  }
});
