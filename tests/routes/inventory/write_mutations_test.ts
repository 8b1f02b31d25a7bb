/**
 * What one object costs the store in KV mutations (issue 25: a first sync's commits are bound
 * by them), and that the index keys a field of few objects per value no longer gets (ordered
 * twin, per-value counter) change no answer: neither for objects written now nor for objects
 * the previous build wrote with those keys (docs/sync.md, "Writes: mutations per object").
 */
import assert from "node:assert/strict";
import { keys } from "../../../storage/kv/keys.ts";
import {
  firstOrderingField,
  indexShape,
  orderField,
  stateOf,
} from "../../../domain/netbox/engine/index_state.ts";
import type { ModelDef } from "../../../domain/netbox/types.ts";
import type { StoredObject } from "../../../storage/ports.ts";
import { createInventoryCore } from "../../../routes/inventory/mod.ts";
import { INDEX_LAYOUT } from "../../../domain/netbox/engine.ts";
import { createPlugin } from "../../../routes/plugin/mod.ts";
import { testDeps } from "../../_helpers.ts";
import { reportingMutations } from "../../_kv_mutations.ts";
import { type Inv, setup } from "./_setup.ts";
import { world } from "./_world.ts";

const N = 100;

/** A KV handle counting the mutations (set, delete, sum) its atomics carry. */
function mutationCountingKv(kv: Deno.Kv) {
  const tally = { mutations: 0 };
  const counted = reportingMutations(kv, () => tally.mutations++);
  return { counted, tally };
}

const hex = (i: number) =>
  [(i >> 8) & 255, i & 255].map((x) => x.toString(16).padStart(2, "0").toUpperCase()).join(":");

/** N VMs with an interface, a MAC, an IP and a disk each, every one tagged; the primaries set. */
async function estate(inv: Inv, measure: (label: string, run: () => Promise<unknown[]>) => void) {
  const w = await world(inv);
  const tag = (await inv.call("POST", "/api/extras/tags/", { name: "synced", slug: "synced" })).body
    .id;
  const ok = async (method: string, path: string, body: unknown[]) => {
    const r = await inv.call(method, path, body);
    assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body as Array<{ id: number }>;
  };
  const made: Record<string, Array<{ id: number }>> = {};
  const step = async (label: string, method: string, path: string, body: () => unknown[]) => {
    let out: Array<{ id: number }> = [];
    await measure(label, async () => (out = await ok(method, path, body())));
    made[label] = out;
  };
  await step(
    "VM create",
    "POST",
    "/api/virtualization/virtual-machines/",
    () =>
      Array.from({ length: N }, (_, i) => ({
        name: `vm-${i}`,
        cluster: w.cluster,
        serial: `serial-${i}`,
        tags: [tag],
      })),
  );
  await step(
    "interface create",
    "POST",
    "/api/virtualization/interfaces/",
    () => made["VM create"].map((vm) => ({ virtual_machine: vm.id, name: "net0", tags: [tag] })),
  );
  await step(
    "MAC create",
    "POST",
    "/api/dcim/mac-addresses/",
    () =>
      made["interface create"].map((f, i) => ({
        mac_address: `52:54:00:01:${hex(i)}`,
        assigned_object_type: "virtualization.vminterface",
        assigned_object_id: f.id,
        tags: [tag],
      })),
  );
  await step(
    "primary MAC",
    "PATCH",
    "/api/virtualization/interfaces/",
    () =>
      made["interface create"].map((f, i) => ({
        id: f.id,
        primary_mac_address: made["MAC create"][i].id,
      })),
  );
  await step(
    "IP create",
    "POST",
    "/api/ipam/ip-addresses/",
    () =>
      made["interface create"].map((f, i) => ({
        address: `10.1.${i}.1/16`,
        assigned_object_type: "virtualization.vminterface",
        assigned_object_id: f.id,
        tags: [tag],
      })),
  );
  await step(
    "primary IP",
    "PATCH",
    "/api/virtualization/virtual-machines/",
    () => made["VM create"].map((vm, i) => ({ id: vm.id, primary_ip4: made["IP create"][i].id })),
  );
  await step(
    "disk create",
    "POST",
    "/api/virtualization/virtual-disks/",
    () =>
      made["VM create"].map((vm, i) => ({
        virtual_machine: vm.id,
        name: "scsi0",
        size: 8 + i,
        tags: [tag],
      })),
  );
  return { w, tag, made };
}

