import assert from "node:assert/strict";
import { createInventoryCore } from "../../../routes/inventory/mod.ts";
import { type Inv, setup, TOKEN } from "./_setup.ts";

/** Creates the shared parents every model below needs; returns their ids. */
async function parents(inv: Inv) {
  const ok = async (path: string, body: unknown) => {
    const r = await inv.call("POST", path, body);
    assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
    return r.body.id as number;
  };
  const tenant = await ok("/api/tenancy/tenants/", { name: "Acme", slug: "acme" });
  const site = await ok("/api/dcim/sites/", { name: "DC1", slug: "dc1" });
  const manufacturer = await ok("/api/dcim/manufacturers/", { name: "Proxmox", slug: "proxmox" });
  const deviceType = await ok("/api/dcim/device-types/", {
    manufacturer,
    model: "PVE node",
    slug: "pve-node",
  });
  const role = await ok("/api/dcim/device-roles/", { name: "Hypervisor", slug: "hypervisor" });
  const clusterType = await ok("/api/virtualization/cluster-types/", {
    name: "Proxmox VE",
    slug: "pve",
  });
  const cluster = await ok("/api/virtualization/clusters/", {
    name: "lab",
    type: clusterType,
    scope_type: "dcim.site",
    scope_id: site,
  });
  const device = await ok("/api/dcim/devices/", {
    name: "pve1",
    device_type: deviceType,
    role,
    site,
    cluster,
  });
  const vm = await ok("/api/virtualization/virtual-machines/", { name: "web1", cluster, tenant });
  return { tenant, site, manufacturer, deviceType, role, clusterType, cluster, device, vm };
}

