/**
 * NetBox 4.5/4.6 request behaviour: cursor paging with `start`, the strict page cap, `fields`
 * over `omit` over `brief`, unsafe methods without the trailing slash, and malformed IPs
 * (docs/api-behaviour.md, Inventory: conventions).
 */
import assert from "node:assert/strict";
import { setup } from "./_setup.ts";

Deno.test("cursor paging: ?start= walks by id with count and previous null; its 400s", async () => {
  const inv = await setup();
  try {
    const made = await inv.call(
      "POST",
      "/api/dcim/sites/",
      Array.from({ length: 5 }, (_, i) => ({ name: `s${i}`, slug: `s${i}` })),
    );
    const ids = made.body.map((s: { id: number }) => s.id);
    const first = await inv.call("GET", `/api/dcim/sites/?start=${ids[1]}&limit=2&brief=1`);
    assert.equal(first.status, 200);
    assert.deepEqual([first.body.count, first.body.previous], [null, null]);
    assert.deepEqual(first.body.results.map((s: { id: number }) => s.id), [ids[1], ids[2]]);
    assert.equal(
      first.body.next,
      `http://inv.test/api/dcim/sites/?start=${ids[2] + 1}&limit=2&brief=1`,
    );
    const second = await inv.call(
      "GET",
      new URL(first.body.next).pathname + new URL(first.body.next).search,
    );
    assert.deepEqual(second.body.results.map((s: { id: number }) => s.id), [ids[3], ids[4]]);
    const last = await inv.call("GET", `/api/dcim/sites/?start=${ids[4]}&limit=2`);
    assert.deepEqual([last.body.results.length, last.body.next], [1, null]);
    // Filters still apply.
    const filtered = await inv.call("GET", `/api/dcim/sites/?start=0&slug=s3`);
    assert.deepEqual(filtered.body.results.map((s: { slug: string }) => s.slug), ["s3"]);

    const both = await inv.call("GET", "/api/dcim/sites/?start=1&offset=2");
    assert.equal(both.status, 400);
    assert.deepEqual(both.body, ["'start' and 'offset' are mutually exclusive."]);
    const ordered = await inv.call("GET", "/api/dcim/sites/?start=1&ordering=name");
    assert.deepEqual(ordered.body, [
      "Ordering cannot be specified in conjunction with cursor-based pagination.",
    ]);
    const bad = await inv.call("GET", "/api/dcim/sites/?start=-1");
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, ["Invalid 'start' parameter: must be a non-negative integer."]);
  } finally {
    inv.close();
  }
});

Deno.test("the page cap is MAX_PAGE_SIZE (1000) whatever limit asks; fields beats omit beats brief", async () => {
  const inv = await setup();
  try {
    await inv.call("POST", "/api/dcim/sites/", { name: "a", slug: "a", description: "d" });
    const big = await inv.call("GET", "/api/dcim/sites/?limit=5000");
    assert.equal(big.status, 200);
    assert.ok(big.body.next === null);
    const keys = async (query: string) =>
      Object.keys((await inv.call("GET", `/api/dcim/sites/?${query}`)).body.results[0]);
    assert.deepEqual(await keys("brief=1&fields=id,status"), ["id", "status"]);
    assert.deepEqual(await keys("fields=id,name&omit=name"), ["id", "name"]);
    const omitted = await keys("brief=1&omit=description");
    assert.ok(omitted.includes("status") && !omitted.includes("description"));
    assert.deepEqual(await keys("brief=1"), [
      "id",
      "url",
      "display",
      "name",
      "slug",
      "description",
    ]);
  } finally {
    inv.close();
  }
});

Deno.test("unsafe methods without the trailing slash answer 404 and write nothing; malformed IPs are a 400 naming the value", async () => {
  const inv = await setup();
  try {
    for (const [method, path] of [["POST", "/api/dcim/sites"], ["PATCH", "/api/dcim/sites/1"]]) {
      const r = await inv.call(method, path, { name: "x", slug: "x" });
      assert.equal(r.status, 404, `${method} ${path}`);
      assert.deepEqual(r.body, { detail: "Not found." });
    }
    assert.equal((await inv.call("GET", "/api/dcim/sites/?slug=x")).body.count, 0);
    assert.equal((await inv.call("GET", "/api/dcim/sites")).status, 200);
    const ip = await inv.call("POST", "/api/ipam/ip-addresses/", { address: "10.0.0.300/24" });
    assert.equal(ip.status, 400);
    assert.deepEqual(ip.body, { address: ["Invalid IP address format: 10.0.0.300/24"] });
    const word = await inv.call("POST", "/api/ipam/ip-addresses/", { address: "web-1" });
    assert.deepEqual(word.body, { address: ["Invalid IP address format: web-1"] });
    const prefix = await inv.call("POST", "/api/ipam/prefixes/", { prefix: "10.0.0.0/40" });
    assert.deepEqual(prefix.body, { prefix: ["Invalid IP prefix format: 10.0.0.0/40"] });
  } finally {
    inv.close();
  }
});

Deno.test("a write under ?fields= or ?omit= reads only those fields of its body, as NetBox's serializer does, and answers only them", async () => {
  const inv = await setup();
  try {
    // `description` and `status` are left out of `fields`: ignored as unknown fields would be.
    const made = await inv.call("POST", "/api/dcim/sites/?fields=id,name,slug,tags", [
      { name: "a", slug: "a", description: "kept out", status: "planned" },
      { name: "b", slug: "b", description: "kept out", status: "planned" },
    ]);
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.deepEqual(made.body.map((s: Record<string, unknown>) => Object.keys(s).sort()), [
      ["id", "name", "slug", "tags"],
      ["id", "name", "slug", "tags"],
    ]);
    const ids = made.body.map((s: { id: number }) => s.id);
    const read = async () =>
      (await inv.call("GET", `/api/dcim/sites/?id=${ids.join("&id=")}&ordering=id`)).body.results
        .map((
          s: { description: string; status: { value: string } },
        ) => [s.description, s.status.value]);
    assert.deepEqual(await read(), [["", "active"], ["", "active"]]);
    // A bulk PATCH keeps each item's id (read apart from the serializer); `status` is read
    // under ?fields=status, `description` is not.
    const patched = await inv.call("PATCH", "/api/dcim/sites/?fields=status", [
      { id: ids[0], status: "planned", description: "x" },
      { id: ids[1], status: "retired", description: "y" },
    ]);
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.deepEqual(patched.body, [{ status: { value: "planned", label: "Planned" } }, {
      status: { value: "retired", label: "Retired" },
    }]);
    assert.deepEqual(await read(), [["", "planned"], ["", "retired"]]);
    // ?omit= leaves its fields out of the body too; without either the whole body is read.
    await inv.call("PATCH", `/api/dcim/sites/${ids[0]}/?omit=description`, {
      description: "omitted",
      status: "active",
    });
    await inv.call("PATCH", `/api/dcim/sites/${ids[1]}/`, { description: "read" });
    assert.deepEqual(await read(), [["", "active"], ["read", "retired"]]);
  } finally {
    inv.close();
  }
});
