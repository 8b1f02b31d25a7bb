/**
 * What one bulk write costs the store, counted in Deno KV calls (issue 25: the sync writes
 * interfaces, their MACs, the primary MACs and the VMs' primary IPs in bulk, 500 at a time).
 * A hook that looks something up per object makes a bulk write of N objects N round trips
 * longer; these tests hold the batch's reads to a number that does not grow with N.
 */
import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";
import { world } from "./_world.ts";

const N = 60;
const VM_MODEL = "virtualization.virtualmachine";
const VMS_PATH = "/api/virtualization/virtual-machines/";

/** N VMs in `cluster` made by one bulk create (`<prefix>-<i>`), as answered. */
function bulkVms(
  inv: Inv,
  cluster: number,
  prefix: string,
): Promise<Array<{ id: number; name: string }>> {
  return inv.created(
    "/api/virtualization/virtual-machines/",
    Array.from({ length: N }, (_, i) => ({ name: `${prefix}-${i}`, cluster })),
  );
}

/** The first key a get, getMany or list names: what part of the store it reads. */
function firstKeyOf(prop: "get" | "getMany" | "list", arg: unknown): Deno.KvKey | undefined {
  if (prop === "get") return arg as Deno.KvKey;
  if (prop === "getMany") return (arg as Deno.KvKey[])[0];
  const selector = arg as { prefix?: Deno.KvKey; start?: Deno.KvKey; end?: Deno.KvKey };
  return selector.prefix ?? selector.start ?? selector.end;
}

/**
 * A KV handle counting the inventory's reads made through it (get, getMany, list), by kind.
 * Reads of other parts of the store are not counted: the job service's sweep of job parts runs
 * on its own timer (every `partPollMs`), and on a loaded machine a tick fell inside a measured
 * request now and then (a list of `plugin_jobs` counted as the filter's seventh).
 */
function countingKv(kv: Deno.Kv) {
  const counts = { get: 0, getMany: 0, list: 0 };
  const counted = new Proxy(kv, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop === "get" || prop === "getMany" || prop === "list") {
        return (...args: unknown[]) => {
          if (firstKeyOf(prop, args[0])?.[0] === "inventory") counts[prop]++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return value.bind(target);
    },
  });
  return { counted, counts };
}

