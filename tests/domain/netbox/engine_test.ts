import assert from "node:assert/strict";
import { ModelEngine } from "../../../domain/netbox/engine.ts";
import { coerce, parseDatetime } from "../../../domain/netbox/fields.ts";
import { CORE_MODELS } from "../../../domain/netbox/models/core.ts";
import { MemoryLogger } from "../../../infra/logger.ts";
import type { IndexValue, ObjectWrite } from "../../../storage/ports.ts";
import { KvModelStore } from "../../../storage/kv/models.ts";

/** The real KV store, counting the calls the engine makes (no behaviour replaced). */
class CountingStore extends KvModelStore {
  scans: string[] = [];
  commits: number[] = [];
  loaded = 0;
  override getMany(model: string, ids: readonly number[]) {
    if (model === "virtualization.virtualmachine") this.loaded += ids.length;
    return super.getMany(model, ids);
  }
  override scan(model: string) {
    this.scans.push(model);
    return super.scan(model);
  }
  override commit(writes: readonly ObjectWrite[]) {
    this.commits.push(writes.length);
    return super.commit(writes);
  }
  /** Point reads (a record, a unique holder): one per object of a bulk write is the bug. */
  pointReads = 0;
  override get(model: string, id: number) {
    this.pointReads++;
    return super.get(model, id);
  }
  override idByUnique(model: string, constraint: string, values: readonly IndexValue[]) {
    this.pointReads++;
    return super.idByUnique(model, constraint, values);
  }
}

async function engine() {
  const kv = await Deno.openKv(":memory:");
  const store = new CountingStore(kv);
  const e = new ModelEngine({ store, logger: new MemoryLogger(), now: Date.now }).register(
    ...CORE_MODELS,
  );
  return { kv, store, e };
}

Deno.test("bulk create of 1,000 VMs: few atomics, each within KV limits, all indexed", async () => {
  const { kv, store, e } = await engine();
  try {
    const ct = await e.insert("virtualization.clustertype", { name: "PVE", slug: "pve" });
    assert.ok(ct.ok);
    const cl = await e.insert("virtualization.cluster", { name: "c", type: ct.value.id });
    assert.ok(cl.ok);
    store.commits = [];
    const r = await e.createMany(
      "virtualization.virtualmachine",
      Array.from(
        { length: 1000 },
        (_, i) => ({ name: `vm${i}`, cluster: cl.value.id, status: "active" }),
      ),
    );
    assert.ok(r.ok);
    // Batches are bounded by 100 checks (one unique check per VM) and 1000 mutations per
    // atomic (object, unique, index entries, their counters, ordered-index entries): a
    // handful of atomics, never one per object or per field.
    assert.ok(
      store.commits.length >= 10 && store.commits.length <= 20,
      `commits: ${store.commits}`,
    );
    assert.equal(store.commits.reduce((a, b) => a + b, 0), 1000);
    assert.equal(await store.count("virtualization.virtualmachine"), 1000);
    store.scans = [];
    const page = await e.list(
      "virtualization.virtualmachine",
      new URLSearchParams(`cluster_id=${cl.value.id}&limit=50`),
    );
    assert.equal(page.count, 1000);
    assert.equal(page.records.length, 50);
    const byStatus = await e.list(
      "virtualization.virtualmachine",
      new URLSearchParams("status=active&ordering=id&limit=5"),
    );
    assert.equal(byStatus.count, 1000);
    const byName = await e.find("virtualization.virtualmachine", { name: ["vm500"] });
    assert.equal(byName.length, 1);
    assert.deepEqual(store.scans, [], "indexed filters never scan the model");
  } finally {
    kv.close();
  }
});