Deno.test("a bulk write of VMs, interfaces, MACs, IPs and their primaries costs at most so many KV mutations per object", async () => {
  const { counted, tally } = mutationCountingKv(await Deno.openKv(":memory:"));
  const inv = await setup({}, { kv: counted });
  try {
    const perObject: Record<string, number> = {};
    await estate(inv, async (label, run) => {
      const before = tally.mutations;
      const out = await run();
      perObject[label] = (tally.mutations - before) / out.length;
    });
    // Each figure: the record, its index entries, the ordered twins and value counters the
    // model's lists need, its unique claims, and its change-log entry (record + its
    // changed_object_id entry; one request_id entry per request since layout 5); counters
    // shared by the batch (cluster, tag, status) count once per atomic.
    // Layout 1 cost 17.1 / 15.1 / 18.1 / 11.0 / 24.2 / 8.0 at 500 objects; layout 4 at this
    // size 16.17 / 10.1 / 13.13 / 6.05 / 17.15 / 5.05 / 10.1.
    const bounds: Record<string, number> = {
      "VM create": 15.5, // serial and name: no counter; the rest as before
      // Layout 4: no ordered entry or twin (VM interfaces and disks list by VM, then name);
      // layout 3 cost 14.15 and 13.1 (the disk with its VM's total) at this size.
      "interface create": 9.5,
      "MAC create": 12.5, // mac_address, assigned_object(_id): no twins, one counter (gfk)
      "primary MAC": 5.5, // record, one index entry, change log
      "IP create": 15.5, // layout 6: no index of the address itself (16.15 before)
      "primary IP": 4.5,
      "disk create": 9.5,
    };
    for (const [label, bound] of Object.entries(bounds)) {
      assert.ok(
        perObject[label] <= bound,
        `${label}: ${perObject[label].toFixed(2)} mutations per object, bound ${bound} (${
          JSON.stringify(perObject)
        })`,
      );
    }
  } finally {
    inv.close();
  }
});

/** The ids a list answers, and its count, read through every page of `size`. */
async function listed(inv: Inv, path: string, size = 2) {
  const ids: number[] = [];
  let count = -1;
  for (let offset = 0; offset < 1000; offset += size) {
    const sep = path.includes("?") ? "&" : "?";
    const r = await inv.call("GET", `${path}${sep}limit=${size}&offset=${offset}`);
    assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
    count = r.body.count;
    ids.push(...r.body.results.map((x: { id: number }) => x.id));
    if (r.body.results.length < size) break;
  }
  return { ids, count };
}

/**
 * The lists filtered by the fields that lost their ordered twins and counters, read page by
 * page in the model's default ordering and by id (keyset), against what they must answer.
 */
async function assertFewPerValueLists(
  inv: Inv,
  iface: number,
  vm: number,
  want: { ips: number[]; mac: number; ip: number; mac_address: string },
) {
  // An interface with three addresses: by address (the default ordering), by id, keyset.
  const byDefault = await listed(inv, `/api/ipam/ip-addresses/?assigned_object_id=${iface}`);
  assert.deepEqual(byDefault, { ids: want.ips, count: want.ips.length });
  const byIdDesc = await listed(
    inv,
    `/api/ipam/ip-addresses/?assigned_object_id=${iface}&ordering=-id`,
  );
  assert.deepEqual(byIdDesc.ids, [...want.ips].sort((a, b) => b - a));
  assert.equal(byIdDesc.count, want.ips.length);
  const keyset = await inv.call(
    "GET",
    `/api/ipam/ip-addresses/?assigned_object_id=${iface}&ordering=id&id__gt=0&limit=1`,
  );
  assert.equal(keyset.body.count, want.ips.length);
  assert.deepEqual(keyset.body.results.map((x: { id: number }) => x.id), [Math.min(...want.ips)]);
  const byMac = await listed(inv, `/api/dcim/mac-addresses/?mac_address=${want.mac_address}`);
  assert.deepEqual(byMac, { ids: [want.mac], count: 1 });
  const byPrimary = await listed(
    inv,
    `/api/virtualization/virtual-machines/?primary_ip4_id=${want.ip}`,
  );
  assert.deepEqual(byPrimary, { ids: [vm], count: 1 });
  const byPrimaryMac = await listed(
    inv,
    `/api/virtualization/interfaces/?primary_mac_address_id=${want.mac}`,
  );
  assert.deepEqual(byPrimaryMac, { ids: [iface], count: 1 });
  // The interface's related count reads the generic FK's counter (kept).
  const shown = await inv.call("GET", `/api/virtualization/interfaces/${iface}/`);
  assert.equal(shown.body.count_ipaddresses, want.ips.length);
}

/**
 * The keys the first build wrote beside today's for one stored record: an ordered entry and an
 * ordered twin for every indexed value but the ordering's own field, by the default ordering's
 * first field whatever the ordering's length (layouts before 4), and a counter for every index
 * entry.
 */
