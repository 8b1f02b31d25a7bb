import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";
import { world } from "./_world.ts";

async function seed(inv: Inv) {
  const post = async (path: string, body: unknown) => {
    const r = await inv.call("POST", path, body);
    assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const ct = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
  const c1 = await post("/api/virtualization/clusters/", { name: "alpha", type: ct.id });
  const c2 = await post("/api/virtualization/clusters/", { name: "beta", type: ct.id });
  const t1 = await post("/api/tenancy/tenants/", { name: "Acme", slug: "acme" });
  const prod = await post("/api/extras/tags/", { name: "Prod", slug: "prod" });
  const web = await post("/api/extras/tags/", { name: "Web", slug: "web" });
  const vms = await post("/api/virtualization/virtual-machines/", [
    {
      name: "web-01",
      cluster: c1.id,
      tenant: t1.id,
      status: "active",
      vcpus: 2,
      memory: 2048,
      tags: [prod.id, web.id],
    },
    {
      name: "web-02",
      cluster: c1.id,
      status: "offline",
      vcpus: 4,
      memory: 4096,
      tags: [{ slug: "web" }],
    },
    {
      name: "db-01",
      cluster: c2.id,
      tenant: t1.id,
      status: "active",
      vcpus: 8,
      memory: 16384,
      tags: [{ name: "Prod" }],
    },
    { name: "Web-10", cluster: c2.id, status: "planned", description: "the big one" },
    { name: "cache", cluster: c1.id, status: "active", memory: 1024 },
  ]);
  return { c1, c2, t1, vms };
}

const names = (body: { results: Array<{ name: string }> }) => body.results.map((r) => r.name);

Deno.test("filters: exact, fk, <fk>_id, natural keys, lookups, tags, id__in", async () => {
  const inv = await setup();
  try {
    const { c1, c2, vms } = await seed(inv);
    const q = async (query: string) => {
      const r = await inv.call("GET", `/api/virtualization/virtual-machines/?${query}`);
      assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
      return r.body;
    };
    assert.deepEqual(names(await q(`cluster_id=${c1.id}&ordering=name`)), [
      "cache",
      "web-01",
      "web-02",
    ]);
    assert.deepEqual(names(await q(`cluster_id=${c1.id}&cluster_id=${c2.id}`)).length, 5);
    assert.deepEqual(names(await q("cluster=beta&ordering=name")), ["db-01", "Web-10"]);
    assert.deepEqual(names(await q("tenant=acme&ordering=name")), ["db-01", "web-01"]);
    assert.deepEqual(names(await q("tenant_id__isnull=true&ordering=name")), [
      "cache",
      "web-02",
      "Web-10",
    ]);
    assert.deepEqual(names(await q("tenant__isnull=false&ordering=name")), ["db-01", "web-01"]);
    assert.deepEqual(names(await q("status=active&ordering=name")), ["cache", "db-01", "web-01"]);
    assert.deepEqual(names(await q("status__n=active&ordering=name")), ["web-02", "Web-10"]);
    assert.deepEqual(names(await q("name__ic=WEB&ordering=name")), ["web-01", "web-02", "Web-10"]);
    assert.deepEqual(names(await q("name__ie=web-10")), ["Web-10"]);
    assert.deepEqual(names(await q("name__isw=db")), ["db-01"]);
    assert.deepEqual(names(await q("name=web-01")), ["web-01"]);
    assert.deepEqual(names(await q("name__in=web-01,cache&ordering=name")), ["cache", "web-01"]);
    assert.deepEqual(names(await q("memory__gte=4096&ordering=memory")), ["web-02", "db-01"]);
    assert.deepEqual(names(await q("memory__lt=2048")), ["cache"]);
    assert.deepEqual(names(await q("vcpus__isnull=true&ordering=name")), ["cache", "Web-10"]);
    assert.deepEqual(names(await q("tag=prod&ordering=name")), ["db-01", "web-01"]);
    // NetBox tag filters are conjunctive: every tag must be present.
    assert.deepEqual(names(await q("tag=prod&tag=web")), ["web-01"]);
    assert.deepEqual(names(await q("tag__n=web&ordering=name")), ["cache", "db-01", "Web-10"]);
    assert.deepEqual(names(await q(`id__in=${vms[0].id},${vms[2].id}&ordering=name`)), [
      "db-01",
      "web-01",
    ]);
    assert.deepEqual(names(await q(`id=${vms[1].id}`)), ["web-02"]);
    // A keyset walk (ordering=id&id__gt=) with a filter no index answers alone.
    assert.deepEqual(names(await q(`ordering=id&id__gt=${vms[0].id}&name__ic=web`)), [
      "web-02",
      "Web-10",
    ]);
    assert.deepEqual(names(await q(`ordering=id&id__gte=${vms[1].id}&cluster_id=${c2.id}`)), [
      "db-01",
      "Web-10",
    ]);
    assert.deepEqual(names(await q(`id__n=${vms[1].id}`)).length, 4);
    assert.deepEqual(names(await q("description__empty=false")), ["Web-10"]);
    // Combined filters intersect.
    assert.deepEqual(names(await q(`cluster_id=${c1.id}&status=active&ordering=name`)), [
      "cache",
      "web-01",
    ]);
    // Unknown filters are ignored (as NetBox); bad values are 400 with the parameter named.
    assert.equal((await q("no_such_filter=1")).count, 5);
    // So is a bare lookup name: "regex" alone names no field (NetBox reads a lookup only after
    // "__"), so its value is no pattern to refuse, and "n" or "isnull" filter nothing.
    for (const bare of ["regex=(", "iregex=[", "n=web-01", "isnull=true", "in=1,2"]) {
      assert.equal((await q(bare)).count, 5, bare);
    }
    // An id that is no number: Django's ModelMultipleChoiceField's text.
    const bad = await inv.call("GET", "/api/virtualization/virtual-machines/?cluster_id=abc");
    assert.deepEqual([bad.status, bad.body], [400, {
      cluster_id: ["\u201cabc\u201d is not a valid value."],
    }]);
    const badChoice = await inv.call("GET", "/api/virtualization/virtual-machines/?status=bogus");
    assert.equal(badChoice.status, 400);
    assert.ok(badChoice.body.status[0].includes("bogus"));
    // The excluding and list lookups check their choices too (NetBox's MultipleChoiceFilter).
    for (const param of ["status__n", "status__in"]) {
      const bad = await inv.call("GET", `/api/virtualization/virtual-machines/?${param}=bogus`);
      assert.deepEqual([bad.status, bad.body], [400, {
        [param]: ["Select a valid choice. bogus is not one of the available choices."],
      }]);
    }
    // memory is an integer field (Django's IntegerField text); vcpus a decimal one.
    const badNum = await inv.call("GET", "/api/virtualization/virtual-machines/?memory__gt=lots");
    assert.deepEqual(badNum.body, { memory__gt: ["Enter a whole number."] });
    const badDecimal = await inv.call("GET", "/api/virtualization/virtual-machines/?vcpus=lots");
    assert.deepEqual(badDecimal.body, { vcpus: ["Enter a number."] });
    assert.deepEqual(
      (await inv.call("GET", "/api/virtualization/virtual-machines/?memory=1.5")).body,
      {
        memory: ["Enter a whole number."],
      },
    );
    assert.deepEqual(names(await q("memory=2048.0")), ["web-01"]);
    const unknownCluster = await inv.call(
      "GET",
      "/api/virtualization/virtual-machines/?cluster=nope",
    );
    assert.equal(unknownCluster.status, 400);
    const unknownId = await inv.call(
      "GET",
      "/api/virtualization/virtual-machines/?cluster_id=4242",
    );
    assert.deepEqual([unknownId.status, unknownId.body], [400, {
      cluster_id: ["Select a valid choice. 4242 is not one of the available choices."],
    }]);
  } finally {
    inv.close();
  }
});

Deno.test("natural-key filters compare exactly, as NetBox's to_field_name does: a slug in other case names nothing", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const exact = await inv.call("GET", "/api/virtualization/clusters/?type=pve");
    assert.deepEqual(exact.body.results.map((c: { id: number }) => c.id), [w.cluster]);
    for (const value of ["PVE", "Pve"]) {
      const other = await inv.call("GET", `/api/virtualization/clusters/?type=${value}`);
      assert.deepEqual([other.status, other.body], [400, {
        type: [`Select a valid choice. ${value} is not one of the available choices.`],
      }]);
    }
    // The same through a reference's filter on another model (VMs by their cluster's type).
    const vms = await inv.call("GET", "/api/virtualization/virtual-machines/?cluster_type=PVE");
    assert.equal(vms.status, 400, JSON.stringify(vms.body));
  } finally {
    inv.close();
  }
});

