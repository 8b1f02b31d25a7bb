/**
 * The plan (domain/sync/plan.ts, docs/sync.md "Dry run and plan"): how each write is recorded
 * and named, and what a dry run answers in place of the inventory (made-up negative ids, its own
 * writes seen by later reads, nothing written). Over the in-memory inventory fake.
 */
import assert from "node:assert/strict";
import { type PlanItem, PlanningInventory } from "../../../domain/sync/plan.ts";
import type { InventoryBody, InventoryObject } from "../../../domain/sync/ports.ts";
import { FakeInventory } from "./_fakes.ts";

const VMS = "virtualization/virtual-machines/";

function planner(dryRun: boolean) {
  const inner = new FakeInventory();
  const heard: PlanItem[] = [];
  const plan = new PlanningInventory(inner, dryRun, (item) => heard.push(item));
  plan.step = "test";
  return { inner, plan, heard };
}

Deno.test("plan: each write is recorded once, named by what the object is", async () => {
  const { plan, heard, inner } = planner(false);
  const [vm] = await plan.create(VMS, [{ name: "web", memory: 1024 }]);
  await plan.create("ipam/ip-addresses/", [{ address: "10.0.0.5/24" }]);
  await plan.create("dcim/mac-addresses/", [{ mac_address: "BC:24:11:00:00:01" }]);
  await plan.create("plugins/service/task-history/", [{ upid: "UPID:pve1:1" }]);
  await plan.create("plugins/service/backups/", [{ volid: "local:backup/x.vma" }]);
  await plan.create("ipam/prefixes/", [{ prefix: "10.30.0.0/24" }]);
  await plan.create("extras/tags/", [{ slug: "web" }]);
  await plan.create("plugins/service/vm-sync-state/", [{ vmid: 101, name: "" }]);
  await plan.create("ipam/vlans/", [{ vid: 30 }]);
  await plan.create("plugins/service/clusters/", [{ quorate: true }]);
  assert.deepEqual(heard.map((i) => [i.action, i.object]), [
    ["create", "virtual machines web"],
    ["create", "ip addresses 10.0.0.5/24"],
    ["create", "mac addresses BC:24:11:00:00:01"],
    ["create", "task history UPID:pve1:1"],
    ["create", "backups local:backup/x.vma"],
    ["create", "prefixes 10.30.0.0/24"],
    ["create", "tags web"],
    ["create", "vm sync state vmid 101"],
    ["create", "vlans vid 30"],
    // Nothing names it: the same text in a dry run and the real one (their ids differ).
    ["create", "clusters #?"],
  ]);
  assert.deepEqual(plan.items, heard);
  assert.deepEqual(heard[0], {
    step: "test",
    action: "create",
    path: VMS,
    id: vm.id,
    object: "virtual machines web",
    fields: { name: "web", memory: 1024 },
  });

  // An update: only the fields that change, old → new, named as the inventory knows the object
  // (a rename shows under the old name); a status that flags it gone is a mark.
  await plan.update(VMS, [{ id: vm.id, name: "web-2", memory: 1024, vcpus: 2 }]);
  await plan.update(VMS, [{ id: vm.id, status: "decommissioning" }]);
  await plan.update("plugins/service/nodes/", [{ id: 77, online: false }]);
  await plan.update("plugins/service/nodes/", [{ id: 78, online: true }]);
  await plan.delete(VMS, [vm.id, 999]);
  assert.deepEqual(heard.slice(10).map((i) => [i.action, i.object, i.changes ?? null]), [
    ["update", "virtual machines web", {
      name: { old: "web", new: "web-2" },
      vcpus: { old: null, new: 2 },
    }],
    ["mark", "virtual machines web-2", { status: { old: null, new: "decommissioning" } }],
    ["mark", "nodes #77", { online: { old: null, new: false } }],
    ["update", "nodes #78", { online: { old: null, new: true } }],
    ["delete", "virtual machines web-2", null],
    ["delete", "virtual machines #999", null],
  ]);
  // Not a dry run: every write reached the inventory.
  assert.equal(inner.table(VMS).size, 0);
  assert.deepEqual(inner.writes.slice(-3), [
    `PATCH plugins/service/nodes/78`,
    `DELETE ${VMS}${vm.id}`,
    `DELETE ${VMS}999`,
  ]);
});

