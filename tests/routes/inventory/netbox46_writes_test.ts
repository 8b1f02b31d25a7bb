/**
 * What NetBox 4.6 added to writes, as a client sees it: virtual machine types (defaults on
 * create only) and the VM's `start_on_boot`, `add_tags`/`remove_tags`, the write-only
 * `changelog_message`, and weak ETags with If-Match → 412 (docs/api-behaviour.md, Inventory:
 * NetBox 4.6).
 */
import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";

/** An inventory whose clock moves only when told (ETags are made of `last_updated`). */
async function clocked(): Promise<Inv & { tick(): void }> {
  let now = Date.parse("2026-08-11T10:00:00.000Z");
  const inv = await setup({}, { now: () => now });
  return Object.assign(inv, { tick: () => void (now += 1500) });
}

async function world(inv: Inv) {
  const post = async (path: string, body: unknown) => {
    const r = await inv.call("POST", `/api/${path}`, body);
    assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const site = await post("dcim/sites/", { name: "AMS1", slug: "ams1" });
  const type = await post("virtualization/cluster-types/", { name: "PVE", slug: "pve" });
  const cluster = await post("virtualization/clusters/", {
    name: "lab",
    type: type.id,
    scope_type: "dcim.site",
    scope_id: site.id,
  });
  const platform = await post("dcim/platforms/", { name: "Debian 12", slug: "debian-12" });
  return { post, site, cluster, platform };
}

Deno.test("virtual machine types: a new VM takes the type's platform, vCPUs and memory where it left them empty, on create only", async () => {
  const inv = await setup();
  try {
    const { post, cluster, platform } = await world(inv);
    const qemu = await post("virtualization/virtual-machine-types/", {
      name: "QEMU virtual machine",
      slug: "qemu-virtual-machine",
      default_platform: platform.id,
      default_vcpus: 2,
      default_memory: 2048,
    });
    assert.equal(qemu.default_platform.slug, "debian-12");
    assert.equal(qemu.display, "QEMU virtual machine");
    const lxc = await post("virtualization/virtual-machine-types/", {
      name: "LXC container",
      slug: "lxc-container",
    });
    const dup = await inv.call("POST", "/api/virtualization/virtual-machine-types/", {
      name: "qemu VIRTUAL machine",
      slug: "other",
    });
    assert.equal(dup.status, 400);
    assert.deepEqual(dup.body, { name: ["Virtual machine type name must be unique."] });

    const filled = await post("virtualization/virtual-machines/", {
      name: "web1",
      cluster: cluster.id,
      virtual_machine_type: qemu.id,
      memory: 512,
    });
    assert.equal(filled.virtual_machine_type.slug, "qemu-virtual-machine");
    assert.deepEqual(Object.keys(filled.virtual_machine_type).sort(), [
      "description",
      "display",
      "id",
      "name",
      "slug",
      "url",
    ]);
    assert.deepEqual([filled.platform?.id, filled.vcpus, filled.memory], [platform.id, 2, 512]);
    assert.deepEqual(filled.start_on_boot, { value: "off", label: "Off" });
    const ct = await post("virtualization/virtual-machines/", {
      name: "ct1",
      cluster: cluster.id,
      virtual_machine_type: lxc.id,
      start_on_boot: "on",
    });
    assert.deepEqual(ct.start_on_boot, { value: "on", label: "On" });

    // Later edits of the type reach no existing VM, and an update applies no defaults.
    await inv.call("PATCH", `/api/virtualization/virtual-machine-types/${qemu.id}/`, {
      default_vcpus: 8,
    });
    await inv.call("PATCH", `/api/virtualization/virtual-machines/${filled.id}/`, {
      vcpus: null,
    });
    const again = await inv.call("GET", `/api/virtualization/virtual-machines/${filled.id}/`);
    assert.equal(again.body.vcpus, null);

    const badBoot = await inv.call("PATCH", `/api/virtualization/virtual-machines/${ct.id}/`, {
      start_on_boot: "always",
    });
    assert.equal(badBoot.status, 400);
    assert.deepEqual(badBoot.body, { start_on_boot: ["always is not a valid choice."] });

    const names = async (query: string) =>
      (await inv.call("GET", `/api/virtualization/virtual-machines/?${query}`)).body.results
        .map((v: { name: string }) => v.name);
    assert.deepEqual(await names("virtual_machine_type=lxc-container"), ["ct1"]);
    assert.deepEqual(await names(`virtual_machine_type_id=${qemu.id}`), ["web1"]);
    assert.deepEqual(await names("start_on_boot=off"), ["web1"]);
    assert.deepEqual(await names("start_on_boot=on"), ["ct1"]);
    const types = await inv.call("GET", "/api/virtualization/virtual-machine-types/");
    assert.deepEqual(
      types.body.results.map((t: { slug: string; virtual_machine_count: number }) => [
        t.slug,
        t.virtual_machine_count,
      ]),
      [["lxc-container", 1], ["qemu-virtual-machine", 1]],
    );
    // The VM's type is PROTECTed.
    const gone = await inv.call("DELETE", `/api/virtualization/virtual-machine-types/${lxc.id}/`);
    assert.equal(gone.status, 409);
    assert.match(gone.body.detail, /1 dependent objects were found: ct1/);
  } finally {
    inv.close();
  }
});

Deno.test("add_tags and remove_tags change the tag set without naming the tags others set; NetBox's three refusals", async () => {
  const inv = await setup();
  try {
    const { post, site } = await world(inv);
    for (const slug of ["admin", "pve", "stale"]) await post("extras/tags/", { name: slug, slug });
    const vm = await post("virtualization/virtual-machines/", {
      name: "web1",
      site: site.id,
      add_tags: [{ slug: "pve" }],
    });
    const slugs = (r: { tags: Array<{ slug: string }> }) => r.tags.map((t) => t.slug).sort();
    assert.deepEqual(slugs(vm), ["pve"]);
    const url = `/api/virtualization/virtual-machines/${vm.id}/`;
    await inv.call("PATCH", url, { tags: [{ slug: "admin" }, { slug: "pve" }, { slug: "stale" }] });
    const changed = await inv.call("PATCH", url, {
      add_tags: [{ slug: "pve" }],
      remove_tags: [{ slug: "stale" }],
    });
    assert.equal(changed.status, 200);
    assert.deepEqual(slugs(changed.body), ["admin", "pve"]);
    assert.equal(changed.body.add_tags, undefined);
    assert.deepEqual(slugs((await inv.call("GET", url)).body), ["admin", "pve"]);

    const both = await inv.call("PATCH", url, {
      tags: [{ slug: "pve" }],
      add_tags: [{ slug: "admin" }],
    });
    assert.equal(both.status, 400);
    assert.deepEqual(both.body, {
      tags: ['Cannot specify "tags" together with "add_tags" or "remove_tags".'],
    });
    const onCreate = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "web2",
      site: site.id,
      remove_tags: [{ slug: "pve" }],
    });
    assert.equal(onCreate.status, 400);
    assert.deepEqual(onCreate.body, {
      remove_tags: ['Cannot use "remove_tags" when creating a new object.'],
    });
    const overlap = await inv.call("PATCH", url, {
      add_tags: [{ slug: "stale" }, { slug: "admin" }],
      remove_tags: [{ slug: "admin" }],
    });
    assert.equal(overlap.status, 400);
    assert.deepEqual(overlap.body, {
      remove_tags: ['Tags may not be present in both "add_tags" and "remove_tags": admin'],
    });
    const unknown = await inv.call("PATCH", url, { add_tags: [{ slug: "nope" }] });
    assert.equal(unknown.status, 400);
    assert.ok(unknown.body.add_tags, JSON.stringify(unknown.body));
    // Bulk: each item's changes apply to its own tag set.
    const bulk = await inv.call("PATCH", "/api/virtualization/virtual-machines/", [
      { id: vm.id, remove_tags: [{ slug: "admin" }] },
    ]);
    assert.equal(bulk.status, 200);
    assert.deepEqual(slugs(bulk.body[0]), ["pve"]);
  } finally {
    inv.close();
  }
});

