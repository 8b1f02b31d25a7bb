/**
 * The change log (NetBox's ObjectChange at /api/core/object-changes/): every create, update and
 * delete made through the API is recorded with NetBox 4.6's fields, filterable as in NetBox,
 * never carrying secrets, and bounded (docs/api-behaviour.md, Inventory: change log).
 */
import assert from "node:assert/strict";
import { keys } from "../../../storage/kv/keys.ts";
import { KvModelStore, storedSize } from "../../../storage/kv/models.ts";
import { type Inv, setup } from "./_setup.ts";

const CHANGES = "/api/core/object-changes/";

async function site(inv: Inv): Promise<number> {
  const r = await inv.call("POST", "/api/dcim/sites/", { name: "AMS1", slug: "ams1" });
  assert.equal(r.status, 201);
  return r.body.id;
}

Deno.test("create, update and delete of one object: three entries with NetBox's fields, data and messages", async () => {
  const inv = await setup();
  try {
    const siteId = await site(inv);
    await inv.call("POST", "/api/extras/tags/", { name: "pve", slug: "pve" });
    const created = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "web1",
      site: siteId,
      tags: [{ slug: "pve" }],
      changelog_message: "sync run 7",
    });
    const vm = created.body.id;
    const createRequest = created.headers.get("X-Request-ID");
    assert.match(createRequest!, /^[0-9a-f-]{36}$/);
    const url = `/api/virtualization/virtual-machines/${vm}/`;
    // A null message is refused as DRF's CharField refuses it, and the object is left as it was.
    const nullMessage = await inv.call("PATCH", url, { comments: "lost", changelog_message: null });
    assert.deepEqual([nullMessage.status, nullMessage.body], [400, {
      changelog_message: ["This field may not be null."],
    }]);
    assert.equal((await inv.call("GET", url)).body.comments, "");
    // One update of a text, a null reference and a list: the stored pre-data keeps all three.
    const tenant = await inv.call("POST", "/api/tenancy/tenants/", { name: "T", slug: "t" });
    await inv.call("POST", "/api/extras/tags/", { name: "gold", slug: "gold" });
    const patched = await inv.call("PATCH", url, {
      comments: "edited",
      tenant: tenant.body.id,
      tags: [{ slug: "pve" }, { slug: "gold" }],
      changelog_message: "admin fix",
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const query = `?changed_object_type=virtualization.virtualmachine&changed_object_id=${vm}`;
    const beforeDelete = await inv.call("GET", CHANGES + query);
    assert.equal(beforeDelete.body.count, 2);
    const [update, create] = beforeDelete.body.results;
    assert.deepEqual(Object.keys(create), [
      "id",
      "url",
      "display_url",
      "display",
      "time",
      "user",
      "user_name",
      "request_id",
      "action",
      "changed_object_type",
      "changed_object_id",
      "changed_object",
      "object_repr",
      "message",
      "prechange_data",
      "postchange_data",
    ]);
    assert.deepEqual(create.action, { value: "create", label: "Created" });
    assert.equal(create.request_id, createRequest);
    assert.equal(create.message, "sync run 7");
    assert.equal(create.object_repr, "web1");
    assert.equal(create.user_name, "token #1");
    assert.equal(create.changed_object.display, "web1");
    assert.equal(create.prechange_data, null);
    assert.equal(create.postchange_data.name, "web1");
    assert.equal(create.postchange_data.site, siteId);
    assert.deepEqual(create.postchange_data.tags, ["pve"]);
    assert.equal(create.postchange_data.created, undefined);
    assert.equal(create.display, "virtualization.virtualmachine web1 created by token #1");
    assert.deepEqual(update.action, { value: "update", label: "Updated" });
    assert.equal(update.message, "admin fix");
    assert.equal(update.prechange_data.comments, "");
    assert.equal(update.postchange_data.comments, "edited");
    assert.equal(update.prechange_data.tenant, null);
    assert.equal(update.postchange_data.tenant, tenant.body.id);
    assert.deepEqual(update.prechange_data.tags, ["pve"]);
    assert.deepEqual([...update.postchange_data.tags].sort(), ["gold", "pve"]);

    const deleted = await inv.call("DELETE", url, { changelog_message: "retired" });
    assert.equal(deleted.status, 204);
    const after = await inv.call("GET", CHANGES + query);
    const gone = after.body.results[0];
    assert.deepEqual(gone.action, { value: "delete", label: "Deleted" });
    assert.equal(gone.message, "retired");
    assert.equal(gone.postchange_data, null);
    assert.equal(gone.prechange_data.comments, "edited");
    assert.equal(gone.changed_object, null);
    assert.equal(gone.request_id, deleted.headers.get("X-Request-ID"));
    // Entries are read-only; the detail view answers as any object.
    assert.equal((await inv.call("POST", CHANGES, {})).status, 405);
    const one = await inv.call("GET", `${CHANGES}${gone.id}/`);
    assert.equal(one.body.object_repr, "web1");
  } finally {
    inv.close();
  }
});

