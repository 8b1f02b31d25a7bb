/**
 * The model registry (domain/netbox/engine/registry.ts): models by name and API path, who points
 * at whom (the delete cascade and the filters by related objects read it), and the natural key a
 * `?<fk>=<value>` filter matches.
 */
import assert from "node:assert/strict";
import { ModelRegistry, TAG_MODEL, TAGS_FIELD } from "../../../domain/netbox/engine/registry.ts";
import type { ModelDef } from "../../../domain/netbox/types.ts";

const model = (name: string, extra: Partial<ModelDef> = {}): ModelDef => ({
  app: "t",
  model: name,
  verbose: name,
  path: `/t/${name}s`,
  brief: [],
  fields: {},
  ...extra,
});

Deno.test("registry: a model is found by name and by its API path (slashes normalised), once", () => {
  const registry = new ModelRegistry();
  const site = model("site");
  registry.register(site);
  assert.equal(registry.has("t.site"), true);
  assert.equal(registry.has("t.rack"), false);
  assert.equal(registry.definition("t.site").path, "t/sites/");
  assert.equal(registry.byPath("t/sites/"), registry.definition("t.site"));
  assert.equal(registry.byPath("t/racks/"), undefined);
  assert.equal(registry.nameOf(site), "t.site");
  assert.throws(() => registry.definition("t.rack"), /unknown model t\.rack/);
  // A second model of the same name would silently replace the first (its paths, relations).
  assert.throws(() => registry.register(model("site", { path: "t/other/" })), /registered twice/);
  assert.equal(registry.byPath("t/other/"), undefined);
  assert.deepEqual(registry.models().map((d) => d.path), ["t/sites/"]);
});

Deno.test("registry: the fields pointing at a model are its FKs, m2m fields, generic FKs naming it or any model, and tags", () => {
  const registry = new ModelRegistry();
  const fields = {
    site: { type: "fk", model: "t.site" },
    sites: { type: "m2m", model: "t.site" },
    // Computed references are rendered, never stored: nothing to cascade or filter.
    computed: { type: "fk", model: "t.site", compute: () => null },
    scope: { type: "gfk", typeField: "scope_type", idField: "scope_id", models: ["t.site"] },
    other: { type: "gfk", typeField: "o_type", idField: "o_id", models: ["t.rack"] },
    any: { type: "gfk", typeField: "a_type", idField: "a_id", models: "*" },
    // A weak generic FK (a change log's object) points at nothing.
    weak: { type: "gfk", typeField: "w_type", idField: "w_id", models: ["t.site"], weak: true },
    name: { type: "string" },
  } as const satisfies ModelDef["fields"];
  registry.register(
    model("site", { tags: false }),
    model("rack", { fields }),
    model("note", { tags: false, fields: { rack: { type: "fk", model: "t.rack" } } }),
  );
  const at = (target: string) =>
    registry.referrersOf(target).map((r) => `${r.model}.${r.field}`).sort();
  assert.deepEqual(at("t.site"), ["t.rack.any", "t.rack.scope", "t.rack.site", "t.rack.sites"]);
  assert.deepEqual(at("t.rack"), ["t.note.rack", "t.rack.any", "t.rack.other"]);
  // Only the models with tags point at the tag model, by the implicit `tags` field.
  const tagged = registry.referrersOf(TAG_MODEL).filter((r) => r.field === "tags");
  assert.deepEqual(tagged.map((r) => [r.model, r.def]), [["t.rack", TAGS_FIELD]]);
  const site = registry.referrersOf("t.site").find((r) => r.field === "site")!;
  assert.equal(site.def, fields.site);
});

Deno.test("registry: the natural key is the model's own, else its slug, else its name, else none", () => {
  const registry = new ModelRegistry();
  const string = { type: "string" } as const;
  const own = model("a", { naturalKey: "job_id", fields: { slug: string, name: string } });
  const slug = model("b", { fields: { name: string, slug: string } });
  const name = model("c", { fields: { name: string } });
  const none = model("d", { fields: { address: string } });
  registry.register(own, slug, name, none);
  assert.deepEqual([own, slug, name, none].map((d) => registry.naturalKey(d)), [
    "job_id",
    "slug",
    "name",
    null,
  ]);
});