Deno.test("natural-key filters of models whose slug is unique only within a parent (device types, VLAN groups) name exactly their objects", async () => {
  const inv = await setup();
  try {
    const w = await world(inv);
    const site = await w.post("/api/dcim/sites/", { name: "s", slug: "s" });
    const mf = await w.post("/api/dcim/manufacturers/", { name: "m", slug: "m" });
    const role = await w.post("/api/dcim/device-roles/", { name: "r", slug: "r" });
    const devices: Record<string, number> = {};
    for (const slug of ["dt-a", "dt-b", "dt-c"]) {
      const device_type = await w.post("/api/dcim/device-types/", {
        manufacturer: mf,
        model: slug,
        slug,
      });
      devices[slug] = await w.post("/api/dcim/devices/", { name: slug, device_type, role, site });
    }
    const ids = async (path: string) =>
      (await inv.call("GET", path)).body.results.map((r: { id: number }) => r.id);
    assert.deepEqual(await ids("/api/dcim/devices/?device_type=dt-b"), [devices["dt-b"]]);
    assert.deepEqual(
      await ids("/api/dcim/devices/?device_type=dt-a&device_type=dt-c&ordering=id"),
      [devices["dt-a"], devices["dt-c"]],
    );
    const vlans: Record<string, number> = {};
    for (const slug of ["g1", "g2"]) {
      const group = await w.post("/api/ipam/vlan-groups/", { name: slug, slug });
      vlans[slug] = await w.post("/api/ipam/vlans/", { vid: 10, name: `v-${slug}`, group });
    }
    assert.deepEqual(await ids("/api/ipam/vlans/?group=g2"), [vlans.g2]);
  } finally {
    inv.close();
  }
});