function previousBuildKeys(
  inv: Inv,
  def: ModelDef,
  model: string,
  record: StoredObject,
  op: Deno.AtomicOperation,
) {
  const state = stateOf(inv.deps.storage.models, def, record);
  const order = firstOrderingField(def);
  const kept = orderField(def) !== null;
  const sort = order ? inv.deps.storage.models.sortKey(record[order.field]) : null;
  if (order && !kept) op.set(keys.inventoryOrdered(model, "*", 0, sort!, record.id), null);
  for (const [field, value, counted] of state.indexes) {
    if (counted === false) op.sum(keys.inventoryIndexCount(model, field, value), 1n);
    if (order && field !== order.field && (!kept || indexShape(def).fewPerValue.has(field))) {
      op.set(keys.inventoryOrdered(model, field, value, sort!, record.id), null);
    }
  }
}

Deno.test("objects the previous build wrote with ordered twins and counters for every field list, filter, sort and count as before, and after this build changes them", async () => {
  const kv = await Deno.openKv(":memory:");
  const first = await setup({}, { kv });
  let second: Inv | undefined;
  try {
    const { made } = await estate(first, async (_label, run) => void await run());
    const iface = made["interface create"][0].id;
    const vm = made["VM create"][0].id;
    // Two more addresses on the first interface, sorting before and after its first one.
    const more = await first.call(
      "POST",
      "/api/ipam/ip-addresses/",
      [
        { address: "10.0.0.9/16", assigned_object_type: "virtualization.vminterface" },
        { address: "10.9.0.1/16", assigned_object_type: "virtualization.vminterface" },
      ].map((x) => ({ ...x, assigned_object_id: iface })),
    );
    assert.equal(more.status, 201, JSON.stringify(more.body));
    // The previous build's layout: today's keys plus its twins and counters, written the way
    // it wrote them (one atomic per object here).
    const engineDefs = new Map<string, ModelDef>();
    const core = createInventoryCore(first.deps);
    for (const def of core.engine.models()) engineDefs.set(`${def.app}.${def.model}`, def);
    for (
      const model of [
        "virtualization.virtualmachine",
        "virtualization.vminterface",
        "dcim.macaddress",
        "ipam.ipaddress",
      ]
    ) {
      for await (const e of kv.list<StoredObject>({ prefix: keys.inventoryObjectPrefix(model) })) {
        const op = kv.atomic();
        previousBuildKeys(first, engineDefs.get(model)!, model, e.value, op);
        assert.ok((await op.commit()).ok);
      }
    }
    // This build starts on that store: answers as before.
    second = await setup({}, { kv });
    const ips = [more.body[0].id, made["IP create"][0].id, more.body[1].id];
    const want = {
      ips,
      mac: made["MAC create"][0].id,
      ip: made["IP create"][0].id,
      mac_address: `52:54:00:01:${hex(0)}`,
    };
    await assertFewPerValueLists(second, iface, vm, want);
    // Changed by this build: a deleted address and a moved primary MAC leave the previous
    // build's twins and counters behind; no answer reads them.
    const gone = await second.call("DELETE", `/api/ipam/ip-addresses/${more.body[1].id}/`);
    assert.equal(gone.status, 204);
    const moved = await second.call("PATCH", `/api/dcim/mac-addresses/${want.mac}/`, {
      mac_address: "52:54:00:02:00:00",
    });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    await assertFewPerValueLists(second, iface, vm, {
      ...want,
      ips: ips.slice(0, 2),
      mac_address: "52:54:00:02:00:00",
    });
    // And an address this build writes (no twin, no counter) sorts among the previous ones.
    const added = await second.call("POST", "/api/ipam/ip-addresses/", {
      address: "10.5.0.1/16",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: iface,
    });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    await assertFewPerValueLists(second, iface, vm, {
      ...want,
      ips: [...ips.slice(0, 2), added.body.id],
      mac_address: "52:54:00:02:00:00",
    });
    const old = await listed(second, `/api/dcim/mac-addresses/?mac_address=52:54:00:01:${hex(0)}`);
    assert.deepEqual(old, { ids: [], count: 0 });
    // A primary IP cleared: the previous build's counter of that value still says one.
    const cleared = await second.call("PATCH", `/api/virtualization/virtual-machines/${vm}/`, {
      primary_ip4: null,
    });
    assert.equal(cleared.status, 200, JSON.stringify(cleared.body));
    for (const ordering of ["", "&ordering=-id", "&ordering=id&id__gt=0"]) {
      const none = await listed(
        second,
        `/api/virtualization/virtual-machines/?primary_ip4_id=${want.ip}${ordering}`,
      );
      assert.deepEqual(none, { ids: [], count: 0 }, ordering);
    }
  } finally {
    first.close();
  }
});