Deno.test("bulk writes of MACs, primary MACs and primary IPs read the store a number of times that does not grow with the batch", async () => {
  const { counted, counts } = countingKv(await Deno.openKv(":memory:"));
  const inv = await setup({}, { kv: counted });
  try {
    const w = await world(inv);
    const vms = await bulkVms(inv, w.cluster, "bulk");
    const ifaces = await inv.call(
      "POST",
      "/api/virtualization/interfaces/",
      vms.map((vm: { id: number }) => ({ virtual_machine: vm.id, name: "net0" })),
    );
    assert.equal(ifaces.status, 201, JSON.stringify(ifaces.body));
    const ifaceIds: number[] = ifaces.body.map((i: { id: number }) => i.id);
    const hex = (i: number) => i.toString(16).padStart(2, "0").toUpperCase();

    const measure = async (method: string, path: string, body: unknown[]) => {
      const before = { ...counts };
      const r = await inv.call(method, path, body);
      assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return {
        body: r.body,
        reads: {
          get: counts.get - before.get,
          getMany: counts.getMany - before.getMany,
          list: counts.list - before.list,
        },
      };
    };

    // References sent as {"id": n} are read together, as plain ids are (one batch per model).
    const nested = await measure(
      "POST",
      "/api/virtualization/interfaces/",
      vms.map((vm: { id: number }) => ({ virtual_machine: { id: vm.id }, name: "net1" })),
    );
    assert.deepEqual(
      nested.body.map((i: { virtual_machine: { id: number } }) => i.virtual_machine.id),
      vms.map((vm: { id: number }) => vm.id),
    );
    assert.ok(nested.reads.get <= 20, `nested references: ${JSON.stringify(nested.reads)}`);

    // MACs: a new MAC is no interface's primary MAC, so nothing looks for interfaces showing it.
    const macs = await measure(
      "POST",
      "/api/dcim/mac-addresses/",
      ifaceIds.map((id, i) => ({
        mac_address: `52:54:00:00:01:${hex(i)}`,
        assigned_object_type: "virtualization.vminterface",
        assigned_object_id: id,
      })),
    );
    assert.equal(macs.body.length, N);
    assert.ok(macs.reads.list <= 5, `MAC create: ${JSON.stringify(macs.reads)}`);
    assert.ok(macs.reads.get <= 20, `MAC create: ${JSON.stringify(macs.reads)}`);

    // Primary MACs: the MACs the batch names are read once, together, not per rule.
    const primary = await measure(
      "PATCH",
      "/api/virtualization/interfaces/",
      ifaceIds.map((id, i) => ({ id, primary_mac_address: macs.body[i].id })),
    );
    assert.deepEqual(
      primary.body.map((i: { mac_address: string }) => i.mac_address),
      ifaceIds.map((_, i) => `52:54:00:00:01:${hex(i)}`),
    );
    assert.ok(primary.reads.get <= 20, `primary MAC: ${JSON.stringify(primary.reads)}`);
    assert.ok(primary.reads.list <= 5, `primary MAC: ${JSON.stringify(primary.reads)}`);

    // Addresses: their hosts are looked up for duplicates together (one range of the index),
    // not one index read per address.
    const address = (i: number) => `10.9.${Math.floor(i / 200)}.${(i % 200) + 1}/24`;
    const ips = await measure(
      "POST",
      "/api/ipam/ip-addresses/",
      ifaceIds.map((id, i) => ({
        address: address(i),
        assigned_object_type: "virtualization.vminterface",
        assigned_object_id: id,
      })),
    );
    assert.equal(ips.body.length, N);
    assert.ok(ips.reads.list <= 5, `IP create: ${JSON.stringify(ips.reads)}`);
    assert.ok(ips.reads.get <= 20, `IP create: ${JSON.stringify(ips.reads)}`);
    // The same look-up still finds a duplicate, in any mask, between other addresses.
    const again = await inv.call(
      "POST",
      "/api/ipam/ip-addresses/",
      [3, 250, 17, 251].map((i) => ({
        address: i < N ? address(i).replace("/24", "/32") : `10.9.7.${i - 200}/24`,
      })),
    );
    assert.equal(again.status, 400);
    assert.deepEqual(again.body, [
      { address: ["Duplicate IP address found in global table: 10.9.0.4/24"] },
      {},
      { address: ["Duplicate IP address found in global table: 10.9.0.18/24"] },
      {},
    ]);
    const primaryIp = await measure(
      "PATCH",
      "/api/virtualization/virtual-machines/",
      vms.map((vm: { id: number }, i: number) => ({ id: vm.id, primary_ip4: ips.body[i].id })),
    );
    assert.deepEqual(
      primaryIp.body.map((vm: { primary_ip4: { id: number } }) => vm.primary_ip4.id),
      ips.body.map((ip: { id: number }) => ip.id),
    );
    assert.ok(primaryIp.reads.get <= 20, `primary IP: ${JSON.stringify(primaryIp.reads)}`);

    // And the MACs still follow an edit: the interface shows the new value.
    const edited = await inv.call("PATCH", `/api/dcim/mac-addresses/${macs.body[0].id}/`, {
      mac_address: "52:54:00:00:02:00",
    });
    assert.equal(edited.status, 200);
    const shown = await inv.call("GET", `/api/virtualization/interfaces/${ifaceIds[0]}/`);
    assert.equal(shown.body.mac_address, "52:54:00:00:02:00");
  } finally {
    inv.close();
  }
});

