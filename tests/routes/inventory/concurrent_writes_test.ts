/**
 * Writes that race: a bulk PATCH spanning several atomics is never half written, and a delete
 * racing a create or an update never leaves a reference to a deleted object.
 */
import assert from "node:assert/strict";
import { createInventoryCore } from "../../../routes/inventory/mod.ts";
import { createKvStorage } from "../../../storage/kv/mod.ts";
import { KvModelStore } from "../../../storage/kv/models.ts";
import type { ObjectWrite } from "../../../storage/ports.ts";
import { setup } from "./_setup.ts";
import { world } from "./_world.ts";

/**
 * An inventory whose store holds, once `hold()` was called, the first commit `matches` accepts:
 * `held` resolves when it is reached, and `release()` lets it go on. Orders a racing request
 * between a write's validation and its commit with signals, never with sleeps.
 */
async function heldAtCommit(matches: (writes: readonly ObjectWrite[]) => boolean) {
  const kv = await Deno.openKv(":memory:");
  let reached!: () => void;
  const held = new Promise<void>((r) => reached = r);
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  let holding = false;
  const models = new KvModelStore(kv, {
    beforeCommit: async (writes: readonly ObjectWrite[]) => {
      if (!holding || !matches(writes)) return;
      holding = false;
      reached();
      await released;
    },
  });
  const inv = await setup({}, {
    kv,
    storage: { ...createKvStorage(kv, { now: Date.now }), models },
  });
  return { inv, held, release, hold: () => void (holding = true) };
}

/**
 * Waits for the hold to be reached; a request that answers first (it never got to its commit)
 * fails the test at once instead of leaving it waiting.
 */
async function heldBefore(
  held: Promise<void>,
  request: Promise<{ status: number; body: unknown }>,
) {
  await Promise.race([
    held,
    request.then((r) => {
      throw new Error(`answered before its commit: ${r.status} ${JSON.stringify(r.body)}`);
    }),
  ]);
}

Deno.test("bulk PATCH spanning several atomics survives concurrent edits: never half written", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const created = await inv.call(
      "POST",
      "/api/virtualization/virtual-machines/",
      Array.from({ length: 400 }, (_, i) => ({ name: `bulk${i}`, cluster: w.cluster })),
    );
    assert.equal(created.status, 201);
    const ids: number[] = created.body.map((r: { id: number }) => r.id);
    // Edits of records in the later atomics land between the bulk's read and its commit.
    const tail = ids.filter((_, i) => i >= 150 && i % 5 === 0);
    const [bulk] = await Promise.all([
      inv.call(
        "PATCH",
        "/api/virtualization/virtual-machines/",
        ids.map((id) => ({ id, description: "bulk" })),
      ),
      ...tail.map(async (id, i) => {
        await new Promise((r) => setTimeout(r, i * 4));
        return inv.call("PATCH", `/api/virtualization/virtual-machines/${id}/`, {
          comments: "solo",
        });
      }),
    ]);
    assert.equal(bulk.status, 200, JSON.stringify(bulk.body).slice(0, 300));
    assert.equal(bulk.body.length, ids.length);
    const after = await inv.call(
      "GET",
      "/api/virtualization/virtual-machines/?name__isw=bulk&limit=0&fields=id,description,comments",
    );
    const stale = after.body.results.filter((r: { description: string }) =>
      r.description !== "bulk"
    );
    assert.deepEqual(stale, []);
    const solo = after.body.results.filter((r: { comments: string }) => r.comments === "solo");
    assert.equal(solo.length, tail.length);
  } finally {
    inv.close();
  }
});

Deno.test("a delete racing a create never leaves a reference to a deleted object", async () => {
  const inv = await setup();
  try {
    const engine = createInventoryCore(inv.deps).engine;
    await inv.call("POST", "/api/virtualization/cluster-types/", { name: "t", slug: "t" });
    const dangling: number[] = [];
    for (let i = 0; i < 40; i++) {
      const c = await inv.call("POST", "/api/virtualization/clusters/", { name: `c${i}`, type: 1 });
      const [vm] = await Promise.all([
        inv.call("POST", "/api/virtualization/virtual-machines/", {
          name: `v${i}`,
          cluster: c.body.id,
        }),
        (async () => {
          await new Promise((r) => setTimeout(r, i % 3));
          return inv.call("DELETE", `/api/virtualization/clusters/${c.body.id}/`);
        })(),
      ]);
      if (vm.status !== 201) {
        assert.equal(vm.status, 400, JSON.stringify(vm.body));
        continue;
      }
      const stored = await engine.get("virtualization.virtualmachine", vm.body.id);
      if (typeof stored?.cluster !== "number") continue;
      if (!(await engine.get("virtualization.cluster", stored.cluster))) dangling.push(i);
    }
    assert.deepEqual(dangling, []);
  } finally {
    inv.close();
  }
});