Deno.test("every related count a model renders reads a counter the index keeps", async () => {
  const deps = await testDeps({});
  try {
    const core = createInventoryCore(deps);
    core.engine.register(
      ...createPlugin(deps, { tokenPlaintext: () => Promise.resolve(null) }).models,
    );
    const defs = new Map(core.engine.models().map((d) => [`${d.app}.${d.model}`, d]));
    const counted: string[] = [];
    for (const def of defs.values()) {
      for (const f of Object.values(def.fields)) {
        if (!f.count || f.count.model === "*") continue;
        const target = defs.get(f.count.model);
        if (!target) continue; // a model not kept here (circuits): rendered 0
        assert.ok(
          !indexShape(target).uncounted.has(f.count.field),
          `${def.model} counts ${f.count.model}.${f.count.field}, which keeps no counter`,
        );
        counted.push(`${f.count.model}.${f.count.field}`);
      }
    }
    assert.ok(counted.includes("ipam.ipaddress.assigned_object"), counted.join(" "));
  } finally {
    deps.kv.close();
  }
});

Deno.test("a start on a store the previous build wrote removes the twins and counters this layout no longer keeps, once, and keeps the rest", async () => {
  const kv = await Deno.openKv(":memory:");
  const first = await setup({}, { kv });
  try {
    const { made } = await estate(first, async (_label, run) => void await run());
    const defs = new Map<string, ModelDef>();
    for (const def of createInventoryCore(first.deps).engine.models()) {
      defs.set(`${def.app}.${def.model}`, def);
    }
    const models = [
      "virtualization.virtualmachine",
      "virtualization.vminterface",
      "dcim.macaddress",
      "ipam.ipaddress",
    ];
    const keysUnder = async (prefix: Deno.KvKey) => {
      let n = 0;
      for await (const _ of kv.list({ prefix })) n++;
      return n;
    };
    const stale = async () => {
      let n = 0;
      for (const model of models) {
        const def = defs.get(model)!;
        for (const field of indexShape(def).fewPerValue) {
          n += await keysUnder(keys.inventoryOrderedFieldPrefix(model, field));
        }
        for (const field of indexShape(def).uncounted) {
          n += await keysUnder(keys.inventoryIndexCountFieldPrefix(model, field));
        }
      }
      return n;
    };
    const kept = async () => ({
      ordered: await keysUnder(["inventory", "ord"]),
      counters: await keysUnder(["inventory", "idx_count"]),
    });
    const before = await kept();
    assert.equal(await stale(), 0);
    // The previous build's keys, and no layout recorded (it recorded none).
    for (const model of models) {
      for await (const e of kv.list<StoredObject>({ prefix: keys.inventoryObjectPrefix(model) })) {
        const op = kv.atomic();
        previousBuildKeys(first, defs.get(model)!, model, e.value, op);
        assert.ok((await op.commit()).ok);
      }
    }
    await kv.delete(keys.inventoryIndexLayout());
    const planted = await stale();
    assert.ok(planted > 4 * N, `previous build's extra keys: ${planted}`);
    // Two processes start at once on that store: both sweep, neither fails.
    const [a, b] = await Promise.all([setup({}, { kv }), setup({}, { kv })]);
    assert.equal(await stale(), 0);
    assert.deepEqual(await kept(), before, "every key this layout keeps is still there");
    assert.equal((await kv.get(keys.inventoryIndexLayout())).value, INDEX_LAYOUT);
    const swept = [...a.deps.logger.lines, ...b.deps.logger.lines]
      .filter((e) => e.message === "removed index keys this build no longer keeps")
      .reduce((sum, e) => sum + Number(e.count ?? 0), 0);
    assert.ok(swept >= planted, `logged ${swept} of ${planted}`);
    // Lists read as before; a later start sweeps nothing.
    const iface = made["interface create"][0].id;
    const ips = await listed(a, `/api/ipam/ip-addresses/?assigned_object_id=${iface}`);
    assert.deepEqual(ips, { ids: [made["IP create"][0].id], count: 1 });
    const byTag = await a.call("GET", "/api/virtualization/virtual-machines/?tag=synced&limit=3");
    assert.equal(byTag.body.count, N);
    assert.deepEqual(byTag.body.results.map((v: { name: string }) => v.name), [
      "vm-0",
      "vm-1",
      "vm-2",
    ]);
    const third = await setup({}, { kv });
    assert.equal(
      third.deps.logger.lines.filter((e) =>
        e.message === "removed index keys this build no longer keeps"
      ).length,
      0,
    );
  } finally {
    first.close();
  }
});

/** Every ordered-index key (entries and twins) of `model`. */
async function orderedKeys(kv: Deno.Kv, model: string): Promise<number> {
  let n = 0;
  for await (const _ of kv.list({ prefix: keys.inventoryOrderedFieldPrefix(model, null) })) n++;
  return n;
}

