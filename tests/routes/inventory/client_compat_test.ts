/**
 * What unchanged NetBox clients need beyond the models: pynetbox 7.0.0 (Debian bookworm, under
 * Ansible's netbox.netbox) probes the API root for its version without sending its token, which
 * INVENTORY_ANONYMOUS_API_ROOT allows (NetBox, and the default here, answer 403).
 */
import assert from "node:assert/strict";
import { setup } from "./_setup.ts";

Deno.test("the API root without a token: 403 as NetBox by default (API-Version still sent)", async () => {
  const inv = await setup();
  try {
    const root = await inv.call("GET", "/api/", undefined, null);
    assert.equal(root.status, 403);
    assert.deepEqual(root.body, { detail: "Authentication credentials were not provided." });
    assert.equal(root.headers.get("API-Version"), "4.6");
    const withToken = await inv.call("GET", "/api/");
    assert.equal(withToken.body.dcim, "http://inv.test/api/dcim/");
  } finally {
    inv.close();
  }
});

Deno.test("INVENTORY_ANONYMOUS_API_ROOT=true: the API root answers without a token (section names only); a wrong token and every other path stay 403", async () => {
  const inv = await setup({ INVENTORY_ANONYMOUS_API_ROOT: "true" });
  try {
    const root = await inv.call("GET", "/api/", undefined, null);
    assert.equal(root.status, 200);
    assert.equal(root.headers.get("API-Version"), "4.6");
    assert.equal(root.body.dcim, "http://inv.test/api/dcim/");
    assert.ok(Object.values(root.body).every((v) => typeof v === "string"));
    const wrong = await inv.call("GET", "/api/", undefined, "Token wrong");
    assert.equal(wrong.status, 403);
    assert.deepEqual(wrong.body, { detail: "Invalid token" });
    for (const path of ["/api/status/", "/api/dcim/", "/api/dcim/sites/", "/api/users/tokens/"]) {
      const r = await inv.call("GET", path, undefined, null);
      assert.equal(r.status, 403, path);
      assert.deepEqual(r.body, { detail: "Authentication credentials were not provided." });
    }
    const post = await inv.call("POST", "/api/", {}, null);
    assert.equal(post.status, 403);
  } finally {
    inv.close();
  }
});

/** What netbox.netbox's nb_inventory (3.13) reads, in its order, with common options. */
const NB_INVENTORY_READS = [
  "dcim/devices/",
  "virtualization/virtual-machines/",
  "dcim/sites/",
  "dcim/regions/",
  "dcim/site-groups/",
  "dcim/locations/",
  "tenancy/tenants/",
  "dcim/device-roles/",
  "dcim/platforms/",
  "dcim/device-types/",
  "dcim/manufacturers/",
  "virtualization/clusters/",
  "dcim/interfaces/",
  "ipam/services/",
  "dcim/racks/",
  "virtualization/interfaces/",
];

Deno.test("nb_inventory's reads: status, the OpenAPI query parameters of devices and VMs, and every list it fetches with limit=0", async () => {
  const inv = await setup();
  try {
    const status = await inv.call("GET", "/api/status");
    assert.equal(status.status, 200);
    assert.match(status.body["netbox-version"], /^4\.6/);
    const schema = await inv.call("GET", "/api/schema/?format=json");
    for (const path of ["/api/dcim/devices/", "/api/virtualization/virtual-machines/"]) {
      const names = schema.body.paths[path].get.parameters.map((p: { name: string }) => p.name);
      for (const wanted of ["limit", "offset", "q"]) assert.ok(names.includes(wanted), path);
    }
    for (const path of NB_INVENTORY_READS) {
      const r = await inv.call("GET", `/api/${path}?limit=0`);
      assert.equal(r.status, 200, path);
      assert.ok(Array.isArray(r.body.results), path);
    }
    const ips = await inv.call("GET", "/api/ipam/ip-addresses/?limit=0&assigned_to_interface=true");
    assert.equal(ips.status, 200);
  } finally {
    inv.close();
  }
});