Deno.test("an update racing the delete of its new target never leaves a dangling or null required FK", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const engine = createInventoryCore(inv.deps).engine;
    const bad: string[] = [];
    for (let i = 0; i < 30; i++) {
      const target = await w.post("/api/virtualization/virtual-machines/", {
        name: `t${i}`,
        cluster: w.cluster,
      });
      const iface = await w.post("/api/virtualization/interfaces/", {
        virtual_machine: w.vm1,
        name: `e${i}`,
      });
      await Promise.all([
        inv.call("PATCH", `/api/virtualization/interfaces/${iface}/`, { virtual_machine: target }),
        (async () => {
          await new Promise((r) => setTimeout(r, i % 3));
          return inv.call("DELETE", `/api/virtualization/virtual-machines/${target}/`);
        })(),
      ]);
      const stored = await engine.get("virtualization.vminterface", iface);
      if (!stored) continue; // went with the deleted VM (CASCADE)
      const vm = stored.virtual_machine;
      if (typeof vm !== "number") bad.push(`${i}: null virtual_machine`);
      else if (!(await engine.get("virtualization.virtualmachine", vm))) bad.push(`${i}: dangling`);
    }
    assert.deepEqual(bad, []);
  } finally {
    inv.close();
  }
});

Deno.test("a bulk create whose target is deleted before its commit is undone whole: a 400 leaves nothing", async () => {
  // The create is held at its commit (the store's beforeCommit hook) after it validated, while
  // the cluster one of its VMs points at is deleted; then it commits and must take itself back.
  const { inv, hold, held, release } = await heldAtCommit((writes) =>
    writes.some((w) => w.model === "virtualization.virtualmachine" && w.prev === null)
  );
  try {
    const w = await world(inv);
    const kept = await inv.call("GET", `/api/virtualization/clusters/${w.cluster}/`);
    const doomed = await w.post("/api/virtualization/clusters/", {
      name: "doomed",
      type: kept.body.type.id,
    });
    hold();
    const creating = inv.call("POST", "/api/virtualization/virtual-machines/", [
      { name: "stays-out-1", cluster: w.cluster },
      { name: "stays-out-2", cluster: doomed },
    ]);
    await heldBefore(held, creating);
    const gone = await inv.call("DELETE", `/api/virtualization/clusters/${doomed}/`);
    assert.equal(gone.status, 204, JSON.stringify(gone.body));
    release();
    const created = await creating;
    assert.deepEqual([created.status, created.body], [400, [{}, {
      cluster: [`Related object not found using the provided numeric ID: ${doomed}`],
    }]]);
    // All or nothing: neither VM of the refused batch is left behind (a retry must not meet
    // a half-written batch, nor a VM pointing at a deleted cluster).
    const left = await inv.call("GET", "/api/virtualization/virtual-machines/?name__isw=stays-out");
    assert.deepEqual([left.body.count, left.body.results], [0, []]);
    const changes = await inv.call(
      "GET",
      "/api/core/object-changes/?changed_object_type=virtualization.virtualmachine&limit=0",
    );
    assert.deepEqual(changes.body.results.map((c: { object_repr: string }) => c.object_repr), [
      "vm2",
      "vm1",
    ]);
  } finally {
    release();
    inv.close();
  }
});

