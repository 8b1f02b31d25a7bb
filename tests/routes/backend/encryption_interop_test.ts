/**
 * Secrets sealed by someone else: Fernet tokens made by another implementation, and values
 * re-sealed under a rotated plugin key while this process still caches the old one.
 */
import assert from "node:assert/strict";
import { createBackendServices } from "../../../routes/backend/mod.ts";
import {
  deriveFernetKey,
  fernetDecrypt,
  fernetEncrypt,
  importFernetKey,
} from "../../../domain/fernet.ts";
import { keys } from "../../../storage/kv/keys.ts";
import { KEY, registered } from "./_setup.ts";

/**
 * Made once with Python's `cryptography` 48.0.0 (not with our code), then recorded here:
 *   key = base64.urlsafe_b64encode(hashlib.sha256(b"shared").digest())
 *   Fernet(key).encrypt(plaintext.encode())
 */
const PYTHON_TOKENS: Array<[plaintext: string, token: string]> = [
  [
    "from-python",
    "gAAAAABrBJiSBEXy2jI4gOOBu7MhaAIDoAvGJYC0usrFNIiLE3RnsjfoTEknVkLwYSPgeWViFpoHB9Wuda6JyyzksIOrn5isdw==",
  ],
  [
    "pässwörd ✓",
    "gAAAAABrBJiSHTSIOL81o6m6QYvyK-7kbtZWtWzySJ1v6LWG8I0BLC7ZZZTqZRp6Zs7OhqLWUSE7g-VJ1EnewBfjGcrEClxZ-Q==",
  ],
];

const hypervisor = { name: "pve", ip: "10.0.0.5", username: "root@pam", password: "pve-password" };

Deno.test("encryption: a secret sealed by Python's cryptography with the same configured value opens to its plaintext", async () => {
  await using h = await registered({ SERVICE_ENCRYPTION_KEY: "shared" });
  const created = await h.call("/hypervisor/endpoints", {
    method: "POST",
    key: KEY,
    json: hypervisor,
  });
  assert.equal(created.status, 201);
  await created.body?.cancel();
  const vault = createBackendServices(h.deps).vault;
  for (const [plaintext, token] of PYTHON_TOKENS) {
    const entry = await h.deps.kv.get<Record<string, unknown>>(keys.hypervisorEndpoint(1));
    await h.deps.kv.set(entry.key, { ...entry.value, password: `enc:${token}` });
    const check = await h.call("/hypervisor/endpoints/1/credentials/check", { key: KEY });
    assert.deepEqual([check.status, await check.json()], [200, { ok: true, key_source: "env" }]);
    const stored = (await h.deps.kv.get<{ password: string }>(keys.hypervisorEndpoint(1))).value!;
    assert.equal(await vault.open(stored.password, "env", "pve"), plaintext);
  }
});

Deno.test("encryption: a value re-sealed under a rotated plugin key opens: the failed decryption asks the plugin again, once", async () => {
  let current = "first plugin value";
  let reads = 0;
  const rotating: typeof fetch = () => {
    reads++;
    return Promise.resolve(Response.json({ encryption_key: current }));
  };
  await using h = await registered({}, { fetch: rotating });
  const inventory = {
    name: "nb",
    ip: "192.0.2.20", // nothing is sent there: `rotating` answers every read
    port: 8800,
    use_https: false,
    token_version: "v1",
    token: "inv-token-1",
  };
  await (await h.call("/inventory/endpoint", { method: "POST", key: KEY, json: inventory })).body
    ?.cancel();
  await (await h.call("/hypervisor/endpoints", { method: "POST", key: KEY, json: hypervisor }))
    .body?.cancel();
  const first = await h.call("/hypervisor/endpoints/1/credentials/check", { key: KEY });
  assert.equal(first.status, 200, "opens with the first key, which is now cached");
  await first.body?.cancel();

  // The plugin rotates its key; another writer (the plugin's push through another backend
  // process) stores the secret sealed under the new key. This process still caches the old key.
  current = "second plugin value";
  const sealed = await fernetEncrypt(
    await importFernetKey(await deriveFernetKey(current)),
    "rotated-password",
  );
  const entry = await h.deps.kv.get<Record<string, unknown>>(keys.hypervisorEndpoint(1));
  assert.equal(entry.value!.key_source, "plugin");
  await h.deps.kv.set(entry.key, { ...entry.value, password: `enc:${sealed}` });

  const before = reads;
  const check = await h.call("/hypervisor/endpoints/1/credentials/check", { key: KEY });
  assert.deepEqual([check.status, await check.json()], [200, { ok: true, key_source: "plugin" }]);
  assert.equal(reads - before, 1, "exactly one fresh read of the plugin key");
});

