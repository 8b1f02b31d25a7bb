/**
 * A list request's edges as a table read through HTTP: filter values the inventory refuses (the
 * whole error body, every refused parameter named at once), values it ignores as NetBox does
 * (empty values, unknown filters and lookups, booleans that are no boolean), and paging
 * parameters out of range with the `next` / `previous` links each page answers.
 */
import assert from "node:assert/strict";
import { setup } from "./_setup.ts";

const VMS = "/api/virtualization/virtual-machines/";
const ALL = [1, 2, 3, 4, 5];
const choice = (v: string) => `Select a valid choice. ${v} is not one of the available choices.`;

/** query → 400 and the whole error body. */
const REFUSED: Array<[string, Record<string, string[]>]> = [
  ["id=abc", { id: ["Enter a whole number."] }],
  ["id__in=1,x", { id__in: ["Enter a whole number."] }],
  ["vcpus=abc", { vcpus: ["Enter a number."] }],
  ["memory=1.5", { memory: ["Enter a whole number."] }],
  ["status=bogus", { status: [choice("bogus")] }],
  ["status=", { status: [choice("")] }],
  // A choice is compared as sent: only text fields lose surrounding blanks (Django's CharField).
  ["status=%20offline%20", { status: [choice(" offline ")] }],
  ["cluster_id=abc", { cluster_id: ["\u201cabc\u201d is not a valid value."] }],
  ["cluster_id=", { cluster_id: ["\u201c\u201d is not a valid value."] }],
  ["cluster_id=99999", { cluster_id: [choice("99999")] }],
  ["cluster_id=99999999999999999999", { cluster_id: [choice("99999999999999999999")] }],
  ["cluster=nope", { cluster: [choice("nope")] }],
  ["tag=", { tag: [choice("")] }],
  ["tag__any=nope", { tag__any: [choice("nope")] }],
  ["created=notadate", { created: ["Enter a valid date/time."] }],
  ["name__regex=(", {
    name__regex: [
      "Unsupported regular expression: it must be valid and may not use backreferences, " +
      "lookaround or \\b (patterns run in a linear-time matcher).",
    ],
  }],
  ["name__regex=a&name__regex=b&name__regex=c&name__regex=d&name__regex=e&name__regex=f", {
    name__regex: ["At most 5 __regex / __iregex filter values per request."],
  }],
  ["id=abc&status=bogus&memory=x", {
    id: ["Enter a whole number."],
    status: [choice("bogus")],
    memory: ["Enter a whole number."],
  }],
];

/** query → the ids listed (VMs 1–5: see the world below). */
const LISTED: Array<[string, number[]]> = [
  ["id=", ALL],
  ["id__in=,", ALL],
  ["id__in=2,,4", [2, 4]],
  ["status__ic=ac", [1, 2, 3, 5]],
  ["status__n=active", [4]],
  ["status__in=offline", [4]],
  ["status=active&status=offline", ALL],
  ["cluster=alpha", ALL],
  ["tag=nope", []],
  ["tag=prod", [1, 2]],
  ["tag=prod&tag=nope", []],
  ["tag__n=nope", ALL],
  ["tag__n=prod", [3, 4, 5]],
  ["created__ic=x", ALL],
  ["last_updated__gte=", ALL],
  // A date is its midnight in UTC; a zone as Z, +02:00 or +0200 (Django's DateTimeField).
  ["created__gte=2000-01-01", ALL],
  ["created__lt=2000-01-01T00:00:00Z", []],
  ["created__gt=2000-01-01%2000:00:00%2B02:00", ALL],
  ["last_updated__lt=2000-01-01T00:00%2B0200", []],
  ["name__isnull=maybe", ALL],
  ["name__isnull=", ALL],
  ["name=%20vm3%20", [3]],
  ["tenant_id=null", [2, 3, 4, 5]],
  ["tenant_id__isnull=true", [2, 3, 4, 5]],
  ["tenant_id__isnull=false", [1]],
  ["tenant=acme", [1]],
  ["unknown=1", ALL],
  ["memory__gte=", ALL],
  ["memory__in=,", ALL],
  ["memory__in=1024,,2048", [1, 2]],
  ["serial__in=,", ALL],
  ["memory__gte=2000", [2]],
  ["memory__lt=2000", [1]],
  ["memory__empty=true", [3, 4, 5]],
  ["memory__empty=false&memory__empty=true", [3, 4, 5]],
  // A lookup NetBox 4.6 does not give that kind of filter is no filter (ignored, as unknown
  // ones): text takes no comparison, a number no text lookup, a reference only `__n`.
  ["name__gte=vm3", ALL],
  ["status__lt=offline", ALL],
  ["memory__ic=10", ALL],
  ["id__isw=1", ALL],
  ["tenant__ic=ac", ALL],
  ["tenant_id__gt=0", ALL],
  ["tenant__empty=true", ALL],
  ["tag__isw=pro", ALL],
  ["tenant__n=acme", [2, 3, 4, 5]],
  // `__any`: any of the tags named (NetBox's TagFilter), where the plain filter wants all; an
  // unknown slug is a 400 there (above). No other filter has it.
  ["tag__any=prod&tag__any=dev", [1, 2, 4]],
  ["tag=prod&tag=dev", []],
  ["tag_id__any=1&tag_id__any=2", [1, 2, 4]],
  ["tag_id=1&tag_id=2", []],
  ["name__any=vm1", ALL],
  ["cf_owner__any=x", ALL],
  // Five patterns is the limit, not past it (a sixth is refused above); values of one filter
  // are alternatives, as for every multi-value filter.
  ["name__regex=^vm1$&name__regex=^vm3$&name__regex=x&name__regex=y&name__iregex=VM", [1, 3]],
];