Deno.test("an address assigned (generic FK) to an interface deleted before its commit is undone: the 400 validation gives, nothing left", async () => {
  // A generic FK is a reference like any FK: the create checks after its commit that the
  // interface it names still exists, and takes itself back when a delete removed it meanwhile.
  const { inv, hold, held, release } = await heldAtCommit((writes) =>
    writes.some((w) => w.model === "ipam.ipaddress" && w.prev === null)
  );
  try {
    const w = await world(inv);
    hold();
    const creating = inv.call("POST", "/api/ipam/ip-addresses/", [
      { address: "192.0.2.20/24" },
      {
        address: "192.0.2.21/24",
        assigned_object_type: "virtualization.vminterface",
        assigned_object_id: w.if2,
      },
    ]);
    await heldBefore(held, creating);
    const gone = await inv.call("DELETE", `/api/virtualization/interfaces/${w.if2}/`);
    assert.equal(gone.status, 204, JSON.stringify(gone.body));
    release();
    const created = await creating;
    // The same answer validation gives the same request once the interface is gone.
    const late = await inv.call("POST", "/api/ipam/ip-addresses/", {
      address: "192.0.2.21/24",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: w.if2,
    });
    assert.equal(late.status, 400);
    assert.deepEqual([created.status, created.body], [400, [{}, late.body]]);
    const all = await inv.call("GET", "/api/ipam/ip-addresses/?limit=0");
    const addresses = all.body.results.map((r: { address: string }) => r.address);
    assert.deepEqual(addresses.filter((a: string) => a.startsWith("192.0.2.2")), []);
  } finally {
    release();
    inv.close();
  }
});

Deno.test("a bulk create undone after its commit while another client deleted one of its objects: the 400 validation gives, nothing left", async () => {
  // 150 VMs take two atomics (at most 100 checks each): the second is held at its commit after
  // the first was written; meanwhile one VM of the first is deleted by another client and the
  // cluster the last VM names is deleted. The create then finds that reference gone and takes
  // back what it wrote: the VM already deleted is skipped, not a 500.
  let commits = 0;
  const { inv, hold, held, release } = await heldAtCommit((writes) =>
    writes.some((w) => w.model === "virtualization.virtualmachine" && w.prev === null) &&
    ++commits === 2
  );
  try {
    const w = await world(inv);
    const type = (await inv.call("GET", `/api/virtualization/clusters/${w.cluster}/`)).body.type;
    const doomed = await w.post("/api/virtualization/clusters/", { name: "doomed", type: type.id });
    const batch = Array.from({ length: 150 }, (_, i) => ({
      name: `undone-${i}`,
      cluster: i === 149 ? doomed : w.cluster,
    }));
    hold();
    const creating = inv.call("POST", "/api/virtualization/virtual-machines/", batch);
    await heldBefore(held, creating);
    const written = await inv.call(
      "GET",
      "/api/virtualization/virtual-machines/?name=undone-0&fields=id",
    );
    assert.equal(written.body.count, 1, "the first atomic is written before the held one");
    const early = written.body.results[0].id;
    const gone = await inv.call("DELETE", `/api/virtualization/virtual-machines/${early}/`);
    assert.equal(gone.status, 204, JSON.stringify(gone.body));
    const target = await inv.call("DELETE", `/api/virtualization/clusters/${doomed}/`);
    assert.equal(target.status, 204, JSON.stringify(target.body));
    release();
    const created = await creating;
    assert.equal(created.status, 400, JSON.stringify(created.body).slice(0, 300));
    assert.deepEqual(created.body[149], {
      cluster: [`Related object not found using the provided numeric ID: ${doomed}`],
    });
    assert.deepEqual(created.body.slice(0, 149), Array.from({ length: 149 }, () => ({})));
    const left = await inv.call("GET", "/api/virtualization/virtual-machines/?name__isw=undone");
    assert.deepEqual([left.body.count, left.body.results], [0, []]);
    assert.deepEqual(inv.deps.logger.at("error"), []);
  } finally {
    release();
    inv.close();
  }
});

Deno.test("a delete whose cascade lost an object to another delete meanwhile still completes", async () => {
  // Deleting a region takes its child region (CASCADE) and clears its sites' region
  // (SET_NULL). The child is deleted by another request while the first one is held at the
  // site's detach (the store's beforeCommit hook): the first must skip it, not fail.
  const { inv, hold, held, release } = await heldAtCommit((writes) =>
    writes.some((w) => w.model === "dcim.site" && w.prev && w.next)
  );
  try {
    const post = async (path: string, body: unknown) =>
      (await inv.created(path, body)).id as number;
    const region = await post("/api/dcim/regions/", { name: "Europe", slug: "europe" });
    const child = await post("/api/dcim/regions/", {
      name: "North",
      slug: "north",
      parent: region,
    });
    const site = await post("/api/dcim/sites/", { name: "AMS1", slug: "ams1", region });
    hold();
    const deleting = inv.call("DELETE", `/api/dcim/regions/${region}/`);
    await heldBefore(held, deleting);
    const childGone = await inv.call("DELETE", `/api/dcim/regions/${child}/`);
    assert.equal(childGone.status, 204, JSON.stringify(childGone.body));
    release();
    const deleted = await deleting;
    assert.equal(deleted.status, 204, JSON.stringify(deleted.body));
    const regions = await inv.call("GET", "/api/dcim/regions/");
    assert.deepEqual([regions.body.count, regions.body.results], [0, []]);
    const after = await inv.call("GET", `/api/dcim/sites/${site}/`);
    assert.equal(after.body.region, null);
    assert.deepEqual(inv.deps.logger.at("error"), []);
  } finally {
    release();
    inv.close();
  }
});

