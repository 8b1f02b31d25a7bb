/**
 * The custom-field definitions of a model are read once per request
 * (domain/netbox/engine/custom_fields.ts): a bulk write validates every item against the
 * definitions it read for the first.
 */
import assert from "node:assert/strict";
import { CUSTOM_FIELD_MODEL, ModelEngine } from "../../../domain/netbox/engine.ts";
import { CORE_MODELS } from "../../../domain/netbox/models/core.ts";
import { MemoryLogger } from "../../../infra/logger.ts";
import { KvModelStore } from "../../../storage/kv/models.ts";
import type { IndexValue } from "../../../storage/ports.ts";

/** The real KV store, counting the reads of the custom-field definitions' index. */
class CountingStore extends KvModelStore {
  definitionReads = 0;
  override idsByIndex(model: string, field: string, value: IndexValue, limit?: number) {
    if (model === CUSTOM_FIELD_MODEL) this.definitionReads++;
    return super.idsByIndex(model, field, value, limit);
  }
}

Deno.test("custom fields: a bulk create of 40 tenants reads the tenants' custom-field definitions once, and checks every item against them", async () => {
  const kv = await Deno.openKv(":memory:");
  const store = new CountingStore(kv);
  const e = new ModelEngine({ store, logger: new MemoryLogger(), now: Date.now }).register(
    ...CORE_MODELS,
  );
  try {
    const cf = await e.insert(CUSTOM_FIELD_MODEL, {
      name: "code",
      object_types: ["tenancy.tenant"],
      type: "integer",
    });
    assert.ok(cf.ok, JSON.stringify(cf));
    const tenants = Array.from({ length: 40 }, (_, i) => ({
      name: `t${i}`,
      slug: `t${i}`,
      custom_fields: { code: i },
    }));
    store.definitionReads = 0;
    const made = await e.createMany("tenancy.tenant", tenants);
    assert.ok(made.ok, JSON.stringify(made).slice(0, 300));
    assert.deepEqual(made.value.map((t) => (t.custom_fields as { code: number }).code), [
      ...Array(40).keys(),
    ]);
    assert.equal(store.definitionReads, 1);
    // The last item of the next request is checked against the definitions read for the first.
    const next = tenants.map((_, i) => ({
      name: `r${i}`,
      slug: `r${i}`,
      custom_fields: { code: i === 39 ? "x" : i },
    }));
    store.definitionReads = 0;
    const refused = await e.createMany("tenancy.tenant", next);
    assert.ok(!refused.ok && refused.reason === "invalid", JSON.stringify(refused).slice(0, 300));
    const errors = refused.errors as Array<Record<string, unknown>>;
    assert.ok(errors[39].custom_fields, JSON.stringify(errors[39]));
    assert.deepEqual(errors.slice(0, 39).filter((x) => Object.keys(x).length), []);
    assert.equal(store.definitionReads, 1);
  } finally {
    kv.close();
  }
});