Deno.test("bulk writes share one request id; cascaded deletes are logged under the parent; NetBox's filters", async () => {
  const inv = await setup();
  try {
    const siteId = await site(inv);
    const bulk = await inv.call("POST", "/api/virtualization/virtual-machines/", [
      { name: "a", site: siteId, changelog_message: "import" },
      { name: "b", site: siteId },
    ]);
    const requestId = bulk.headers.get("X-Request-ID");
    const [a, b] = bulk.body.map((v: { id: number }) => v.id);
    const byRequest = await inv.call("GET", `${CHANGES}?request_id=${requestId}`);
    assert.deepEqual(
      byRequest.body.results.map((e: { object_repr: string; message: string }) => [
        e.object_repr,
        e.message,
      ]),
      [["b", ""], ["a", "import"]],
    );
    const nic = await inv.call("POST", "/api/virtualization/interfaces/", {
      virtual_machine: a,
      name: "net0",
    });
    assert.equal(nic.status, 201);
    // An address is related to the interface it is assigned to (a generic reference).
    const ip = await inv.call("POST", "/api/ipam/ip-addresses/", {
      address: "192.0.2.7/24",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: nic.body.id,
    });
    assert.equal(ip.status, 201, JSON.stringify(ip.body));
    const onNic = await inv.call(
      "GET",
      `${CHANGES}?related_object_type=virtualization.vminterface&related_object_id=${nic.body.id}`,
    );
    assert.deepEqual(
      onNic.body.results.map((e: { object_repr: string }) => e.object_repr),
      ["192.0.2.7/24"],
    );
    await inv.call("DELETE", "/api/virtualization/virtual-machines/", [
      { id: a, changelog_message: "cleanup" },
      { id: b },
    ]);
    // The interface went with its VM: its own delete entry, also found under the VM.
    const related = await inv.call(
      "GET",
      `${CHANGES}?related_object_type=virtualization.virtualmachine&related_object_id=${a}`,
    );
    assert.deepEqual(
      related.body.results.map((e: { action: { value: string } }) => e.action.value),
      ["delete", "create"],
    );
    const names = async (query: string) =>
      (await inv.call("GET", `${CHANGES}?${query}`)).body.results.map((
        e: { object_repr: string; action: { value: string } },
      ) => `${e.action.value} ${e.object_repr}`);
    assert.deepEqual(
      await names("action=delete&changed_object_type=virtualization.virtualmachine"),
      [
        "delete b",
        "delete a",
      ],
    );
    assert.deepEqual(await names("message=cleanup"), ["delete a"]);
    assert.deepEqual(await names("object_repr=net0"), ["delete net0", "create net0"]);
    assert.deepEqual(await names("q=impor"), ["create a"]);
    assert.deepEqual(await names("user_name=token%20%231&object_repr=AMS1"), ["create AMS1"]);
    assert.deepEqual(await names("time_before=2000-01-01T00:00:00Z"), []);
    // Site, two VMs, the interface and the address created; the VMs deleted, and with them the
    // interface and its address, each logged.
    assert.equal((await inv.call("GET", `${CHANGES}?time_after=2000-01-01`)).body.count, 9);
    // An entry has no tags, custom fields, created or last_updated, and its stored data is no
    // filter (NetBox's ObjectChangeFilterSet has none of these): unknown filters, ignored.
    const ignored = "tag=nope&cf_owner=x&created__gte=2100-01-01&last_updated=2000-01-01" +
      "&pre=x&postchange_data=x";
    assert.equal((await inv.call("GET", `${CHANGES}?${ignored}`)).body.count, 9);
  } finally {
    inv.close();
  }
});

