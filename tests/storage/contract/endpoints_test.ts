import assert from "node:assert/strict";
import type { HypervisorEndpointRecord, InventoryEndpointRecord } from "../../../storage/ports.ts";
import { contract } from "./_backends.ts";

const inventory: Omit<InventoryEndpointRecord, "id"> = {
  name: "netbox",
  ip: "192.0.2.5",
  port: 443,
  use_https: true,
  verify_ssl: true,
  token_version: "v1",
  token: "enc:sealed",
  token_key: null,
  key_source: "env",
};

const hypervisor = (name: string): Omit<HypervisorEndpointRecord, "id"> => ({
  name,
  ip: "192.0.2.6",
  port: 8006,
  use_https: true,
  verify_ssl: false,
  username: "root@pam",
  password: "enc:pw",
  token_name: null,
  token_value: null,
  allow_writes: false,
  enabled: true,
  timeout: 5,
  key_source: "env",
});

contract("inventory endpoints", {
  "the copy is a singleton, even when created concurrently": async ({ storage }) => {
    const store = storage.inventoryEndpoints;
    const raced = await Promise.all([store.create(inventory), store.create(inventory)]);
    assert.deepEqual(raced.map((r) => r.ok).sort(), [false, true]);
    assert.deepEqual(raced.find((r) => !r.ok), { ok: false, reason: "conflict" });
    assert.equal((await store.list()).length, 1);
  },

  "update and delete address an id; a deleted singleton can be created again": async (
    { storage },
  ) => {
    const store = storage.inventoryEndpoints;
    const created = await store.create(inventory);
    assert.ok(created.ok);
    const id = created.record.id;
    assert.deepEqual(await store.get(id), created.record);
    const updated = await store.update(id, { ...inventory, port: 8443 });
    assert.ok(updated.ok && updated.record.port === 8443 && updated.record.id === id);
    assert.deepEqual(await store.update(id + 99, inventory), { ok: false, reason: "not_found" });
    assert.equal(await store.delete(id), true);
    assert.equal(await store.delete(id), false);
    assert.equal(await store.get(id), null);
    assert.equal((await store.create(inventory)).ok, true);
  },

  "replaceIfUnchanged writes only over the version that was read": async ({ storage }) => {
    const store = storage.inventoryEndpoints;
    const created = await store.create(inventory);
    assert.ok(created.ok);
    const read = (await store.getVersioned(created.record.id))!;
    assert.deepEqual(read.record, created.record);
    await store.update(created.record.id, { ...inventory, name: "edited" });
    const stale = await store.replaceIfUnchanged(read.record.id, read.version, {
      ...read.record,
      token: "enc:resealed",
    });
    assert.equal(stale, false);
    assert.equal((await store.get(read.record.id))!.name, "edited");
    const fresh = (await store.getVersioned(read.record.id))!;
    assert.equal(
      await store.replaceIfUnchanged(fresh.record.id, fresh.version, {
        ...fresh.record,
        token: "enc:resealed",
      }),
      true,
    );
    assert.equal((await store.get(read.record.id))!.token, "enc:resealed");
    assert.equal(await store.getVersioned(999), null);
  },
});

contract("hypervisor endpoints", {
  "names are unique on create, even concurrently": async ({ storage }) => {
    const store = storage.hypervisorEndpoints;
    const raced = await Promise.all([
      store.create(hypervisor("pve")),
      store.create(hypervisor("pve")),
    ]);
    assert.deepEqual(raced.map((r) => r.ok).sort(), [false, true]);
    assert.equal((await store.create(hypervisor("pve2"))).ok, true);
    assert.deepEqual((await store.list()).map((r) => r.name).sort(), ["pve", "pve2"]);
  },

  "a rename may not take a used name, and frees the old one": async ({ storage }) => {
    const store = storage.hypervisorEndpoints;
    const a = await store.create(hypervisor("a"));
    const b = await store.create(hypervisor("b"));
    assert.ok(a.ok && b.ok);
    assert.deepEqual(await store.update(b.record.id, hypervisor("a")), {
      ok: false,
      reason: "conflict",
    });
    assert.equal((await store.update(b.record.id, hypervisor("c"))).ok, true);
    assert.equal((await store.create(hypervisor("b"))).ok, true, "the old name is free again");
    assert.deepEqual(await store.create(hypervisor("c")), { ok: false, reason: "conflict" });
    // Keeping one's own name is not a conflict.
    assert.equal((await store.update(a.record.id, { ...hypervisor("a"), port: 1 })).ok, true);
  },

  "delete frees the name; ids are never reused": async ({ storage }) => {
    const store = storage.hypervisorEndpoints;
    const a = await store.create(hypervisor("a"));
    assert.ok(a.ok);
    assert.equal(await store.delete(a.record.id), true);
    assert.equal(await store.delete(a.record.id), false);
    const again = await store.create(hypervisor("a"));
    assert.ok(again.ok && again.record.id > a.record.id);
    assert.deepEqual(await store.update(a.record.id, hypervisor("z")), {
      ok: false,
      reason: "not_found",
    });
  },

  "replaceIfUnchanged is a compare-and-set": async ({ storage }) => {
    const store = storage.hypervisorEndpoints;
    const a = await store.create(hypervisor("a"));
    assert.ok(a.ok);
    const read = (await store.getVersioned(a.record.id))!;
    assert.equal(await store.replaceIfUnchanged(a.record.id, read.version, read.record), true);
    assert.equal(await store.replaceIfUnchanged(a.record.id, read.version, read.record), false);
  },
});