Deno.test("tree filters: platform_id and platform match the platform and every one below it", async () => {
  const inv = await setup();
  try {
    const post = async (path: string, body: unknown) => {
      const r = await inv.call("POST", path, body);
      assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
      return r.body.id as number;
    };
    const linux = await post("/api/dcim/platforms/", { name: "Linux", slug: "linux" });
    const debian = await post("/api/dcim/platforms/", {
      name: "Debian",
      slug: "debian",
      parent: linux,
    });
    const bookworm = await post("/api/dcim/platforms/", {
      name: "Bookworm",
      slug: "bookworm",
      parent: debian,
    });
    const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
    const cluster = await post("/api/virtualization/clusters/", { name: "c", type });
    for (const [name, platform] of [["top", linux], ["mid", debian], ["leaf", bookworm]]) {
      await post("/api/virtualization/virtual-machines/", { name, cluster, platform });
    }
    await post("/api/virtualization/virtual-machines/", { name: "none", cluster });
    const vms = async (query: string) => {
      const r = await inv.call(
        "GET",
        `/api/virtualization/virtual-machines/?${query}&ordering=name`,
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return names(r.body);
    };
    assert.deepEqual(await vms(`platform_id=${linux}`), ["leaf", "mid", "top"]);
    assert.deepEqual(await vms("platform=linux"), ["leaf", "mid", "top"]);
    assert.deepEqual(await vms(`platform_id=${debian}`), ["leaf", "mid"]);
    assert.deepEqual(await vms(`platform_id__n=${debian}`), ["none", "top"]);
  } finally {
    inv.close();
  }
});

Deno.test("q search, ordering, brief, fields, omit", async () => {
  const inv = await setup();
  try {
    await seed(inv);
    const base = "/api/virtualization/virtual-machines/";
    assert.deepEqual(names((await inv.call("GET", `${base}?q=big`)).body), ["Web-10"]);
    assert.deepEqual(names((await inv.call("GET", `${base}?q=WEB&ordering=-name`)).body), [
      "Web-10",
      "web-02",
      "web-01",
    ]);
    // Default ordering is by name (natural, case-insensitive).
    assert.deepEqual(names((await inv.call("GET", base)).body), [
      "cache",
      "db-01",
      "web-01",
      "web-02",
      "Web-10",
    ]);
    assert.deepEqual(
      (await inv.call("GET", `${base}?ordering=-memory,name`)).body.results.map((
        r: { memory: number },
      ) => r.memory),
      // Descending: the VM without memory first, as PostgreSQL sorts NULL (null_ordering_test.ts).
      [null, 16384, 4096, 2048, 1024],
    );
    const ids = (await inv.call("GET", `${base}?ordering=-id`)).body.results.map((
      r: { id: number },
    ) => r.id);
    assert.deepEqual(ids, [...ids].sort((a: number, b: number) => b - a));
    const brief = await inv.call("GET", `${base}?brief=1&limit=1`);
    assert.deepEqual(Object.keys(brief.body.results[0]), [
      "id",
      "url",
      "display",
      "name",
      "description",
    ]);
    const briefTrue = await inv.call("GET", `${base}?brief=true&limit=1`);
    assert.deepEqual(Object.keys(briefTrue.body.results[0]).length, 5);
    const fields = await inv.call("GET", `${base}?fields=id,name,cluster&limit=1`);
    assert.deepEqual(Object.keys(fields.body.results[0]), ["id", "name", "cluster"]);
    // An empty fields= (or omit=) asks for nothing in particular: the full record.
    const full = await inv.call("GET", `${base}?limit=1`);
    for (const empty of ["fields=", "omit=", "fields=,"]) {
      const r = await inv.call("GET", `${base}?${empty}&limit=1`);
      assert.deepEqual(Object.keys(r.body.results[0]), Object.keys(full.body.results[0]), empty);
    }
    const omit = await inv.call("GET", `${base}?omit=comments,custom_fields,tags&limit=1`);
    assert.ok(!("comments" in omit.body.results[0]) && !("tags" in omit.body.results[0]));
    assert.ok("name" in omit.body.results[0]);
    const detailBrief = await inv.call("GET", `${base}${brief.body.results[0].id}/?brief=1`);
    assert.deepEqual(Object.keys(detailBrief.body), [
      "id",
      "url",
      "display",
      "name",
      "description",
    ]);
  } finally {
    inv.close();
  }
});

Deno.test("paging: limit/offset with absolute next/previous, default 50, max 1000", async () => {
  const inv = await setup();
  try {
    const tenants = Array.from({ length: 120 }, (_, i) => ({
      name: `t${String(i).padStart(3, "0")}`,
      slug: `t${i}`,
    }));
    assert.equal((await inv.call("POST", "/api/tenancy/tenants/", tenants)).status, 201);
    const first = await inv.call("GET", "/api/tenancy/tenants/");
    assert.equal(first.body.count, 120);
    assert.equal(first.body.results.length, 50);
    assert.equal(first.body.previous, null);
    assert.equal(first.body.next, "http://inv.test/api/tenancy/tenants/?limit=50&offset=50");
    const second = await inv.call(
      "GET",
      new URL(first.body.next).pathname + new URL(first.body.next).search,
    );
    assert.equal(second.body.results[0].name, "t050");
    assert.equal(second.body.previous, "http://inv.test/api/tenancy/tenants/?limit=50");
    const last = await inv.call("GET", "/api/tenancy/tenants/?limit=50&offset=100");
    assert.equal(last.body.results.length, 20);
    assert.equal(last.body.next, null);
    assert.equal(last.body.previous, "http://inv.test/api/tenancy/tenants/?limit=50&offset=50");
    const keepsFilters = await inv.call("GET", "/api/tenancy/tenants/?name__isw=t0&limit=10");
    assert.equal(keepsFilters.body.count, 100);
    assert.equal(
      keepsFilters.body.next,
      "http://inv.test/api/tenancy/tenants/?name__isw=t0&limit=10&offset=10",
    );
    const big = await inv.call("GET", "/api/tenancy/tenants/?limit=5000");
    assert.equal(big.body.results.length, 120);
    const zero = await inv.call("GET", "/api/tenancy/tenants/?limit=0");
    assert.equal(zero.body.results.length, 120, "limit=0 means the maximum page");
    const junk = await inv.call("GET", "/api/tenancy/tenants/?limit=abc&offset=-3");
    assert.equal(junk.status, 200);
    assert.equal(junk.body.results.length, 50);
    const beyond = await inv.call("GET", "/api/tenancy/tenants/?offset=500");
    assert.deepEqual(beyond.body.results, []);
    // id-ordered pages are read straight from the store.
    const byId = await inv.call("GET", "/api/tenancy/tenants/?ordering=id&limit=3&offset=3");
    assert.deepEqual(byId.body.results.map((r: { name: string }) => r.name), [
      "t003",
      "t004",
      "t005",
    ]);
    assert.equal(byId.body.count, 120);
  } finally {
    inv.close();
  }
});

Deno.test("IP address owner filters and MAC/IP assignment to interfaces", async () => {
  const inv = await setup();
  try {
    const { c1 } = await seed(inv);
    const vm = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "ipvm",
      cluster: c1.id,
    });
    const eth0 = await inv.call("POST", "/api/virtualization/interfaces/", {
      virtual_machine: vm.body.id,
      name: "eth0",
    });
    const ip = await inv.call("POST", "/api/ipam/ip-addresses/", {
      address: "192.0.2.10/24",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: eth0.body.id,
    });
    assert.equal(ip.status, 201);
    assert.equal(ip.body.assigned_object.name, "eth0");
    assert.equal(ip.body.assigned_object.virtual_machine.name, "ipvm");
    await inv.call("POST", "/api/ipam/ip-addresses/", { address: "192.0.2.11/24" });
    const byIf = await inv.call("GET", `/api/ipam/ip-addresses/?vminterface_id=${eth0.body.id}`);
    assert.deepEqual(byIf.body.results.map((r: { address: string }) => r.address), [
      "192.0.2.10/24",
    ]);
    const byVm = await inv.call("GET", `/api/ipam/ip-addresses/?virtual_machine_id=${vm.body.id}`);
    assert.equal(byVm.body.count, 1);
    const byAddress = await inv.call("GET", "/api/ipam/ip-addresses/?address=192.0.2.11/24");
    assert.equal(byAddress.body.count, 1);
    const primary = await inv.call("PATCH", `/api/virtualization/virtual-machines/${vm.body.id}/`, {
      primary_ip4: ip.body.id,
    });
    assert.equal(primary.body.primary_ip4.address, "192.0.2.10/24");
    assert.deepEqual(primary.body.primary_ip4.family, { value: 4, label: "IPv4" });
    const badOwner = await inv.call("POST", "/api/ipam/ip-addresses/", {
      address: "192.0.2.12/24",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: 999,
    });
    assert.equal(badOwner.status, 400);
    assert.ok(badOwner.body.assigned_object_id);
    const badType = await inv.call("POST", "/api/ipam/ip-addresses/", {
      address: "192.0.2.13/24",
      assigned_object_type: "dcim.site",
      assigned_object_id: 1,
    });
    assert.equal(badType.status, 400);
    const badAddr = await inv.call("POST", "/api/ipam/ip-addresses/", { address: "300.1.1.1/24" });
    assert.equal(badAddr.status, 400);
    assert.ok(badAddr.body.address);
  } finally {
    inv.close();
  }
});

