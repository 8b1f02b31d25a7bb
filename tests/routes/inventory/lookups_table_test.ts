/**
 * Every filter lookup per field type, read back through HTTP as a table: each row is a query
 * and the names it must list. Each row is also read in every order a client asks for (by name
 * both ways, by id both ways, the default) and walked two objects a page, so the list's
 * paths (index pages, keyset pages, candidate ids, scans, the sorted-ids cache) all answer it.
 */
import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";

const VMS = "/api/virtualization/virtual-machines/";

interface World {
  alpha: number;
  beta: number;
  acme: number;
  prod: number;
  web: number;
  /** VM name → id (created in this order: web-01, web-02, db-01, Web-10, cache). */
  ids: Record<string, number>;
}

/** A VM of the table: its cluster by name, the tenant (Acme) or none, its tags by slug. */
interface VmSpec {
  name: string;
  cluster: "alpha" | "beta";
  tenant?: true;
  tags?: string[];
  [field: string]: unknown;
}

/** The table's VMs, created in this order. */
const TABLE_VMS: VmSpec[] = [
  {
    name: "web-01",
    cluster: "alpha",
    tenant: true,
    status: "active",
    vcpus: 2,
    memory: 2048,
    serial: "SN-A1",
    description: "front",
    tags: ["prod", "web"],
    custom_fields: { owner: "Ops Team", vmid: 101 },
  },
  {
    name: "web-02",
    cluster: "alpha",
    status: "offline",
    vcpus: 4,
    memory: 4096,
    serial: "sn-b2",
    tags: ["web"],
    custom_fields: { owner: "ops", vmid: 102 },
  },
  {
    name: "db-01",
    cluster: "beta",
    tenant: true,
    status: "active",
    vcpus: 8,
    memory: 16384,
    serial: "SN-C3",
    description: "primary db",
    tags: ["prod"],
    custom_fields: { owner: "DBA", vmid: 200 },
  },
  { name: "Web-10", cluster: "beta", status: "planned", description: "the big one" },
  { name: "cache", cluster: "alpha", status: "active", vcpus: 0.5, memory: 1024 },
];