Deno.test("a list filtered by many parents reads their index entries together and answers exactly those parents' objects", async () => {
  const { counted, counts } = countingKv(await Deno.openKv(":memory:"));
  const inv = await setup({}, { kv: counted });
  try {
    const w = await world(inv);
    const vms = await bulkVms(inv, w.cluster, "many");
    const vmIds: number[] = vms.map((vm: { id: number }) => vm.id);
    const made = await inv.call(
      "POST",
      "/api/virtualization/interfaces/",
      vmIds.flatMap((
        vm,
      ) => [{ virtual_machine: vm, name: "net0" }, { virtual_machine: vm, name: "net1" }]),
    );
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const ifacesOf = new Map<number, number[]>();
    for (const i of made.body as { id: number; virtual_machine: { id: number } }[]) {
      ifacesOf.set(i.virtual_machine.id, [...(ifacesOf.get(i.virtual_machine.id) ?? []), i.id]);
    }
    const ask = async (chosen: number[]) => {
      const before = { ...counts };
      const query = chosen.map((id) => `virtual_machine_id=${id}`).join("&");
      const r = await inv.call("GET", `/api/virtualization/interfaces/?${query}&limit=1000`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const got = r.body.results.map((i: { id: number }) => i.id).sort((a: number, b: number) =>
        a - b
      );
      const want = chosen.flatMap((vm) => ifacesOf.get(vm) ?? []).sort((a, b) => a - b);
      assert.deepEqual(got, want);
      assert.equal(r.body.count, want.length);
      return { list: counts.list - before.list, get: counts.get - before.get };
    };
    // Every other VM of the run: one range read, the VMs in between left out of the answer.
    const everyOther = await ask(vmIds.filter((_, i) => i % 2 === 0));
    assert.ok(everyOther.list <= 3, `every other VM: ${JSON.stringify(everyOther)}`);
    assert.ok(everyOther.get <= 15, `every other VM: ${JSON.stringify(everyOther)}`);
    // Values far apart (none read before) are read one by one: a range would read everything
    // between them.
    const spread = await ask([1, 13, 25, 37, 49, N - 1].map((i) => vmIds[i]));
    assert.equal(spread.list, 6, `spread VMs: ${JSON.stringify(spread)}`);
    // Their six lists, made together, share one read of the model's generation key (six values
    // are few enough to be sized by their counters first: one more read, paging.ts).
    assert.ok(
      spread.get <= everyOther.get + 2,
      `spread ${JSON.stringify(spread)} vs every other ${JSON.stringify(everyOther)}`,
    );
  } finally {
    inv.close();
  }
});

/** `kv` as it is, noting in `into` the id of every record of `model` a get or getMany reads. */
function recordReadsOf(kv: Deno.Kv, model: string, into: number[]): Deno.Kv {
  return new Proxy(kv, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop === "get" || prop === "getMany") {
        return (...args: unknown[]) => {
          const keys = (prop === "get" ? [args[0]] : args[0]) as Deno.KvKey[];
          // A record's key is ["inventory", "obj", model, id].
          for (const k of keys) if (k[1] === "obj" && k[2] === model) into.push(k[3] as number);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return value.bind(target);
    },
  });
}

Deno.test("a bulk create of virtual disks sets each VM's disk total without reading back the disks it wrote, and counts the VM's earlier disks", async () => {
  const diskReads: number[] = [];
  const counted = recordReadsOf(
    await Deno.openKv(":memory:"),
    "virtualization.virtualdisk",
    diskReads,
  );
  const inv = await setup({}, { kv: counted });
  try {
    const w = await world(inv);
    const disks = "/api/virtualization/virtual-disks/";
    const vms = await bulkVms(inv, w.cluster, "disky");
    const vmIds: number[] = vms.map((vm: { id: number }) => vm.id);
    const made = await inv.call(
      "POST",
      disks,
      vmIds.flatMap((id, i) => [
        { virtual_machine: id, name: "scsi0", size: 1000 + i },
        { virtual_machine: id, name: "scsi1", size: 7 },
      ]),
    );
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.deepEqual(diskReads, [], "the disks just written are not read back for the totals");
    const totals = async () => {
      const page = await inv.call("GET", `/api/virtualization/virtual-machines/?limit=1000`);
      const disk = new Map(
        page.body.results.map((vm: { id: number; disk: number | null }) => [vm.id, vm.disk]),
      );
      return vmIds.map((id) => disk.get(id));
    };
    assert.deepEqual(await totals(), vmIds.map((_, i) => 1000 + i + 7));
    // A later disk of some VMs: their earlier disks are read (only theirs) and counted too.
    const later = vmIds.slice(0, 3).map((id) => ({
      virtual_machine: id,
      name: "scsi2",
      size: 100,
    }));
    assert.equal((await inv.call("POST", disks, later)).status, 201);
    assert.equal(new Set(diskReads).size, 6, "the three VMs' two earlier disks each");
    assert.deepEqual(
      await totals(),
      vmIds.map((_, i) => 1000 + i + 7 + (i < 3 ? 100 : 0)),
    );
  } finally {
    inv.close();
  }
});

