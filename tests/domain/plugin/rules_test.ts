import assert from "node:assert/strict";
import {
  checkDomainOrIp,
  checkInventoryToken,
  checkSsh,
  DOMAIN_OR_IP_MESSAGE,
  FINGERPRINT_REQUIRED_FOR_REUSE,
  isValidDomain,
} from "../../../domain/plugin/validation.ts";
import {
  generateBackendToken,
  isEncrypted,
  openSecret,
  sealSecret,
} from "../../../domain/plugin/secrets.ts";
import { parseTenantRef, visibleToTenant } from "../../../domain/plugin/tenants.ts";
import {
  resolveSshSecrets,
  type SshEndpointFacts,
  sshReadiness,
  stripRealm,
} from "../../../domain/plugin/ssh.ts";
import { deriveFernetKey, fernetEncrypt, importFernetKey } from "../../../domain/fernet.ts";

const FP = "SHA256:" + "A".repeat(43);

Deno.test("domain-or-IP: both missing puts the same message on both fields", () => {
  assert.deepEqual(checkDomainOrIp({ domain: null, ip_address: null }), {
    domain: [DOMAIN_OR_IP_MESSAGE],
    ip_address: [DOMAIN_OR_IP_MESSAGE],
  });
  assert.deepEqual(checkDomainOrIp({ domain: "  ", ip_address: undefined }), {
    domain: [DOMAIN_OR_IP_MESSAGE],
    ip_address: [DOMAIN_OR_IP_MESSAGE],
  });
  assert.deepEqual(checkDomainOrIp({ domain: "pve.example.com", ip_address: null }), {});
  assert.deepEqual(checkDomainOrIp({ domain: null, ip_address: 3 }), {});
  assert.ok(checkDomainOrIp({ domain: "bad_host!", ip_address: null }).domain);
});

Deno.test("domain accepts FQDN, hostname and localhost, rejects junk", () => {
  for (const ok of ["localhost", "pve1", "pve.example.com", "pve.example.com.", "a-b.c"]) {
    assert.ok(isValidDomain(ok), ok);
  }
  for (const bad of ["", "-a.com", "a..b", "a b", "x".repeat(64) + ".com", "http://x"]) {
    assert.ok(!isValidDomain(bad), bad);
  }
});

Deno.test("inventory token rules: v1 needs the reference, v2 needs key and secret", () => {
  assert.deepEqual(checkInventoryToken({ token_version: "v1", token: 4, hasSecret: false }), {});
  assert.ok(checkInventoryToken({ token_version: "v1", token: null, hasSecret: false }).token);
  assert.ok(
    checkInventoryToken({ token_version: "v1", token: 4, token_key: "k", hasSecret: false })
      .token_key,
  );
  assert.deepEqual(
    checkInventoryToken({ token_version: "v2", token: null, token_key: "k", hasSecret: true }),
    {},
  );
  const v2 = checkInventoryToken({ token_version: "v2", token: null, hasSecret: false });
  assert.deepEqual(Object.keys(v2).sort(), ["token_key", "token_secret"]);
  assert.ok(
    checkInventoryToken({ token_version: "v2", token: 1, token_key: "k", hasSecret: true }).token,
  );
});

Deno.test("ssh rules: reuse needs a pinned fingerprint; format is checked", () => {
  assert.deepEqual(checkSsh({ ssh_credential_source: "reuse_endpoint" }), {
    ssh_known_host_fingerprint: [FINGERPRINT_REQUIRED_FOR_REUSE],
  });
  assert.deepEqual(
    checkSsh({ ssh_credential_source: "reuse_endpoint", ssh_known_host_fingerprint: FP }),
    {},
  );
  assert.ok(checkSsh({ ssh_known_host_fingerprint: "MD5:aa:bb" }).ssh_known_host_fingerprint);
  assert.deepEqual(checkSsh({ ssh_credential_source: "dedicated" }), {});
});

Deno.test("secrets: sealed with the key as enc:<fernet>, opened back; plaintext without a key", async () => {
  const sealed = await sealSecret("s3cret", "my key");
  assert.ok(isEncrypted(sealed));
  assert.deepEqual(await openSecret(sealed, " my key "), { ok: true, value: "s3cret" });
  const wrong = await openSecret(sealed, "other");
  assert.equal(wrong.ok, false);
  assert.equal(!wrong.ok && wrong.reason, "undecryptable");
  const missing = await openSecret(sealed, null);
  assert.equal(!missing.ok && missing.reason, "missing_key");
  assert.equal(await sealSecret("plain", null), "plain");
  assert.deepEqual(await openSecret("plain", "k"), { ok: true, value: "plain" });
});