Deno.test("a filtered list is sorted once for all its pages while the model is unchanged", async () => {
  const { kv, store, e } = await engine();
  try {
    const ct = await e.insert("virtualization.clustertype", { name: "PVE", slug: "pve" });
    assert.ok(ct.ok);
    const cl = await e.insert("virtualization.cluster", { name: "c", type: ct.value.id });
    assert.ok(cl.ok);
    const model = "virtualization.virtualmachine";
    const r = await e.createMany(
      model,
      Array.from(
        { length: 120 },
        (_, i) => ({ name: `vm-${(i * 37) % 120}`, cluster: cl.value.id }),
      ),
    );
    assert.ok(r.ok);
    // name__ic has no index: the general path (scan, filter, sort).
    const walk = async (query: string) => {
      const ids: number[] = [];
      for (let offset = 0; offset < 120; offset += 25) {
        const page = await e.list(model, new URLSearchParams(`${query}&limit=25&offset=${offset}`));
        assert.equal(page.count, 120);
        ids.push(...page.records.map((x) => x.id));
      }
      return ids;
    };
    const whole = async (query: string) =>
      (await e.list(model, new URLSearchParams(`${query}&limit=1000`))).records.map((x) => x.id);
    store.scans = [];
    const byName = await walk("name__ic=vm");
    assert.equal(store.scans.length, 1, "one scan for five pages");
    assert.deepEqual(byName, await whole("name__ic=vm"));
    assert.equal(store.scans.length, 1, "the whole list comes from the same sorted ids");
    assert.deepEqual(await walk("name__ic=vm&ordering=-name"), [...byName].reverse());
    assert.equal(store.scans.length, 2, "another ordering is another list");
    // A write makes the kept order stale at once: the renamed VM moves to the front.
    const last = byName.at(-1)!;
    assert.ok((await e.update(model, last, { name: "vm-" })).ok);
    const after = await walk("name__ic=vm");
    assert.equal(store.scans.length, 3);
    assert.deepEqual(after, [last, ...byName.slice(0, -1)]);
  } finally {
    kv.close();
  }
});

Deno.test("fast pages read only the page; they agree with the general path", async () => {
  const { kv, store, e } = await engine();
  try {
    const ct = await e.insert("virtualization.clustertype", { name: "PVE", slug: "pve" });
    assert.ok(ct.ok);
    const cl = await e.insert("virtualization.cluster", { name: "c", type: ct.value.id });
    const other = await e.insert("virtualization.cluster", { name: "d", type: ct.value.id });
    assert.ok(cl.ok && other.ok);
    const names = ["b10", "B2", "a", "b1", "Z", "b02", "_x", "b2", "c", "10", "9"];
    const r = await e.createMany(
      "virtualization.virtualmachine",
      Array.from({ length: 300 }, (_, i) => ({
        name: `${names[i % names.length]}-${i % 7}-${i}`,
        cluster: i % 3 === 0 ? other.value.id : cl.value.id,
        status: i % 2 ? "active" : "offline",
      })),
    );
    assert.ok(r.ok);
    const model = "virtualization.virtualmachine";
    for (
      const [fast, slow] of [
        [`cluster_id=${cl.value.id}`, `cluster_id=${cl.value.id}&name__ic=-`],
        [
          `cluster_id=${cl.value.id}&ordering=-name`,
          `cluster_id=${cl.value.id}&name__ic=-&ordering=-name`,
        ],
        [`status=active&ordering=-id`, `status=active&name__ic=-&ordering=-id`],
        [`status=active&ordering=name`, `status=active&name__ic=-&ordering=name`],
        ["", "name__ic=-"],
        ["ordering=-name", "name__ic=-&ordering=-name"],
      ]
    ) {
      for (const offset of [0, 37, 190]) {
        store.loaded = 0;
        store.scans = [];
        const a = await e.list(model, new URLSearchParams(`${fast}&limit=25&offset=${offset}`));
        assert.ok(store.loaded <= 25, `${fast}: loaded ${store.loaded}`);
        assert.deepEqual(store.scans, [], `${fast}: a fast page scans nothing`);
        const b = await e.list(model, new URLSearchParams(`${slow}&limit=25&offset=${offset}`));
        assert.equal(a.count, b.count, fast);
        assert.deepEqual(
          a.records.map((x) => x.id),
          b.records.map((x) => x.id),
          `${fast} @${offset}`,
        );
      }
    }
    // Counters follow updates and deletes.
    const first =
      (await e.list(model, new URLSearchParams(`cluster_id=${cl.value.id}`))).records[0];
    await e.update(model, first.id, { cluster: other.value.id });
    const [x, y] = await Promise.all([
      e.list(model, new URLSearchParams(`cluster_id=${cl.value.id}`)),
      e.list(model, new URLSearchParams(`cluster_id=${cl.value.id}&name__ic=-`)),
    ]);
    assert.equal(x.count, y.count);
    assert.ok((await e.remove(model, x.records[0].id)).ok);
    assert.equal(
      (await e.list(model, new URLSearchParams(`cluster_id=${cl.value.id}`))).count,
      y.count - 1,
    );
  } finally {
    kv.close();
  }
});