Deno.test("plan: a dry run writes nothing, answers with made-up negative ids, and later reads see its own writes", async () => {
  const { plan, inner } = planner(true);
  inner.table(VMS).set(5, { id: 5, name: "db", memory: 512, cluster: 1 });
  inner.table(VMS).set(6, { id: 6, name: "old", memory: 512, cluster: 1 });
  const made = await plan.create(VMS, [
    { name: "web", cluster: 1 },
    { name: "app", cluster: 2 },
  ]);
  assert.deepEqual(made.map((o) => o.id), [-1, -2]);
  await plan.update(VMS, [{ id: 5, memory: 1024 }, { id: -1, memory: 2048 }]);
  await plan.delete(VMS, [6, -2]);
  assert.deepEqual(inner.writes, [], "nothing written");

  // A read sees the inventory as the real run would leave it, and filters the made objects too.
  const all = await plan.list(VMS, {});
  assert.deepEqual(
    all.map((o) => [o.id, o.name, o.memory ?? null]).sort((a, b) => Number(a[0]) - Number(b[0])),
    [[-1, "web", 2048], [5, "db", 1024]],
  );
  const inCluster = await plan.list(VMS, { cluster_id: "1" });
  assert.deepEqual(inCluster.map((o) => o.id).sort(), [-1, 5]);
  assert.deepEqual((await plan.list(VMS, { name: ["app", "web"] })).map((o) => o.id), [-1]);
  // Children of an object only the dry run made: none upstream, the inventory is not asked.
  const before = inner.writes.length;
  assert.deepEqual(await plan.list("virtualization/interfaces/", { virtual_machine_id: "-1" }), []);
  assert.equal(inner.writes.length, before);
  // The recorded update of a made object says what it would hold.
  const update = plan.items.find((i) => i.action === "update" && i.id === -1)!;
  assert.deepEqual(update.changes, { memory: { old: null, new: 2048 } });
  assert.equal(update.object, "virtual machines web");
});

/** The fake with NetBox's `address` filter: a value without a mask matches the host. */
class AddressInventory extends FakeInventory {
  override list(path: string, filters: Record<string, string | string[]>) {
    const { address, ...rest } = filters;
    if (address === undefined) return super.list(path, filters);
    const hosts = (Array.isArray(address) ? address : [address]).map(String);
    return super.list(path, rest).then((rows) =>
      rows.filter((o) => hosts.includes(String(o.address).split("/")[0]))
    );
  }
}

Deno.test("plan: a dry run meets NetBox's unique address space: a held address or prefix is refused item by item", async () => {
  const inner = new AddressInventory();
  const plan = new PlanningInventory(inner, true);
  inner.table("ipam/ip-addresses/").set(9, { id: 9, address: "10.0.0.5/24", vrf: null });
  inner.table("ipam/ip-addresses/").set(10, { id: 10, address: "10.0.0.6/24", vrf: 3 });
  await assert.rejects(
    plan.create("ipam/ip-addresses/", [
      { address: "10.0.0.7/24" },
      { address: "10.0.0.5/16" },
      { address: "10.0.0.6/24" },
      { address: "10.0.0.7/32" },
    ]),
    (error: { refused?: boolean; itemErrors?: Record<string, unknown>[] }) => {
      assert.equal(error.refused, true);
      assert.deepEqual(error.itemErrors, [
        {},
        { address: ["Duplicate IP address found in global table: 10.0.0.5/16"] },
        {}, // held in a VRF: not the global table
        { address: ["Duplicate IP address found in global table: 10.0.0.7/32"] },
      ]);
      return true;
    },
  );
  // A prefix made earlier in the same dry run holds its value too.
  await plan.create("ipam/prefixes/", [{ prefix: "10.30.0.0/24" }]);
  await assert.rejects(plan.create("ipam/prefixes/", [{ prefix: "10.30.0.0/24" }]));
  // Once the holder is deleted by the dry run, the value is free.
  await plan.delete("ipam/ip-addresses/", [9]);
  const [free] = await plan.create("ipam/ip-addresses/", [{ address: "10.0.0.5/24" }]);
  assert.ok(free.id < 0);
  // Other models have no such space.
  await plan.create("dcim/mac-addresses/", [{ mac_address: "AA" }, { mac_address: "AA" }]);
});

