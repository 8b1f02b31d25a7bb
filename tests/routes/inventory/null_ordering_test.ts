/**
 * Where a list puts objects without a value: PostgreSQL sorts NULL last in an ascending list and
 * first in a descending one, so NetBox lists unnamed devices (Device.Meta.ordering
 * `("name", "pk")`, "Name may be null") after the named ones, and `?ordering=-name` before them.
 * Each path that answers a list must agree: the ordered index (no filter), its per-value twin
 * (`site_id=`), the in-memory sort (two filters), in one page and walked by offset; and a store
 * whose ordered keys an earlier build wrote (null under the empty string's key) is moved at
 * start. The oracle in list_oracle_test.ts holds the same for a nullable number and a nullable
 * foreign key of VMs.
 */
import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";
import { keys } from "../../../storage/kv/keys.ts";
import { createInventoryCore } from "../../../routes/inventory/mod.ts";
import { orderField, stateOf } from "../../../domain/netbox/engine/index_state.ts";
import { INDEX_LAYOUT } from "../../../domain/netbox/engine.ts";

const DEVICES = "/api/dcim/devices/";

async function estate(inv: Inv) {
  const site = async (slug: string) =>
    (await inv.created("/api/dcim/sites/", { name: slug, slug })).id as number;
  const a = await site("a");
  const b = await site("b");
  const maker = (await inv.created("/api/dcim/manufacturers/", { name: "M", slug: "m" })).id;
  const type = (await inv.created("/api/dcim/device-types/", {
    manufacturer: maker,
    model: "X",
    slug: "x",
  })).id;
  const role = (await inv.created("/api/dcim/device-roles/", { name: "R", slug: "r" })).id;
  const ids: Record<string, number> = {};
  // Unnamed devices between named ones, in both sites, so id order is no answer.
  const made: Array<[string, string | null, number]> = [
    ["n1", null, a],
    ["beta", "beta", a],
    ["n2", null, b],
    ["alpha", "alpha", a],
    ["n3", null, a],
    ["gamma", "gamma", b],
    ["delta", "delta", a],
  ];
  for (const [label, name, at] of made) {
    ids[label] = (await inv.created(DEVICES, { name, site: at, device_type: type, role })).id;
  }
  return { a, b, ids };
}

async function listed(inv: Inv, query: string): Promise<number[]> {
  const whole = await inv.call("GET", `${DEVICES}?${query}&limit=1000`);
  assert.equal(whole.status, 200, JSON.stringify(whole.body));
  const ids = whole.body.results.map((r: { id: number }) => r.id);
  assert.equal(whole.body.count, ids.length, query);
  const walked: number[] = [];
  for (let offset = 0; offset < ids.length + 2; offset += 2) {
    const page = await inv.call("GET", `${DEVICES}?${query}&limit=2&offset=${offset}`);
    assert.equal(page.body.count, ids.length, `${query} offset ${offset}`);
    walked.push(...page.body.results.map((r: { id: number }) => r.id));
  }
  assert.deepEqual(walked, ids, `${query}: walked by 2 as listed whole`);
  return ids;
}

async function assertNullsLast(inv: Inv, e: Awaited<ReturnType<typeof estate>>) {
  const { ids, a } = e;
  const all = [ids.alpha, ids.beta, ids.delta, ids.gamma, ids.n1, ids.n2, ids.n3];
  const inA = [ids.alpha, ids.beta, ids.delta, ids.n1, ids.n3];
  for (const query of ["", "ordering=name", "ordering=name,id"]) {
    assert.deepEqual(await listed(inv, query), all, `?${query}: nulls last`);
  }
  assert.deepEqual(await listed(inv, "ordering=-name"), [...all].reverse(), "-name: nulls first");
  // The ordered index's twin under one site.
  assert.deepEqual(await listed(inv, `site_id=${a}`), inA, "site_id: nulls last");
  assert.deepEqual(await listed(inv, `site_id=${a}&ordering=-name`), [...inA].reverse());
  // Two filters: sorted in memory.
  assert.deepEqual(await listed(inv, `site_id=${a}&status=active`), inA, "in memory");
  assert.deepEqual(
    await listed(inv, `site_id=${a}&status=active&ordering=-name`),
    [...inA].reverse(),
  );
}

