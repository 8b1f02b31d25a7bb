/** Rendering a page loads what it refers to once per model, however many rows refer to it. */
import assert from "node:assert/strict";
import { ModelEngine } from "../../../domain/netbox/engine.ts";
import { CORE_MODELS } from "../../../domain/netbox/models/core.ts";
import { MemoryLogger } from "../../../infra/logger.ts";
import { KvModelStore } from "../../../storage/kv/models.ts";

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