/** The lists of VM interfaces and disks that an ordered index by VM could have answered. */
async function listsByVm(inv: Inv, iface: number, tag: number) {
  const out: Record<string, { ids: number[]; count: number }> = {};
  for (const path of ["/api/virtualization/interfaces/", "/api/virtualization/virtual-disks/"]) {
    for (
      const query of [
        "",
        "?ordering=virtual_machine",
        "?ordering=-virtual_machine",
        `?tag_id=${tag}&ordering=virtual_machine`,
        "?name=net0&ordering=-virtual_machine",
        "?name=scsi0&ordering=virtual_machine",
        "?enabled=true&ordering=virtual_machine",
        `?id__gt=${iface}&ordering=virtual_machine`,
      ]
    ) {
      out[path + query] = await listed(inv, path + query, 7);
    }
  }
  return out;
}

Deno.test("VM interfaces, virtual disks and snapshot records, listed by two fields, keep no ordered index: the same lists, and the previous layout's ordered keys swept at start", async () => {
  const kv = await Deno.openKv(":memory:");
  const first = await setup({}, { kv });
  try {
    const { made, tag } = await estate(first, async (_label, run) => void await run());
    const iface = made["interface create"][Math.floor(N / 2)].id;
    // Interfaces on VMs made in another order than the VMs' ids: by VM then id is not by id.
    const later = await first.call("POST", "/api/virtualization/interfaces/", [
      { virtual_machine: made["VM create"][0].id, name: "net1", tags: [tag] },
      { virtual_machine: made["VM create"][N - 1].id, name: "net0b", enabled: false },
    ]);
    assert.equal(later.status, 201, JSON.stringify(later.body));
    const models = ["virtualization.vminterface", "virtualization.virtualdisk"];
    for (const model of models) assert.equal(await orderedKeys(kv, model), 0, model);
    const answers = await listsByVm(first, iface, tag);
    // What they must answer: by VM (in the VMs' own order, by name, as Django orders by a
    // foreign key), then id (the tie-break).
    const all = await first.call("GET", "/api/virtualization/interfaces/?limit=1000");
    const vms = await first.call("GET", "/api/virtualization/virtual-machines/?limit=1000");
    const rank = new Map(vms.body.results.map((v: { id: number }, i: number) => [v.id, i]));
    type Row = { id: number; name: string; enabled: boolean; virtual_machine: { id: number } };
    const rows = (all.body.results as Row[]).sort((x, y) =>
      (rank.get(x.virtual_machine.id) as number) - (rank.get(y.virtual_machine.id) as number) ||
      x.id - y.id
    );
    assert.ok(rows.length >= N + 2);
    assert.deepEqual(answers["/api/virtualization/interfaces/?ordering=virtual_machine"], {
      ids: rows.map((r) => r.id),
      count: rows.length,
    });
    assert.deepEqual(
      answers["/api/virtualization/interfaces/?enabled=true&ordering=virtual_machine"].ids,
      rows.filter((r) => r.enabled).map((r) => r.id),
    );
    assert.deepEqual(
      answers["/api/virtualization/interfaces/?name=net0&ordering=-virtual_machine"].ids,
      rows.filter((r) => r.name === "net0").map((r) => r.id).reverse(),
    );
    // The previous layout: an ordered entry and twins for every interface and disk, layout 3.
    const defs = new Map<string, ModelDef>();
    for (const def of createInventoryCore(first.deps).engine.models()) {
      defs.set(`${def.app}.${def.model}`, def);
    }
    for (const model of models) {
      for await (const e of kv.list<StoredObject>({ prefix: keys.inventoryObjectPrefix(model) })) {
        const op = kv.atomic();
        previousBuildKeys(first, defs.get(model)!, model, e.value, op);
        assert.ok((await op.commit()).ok);
      }
      assert.ok((await orderedKeys(kv, model)) >= 3 * N, `${model}: the old keys are planted`);
    }
    await kv.set(keys.inventoryIndexLayout(), 3);
    const vmOrdered = await orderedKeys(kv, "virtualization.virtualmachine");
    // Two processes start at once on that store: both sweep, neither fails.
    const [a, b] = await Promise.all([setup({}, { kv }), setup({}, { kv })]);
    for (const model of models) assert.equal(await orderedKeys(kv, model), 0, model);
    assert.equal(await orderedKeys(kv, "virtualization.virtualmachine"), vmOrdered);
    assert.equal((await kv.get(keys.inventoryIndexLayout())).value, INDEX_LAYOUT);
    assert.deepEqual(await listsByVm(a, iface, tag), answers);
    // Written by this build after the sweep: still no ordered key, still in their places.
    const more = await b.call("POST", "/api/virtualization/virtual-disks/", {
      virtual_machine: made["VM create"][0].id,
      name: "scsi1",
      size: 1,
    });
    assert.equal(more.status, 201, JSON.stringify(more.body));
    assert.equal(await orderedKeys(kv, "virtualization.virtualdisk"), 0);
    const disks = await listed(a, "/api/virtualization/virtual-disks/?ordering=virtual_machine", 7);
    assert.deepEqual(disks.ids.slice(0, 2), [made["disk create"][0].id, more.body.id]);
    assert.equal(disks.count, N + 1);
  } finally {
    first.close();
  }
});