Deno.test("unnamed devices list last by name and first by -name, on the ordered index, its twin and in memory, in pages", async () => {
  const inv = await setup();
  try {
    const e = await estate(inv);
    await assertNullsLast(inv, e);
    // Named later: the device leaves the nulls for its place among the names.
    const named = await inv.call("PATCH", `${DEVICES}${e.ids.n1}/`, { name: "aaa" });
    assert.equal(named.status, 200, JSON.stringify(named.body));
    const { ids } = e;
    assert.deepEqual(await listed(inv, ""), [
      ids.n1,
      ids.alpha,
      ids.beta,
      ids.delta,
      ids.gamma,
      ids.n2,
      ids.n3,
    ]);
  } finally {
    inv.close();
  }
});

Deno.test("a store whose unnamed devices an earlier build keyed first lists them last once this build starts on it", async () => {
  const kv = await Deno.openKv(":memory:");
  const first = await setup({}, { kv });
  let second: Inv | undefined;
  try {
    const e = await estate(first);
    // The earlier build's keys: a null name under the empty string's sort key, layout 6.
    const store = first.deps.storage.models;
    const def = createInventoryCore(first.deps).engine.definition("dcim.device");
    assert.equal(orderField(def)?.field, "name");
    for (const id of [e.ids.n1, e.ids.n2, e.ids.n3]) {
      const found = await store.get("dcim.device", id);
      const op = kv.atomic();
      for (const [field, value, sort] of stateOf(store, def, found!.record).ordered) {
        op.delete(keys.inventoryOrdered("dcim.device", field, value, sort, id));
        op.set(keys.inventoryOrdered("dcim.device", field, value, "", id), null);
      }
      assert.ok((await op.commit()).ok);
    }
    await store.setIndexLayout(6);
    // What the earlier keys answer: the unnamed devices first.
    const before = await first.call("GET", `${DEVICES}?limit=1000`);
    assert.deepEqual(before.body.results.slice(0, 3).map((r: { id: number }) => r.id), [
      e.ids.n1,
      e.ids.n2,
      e.ids.n3,
    ]);
    second = await setup({}, { kv });
    await assertNullsLast(second, e);
    // Nothing of the earlier keys is left under the empty string's key.
    const left = [];
    for await (
      const entry of kv.list({ prefix: keys.inventoryOrderedPrefix("dcim.device", "*", 0) })
    ) {
      left.push(entry.key);
    }
    assert.equal(left.length, 7);
    assert.ok(left.every((k) => k[k.length - 2] !== ""), JSON.stringify(left));
  } finally {
    second?.close();
    if (!second) first.close();
  }
});

/** A cluster (of a new type) for the VMs a test makes; its id. */
async function newCluster(inv: Awaited<ReturnType<typeof setup>>): Promise<number> {
  const type = (await inv.created("/api/virtualization/cluster-types/", { name: "T", slug: "t" }))
    .id;
  return (await inv.created("/api/virtualization/clusters/", { name: "c", type })).id;
}

Deno.test("a list of a model without an ordered index, ordered by another of its fields, answers in that order (VM interfaces, the change log)", async () => {
  const inv = await setup();
  try {
    const cluster = await newCluster(inv);
    const vm = async (name: string) =>
      (await inv.created("/api/virtualization/virtual-machines/", { name, cluster })).id;
    // Made in the reverse of their names' order: a list by VM id is no list by VM.
    const two = await vm("two");
    const one = await vm("one");
    // VM interfaces are ordered by VM, then name: the model keeps no ordered index (one by VM
    // would list them by the VMs' ids, not by the VMs, as NetBox's related ordering does).
    for (const [machine, name] of [[one, "eth2"], [two, "eth0"], [one, "eth1"], [two, "eth2"]]) {
      await inv.created("/api/virtualization/interfaces/", { virtual_machine: machine, name });
    }
    for (
      const [ordering, want] of [
        ["name", ["eth0", "eth1", "eth2 one", "eth2 two"]],
        ["-name", ["eth2 two", "eth2 one", "eth1", "eth0"]],
        ["virtual_machine", ["eth2 one", "eth1", "eth0", "eth2 two"]],
        ["-virtual_machine", ["eth2 two", "eth0", "eth1", "eth2 one"]],
      ] as const
    ) {
      const r = await inv.call("GET", `/api/virtualization/interfaces/?ordering=${ordering}`);
      assert.equal(r.status, 200, `ordering=${ordering}: ${JSON.stringify(r.body)}`);
      assert.deepEqual(
        r.body.results.map((i: { name: string; virtual_machine: { name: string } }) =>
          i.name === "eth2" ? `eth2 ${i.virtual_machine.name}` : i.name
        ),
        want,
        `ordering=${ordering}`,
      );
    }
    // The change log is ordered by -id alone: no ordered index either.
    const r = await inv.call("GET", "/api/core/object-changes/?ordering=object_repr&limit=3");
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.count, 8);
    assert.deepEqual(
      r.body.results.map((e: { object_repr: string }) => e.object_repr),
      ["c", "eth0", "eth1"],
    );
  } finally {
    inv.close();
  }
});