Deno.test("secrets: a value sealed by the backend's derivation opens here (same Fernet key)", async () => {
  const key = await importFernetKey(await deriveFernetKey("shared"));
  const stored = "enc:" + await fernetEncrypt(key, "pw");
  assert.deepEqual(await openSecret(stored, "shared"), { ok: true, value: "pw" });
});

Deno.test("backend token: 64 URL-safe characters, fresh each time", () => {
  const a = generateBackendToken();
  assert.match(a, /^[A-Za-z0-9_-]{64}$/);
  assert.notEqual(a, generateBackendToken());
});

Deno.test("tenant allow-list: explicit grants hide the global pool", () => {
  const eps = [
    { id: 1, allowed_tenants: [] },
    { id: 2, allowed_tenants: [7] },
    { id: 3, allowed_tenants: [7, 8] },
    { id: 4, allowed_tenants: [9] },
  ];
  assert.deepEqual(visibleToTenant(eps, 7).map((e) => e.id), [2, 3]);
  assert.deepEqual(visibleToTenant(eps, 8).map((e) => e.id), [3]);
  assert.deepEqual(visibleToTenant(eps, 5).map((e) => e.id), [1]);
  assert.deepEqual(parseTenantRef("12"), { id: 12 });
  assert.deepEqual(parseTenantRef("acme"), { slug: "acme" });
  assert.equal(parseTenantRef(" "), null);
});

function facts(over: Partial<SshEndpointFacts>): SshEndpointFacts {
  return {
    domain: "pve.example.com",
    ip: null,
    username: "root@pam",
    password: null,
    ssh_credential_source: "dedicated",
    ssh_username: null,
    ssh_auth_method: "password",
    ssh_known_host_fingerprint: null,
    ssh_password: null,
    ssh_private_key: null,
    ...over,
  };
}

Deno.test("ssh: realm stripping", () => {
  assert.equal(stripRealm("root@pam"), "root");
  assert.equal(stripRealm("ops@pve!term"), "ops");
  assert.equal(stripRealm("admin"), "admin");
});

Deno.test("ssh reuse: password auth, stripped user, endpoint password, empty key", async () => {
  const key = "k";
  const e = facts({
    ssh_credential_source: "reuse_endpoint",
    password: await sealSecret("pw", key),
    ssh_known_host_fingerprint: FP,
  });
  assert.deepEqual(await resolveSshSecrets(e, [key]), {
    ok: true,
    secrets: { auth_method: "password", username: "root", password: "pw", private_key: "" },
  });
  assert.deepEqual(sshReadiness(e), {
    has_ssh_password: true,
    has_ssh_private_key: false,
    has_ssh_terminal_credentials: true,
  });
  const tokenOnly = { ...e, password: null };
  const refused = await resolveSshSecrets(tokenOnly, [key]);
  assert.equal(refused.ok, false);
  assert.equal(!refused.ok && refused.outcome, "unprocessable");
  assert.equal(sshReadiness(tokenOnly).has_ssh_terminal_credentials, false);
  const unpinned = await resolveSshSecrets({ ...e, ssh_known_host_fingerprint: null }, [key]);
  assert.equal(!unpinned.ok && unpinned.outcome, "unprocessable");
  assert.equal(
    sshReadiness({ ...e, ssh_known_host_fingerprint: null }).has_ssh_terminal_credentials,
    false,
  );
});

Deno.test("ssh dedicated: decrypts stored secrets, needs the key", async () => {
  const key = "k";
  const e = facts({
    ssh_username: "term",
    ssh_auth_method: "key",
    ssh_private_key: await sealSecret("-----BEGIN KEY-----", key),
  });
  assert.deepEqual(await resolveSshSecrets(e, [key]), {
    ok: true,
    secrets: {
      auth_method: "key",
      username: "term",
      password: "",
      private_key: "-----BEGIN KEY-----",
    },
  });
  const noKey = await resolveSshSecrets(e, []);
  assert.equal(!noKey.ok && noKey.outcome, "conflict");
  const rotated = await resolveSshSecrets(e, ["new key", key]);
  assert.equal(rotated.ok, true, "a key replaced by a rotation still opens");
  const wrongKey = await resolveSshSecrets(e, ["other"]);
  assert.equal(!wrongKey.ok && wrongKey.body.reason, "credential_undecryptable");
  assert.deepEqual(sshReadiness(e), {
    has_ssh_password: false,
    has_ssh_private_key: true,
    has_ssh_terminal_credentials: true,
  });
  const pwMissing = await resolveSshSecrets({ ...e, ssh_auth_method: "password" }, [key]);
  assert.equal(!pwMissing.ok && pwMissing.outcome, "unprocessable");
});