Deno.test("an IP address keeps no index of its own address: ?address= and its lookups answer as before, and the previous layout's entries are swept at start", async () => {
  const kv = await Deno.openKv(":memory:");
  const first = await setup({}, { kv });
  try {
    const { made } = await estate(first, async (_label, run) => void await run());
    const addressKeys = async () => {
      let n = 0;
      const prefix = keys.inventoryIndexFieldPrefix("ipam.ipaddress", "address");
      for await (const _ of kv.list({ prefix })) n++;
      return n;
    };
    assert.equal(await addressKeys(), 0);
    // The same host in another mask and VRF: `?address=<host>` finds both, `<host>/<len>` one.
    const vrf = await first.call("POST", "/api/ipam/vrfs/", { name: "blue" });
    assert.equal(vrf.status, 201, JSON.stringify(vrf.body));
    const other = await first.call("POST", "/api/ipam/ip-addresses/", {
      address: "10.1.7.1/24",
      vrf: vrf.body.id,
    });
    assert.equal(other.status, 201, JSON.stringify(other.body));
    const ip = made["IP create"][7].id;
    const queries = [
      "address=10.1.7.1/16",
      "address=10.1.7.1",
      "address=10.1.7.1/24&address=10.1.8.1/16",
      "address__ic=10.1.7.",
      "address__n=10.1.7.1/16&limit=1000",
      "address__isw=10.1.9",
      `address=10.1.7.1&id=${ip}`,
      "q=10.1.7.1",
    ];
    const answers = async (inv: Inv) => {
      const out: Record<string, { ids: number[]; count: number }> = {};
      for (const q of queries) out[q] = await listed(inv, `/api/ipam/ip-addresses/?${q}`, 3);
      return out;
    };
    const now = await answers(first);
    assert.deepEqual(now["address=10.1.7.1/16"], { ids: [ip], count: 1 });
    assert.deepEqual([...now["address=10.1.7.1"].ids].sort(), [ip, other.body.id].sort());
    assert.equal(now["address__ic=10.1.7."].count, 2);
    // The previous layout: an index entry per address, and layout 5 recorded.
    const op = kv.atomic();
    for await (
      const e of kv.list<StoredObject>({ prefix: keys.inventoryObjectPrefix("ipam.ipaddress") })
    ) {
      op.set(
        keys.inventoryIndex("ipam.ipaddress", "address", String(e.value.address), e.value.id),
        null,
      );
    }
    assert.ok((await op.commit()).ok);
    await kv.set(keys.inventoryIndexLayout(), 5);
    assert.equal(await addressKeys(), N + 1);
    const [a, b] = await Promise.all([setup({}, { kv }), setup({}, { kv })]);
    assert.equal(await addressKeys(), 0);
    assert.equal((await kv.get(keys.inventoryIndexLayout())).value, INDEX_LAYOUT);
    assert.deepEqual(await answers(a), now);
    // A duplicate is still refused (the unique claim and the host look-up, not this index).
    const again = await b.call("POST", "/api/ipam/ip-addresses/", { address: "10.1.7.1/16" });
    assert.equal(again.status, 400, JSON.stringify(again.body));
  } finally {
    first.close();
  }
});

const PLUGIN = "/api/plugins/service/";
/** The plugin's per-guest records and the fields each keeps no twin or counter for. */
const PLUGIN_RECORDS = [
  { model: "service.vmsyncstate", path: "vm-sync-state/", few: ["virtual_machine", "vmid"] },
  { model: "service.backup", path: "backups/", few: ["virtual_machine", "vmid", "volid"] },
  { model: "service.snapshot", path: "snapshots/", few: ["virtual_machine", "vmid"] },
];