Deno.test("a bulk create reads the objects it refers to once: the check for references deleted meanwhile and the answer's nested objects read them from the cache", async () => {
  const vmReads: number[] = [];
  const counted = recordReadsOf(
    await Deno.openKv(":memory:"),
    "virtualization.virtualmachine",
    vmReads,
  );
  const inv = await setup({}, { kv: counted });
  try {
    const w = await world(inv);
    const vms = await bulkVms(inv, w.cluster, "ref");
    const vmIds: number[] = vms.map((vm: { id: number }) => vm.id);
    vmReads.length = 0;
    const made = await inv.call(
      "POST",
      "/api/virtualization/interfaces/",
      vmIds.map((id) => ({ virtual_machine: id, name: "net0" })),
    );
    assert.equal(made.status, 201, JSON.stringify(made.body));
    // The answer nests each interface's VM (read from the cache, not again).
    assert.deepEqual(
      made.body.map((i: { virtual_machine: { id: number; name: string } }) => [
        i.virtual_machine.id,
        i.virtual_machine.name,
      ]),
      vms.map((vm: { id: number; name: string }) => [vm.id, vm.name]),
    );
    assert.deepEqual([...vmReads].sort((a, b) => a - b), vmIds, "each VM read once");
    // A VM deleted before the write: still refused as NetBox does (read afresh, not cached stale).
    const gone = vmIds[N - 1];
    assert.equal(
      (await inv.call("DELETE", `/api/virtualization/virtual-machines/${gone}/`)).status,
      204,
    );
    const refused = await inv.call("POST", "/api/virtualization/interfaces/", [
      { virtual_machine: vmIds[0], name: "net1" },
      { virtual_machine: gone, name: "net1" },
    ]);
    assert.equal(refused.status, 400);
    assert.deepEqual(refused.body[1], {
      virtual_machine: [`Related object not found using the provided numeric ID: ${gone}`],
    });
  } finally {
    inv.close();
  }
});

Deno.test("a list by id reads the objects named, never the whole model", async () => {
  const { counted, counts } = countingKv(await Deno.openKv(":memory:"));
  const inv = await setup({}, { kv: counted });
  try {
    const w = await world(inv);
    const vms = await bulkVms(inv, w.cluster, "bulk");
    const [a, b] = [vms[3].id, vms[40].id];
    for (const query of [`id=${a}&id=${b}`, `id__in=${a},${b}`]) {
      const before = counts.list;
      const r = await inv.call(
        "GET",
        `/api/virtualization/virtual-machines/?${query}&name__ic=bulk&ordering=-id&fields=id`,
      );
      assert.deepEqual(r.body.results, [{ id: b }, { id: a }], query);
      // No list of the model's records (a scan) and no index range: the two ids are read.
      assert.equal(counts.list - before, 0, query);
    }
  } finally {
    inv.close();
  }
});

