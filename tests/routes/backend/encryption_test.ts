import assert from "node:assert/strict";
import { createBackendApp } from "../../../routes/backend/mod.ts";
import { parseConfig } from "../../../config.ts";
import { MemoryLogger } from "../../../infra/logger.ts";
import { deriveFernetKey, fernetDecrypt, importFernetKey } from "../../../domain/fernet.ts";
import { keys } from "../../../storage/kv/keys.ts";
import { KEY, registered } from "./_setup.ts";
import { HAS_OPENSSL, selfSigned } from "../../_tls.ts";
import { createKvStorage } from "../../../storage/kv/mod.ts";

const inventory = {
  name: "nb",
  ip: "127.0.0.1",
  port: 8800,
  use_https: false,
  token_version: "v1",
  token: "inv-token-1",
};
const hypervisor = { name: "pve", ip: "10.0.0.5", username: "root@pam", password: "pve-password" };

/** A stand-in inventory answering the plugin's runtime settings, checking the token it is sent. */
function pluginSettings(encryptionKey: string | null, calls: string[] = []): typeof fetch {
  return (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    const auth = new Headers(init?.headers).get("authorization");
    calls.push(`${url} ${auth}`);
    if (auth !== "Token inv-token-1") {
      return Promise.resolve(Response.json({ detail: "Invalid token" }, { status: 403 }));
    }
    return Promise.resolve(
      Response.json({ custom_fields_enabled: false, encryption_key: encryptionKey }),
    );
  };
}

async function open(stored: string, configured: string) {
  return fernetDecrypt(await importFernetKey(await deriveFernetKey(configured)), stored.slice(4));
}

Deno.test("encryption: SERVICE_ENCRYPTION_KEY protects every secret; tokens open with the derived key", async () => {
  await using h = await registered({ SERVICE_ENCRYPTION_KEY: "  env value  " });
  await h.call("/inventory/endpoint", { method: "POST", key: KEY, json: inventory });
  await h.call("/hypervisor/endpoints", { method: "POST", key: KEY, json: hypervisor });
  const inv = (await h.deps.kv.get<{ token: string }>(keys.inventoryEndpoint(1))).value!;
  const hyp = (await h.deps.kv.get<{ password: string }>(keys.hypervisorEndpoint(1))).value!;
  assert.equal(
    await open(inv.token, "env value"),
    "inv-token-1",
    "the configured value is trimmed",
  );
  assert.equal(await open(hyp.password, "env value"), "pve-password");
  assert.equal(h.deps.logger.at("critical").length, 0);
});

Deno.test("encryption: without an env key the plugin key protects hypervisor secrets, the inventory token stays plaintext", async () => {
  const calls: string[] = [];
  await using h = await registered({}, { fetch: pluginSettings("plugin value", calls) });
  await h.call("/inventory/endpoint", { method: "POST", key: KEY, json: inventory });
  const created =
    await (await h.call("/hypervisor/endpoints", { method: "POST", key: KEY, json: hypervisor }))
      .json();
  assert.equal(created.key_source, "plugin");
  assert.equal(
    calls[0],
    "http://127.0.0.1:8800/api/plugins/service/settings/runtime/ Token inv-token-1",
  );

  const inv =
    (await h.deps.kv.get<{ token: string; key_source: string }>(keys.inventoryEndpoint(1))).value!;
  assert.equal(inv.token, "inv-token-1");
  assert.equal(inv.key_source, "none");
  const hyp = (await h.deps.kv.get<{ password: string }>(keys.hypervisorEndpoint(1))).value!;
  assert.equal(await open(hyp.password, "plugin value"), "pve-password");

  const critical = h.deps.logger.at("critical");
  assert.equal(critical.length, 1, "one CRITICAL line for the plaintext inventory token");
  assert.ok(!JSON.stringify(h.deps.logger.lines).includes("inv-token-1"), "no secret in the logs");

  const check = await h.call("/hypervisor/endpoints/1/credentials/check", { key: KEY });
  assert.deepEqual(await check.json(), { ok: true, key_source: "plugin" });
});

