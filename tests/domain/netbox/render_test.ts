/** Rendering a page loads what it refers to once per model, however many rows refer to it. */
import assert from "node:assert/strict";
import { ModelEngine } from "../../../domain/netbox/engine.ts";
import { CORE_MODELS } from "../../../domain/netbox/models/core.ts";
import { MemoryLogger } from "../../../infra/logger.ts";
import { KvModelStore } from "../../../storage/kv/models.ts";
import type { ModelDef } from "../../../domain/netbox/types.ts";

/** The real KV store, recording which models each getMany asked for. */
class CountingStore extends KvModelStore {
  loads: string[] = [];
  override getMany(model: string, ids: readonly number[]) {
    this.loads.push(model);
    return super.getMany(model, ids);
  }
}

Deno.test("render: one batch per referenced model for a 50-row page, nested forms shared", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new CountingStore(kv);
    const e = new ModelEngine({ store, logger: new MemoryLogger(), now: Date.now }).register(
      ...CORE_MODELS,
    );
    const ok = <T>(r: { ok: true; value: T } | { ok: false }): T => {
      assert.ok(r.ok, JSON.stringify(r));
      return r.value;
    };
    const tenant = ok(await e.insert("tenancy.tenant", { name: "T", slug: "t" }));
    const type = ok(await e.insert("virtualization.clustertype", { name: "PVE", slug: "pve" }));
    const tags = ok(
      await e.createMany("extras.tag", [{ name: "a", slug: "a" }, { name: "b", slug: "b" }]),
    );
    const clusters = ok(
      await e.createMany(
        "virtualization.cluster",
        [0, 1, 2].map((i) => ({ name: `c${i}`, type: type.id })),
      ),
    );
    const vms = ok(
      await e.createMany(
        "virtualization.virtualmachine",
        Array.from({ length: 50 }, (_, i) => ({
          name: `vm${i}`,
          cluster: clusters[i % 3].id,
          tenant: tenant.id,
          tags: tags.map((t) => t.id),
        })),
      ),
    );
    store.loads = [];
    const out = await e.render("virtualization.virtualmachine", vms, { origin: "http://x" });
    assert.equal(out.length, 50);
    const perModel = new Map<string, number>();
    for (const m of store.loads) perModel.set(m, (perModel.get(m) ?? 0) + 1);
    for (const model of ["virtualization.cluster", "tenancy.tenant", "extras.tag"]) {
      assert.equal(perModel.get(model), 1, `${model}: ${store.loads.join(", ")}`);
    }
    // Rows that refer to one object share its nested form (built once per page).
    assert.equal(out[0].tenant, out[1].tenant);
    assert.deepEqual(out[0].tenant, {
      id: tenant.id,
      url: `http://x/api/tenancy/tenants/${tenant.id}/`,
      display: "T",
      name: "T",
      slug: "t",
      description: "",
    });
    assert.equal(out[0].cluster, out[3].cluster);
    assert.notEqual(out[0].cluster, out[1].cluster);
  } finally {
    kv.close();
  }
});

/**
 * Two models of this test only: a node whose brief nests its parent (a tree), and a step whose
 * brief nests its parent with an extra field (FieldDef.nested, as a VM's primary IP). No
 * registered model nests this deep; the cutoff keeps such a brief from nesting without end.
 */
const NODE: ModelDef = {
  app: "t",
  model: "node",
  verbose: "node",
  path: "t/nodes/",
  brief: ["name", "parent"],
  fields: {
    name: { type: "string" },
    parent: { type: "fk", model: "t.node", nullable: true },
    links: { type: "m2m", model: "t.node" },
  },
  tags: false,
  customFields: false,
  timestamps: false,
  displayUrl: false,
};
const STEP: ModelDef = {
  ...NODE,
  model: "step",
  path: "t/steps/",
  fields: {
    name: { type: "string" },
    note: { type: "string" },
    parent: { type: "fk", model: "t.step", nullable: true, nested: ["note"] },
  },
};