Deno.test("every core model: create, get, list, PUT, PATCH, delete through HTTP", async () => {
  const inv = await setup();
  try {
    const p = await parents(inv);
    const vmIf = await inv.call("POST", "/api/virtualization/interfaces/", {
      virtual_machine: p.vm,
      name: "eth0",
    });
    assert.equal(vmIf.status, 201);
    const devIf = await inv.call("POST", "/api/dcim/interfaces/", {
      device: p.device,
      name: "vmbr0",
      type: "bridge",
    });
    assert.equal(devIf.status, 201);
    // [path, create body, PUT body (complete), PATCH body, field to check after PATCH, expected]
    const cases: Array<
      [
        string,
        Record<string, unknown>,
        Record<string, unknown>,
        Record<string, unknown>,
        string,
        unknown,
      ]
    > = [
      [
        "/api/tenancy/tenants/",
        { name: "T2", slug: "t2" },
        { name: "T2b", slug: "t2b" },
        { description: "d" },
        "description",
        "d",
      ],
      [
        "/api/dcim/sites/",
        { name: "S2", slug: "s2" },
        { name: "S2b", slug: "s2b" },
        { status: "planned" },
        "status",
        { value: "planned", label: "Planned" },
      ],
      [
        "/api/dcim/manufacturers/",
        { name: "M2", slug: "m2" },
        { name: "M2b", slug: "m2b" },
        { description: "x" },
        "description",
        "x",
      ],
      [
        "/api/dcim/device-types/",
        { manufacturer: p.manufacturer, model: "X1", slug: "x1" },
        { manufacturer: p.manufacturer, model: "X2", slug: "x2" },
        { u_height: 2 },
        "u_height",
        2,
      ],
      [
        "/api/dcim/device-roles/",
        { name: "R2", slug: "r2" },
        { name: "R2b", slug: "r2b" },
        { color: "ff0000" },
        "color",
        "ff0000",
      ],
      [
        "/api/dcim/devices/",
        { name: "pve2", device_type: p.deviceType, role: p.role, site: p.site },
        { name: "pve2b", device_type: p.deviceType, role: p.role, site: p.site },
        { serial: "SN1" },
        "serial",
        "SN1",
      ],
      [
        "/api/dcim/interfaces/",
        { device: p.device, name: "eno1", type: "1000base-t" },
        { device: p.device, name: "eno2", type: "10gbase-t" },
        { mtu: 9000 },
        "mtu",
        9000,
      ],
      [
        "/api/dcim/mac-addresses/",
        { mac_address: "aa:bb:cc:dd:ee:01" },
        { mac_address: "AA:BB:CC:DD:EE:02" },
        { assigned_object_type: "virtualization.vminterface", assigned_object_id: vmIf.body.id },
        "assigned_object",
        { id: vmIf.body.id },
      ],
      [
        "/api/virtualization/cluster-types/",
        { name: "CT2", slug: "ct2" },
        { name: "CT2b", slug: "ct2b" },
        { description: "y" },
        "description",
        "y",
      ],
      [
        "/api/virtualization/clusters/",
        { name: "c2", type: p.clusterType },
        { name: "c2b", type: p.clusterType },
        { status: "offline" },
        "status",
        { value: "offline", label: "Offline" },
      ],
      [
        "/api/virtualization/virtual-machines/",
        { name: "db1", cluster: p.cluster },
        { name: "db1b", cluster: p.cluster },
        { vcpus: 4, memory: 8192 },
        "memory",
        8192,
      ],
      [
        "/api/virtualization/interfaces/",
        { virtual_machine: p.vm, name: "eth1" },
        { virtual_machine: p.vm, name: "eth2" },
        { enabled: false },
        "enabled",
        false,
      ],
      [
        "/api/virtualization/virtual-disks/",
        { virtual_machine: p.vm, name: "scsi0", size: 10240 },
        { virtual_machine: p.vm, name: "scsi1", size: 20480 },
        { size: 40960 },
        "size",
        40960,
      ],
      [
        "/api/ipam/ip-addresses/",
        { address: "10.0.0.5/24" },
        { address: "10.0.0.6/24" },
        { assigned_object_type: "virtualization.vminterface", assigned_object_id: vmIf.body.id },
        "assigned_object_id",
        vmIf.body.id,
      ],
      [
        "/api/ipam/vlans/",
        { vid: 100, name: "v100" },
        { vid: 101, name: "v101" },
        { status: "reserved" },
        "status",
        { value: "reserved", label: "Reserved" },
      ],
      [
        "/api/ipam/prefixes/",
        { prefix: "10.0.0.0/24" },
        { prefix: "10.1.0.0/24" },
        { is_pool: true },
        "is_pool",
        true,
      ],
      [
        "/api/extras/tags/",
        { name: "Prod", slug: "prod" },
        { name: "Prod2", slug: "prod2" },
        { color: "00ff00" },
        "color",
        "00ff00",
      ],
      [
        "/api/extras/custom-fields/",
        { name: "owner", type: "text", object_types: ["virtualization.virtualmachine"] },
        { name: "owner2", type: "text", object_types: ["virtualization.virtualmachine"] },
        { required: false, weight: 50 },
        "weight",
        50,
      ],
      [
        "/api/extras/journal-entries/",
        {
          assigned_object_type: "virtualization.virtualmachine",
          assigned_object_id: p.vm,
          comments: "hello",
        },
        {
          assigned_object_type: "virtualization.virtualmachine",
          assigned_object_id: p.vm,
          comments: "hi",
        },
        { kind: "warning" },
        "kind",
        { value: "warning", label: "Warning" },
      ],
      [
        "/api/users/tokens/",
        { description: "ci" },
        { description: "ci2" },
        { write_enabled: false },
        "write_enabled",
        false,
      ],
    ];
    for (const [path, create, put, patch, field, expected] of cases) {
      const created = await inv.call("POST", path, create);
      assert.equal(created.status, 201, `${path} create: ${JSON.stringify(created.body)}`);
      const id = created.body.id;
      assert.equal(created.body.url, `http://inv.test${path}${id}/`);
      assert.equal(typeof created.body.display, "string");
      assert.match(created.body.created, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
      const got = await inv.call("GET", `${path}${id}/`);
      assert.equal(got.status, 200, path);
      assert.equal(got.body.id, id);
      const list = await inv.call("GET", `${path}?id=${id}`);
      assert.equal(list.body.count, 1, path);
      const replaced = await inv.call("PUT", `${path}${id}/`, put);
      assert.equal(replaced.status, 200, `${path} put: ${JSON.stringify(replaced.body)}`);
      // The replacement shows in the answer and in a fresh read.
      const reread = await inv.call("GET", `${path}${id}/`);
      for (const [key, want] of Object.entries(put)) {
        assert.deepEqual(plainValue(replaced.body[key]), want, `${path} PUT answer: ${key}`);
        assert.deepEqual(plainValue(reread.body[key]), want, `${path} GET after PUT: ${key}`);
      }
      const patched = await inv.call("PATCH", `${path}${id}/`, patch);
      assert.equal(patched.status, 200, `${path} patch: ${JSON.stringify(patched.body)}`);
      if (expected && typeof expected === "object" && !("label" in expected)) {
        assert.equal(patched.body[field].id, (expected as { id: number }).id, path);
      } else assert.deepEqual(patched.body[field], expected, path);
      // Without the trailing slash too (NetBox clients sometimes drop it).
      const again = await inv.call("GET", `${path}${id}`);
      assert.equal(again.status, 200, path);
      const deleted = await inv.call("DELETE", `${path}${id}/`);
      assert.equal(deleted.status, 204, `${path} delete: ${JSON.stringify(deleted.body)}`);
      assert.equal((await inv.call("GET", `${path}${id}/`)).status, 404);
    }
    // core jobs are readable (written by code; covered in rules_test) and the status route answers.
    assert.equal((await inv.call("GET", "/api/core/jobs/")).status, 200);
  } finally {
    inv.close();
  }
});

/** A field as written: a nested object as its id, a choice as its value. */
function plainValue(v: unknown): unknown {
  if (v && typeof v === "object" && !Array.isArray(v)) {
    if ("id" in v) return (v as { id: unknown }).id;
    if ("value" in v && "label" in v) return (v as { value: unknown }).value;
  }
  return v;
}

Deno.test("records carry NetBox's common fields and nested brief objects", async () => {
  const inv = await setup();
  try {
    const p = await parents(inv);
    const vm = await inv.call("GET", `/api/virtualization/virtual-machines/${p.vm}/`);
    assert.deepEqual(Object.keys(vm.body).slice(0, 4), ["id", "url", "display_url", "display"]);
    for (const key of ["tags", "custom_fields", "created", "last_updated"]) {
      assert.ok(key in vm.body, key);
    }
    assert.deepEqual(vm.body.cluster, {
      id: p.cluster,
      url: `http://inv.test/api/virtualization/clusters/${p.cluster}/`,
      display: "lab",
      name: "lab",
      description: "",
    });
    assert.deepEqual(vm.body.tenant.slug, "acme");
    assert.deepEqual(vm.body.status, { value: "active", label: "Active" });
    const cluster = await inv.call("GET", `/api/virtualization/clusters/${p.cluster}/`);
    assert.equal(cluster.body.scope.id, p.site);
    assert.equal(cluster.body.scope.url, `http://inv.test/api/dcim/sites/${p.site}/`);
    const dt = await inv.call("GET", `/api/dcim/device-types/${p.deviceType}/`);
    assert.equal(dt.body.display, "PVE node");
    assert.equal(dt.body.manufacturer.slug, "proxmox");
    const ip = await inv.call("POST", "/api/ipam/ip-addresses/", { address: "2001:db8::1/64" });
    assert.deepEqual(ip.body.family, { value: 6, label: "IPv6" });
    assert.equal(ip.headers.get("api-version"), "4.6");
  } finally {
    inv.close();
  }
});

Deno.test("a record stored before its tags, m2m and choice fields existed renders them empty", async () => {
  const inv = await setup();
  try {
    const p = await parents(inv);
    const iface = await inv.call("POST", "/api/virtualization/interfaces/", {
      virtual_machine: p.vm,
      name: "net0",
    });
    assert.equal(iface.status, 201, JSON.stringify(iface.body));
    // As an earlier release left it (or an upgrade that added the fields): neither key stored.
    const engine = createInventoryCore(inv.deps).engine;
    await engine.patchStored("virtualization.vminterface", iface.body.id, {
      tags: undefined,
      tagged_vlans: undefined,
      mode: undefined,
    });
    const stored = await engine.get("virtualization.vminterface", iface.body.id);
    assert.deepEqual([stored?.tags, stored?.tagged_vlans], [undefined, undefined]);
    const url = `/api/virtualization/interfaces/${iface.body.id}/`;
    const one = await inv.call("GET", url);
    assert.equal(one.status, 200, JSON.stringify(one.body));
    assert.deepEqual([one.body.tags, one.body.tagged_vlans], [[], []]);
    assert.ok("mode" in one.body);
    assert.equal(one.body.mode, null); // a nullable choice with no value
    const list = await inv.call("GET", `/api/virtualization/interfaces/?id=${iface.body.id}`);
    assert.deepEqual(list.body.results.map((r: { tags: unknown }) => r.tags), [[]]);
    // Tags written later come back in NetBox's order (weight, then name), two as well as many.
    for (const slug of ["zeta", "alpha"]) {
      await inv.call("POST", "/api/extras/tags/", { name: slug, slug });
    }
    const tagged = await inv.call("PATCH", url, { tags: [{ slug: "zeta" }, { slug: "alpha" }] });
    assert.deepEqual(tagged.body.tags.map((t: { slug: string }) => t.slug), ["alpha", "zeta"]);
  } finally {
    inv.close();
  }
});

Deno.test("API root, app roots and /api/status/ answer like NetBox", async () => {
  const inv = await setup();
  try {
    const root = await inv.call("GET", "/api/");
    assert.equal(root.body.dcim, "http://inv.test/api/dcim/");
    assert.equal(root.body.plugins, "http://inv.test/api/plugins/");
    const dcim = await inv.call("GET", "/api/dcim/");
    assert.equal(dcim.body.sites, "http://inv.test/api/dcim/sites/");
    assert.equal(dcim.body["mac-addresses"], "http://inv.test/api/dcim/mac-addresses/");
    const status = await inv.call("GET", "/api/status/");
    assert.equal(status.status, 200);
    assert.equal(status.body["netbox-version"], "4.6.8");
    assert.ok("django-version" in status.body && "python-version" in status.body);
    // NetBox 4.6's keys: installed_apps (renamed from installed-apps), hostname, full version.
    assert.deepEqual(Object.keys(status.body).sort(), [
      "django-version",
      "hostname",
      "installed_apps",
      "netbox-full-version",
      "netbox-version",
      "plugins",
      "python-version",
      "rq-workers-running",
    ]);
    assert.match(status.body["netbox-full-version"], /^4\.6\.8/);
    assert.equal(typeof status.body.plugins.service, "string");
    assert.equal(status.headers.get("API-Version"), "4.6");
    assert.equal((await inv.call("GET", "/api/nothing-here/")).status, 404);
    assert.deepEqual((await inv.call("GET", "/api/dcim/sites/abc/")).body, {
      detail: "Not found.",
    });
    const schema = await inv.call("GET", "/api/schema/", undefined, null);
    assert.equal(schema.status, 200);
    assert.equal(schema.body.openapi, "3.1.0");
    assert.ok(schema.body.paths["/api/virtualization/virtual-machines/{id}/"].patch);
    assert.ok(!schema.body.paths["/api/core/jobs/"].post, "read-only models have no writes");
    const docs = await inv.app.request("http://inv.test/api/docs/");
    assert.equal(docs.status, 200);
    assert.match(await docs.text(), /\/api\/static\/scalar\.js/);
  } finally {
    inv.close();
  }
});

Deno.test("absolute URLs follow X-Forwarded-Proto/Host only from trusted proxies", async () => {
  const inv = await setup({ SERVICE_TRUSTED_PROXIES: "10.9.9.9" });
  try {
    await inv.call("POST", "/api/tenancy/tenants/", [{ name: "a", slug: "a" }, {
      name: "b",
      slug: "b",
    }]);
    const get = async (peer: string) => {
      const res = await inv.app.request(
        "http://inv.internal:8800/api/tenancy/tenants/?limit=1",
        {
          headers: {
            authorization: `Token ${TOKEN}`,
            "x-forwarded-proto": "https",
            "x-forwarded-host": "netbox.example.com",
          },
        },
        { remoteAddr: { hostname: peer } },
      );
      return await res.json();
    };
    const viaProxy = await get("10.9.9.9");
    assert.equal(viaProxy.results[0].url, "https://netbox.example.com/api/tenancy/tenants/1/");
    assert.equal(viaProxy.next, "https://netbox.example.com/api/tenancy/tenants/?limit=1&offset=1");
    const direct = await get("192.0.2.7");
    assert.equal(direct.results[0].url, "http://inv.internal:8800/api/tenancy/tenants/1/");
  } finally {
    inv.close();
  }
});

Deno.test("docs assets are served offline; OPTIONS and HEAD answer", async () => {
  const inv = await setup();
  try {
    const redoc = await inv.app.request("http://inv.test/api/redoc/");
    assert.equal(redoc.status, 200);
    assert.match(await redoc.text(), /\/api\/static\/redoc\.js/);
    const js = await inv.app.request("http://inv.test/api/static/scalar.js");
    assert.equal(js.status, 200);
    assert.match(js.headers.get("content-type") ?? "", /javascript/);
    await js.body?.cancel();
    const options = await inv.call("OPTIONS", "/api/core/jobs/");
    assert.equal(options.status, 200);
    assert.equal(options.headers.get("allow"), "GET, HEAD, OPTIONS");
    const head = await inv.app.request("http://inv.test/api/dcim/sites/", {
      method: "HEAD",
      headers: { authorization: `Token ${TOKEN}` },
    });
    assert.equal(head.status, 200);
    await head.body?.cancel();
    const schema = await inv.call("GET", "/api/schema/", undefined, null);
    assert.ok(
      schema.body.paths["/api/plugins/service/endpoints/hypervisor/"],
      "plugin models are documented",
    );
    assert.ok(
      schema.body.paths["/api/plugins/service/endpoints/hypervisor/{id}/ssh-secrets/"],
      "the plugin's own routes are documented too",
    );
    assert.ok(schema.body.components.schemas.VirtualizationVirtualmachine);
    assert.equal(
      schema.body.paths["/api/virtualization/virtual-machines/"].get.summary,
      "List virtual machine objects",
    );
    assert.equal(schema.body.paths["/api/dcim/sites/{id}/"].patch.summary, "Update a site");
    // Filters across references are documented with the others.
    const deviceFilters = schema.body.paths["/api/dcim/devices/"].get.parameters
      .map((p: { name: string }) => p.name);
    for (const name of ["region", "region_id", "site_group_id", "tenant_group", "location_id"]) {
      assert.ok(deviceFilters.includes(name), name);
    }
  } finally {
    inv.close();
  }
});

Deno.test("contact assignments render without display_url, as NetBox 4.6 renders them; other models with it", async () => {
  const inv = await setup();
  try {
    const p = await parents(inv);
    const post = async (path: string, body: unknown) => {
      const r = await inv.call("POST", path, body);
      assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
      return r.body;
    };
    const role = await post("/api/tenancy/contact-roles/", { name: "Owner", slug: "owner" });
    const contact = await post("/api/tenancy/contacts/", { name: "Ada" });
    const assignment = await post("/api/tenancy/contact-assignments/", {
      object_type: "virtualization.virtualmachine",
      object_id: p.vm,
      contact: contact.id,
      role: role.id,
    });
    assert.deepEqual(Object.keys(assignment).slice(0, 4), ["id", "url", "display", "object_type"]);
    const read = await inv.call("GET", `/api/tenancy/contact-assignments/${assignment.id}/`);
    assert.equal("display_url" in read.body, false);
    assert.deepEqual(Object.keys(contact).slice(0, 4), ["id", "url", "display_url", "display"]);
  } finally {
    inv.close();
  }
});

Deno.test("an object's tags: by weight, then name at every strength (accents and case too), whatever order they were written in", async () => {
  const inv = await setup();
  try {
    const p = await parents(inv);
    const tag = async (name: string, slug: string, weight = 1000) => {
      const r = await inv.call("POST", "/api/extras/tags/", { name, slug, weight });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body.id as number;
    };
    // Written accented first: the unaccented name still comes first, as in NetBox's database.
    const accented = await tag("caf\u00e9", "cafe-accented");
    const plain = await tag("cafe", "cafe");
    const heavy = await tag("Zeta", "zeta", 10);
    const alpha = await tag("alpha", "alpha");
    // Weight 0 is the lightest (not the default 1000). Names with numbers (`n2`, `n10`) take the
    // tag list's own order: an object's tags are listed as the tag list lists them.
    const first = await tag("zero", "zero", 0);
    const two = await tag("n2", "n2");
    const ten = await tag("n10", "n10");
    const vm = `/api/virtualization/virtual-machines/${p.vm}/`;
    const patched = await inv.call("PATCH", vm, {
      tags: [two, accented, alpha, ten, plain, heavy, first],
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const names = (tags: { name: string }[]) => tags.map((t) => t.name);
    const listed = names((await inv.call("GET", "/api/extras/tags/")).body.results);
    assert.deepEqual(names(patched.body.tags), listed);
    assert.deepEqual(listed.filter((n) => !/^n\d/.test(n)), [
      "zero",
      "Zeta",
      "alpha",
      "cafe",
      "caf\u00e9",
    ]);
    const read = await inv.call("GET", vm);
    assert.deepEqual(names(read.body.tags), listed);
  } finally {
    inv.close();
  }
});

Deno.test("delete: a SET_NULL reference is cleared; a generic one (scope) whose rule is CASCADE takes its object along", async () => {
  const inv = await setup();
  try {
    const post = async (path: string, body: unknown) => {
      const r = await inv.call("POST", path, body);
      assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
      return r.body;
    };
    const region = await post("/api/dcim/regions/", { name: "Europe", slug: "europe" });
    const platform = await post("/api/dcim/platforms/", { name: "Debian", slug: "debian" });
    const ct = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
    const cluster = await post("/api/virtualization/clusters/", {
      name: "c1",
      type: ct.id,
      scope_type: "dcim.region",
      scope_id: region.id,
    });
    const vm = await post("/api/virtualization/virtual-machines/", {
      name: "vm1",
      cluster: cluster.id,
      platform: platform.id,
    });
    assert.equal((await inv.call("DELETE", `/api/dcim/platforms/${platform.id}/`)).status, 204);
    const after = await inv.call("GET", `/api/virtualization/virtual-machines/${vm.id}/`);
    assert.equal(after.body.platform, null);
    assert.equal(after.body.cluster.id, cluster.id);
    // The cluster scoped to the region goes with it (docs/netbox-rules.md "Deletes"), once its
    // VM, which protects it, is gone.
    assert.equal((await inv.call("DELETE", `/api/dcim/regions/${region.id}/`)).status, 409);
    assert.equal(
      (await inv.call("DELETE", `/api/virtualization/virtual-machines/${vm.id}/`)).status,
      204,
    );
    assert.equal((await inv.call("DELETE", `/api/dcim/regions/${region.id}/`)).status, 204);
    const scoped = await inv.call("GET", `/api/virtualization/clusters/${cluster.id}/`);
    assert.equal(scoped.status, 404);
    // Creates, deletes and the references cleared on the way logged no error, and no warning:
    // "references created during a delete were cleaned up" is the operator's sign of a race
    // (delete.ts followUpDeletes), never of an ordinary SET_NULL or cascade.
    assert.deepEqual(inv.deps.logger.at("error"), []);
    assert.deepEqual(inv.deps.logger.at("warning"), []);
  } finally {
    inv.close();
  }
});