Deno.test("secrets never reach the change log", async () => {
  const inv = await setup();
  try {
    const hv = await inv.call("POST", "/api/plugins/service/endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
      username: "root@pam",
      password: "hunter2-secret",
      token_value: "tok-secret-value",
    });
    assert.equal(hv.status, 201, JSON.stringify(hv.body));
    const backend = await inv.call("POST", "/api/plugins/service/endpoints/backend/", {
      name: "b",
      domain: "127.0.0.1",
    });
    assert.equal(backend.status, 201, JSON.stringify(backend.body));
    const token = await inv.call("POST", "/api/users/tokens/", { description: "ci" });
    assert.equal(token.status, 201);
    const all = await inv.call("GET", `${CHANGES}?limit=100`);
    const text = JSON.stringify(all.body);
    assert.ok(all.body.count >= 2);
    for (const secret of ["hunter2-secret", "tok-secret-value", token.body.token]) {
      assert.ok(!text.includes(secret), secret);
    }
    const generatedKey = (await inv.call(
      "GET",
      `/api/plugins/service/endpoints/backend/${backend.body.id}/`,
    )).body.token;
    if (generatedKey) assert.ok(!text.includes(generatedKey));
    assert.ok(!text.includes('"users.token"'));
  } finally {
    inv.close();
  }
});

Deno.test("retention: the newest INVENTORY_CHANGELOG_MAX_ENTRIES are kept, and nothing older than the retention days", async () => {
  let now = Date.parse("2026-08-11T10:00:00Z");
  const inv = await setup({
    INVENTORY_CHANGELOG_MAX_ENTRIES: "5",
    INVENTORY_CHANGELOG_RETENTION_DAYS: "90",
  }, { now: () => now });
  try {
    for (let i = 0; i < 8; i++) {
      await inv.call("POST", "/api/dcim/sites/", { name: `s${i}`, slug: `s${i}` });
    }
    const kept = await inv.call("GET", CHANGES);
    assert.deepEqual(
      kept.body.results.map((e: { object_repr: string }) => e.object_repr),
      ["s7", "s6", "s5", "s4", "s3"],
    );
    now += 91 * 86_400_000;
    await inv.call("POST", "/api/dcim/sites/", { name: "late", slug: "late" });
    const fresh = await inv.call("GET", CHANGES);
    assert.deepEqual(fresh.body.results.map((e: { object_repr: string }) => e.object_repr), [
      "late",
    ]);
  } finally {
    inv.close();
  }
});