Deno.test("an update whose new tag is deleted before its commit keeps its other tags and loses that one only", async () => {
  // The PATCH is held at its commit after it validated, while one of the tags it sets is
  // deleted; it then commits and must drop exactly that tag, as the delete would have.
  const { inv, hold, held, release } = await heldAtCommit((writes) =>
    writes.some((w) =>
      w.model === "virtualization.virtualmachine" && w.prev !== null && w.next !== null
    )
  );
  try {
    const w = await world(inv);
    const tag = async (slug: string) =>
      await w.post("/api/extras/tags/", { name: slug, slug }) as number;
    const [keep, doomed, other] = [await tag("keep"), await tag("doomed"), await tag("other")];
    hold();
    const patching = inv.call("PATCH", `/api/virtualization/virtual-machines/${w.vm1}/`, {
      tags: [keep, doomed, other],
    });
    await heldBefore(held, patching);
    const gone = await inv.call("DELETE", `/api/extras/tags/${doomed}/`);
    assert.equal(gone.status, 204, JSON.stringify(gone.body));
    release();
    assert.equal((await patching).status, 200);
    const vm = await inv.call("GET", `/api/virtualization/virtual-machines/${w.vm1}/`);
    assert.deepEqual(vm.body.tags.map((t: { slug: string }) => t.slug), ["keep", "other"]);
    // Dropped from the stored record, not only hidden from the answer.
    const dropped = inv.deps.logger.at("warning")
      .filter((l) => l.message === "dropped references to objects deleted concurrently");
    assert.deepEqual(dropped.map((l) => [l.model, l.id, l.refs]), [[
      "virtualization.virtualmachine",
      w.vm1,
      [{ field: "tags", model: "extras.tag", id: doomed }],
    ]]);
  } finally {
    release();
    inv.close();
  }
});

Deno.test("a create whose tag is deleted before its commit is undone: the 400 validation gives, nothing left", async () => {
  const { inv, hold, held, release } = await heldAtCommit((writes) =>
    writes.some((w) => w.model === "virtualization.virtualmachine" && w.prev === null)
  );
  try {
    const w = await world(inv);
    const tag = async (slug: string) =>
      await w.post("/api/extras/tags/", { name: slug, slug }) as number;
    const [keep, doomed] = [await tag("keep"), await tag("doomed")];
    hold();
    const creating = inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "tagged-late",
      cluster: w.cluster,
      tags: [keep, doomed],
    });
    await heldBefore(held, creating);
    const gone = await inv.call("DELETE", `/api/extras/tags/${doomed}/`);
    assert.equal(gone.status, 204, JSON.stringify(gone.body));
    release();
    const created = await creating;
    assert.deepEqual([created.status, created.body], [400, {
      tags: [`Related object not found using the provided numeric ID: ${doomed}`],
    }]);
    const left = await inv.call("GET", "/api/virtualization/virtual-machines/?name=tagged-late");
    assert.deepEqual([left.body.count, left.body.results], [0, []]);
  } finally {
    release();
    inv.close();
  }
});