Deno.test("an ordering by a field no client sees (a computed one, an internal one) is ignored: the list keeps its default order, as DRF's OrderingFilter drops a field it does not offer", async () => {
  const inv = await setup();
  try {
    const cluster = await newCluster(inv);
    // Made against their default order (VMs by name, IPs by address): an ordering by a field
    // every object holds alike (no primary IP; one address space) would list them by id.
    for (const name of ["vm-b", "vm-a"]) {
      await inv.created("/api/virtualization/virtual-machines/", { name, cluster });
    }
    for (const address of ["10.0.0.2/24", "10.0.0.1/24"]) {
      await inv.created("/api/ipam/ip-addresses/", { address });
    }
    for (
      const [path, ordering, key, want] of [
        ["virtualization/virtual-machines", "primary_ip", "name", ["vm-a", "vm-b"]],
        ["virtualization/virtual-machines", "-primary_ip", "name", ["vm-a", "vm-b"]],
        ["ipam/ip-addresses", "unique_space", "address", ["10.0.0.1/24", "10.0.0.2/24"]],
        ["ipam/ip-addresses", "-unique_space", "address", ["10.0.0.1/24", "10.0.0.2/24"]],
      ] as const
    ) {
      const r = await inv.call("GET", `/api/${path}/?ordering=${ordering}`);
      assert.equal(r.status, 200, `${path} ${ordering}: ${JSON.stringify(r.body)}`);
      assert.deepEqual(
        r.body.results.map((o: Record<string, string>) => o[key]),
        want,
        `${path}/?ordering=${ordering}`,
      );
    }
  } finally {
    inv.close();
  }
});

Deno.test("a store whose tags an earlier build keyed in natural order lists them by the database's collation once this build starts on it", async () => {
  const kv = await Deno.openKv(":memory:");
  const first = await setup({}, { kv });
  let second: Inv | undefined;
  try {
    for (const name of ["n2", "n10", "n1"]) {
      await first.created("/api/extras/tags/", { name, slug: name });
    }
    // The earlier build's keys: each tag's ordered entries under the natural-order key, layout 7.
    const store = first.deps.storage.models;
    const def = createInventoryCore(first.deps).engine.definition("extras.tag");
    assert.equal(orderField(def)?.field, "name");
    for (const tag of await store.scan("extras.tag")) {
      const op = kv.atomic();
      for (const [field, value, sort] of stateOf(store, def, tag).ordered) {
        op.delete(keys.inventoryOrdered("extras.tag", field, value, sort, tag.id));
        const natural = store.sortKey(tag.name);
        op.set(keys.inventoryOrdered("extras.tag", field, value, natural, tag.id), null);
      }
      assert.ok((await op.commit()).ok);
    }
    await store.setIndexLayout(7);
    const names = async (inv: Inv) =>
      (await inv.call("GET", "/api/extras/tags/?ordering=name")).body.results.map((
        t: { name: string },
      ) => t.name);
    // What the earlier keys answer: natural order.
    assert.deepEqual(await names(first), ["n1", "n2", "n10"]);
    second = await setup({}, { kv });
    assert.deepEqual(await names(second), ["n1", "n10", "n2"]);
    assert.equal(await store.indexLayout(), INDEX_LAYOUT);
    // Nothing of the earlier keys is left: one entry a tag, under the collation's key.
    const left = [];
    for await (
      const entry of kv.list({ prefix: keys.inventoryOrderedPrefix("extras.tag", "*", 0) })
    ) {
      left.push(entry.key[entry.key.length - 2]);
    }
    assert.deepEqual(left, ["n1", "n10", "n2"]);
  } finally {
    second?.close();
    if (!second) first.close();
  }
});