const PAGE = `http://inv.test${VMS}`;
/** query → the ids of the page and its links (count is always 5). */
const PAGES: Array<[string, number[], string | null, string | null]> = [
  ["limit=abc", ALL, null, null],
  ["limit=0", ALL, null, null],
  ["limit=5000", ALL, null, null],
  ["limit=-3", ALL, null, null],
  ["offset=-1", ALL, null, null],
  ["offset=abc", ALL, null, null],
  ["limit=2", [1, 2], `${PAGE}?limit=2&fields=id&offset=2`, null],
  ["limit=2&offset=1", [2, 3], `${PAGE}?limit=2&offset=3&fields=id`, `${PAGE}?limit=2&fields=id`],
  ["limit=2&offset=2", [3, 4], `${PAGE}?limit=2&offset=4&fields=id`, `${PAGE}?limit=2&fields=id`],
  ["limit=2&offset=4", [5], null, `${PAGE}?limit=2&offset=2&fields=id`],
  ["offset=99", [], null, `${PAGE}?offset=49&fields=id&limit=50`],
];

Deno.test("list edges: refused filter values, ignored ones, and paging out of range", async () => {
  const inv = await setup();
  try {
    const post = async (path: string, body: unknown) => {
      const r = await inv.call("POST", path, body);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body;
    };
    const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
    const alpha = await post("/api/virtualization/clusters/", { name: "alpha", type: type.id });
    const acme = await post("/api/tenancy/tenants/", { name: "Acme", slug: "acme" });
    const prod = await post("/api/extras/tags/", { name: "Prod", slug: "prod" });
    const dev = await post("/api/extras/tags/", { name: "Dev", slug: "dev" });
    assert.deepEqual([prod.id, dev.id], [1, 2]);
    const specs = [
      { memory: 1024, tenant: acme.id, tags: [prod.id] },
      { memory: 2048, tags: [prod.id] },
      {},
      { status: "offline", tags: [dev.id] },
      {},
    ];
    for (const [i, spec] of specs.entries()) {
      const vm = await post(VMS, { name: `vm${i + 1}`, cluster: alpha.id, ...spec });
      assert.equal(vm.id, i + 1);
    }
    for (const [query, body] of REFUSED) {
      const r = await inv.call("GET", `${VMS}?${query}&fields=id`);
      assert.equal(r.status, 400, query);
      assert.deepEqual(r.body, body, query);
    }
    for (const [query, ids] of LISTED) {
      const r = await inv.call("GET", `${VMS}?${query}&fields=id`);
      assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
      assert.deepEqual(r.body.results.map((x: { id: number }) => x.id), ids, query);
      assert.equal(r.body.count, ids.length, query);
    }
    for (const [query, ids, next, previous] of PAGES) {
      const r = await inv.call("GET", `${VMS}?${query}&fields=id`);
      assert.equal(r.status, 200, query);
      assert.deepEqual(
        { ...r.body, results: r.body.results.map((x: { id: number }) => x.id) },
        { count: 5, next, previous, results: ids },
        query,
      );
    }
  } finally {
    inv.close();
  }
});