Deno.test("a create whose m2m member (a contact's group) is deleted before its commit is undone: the 400 validation gives, nothing left", async () => {
  const { inv, hold, held, release } = await heldAtCommit((writes) =>
    writes.some((w) => w.model === "tenancy.contact" && w.prev === null)
  );
  try {
    const group = async (slug: string) =>
      (await inv.created("/api/tenancy/contact-groups/", { name: slug, slug })).id as number;
    const [keep, doomed] = [await group("keep"), await group("doomed")];
    hold();
    const creating = inv.call("POST", "/api/tenancy/contacts/", {
      name: "grouped-late",
      groups: [keep, doomed],
    });
    await heldBefore(held, creating);
    const gone = await inv.call("DELETE", `/api/tenancy/contact-groups/${doomed}/`);
    assert.equal(gone.status, 204, JSON.stringify(gone.body));
    release();
    const created = await creating;
    assert.deepEqual([created.status, created.body], [400, {
      groups: [`Related object not found using the provided numeric ID: ${doomed}`],
    }]);
    const left = await inv.call("GET", "/api/tenancy/contacts/?name=grouped-late");
    assert.deepEqual([left.body.count, left.body.results], [0, []]);
  } finally {
    release();
    inv.close();
  }
});

Deno.test("a tag delete whose tagged object is deleted meanwhile still completes", async () => {
  // Deleting a tag takes it out of every object it is on. The request is held at the first
  // object's detach (the store's beforeCommit hook) while another request deletes the second
  // object: the tag's delete must skip it, not fail.
  const { inv, hold, held, release } = await heldAtCommit((writes) =>
    writes.some((w) => w.model === "virtualization.virtualmachine" && w.prev && w.next)
  );
  try {
    const w = await world(inv);
    const post = w.post;
    const tag = await post("/api/extras/tags/", { name: "Doomed", slug: "doomed" });
    const VMS = "/api/virtualization/virtual-machines/";
    const first = await post(VMS, { name: "first", cluster: w.cluster, tags: [tag] });
    const second = await post(VMS, { name: "second", cluster: w.cluster, tags: [tag] });
    hold();
    const deleting = inv.call("DELETE", `/api/extras/tags/${tag}/`);
    await heldBefore(held, deleting);
    const gone = await inv.call("DELETE", `${VMS}${second}/`);
    assert.equal(gone.status, 204, JSON.stringify(gone.body));
    release();
    const deleted = await deleting;
    assert.deepEqual([deleted.status, deleted.body], [204, null]);
    const left = await inv.call("GET", `${VMS}?name=first&name=second&fields=id,tags`);
    assert.deepEqual(left.body.results, [{ id: first, tags: [] }]);
    const tags = await inv.call("GET", "/api/extras/tags/?slug=doomed");
    assert.equal(tags.body.count, 0);
    assert.deepEqual(inv.deps.logger.at("error"), []);
  } finally {
    release();
    inv.close();
  }
});

/**
 * One reference made to an object while its delete is held at the commit (after the delete
 * gathered its dependents): `setup` makes the object and returns its delete path, `refer` makes
 * the reference meanwhile, `after` reads back what the delete's clean-up left.
 */
interface LateReference {
  name: string;
  /** The model whose delete commit is held. */
  model: string;
  setup: (post: (path: string, body: unknown) => Promise<number>) => Promise<[string, number]>;
  refer: (
    post: (path: string, body: unknown) => Promise<number>,
    doomed: number,
  ) => Promise<number>;
  /** The referrer's path and what it reads back as (null: it is gone too). */
  after: (referrer: number) => [string, Record<string, unknown> | null];
}