Deno.test("MAC filters take any spelling of an address, excluding (__n) and listing (__in) too", async () => {
  const inv = await setup();
  try {
    for (const mac of ["AA:BB:CC:00:00:01", "AA:BB:CC:00:00:02", "AA:BB:CC:00:00:03"]) {
      const r = await inv.call("POST", "/api/dcim/mac-addresses/", { mac_address: mac });
      assert.equal(r.status, 201, JSON.stringify(r.body));
    }
    const macs = async (query: string) => {
      const r = await inv.call("GET", `/api/dcim/mac-addresses/?${query}&ordering=mac_address`);
      assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
      return r.body.results.map((m: { mac_address: string }) => m.mac_address);
    };
    assert.deepEqual(await macs("mac_address=aa:bb:cc:00:00:01"), ["AA:BB:CC:00:00:01"]);
    assert.deepEqual(await macs("mac_address__n=aa-bb-cc-00-00-01"), [
      "AA:BB:CC:00:00:02",
      "AA:BB:CC:00:00:03",
    ]);
    assert.deepEqual(await macs("mac_address__in=aa:bb:cc:00:00:02,aa-bb-cc-00-00-03"), [
      "AA:BB:CC:00:00:02",
      "AA:BB:CC:00:00:03",
    ]);
  } finally {
    inv.close();
  }
});