/** N VMs, an endpoint, and a sync-state, a backup and a snapshot per VM, written in bulk. */
async function pluginRecords(
  inv: Inv,
  measure: (model: string, write: () => Promise<number>) => Promise<void>,
) {
  const w = await world(inv);
  const vms = await inv.call(
    "POST",
    "/api/virtualization/virtual-machines/",
    Array.from({ length: N }, (_, i) => ({ name: `guest-${i}`, cluster: w.cluster })),
  );
  assert.equal(vms.status, 201, JSON.stringify(vms.body));
  const vmIds: number[] = vms.body.map((vm: { id: number }) => vm.id);
  const endpoint = await inv.call("POST", `${PLUGIN}endpoints/hypervisor/`, {
    name: "pve",
    domain: "pve.example.com",
  });
  assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
  const e = endpoint.body.id;
  const bodies: Record<string, (vm: number, i: number) => unknown> = {
    "service.vmsyncstate": (vm, i) => ({ endpoint: e, vmid: 100 + i, virtual_machine: vm }),
    "service.backup": (vm, i) => ({
      endpoint: e,
      volid: `local:backup/vzdump-qemu-${100 + i}.vma.zst`,
      vmid: 100 + i,
      virtual_machine: vm,
    }),
    "service.snapshot": (vm, i) => ({
      endpoint: e,
      vmid: 100 + i,
      name: "before-upgrade",
      virtual_machine: vm,
    }),
  };
  const made: Record<string, number[]> = {};
  for (const { model, path } of PLUGIN_RECORDS) {
    await measure(model, async () => {
      const r = await inv.call("POST", `${PLUGIN}${path}`, vmIds.map(bodies[model]));
      assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
      made[model] = r.body.map((x: { id: number }) => x.id);
      return made[model].length;
    });
  }
  return { vmIds, made };
}

Deno.test("the plugin's per-guest records keep no ordered twin or counter for a VM's, a vmid's or a volume's few records: fewer mutations, the same lists, and the previous layout's keys swept at start", async () => {
  const { counted, tally } = mutationCountingKv(await Deno.openKv(":memory:"));
  const inv = await setup({}, { kv: counted });
  const perObject: Record<string, number> = {};
  try {
    const { vmIds, made } = await pluginRecords(inv, async (model, write) => {
      const before = tally.mutations;
      const n = await write();
      perObject[model] = (tally.mutations - before) / n;
    });
    // Layout 2 wrote 17.2 / 19.1 / 19.2 per object (twins for the VM, the vmid and the volume,
    // a counter per value of each); layout 3 14.2 / 13.1 / 16.2, of which the change-log entry
    // is 3; layout 4 keeps no ordered index for snapshots (listed by vmid, then name): 11.1;
    // layout 5 one request_id index entry per request, not per change-log entry: 13.2 / 12.1 /
    // 10.1.
    const bounds: Record<string, number> = {
      "service.vmsyncstate": 13.5,
      "service.backup": 12.5,
      "service.snapshot": 10.5,
    };
    for (const [model, bound] of Object.entries(bounds)) {
      assert.ok(
        perObject[model] <= bound,
        `${model}: ${perObject[model].toFixed(2)} per object, bound ${bound} (${
          JSON.stringify(perObject)
        })`,
      );
    }
    const defs = new Map<string, ModelDef>();
    const core = createInventoryCore(inv.deps);
    core.engine.register(
      ...createPlugin(inv.deps, { tokenPlaintext: () => Promise.resolve(null) }).models,
    );
    for (const def of core.engine.models()) defs.set(`${def.app}.${def.model}`, def);
    for (const { model, few } of PLUGIN_RECORDS) {
      assert.deepEqual(
        few.filter((f) => indexShape(defs.get(model)!).fewPerValue.has(f)),
        few,
        model,
      );
    }
    // The previous layout: twins and counters for those fields too, and layout 2 recorded.
    const kv = inv.deps.kv;
    for (const { model } of PLUGIN_RECORDS) {
      for await (const e of kv.list<StoredObject>({ prefix: keys.inventoryObjectPrefix(model) })) {
        const op = kv.atomic();
        previousBuildKeys(inv, defs.get(model)!, model, e.value, op);
        assert.ok((await op.commit()).ok);
      }
    }
    await kv.set(keys.inventoryIndexLayout(), 2);
    const stale = async () => {
      let n = 0;
      for (const { model, few } of PLUGIN_RECORDS) {
        for (const field of few) {
          for (
            const prefix of [
              keys.inventoryOrderedFieldPrefix(model, field),
              keys.inventoryIndexCountFieldPrefix(model, field),
            ]
          ) {
            for await (const _ of kv.list({ prefix })) n++;
          }
        }
      }
      return n;
    };
    assert.ok((await stale()) >= 4 * N, "the previous layout's keys are planted");
    const [a, b] = await Promise.all([setup({}, { kv }), setup({}, { kv })]);
    assert.equal(await stale(), 0);
    assert.equal((await kv.get(keys.inventoryIndexLayout())).value, INDEX_LAYOUT);
    // Lists by those fields answer as before: one record each, found, counted, in any order.
    for (const { model, path } of PLUGIN_RECORDS) {
      for (const i of [0, N - 1]) {
        for (const filter of [`virtual_machine_id=${vmIds[i]}`, `vmid=${100 + i}`]) {
          for (const ordering of ["", "&ordering=-id", "&ordering=id&id__gt=0"]) {
            const page = await listed(b, `${PLUGIN}${path}?${filter}${ordering}`);
            assert.deepEqual(page, { ids: [made[model][i]], count: 1 }, `${path}?${filter}`);
          }
        }
      }
    }
    const byVolume = await listed(
      a,
      `${PLUGIN}backups/?volid=local:backup/vzdump-qemu-${100 + N - 1}.vma.zst`,
    );
    assert.deepEqual(byVolume, { ids: [made["service.backup"][N - 1]], count: 1 });
    // Every snapshot by name, in the default ordering (vmid, then name: sorted in memory).
    const all = await a.call("GET", `${PLUGIN}snapshots/?name=before-upgrade&limit=3`);
    assert.equal(all.body.count, N);
    assert.deepEqual(
      all.body.results.map((s: { vmid: number }) => s.vmid),
      [100, 101, 102],
    );
  } finally {
    inv.close();
  }
});