const LATE_REFERENCES: LateReference[] = [
  {
    name: "CASCADE: an interface made on a VM being deleted goes with it",
    model: "virtualization.virtualmachine",
    setup: async (post) => {
      const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
      const cluster = await post("/api/virtualization/clusters/", { name: "c1", type });
      const vm = await post("/api/virtualization/virtual-machines/", { name: "vm1", cluster });
      return [`/api/virtualization/virtual-machines/${vm}/`, vm];
    },
    refer: (post, vm) =>
      post("/api/virtualization/interfaces/", { virtual_machine: vm, name: "e0" }),
    after: (id) => [`/api/virtualization/interfaces/${id}/`, null],
  },
  {
    name: "SET_NULL: a site made in a region being deleted keeps no region",
    model: "dcim.region",
    setup: async (post) => {
      const region = await post("/api/dcim/regions/", { name: "Europe", slug: "europe" });
      return [`/api/dcim/regions/${region}/`, region];
    },
    refer: (post, region) => post("/api/dcim/sites/", { name: "AMS1", slug: "ams1", region }),
    after: (id) => [`/api/dcim/sites/${id}/`, { region: null, tenant: null }],
  },
  {
    name: "PROTECT, nullable: a site given a tenant being deleted keeps no tenant",
    model: "tenancy.tenant",
    setup: async (post) => {
      const tenant = await post("/api/tenancy/tenants/", { name: "Acme", slug: "acme" });
      return [`/api/tenancy/tenants/${tenant}/`, tenant];
    },
    refer: (post, tenant) => post("/api/dcim/sites/", { name: "AMS1", slug: "ams1", tenant }),
    after: (id) => [`/api/dcim/sites/${id}/`, { region: null, tenant: null }],
  },
  {
    name: "PROTECT, required: a cluster of a type being deleted cannot stay",
    model: "virtualization.clustertype",
    setup: async (post) => {
      const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
      return [`/api/virtualization/cluster-types/${type}/`, type];
    },
    refer: (post, type) => post("/api/virtualization/clusters/", { name: "c1", type }),
    after: (id) => [`/api/virtualization/clusters/${id}/`, null],
  },
  {
    name: "m2m: a site given a tag being deleted keeps its other tags",
    model: "extras.tag",
    setup: async (post) => {
      await post("/api/extras/tags/", { name: "Keep", slug: "keep" });
      const tag = await post("/api/extras/tags/", { name: "Doomed", slug: "doomed" });
      return [`/api/extras/tags/${tag}/`, tag];
    },
    refer: (post, tag) =>
      post("/api/dcim/sites/", { name: "AMS1", slug: "ams1", tags: [{ slug: "keep" }, tag] }),
    after: (id) => [`/api/dcim/sites/${id}/`, { region: null, tenant: null, tags: ["keep"] }],
  },
  {
    name: "generic FK, CASCADE: a journal entry made on a VM being deleted goes with it",
    model: "virtualization.virtualmachine",
    setup: async (post) => {
      const site = await post("/api/dcim/sites/", { name: "AMS1", slug: "ams1" });
      const vm = await post("/api/virtualization/virtual-machines/", { name: "vm1", site });
      return [`/api/virtualization/virtual-machines/${vm}/`, vm];
    },
    refer: (post, vm) =>
      post("/api/extras/journal-entries/", {
        assigned_object_type: "virtualization.virtualmachine",
        assigned_object_id: vm,
        comments: "made during the delete",
      }),
    after: (id) => [`/api/extras/journal-entries/${id}/`, null],
  },
  {
    name: "generic FK, CASCADE: a cluster scoped to a site being deleted goes with it",
    model: "dcim.site",
    setup: async (post) => {
      const site = await post("/api/dcim/sites/", { name: "AMS1", slug: "ams1" });
      return [`/api/dcim/sites/${site}/`, site];
    },
    refer: async (post, site) => {
      const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
      return await post("/api/virtualization/clusters/", {
        name: "c1",
        type,
        scope_type: "dcim.site",
        scope_id: site,
      });
    },
    after: (id) => [`/api/virtualization/clusters/${id}/`, null],
  },
];

for (const late of LATE_REFERENCES) {
  Deno.test(`a reference made while its target's delete is held at the commit: ${late.name}`, async () => {
    // The delete gathered its dependents (none) and is held at its commit; the reference is
    // made then (its target still exists), and the delete, once through, must clean it up as
    // the rule says, and say so in the log.
    const { inv, hold, held, release } = await heldAtCommit((writes) =>
      writes.some((w) => w.model === late.model && w.next === null)
    );
    try {
      const post = async (path: string, body: unknown) =>
        (await inv.created(path, body)).id as number;
      const [path, doomed] = await late.setup(post);
      hold();
      const deleting = inv.call("DELETE", path);
      await heldBefore(held, deleting);
      const referrer = await late.refer(post, doomed);
      release();
      const deleted = await deleting;
      assert.deepEqual([deleted.status, deleted.body], [204, null]);
      assert.equal((await inv.call("GET", path)).status, 404);
      const [readPath, want] = late.after(referrer);
      const read = await inv.call("GET", readPath);
      if (want === null) assert.equal(read.status, 404, JSON.stringify(read.body));
      else {
        assert.equal(read.status, 200);
        const got = Object.fromEntries(Object.keys(want).map((k) => [k, read.body[k]]));
        if ("tags" in got) got.tags = (got.tags as Array<{ slug: string }>).map((t) => t.slug);
        assert.deepEqual(got, want);
      }
      const warned = inv.deps.logger.at("warning")
        .filter((l) => l.message === "references created during a delete were cleaned up");
      assert.deepEqual(warned.map((l) => [l.model, l.id, l.ids]), [[late.model, doomed, [
        referrer,
      ]]]);
      assert.deepEqual(inv.deps.logger.at("error"), []);
    } finally {
      release();
      inv.close();
    }
  });
}

