/**
 * What one of the sync's sliced reads costs the store as the estate grows (issue 25): a list of
 * 100 parents' children carrying the sync's tag (`virtual_machine_id=…&tag=bridgebox-synced`,
 * walked by id) must read the index keys of those parents, not the index of every object that
 * carries the tag. Reading the tag's whole list made each request cost O(estate) and a run
 * O(estate²): at 100,000 guests every slice of a first run read 100,000 keys per request, since
 * each commit leaves the cached list stale (docs/sync.md, "At 100,000 guests").
 *
 * Counted, not timed: the keys KV lists yield and the records it reads per request, at two sizes
 * of the same estate. The answer is checked against what it must be (tagged children only).
 */
import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";
import { world } from "./_world.ts";
import { ReadCounter } from "../../_kv_reads.ts";

/** A Deno.Kv counting the entries its lists yield and the keys its getMany reads. */
function keyCountingKv(kv: Deno.Kv) {
  const tally = { listed: 0, got: 0 };
  const counted = new Proxy(kv, {
    get(target, prop) {
      if (prop === "list") {
        return (selector: Deno.KvListSelector, options?: Deno.KvListOptions) => {
          const iterator = target.list(selector, options);
          const wrapped = {
            get cursor() {
              return iterator.cursor;
            },
            async next() {
              const out = await iterator.next();
              if (!out.done) tally.listed++;
              return out;
            },
            return: (value?: unknown) => Promise.resolve({ done: true as const, value }),
            [Symbol.asyncIterator]() {
              return wrapped;
            },
          };
          return wrapped;
        };
      }
      if (prop === "getMany") {
        return (keys: Deno.KvKey[], options?: { consistency?: Deno.KvConsistencyLevel }) => {
          tally.got += keys.length;
          return target.getMany(keys, options);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { counted, tally };
}

const DISKS = "/api/virtualization/virtual-disks/";
const VMS = "/api/virtualization/virtual-machines/";

async function bulk(inv: Inv, path: string, bodies: unknown[]): Promise<Array<{ id: number }>> {
  const out: Array<{ id: number }> = [];
  for (let i = 0; i < bodies.length; i += 500) {
    const r = await inv.call("POST", path, bodies.slice(i, i + 500));
    assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body).slice(0, 300)}`);
    out.push(...r.body);
  }
  return out;
}

Deno.test("a sliced read (100 parents + the sync's tag) costs the same KV reads whatever the estate's size", async () => {
  const { counted, tally } = keyCountingKv(await Deno.openKv(":memory:"));
  const inv = await setup({}, { kv: counted });
  try {
    const w = await world(inv);
    const synced = await w.post("/api/extras/tags/", { name: "synced", slug: "synced" });
    const other = await w.post("/api/extras/tags/", { name: "other", slug: "other" });
    let made = 0;
    /** `count` more VMs with one tagged disk each. */
    const grow = async (count: number) => {
      const vms = await bulk(
        inv,
        VMS,
        Array.from({ length: count }, (_, i) => ({
          name: `vm-${made + i}`,
          cluster: w.cluster,
          tags: [synced],
        })),
      );
      made += count;
      await bulk(
        inv,
        DISKS,
        vms.map((vm) => ({ virtual_machine: vm.id, name: "scsi0", size: 8, tags: [synced] })),
      );
      return vms.map((vm) => vm.id);
    };
    const first = await grow(500);
    // The slice: 100 parents made one after another; two of them also hold a disk the sync
    // does not own (no tag, another tag), which the answer must leave out.
    const parents = first.slice(100, 200);
    const foreign = await bulk(inv, DISKS, [
      { virtual_machine: parents[0], name: "hand-made", size: 1 },
      { virtual_machine: parents[1], name: "other-tool", size: 1, tags: [other] },
    ]);
    const query = new URLSearchParams({ tag: "synced", fields: "id,virtual_machine,name,size" });
    for (const p of parents) query.append("virtual_machine_id", String(p));
    query.set("ordering", "id");
    query.set("id__gt", "0");
    query.set("limit", "1000");

    /** One sliced read right after a write (as in a first run: every cache of disks stale). */
    const slicedRead = async () => {
      await bulk(inv, DISKS, [{ virtual_machine: first[0], name: `touch-${made++}`, size: 1 }]);
      const before = { ...tally };
      const r = await inv.call("GET", `${DISKS}?${query}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const cost = { listed: tally.listed - before.listed, got: tally.got - before.got };
      return { body: r.body, cost };
    };

    const small = await slicedRead();
    const wanted = new Set(parents);
    assert.equal(small.body.count, 100);
    assert.equal(small.body.results.length, 100);
    for (const d of small.body.results) {
      assert.ok(wanted.has(d.virtual_machine.id ?? d.virtual_machine), JSON.stringify(d));
      assert.equal(d.name, "scsi0");
    }
    const ids = small.body.results.map((d: { id: number }) => d.id);
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), "walked by id");
    assert.ok(!ids.includes(foreign[0].id) && !ids.includes(foreign[1].id));

    await grow(2000); // five times the tagged disks
    const large = await slicedRead();
    assert.deepEqual(large.body.results.map((d: { id: number }) => d.id), ids, "same answer");
    assert.equal(large.body.count, 100);
    // The parents' index keys (100 disks + 2) and the records are read, the same at both sizes;
    // the tag's 2,500 keys (500 before) are not. A cost that followed the estate would be 5
    // times larger.
    const costs = `KV keys read by one sliced request: ${
      JSON.stringify(small.cost)
    } at 500 tagged disks, ${JSON.stringify(large.cost)} at 2,500`;
    assert.ok(small.cost.listed < 200 && small.cost.got < 300, costs);
    assert.ok(
      large.cost.listed <= small.cost.listed + 5 && large.cost.got <= small.cost.got + 5,
      costs,
    );
  } finally {
    inv.close();
  }
});

