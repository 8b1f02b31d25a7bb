import assert from "node:assert/strict";
import { KEY, registered } from "./_setup.ts";
import { keys } from "../../../storage/kv/keys.ts";

const ENC_KEY = "a configured encryption value";
const inventory = {
  name: "netbox",
  ip: "10.1.2.3",
  port: 443,
  token_version: "v1",
  token: "0123456789abcdef0123456789abcdef01234567",
};
const hypervisor = {
  name: "pve-a (inv:1)",
  ip: "10.9.9.9",
  port: 8006,
  username: "root@pam",
  password: "hunter2-hunter2",
};

Deno.test("inventory endpoint: CRUD, defaults, singleton 409, secrets never returned", async () => {
  await using h = await registered({ SERVICE_ENCRYPTION_KEY: ENC_KEY });
  assert.deepEqual(await (await h.call("/inventory/endpoint", { key: KEY })).json(), []);

  const created = await h.call("/inventory/endpoint", {
    method: "POST",
    key: KEY,
    json: inventory,
  });
  assert.equal(created.status, 201);
  const record = await created.json();
  assert.deepEqual(record, {
    id: 1,
    name: "netbox",
    ip: "10.1.2.3",
    port: 443,
    use_https: true,
    verify_ssl: true,
    token_version: "v1",
    token_key: null,
    has_token: true,
    key_source: "env",
  });

  const second = await h.call("/inventory/endpoint", {
    method: "POST",
    key: KEY,
    json: { ...inventory, name: "b" },
  });
  assert.equal(second.status, 409);
  assert.deepEqual(await second.json(), { detail: "Only one inventory endpoint is allowed" });

  const stored = (await h.deps.kv.get<{ token: string }>(keys.inventoryEndpoint(1))).value!;
  assert.match(stored.token, /^enc:gAAAAA/);
  assert.ok(!stored.token.includes(inventory.token));

  // PUT without token keeps the stored one while the destination stays (a move, or turning
  // certificate verification off, must send it again: SECURITY.md); switching to v2 needs
  // token_key.
  const put = await h.call("/inventory/endpoint/1", {
    method: "PUT",
    key: KEY,
    json: {
      name: "nb2",
      ip: "10.1.2.3",
      port: 443,
      verify_ssl: true,
      token_version: "v1",
    },
  });
  assert.equal(put.status, 200);
  const updated = await put.json();
  assert.equal(updated.name, "nb2");
  assert.equal(updated.verify_ssl, true);
  assert.equal(updated.has_token, true);
  assert.equal(
    (await h.deps.kv.get<{ token: string }>(keys.inventoryEndpoint(1))).value!.token,
    stored.token,
  );

  const v2 = await h.call("/inventory/endpoint/1", {
    method: "PUT",
    key: KEY,
    json: { ...inventory, token_version: "v2" },
  });
  assert.equal(v2.status, 422);
  const problem = await v2.json();
  assert.deepEqual(problem.detail.map((d: { loc: string[] }) => d.loc), [["body", "token_key"]]);

  const v2ok = await h.call("/inventory/endpoint/1", {
    method: "PUT",
    key: KEY,
    json: { ...inventory, token_version: "v2", token_key: "abcdef123456", token: "s3cret" },
  });
  assert.equal(v2ok.status, 200);
  assert.equal((await v2ok.json()).token_key, "abcdef123456");

  assert.equal((await h.call("/inventory/endpoint/1", { key: KEY })).status, 200);
  const check = await h.call("/inventory/endpoint/1/credentials/check", { key: KEY });
  assert.deepEqual(await check.json(), { ok: true, key_source: "env" });
  const listed = JSON.stringify(await (await h.call("/inventory/endpoint", { key: KEY })).json());
  assert.ok(!listed.includes("s3cret") && !listed.includes(inventory.token));

  assert.equal((await h.call("/inventory/endpoint/1", { method: "DELETE", key: KEY })).status, 204);
  const gone = await h.call("/inventory/endpoint/1", { key: KEY });
  assert.equal(gone.status, 404);
  assert.deepEqual(await gone.json(), { detail: "Inventory endpoint not found." });
  // The singleton frees up once deleted.
  assert.equal(
    (await h.call("/inventory/endpoint", { method: "POST", key: KEY, json: inventory })).status,
    201,
  );
});

Deno.test("inventory endpoint: v1 without token and v2 without key+token name the fields", async () => {
  await using h = await registered();
  const v1 = await h.call("/inventory/endpoint", {
    method: "POST",
    key: KEY,
    json: { ...inventory, token: undefined },
  });
  assert.equal(v1.status, 422);
  assert.deepEqual((await v1.json()).detail.map((d: { loc: string[] }) => d.loc[1]), ["token"]);
  const v2 = await h.call("/inventory/endpoint", {
    method: "POST",
    key: KEY,
    json: { ...inventory, token_version: "v2", token: undefined },
  });
  assert.deepEqual((await v2.json()).detail.map((d: { loc: string[] }) => d.loc[1]).sort(), [
    "token",
    "token_key",
  ]);
  assert.deepEqual(await (await h.call("/inventory/endpoint", { key: KEY })).json(), []);
});