Deno.test("a bulk create of two reads the store as often as one of three: the objects it refers to are read in one batch too", async () => {
  const { counted, counts } = countingKv(await Deno.openKv(":memory:"));
  const inv = await setup({}, { kv: counted });
  try {
    const w = await world(inv);
    const type = (await inv.call("GET", `/api/virtualization/clusters/${w.cluster}/`)).body.type;
    const clusters: number[] = [];
    for (let i = 0; i < 5; i++) {
      clusters.push(
        (await inv.created("/api/virtualization/clusters/", {
          name: `batch-${i}`,
          type: type.id,
        })).id,
      );
    }
    const measure = async (of: number[], prefix: string) => {
      const before = { ...counts };
      const made = await inv.call(
        "POST",
        "/api/virtualization/virtual-machines/",
        of.map((cluster, i) => ({ name: `${prefix}-${i}`, cluster })),
      );
      assert.equal(made.status, 201, JSON.stringify(made.body));
      assert.deepEqual(made.body.map((vm: { cluster: { id: number } }) => vm.cluster.id), of);
      return {
        get: counts.get - before.get,
        getMany: counts.getMany - before.getMany,
        list: counts.list - before.list,
      };
    };
    assert.deepEqual(
      await measure(clusters.slice(0, 2), "two"),
      await measure(clusters.slice(2, 5), "three"),
    );
  } finally {
    inv.close();
  }
});

/** A KV handle tallying, per id, the reads (get, getMany) of `model`'s object keys. */
function objectReadsKv(kv: Deno.Kv, model: string) {
  const reads = new Map<string, number>();
  const tally = (key: Deno.KvKey) => {
    if (key[0] === "inventory" && key[1] === "obj" && key[2] === model) {
      reads.set(String(key[3]), (reads.get(String(key[3])) ?? 0) + 1);
    }
  };
  const counted = new Proxy(kv, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop === "get") {
        return (key: Deno.KvKey, ...rest: unknown[]) => {
          tally(key);
          return (value as (...a: unknown[]) => unknown).apply(target, [key, ...rest]);
        };
      }
      if (prop === "getMany") {
        return (list: Deno.KvKey[], ...rest: unknown[]) => {
          for (const key of list) tally(key);
          return (value as (...a: unknown[]) => unknown).apply(target, [list, ...rest]);
        };
      }
      return value.bind(target);
    },
  });
  return { counted, reads };
}

Deno.test("a create reads none of the objects it makes and an update each one it changes once: the answer is what was written, not a second read", async () => {
  // An update's answer needs no read after the commit unless a save hook may have changed the
  // object (tests/routes/plugin/save_answer_test.ts).
  const { counted, reads } = objectReadsKv(await Deno.openKv(":memory:"), VM_MODEL);
  const inv = await setup({}, { kv: counted });
  try {
    const w = await world(inv);
    reads.clear();
    const vms = await bulkVms(inv, w.cluster, "once");
    const ids = vms.map((vm) => vm.id);
    // A create reads none of the objects it makes: its answer is its drafts.
    assert.deepEqual([...reads], [], "a bulk create read back the VMs it made");
    const expectOnce = (what: string) => {
      assert.deepEqual(
        [...reads].filter(([, n]) => n !== 1),
        [],
        `${what}: VMs read more than once (id, reads)`,
      );
      assert.equal(reads.size, what === "PATCH" ? 1 : N, what);
      reads.clear();
    };
    reads.clear();
    const one = await inv.call("PATCH", `${VMS_PATH}${ids[0]}/`, { description: "one" });
    assert.equal(one.body.description, "one");
    expectOnce("PATCH");
    const bulk = await inv.call(
      "PATCH",
      VMS_PATH,
      ids.map((id) => ({ id, description: `bulk ${id}` })),
    );
    assert.equal(bulk.status, 200, JSON.stringify(bulk.body).slice(0, 300));
    assert.deepEqual(
      bulk.body.map((vm: { id: number; description: string }) => [vm.id, vm.description]),
      ids.map((id) => [id, `bulk ${id}`]),
    );
    expectOnce("bulk PATCH");
  } finally {
    inv.close();
  }
});