async function seed(inv: Inv, specs: VmSpec[] = TABLE_VMS): Promise<World> {
  const post = async (path: string, body: unknown) => {
    const r = await inv.call("POST", path, body);
    assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
  const alpha = await post("/api/virtualization/clusters/", { name: "alpha", type: type.id });
  const beta = await post("/api/virtualization/clusters/", { name: "beta", type: type.id });
  const acme = await post("/api/tenancy/tenants/", { name: "Acme", slug: "acme" });
  const prod = await post("/api/extras/tags/", { name: "Prod", slug: "prod" });
  const web = await post("/api/extras/tags/", { name: "Web", slug: "web" });
  await post("/api/extras/custom-fields/", {
    name: "owner",
    object_types: ["virtualization.virtualmachine"],
    type: "text",
  });
  await post("/api/extras/custom-fields/", {
    name: "vmid",
    object_types: ["virtualization.virtualmachine"],
    type: "integer",
  });
  const clusters = { alpha: alpha.id, beta: beta.id };
  const tags: Record<string, number> = { prod: prod.id, web: web.id };
  const vms = await post(
    VMS,
    specs.map(({ cluster, tenant, tags: slugs, ...rest }) => ({
      ...rest,
      cluster: clusters[cluster],
      ...(tenant ? { tenant: acme.id } : {}),
      ...(slugs ? { tags: slugs.map((slug) => tags[slug]) } : {}),
    })),
  );
  const ids: Record<string, number> = {};
  for (const vm of vms) ids[vm.name] = vm.id;
  return { alpha: alpha.id, beta: beta.id, acme: acme.id, prod: prod.id, web: web.id, ids };
}

/** The VMs' names in NetBox's natural, case-insensitive name order. */
const BY_NAME = ["cache", "db-01", "web-01", "web-02", "Web-10"];

function rows(w: World): Array<[string, string[]]> {
  const { ids } = w;
  return [
    // Text: every lookup and its negation; several values of a positive lookup are OR'd, of a
    // negated one all excluded.
    ["name=web-01", ["web-01"]],
    ["name=web-01&name=cache", ["cache", "web-01"]],
    ["name=WEB-01", []],
    ["name__n=web-01", ["cache", "db-01", "web-02", "Web-10"]],
    ["name__n=web-01&name__n=cache", ["db-01", "web-02", "Web-10"]],
    ["name__ic=EB", ["web-01", "web-02", "Web-10"]],
    ["name__ic=eb&name__ic=ach", ["cache", "web-01", "web-02", "Web-10"]],
    ["name__nic=EB", ["cache", "db-01"]],
    ["name__nic=eb&name__nic=ach", ["db-01"]],
    ["name__ie=WEB-01", ["web-01"]],
    ["name__nie=WEB-01", ["cache", "db-01", "web-02", "Web-10"]],
    ["name__isw=WE", ["web-01", "web-02", "Web-10"]],
    ["name__isw=eb", []],
    ["name__nisw=we", ["cache", "db-01"]],
    ["name__iew=-01", ["db-01", "web-01"]],
    ["name__iew=web", []],
    ["name__niew=-01", ["cache", "web-02", "Web-10"]],
    ["name__regex=^w.b-0[12]$", ["web-01", "web-02"]],
    ["name__regex=^W", ["Web-10"]],
    ["name__iregex=^W", ["web-01", "web-02", "Web-10"]],
    ["name__regex=^c&name__regex=0$", ["cache", "Web-10"]],
    ["name__in=web-01,cache", ["cache", "web-01"]],
    ["name__in=web-01&name__in=cache,nope", ["cache", "web-01"]],
    ["name__empty=false", BY_NAME],
    ["name__empty=true", []],
    ["description__empty=true", ["cache", "web-02"]],
    ["description__empty=false", ["db-01", "web-01", "Web-10"]],
    ["description__ic=BIG", ["Web-10"]],
    ["description=front", ["web-01"]],
    // An indexed text field (serial): exact values are read from its index, case kept.
    ["serial=SN-A1", ["web-01"]],
    ["serial=sn-a1", []],
    ["serial=SN-A1&serial=SN-C3", ["db-01", "web-01"]],
    ["serial__in=sn-b2,SN-C3", ["db-01", "web-02"]],
    ["serial__n=SN-A1", ["cache", "db-01", "web-02", "Web-10"]],
    ["serial__ie=sn-a1", ["web-01"]],
    ["serial__nie=SN-B2", ["cache", "db-01", "web-01", "Web-10"]],
    ["serial__empty=true", ["cache", "Web-10"]],
    ["serial__isw=sn-", ["db-01", "web-01", "web-02"]],
    // Integer: boundaries on both sides, nulls never in a comparison, kept by `__n`.
    ["memory=2048", ["web-01"]],
    ["memory=2048&memory=1024", ["cache", "web-01"]],
    ["memory__n=2048", ["cache", "db-01", "web-02", "Web-10"]],
    ["memory__n=2048&memory__n=1024", ["db-01", "web-02", "Web-10"]],
    ["memory__gt=2048", ["db-01", "web-02"]],
    ["memory__gte=2048", ["db-01", "web-01", "web-02"]],
    ["memory__lt=4096", ["cache", "web-01"]],
    ["memory__lte=4096", ["cache", "web-01", "web-02"]],
    ["memory__lt=0", []],
    ["memory__gte=2048&memory__lte=4096", ["web-01", "web-02"]],
    ["memory__in=1024,4096", ["cache", "web-02"]],
    ["memory__isnull=true", ["Web-10"]],
    ["memory__isnull=false", ["cache", "db-01", "web-01", "web-02"]],
    ["memory__empty=true", ["Web-10"]],
    // Decimal.
    ["vcpus=0.5", ["cache"]],
    ["vcpus__gt=2", ["db-01", "web-02"]],
    ["vcpus__gte=2", ["db-01", "web-01", "web-02"]],
    ["vcpus__lt=2", ["cache"]],
    ["vcpus__lte=2", ["cache", "web-01"]],
    ["vcpus__lt=0.5", []],
    ["vcpus__n=8", ["cache", "web-01", "web-02", "Web-10"]],
    // Choice.
    ["status=active", ["cache", "db-01", "web-01"]],
    ["status=offline&status=planned", ["web-02", "Web-10"]],
    ["status__in=offline,planned", ["web-02", "Web-10"]],
    ["status__n=active", ["web-02", "Web-10"]],
    ["status__n=active&status__n=planned", ["web-02"]],
    // Ids.
    [`id=${ids["db-01"]}`, ["db-01"]],
    [`id=${ids["db-01"]}&id=${ids.cache}`, ["cache", "db-01"]],
    [`id__in=${ids["web-02"]},${ids.cache}`, ["cache", "web-02"]],
    [`id__n=${ids["db-01"]}`, ["cache", "web-01", "web-02", "Web-10"]],
    [`id__n=${ids["db-01"]}&id__n=${ids["web-01"]}`, ["cache", "web-02", "Web-10"]],
    [`id__gt=${ids["db-01"]}`, ["cache", "Web-10"]],
    [`id__gte=${ids["db-01"]}`, ["cache", "db-01", "Web-10"]],
    [`id__lt=${ids["db-01"]}`, ["web-01", "web-02"]],
    [`id__lte=${ids["db-01"]}`, ["db-01", "web-01", "web-02"]],
    [`id__gt=${ids["web-01"]}&cluster_id=${w.alpha}`, ["cache", "web-02"]],
    [`id__gte=${ids["web-02"]}&cluster_id=${w.alpha}`, ["cache", "web-02"]],
    [`id__gt=${ids["web-01"]}&status=active`, ["cache", "db-01"]],
    [`id__gte=${ids["db-01"]}&tag=prod`, ["db-01"]],
    [`id__gt=${ids.cache}`, []],
    // References: by id, by natural key, excluded, null, several values OR'd.
    [`cluster_id=${w.alpha}`, ["cache", "web-01", "web-02"]],
    ["cluster=beta", ["db-01", "Web-10"]],
    [`cluster_id=${w.alpha}&cluster_id=${w.beta}`, BY_NAME],
    [`cluster_id__n=${w.alpha}`, ["db-01", "Web-10"]],
    [`cluster_id__n=${w.alpha}&cluster_id__n=${w.beta}`, []],
    ["cluster__n=beta", ["cache", "web-01", "web-02"]],
    [`tenant_id=${w.acme}`, ["db-01", "web-01"]],
    ["tenant_id=null", ["cache", "web-02", "Web-10"]],
    [`tenant_id=null&tenant_id=${w.acme}`, BY_NAME],
    ["tenant_id__n=null", ["db-01", "web-01"]],
    [`tenant_id__n=${w.acme}`, ["cache", "web-02", "Web-10"]],
    ["tenant__isnull=true", ["cache", "web-02", "Web-10"]],
    ["tenant_id__isnull=false", ["db-01", "web-01"]],
    [`tenant_id=${w.acme}&cluster_id=${w.alpha}`, ["web-01"]],
    [`tenant_id=${w.acme}&status=active&memory__gt=4096`, ["db-01"]],
    // Tags: all named must be present; `__n` excludes any.
    ["tag=prod", ["db-01", "web-01"]],
    ["tag=prod&tag=web", ["web-01"]],
    [`tag_id=${w.web}`, ["web-01", "web-02"]],
    [`tag_id=${w.web}&tag_id=${w.prod}`, ["web-01"]],
    ["tag__n=prod", ["cache", "web-02", "Web-10"]],
    ["tag__n=prod&tag__n=web", ["cache", "Web-10"]],
    [`tag_id__n=${w.web}`, ["cache", "db-01", "Web-10"]],
    ["tag__isnull=true", ["cache", "Web-10"]],
    ["tag__isnull=false", ["db-01", "web-01", "web-02"]],
    // Custom fields.
    ["cf_owner=ops", ["web-02"]],
    ["cf_owner__ic=OPS", ["web-01", "web-02"]],
    ["cf_owner__nic=ops", ["cache", "db-01", "Web-10"]],
    ["cf_owner__ie=dba", ["db-01"]],
    // An unset value holds no text: `null` is not its text (SQL's NULL matches no LIKE).
    ["cf_owner__ic=nul", []],
    ["cf_owner__isw=ops", ["web-01", "web-02"]],
    ["cf_owner__iew=TEAM", ["web-01"]],
    ["cf_owner__n=ops", ["cache", "db-01", "web-01", "Web-10"]],
    ["cf_owner__isnull=true", ["cache", "Web-10"]],
    ["cf_owner__isnull=false", ["db-01", "web-01", "web-02"]],
    ["cf_owner__empty=true", ["cache", "Web-10"]],
    ["cf_vmid=102", ["web-02"]],
    ["cf_vmid__gte=102", ["db-01", "web-02"]],
    ["cf_vmid__gt=102", ["db-01"]],
    ["cf_vmid__lt=200", ["web-01", "web-02"]],
    ["cf_vmid__lte=101", ["web-01"]],
    ["cf_vmid__in=101,200", ["db-01", "web-01"]],
    // Search.
    ["q=web", ["web-01", "web-02", "Web-10"]],
    ["q=big", ["Web-10"]],
    ["q=sn-c", ["db-01"]],
    ["q=web&status=active", ["web-01"]],
  ];
}

// deno-lint-ignore no-explicit-any
type Page = { count: number; next: string | null; previous: string | null; results: any[] };

async function list(inv: Inv, query: string): Promise<Page> {
  const r = await inv.call("GET", `${VMS}?${query}`);
  assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Every page of `query`, two objects each, following `next`; each page's count checked. */
async function walk(inv: Inv, query: string, count: number): Promise<string[]> {
  const seen: string[] = [];
  let page = await list(inv, `${query}&limit=2`);
  for (let guard = 0; guard < 10; guard++) {
    assert.equal(page.count, count, `${query}: count at offset ${seen.length}`);
    seen.push(...page.results.map((r) => r.name));
    if (page.next === null) break;
    assert.ok(page.results.length === 2, `${query}: a short page before the end`);
    const next = new URL(page.next);
    page = await list(inv, next.searchParams.toString());
  }
  return seen;
}

Deno.test("lookups table: every lookup per field type lists the right objects, in every order and page by page", async () => {
  const inv = await setup();
  try {
    const w = await seed(inv);
    const byId = (names: string[]) => [...names].sort((a, b) => w.ids[a] - w.ids[b]);
    for (const [query, expected] of rows(w)) {
      const wanted = BY_NAME.filter((n) => expected.includes(n));
      assert.deepEqual(wanted.length, expected.length, `${query}: a name the world lacks`);
      // A page past the first, asked before any other page of its order (no sorted ids kept).
      const late = await list(inv, `${query}&ordering=-name&limit=2&offset=1`);
      assert.deepEqual(late.results.map((r) => r.name), [...wanted].reverse().slice(1, 3), query);
      assert.equal(late.count, wanted.length, `${query}: count at offset 1`);
      const asked: Array<[string, string[]]> = [
        ["", wanted],
        ["ordering=name", wanted],
        ["ordering=-name", [...wanted].reverse()],
        ["ordering=id", byId(wanted)],
        ["ordering=-id", byId(wanted).reverse()],
      ];
      for (const [order, names] of asked) {
        const q = order ? `${query}&${order}` : query;
        const whole = await list(inv, q);
        assert.deepEqual(whole.results.map((r) => r.name), names, q);
        assert.equal(whole.count, names.length, `${q}: count`);
        assert.deepEqual(await walk(inv, q, names.length), names, `${q}: page by page`);
      }
    }
  } finally {
    inv.close();
  }
});

Deno.test("created and last_updated filter as NetBox's date/time filters: exact, __n, __gt, __gte, __lt, __lte, as instants", async () => {
  let clock = Date.parse("2026-05-01T10:00:00Z");
  const inv = await setup({}, { now: () => clock });
  try {
    const post = async (name: string, at: string) => {
      clock = Date.parse(at);
      const r = await inv.call("POST", "/api/tenancy/tenants/", { name, slug: name });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body;
    };
    const a = await post("a", "2026-05-01T10:00:00Z");
    await post("b", "2026-05-02T00:00:00Z");
    await post("c", "2026-05-02T18:00:00Z");
    clock = Date.parse("2026-05-03T12:30:00.500Z");
    const patched = await inv.call("PATCH", `/api/tenancy/tenants/${a.id}/`, { description: "x" });
    assert.equal(patched.body.last_updated, "2026-05-03T12:30:00.500Z");
    const q = async (query: string) => {
      const r = await inv.call("GET", `/api/tenancy/tenants/?${query}`);
      assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
      return r.body.results.map((t: { name: string }) => t.name);
    };
    const table: Array<[string, string[]]> = [
      ["created__gte=2026-05-02", ["b", "c"]],
      ["created__gt=2026-05-02", ["c"]],
      ["created__lt=2026-05-02", ["a"]],
      ["created__lte=2026-05-02T00:00:00Z", ["a", "b"]],
      ["created=2026-05-02", ["b"]],
      ["created=2026-05-02T00:00:00.000000Z", ["b"]],
      ["created=2026-05-02&created=2026-05-01T10:00", ["a", "b"]],
      ["created__n=2026-05-02", ["a", "c"]],
      ["created__n=2026-05-02&created__n=2026-05-02 18:00:00", ["a"]],
      // Another zone names the same instant: 02:00 at +02:00 is midnight UTC.
      ["created__gte=2026-05-02T02:00:00%2B02:00", ["b", "c"]],
      ["created__gte=2026-05-02 01:59:59%2B0200", ["b", "c"]],
      ["created__lt=2026-05-01T11:00:00Z&created__lt=2026-05-02T00:00:01Z", ["a", "b"]],
      ["last_updated__gte=2026-05-03", ["a"]],
      ["last_updated__gt=2026-05-03T12:30:00.500Z", []],
      ["last_updated__gte=2026-05-03T12:30:00.5Z", ["a"]],
      ["last_updated__lt=2026-05-03", ["b", "c"]],
      ["last_updated__lte=2026-05-02T18:00:00Z", ["b", "c"]],
      ["last_updated__lt=2026-05-02T18:00:00Z", ["b"]],
      // Lookups NetBox's date/time filter has not are no filter, as unknown filters are.
      ["created__ic=2026-05-02", ["a", "b", "c"]],
      ["created__gte=", ["a", "b", "c"]],
      ["last_updated__gte=2026-05-02&ordering=-last_updated", ["a", "c", "b"]],
      ["created__gt=2026-05-01&ordering=-created&limit=1&offset=1", ["b"]],
    ];
    for (const [query, names] of table) assert.deepEqual(await q(query), names, query);
    for (const bad of ["yesterday", "2026-13-45", "2026-05-02T25:00", "1714521600"]) {
      const r = await inv.call("GET", `/api/tenancy/tenants/?created__gte=${bad}`);
      assert.deepEqual([r.status, r.body], [400, {
        created__gte: ["Enter a valid date/time."],
      }], bad);
    }
  } finally {
    inv.close();
  }
});

/** Names, count and pages of one list, in the four orders a client asks for. */
async function reading(inv: Inv, query: string) {
  const out: Record<string, unknown> = {};
  for (const order of ["", "ordering=-name", "ordering=id", "ordering=-id"]) {
    const q = order ? `${query}&${order}` : query;
    const r = await inv.call("GET", `${VMS}?${q}`);
    if (r.status !== 200) {
      out[order] = [r.status, r.body];
      continue;
    }
    const names = r.body.results.map((vm: { name: string }) => vm.name);
    assert.deepEqual(await walk(inv, q, r.body.count), names, `${q}: page by page`);
    out[order] = [r.body.count, names];
  }
  return out;
}

/** Each object's related counts, by name. */
async function counts(inv: Inv) {
  const out: Record<string, unknown> = {};
  for (
    const [path, field] of [
      ["/api/virtualization/clusters/", "virtualmachine_count"],
      ["/api/tenancy/tenants/", "virtualmachine_count"],
      ["/api/extras/tags/", "tagged_items"],
    ]
  ) {
    const r = await inv.call("GET", `${path}?limit=1000`);
    for (const o of r.body.results) out[`${path}${o.name}`] = o[field];
  }
  return out;
}

Deno.test("after updates, renames, retags and deletes every list and count reads as a fresh inventory holding the same objects", async () => {
  // The inventory written to: the table's objects, then changed.
  const used = await setup();
  // The same final objects, created as they end (in the same id order).
  const fresh = await setup();
  try {
    const w = await seed(used);
    const vm = (name: string) => `${VMS}${w.ids[name]}/`;
    const patch = async (path: string, body: unknown) => {
      const r = await used.call("PATCH", path, body);
      assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
    };
    await patch(vm("web-01"), {
      cluster: w.beta,
      tags: [w.web],
      memory: 3000,
      serial: "SN-A9",
      custom_fields: { owner: null },
    });
    await patch(vm("db-01"), {
      tenant: null,
      status: "offline",
      vcpus: 1,
      custom_fields: { owner: "ops", vmid: 100 },
    });
    await patch(VMS, [
      { id: w.ids["web-02"], cluster: w.beta, description: "moved", tags: [] },
      { id: w.ids.cache, name: "a-cache", tags: [w.prod, w.web], tenant: w.acme },
    ]);
    assert.equal((await used.call("DELETE", vm("Web-10"))).status, 204);
    const api = await used.call("POST", VMS, {
      name: "api-01",
      cluster: w.alpha,
      tenant: w.acme,
      status: "planned",
      memory: 2048,
      serial: "SN-A1",
      tags: [w.web],
      custom_fields: { owner: "Ops Team", vmid: 101 },
    });
    assert.equal(api.status, 201);
    w.ids["api-01"] = api.body.id;

    const f = await seed(fresh, [
      {
        name: "web-01",
        cluster: "beta",
        tenant: true,
        status: "active",
        vcpus: 2,
        memory: 3000,
        serial: "SN-A9",
        description: "front",
        tags: ["web"],
        custom_fields: { owner: null, vmid: 101 },
      },
      {
        name: "web-02",
        cluster: "beta",
        status: "offline",
        vcpus: 4,
        memory: 4096,
        serial: "sn-b2",
        description: "moved",
        custom_fields: { owner: "ops", vmid: 102 },
      },
      {
        name: "db-01",
        cluster: "beta",
        status: "offline",
        vcpus: 1,
        memory: 16384,
        serial: "SN-C3",
        description: "primary db",
        tags: ["prod"],
        custom_fields: { owner: "ops", vmid: 100 },
      },
      {
        name: "a-cache",
        cluster: "alpha",
        tenant: true,
        status: "active",
        vcpus: 0.5,
        memory: 1024,
        tags: ["prod", "web"],
      },
      {
        name: "api-01",
        cluster: "alpha",
        tenant: true,
        status: "planned",
        memory: 2048,
        serial: "SN-A1",
        tags: ["web"],
        custom_fields: { owner: "Ops Team", vmid: 101 },
      },
    ]);
    // The rows name the renamed cache by its old name.
    w.ids.cache = w.ids["a-cache"] ?? w.ids.cache;
    f.ids.cache = f.ids["a-cache"];
    // Both hold the same objects.
    const whole = async (inv: Inv) =>
      (await list(inv, "ordering=id&limit=1000")).results.map((r) => {
        const { id: _id, url: _url, display_url: _d, created: _c, last_updated: _l, ...rest } = r;
        return rest;
      });
    assert.deepEqual(await whole(used), await whole(fresh));
    assert.deepEqual(await counts(used), await counts(fresh));
    const usedRows = rows(w);
    const freshRows = rows(f);
    for (const [i, [query]] of usedRows.entries()) {
      assert.deepEqual(await reading(used, query), await reading(fresh, freshRows[i][0]), query);
    }
  } finally {
    used.close();
    fresh.close();
  }
});