Deno.test("inventory endpoint: concurrent creates leave exactly one", async () => {
  await using h = await registered();
  const results = await Promise.all(
    Array.from(
      { length: 10 },
      () => h.call("/inventory/endpoint", { method: "POST", key: KEY, json: inventory }),
    ),
  );
  assert.equal(results.filter((r) => r.status === 201).length, 1);
  assert.equal(results.filter((r) => r.status === 409).length, 9);
  await Promise.all(results.map((r) => r.body?.cancel()));
  assert.equal((await (await h.call("/inventory/endpoint", { key: KEY })).json()).length, 1);
});

Deno.test("hypervisor endpoints: CRUD, defaults, unique names, credential rules", async () => {
  await using h = await registered({ SERVICE_ENCRYPTION_KEY: ENC_KEY });
  const created = await h.call("/hypervisor/endpoints", {
    method: "POST",
    key: KEY,
    json: hypervisor,
  });
  assert.equal(created.status, 201);
  const record = await created.json();
  assert.deepEqual(record, {
    id: 1,
    name: "pve-a (inv:1)",
    ip: "10.9.9.9",
    port: 8006,
    use_https: true,
    verify_ssl: false,
    username: "root@pam",
    token_name: null,
    has_password: true,
    has_token_value: false,
    allow_writes: false,
    enabled: true,
    timeout: 30,
    key_source: "env",
  });

  const dup = await h.call("/hypervisor/endpoints", { method: "POST", key: KEY, json: hypervisor });
  assert.equal(dup.status, 409);
  assert.match((await dup.json()).detail, /already exists/);

  const noCreds = await h.call("/hypervisor/endpoints", {
    method: "POST",
    key: KEY,
    json: { name: "x", ip: "10.0.0.1", token_name: "root@pam!ci" },
  });
  assert.equal(noCreds.status, 422);
  assert.deepEqual((await noCreds.json()).detail.map((d: { loc: string[] }) => d.loc[1]).sort(), [
    "password",
    "token_value",
  ]);

  const token = await h.call("/hypervisor/endpoints", {
    method: "POST",
    key: KEY,
    json: {
      name: "pve-b",
      ip: "pve-b.lan",
      token_name: "root@pam!ci",
      token_value: "uuid-secret",
      allow_writes: true,
    },
  });
  assert.equal(token.status, 201);
  const tokenRecord = await token.json();
  assert.equal(tokenRecord.has_token_value, true);
  assert.equal(tokenRecord.allow_writes, true);

  // Renaming onto a taken name is refused; renaming elsewhere frees the old name.
  const clash = await h.call(`/hypervisor/endpoints/${tokenRecord.id}`, {
    method: "PUT",
    key: KEY,
    json: { name: "pve-a (inv:1)", ip: "pve-b.lan" },
  });
  assert.equal(clash.status, 409);
  const renamed = await h.call("/hypervisor/endpoints/1", {
    method: "PUT",
    key: KEY,
    json: { ...hypervisor, name: "pve-z" },
  });
  assert.equal(renamed.status, 200);
  assert.equal(
    (await h.call("/hypervisor/endpoints", { method: "POST", key: KEY, json: hypervisor })).status,
    201,
    "the old name is free again",
  );

  const all = await (await h.call("/hypervisor/endpoints", { key: KEY })).json();
  assert.deepEqual(all.map((e: { name: string }) => e.name).sort(), [
    "pve-a (inv:1)",
    "pve-b",
    "pve-z",
  ]);
  assert.ok(
    !JSON.stringify(all).includes("hunter2") && !JSON.stringify(all).includes("uuid-secret"),
  );

  const raw = (await h.deps.kv.get<{ password: string }>(keys.hypervisorEndpoint(1))).value!;
  assert.match(raw.password, /^enc:/);

  assert.equal(
    (await h.call("/hypervisor/endpoints/1", { method: "DELETE", key: KEY })).status,
    204,
  );
  assert.equal((await h.call("/hypervisor/endpoints/1", { key: KEY })).status, 404);
  assert.equal(
    (await h.call("/hypervisor/endpoints/1", { method: "DELETE", key: KEY })).status,
    404,
  );
});

Deno.test("hypervisor endpoints: PUT without secrets keeps them; clearing the only credential is refused", async () => {
  await using h = await registered({ SERVICE_ENCRYPTION_KEY: ENC_KEY });
  await h.call("/hypervisor/endpoints", { method: "POST", key: KEY, json: hypervisor });
  const before =
    (await h.deps.kv.get<{ password: string }>(keys.hypervisorEndpoint(1))).value!.password;
  const put = await h.call("/hypervisor/endpoints/1", {
    method: "PUT",
    key: KEY,
    json: { name: hypervisor.name, ip: hypervisor.ip, enabled: false },
  });
  assert.equal(put.status, 200);
  const body = await put.json();
  assert.equal(body.enabled, false);
  assert.equal(body.has_password, true);
  assert.equal(body.username, "root@pam");
  assert.equal(
    (await h.deps.kv.get<{ password: string }>(keys.hypervisorEndpoint(1))).value!.password,
    before,
  );

  const cleared = await h.call("/hypervisor/endpoints/1", {
    method: "PUT",
    key: KEY,
    json: { name: hypervisor.name, ip: "10.9.9.10", password: null },
  });
  assert.equal(cleared.status, 422);
});
