import assert from "node:assert/strict";
import { createBackendApp, createBackendServices } from "../../../routes/backend/mod.ts";
import { parseConfig } from "../../../config.ts";
import { rekeyAll } from "../../../domain/rekey.ts";
import { keys } from "../../../storage/kv/keys.ts";
import type { HypervisorEndpointRecord } from "../../../storage/ports.ts";
import { KEY, registered } from "./_setup.ts";

const inventory = {
  name: "nb",
  ip: "127.0.0.1",
  port: 8800,
  use_https: false,
  token_version: "v1",
  token: "inv-token-1",
};
const hypervisor = { name: "lab", ip: "10.0.0.5", username: "root@pam", password: "pve-password" };

/** An inventory whose plugin has no encryption key set (so nothing protects a secret yet). */
const noPluginKey: typeof fetch = () =>
  Promise.resolve(Response.json({ custom_fields_enabled: false, encryption_key: null }));

/** The same KV seen by a process started with other variables (e.g. a key set since). */
async function restartedWith(deps: Awaited<ReturnType<typeof registered>>["deps"], env = {}) {
  const config = parseConfig({ SERVICE_KV_PATH: ":memory:", SERVICE_SURFACES: "backend", ...env });
  const app = await createBackendApp({ ...deps, config });
  return (path: string, init: { method?: string; json?: unknown } = {}) =>
    app.request(path, {
      method: init.method ?? "GET",
      headers: {
        "X-Service-API-Key": KEY,
        ...(init.json === undefined ? {} : { "content-type": "application/json" }),
      },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    }, { remoteAddr: { hostname: "192.0.2.10" } });
}

const stored = async (deps: { kv: Deno.Kv }) => ({
  inv: (await deps.kv.get<{ token: string; key_source: string }>(keys.inventoryEndpoint(1))).value!,
  hyp: (await deps.kv.get<HypervisorEndpointRecord>(keys.hypervisorEndpoint(1))).value!,
});

Deno.test("rekey: a save after SERVICE_ENCRYPTION_KEY is set seals the secrets it keeps (key_source none → env)", async () => {
  await using h = await registered({}, { fetch: noPluginKey });
  await h.call("/inventory/endpoint", { method: "POST", key: KEY, json: inventory });
  await h.call("/hypervisor/endpoints", { method: "POST", key: KEY, json: hypervisor });
  assert.equal((await stored(h.deps)).hyp.password, "pve-password");

  const call = await restartedWith(h.deps, { SERVICE_ENCRYPTION_KEY: "now there is a key" });
  const put = await call("/hypervisor/endpoints/1", {
    method: "PUT",
    json: { name: "lab", ip: "10.0.0.5", username: "root@pam", timeout: 12 },
  });
  const body = await put.json();
  assert.equal(put.status, 200, JSON.stringify(body));
  assert.equal(body.key_source, "env");
  assert.equal(body.timeout, 12);
  const { hyp } = await stored(h.deps);
  assert.match(hyp.password!, /^enc:/);
  assert.deepEqual(await (await call("/hypervisor/endpoints/1/credentials/check")).json(), {
    ok: true,
    key_source: "env",
  });

  const inv = await call("/inventory/endpoint/1", {
    method: "PUT",
    json: { ...inventory, token: undefined },
  });
  assert.equal((await inv.json()).key_source, "env");
  assert.match((await stored(h.deps)).inv.token, /^enc:/);
});