Deno.test("a create whose unique values another create took before its commit is a 400 naming them, and writes nothing", async () => {
  // The bulk create is held at its commit after it validated; another bulk create takes the
  // slugs of both its items meanwhile. The held one then fails its commit's unique check, and
  // must answer as validation would have (each item's field and NetBox's text), writing nothing.
  const TENANTS = "/api/tenancy/tenants/";
  const { inv, hold, held, release } = await heldAtCommit((writes) =>
    writes.some((w) => w.model === "tenancy.tenant" && w.prev === null)
  );
  try {
    hold();
    const creating = inv.call("POST", TENANTS, [
      { name: "First", slug: "first" },
      { name: "Second", slug: "second" },
    ]);
    await heldBefore(held, creating);
    const taken = await inv.created(TENANTS, [
      { name: "Other 1", slug: "first" },
      { name: "Other 2", slug: "second" },
    ]);
    release();
    const refused = await creating;
    const slug = { slug: ["tenant with this slug already exists."] };
    assert.deepEqual([refused.status, refused.body], [400, [slug, slug]]);
    const left = await inv.call("GET", `${TENANTS}?fields=id,name&ordering=id`);
    assert.deepEqual(
      left.body.results,
      taken.map((t: { id: number; name: string }) => ({
        id: t.id,
        name: t.name,
      })),
    );
    const log = await inv.call("GET", "/api/core/object-changes/?fields=object_repr");
    assert.deepEqual(log.body.results.map((c: { object_repr: string }) => c.object_repr).sort(), [
      "Other 1",
      "Other 2",
    ]);
  } finally {
    release();
    inv.close();
  }
});

Deno.test("an update whose object another update changed before its commit is retried on the new version: both changes kept", async () => {
  // The PATCH is held at its commit; another PATCH of the same object commits meanwhile. The
  // held one's commit then finds a newer version: it must prepare again from it (keeping the
  // other's change) rather than overwrite it or give up.
  const TENANTS = "/api/tenancy/tenants/";
  const { inv, hold, held, release } = await heldAtCommit((writes) =>
    writes.some((w) =>
      w.model === "tenancy.tenant" && w.next !== null &&
      (w.next.record as { description?: string }).description === "held"
    )
  );
  try {
    const tenant = await inv.created(TENANTS, { name: "Acme", slug: "acme" });
    const path = `${TENANTS}${tenant.id}/`;
    hold();
    const patching = inv.call("PATCH", path, { description: "held" });
    await heldBefore(held, patching);
    const other = await inv.call("PATCH", path, { comments: "meanwhile" });
    assert.equal(other.status, 200, JSON.stringify(other.body));
    release();
    const patched = await patching;
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.deepEqual([patched.body.description, patched.body.comments], ["held", "meanwhile"]);
    const read = (await inv.call("GET", path)).body;
    assert.deepEqual([read.description, read.comments], ["held", "meanwhile"]);
    const log = await inv.call("GET", `/api/core/object-changes/?changed_object_id=${tenant.id}`);
    const updates = log.body.results.filter((c: { action: { value: string } }) =>
      c.action.value === "update"
    );
    // The held update's pre-data is the version it overwrote: the other update's.
    assert.deepEqual(
      updates.map((c: { prechange_data: { comments: string; description: string } }) => [
        c.prechange_data.comments,
        c.prechange_data.description,
      ]),
      [["meanwhile", ""], ["", ""]],
    );
  } finally {
    release();
    inv.close();
  }
});

/**
 * An update that points a generic FK at an object whose delete went through while the update
 * was held at its commit: the update's new reference is what the delete would have cleaned up,
 * so it is dealt with by the reference's rule (CASCADE: the record goes; SET_NULL: both its
 * type and id fields are cleared), and the record keeps no reference to a deleted object.
 */