Deno.test("paging: walking every page of any filtered, ordered list gives each match once, in order", async () => {
  const inv = await setup();
  try {
    const post = async (path: string, body: unknown) => {
      const r = await inv.call("POST", path, body);
      assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
      return r.body;
    };
    const ct = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
    const clusters = await post(
      "/api/virtualization/clusters/",
      ["a", "b", "c"].map((name) => ({ name, type: ct.id })),
    );
    const prod = await post("/api/extras/tags/", { name: "Prod", slug: "prod" });
    const statuses = ["active", "offline", "planned"];
    const wanted = Array.from({ length: 61 }, (_, i) => ({
      // Names out of id order, so name ordering and id ordering differ.
      name: `vm-${String((i * 37) % 61).padStart(2, "0")}`,
      cluster: clusters[i % 3].id,
      status: statuses[i % 3 === 0 ? 0 : i % 2 === 0 ? 1 : 2],
      vcpus: (i % 5) + 1,
      tags: i % 4 === 0 ? [prod.id] : [],
    }));
    const made: { id: number; name: string; cluster: { id: number }; status: { value: string } }[] =
      await post("/api/virtualization/virtual-machines/", wanted);
    const some = made.filter((_, i) => i % 3 !== 1).map((v) => v.id);
    const expect: Record<string, (v: (typeof made)[number], i: number) => boolean> = {
      "": () => true,
      [`cluster_id=${clusters[1].id}`]: (v) => v.cluster.id === clusters[1].id,
      [`cluster_id=${clusters[0].id}&cluster_id=${clusters[2].id}`]: (v) =>
        v.cluster.id !== clusters[1].id,
      [`cluster__id=${clusters[2].id}`]: (v) => v.cluster.id === clusters[2].id,
      "status=active": (v) => v.status.value === "active",
      [`status=offline&cluster_id=${clusters[2].id}`]: (v) =>
        v.status.value === "offline" && v.cluster.id === clusters[2].id,
      [`id__in=${some.join(",")}`]: (v) => some.includes(v.id),
      "tag=prod": (_, i) => i % 4 === 0,
      "name__ic=1": (v) => v.name.includes("1"),
      "q=vm-2": (v) => v.name.includes("vm-2"),
      "vcpus__gte=3": (_, i) => (i % 5) + 1 >= 3,
    };
    const orderings: Record<
      string,
      (a: (typeof made)[number], b: (typeof made)[number]) => number
    > = {
      // Virtual machines list by name unless asked otherwise (as in NetBox).
      "": (a, b) => a.name.localeCompare(b.name),
      "ordering=id": (a, b) => a.id - b.id,
      "ordering=-id": (a, b) => b.id - a.id,
      "ordering=name": (a, b) => a.name.localeCompare(b.name),
      "ordering=-name": (a, b) => b.name.localeCompare(a.name),
    };
    for (const [filter, matches] of Object.entries(expect)) {
      for (const [ordering, compare] of Object.entries(orderings)) {
        const query = [filter, ordering].filter(Boolean).join("&");
        const expected = made.filter(matches).sort(compare).map((v) => v.id);
        assert.ok(expected.length > 0, query);
        // A second page asked for first (nothing of this list read yet), as a client resuming.
        const second = await inv.call(
          "GET",
          `/api/virtualization/virtual-machines/?${query}&limit=7&offset=7`,
        );
        assert.deepEqual(
          second.body.results.map((r: { id: number }) => r.id),
          expected.slice(7, 14),
          `second page of ?${query}`,
        );
        // Page by page with a small limit, following `next` as pynetbox does.
        const walked: number[] = [];
        let url: string | null = `/api/virtualization/virtual-machines/?${query}&limit=7`;
        while (url) {
          const page = await inv.call("GET", url);
          assert.equal(page.status, 200, `${url}: ${JSON.stringify(page.body)}`);
          assert.equal(page.body.count, expected.length, `count of ${query}`);
          walked.push(...page.body.results.map((r: { id: number }) => r.id));
          url = page.body.next
            ? new URL(page.body.next).pathname + new URL(page.body.next).search
            : null;
        }
        assert.deepEqual(walked, expected, `pages of ?${query}`);
        // An offset past the end is an empty page with the same count.
        const past = await inv.call(
          "GET",
          `/api/virtualization/virtual-machines/?${query}&limit=7&offset=${expected.length}`,
        );
        assert.deepEqual([past.body.count, past.body.results], [expected.length, []], query);
      }
    }
  } finally {
    inv.close();
  }
});