Deno.test("plan splits writes by checks, mutations and size", async () => {
  const { kv, store } = await engine();
  try {
    const writes: ObjectWrite[] = Array.from({ length: 300 }, (_, i) => ({
      model: "m.x",
      id: i + 1,
      prev: null,
      next: {
        record: { id: i + 1, blob: "x".repeat(5000) },
        indexes: Array.from({ length: 5 }, (_, k) => [`f${k}`, i] as const),
        uniques: [["name", [`n${i}`]] as const],
      },
    }));
    const groups = store.plan(writes);
    assert.equal(groups.flat().length, 300);
    for (const g of groups) {
      // one unique check per new object
      assert.ok(g.length <= 100, `checks ${g.length}`);
      assert.ok(JSON.stringify(g).length < 800 * 1024);
    }
    for (const g of groups) assert.ok((await store.commit(g)).ok);
    assert.equal(await store.count("m.x"), 300);
    assert.deepEqual(await store.idsByIndex("m.x", "f0", 7), [8]);
    assert.equal(await store.idByUnique("m.x", "name", ["n9"]), 10);
  } finally {
    kv.close();
  }
});

Deno.test("deletes free unique values and index entries; counts stay right", async () => {
  const { kv, store, e } = await engine();
  try {
    const t = await e.insert("tenancy.tenant", { name: "A", slug: "a" });
    assert.ok(t.ok);
    assert.ok((await e.remove("tenancy.tenant", t.value.id)).ok);
    assert.equal(await store.count("tenancy.tenant"), 0);
    assert.equal(await store.idByUnique("tenancy.tenant", "name", ["a"]), null);
    const again = await e.insert("tenancy.tenant", { name: "A", slug: "a" });
    assert.ok(again.ok, "the name is free again");
    assert.notEqual(again.value.id, t.value.id, "ids are never reused");
    const upd = await e.update("tenancy.tenant", again.value.id, { slug: "b" });
    assert.ok(upd.ok);
    assert.equal(await store.idByUnique("tenancy.tenant", "slug", ["a"]), null);
    assert.equal(await store.idByUnique("tenancy.tenant", "slug", ["b"]), again.value.id);
  } finally {
    kv.close();
  }
});

Deno.test("field coercion follows DRF: bounds, strings, datetimes", () => {
  assert.deepEqual(coerce({ type: "int" }, "42"), { ok: true, value: 42 });
  assert.equal(coerce({ type: "int" }, 2 ** 31).ok, false);
  assert.equal(coerce({ type: "int" }, 1.5).ok, false);
  assert.equal(coerce({ type: "int" }, true).ok, false);
  assert.deepEqual(coerce({ type: "string", maxLength: 3 }, "  ab "), { ok: true, value: "ab" });
  assert.deepEqual(coerce({ type: "string" }, 12), { ok: true, value: "12" });
  assert.equal(coerce({ type: "string", required: true }, "  ").ok, false);
  assert.deepEqual(coerce({ type: "bool" }, "false"), { ok: true, value: false });
  // A choice is given directly: NetBox 4.6's ChoiceField refuses the `{value, label}` it renders
  // (pynetbox sends the value); the plugin's choices still take it.
  assert.deepEqual(coerce({ type: "choice", choices: [["a", "A"]] }, { value: "a" }), {
    ok: false,
    error: 'Value must be passed directly (e.g. "foo": 123); do not use a dictionary or list.',
  });
  assert.deepEqual(
    coerce({ type: "choice", choices: [["a", "A"]], drfChoice: true }, { value: "a" }),
    { ok: true, value: "a" },
  );
  assert.equal(parseDatetime("2024-05-01T10:00:00+02:00"), "2024-05-01T08:00:00.000Z");
  assert.equal(parseDatetime("2024-05-01"), "2024-05-01T00:00:00.000Z");
  assert.equal(parseDatetime("2024-13-01T00:00:00Z"), undefined);
  assert.equal(parseDatetime("yesterday"), undefined);
});