Deno.test("changelog_message is accepted on create, update and delete (single and bulk), never rendered, and checked", async () => {
  const inv = await setup();
  try {
    const { post, site } = await world(inv);
    const vm = await post("virtualization/virtual-machines/", {
      name: "web1",
      site: site.id,
      changelog_message: "sync run 7",
    });
    assert.equal(vm.changelog_message, undefined);
    const url = `/api/virtualization/virtual-machines/${vm.id}/`;
    const patched = await inv.call("PATCH", url, { comments: "x", changelog_message: "edit" });
    assert.equal(patched.status, 200);
    const blank = await inv.call("PATCH", url, { comments: "y", changelog_message: "  " });
    assert.equal(blank.status, 400);
    assert.deepEqual(blank.body, { changelog_message: ["This field may not be blank."] });
    const long = await inv.call("PATCH", url, { changelog_message: "m".repeat(201) });
    assert.deepEqual(long.body, {
      changelog_message: ["Ensure this field has no more than 200 characters."],
    });
    assert.equal((await inv.call("GET", url)).body.comments, "x");
    // 200 characters (after trimming) is the most NetBox keeps, and is kept whole.
    const longest = ` ${"m".repeat(199)}é `;
    const atMost = await inv.call("PATCH", url, { comments: "z", changelog_message: longest });
    assert.equal(atMost.status, 200, JSON.stringify(atMost.body));
    const logged = await inv.call(
      "GET",
      `/api/core/object-changes/?changed_object_type=virtualization.virtualmachine&changed_object_id=${vm.id}&limit=1`,
    );
    assert.equal(logged.body.results[0].message, longest.trim());
    const badDelete = await inv.call("DELETE", url, { changelog_message: ["no"] });
    assert.equal(badDelete.status, 400);
    assert.deepEqual(badDelete.body, { changelog_message: ["Not a valid string."] });
    assert.equal((await inv.call("GET", url)).status, 200);
    const deleted = await inv.call("DELETE", url, { changelog_message: "retired" });
    assert.equal(deleted.status, 204);
    const more = await inv.call("POST", "/api/virtualization/virtual-machines/", [
      { name: "a", site: site.id, changelog_message: "bulk" },
      { name: "b", site: site.id },
    ]);
    assert.equal(more.status, 201);
    const bulkDelete = await inv.call(
      "DELETE",
      "/api/virtualization/virtual-machines/",
      more.body.map((v: { id: number }) => ({ id: v.id, changelog_message: "cleanup" })),
    );
    assert.equal(bulkDelete.status, 204);
  } finally {
    inv.close();
  }
});