Deno.test("plan: a dry run's made objects answer list filters as NetBox would (fields, <field>_id, an address's host); paging, tags and fields do not narrow", async () => {
  const { plan } = planner(true);
  const IPS = "ipam/ip-addresses/";
  await plan.create(VMS, [
    { name: "web", cluster: 1, site: { id: 4, url: "u", display: "s" } },
    { name: "app", cluster: 2, site: null },
  ]);
  await plan.create(IPS, [
    { address: "10.0.0.5/24", assigned_object_id: 7 },
    { address: "10.0.0.6/24", assigned_object_id: 8 },
  ]);
  const names = async (path: string, filters: Record<string, string | string[]>) =>
    (await plan.list(path, filters)).map((o) => String(o.name ?? o.address)).sort();
  assert.deepEqual(await names(VMS, { name: "web" }), ["web"]);
  assert.deepEqual(await names(VMS, { name: "web,app" }), ["app", "web"]);
  assert.deepEqual(await names(VMS, { name: ["nope"] }), []);
  assert.deepEqual(await names(VMS, { cluster_id: "2" }), ["app"]);
  assert.deepEqual(await names(VMS, { site_id: "4" }), ["web"]);
  assert.deepEqual(await names(VMS, { site_id: "5" }), []);
  // Keys no made object has a field for (paging, ordering, the tag, `fields`, another FK):
  // not narrowed here; the stages filter what they read again.
  assert.deepEqual(
    await names(VMS, {
      tag: "bridgebox-synced",
      limit: "1",
      offset: "1",
      ordering: "name",
      fields: "id,name",
      device_id: "9",
    }),
    ["app", "web"],
  );
  assert.deepEqual(await names(IPS, { address: "10.0.0.5" }), ["10.0.0.5/24"]);
  assert.deepEqual(await names(IPS, { address: "10.0.0.5/24" }), ["10.0.0.5/24"]);
  assert.deepEqual(await names(IPS, { address: ["10.0.0.6", "10.0.0.9"] }), ["10.0.0.6/24"]);
  assert.deepEqual(await names(IPS, { address: "10.0.0.5/16" }), []);
  assert.deepEqual(await names(IPS, { assigned_object_id: "8" }), ["10.0.0.6/24"]);
  // A name with a slash is compared whole: only addresses are matched by their host.
  await plan.create(VMS, [{ name: "a/b", cluster: 3 }]);
  assert.deepEqual(await names(VMS, { name: "a" }), []);
  assert.deepEqual(await names(VMS, { name: "a/b" }), ["a/b"]);
});

/** The fake with NetBox 4.6's guarded single writes, answering "changed" for a stale ETag. */
class GuardedFake extends FakeInventory {
  readOne(path: string, id: number) {
    const o = this.table(path).get(id);
    return Promise.resolve(o ? { object: structuredClone(o), etag: `"${o.rev}"` } : null);
  }
  updateGuarded(
    path: string,
    body: InventoryBody & { id: number },
    etag: string | null,
  ): Promise<InventoryObject | "changed" | "gone"> {
    const o = this.table(path).get(body.id);
    if (!o) return Promise.resolve("gone");
    if (etag !== `"${o.rev}"`) return Promise.resolve("changed");
    Object.assign(o, structuredClone(body), { rev: Number(o.rev) + 1 });
    this.writes.push(`PATCH ${path}${body.id} (If-Match)`);
    return Promise.resolve(structuredClone(o));
  }
  isOwnWrite(_path: string, id: number) {
    return id === 5;
  }
}