Deno.test("empty filter values: dropped as NetBox's filter forms drop them; model filters refuse them", async () => {
  const inv = await setup();
  try {
    const { c1 } = await seed(inv);
    const cf = await inv.call("POST", "/api/extras/custom-fields/", {
      name: "owner_team",
      object_types: ["virtualization.virtualmachine"],
      type: "text",
    });
    assert.equal(cf.status, 201, JSON.stringify(cf.body));
    const all = await inv.call("GET", "/api/virtualization/virtual-machines/?limit=0");
    const byName = new Map<string, number>(
      all.body.results.map((r: { name: string; id: number }) => [r.name, r.id]),
    );
    const vm = (name: string) => `/api/virtualization/virtual-machines/${byName.get(name)}/`;
    for (const [name, serial] of [["web-01", "SN-1"], ["db-01", "SN-2"]]) {
      const r = await inv.call("PATCH", vm(name), {
        serial,
        custom_fields: { owner_team: name === "web-01" ? "" : "dba" },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    const q = async (query: string) => {
      const r = await inv.call(
        "GET",
        `/api/virtualization/virtual-machines/?${query}${query ? "&" : ""}ordering=name`,
      );
      assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
      return names(r.body);
    };
    const everyVm = ["cache", "db-01", "web-01", "web-02", "Web-10"];
    assert.deepEqual(await q(""), everyVm);
    // An empty value filters nothing: the filter is left out, on a text field (indexed or
    // not), a number, the id, a custom field and a custom filter alike, with any lookup.
    for (
      const query of [
        "serial=",
        "description=",
        "name__ic=",
        "name__n=",
        "description__ie=",
        "name__in=,",
        "vcpus=",
        "memory__gte=",
        "id=",
        "id__n=",
        "cf_owner_team=",
        "has_primary_ip=",
        "description__empty=",
        "tenant_id__isnull=",
        "serial=&description=&name__isw=",
      ]
    ) {
      assert.deepEqual(await q(query), everyVm, query);
    }
    // Beside a value, an empty one is dropped and the value filters.
    assert.deepEqual(await q("name=&name=web-01"), ["web-01"]);
    assert.deepEqual(await q("serial=SN-2&serial="), ["db-01"]);
    assert.deepEqual(await q("cf_owner_team=&cf_owner_team=dba"), ["db-01"]);
    assert.deepEqual(await q(`id=&id=${byName.get("cache")}`), ["cache"]);
    // Text values lose surrounding blanks (Django's CharField): a blank one asks for "".
    assert.deepEqual(await q("name=%20web-01%20"), ["web-01"]);
    assert.deepEqual(await q("serial=%20"), ["cache", "web-02", "Web-10"]);
    // `__empty` and `__isnull` read their last value; one that is no boolean filters nothing.
    assert.deepEqual(await q("description__empty=false"), ["Web-10"]);
    assert.deepEqual(await q("description__empty=false&description__empty="), everyVm);
    assert.deepEqual(await q("description__empty=&description__empty=false"), ["Web-10"]);
    assert.deepEqual(await q("tenant_id__isnull=maybe"), everyVm);
    // Filters over other objects never drop a value: an empty one is refused, with Django's
    // texts (an id: not a valid value; a slug or a tag: not a choice), even beside a good one.
    const refused = async (query: string) => {
      const r = await inv.call("GET", `/api/virtualization/virtual-machines/?${query}`);
      return [r.status, r.body];
    };
    const noChoice = "Select a valid choice.  is not one of the available choices.";
    assert.deepEqual(await refused("cluster_id="), [400, {
      cluster_id: ["\u201c\u201d is not a valid value."],
    }]);
    assert.deepEqual(await refused(`cluster_id=&cluster_id=${c1.id}`), [400, {
      cluster_id: ["\u201c\u201d is not a valid value."],
    }]);
    assert.deepEqual(await refused("cluster="), [400, { cluster: [noChoice] }]);
    assert.deepEqual(await refused("tag="), [400, { tag: [noChoice] }]);
    assert.deepEqual(await refused("tag_id="), [400, {
      tag_id: ["\u201c\u201d is not a valid value."],
    }]);
    // A choice is never empty either (NetBox's MultipleChoiceFilter keeps the value).
    assert.deepEqual(await refused("status="), [400, { status: [noChoice] }]);
  } finally {
    inv.close();
  }
});

Deno.test("tree filters: a region, site group, location or tenant group matches every node below it, on sites, devices, VMs, clusters", async () => {
  const inv = await setup();
  try {
    const post = async (path: string, body: unknown) => {
      const r = await inv.call("POST", `/api/${path}`, body);
      assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
      return r.body.id as number;
    };
    const region = (name: string, parent: number | null) =>
      post("dcim/regions/", { name, slug: name.toLowerCase(), parent });
    const eu = await region("EU", null);
    const de = await region("DE", eu);
    const ber = await region("BER", de);
    const us = await region("US", null);
    const g1 = await post("dcim/site-groups/", { name: "G1", slug: "g1" });
    const g2 = await post("dcim/site-groups/", { name: "G2", slug: "g2", parent: g1 });
    const tg = await post("tenancy/tenant-groups/", { name: "TG", slug: "tg" });
    const tg2 = await post("tenancy/tenant-groups/", { name: "TG2", slug: "tg2", parent: tg });
    const tenant = await post("tenancy/tenants/", { name: "T1", slug: "t1", group: tg2 });
    const site = (name: string, r: number | null, group: number | null = null) =>
      post("dcim/sites/", { name, slug: name, region: r, group });
    const sEu = await site("s-eu", eu);
    const sDe = await site("s-de", de);
    const sBer = await site("s-ber", ber, g2);
    const sUs = await site("s-us", us);
    await site("s-none", null);
    const l1 = await post("dcim/locations/", { name: "L1", slug: "l1", site: sBer });
    const l1a = await post("dcim/locations/", { name: "L1a", slug: "l1a", site: sBer, parent: l1 });
    const mf = await post("dcim/manufacturers/", { name: "M", slug: "m" });
    const dt = await post("dcim/device-types/", { manufacturer: mf, model: "X", slug: "x" });
    const role = await post("dcim/device-roles/", { name: "R", slug: "r", vm_role: true });
    const device = (name: string, s: number, extra: Record<string, unknown> = {}) =>
      post("dcim/devices/", { name, site: s, device_type: dt, role, ...extra });
    await device("d-ber", sBer, { location: l1a, tenant });
    await device("d-de", sDe);
    await device("d-us", sUs);
    const type = await post("virtualization/cluster-types/", { name: "PVE", slug: "pve" });
    const cluster = (name: string, scope_type: string | null, scope_id: number | null) =>
      post("virtualization/clusters/", { name, type, scope_type, scope_id });
    await cluster("c-de", "dcim.region", de);
    await cluster("c-ber", "dcim.site", sBer);
    await cluster("c-loc", "dcim.location", l1);
    await cluster("c-us", "dcim.site", sUs);
    const free = await cluster("c-none", null, null);
    await post("virtualization/virtual-machines/", { name: "vm-ber", site: sBer, cluster: null });
    await post("virtualization/virtual-machines/", { name: "vm-eu", site: sEu });
    await post("virtualization/virtual-machines/", { name: "vm-none", cluster: free });

    const list = async (path: string, query: string) => {
      const r = await inv.call("GET", `/api/${path}?${query}&ordering=name&limit=0`);
      assert.equal(r.status, 200, `${path}?${query}: ${JSON.stringify(r.body)}`);
      return names(r.body);
    };
    // A site's own region and group.
    assert.deepEqual(await list("dcim/sites/", `region_id=${eu}`), ["s-ber", "s-de", "s-eu"]);
    assert.deepEqual(await list("dcim/sites/", "region=de"), ["s-ber", "s-de"]);
    assert.deepEqual(await list("dcim/sites/", `region_id=${ber}`), ["s-ber"]);
    assert.deepEqual(await list("dcim/sites/", `region_id__n=${eu}`), ["s-none", "s-us"]);
    assert.deepEqual(await list("dcim/sites/", `group_id=${g1}`), ["s-ber"]);
    // Across the site: devices, VMs, locations.
    assert.deepEqual(await list("dcim/devices/", `region_id=${eu}`), ["d-ber", "d-de"]);
    assert.deepEqual(await list("dcim/devices/", "region=eu&region=us"), ["d-ber", "d-de", "d-us"]);
    assert.deepEqual(await list("dcim/devices/", `region_id__n=${de}`), ["d-us"]);
    assert.deepEqual(await list("dcim/devices/", "site_group=g1"), ["d-ber"]);
    // A tree filter takes no lookup but `__n` (NetBox's FILTER_TREENODE_NEGATION_LOOKUP_MAP):
    // `region__ie` is no filter of NetBox's, ignored as unknown filters are.
    assert.deepEqual(await list("dcim/devices/", "region__ie=eu"), ["d-ber", "d-de", "d-us"]);
    assert.deepEqual(await list("dcim/devices/", `location_id=${l1}`), ["d-ber"]);
    assert.deepEqual(await list("dcim/devices/", "location=l1"), ["d-ber"]);
    assert.deepEqual(await list("dcim/devices/", `tenant_group_id=${tg}`), ["d-ber"]);
    assert.deepEqual(await list("virtualization/virtual-machines/", `region_id=${de}`), [
      "vm-ber",
    ]);
    assert.deepEqual(await list("virtualization/virtual-machines/", `region_id=${eu}`), [
      "vm-ber",
      "vm-eu",
    ]);
    // `null`: no region at the end of the path, a VM without a site included.
    assert.deepEqual(await list("virtualization/virtual-machines/", "region_id=null"), [
      "vm-none",
    ]);
    assert.deepEqual(await list("dcim/sites/", "region_id=null"), ["s-none"]);
    assert.deepEqual(await list("dcim/locations/", `region_id=${de}`), ["L1", "L1a"]);
    // Within a tree: the nodes below one.
    assert.deepEqual(await list("dcim/regions/", `ancestor_id=${eu}`), ["BER", "DE"]);
    assert.deepEqual(await list("dcim/regions/", "ancestor=de"), ["BER"]);
    assert.deepEqual(await list("dcim/locations/", `ancestor_id=${l1}`), ["L1a"]);
    assert.deepEqual(await list("tenancy/tenants/", `group_id=${tg}`), ["T1"]);
    // Through a scope: a cluster scoped to a site is in the site's region, one scoped to a
    // location in its site's.
    assert.deepEqual(await list("virtualization/clusters/", `region_id=${eu}`), [
      "c-ber",
      "c-de",
      "c-loc",
    ]);
    assert.deepEqual(await list("virtualization/clusters/", "region=ber"), ["c-ber", "c-loc"]);
    assert.deepEqual(await list("virtualization/clusters/", `site_group_id=${g1}`), [
      "c-ber",
      "c-loc",
    ]);
    assert.deepEqual(await list("virtualization/clusters/", `location_id=${l1}`), ["c-loc"]);
    assert.deepEqual(await list("virtualization/clusters/", `location_id=${l1a}`), []);
    assert.deepEqual(await list("virtualization/clusters/", `region_id__n=${de}`), [
      "c-none",
      "c-us",
    ]);
    // Through two references (an interface's device's site), and through an m2m (a contact's
    // groups).
    const dUs = (await inv.call("GET", "/api/dcim/devices/?name=d-us")).body.results[0].id;
    await post("dcim/interfaces/", { device: dUs, name: "eth0", type: "1000base-t" });
    const dBer = (await inv.call("GET", "/api/dcim/devices/?name=d-ber")).body.results[0].id;
    await post("dcim/interfaces/", { device: dBer, name: "eth1", type: "1000base-t" });
    assert.deepEqual(await list("dcim/interfaces/", `region_id=${eu}`), ["eth1"]);
    assert.deepEqual(await list("dcim/interfaces/", "site_group=g1"), ["eth1"]);
    const cg = await post("tenancy/contact-groups/", { name: "Ops", slug: "ops" });
    const cg2 = await post("tenancy/contact-groups/", { name: "Night", slug: "night", parent: cg });
    await post("tenancy/contacts/", { name: "Ada", groups: [cg2] });
    await post("tenancy/contacts/", { name: "Bob", groups: [] });
    assert.deepEqual(await list("tenancy/contacts/", `group_id=${cg}`), ["Ada"]);
    assert.deepEqual(await list("tenancy/contacts/", "group__n=ops"), ["Bob"]);
    // A node that does not exist, or an empty value, is refused as NetBox refuses it.
    for (const path of ["dcim/sites/", "dcim/devices/", "virtualization/clusters/"]) {
      const missing = await inv.call("GET", `/api/${path}?region_id=9999`);
      assert.deepEqual([missing.status, missing.body], [400, {
        region_id: ["Select a valid choice. 9999 is not one of the available choices."],
      }], path);
      const empty = await inv.call("GET", `/api/${path}?region=`);
      assert.deepEqual([empty.status, empty.body], [400, {
        region: ["Select a valid choice.  is not one of the available choices."],
      }], path);
      const unknown = await inv.call("GET", `/api/${path}?region=nope`);
      assert.deepEqual([unknown.status, unknown.body], [400, {
        region: ["Select a valid choice. nope is not one of the available choices."],
      }], path);
    }
  } finally {
    inv.close();
  }
});