Deno.test("retention: a bulk write past the bound prunes as many old entries in batched reads, not one read per entry", async () => {
  const raw = await Deno.openKv(":memory:");
  const calls = { get: 0 };
  const kv = new Proxy(raw, {
    get(target, prop) {
      if (prop === "get") calls.get++;
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const inv = await setup({ INVENTORY_CHANGELOG_MAX_ENTRIES: "10" }, { kv });
  try {
    const bulk = (from: number) =>
      inv.call(
        "POST",
        "/api/dcim/sites/",
        Array.from({ length: 200 }, (_, i) => ({ name: `s${from + i}`, slug: `s${from + i}` })),
      );
    assert.equal((await bulk(0)).status, 201);
    const before = calls.get;
    assert.equal((await bulk(200)).status, 201);
    // The second write logs 200 entries and prunes 200: its reads of single keys stay few (the
    // store's counters and sequences), where reading each pruned entry alone made 200 more.
    const gets = calls.get - before;
    assert.ok(gets < 50, `${gets} single-key KV reads for a 200-object write that pruned 200`);
    const kept = await inv.call("GET", `${CHANGES}?limit=50`);
    assert.equal(kept.body.count, 10);
    assert.deepEqual(
      kept.body.results.map((e: { object_repr: string }) => e.object_repr),
      Array.from({ length: 10 }, (_, i) => `s${399 - i}`),
    );
  } finally {
    inv.close();
  }
});

Deno.test("changelog: the recorded data holds stored fields only, never computed ones or counts", async () => {
  const inv = await setup();
  try {
    const tenant = await inv.call("POST", "/api/tenancy/tenants/", { name: "Acme", slug: "acme" });
    assert.equal(tenant.status, 201);
    const ip = await inv.call("POST", "/api/ipam/ip-addresses/", {
      address: "10.0.0.1/24",
      tenant: tenant.body.id,
    });
    assert.equal(ip.status, 201);
    const dataOf = async (type: string, id: number) => {
      const r = await inv.call(
        "GET",
        `${CHANGES}?changed_object_type=${type}&changed_object_id=${id}`,
      );
      assert.equal(r.body.count, 1, JSON.stringify(r.body));
      return r.body.results[0].postchange_data as Record<string, unknown>;
    };
    const tenantData = await dataOf("tenancy.tenant", tenant.body.id);
    assert.equal(tenantData.name, "Acme");
    assert.deepEqual(Object.keys(tenantData).filter((k) => k.endsWith("_count")), []);
    const ipData = await dataOf("ipam.ipaddress", ip.body.id);
    assert.equal(ipData.address, "10.0.0.1/24");
    assert.equal(ipData.tenant, tenant.body.id);
    assert.equal("family" in ipData, false, "family is computed from the address");
  } finally {
    inv.close();
  }
});

Deno.test("changelog: each entry's whole pre- and post-data: stored fields, custom fields, tags by name; none where the model has neither", async () => {
  const inv = await setup();
  try {
    const cf = await inv.call("POST", "/api/extras/custom-fields/", {
      name: "owner",
      object_types: ["tenancy.tenant"],
      type: "text",
    });
    assert.equal(cf.status, 201);
    // Tag ids and names sort differently: the data lists the names, sorted.
    const zeta = await inv.call("POST", "/api/extras/tags/", { name: "zeta", slug: "zeta" });
    const alpha = await inv.call("POST", "/api/extras/tags/", { name: "Alpha", slug: "alpha" });
    const created = await inv.call("POST", "/api/tenancy/tenants/", {
      name: "Acme",
      slug: "acme",
      tags: [zeta.body.id, alpha.body.id],
      custom_fields: { owner: "ops" },
    });
    assert.equal(created.status, 201);
    const url = `/api/tenancy/tenants/${created.body.id}/`;
    const patched = await inv.call("PATCH", url, {
      description: "d",
      tags: [zeta.body.id],
      custom_fields: { owner: null },
    });
    assert.equal(patched.status, 200);
    assert.equal((await inv.call("DELETE", url)).status, 204);
    const entries = (await inv.call(
      "GET",
      `${CHANGES}?changed_object_type=tenancy.tenant&ordering=id`,
    )).body.results;
    const base = { name: "Acme", slug: "acme", group: null, comments: "", owner: null };
    const first = {
      ...base,
      description: "",
      custom_fields: { owner: "ops" },
      tags: ["Alpha", "zeta"],
    };
    const second = { ...base, description: "d", custom_fields: { owner: null }, tags: ["zeta"] };
    assert.deepEqual(
      entries.map((e: Record<string, unknown>) => [e.prechange_data, e.postchange_data]),
      [[null, first], [first, second], [second, null]],
    );
    // A tag has no tags and no custom fields of its own: its data names neither.
    const tagEntry = (await inv.call(
      "GET",
      `${CHANGES}?changed_object_type=extras.tag&changed_object_id=${alpha.body.id}`,
    )).body.results[0];
    assert.deepEqual(tagEntry.postchange_data, {
      name: "Alpha",
      slug: "alpha",
      color: "9e9e9e",
      description: "",
      object_types: [],
      weight: 1000,
    });
  } finally {
    inv.close();
  }
});

Deno.test("changelog: an update of a large object keeps its whole prechange_data (the entry stores the unchanged fields once)", async () => {
  // A site with 22,000 characters of comments and as many of notes: an entry holding either
  // unchanged field twice would pass the store's record limit and lose its pre-data; one
  // holding the changed fields alone fits.
  const inv = await setup();
  try {
    await inv.created("/api/extras/custom-fields/", {
      name: "notes",
      type: "longtext",
      object_types: ["dcim.site"],
    });
    const notes = "n".repeat(22_000);
    const comments = "c".repeat(22_000);
    const id = (await inv.created("/api/dcim/sites/", {
      name: "AMS1",
      slug: "ams1",
      comments,
      custom_fields: { notes },
    })).id;
    const patched = await inv.call("PATCH", `/api/dcim/sites/${id}/`, { description: "moved" });
    assert.equal(patched.status, 200, JSON.stringify(patched.body).slice(0, 300));
    const log = await inv.call(
      "GET",
      `${CHANGES}?changed_object_type=dcim.site&changed_object_id=${id}&action=update`,
    );
    assert.equal(log.body.count, 1);
    const [entry] = log.body.results;
    assert.equal(entry.prechange_data?.description, "", JSON.stringify(entry).slice(0, 300));
    assert.equal(entry.postchange_data.description, "moved");
    assert.equal(entry.prechange_data.comments, comments);
    assert.deepEqual(entry.prechange_data.custom_fields, { notes });
    assert.deepEqual({ ...entry.prechange_data, description: "moved" }, entry.postchange_data);
  } finally {
    inv.close();
  }
});

Deno.test("changelog: an entry too large for the store keeps what fits, the update's pre-data first, the new data last; the write stands", async () => {
  const inv = await setup();
  try {
    // Two copies of 35,000 characters (the old comments as pre-data, the new ones in the new
    // data) pass the store's record limit (60,000): the pre-data goes, the new data stays.
    const id = (await inv.created("/api/dcim/sites/", {
      name: "AMS1",
      slug: "ams1",
      comments: "a".repeat(35_000),
    })).id;
    const comments = "b".repeat(35_000);
    const patched = await inv.call("PATCH", `/api/dcim/sites/${id}/`, { comments });
    assert.equal(patched.status, 200, JSON.stringify(patched.body).slice(0, 300));
    const update = await inv.call(
      "GET",
      `${CHANGES}?changed_object_type=dcim.site&changed_object_id=${id}&action=update`,
    );
    assert.equal(update.body.count, 1);
    const [entry] = update.body.results;
    assert.equal(entry.prechange_data, null, JSON.stringify(entry).slice(0, 300));
    assert.equal(entry.postchange_data?.comments, comments, JSON.stringify(entry).slice(0, 300));
    assert.equal(entry.postchange_data.name, "AMS1");

    // The largest site the store takes (found by asking: a refusal writes nothing): its entry,
    // the stored fields and the entry's own, passes the limit even with no pre-data, and is
    // kept without its new data.
    let [fits, refused] = [50_000, 60_000];
    while (refused - fits > 1) {
      const size = Math.floor((fits + refused) / 2);
      const r = await inv.call("POST", "/api/dcim/sites/", {
        name: "BIG",
        slug: "big",
        comments: "c".repeat(size),
      });
      if (r.status === 201) {
        assert.equal((await inv.call("DELETE", `/api/dcim/sites/${r.body.id}/`)).status, 204);
        fits = size;
      } else {
        assert.equal(r.status, 400, JSON.stringify(r.body).slice(0, 300));
        refused = size;
      }
    }
    const big = await inv.created("/api/dcim/sites/", {
      name: "BIG",
      slug: "big",
      comments: "c".repeat(fits),
    });
    assert.equal((await inv.call("GET", `/api/dcim/sites/${big.id}/`)).body.comments.length, fits);
    const made = await inv.call(
      "GET",
      `${CHANGES}?changed_object_type=dcim.site&changed_object_id=${big.id}&action=create`,
    );
    assert.equal(made.body.count, 1, JSON.stringify(made.body).slice(0, 300));
    const [create] = made.body.results;
    assert.deepEqual(
      [create.object_repr, create.prechange_data, create.postchange_data],
      ["BIG", null, null],
    );
  } finally {
    inv.close();
  }
});

Deno.test("changelog: an entry of exactly the store's record limit keeps its pre-data and its new data", async () => {
  const inv = await setup();
  try {
    // The stored entry, as the store measures it (its record limit counts the same bytes).
    const stored = async (id: number) => {
      const e = await inv.deps.kv.get(keys.inventoryObject("core.objectchange", id));
      assert.ok(e.value, `entry ${id}`);
      return { size: storedSize(e.value), entry: e.value as Record<string, unknown> };
    };
    const lastEntry = async () =>
      (await inv.call("GET", `${CHANGES}?limit=1`)).body.results[0].id as number;
    // A site's create entry, then its update's (one short field changed), measured at one
    // comments length; every id stays one digit, so each entry grows by exactly one byte per
    // character of comments.
    const probe = await inv.created("/api/dcim/sites/", {
      name: "s1",
      slug: "s1",
      comments: "c".repeat(40_000),
    });
    const createSize = (await stored(await lastEntry())).size;
    await inv.call("PATCH", `/api/dcim/sites/${probe.id}/`, { description: "moved" });
    const updateSize = (await stored(await lastEntry())).size;
    const limit = new KvModelStore(inv.deps.kv).maxRecordBytes;

    const made = await inv.created("/api/dcim/sites/", {
      name: "s2",
      slug: "s2",
      comments: "c".repeat(40_000 + limit - createSize),
    });
    const create = await stored(await lastEntry());
    assert.equal(create.size, limit);
    assert.equal(create.entry.changed_object_id, made.id);
    assert.equal((create.entry.postchange_data as { name?: string } | null)?.name, "s2");

    const edited = await inv.created("/api/dcim/sites/", {
      name: "s3",
      slug: "s3",
      comments: "c".repeat(40_000 + limit - updateSize),
    });
    await inv.call("PATCH", `/api/dcim/sites/${edited.id}/`, { description: "moved" });
    const update = await stored(await lastEntry());
    assert.equal(update.size, limit);
    const [entry] = (await inv.call(
      "GET",
      `${CHANGES}?changed_object_id=${edited.id}&changed_object_type=dcim.site&action=update`,
    )).body.results;
    assert.deepEqual(entry.prechange_data?.description, "", JSON.stringify(entry).slice(0, 300));
    assert.equal(entry.postchange_data?.description, "moved");
    assert.equal(entry.postchange_data.comments.length, 40_000 + limit - updateSize);
  } finally {
    inv.close();
  }
});

Deno.test("changelog: each kind of object's related object (NetBox's related_object), per parent field and generic reference", async () => {
  const inv = await setup();
  try {
    const ok = async (path: string, body: Record<string, unknown>) => {
      const r = await inv.call("POST", path, body);
      assert.equal(r.status, 201, `${path} ${JSON.stringify(r.body)}`);
      return r.body.id as number;
    };
    const siteId = await site(inv);
    const manufacturer = await ok("/api/dcim/manufacturers/", { name: "Acme", slug: "acme" });
    const deviceType = await ok("/api/dcim/device-types/", {
      manufacturer,
      model: "Node",
      slug: "node",
    });
    const role = await ok("/api/dcim/device-roles/", { name: "Host", slug: "host" });
    const device = await ok("/api/dcim/devices/", {
      name: "pve1",
      device_type: deviceType,
      role,
      site: siteId,
    });
    const vm = await ok("/api/virtualization/virtual-machines/", { name: "web1", site: siteId });
    const devIf = await ok("/api/dcim/interfaces/", { device, name: "eno1", type: "1000base-t" });
    const vmIf = await ok("/api/virtualization/interfaces/", { virtual_machine: vm, name: "net0" });
    const disk = await ok("/api/virtualization/virtual-disks/", {
      virtual_machine: vm,
      name: "scsi0",
      size: 10,
    });
    const onDev = await ok("/api/ipam/ip-addresses/", {
      address: "192.0.2.1/24",
      assigned_object_type: "dcim.interface",
      assigned_object_id: devIf,
    });
    const onVm = await ok("/api/ipam/ip-addresses/", {
      address: "192.0.2.2/24",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: vmIf,
    });
    const loose = await ok("/api/ipam/ip-addresses/", { address: "192.0.2.3/24" });
    const mac = await ok("/api/dcim/mac-addresses/", {
      mac_address: "BC:24:11:00:00:01",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: vmIf,
    });
    const looseMac = await ok("/api/dcim/mac-addresses/", { mac_address: "BC:24:11:00:00:02" });
    // Which objects' entries each parent (type, id) collects: the parent field of a component,
    // the generic reference of an address, nothing for an object of another kind.
    const related = async (type: string, id: number) =>
      (await inv.call("GET", `${CHANGES}?related_object_type=${type}&related_object_id=${id}`))
        .body.results.map((e: { changed_object_type: string; changed_object_id: number }) =>
          `${e.changed_object_type}:${e.changed_object_id}`
        ).sort();
    const table: [string, number, string[]][] = [
      ["dcim.device", device, [`dcim.interface:${devIf}`]],
      ["virtualization.virtualmachine", vm, [
        `virtualization.virtualdisk:${disk}`,
        `virtualization.vminterface:${vmIf}`,
      ]],
      ["dcim.interface", devIf, [`ipam.ipaddress:${onDev}`]],
      ["virtualization.vminterface", vmIf, [`dcim.macaddress:${mac}`, `ipam.ipaddress:${onVm}`]],
      ["dcim.site", siteId, []],
    ];
    for (const [type, id, want] of table) {
      assert.deepEqual(await related(type, id), want, `${type}:${id}`);
    }
    // An address, a MAC or a VM with no parent: its entry has no related object, and a filter
    // on an empty related_object_type finds exactly those entries of those kinds.
    const unrelated = (await inv.call("GET", `${CHANGES}?related_object_id__isnull=true&limit=100`))
      .body.results.map((e: { changed_object_type: string; changed_object_id: number }) =>
        `${e.changed_object_type}:${e.changed_object_id}`
      );
    for (const orphan of [`ipam.ipaddress:${loose}`, `dcim.macaddress:${looseMac}`]) {
      assert.ok(unrelated.includes(orphan), `${orphan} in ${unrelated}`);
    }
    for (const child of [`ipam.ipaddress:${onVm}`, `dcim.interface:${devIf}`]) {
      assert.ok(!unrelated.includes(child), `${child} not in ${unrelated}`);
    }
  } finally {
    inv.close();
  }
});

Deno.test("retention by age: only entries older than the days go, 0 days keeps every age, and the sweep runs at most once a minute", async () => {
  const DAY = 86_400_000;
  const start = Date.parse("2026-01-01T00:00:00Z");
  // Each row: retention days, then [days since start, site name] writes in order, and the
  // entries left after the last write, newest first.
  const table: Array<[string, Array<[number, string]>, string[]]> = [
    ["90", [[0, "old"], [50, "mid"], [91, "new"]], ["new", "mid"]],
    ["90", [[0, "old"], [89, "mid"], [140, "new"]], ["new", "mid"]],
    ["0", [[0, "old"], [50, "mid"], [1000, "new"]], ["new", "mid", "old"]],
    ["30", [[0, "a"], [10, "b"], [100, "c"]], ["c"]],
  ];
  for (const [days, writes, want] of table) {
    let now = start;
    const inv = await setup({ INVENTORY_CHANGELOG_RETENTION_DAYS: days }, { now: () => now });
    try {
      for (const [at, name] of writes) {
        now = start + at * DAY;
        const r = await inv.call("POST", "/api/dcim/sites/", { name, slug: name });
        assert.equal(r.status, 201, JSON.stringify(r.body));
      }
      const left = await inv.call("GET", `${CHANGES}?limit=0`);
      assert.deepEqual(
        left.body.results.map((e: { object_repr: string }) => e.object_repr),
        want,
        `${days} days: ${JSON.stringify(writes)}`,
      );
    } finally {
      inv.close();
    }
  }
  // The sweep that ran at a write is not run again within the minute: an entry that expired
  // meanwhile stays until a write a minute after the sweep.
  let now = start;
  const inv = await setup({ INVENTORY_CHANGELOG_RETENTION_DAYS: "1" }, { now: () => now });
  try {
    const write = async (name: string, at: number) => {
      now = at;
      assert.equal((await inv.call("POST", "/api/dcim/sites/", { name, slug: name })).status, 201);
    };
    const left = async () =>
      (await inv.call("GET", `${CHANGES}?limit=0`)).body.results.map((
        e: { object_repr: string },
      ) => e.object_repr);
    await write("first", start);
    await write("second", start + DAY - 10_000); // sweeps: nothing expired yet
    await write("third", start + DAY + 20_000); // "first" expired, but within the minute
    assert.deepEqual(await left(), ["third", "second", "first"]);
    await write("fourth", start + DAY + 60_000); // a minute after the sweep
    assert.deepEqual(await left(), ["fourth", "third", "second"]);
  } finally {
    inv.close();
  }
});

Deno.test("retention by age: a sweep takes every expired entry past its first page of 500, oldest first, and keeps the young ones", async () => {
  const DAY = 86_400_000;
  const start = Date.parse("2026-01-01T00:00:00Z");
  let now = start;
  const inv = await setup({ INVENTORY_CHANGELOG_RETENTION_DAYS: "1" }, { now: () => now });
  try {
    // 700 entries that will expire (more than a page), then one that will not.
    const old = Array.from({ length: 700 }, (_, i) => ({ name: `old${i}`, slug: `old${i}` }));
    const bulk = await inv.call("POST", "/api/extras/tags/", old);
    assert.equal(bulk.status, 201, JSON.stringify(bulk.body).slice(0, 200));
    now = start + DAY / 2;
    await inv.created("/api/extras/tags/", { name: "young", slug: "young" });
    now = start + DAY + DAY / 4; // the 700 are older than a day, "young" is not
    await inv.created("/api/extras/tags/", { name: "new", slug: "new" });
    const left = await inv.call("GET", `${CHANGES}?limit=0`);
    assert.deepEqual(
      [left.body.count, left.body.results.map((e: { object_repr: string }) => e.object_repr)],
      [2, ["new", "young"]],
    );
  } finally {
    inv.close();
  }
});

Deno.test("changelog: an update entry over the limit with its pre-data and exactly at it without keeps its new data", async () => {
  const inv = await setup();
  try {
    const stored = async (id: number) =>
      (await inv.deps.kv.get(keys.inventoryObject("core.objectchange", id))).value as Record<
        string,
        unknown
      >;
    const lastEntry = async () =>
      (await inv.call("GET", `${CHANGES}?limit=1`)).body.results[0].id as number;
    const limit = new KvModelStore(inv.deps.kv).maxRecordBytes;
    // An update replacing all of a site's comments: its pre-data holds the old comments. Probed
    // at 20,000 characters, measured as the engine measures it once the pre-data is dropped;
    // every id stays one digit, so that size grows by one byte per character of comments.
    const probe = await inv.created("/api/dcim/sites/", {
      name: "s1",
      slug: "s1",
      comments: "a".repeat(20_000),
    });
    await inv.call("PATCH", `/api/dcim/sites/${probe.id}/`, { comments: "b".repeat(20_000) });
    const probed = await stored(await lastEntry());
    assert.equal((probed.pre as { comments?: string }).comments?.length, 20_000);
    const withoutPre = storedSize({ ...probed, pre: null });

    const length = 20_000 + limit - withoutPre;
    const site = await inv.created("/api/dcim/sites/", {
      name: "s2",
      slug: "s2",
      comments: "a".repeat(length),
    });
    await inv.call("PATCH", `/api/dcim/sites/${site.id}/`, { comments: "b".repeat(length) });
    const entry = await stored(await lastEntry());
    assert.equal(entry.changed_object_id, site.id);
    assert.equal(entry.pre, null);
    assert.equal(storedSize(entry), limit);
    assert.equal((entry.postchange_data as { comments?: string } | null)?.comments?.length, length);
  } finally {
    inv.close();
  }
});