Deno.test("encryption: no key anywhere stores plaintext with exactly one CRITICAL line", async () => {
  await using h = await registered({}, { fetch: pluginSettings(null) });
  await h.call("/inventory/endpoint", { method: "POST", key: KEY, json: inventory });
  await h.call("/hypervisor/endpoints", { method: "POST", key: KEY, json: hypervisor });
  await h.call("/hypervisor/endpoints", {
    method: "POST",
    key: KEY,
    json: { ...hypervisor, name: "second" },
  });
  const hyp =
    (await h.deps.kv.get<{ password: string; key_source: string }>(keys.hypervisorEndpoint(1)))
      .value!;
  assert.equal(hyp.password, "pve-password");
  assert.equal(hyp.key_source, "none");
  assert.equal(h.deps.logger.at("critical").length, 1);
});

Deno.test("encryption: a wrong key or tampered value is a 409 naming the endpoint, never a 500", async () => {
  const path = await Deno.makeTempFile({ suffix: ".kv" });
  try {
    const first = await Deno.openKv(path);
    const logger = new MemoryLogger();
    const deps = (env: Record<string, string>, kv: Deno.Kv) => ({
      config: parseConfig({ SERVICE_SURFACES: "backend", ...env }),
      storage: createKvStorage(kv, { atRestKey: env.SERVICE_ENCRYPTION_KEY, now: Date.now }),
      fetch: pluginSettings(null),
      now: Date.now,
      logger,
    });
    const appA = await createBackendApp(deps({ SERVICE_ENCRYPTION_KEY: "key A" }, first));
    const send = (app: typeof appA, p: string, init: RequestInit & { json?: unknown } = {}) =>
      app.request(p, {
        ...init,
        headers: { "X-Service-API-Key": KEY, "content-type": "application/json" },
        body: init.json ? JSON.stringify(init.json) : undefined,
      }, { remoteAddr: { hostname: "192.0.2.1" } });
    await send(appA, "/auth/register-key", { method: "POST", json: { api_key: KEY } });
    await send(appA, "/hypervisor/endpoints", { method: "POST", json: hypervisor });
    first.close();

    const second = await Deno.openKv(path);
    const appB = await createBackendApp(deps({ SERVICE_ENCRYPTION_KEY: "key B" }, second));
    const check = await send(appB, "/hypervisor/endpoints/1/credentials/check");
    assert.equal(check.status, 409);
    const body = await check.json();
    assert.equal(body.reason, "credential_undecryptable");
    assert.match(body.detail, /endpoint 1 \("pve"\)/);
    assert.ok(!body.detail.includes("pve-password"));

    // Changing one secret must re-seal the other, which cannot be opened: refused, nothing written.
    const before = (await second.get(keys.hypervisorEndpoint(1))).value;
    const put = await send(appB, "/hypervisor/endpoints/1", {
      method: "PUT",
      json: { name: "pve", ip: "10.0.0.5", token_name: "root@pam!x", token_value: "new" },
    });
    assert.equal(put.status, 409);
    assert.deepEqual((await second.get(keys.hypervisorEndpoint(1))).value, before);

    // Tampering with the stored value under the right key is reported the same way.
    const entry = await second.get<Record<string, string>>(keys.hypervisorEndpoint(1));
    const tampered = entry.value!.password.slice(0, -6) + "AAAAAA";
    await second.set(entry.key, { ...entry.value, password: tampered });
    const appA2 = await createBackendApp(deps({ SERVICE_ENCRYPTION_KEY: "key A" }, second));
    const tamperCheck = await send(appA2, "/hypervisor/endpoints/1/credentials/check");
    assert.equal(tamperCheck.status, 409);
    second.close();
  } finally {
    await Deno.remove(path).catch(() => {});
  }
});

