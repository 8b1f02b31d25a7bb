/**
 * Values that are 0, false or empty are values, not absences: a custom field of weight 0 sorts
 * first, an integer 0 and a boolean false are rendered, filtered (exact, `__n`, `__lt`,
 * `__isnull`) and written to the change log's pre/post data as themselves, never as null or as
 * a default. A `||` where `??` belongs turns each of them into "missing".
 */
import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";

const VMS = "/api/virtualization/virtual-machines/";
const CHANGES = "/api/core/object-changes/";

async function ids(inv: Inv, query: string): Promise<number[]> {
  const r = await inv.call("GET", `${VMS}?${query}&fields=id`);
  assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.count, r.body.results.length, query);
  return r.body.results.map((x: { id: number }) => x.id);
}

Deno.test("0, false and empty values: custom-field order by weight 0, renders, filters and change-log data keep them", async () => {
  const inv = await setup();
  try {
    const field = (name: string, type: string, weight?: number) =>
      inv.created("/api/extras/custom-fields/", {
        name,
        type,
        object_types: ["virtualization.virtualmachine"],
        ...(weight === undefined ? {} : { weight }),
      });
    // Weight 0 sorts before the default 100, then by name, whatever order they were made in.
    assert.equal((await field("zcount", "integer", 0)).weight, 0);
    assert.equal((await field("aflag", "boolean")).weight, 100);
    await field("mnote", "text");
    await field("yzero", "text", 0);
    const ct = await inv.created("/api/virtualization/cluster-types/", {
      name: "PVE",
      slug: "pve",
    });
    const cluster = await inv.created("/api/virtualization/clusters/", { name: "c", type: ct.id });
    const zero = await inv.created(VMS, {
      name: "a-zero",
      cluster: cluster.id,
      memory: 0,
      custom_fields: { zcount: 0, aflag: false, mnote: "" },
    });
    const some = await inv.created(VMS, {
      name: "b-some",
      cluster: cluster.id,
      memory: 5,
      custom_fields: { zcount: 3, aflag: true, mnote: "x" },
    });
    const bare = await inv.created(VMS, { name: "c-bare", cluster: cluster.id });
    const read = (await inv.call("GET", `${VMS}${zero.id}/`)).body;
    assert.equal(read.memory, 0);
    assert.deepEqual(Object.entries(read.custom_fields), [
      ["yzero", null],
      ["zcount", 0],
      ["aflag", false],
      ["mnote", null],
    ]);
    assert.deepEqual(Object.keys(some.custom_fields), ["yzero", "zcount", "aflag", "mnote"]);
    assert.deepEqual(bare.custom_fields, { yzero: null, zcount: null, aflag: null, mnote: null });

    const rows: Array<[string, number[]]> = [
      ["cf_zcount=0", [zero.id]],
      ["cf_zcount=3", [some.id]],
      ["cf_zcount__n=0", [some.id, bare.id]],
      ["cf_zcount__lt=1", [zero.id]],
      ["cf_zcount__gte=0", [zero.id, some.id]],
      ["cf_zcount__isnull=true", [bare.id]],
      ["cf_zcount__isnull=false", [zero.id, some.id]],
      ["cf_aflag=false", [zero.id]],
      ["cf_aflag=true", [some.id]],
      ["cf_aflag__isnull=true", [bare.id]],
      ["memory=0", [zero.id]],
      ["memory__lt=1", [zero.id]],
      ["memory__n=0", [some.id, bare.id]],
      ["memory__isnull=true", [bare.id]],
      ["memory__empty=false", [zero.id, some.id]],
    ];
    for (const [query, want] of rows) assert.deepEqual(await ids(inv, query), want, query);

    // The change log's create entry carries 0 and false as themselves.
    const log = await inv.call(
      "GET",
      `${CHANGES}?changed_object_id=${zero.id}` +
        "&changed_object_type=virtualization.virtualmachine",
    );
    assert.equal(log.body.count, 1);
    const post = log.body.results[0].postchange_data;
    assert.equal(post.memory, 0);
    assert.equal(post.vcpus, null);
    assert.deepEqual([post.custom_fields.zcount, post.custom_fields.aflag], [0, false]);

    // An update from false: the pre-data keeps false, the post-data the new value.
    const eth = await inv.created("/api/virtualization/interfaces/", {
      virtual_machine: zero.id,
      name: "eth0",
      enabled: false,
    });
    assert.equal(eth.enabled, false);
    const patched = await inv.call("PATCH", `/api/virtualization/interfaces/${eth.id}/`, {
      enabled: true,
      description: "up",
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const changes = await inv.call(
      "GET",
      `${CHANGES}?changed_object_id=${eth.id}` +
        "&changed_object_type=virtualization.vminterface",
    );
    const [update, create] = changes.body.results;
    assert.equal(create.postchange_data.enabled, false);
    assert.deepEqual(
      [update.prechange_data.enabled, update.prechange_data.description],
      [false, ""],
    );
    assert.deepEqual(
      [update.postchange_data.enabled, update.postchange_data.description],
      [true, "up"],
    );
  } finally {
    inv.close();
  }
});