Deno.test("weak ETags on single-object answers; If-Match on PUT, PATCH and DELETE answers 412 with the current ETag when stale", async () => {
  const inv = await clocked();
  try {
    const { site } = await world(inv);
    inv.tick();
    const created = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "web1",
      site: site.id,
    });
    const first = created.headers.get("ETag");
    assert.equal(first, 'W/"2026-08-11T10:00:01.500000+00:00"');
    assert.equal(created.headers.get("API-Version"), "4.6");
    const url = `/api/virtualization/virtual-machines/${created.body.id}/`;
    assert.equal((await inv.call("GET", url)).headers.get("ETag"), first);
    const list = await inv.call("GET", "/api/virtualization/virtual-machines/");
    assert.equal(list.headers.get("ETag"), null);

    // An admin edits; the sync still holds the first ETag.
    inv.tick();
    const admin = await inv.call("PATCH", url, { comments: "admin" });
    const second = admin.headers.get("ETag");
    assert.equal(second, 'W/"2026-08-11T10:00:03+00:00"');
    const guarded = (method: string, etag: string, body?: unknown) =>
      inv.app.request(`http://inv.test${url}`, {
        method,
        headers: {
          authorization: "Token 0123456789abcdef0123456789abcdef01234567",
          "content-type": "application/json",
          "if-match": etag,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    for (const [method, body] of [["PATCH", { comments: "sync" }], ["PUT", { name: "w" }]]) {
      const stale = await guarded(method as string, first!, body);
      assert.equal(stale.status, 412, method as string);
      assert.deepEqual(await stale.json(), { detail: "Precondition failed." });
      assert.equal(stale.headers.get("ETag"), second);
    }
    const staleDelete = await guarded("DELETE", `"other", ${first}`);
    assert.equal(staleDelete.status, 412);
    assert.equal((await inv.call("GET", url)).body.comments, "admin");

    inv.tick();
    const fresh = await guarded("PATCH", `${first}, ${second}`, { comments: "sync" });
    assert.equal(fresh.status, 200);
    const third = fresh.headers.get("ETag");
    assert.notEqual(third, second);
    inv.tick();
    assert.equal((await guarded("PATCH", "*", { comments: "any" })).status, 200);
    // A bulk (list) PATCH ignores If-Match, as NetBox 4.6.8's BulkUpdateModelMixin does: the
    // sync checks last_updated itself before a bulk write (docs/sync.md).
    const bulk = await inv.app.request("http://inv.test/api/virtualization/virtual-machines/", {
      method: "PATCH",
      headers: {
        authorization: "Token 0123456789abcdef0123456789abcdef01234567",
        "content-type": "application/json",
        "if-match": first!,
      },
      body: JSON.stringify([{ id: created.body.id, comments: "bulk" }]),
    });
    assert.equal(bulk.status, 200, await bulk.clone().text());
    assert.equal(bulk.headers.get("ETag"), null);
    assert.equal((await inv.call("GET", url)).body.comments, "bulk");
    // Its interfaces go with it (CASCADE), one of them with the VM's own id: the guard is the
    // VM's ETag, never a dependent's.
    inv.tick();
    const ifaceIds: number[] = [];
    while ((ifaceIds.at(-1) ?? 0) < created.body.id) {
      const iface = await inv.call("POST", "/api/virtualization/interfaces/", {
        virtual_machine: created.body.id,
        name: `eth${ifaceIds.length}`,
      });
      assert.equal(iface.status, 201, JSON.stringify(iface.body));
      ifaceIds.push(iface.body.id);
    }
    assert.ok(ifaceIds.includes(created.body.id), `${ifaceIds} / ${created.body.id}`);
    assert.equal((await guarded("DELETE", third!)).status, 412);
    const current = (await inv.call("GET", url)).headers.get("ETag")!;
    assert.equal((await guarded("DELETE", current)).status, 204);
    assert.equal((await inv.call("GET", url)).status, 404);
    const left = await inv.call(
      "GET",
      `/api/virtualization/interfaces/?id=${ifaceIds.join("&id=")}`,
    );
    assert.equal(left.body.count, 0);
  } finally {
    inv.close();
  }
});