Deno.test("encryption: restarted without SERVICE_ENCRYPTION_KEY, sealed secrets are a clear 409, never plaintext or a 500", async () => {
  const path = await Deno.makeTempFile({ suffix: ".kv" });
  try {
    {
      await using first = await registered({ SERVICE_ENCRYPTION_KEY: "env value" }, {
        kv: await Deno.openKv(path),
      });
      const created = await first.call("/hypervisor/endpoints", {
        method: "POST",
        key: KEY,
        json: hypervisor,
      });
      assert.equal(created.status, 201);
      await created.body?.cancel();
    }
    const kv = await Deno.openKv(path);
    const { backend } = await import("./_setup.ts");
    await using second = await backend({}, { kv });
    const before = (await kv.get(keys.hypervisorEndpoint(1))).value;
    const check = await second.call("/hypervisor/endpoints/1/credentials/check", { key: KEY });
    const body = await check.json();
    assert.equal(check.status, 409, JSON.stringify(body));
    assert.equal(body.reason, "credential_undecryptable");
    assert.match(body.detail, /SERVICE_ENCRYPTION_KEY is not set/);
    assert.match(body.detail, /key source: env/);
    // The listing still answers, and never shows a secret.
    const list = await second.call("/hypervisor/endpoints", { key: KEY });
    assert.equal(list.status, 200);
    assert.ok(!(await list.text()).includes("pve-password"));
    // Changing another field must re-seal the secret it cannot open: refused, nothing written.
    const put = await second.call("/hypervisor/endpoints/1", {
      method: "PUT",
      key: KEY,
      json: { ...hypervisor, password: undefined, token_name: "root@pam!x", token_value: "new" },
    });
    assert.equal(put.status, 409, await put.clone().text());
    await put.body?.cancel();
    assert.deepEqual((await kv.get(keys.hypervisorEndpoint(1))).value, before);
  } finally {
    await Deno.remove(path).catch(() => {});
  }
});

Deno.test("encryption: a plugin key set after hypervisor secrets were stored in plaintext seals them on rekey (none → plugin)", async () => {
  let pluginKey: string | null = null;
  const plugin: typeof fetch = () =>
    Promise.resolve(Response.json({ custom_fields_enabled: false, encryption_key: pluginKey }));
  await using h = await registered({}, { fetch: plugin });
  const inventory = {
    name: "nb",
    ip: "192.0.2.20", // nothing is sent there: `plugin` answers every read
    port: 8800,
    use_https: false,
    token_version: "v1",
    token: "inv-token-1",
  };
  for (
    const [path, json] of [["/inventory/endpoint", inventory], [
      "/hypervisor/endpoints",
      hypervisor,
    ]]
  ) {
    const res = await h.call(path as string, { method: "POST", key: KEY, json });
    assert.equal(res.status, 201);
    await res.body?.cancel();
  }
  const before = (await h.deps.kv.get<Record<string, string>>(keys.hypervisorEndpoint(1))).value!;
  assert.deepEqual([before.key_source, before.password], ["none", "pve-password"]);

  pluginKey = "the plugin key, set later";
  const rekey = await h.call("/credentials/rekey", { method: "POST", key: KEY });
  assert.equal(rekey.status, 200);
  assert.equal(
    (await rekey.json()).resealed,
    1,
    "the hypervisor secret (the inventory token stays)",
  );
  const after = (await h.deps.kv.get<Record<string, string>>(keys.hypervisorEndpoint(1))).value!;
  assert.equal(after.key_source, "plugin");
  const key = await importFernetKey(await deriveFernetKey(pluginKey));
  assert.equal(await fernetDecrypt(key, after.password.slice(4)), "pve-password");
});