const LATE_GENERIC_UPDATES: Array<{
  name: string;
  model: string;
  setup: (post: (path: string, body: unknown) => Promise<number>) => Promise<{
    path: string;
    patch: Record<string, unknown>;
    doomed: string;
  }>;
  after: Record<string, unknown> | null;
}> = [
  {
    name: "CASCADE: an address moved to an interface being deleted goes with it",
    model: "ipam.ipaddress",
    setup: async (post) => {
      const site = await post("/api/dcim/sites/", { name: "AMS1", slug: "ams1" });
      const vm = await post("/api/virtualization/virtual-machines/", { name: "vm1", site });
      const kept = await post("/api/virtualization/interfaces/", {
        virtual_machine: vm,
        name: "e0",
      });
      const doomed = await post("/api/virtualization/interfaces/", {
        virtual_machine: vm,
        name: "e1",
      });
      const ip = await post("/api/ipam/ip-addresses/", {
        address: "192.0.2.30/24",
        assigned_object_type: "virtualization.vminterface",
        assigned_object_id: kept,
      });
      return {
        path: `/api/ipam/ip-addresses/${ip}/`,
        patch: { assigned_object_id: doomed },
        doomed: `/api/virtualization/interfaces/${doomed}/`,
      };
    },
    after: null,
  },
  {
    name: "CASCADE: a cluster moved to a site being deleted goes with it",
    model: "virtualization.cluster",
    setup: async (post) => {
      const kept = await post("/api/dcim/sites/", { name: "AMS1", slug: "ams1" });
      const doomed = await post("/api/dcim/sites/", { name: "FRA1", slug: "fra1" });
      const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
      const cluster = await post("/api/virtualization/clusters/", {
        name: "c1",
        type,
        scope_type: "dcim.site",
        scope_id: kept,
      });
      return {
        path: `/api/virtualization/clusters/${cluster}/`,
        patch: { scope_id: doomed },
        doomed: `/api/dcim/sites/${doomed}/`,
      };
    },
    after: null,
  },
];

for (const late of LATE_GENERIC_UPDATES) {
  Deno.test(`an update whose new generic-FK target is deleted before its commit: ${late.name}`, async () => {
    const { inv, hold, held, release } = await heldAtCommit((writes) =>
      writes.some((w) => w.model === late.model && w.prev !== null && w.next !== null)
    );
    try {
      const post = async (path: string, body: unknown) =>
        (await inv.created(path, body)).id as number;
      const { path, patch, doomed } = await late.setup(post);
      hold();
      const updating = inv.call("PATCH", path, patch);
      await heldBefore(held, updating);
      const gone = await inv.call("DELETE", doomed);
      assert.deepEqual([gone.status, gone.body], [204, null]);
      release();
      await updating;
      const read = await inv.call("GET", path);
      if (late.after === null) assert.equal(read.status, 404, JSON.stringify(read.body));
      else {
        assert.equal(read.status, 200, JSON.stringify(read.body));
        const got = Object.fromEntries(Object.keys(late.after).map((k) => [k, read.body[k]]));
        assert.deepEqual(got, late.after);
      }
      const warned = inv.deps.logger.at("warning")
        .filter((l) => l.message === "dropped references to objects deleted concurrently");
      assert.equal(warned.length, 1, JSON.stringify(inv.deps.logger.at("warning")));
      assert.deepEqual(inv.deps.logger.at("error"), []);
    } finally {
      release();
      inv.close();
    }
  });
}

Deno.test("a create whose name another create took in another case before its commit is a 400: the stored unique key is case-folded", async () => {
  // NetBox's tenant name is unique whatever its case (Lower(name)): validation saw no holder, so
  // the commit's unique key alone must refuse "ACME" once "acme" is stored.
  const TENANTS = "/api/tenancy/tenants/";
  const { inv, hold, held, release } = await heldAtCommit((writes) =>
    writes.some((w) => w.model === "tenancy.tenant" && w.prev === null)
  );
  try {
    hold();
    const creating = inv.call("POST", TENANTS, { name: "ACME", slug: "acme-upper" });
    await heldBefore(held, creating);
    const taken = await inv.created(TENANTS, { name: "acme", slug: "acme" });
    release();
    const refused = await creating;
    assert.deepEqual([refused.status, refused.body], [400, {
      name: ["tenant with this name already exists."],
    }]);
    const left = await inv.call("GET", `${TENANTS}?fields=id,name`);
    assert.deepEqual(left.body.results, [{ id: taken.id, name: "acme" }]);
  } finally {
    release();
    inv.close();
  }
});