Deno.test("after-save hooks never fail the save; their writes show in the result", async () => {
  const kv = await Deno.openKv(":memory:");
  const logger = new MemoryLogger();
  try {
    const e = new ModelEngine({ store: new KvModelStore(kv), logger, now: Date.now }).register({
      app: "test",
      model: "thing",
      verbose: "thing",
      path: "test/things/",
      fields: {
        name: { type: "string", required: true },
        last_push: { type: "json", readOnly: true },
      },
      brief: ["name"],
      afterSave: async (record, ctx) => {
        await ctx.engine.patchStored("test.thing", record.id, { last_push: { ok: false } });
        if (record.name === "boom") throw new Error("push failed");
      },
    });
    const ok = await e.insert("test.thing", { name: "fine" });
    assert.ok(ok.ok);
    assert.deepEqual(ok.value.last_push, { ok: false });
    const boom = await e.insert("test.thing", { name: "boom" });
    assert.ok(boom.ok, "the save stands");
    assert.equal(logger.at("error").length, 1);
  } finally {
    kv.close();
  }
});

Deno.test("long values never make storage keys too large", async () => {
  const { kv, e } = await engine();
  try {
    const digits = Array.from({ length: 50 }, (_, i) => String(i)).join(" ");
    const ok = await e.insert("tenancy.tenant", { name: digits.slice(0, 100), slug: "d" });
    assert.ok(ok.ok, JSON.stringify(ok));
    const site = await e.insert("dcim.site", {
      name: "s",
      slug: "s",
      facility: "f",
      description: "9 ".repeat(100),
    });
    assert.ok(site.ok);
    // A model with an unbounded unique field refuses values too long for a key.
    const e2 = new ModelEngine({
      store: new KvModelStore(kv),
      logger: new MemoryLogger(),
      now: Date.now,
    })
      .register({
        app: "t",
        model: "u",
        verbose: "u",
        path: "t/u/",
        fields: { name: { type: "string", required: true, index: true } },
        brief: ["name"],
        unique: [{ fields: ["name"] }],
        ordering: ["name"],
      });
    const long = await e2.insert("t.u", { name: "1 ".repeat(3000) });
    assert.equal(long.ok, false);
    const fine = await e2.insert("t.u", { name: "1 ".repeat(150) });
    assert.ok(fine.ok);
  } finally {
    kv.close();
  }
});

Deno.test("a filter finds values too long for the value index (the store scans for them)", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    // An indexed field without a length limit: values over the store's maxIndexedLength have
    // no index entry (storage/kv/models.ts), so an index lookup alone would miss them.
    const e = new ModelEngine({
      store: new KvModelStore(kv),
      logger: new MemoryLogger(),
      now: Date.now,
    })
      .register({
        app: "t",
        model: "note",
        verbose: "note",
        path: "t/notes/",
        fields: { text: { type: "string", required: true, index: true } },
        brief: ["text"],
        ordering: ["id"],
      });
    const long = "x".repeat(450);
    assert.ok(long.length > new KvModelStore(kv).maxIndexedLength);
    for (const text of ["short", long, "other"]) assert.ok((await e.insert("t.note", { text })).ok);
    const texts = async (query: Record<string, string>) =>
      (await e.list("t.note", new URLSearchParams(query))).records.map((r) => r.text);
    assert.deepEqual(await texts({ text: long }), [long]);
    assert.deepEqual(await texts({ text: long, ordering: "-id" }), [long]);
    assert.deepEqual(await texts({ text: "short" }), ["short"]);
    assert.deepEqual(await texts({ text__n: long }), ["short", "other"]);
  } finally {
    kv.close();
  }
});