Deno.test("rekey: POST /credentials/rekey seals every plaintext secret, then reports them unchanged", async () => {
  await using h = await registered({}, { fetch: noPluginKey });
  await h.call("/inventory/endpoint", { method: "POST", key: KEY, json: inventory });
  await h.call("/hypervisor/endpoints", { method: "POST", key: KEY, json: hypervisor });
  await h.call("/hypervisor/endpoints", {
    method: "POST",
    key: KEY,
    json: { name: "tokens", ip: "10.0.0.6", token_name: "root@pam!ci", token_value: "tv-secret" },
  });

  const call = await restartedWith(h.deps, { SERVICE_ENCRYPTION_KEY: "now there is a key" });
  const first = await call("/credentials/rekey", { method: "POST" });
  assert.equal(first.status, 200);
  assert.deepEqual(await first.json(), { resealed: 3, unchanged: 0, failed: [] });
  const { inv, hyp } = await stored(h.deps);
  assert.equal(inv.key_source, "env");
  assert.match(inv.token, /^enc:/);
  assert.match(hyp.password!, /^enc:/);
  for (const id of [1, 2]) {
    assert.equal((await call(`/hypervisor/endpoints/${id}/credentials/check`)).status, 200);
  }
  assert.equal((await call("/inventory/endpoint/1/credentials/check")).status, 200);

  const again = await call("/credentials/rekey", { method: "POST" });
  assert.deepEqual(await again.json(), { resealed: 0, unchanged: 3, failed: [] });

  // Started again without the key: nothing is downgraded; what cannot be opened is named.
  const none = await (await h.call("/credentials/rekey", { method: "POST", key: KEY })).json();
  assert.equal(none.resealed, 0);
  assert.equal(none.unchanged, 1);
  assert.deepEqual(none.failed.map((f: { endpoint: string }) => f.endpoint), [
    'hypervisor endpoint 1 ("lab")',
    'hypervisor endpoint 2 ("tokens")',
  ]);
  assert.match(none.failed[0].reason, /SERVICE_ENCRYPTION_KEY is not set/);
  assert.match((await stored(h.deps)).hyp.password!, /^enc:/, "never downgraded to plaintext");
});

Deno.test("rekey: a secret sealed under another key is reported by endpoint and left exactly as it was", async () => {
  await using h = await registered({ SERVICE_ENCRYPTION_KEY: "the old key" });
  await h.call("/hypervisor/endpoints", { method: "POST", key: KEY, json: hypervisor });
  const before = (await stored(h.deps)).hyp;

  const call = await restartedWith(h.deps, { SERVICE_ENCRYPTION_KEY: "a different key" });
  const res = await call("/credentials/rekey", { method: "POST" });
  const body = await res.json();
  assert.equal(res.status, 200);
  assert.equal(body.resealed, 0);
  assert.equal(body.failed.length, 1);
  assert.equal(body.failed[0].endpoint, 'hypervisor endpoint 1 ("lab")');
  assert.match(body.failed[0].reason, /cannot be decrypted/);
  assert.deepEqual((await stored(h.deps)).hyp, before);
});

Deno.test("rekey: an edit that lands while a record is re-sealed is kept (compare-and-set, then retry)", async () => {
  await using h = await registered();
  await h.call("/hypervisor/endpoints", { method: "POST", key: KEY, json: hypervisor });
  const services = createBackendServices({
    ...h.deps,
    config: parseConfig({ SERVICE_KV_PATH: ":memory:", SERVICE_ENCRYPTION_KEY: "k2" }),
  });
  let raced = false;
  const racing = {
    list: () => services.hypervisorEndpoints.list(),
    getVersioned: (id: number) => services.hypervisorEndpoints.getVersioned(id),
    async replaceIfUnchanged(id: number, version: string, record: HypervisorEndpointRecord) {
      if (!raced) {
        raced = true; // someone changes the timeout between our read and our write
        const current = (await services.hypervisorEndpoints.get(id))!;
        const { id: _, ...data } = { ...current, timeout: 99 };
        await services.hypervisorEndpoints.update(id, data);
      }
      return services.hypervisorEndpoints.replaceIfUnchanged(id, version, record);
    },
  };
  const report = await rekeyAll(services.vault, services.inventoryEndpoints, racing);
  assert.deepEqual(report, { resealed: 1, unchanged: 0, failed: [] });
  const { hyp } = await stored(h.deps);
  assert.equal(hyp.timeout, 99, "the concurrent edit survives");
  assert.equal(hyp.key_source, "env");
  assert.match(hyp.password!, /^enc:/);
});

Deno.test("rekey: needs the backend key, and is in the OpenAPI document", async () => {
  await using h = await registered();
  const res = await h.call("/credentials/rekey", { method: "POST" });
  assert.equal(res.status, 401);
  const doc = await (await h.call("/openapi.json")).json();
  assert.ok(doc.paths["/credentials/rekey"].post);
});