Deno.test("boolean filters take Django's spellings of true and false", async () => {
  const inv = await setup();
  try {
    const post = async (path: string, body: unknown) => {
      const r = await inv.call("POST", path, body);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body;
    };
    const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
    const alpha = await post("/api/virtualization/clusters/", { name: "alpha", type: type.id });
    const vm = await post(VMS, { name: "vm1", cluster: alpha.id });
    const IFACES = "/api/virtualization/interfaces/";
    const up = await post(IFACES, { virtual_machine: vm.id, name: "eth0", enabled: true });
    const down = await post(IFACES, { virtual_machine: vm.id, name: "eth1", enabled: false });
    const rows: Array<[string, number[]]> = [
      ["enabled=true", [up.id]],
      ["enabled=True", [up.id]],
      ["enabled=1", [up.id]],
      ["enabled=false", [down.id]],
      ["enabled=False", [down.id]],
      ["enabled=0", [down.id]],
      [`virtual_machine_id=${vm.id}&enabled=True`, [up.id]],
      // A boolean filter has no other lookup in NetBox 4.6: `enabled__gte` is no filter of
      // its, ignored as any unknown parameter (docs/netbox-rules.md "Filters").
      ["enabled__gte=true", [up.id, down.id]],
      ["enabled__n=true", [up.id, down.id]],
      ["enabled__ic=tru", [up.id, down.id]],
    ];
    for (const [query, ids] of rows) {
      const r = await inv.call("GET", `${IFACES}?${query}&fields=id`);
      assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
      assert.deepEqual(r.body.results.map((x: { id: number }) => x.id), ids, query);
      assert.equal(r.body.count, ids.length, query);
    }
  } finally {
    inv.close();
  }
});

Deno.test("__empty on a field that holds a list: an empty list is empty, a list with members is not", async () => {
  const inv = await setup();
  try {
    const TAGS = "/api/extras/tags/";
    const scoped = await inv.created(TAGS, {
      name: "Scoped",
      slug: "scoped",
      object_types: ["dcim.site"],
    });
    const twice = await inv.created(TAGS, {
      name: "Twice",
      slug: "twice",
      object_types: ["dcim.site", "virtualization.virtualmachine"],
    });
    const anywhere = await inv.created(TAGS, { name: "Anywhere", slug: "anywhere" });
    const rows: Array<[string, number[]]> = [
      ["object_types__empty=true", [anywhere.id]],
      ["object_types__empty=false", [scoped.id, twice.id]],
      ["object_types__empty=true&name__n=Anywhere", []],
    ];
    for (const [query, ids] of rows) {
      const r = await inv.call("GET", `${TAGS}?${query}&ordering=id&fields=id`);
      assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
      assert.deepEqual(r.body.results.map((x: { id: number }) => x.id), ids, query);
      assert.equal(r.body.count, ids.length, query);
    }
  } finally {
    inv.close();
  }
});

Deno.test("?ordering= names only fields a client can read: a hidden field or a token's digest is ignored, the default order stays", async () => {
  const inv = await setup();
  try {
    const IPS = "/api/ipam/ip-addresses/";
    for (const address of ["10.0.0.9/24", "10.0.0.10/24", "10.0.0.1/24"]) {
      await inv.created(IPS, { address });
    }
    const order = async (path: string, query: string) => {
      const r = await inv.call("GET", `${path}?${query}`);
      assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
      return r.body.results.map((x: { id: number }) => x.id);
    };
    const byAddress = await order(IPS, "ordering=address");
    assert.equal(byAddress.length, 3);
    // `host` is the stored, hidden canonical form of the address (an index), no field of NetBox.
    for (const query of ["ordering=-host", "ordering=host", "ordering=-unique_space", ""]) {
      assert.deepEqual(await order(IPS, query), byAddress, query);
    }
    // Ordering by a secret's digest would tell a client how the digests compare.
    const TOKENS = "/api/users/tokens/";
    for (let i = 0; i < 8; i++) {
      await inv.created(TOKENS, { version: 2, description: `t${i}` });
    }
    const byId = await order(TOKENS, "ordering=id&limit=0");
    assert.ok(byId.length >= 8);
    for (const query of ["ordering=-digest", "ordering=digest", "ordering=-encrypted"]) {
      assert.deepEqual(await order(TOKENS, `${query}&limit=0`), byId, query);
    }
  } finally {
    inv.close();
  }
});

