import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";

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
    const bad = await inv.call("GET", "/api/virtualization/virtual-machines/?cluster_id=abc");
    assert.equal(bad.status, 400);
    assert.ok(Array.isArray(bad.body.cluster_id));
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
    const badNum = await inv.call("GET", "/api/virtualization/virtual-machines/?memory__gt=lots");
    assert.deepEqual(badNum.body, { memory__gt: ["Enter a number."] });
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
      [16384, 4096, 2048, 1024, null],
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