/** An engine with NODE and STEP only, on `store`. */
function engineOf(store: CountingStore): ModelEngine {
  return new ModelEngine({ store, logger: new MemoryLogger(), now: Date.now }).register(NODE, STEP);
}

/** Five records of `model`, each the parent of the next (`n1` ← `n2` ← … ← `n5`): their ids. */
async function chain(e: ModelEngine, model: string): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 1; i <= 5; i++) {
    const r = await e.insert(model, {
      name: `n${i}`,
      note: `note${i}`,
      parent: ids.at(-1) ?? null,
    });
    assert.ok(r.ok, JSON.stringify(r));
    ids.push(r.value.id);
  }
  return ids;
}

Deno.test("render: references nest in their brief form two levels deep, then as id, url and display, and nothing further is read", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new CountingStore(kv);
    const e = engineOf(store);
    const ids = await chain(e, "t.node");
    const url = (i: number) => `http://x/api/t/nodes/${ids[i]}/`;
    const ref = (i: number) => ({ id: ids[i], url: url(i), display: `n${i + 1}` });
    const brief = (i: number, parent: unknown) => ({ ...ref(i), name: `n${i + 1}`, parent });
    store.loads = [];
    const [row] = await e.render("t.node", [(await store.get("t.node", ids[4]))!.record], {
      origin: "http://x",
    });
    assert.deepEqual(row, {
      ...brief(4, brief(3, brief(2, ref(1)))),
      links: [],
    });
    // One batch per level: n4, n3, then n2 for its id/url/display; n1 is never read.
    assert.deepEqual(store.loads, ["t.node", "t.node", "t.node"]);
  } finally {
    kv.close();
  }
});

Deno.test("render: a reference shown with extra fields nests them two levels deep, then as id, url and display", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new CountingStore(kv);
    const e = engineOf(store);
    const ids = await chain(e, "t.step");
    const last = (await store.get("t.step", ids[4]))!.record;
    const ref = (i: number) => ({
      id: ids[i],
      url: `http://x/api/t/steps/${ids[i]}/`,
      display: `n${i + 1}`,
    });
    const nested = (i: number, parent: unknown) => ({
      ...ref(i),
      name: `n${i + 1}`,
      parent,
      note: `note${i + 1}`,
    });
    const [row, twin] = await e.render("t.step", [last, { ...last, id: ids[3] + 100 }], {
      origin: "http://x",
    });
    assert.deepEqual(row, {
      ...ref(4),
      name: "n5",
      note: "note5",
      parent: nested(3, nested(2, ref(1))),
    });
    // Two rows with one parent share its form, built once per page as the brief forms are.
    assert.equal(row.parent, twin.parent);
  } finally {
    kv.close();
  }
});

Deno.test("render: a reference whose target is gone (deleted while the page was read) renders as null, a list leaves it out", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new CountingStore(kv);
    const e = engineOf(store);
    const ids = await chain(e, "t.node");
    const steps = await chain(e, "t.step");
    const gone = 999_999;
    const [node] = await e.render("t.node", [{
      id: ids[0],
      name: "n1",
      parent: gone,
      links: [gone, ids[1]],
    }], { origin: "http://x" });
    assert.deepEqual(node, {
      id: ids[0],
      url: `http://x/api/t/nodes/${ids[0]}/`,
      display: "n1",
      name: "n1",
      parent: null,
      links: [{
        id: ids[1],
        url: `http://x/api/t/nodes/${ids[1]}/`,
        display: "n2",
        name: "n2",
        parent: {
          id: ids[0],
          url: `http://x/api/t/nodes/${ids[0]}/`,
          display: "n1",
          name: "n1",
          parent: null,
        },
      }],
    });
    const [step] = await e.render("t.step", [{ id: steps[0], name: "s", note: "", parent: gone }], {
      origin: "http://x",
    });
    assert.equal(step.parent, null);
    // A record saved before its model had `links` holds none: an empty list, not a failure.
    const [older] = await e.render("t.node", [{ id: ids[0], name: "n1", parent: null }], {
      origin: "http://x",
    });
    assert.deepEqual([older.parent, older.links], [null, []]);
  } finally {
    kv.close();
  }
});