Deno.test("a date custom field's __gt, __gte, __lt and __lte compare dates: an equal date meets gte and lte only, an unset one none", async () => {
  const inv = await setup();
  try {
    await inv.created("/api/extras/custom-fields/", {
      name: "due",
      object_types: ["dcim.site"],
      type: "date",
    });
    const SITES = "/api/dcim/sites/";
    const ids: number[] = [];
    for (const [i, due] of ["2026-05-02", "2026-05-10", "2026-12-01", null].entries()) {
      const site = await inv.created(SITES, {
        name: `s${i}`,
        slug: `s${i}`,
        custom_fields: { due },
      });
      ids.push(site.id);
    }
    const [may2, may10, dec1] = ids;
    const rows: Array<[string, number[]]> = [
      ["cf_due__gte=2026-05-10", [may10, dec1]],
      ["cf_due__gt=2026-05-10", [dec1]],
      ["cf_due__lte=2026-05-10", [may2, may10]],
      ["cf_due__lt=2026-05-10", [may2]],
      ["cf_due__gt=2026-05-02&cf_due__lt=2026-12-01", [may10]],
      ["cf_due__gte=2027-01-01", []],
      ["cf_due__lt=2026-05-02", []],
    ];
    for (const [query, want] of rows) {
      const r = await inv.call("GET", `${SITES}?${query}&ordering=id&fields=id`);
      assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
      assert.deepEqual(r.body.results.map((x: { id: number }) => x.id), want, query);
    }
  } finally {
    inv.close();
  }
});

Deno.test("a filter naming objects by slug, name, RD, address or MAC takes no id: a number is a key like any other, as NetBox's to_field_name", async () => {
  const inv = await setup();
  try {
    const post = inv.created;
    const IFACES = "/api/virtualization/interfaces/";
    const site = await post("/api/dcim/sites/", { name: "AMS1", slug: "ams1" });
    // A site whose slug is a number: `?site=<it>` names this site, whatever ids there are.
    const numbered = await post("/api/dcim/sites/", { name: "Site 7", slug: String(site.id + 7) });
    const vrf = await post("/api/ipam/vrfs/", { name: "blue", rd: "65000:1" });
    const vm = await post(VMS, { name: "vm1", site: site.id });
    const other = await post(VMS, { name: "vm2", site: numbered.id });
    const eth0 = await post(IFACES, { virtual_machine: vm.id, name: "eth0", vrf: vrf.id });
    const ip = await post("/api/ipam/ip-addresses/", {
      address: "192.0.2.1/24",
      vrf: vrf.id,
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: eth0.id,
    });
    const mac = await post("/api/dcim/mac-addresses/", {
      mac_address: "00:1A:2B:3C:4D:5E",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: eth0.id,
    });
    const patched = await inv.call("PATCH", `${VMS}${vm.id}/`, { primary_ip4: ip.id });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const primary = await inv.call("PATCH", `${IFACES}${eth0.id}/`, {
      primary_mac_address: mac.id,
    });
    assert.equal(primary.status, 200, JSON.stringify(primary.body));

    const names = async (path: string) => {
      const r = await inv.call("GET", path);
      assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
      return r.body.results.map((o: { name?: string; address?: string }) => o.name ?? o.address);
    };
    const refused = async (path: string, param: string, value: string) => {
      const r = await inv.call("GET", path);
      assert.deepEqual([r.status, r.body], [400, { [param]: [choice(value)] }], path);
    };
    // By key: the site's slug, the VRF's RD (not its name), the address, the MAC in any case.
    assert.deepEqual(await names(`${VMS}?site=ams1`), ["vm1"]);
    assert.deepEqual(await names(`${VMS}?site=${numbered.slug}`), ["vm2"]);
    assert.deepEqual(await names(`/api/ipam/ip-addresses/?vrf=65000:1`), ["192.0.2.1/24"]);
    assert.deepEqual(await names(`${VMS}?primary_ip4=192.0.2.1/24`), ["vm1"]);
    assert.deepEqual(await names(`${IFACES}?primary_mac_address=00:1a:2b:3c:4d:5e`), ["eth0"]);
    // An id there names nothing: a 400, as NetBox's choice field answers.
    await refused(`${VMS}?site=${site.id}`, "site", String(site.id));
    await refused(`/api/ipam/ip-addresses/?vrf=${vrf.id}`, "vrf", String(vrf.id));
    await refused(`/api/ipam/ip-addresses/?vrf=blue`, "vrf", "blue");
    await refused(`${VMS}?primary_ip4=${ip.id}`, "primary_ip4", String(ip.id));
    await refused(`${IFACES}?primary_mac_address=${mac.id}`, "primary_mac_address", String(mac.id));
    // The `_id` filters take the ids.
    assert.deepEqual(await names(`${VMS}?site_id=${site.id}`), ["vm1"]);
    assert.deepEqual(await names(`/api/ipam/ip-addresses/?vrf_id=${vrf.id}`), ["192.0.2.1/24"]);
    assert.equal(other.name, "vm2");
  } finally {
    inv.close();
  }
});