Deno.test("plan: a run that writes passes guarded writes through and records only those written; a dry run has none", async () => {
  const inner = new GuardedFake();
  inner.table(VMS).set(5, { id: 5, name: "db", memory: 512, status: "active", rev: 1 });
  const heard: PlanItem[] = [];
  const plan = new PlanningInventory(inner, false, (i) => heard.push(i));
  assert.equal(plan.isOwnWrite(VMS, 5, "x"), true);
  assert.equal(plan.isOwnWrite(VMS, 6, "x"), false);
  assert.equal(new PlanningInventory(new FakeInventory(), false).isOwnWrite(VMS, 5, "x"), false);
  assert.ok(plan.readOne && plan.updateGuarded);
  const dry = new PlanningInventory(inner, true);
  assert.equal(dry.readOne, undefined);
  assert.equal(dry.updateGuarded, undefined);

  const read = await plan.readOne!(VMS, 5);
  assert.equal(read?.etag, `"1"`);
  assert.equal(await plan.updateGuarded!(VMS, { id: 5, memory: 1024 }, `"0"`), "changed");
  assert.equal(await plan.updateGuarded!(VMS, { id: 99, memory: 1024 }, `"0"`), "gone");
  assert.equal(heard.length, 0, "a write refused for its ETag, or of a gone object, is no change");
  const written = await plan.updateGuarded!(VMS, { id: 5, memory: 1024, status: "active" }, `"1"`);
  assert.equal((written as InventoryObject).memory, 1024);
  assert.deepEqual(heard.map((i) => [i.action, i.object, i.changes]), [
    // Known from the read before it: only memory changed; an active status is no mark.
    ["update", "virtual machines db", { memory: { old: 512, new: 1024 } }],
  ]);
  assert.deepEqual(inner.writes, [`PATCH ${VMS}5 (If-Match)`]);
});

Deno.test("plan: a read of some fields adds to what is known of an object; the old values of an update come from all reads", async () => {
  const { plan, inner, heard } = planner(false);
  inner.table(VMS).set(5, { id: 5, name: "db", memory: 512, vcpus: 1, last_updated: "t1" });
  await plan.list(VMS, {});
  await plan.list(VMS, { id: ["5"], fields: "id,last_updated" });
  await plan.list(VMS, { id: ["5"], omit: "memory" });
  await plan.update(VMS, [{ id: 5, memory: 1024, vcpus: 2 }]);
  assert.deepEqual(heard.at(-1)!.changes, {
    memory: { old: 512, new: 1024 },
    vcpus: { old: 1, new: 2 },
  });
});

Deno.test("plan: a dry run asks who holds its addresses 100 values a request, and not at all without any", async () => {
  const inner = new FakeInventory();
  const asked: number[] = [];
  const list = inner.list.bind(inner);
  inner.list = (path, filters) => {
    if (path === "ipam/ip-addresses/") asked.push((filters.address as string[]).length);
    return list(path, filters);
  };
  const plan = new PlanningInventory(inner, true);
  const hundred = Array.from({ length: 100 }, (_, i) => ({ address: `10.1.0.${i + 1}/24` }));
  await plan.create("ipam/ip-addresses/", hundred);
  assert.deepEqual(asked, [100]);
  await plan.create("ipam/ip-addresses/", [{ address: "10.2.0.1/24", vrf: 3 }, { name: "x" }]);
  assert.deepEqual(asked, [100], "no global-table value: nothing to ask");
});