Deno.test("an object of exactly the storable size is stored; one byte more is refused", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvModelStore(kv);
    const e = new ModelEngine({ store, logger: new MemoryLogger(), now: () => 1_700_000_000_000 })
      .register({
        app: "t",
        model: "blob",
        verbose: "blob",
        path: "t/blobs/",
        fields: { text: { type: "string", required: true } },
        brief: ["text"],
        ordering: ["id"],
      });
    const small = await e.insert("t.blob", { text: "x" });
    assert.ok(small.ok);
    // The text that makes the next record exactly maxRecordBytes as the store measures it.
    const sized = (n: number) =>
      store.recordSize({ ...small.value, id: small.value.id + 1, text: "x".repeat(n) });
    let n = store.maxRecordBytes - sized(0);
    while (sized(n) > store.maxRecordBytes) n--;
    assert.equal(sized(n), store.maxRecordBytes);
    const fits = await e.insert("t.blob", { text: "x".repeat(n) });
    assert.ok(fits.ok, JSON.stringify(fits).slice(0, 200));
    const over = await e.insert("t.blob", { text: "x".repeat(n + 1) });
    assert.deepEqual(over, {
      ok: false,
      reason: "invalid",
      errors: {
        non_field_errors: [
          `The object is too large to store (limit ${store.maxRecordBytes} bytes).`,
        ],
      },
    });
  } finally {
    kv.close();
  }
});

Deno.test("bulk create and update of 500 VMs: reads batched, never one per object, nothing read back", async () => {
  const { kv, store, e } = await engine();
  try {
    const ct = await e.insert("virtualization.clustertype", { name: "PVE", slug: "pve" });
    assert.ok(ct.ok);
    const cl = await e.insert("virtualization.cluster", { name: "c", type: ct.value.id });
    assert.ok(cl.ok);
    store.pointReads = 0;
    store.loaded = 0;
    const made = await e.createMany(
      "virtualization.virtualmachine",
      Array.from({ length: 500 }, (_, i) => ({ name: `vm${i}`, cluster: cl.value.id })),
    );
    assert.ok(made.ok);
    assert.ok(store.pointReads < 10, `point reads for 500 creates: ${store.pointReads}`);
    assert.equal(store.loaded, 0, "the created VMs are answered as committed, not read back");
    assert.deepEqual(made.value.map((v) => v.name), made.value.map((_, i) => `vm${i}`));
    store.pointReads = 0;
    const done = await e.updateMany(
      "virtualization.virtualmachine",
      made.value.map((v) => ({ id: v.id, data: { memory: 2048 } })),
      true,
    );
    assert.ok(done.ok);
    assert.ok(store.pointReads < 10, `point reads for 500 updates: ${store.pointReads}`);
    assert.equal(store.loaded, 0, "the updated VMs are answered as committed, not read back");
    const stored = await e.getMany("virtualization.virtualmachine", made.value.map((v) => v.id));
    assert.deepEqual(stored.map((v) => v.memory), made.value.map(() => 2048));
    assert.deepEqual(done.value.map((v) => v.memory), made.value.map(() => 2048));
    // 500 disks, each on another VM: the VMs they name are read together, not one by one.
    store.pointReads = 0;
    const disks = await e.createMany(
      "virtualization.virtualdisk",
      made.value.map((v) => ({ virtual_machine: v.id, name: "scsi0", size: 10 })),
    );
    assert.ok(disks.ok);
    assert.ok(store.pointReads < 10, `point reads for 500 disks: ${store.pointReads}`);
    const refused = await e.createMany("virtualization.virtualdisk", [
      { virtual_machine: made.value[0].id, name: "scsi1", size: 10 },
      { virtual_machine: 999_999, name: "scsi1", size: 10 },
    ]);
    assert.equal(refused.ok, false, "a VM that does not exist is still refused");
    // A name taken in the same batch and one taken in the store are both refused.
    const clash = await e.createMany("virtualization.virtualmachine", [
      { name: "new", cluster: cl.value.id },
      { name: "NEW", cluster: cl.value.id },
      { name: "vm7", cluster: cl.value.id },
    ]);
    assert.equal(clash.ok, false);
  } finally {
    kv.close();
  }
});