Deno.test("a field unique on its own (a site's name, a job's job_id) keeps its index entries but no ordered twin and no counter; a field of many objects per value beside it keeps both", async () => {
  const inv = await setup();
  try {
    const region = await inv.created("/api/dcim/regions/", { name: "EU", slug: "eu" });
    await inv.created("/api/dcim/sites/", { name: "AMS1", slug: "ams1", region: region.id });
    // Jobs are written by the engine, not the API (read-only there); ordered by -created, they
    // keep an ordered index, and twins of it for their other indexed fields.
    const { engine } = createInventoryCore(inv.deps);
    const job = await engine.insert("core.job", { name: "sync" });
    assert.ok(job.ok);
    const kv = inv.deps.kv;
    const keysUnder = async (prefix: Deno.KvKey) => {
      let n = 0;
      for await (const _ of kv.list({ prefix })) n++;
      return n;
    };
    const held = async (model: string, field: string, value: string | number) => ({
      entries: await keysUnder(keys.inventoryIndexPrefix(model, field, value)),
      twins: await keysUnder(keys.inventoryOrderedFieldPrefix(model, field)),
      counters: await keysUnder(keys.inventoryIndexCountFieldPrefix(model, field)),
    });
    const none = { entries: 1, twins: 0, counters: 0 };
    assert.deepEqual(await held("dcim.site", "name", "AMS1"), none);
    assert.deepEqual(await held("core.job", "job_id", String(job.value.job_id)), none);
    const both = { entries: 1, twins: 1, counters: 1 };
    assert.deepEqual(await held("dcim.site", "region", region.id), both);
    assert.deepEqual(await held("core.job", "name", "sync"), both);
    // The lists those keys answer.
    for (const query of ["name=AMS1", `region_id=${region.id}`]) {
      const r = await inv.call("GET", `/api/dcim/sites/?${query}`);
      assert.deepEqual([r.body.count, r.body.results.map((s: { slug: string }) => s.slug)], [
        1,
        ["ams1"],
      ], query);
    }
    for (const query of [`job_id=${job.value.job_id}`, "name=sync"]) {
      const r = await inv.call("GET", `/api/core/jobs/?${query}`);
      assert.deepEqual([r.body.count, r.body.results.map((j: { id: number }) => j.id)], [
        1,
        [job.value.id],
      ], query);
    }
  } finally {
    inv.close();
  }
});

Deno.test("a page's related counts are read from those counters: a cluster type's cluster_count lists none of its clusters' index entries", async () => {
  const kv = await Deno.openKv(":memory:");
  // The index entries of clusters by type listed through this handle (a count that walks them).
  const walked = { entries: 0 };
  const prefix = ["inventory", "idx", "virtualization.cluster", "type"];
  const counting = new Proxy(kv, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop !== "list") return typeof value === "function" ? value.bind(target) : value;
      return (selector: Deno.KvListSelector, options?: Deno.KvListOptions) => {
        const iterator = target.list(selector, options);
        const under = "prefix" in selector &&
          prefix.every((part, i) => selector.prefix[i] === part);
        if (!under) return iterator;
        return (async function* () {
          for await (const entry of iterator) {
            walked.entries++;
            yield entry;
          }
        })();
      };
    },
  });
  const inv = await setup({}, { kv: counting });
  try {
    const type = (await inv.created("/api/virtualization/cluster-types/", {
      name: "PVE",
      slug: "pve",
    })).id;
    const clusters = Array.from({ length: 12 }, (_, i) => ({ name: `c-${i}`, type }));
    assert.equal((await inv.call("POST", "/api/virtualization/clusters/", clusters)).status, 201);
    walked.entries = 0;
    const r = await inv.call("GET", "/api/virtualization/cluster-types/");
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.results.map((t: { cluster_count: number }) => t.cluster_count), [12]);
    assert.equal(walked.entries, 0);
  } finally {
    kv.close();
  }
});