Deno.test("encryption: an unreachable plugin is not 'no key': 502, nothing stored in plaintext", async () => {
  const down: typeof fetch = () => Promise.reject(new TypeError("connection refused"));
  await using h = await registered({}, { fetch: down });
  await h.call("/inventory/endpoint", { method: "POST", key: KEY, json: inventory });
  const res = await h.call("/hypervisor/endpoints", { method: "POST", key: KEY, json: hypervisor });
  assert.equal(res.status, 502);
  const body = await res.json();
  assert.equal(body.reason, "encryption_key_unavailable");
  assert.match(body.detail, /connection refused/);
  assert.deepEqual(await (await h.call("/hypervisor/endpoints", { key: KEY })).json(), []);
});

Deno.test({
  name: "encryption: a self-signed HTTPS inventory is read when its copy says verify_ssl false",
  ignore: !HAS_OPENSSL,
}, async () => {
  const tls = await selfSigned("inventory.test");
  {
    const server = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      cert: tls.cert,
      key: tls.key,
      onListen() {},
    }, (req) =>
      new URL(req.url).pathname === "/api/plugins/service/settings/runtime/" &&
        req.headers.get("authorization") === "Token inv-token-1"
        ? Response.json({ encryption_key: "tls plugin value" })
        : Response.json({ detail: "Not found." }, { status: 404 }));
    try {
      const port = server.addr.port;
      await using h = await registered({ SERVICE_ALLOW_LOOPBACK_TARGETS: "true" });
      const copy = { ...inventory, port, use_https: true };
      // Verification on (the default): the self-signed certificate is refused, nothing is stored.
      await h.call("/inventory/endpoint", { method: "POST", key: KEY, json: copy });
      const refused = await h.call("/hypervisor/endpoints", {
        method: "POST",
        key: KEY,
        json: hypervisor,
      });
      assert.equal(refused.status, 502);
      await refused.body?.cancel();
      // Verification off: the key is read over TLS and protects the secret.
      await h.call("/inventory/endpoint/1", {
        method: "PUT",
        key: KEY,
        json: { ...copy, verify_ssl: false },
      });
      const created = await h.call("/hypervisor/endpoints", {
        method: "POST",
        key: KEY,
        json: hypervisor,
      });
      assert.equal(created.status, 201);
      assert.equal((await created.json()).key_source, "plugin");
      const hyp = (await h.deps.kv.get<{ password: string }>(keys.hypervisorEndpoint(1))).value!;
      assert.equal(await open(hyp.password, "tls plugin value"), "pve-password");
    } finally {
      await server.shutdown();
    }
  }
});

Deno.test("encryption: after a plugin key rotation new secrets use the new key at once, and old reads recover", async () => {
  let current = "first plugin value";
  const rotating: typeof fetch = () => Promise.resolve(Response.json({ encryption_key: current }));
  await using h = await registered({}, { fetch: rotating });
  await h.call("/inventory/endpoint", { method: "POST", key: KEY, json: inventory });
  await h.call("/hypervisor/endpoints", { method: "POST", key: KEY, json: hypervisor });
  assert.equal(
    (await h.call("/hypervisor/endpoints/1/credentials/check", { key: KEY })).status,
    200,
  );

  current = "second plugin value"; // the plugin re-encrypts its own records; the backend is told nothing
  const put = await h.call("/hypervisor/endpoints/1", {
    method: "PUT",
    key: KEY,
    json: { name: "pve", ip: "10.0.0.5", password: "rotated-password" },
  });
  assert.equal(put.status, 200, "sealing reads the key fresh, so it is not the cached old one");
  const stored = (await h.deps.kv.get<{ password: string }>(keys.hypervisorEndpoint(1))).value!;
  assert.equal(await open(stored.password, "second plugin value"), "rotated-password");
  // The read path had cached the first key; a failed decryption asks the plugin again.
  const check = await h.call("/hypervisor/endpoints/1/credentials/check", { key: KEY });
  assert.equal(check.status, 200);
  await check.body?.cancel();
});