Deno.test("a list filtered by its parents nests them without reading them again, and a cluster sums its VMs in one read", async () => {
  // `virtual_machine_id=…` reads the VMs it names (an unknown id is a 400, as in NetBox); the
  // answer nests the same VMs. With no read cache (INVENTORY_CACHE_RECORDS=0, or an estate past
  // it: docs/sync.md, "Re-runs") the rendering read each of them a second time.
  const kv = await Deno.openKv(":memory:");
  let vmRecordsRead = 0;
  const counted = new Proxy(kv, {
    get(target, prop) {
      if (prop === "getMany") {
        return (keys: Deno.KvKey[], options?: { consistency?: Deno.KvConsistencyLevel }) => {
          vmRecordsRead += keys.filter((k) =>
            k[1] === "obj" && k[2] === "virtualization.virtualmachine"
          ).length;
          return target.getMany(keys, options);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const inv = await setup({ INVENTORY_CACHE_RECORDS: "0" }, { kv: counted });
  try {
    const w = await world(inv);
    const vms = await bulk(
      inv,
      VMS,
      Array.from({ length: 100 }, (_, i) => ({ name: `vm-${i}`, cluster: w.cluster })),
    );
    await bulk(inv, DISKS, vms.map((vm) => ({ virtual_machine: vm.id, name: "scsi0", size: 8 })));
    const query = new URLSearchParams({ fields: "id,virtual_machine,name", limit: "1000" });
    for (const vm of vms) query.append("virtual_machine_id", String(vm.id));
    vmRecordsRead = 0;
    const r = await inv.call("GET", `${DISKS}?${query}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.count, 100);
    const names = new Map(vms.map((vm, i) => [vm.id, `vm-${i}`]));
    for (const d of r.body.results) {
      assert.equal(d.virtual_machine.name, names.get(d.virtual_machine.id), JSON.stringify(d));
    }
    assert.equal(vmRecordsRead, 100, "each VM read once");
    // A cluster's allocated_vcpus, _memory and _disk sum its VMs: one read of them for the three.
    const inCluster = await inv.call("GET", `${VMS}?cluster_id=${w.cluster}&limit=1`);
    vmRecordsRead = 0;
    const cluster = await inv.call("GET", `/api/virtualization/clusters/${w.cluster}/`);
    assert.equal(cluster.status, 200, JSON.stringify(cluster.body));
    assert.equal(cluster.body.allocated_disk, 800);
    assert.equal(vmRecordsRead, inCluster.body.count, "the cluster's VMs read once");
    // An id that names no VM is still refused.
    const bad = await inv.call(
      "GET",
      `${DISKS}?virtual_machine_id=${vms[0].id}&virtual_machine_id=999999`,
    );
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    assert.match(JSON.stringify(bad.body), /999999 is not one of the available choices/);
  } finally {
    inv.close();
  }
});

Deno.test("a read of the change log between two ids costs the same KV reads whatever the log's length, and answers exactly that range", async () => {
  // How the sync reads the log since its cursor (`id__gte=a&id__lte=b`, at most a page wide:
  // docs/sync.md, "Re-runs"). Answered by reading the range's entries; listing the log below or
  // above it would make a first run, which reads back every entry it writes, grow with the log.
  const { counted, tally } = keyCountingKv(await Deno.openKv(":memory:"));
  const inv = await setup({}, { kv: counted });
  try {
    const w = await world(inv);
    let made = 0;
    const grow = (count: number) =>
      bulk(
        inv,
        VMS,
        Array.from({ length: count }, () => ({ name: `vm-${made++}`, cluster: w.cluster })),
      );
    const CHANGES = "/api/core/object-changes/";
    const newest = async () =>
      (await inv.call("GET", `${CHANGES}?ordering=-id&limit=1&fields=id`)).body.results[0].id;
    /** The log's last `span` ids, read as the sync reads them, and what that read cost. */
    const readTail = async (span: number, extra = "") => {
      const high = await newest();
      const low = high - span + 1;
      const before = { ...tally };
      const r = await inv.call(
        "GET",
        `${CHANGES}?id__gte=${low}&id__lte=${high}&ordering=id&limit=1000&fields=id,request_id,action${extra}`,
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return {
        low,
        high,
        body: r.body,
        cost: { listed: tally.listed - before.listed, got: tally.got - before.got },
      };
    };

    /** The sync's widest read: a whole page of ids, 1 to 1,000, whatever the log holds. */
    const readPage = async () => {
      const before = { ...tally };
      const r = await inv.call(
        "GET",
        `${CHANGES}?id__gte=1&id__lte=1000&ordering=id&limit=1000&fields=id`,
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const ids = r.body.results.map((e: { id: number }) => e.id);
      assert.equal(r.body.count, ids.length);
      assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
      assert.ok(ids.every((id: number) => id >= 1 && id <= 1000), JSON.stringify(ids));
      return { ids, cost: { listed: tally.listed - before.listed, got: tally.got - before.got } };
    };

    await grow(600);
    const small = await readTail(500);
    const smallPage = await readPage();
    const expected = Array.from({ length: 500 }, (_, i) => small.low + i);
    assert.deepEqual(small.body.results.map((e: { id: number }) => e.id), expected);
    assert.equal(small.body.count, 500);
    assert.ok(
      small.body.results.every((e: { action: { value: string } }) => e.action.value === "create"),
    );

    await grow(3000); // the log six times longer
    const large = await readTail(500);
    const largePage = await readPage();
    assert.deepEqual(largePage.ids, Array.from({ length: 1000 }, (_, i) => i + 1));
    assert.deepEqual(largePage.ids.slice(0, smallPage.ids.length), smallPage.ids);
    // A range exactly a page wide is still read by id: listing the log would list 6 times more.
    const pageCosts = `KV keys read by the range 1-1000: ${
      JSON.stringify(smallPage.cost)
    } at 600 entries, ${JSON.stringify(largePage.cost)} at 3,600`;
    assert.ok(largePage.cost.listed <= smallPage.cost.listed + 5, pageCosts);
    assert.equal(large.body.count, 500);
    assert.deepEqual(
      large.body.results.map((e: { id: number }) => e.id),
      Array.from({ length: 500 }, (_, i) => large.low + i),
    );
    const costs = `KV keys read by one range read of 500 entries: ${
      JSON.stringify(small.cost)
    } at 600 entries, ${JSON.stringify(large.cost)} at 3,600`;
    assert.ok(small.cost.listed < 50 && small.cost.got < 700, costs);
    assert.ok(
      large.cost.listed <= small.cost.listed + 5 && large.cost.got <= small.cost.got + 5,
      costs,
    );

    // The other filters still apply and the count is theirs; ids past the log's end are none;
    // offset and a descending order page the same range.
    const none = await readTail(500, "&action=delete");
    assert.deepEqual([none.body.count, none.body.results.length], [0, 0]);
    const top = await newest();
    const past = await inv.call(
      "GET",
      `${CHANGES}?id__gt=${top - 3}&id__lte=${top + 500}&fields=id`,
    );
    assert.deepEqual(past.body.results.map((e: { id: number }) => e.id).sort(), [
      top - 2,
      top - 1,
      top,
    ]);
    assert.equal(past.body.count, 3);
    const desc = await inv.call(
      "GET",
      `${CHANGES}?id__gte=${top - 9}&id__lte=${top}&ordering=-id&limit=4&offset=2&fields=id`,
    );
    assert.equal(desc.body.count, 10);
    assert.deepEqual(desc.body.results.map((e: { id: number }) => e.id), [
      top - 2,
      top - 3,
      top - 4,
      top - 5,
    ]);
    const empty = await inv.call("GET", `${CHANGES}?id__gte=${top}&id__lte=${top - 1}&fields=id`);
    assert.deepEqual([empty.body.count, empty.body.results.length], [0, 0]);
    const one = await inv.call("GET", `${CHANGES}?id__gte=${top}&id__lte=${top}&fields=id`);
    assert.deepEqual([one.body.count, one.body.results.map((e: { id: number }) => e.id)], [1, [
      top,
    ]]);
    // A range wider than a page (here as wide as a filter value may be) is no span read: it is
    // answered as any other filter, never by walking every id it names.
    const all = await inv.call("GET", `${CHANGES}?limit=2&fields=id`);
    const wide = await inv.call(
      "GET",
      `${CHANGES}?id__gte=1&id__lte=999999999999999&ordering=-id&limit=2&fields=id`,
    );
    assert.equal(wide.status, 200, JSON.stringify(wide.body));
    assert.deepEqual([wide.body.count, wide.body.results.map((e: { id: number }) => e.id)], [
      all.body.count,
      [top, top - 1],
    ]);
  } finally {
    inv.close();
  }
});

Deno.test("a list walked by id with two indexed filters reads its page's records only, not every candidate's", async () => {
  const kv = await Deno.openKv(":memory:");
  const first = await setup({}, { kv });
  try {
    const w = await world(first);
    const vms = Array.from({ length: 30 }, (_, i) => ({ name: `w-${i}`, cluster: w.cluster }));
    assert.equal(
      (await first.call("POST", "/api/virtualization/virtual-machines/", vms)).status,
      201,
    );
    // A second process on the same store: nothing of the VMs cached.
    const reads = new ReadCounter();
    const inv = await setup({}, { kv: reads.wrap(kv) });
    reads.counting = true;
    const r = await inv.call(
      "GET",
      `/api/virtualization/virtual-machines/?cluster_id=${w.cluster}&status=active&ordering=id&limit=2&offset=3`,
    );
    reads.counting = false;
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.count, 32);
    assert.deepEqual(r.body.results.map((vm: { name: string }) => vm.name), ["w-1", "w-2"]);
    assert.equal(reads.byModel.get("virtualization.virtualmachine"), 2);
    // Named by id beside an index much larger than they are: no other record is read.
    const [a, b] = r.body.results.map((vm: { id: number }) => vm.id);
    reads.byModel.clear();
    reads.counting = true;
    const named = await inv.call(
      "GET",
      `/api/virtualization/virtual-machines/?id=${a}&id=${b}&status=active`,
    );
    reads.counting = false;
    assert.deepEqual(named.body.results.map((vm: { name: string }) => vm.name), ["w-1", "w-2"]);
    // At most those two (read by the page above, this process holds them already).
    const read = reads.byModel.get("virtualization.virtualmachine") ?? 0;
    assert.ok(read <= 2, `${read} VM records read`);
  } finally {
    kv.close();
  }
});
