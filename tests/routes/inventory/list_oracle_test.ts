/**
 * The inventory's lists against a model of the data kept in the test: seeded random writes
 * (single and bulk creates, updates and deletes, refused bulk writes, tag deletions, interfaces
 * created and cascaded away) and after each round every filter of the table, in several orders
 * and walked in pages of random sizes, must list exactly what the model holds, with the same
 * count; related counts (a cluster's, a tenant's VMs, a tag's tagged items, a VM's interfaces)
 * must match too. Whatever path answers a list (index pages, ordered index, keyset, candidate
 * ids, scans, the sorted-ids cache), it must agree with what was written, after updates and
 * deletes as well as creates.
 */
import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";

const VMS = "/api/virtualization/virtual-machines/";
const IFACES = "/api/virtualization/interfaces/";
const STATUSES = ["active", "offline", "planned", "staged"];
const SERIALS = ["SN-1", "SN-2", "sn-3", ""];
const VCPUS = [1, 2, 4, 0.5];

/** A small seeded generator (mulberry32): a failing seed replays the same writes. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)];
  const subset = <T>(items: readonly T[]): T[] => items.filter(() => next() < 0.5);
  return { next, int, pick, subset };
}

interface Vm {
  id: number;
  name: string;
  cluster: number;
  tenant: number | null;
  status: string;
  vcpus: number;
  serial: string;
  tags: Set<string>;
  rank: number | null;
  /** Nullable: where a list puts the VMs without it (PostgreSQL: last ascending). */
  memory: number | null;
}

interface Model {
  vms: Map<number, Vm>;
  /** Interface id → its VM's id. */
  ifaces: Map<number, number>;
  clusters: number[];
  tenants: number[];
  /** Tenant id → its current name (`?ordering=tenant` lists by it, as Django's order_by). */
  tenantNames: Map<number, string>;
  /** Tag slug → its current id. */
  tags: Map<string, number>;
}

const post = (inv: Inv, path: string, body: unknown) => inv.created(path, body);

async function world(inv: Inv): Promise<Model> {
  const type = await post(inv, "/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
  const clusters = [];
  for (const name of ["c-a", "c-b", "c-c"]) {
    clusters.push((await post(inv, "/api/virtualization/clusters/", { name, type: type.id })).id);
  }
  // Named against their id order: a list ordered by tenant id would not pass for one by name.
  const tenants = [];
  const tenantNames = new Map<number, string>();
  for (const name of ["t-b", "t-a"]) {
    const id = (await post(inv, "/api/tenancy/tenants/", { name, slug: name })).id;
    tenants.push(id);
    tenantNames.set(id, name);
  }
  const tags = new Map<string, number>();
  for (const slug of ["red", "green", "blue"]) {
    tags.set(slug, (await post(inv, "/api/extras/tags/", { name: slug, slug })).id);
  }
  await post(inv, "/api/extras/custom-fields/", {
    name: "rank",
    object_types: ["virtualization.virtualmachine"],
    type: "integer",
  });
  return { vms: new Map(), ifaces: new Map(), clusters, tenants, tenantNames, tags };
}

/** A VM's fields as the API takes them. */
function body(m: Model, vm: Omit<Vm, "id">): Record<string, unknown> {
  return {
    name: vm.name,
    cluster: vm.cluster,
    tenant: vm.tenant,
    status: vm.status,
    vcpus: vm.vcpus,
    serial: vm.serial,
    tags: [...vm.tags].map((slug) => m.tags.get(slug)),
    custom_fields: { rank: vm.rank },
    memory: vm.memory,
  };
}

/** The VM as read back: the fields the model keeps. */
// deno-lint-ignore no-explicit-any
function readBack(r: Record<string, any>): Vm {
  return {
    id: r.id,
    name: r.name,
    cluster: r.cluster?.id,
    tenant: r.tenant?.id ?? null,
    status: r.status.value,
    vcpus: r.vcpus,
    serial: r.serial,
    tags: new Set((r.tags as Array<{ slug: string }>).map((t) => t.slug)),
    rank: r.custom_fields.rank,
    memory: r.memory,
  };
}

function plain(vm: Vm) {
  return { ...vm, tags: [...vm.tags].sort() };
}

type Rng = ReturnType<typeof random>;

async function step(inv: Inv, m: Model, rng: Rng, names: { next: number }, label: string) {
  const fresh = (): Omit<Vm, "id"> => ({
    name: `vm-${String(names.next++).padStart(3, "0")}`,
    cluster: rng.pick(m.clusters),
    tenant: rng.next() < 0.3 ? null : rng.pick(m.tenants),
    status: rng.pick(STATUSES),
    vcpus: rng.pick(VCPUS),
    serial: rng.pick(SERIALS),
    tags: new Set(rng.subset([...m.tags.keys()])),
    rank: rng.next() < 0.3 ? null : rng.int(4),
    memory: rng.next() < 0.4 ? null : rng.pick([512, 1024, 2048]),
  });
  const change = (): Partial<Vm> => {
    const all = fresh();
    const out: Partial<Vm> = {};
    const keys = rng.subset(
      ["name", "cluster", "tenant", "status", "vcpus", "serial", "tags", "rank", "memory"] as const,
    );
    for (const k of keys.length ? keys : ["tags" as const]) {
      // deno-lint-ignore no-explicit-any
      (out as any)[k] = k === "tags" && rng.next() < 0.3 ? new Set() : all[k];
    }
    return out;
  };
  const patchBody = (p: Partial<Vm>) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(p)) {
      if (k === "tags") out.tags = [...(v as Set<string>)].map((slug) => m.tags.get(slug));
      else if (k === "rank") out.custom_fields = { rank: v };
      else out[k] = v;
    }
    return out;
  };
  const existing = [...m.vms.keys()];
  const op = rng.int(existing.length < 4 ? 2 : 10);
  const where = `${label} op ${op}`;
  if (op === 0) {
    const vm = fresh();
    const made = await post(inv, VMS, body(m, vm));
    m.vms.set(made.id, { ...vm, id: made.id });
    assert.deepEqual(plain(readBack(made)), plain({ ...vm, id: made.id }), where);
  } else if (op === 1) {
    const specs = Array.from({ length: 1 + rng.int(3) }, fresh);
    const made = await post(inv, VMS, specs.map((s) => body(m, s)));
    assert.equal(made.length, specs.length, where);
    specs.forEach((s, i) => m.vms.set(made[i].id, { ...s, id: made[i].id }));
  } else if (op === 2 || op === 3) {
    const id = rng.pick(existing);
    const p = change();
    const r = await inv.call("PATCH", `${VMS}${id}/`, patchBody(p));
    assert.equal(r.status, 200, `${where}: ${JSON.stringify(r.body)}`);
    Object.assign(m.vms.get(id)!, p);
    assert.deepEqual(plain(readBack(r.body)), plain(m.vms.get(id)!), where);
  } else if (op === 4) {
    const ids = rng.subset(existing).slice(0, 3);
    if (ids.length === 0) return;
    const patches = ids.map((id) => ({ id, p: change() }));
    const r = await inv.call("PATCH", VMS, patches.map(({ id, p }) => ({ id, ...patchBody(p) })));
    assert.equal(r.status, 200, `${where}: ${JSON.stringify(r.body)}`);
    for (const { id, p } of patches) Object.assign(m.vms.get(id)!, p);
  } else if (op === 5) {
    const id = rng.pick(existing);
    const r = await inv.call("DELETE", `${VMS}${id}/`);
    assert.equal(r.status, 204, where);
    m.vms.delete(id);
    for (const [iface, vm] of m.ifaces) if (vm === id) m.ifaces.delete(iface);
  } else if (op === 6) {
    const ids = rng.subset(existing).slice(0, 3);
    if (ids.length === 0) return;
    const r = await inv.call("DELETE", VMS, ids.map((id) => ({ id })));
    assert.equal(r.status, 204, `${where}: ${JSON.stringify(r.body)}`);
    for (const id of ids) {
      m.vms.delete(id);
      for (const [iface, vm] of m.ifaces) if (vm === id) m.ifaces.delete(iface);
    }
  } else if (op === 7) {
    // A bulk write with one bad item writes nothing: the model stays as it is.
    const id = rng.pick(existing);
    const bad = rng.int(3);
    const r = bad === 0
      ? await inv.call("POST", VMS, [body(m, fresh()), { ...body(m, fresh()), status: "nope" }])
      : bad === 1
      ? await inv.call("PATCH", VMS, [
        { id, ...patchBody(change()) },
        { id: rng.pick(existing), status: "nope" },
      ])
      : await inv.call("DELETE", VMS, [{ id }, { id: "x" }]);
    assert.ok(r.status >= 400 && r.status < 500, `${where}: ${r.status}`);
  } else if (op === 8) {
    const vm = rng.pick(existing);
    const made = await post(inv, IFACES, {
      virtual_machine: vm,
      name: `eth${names.next++}`,
    });
    m.ifaces.set(made.id, vm);
  } else if (rng.next() < 0.5) {
    // The tenants swap names: a list ordered by tenant follows (no sorted list kept from before:
    // the list is read, and so kept, just before).
    await list(inv, "ordering=tenant&limit=1");
    const [x, y] = m.tenants;
    const [nx, ny] = [m.tenantNames.get(x)!, m.tenantNames.get(y)!];
    for (const [id, name] of [[x, `${ny}~`], [y, nx], [x, ny]] as const) {
      const r = await inv.call("PATCH", `/api/tenancy/tenants/${id}/`, { name });
      assert.equal(r.status, 200, `${where}: ${JSON.stringify(r.body)}`);
    }
    m.tenantNames.set(x, ny);
    m.tenantNames.set(y, nx);
    const [query, compare] = orderings(m).find(([o]) => o === "tenant")!;
    const expected = [...m.vms.values()].sort(compare).map((v) => v.id);
    const after = await list(inv, `ordering=${query}&limit=1000`);
    assert.deepEqual(after.results.map((r) => r.id), expected, `${where}: tenants renamed`);
  } else {
    // A deleted tag leaves every object it was on; the slug comes back as a new tag.
    const slug = rng.pick([...m.tags.keys()]);
    const r = await inv.call("DELETE", `/api/extras/tags/${m.tags.get(slug)}/`);
    assert.equal(r.status, 204, where);
    for (const vm of m.vms.values()) vm.tags.delete(slug);
    m.tags.set(slug, (await post(inv, "/api/extras/tags/", { name: slug, slug })).id);
  }
}

/** Every filter of the table: the query and which VMs the model says it lists. */
function filters(m: Model, rng: Rng): Array<[string, (vm: Vm) => boolean]> {
  const [c0, c1, c2] = m.clusters;
  const [t0] = m.tenants;
  const ids = [...m.vms.keys()].sort((a, b) => a - b);
  const mid = ids[Math.floor(ids.length / 2)] ?? 1;
  const some = m.vms.get(rng.pick(ids) ?? -1);
  const status = rng.pick(STATUSES);
  return [
    ["", () => true],
    [`cluster_id=${c0}`, (v) => v.cluster === c0],
    [`cluster_id=${c1}&cluster_id=${c2}`, (v) => v.cluster !== c0],
    [`cluster_id__n=${c1}`, (v) => v.cluster !== c1],
    [`tenant_id=${t0}`, (v) => v.tenant === t0],
    ["tenant_id=null", (v) => v.tenant === null],
    [`status=${status}`, (v) => v.status === status],
    [`status__n=${status}`, (v) => v.status !== status],
    ["tag=red", (v) => v.tags.has("red")],
    ["tag=red&tag=blue", (v) => v.tags.has("red") && v.tags.has("blue")],
    ["tag__n=green", (v) => !v.tags.has("green")],
    [`tag_id=${m.tags.get("blue")}`, (v) => v.tags.has("blue")],
    ["serial=SN-2", (v) => v.serial === "SN-2"],
    ["serial__ie=sn-1", (v) => v.serial.toLowerCase() === "sn-1"],
    [`name=${some?.name ?? "vm-000"}`, (v) => v.name === some?.name],
    ["vcpus__gte=2", (v) => v.vcpus >= 2],
    ["vcpus__lt=2", (v) => v.vcpus < 2],
    ["cf_rank=2", (v) => v.rank === 2],
    ["cf_rank__gte=1", (v) => v.rank !== null && v.rank >= 1],
    [`cluster_id=${c1}&status=${status}`, (v) => v.cluster === c1 && v.status === status],
    [`cluster_id=${c0}&tag=green`, (v) => v.cluster === c0 && v.tags.has("green")],
    [`tenant_id=${t0}&serial=SN-1`, (v) => v.tenant === t0 && v.serial === "SN-1"],
    [`id__gt=${mid}`, (v) => v.id > mid],
    [`id__gte=${mid}&cluster_id=${c2}`, (v) => v.id >= mid && v.cluster === c2],
    [`id__lte=${mid}&tag=blue`, (v) => v.id <= mid && v.tags.has("blue")],
    ["q=vm-00", (v) => v.name.includes("vm-00")],
    ["q=sn-", (v) => v.name.includes("sn-") || v.serial.toLowerCase().includes("sn-")],
  ];
}

/** Ascending with nulls last, as PostgreSQL sorts them (descending: reversed, nulls first). */
function nullsLast<T extends string | number>(a: T | null, b: T | null): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function orderings(m: Model): Array<[string, (a: Vm, b: Vm) => number]> {
  const tenantName = (v: Vm) => (v.tenant === null ? null : m.tenantNames.get(v.tenant)!);
  return [
    ...ORDERINGS,
    ["memory", (a, b) => nullsLast(a.memory, b.memory) || a.id - b.id],
    ["-memory", (a, b) => nullsLast(b.memory, a.memory) || b.id - a.id],
    ["tenant", (a, b) => nullsLast(tenantName(a), tenantName(b)) || a.id - b.id],
    ["-tenant", (a, b) => nullsLast(tenantName(b), tenantName(a)) || b.id - a.id],
    [
      "tenant,-memory",
      (a, b) =>
        nullsLast(tenantName(a), tenantName(b)) || nullsLast(b.memory, a.memory) || a.id - b.id,
    ],
  ];
}

const ORDERINGS: Array<[string, (a: Vm, b: Vm) => number]> = [
  ["", (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id - b.id)],
  ["id", (a, b) => a.id - b.id],
  ["-id", (a, b) => b.id - a.id],
  ["name", (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id - b.id)],
  ["-name", (a, b) => (a.name < b.name ? 1 : a.name > b.name ? -1 : b.id - a.id)],
  ["vcpus", (a, b) => a.vcpus - b.vcpus || a.id - b.id],
  ["-vcpus", (a, b) => b.vcpus - a.vcpus || b.id - a.id],
];

async function list(inv: Inv, query: string) {
  const r = await inv.call("GET", `${VMS}?${query}`);
  assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
  return r.body as { count: number; results: Array<{ id: number }> };
}

async function check(inv: Inv, m: Model, rng: Rng, label: string) {
  for (const [filter, keep] of filters(m, rng)) {
    for (const [ordering, compare] of [ORDERINGS[0], rng.pick(orderings(m))]) {
      const expected = [...m.vms.values()].filter(keep).sort(compare).map((v) => v.id);
      const base = [filter, ordering ? `ordering=${ordering}` : ""].filter(Boolean).join("&");
      const where = `${label}: ?${base}`;
      const whole = await list(inv, `${base}${base ? "&" : ""}limit=1000`);
      assert.deepEqual(whole.results.map((r) => r.id), expected, where);
      assert.equal(whole.count, expected.length, where);
      // Walked in pages of a random size: every page counts the whole list.
      const size = 1 + rng.int(3);
      const walked: number[] = [];
      for (let offset = 0; offset <= expected.length; offset += size) {
        const page = await list(inv, `${base}${base ? "&" : ""}limit=${size}&offset=${offset}`);
        assert.equal(page.count, expected.length, `${where} offset ${offset}`);
        walked.push(...page.results.map((r) => r.id));
      }
      assert.deepEqual(walked, expected, `${where} walked by ${size}`);
    }
  }
  // Keyset walk (how the sync reads a list): ordering=id&id__gt=<last>, within one cluster.
  for (const cluster of m.clusters) {
    const expected = [...m.vms.values()].filter((v) => v.cluster === cluster).map((v) => v.id)
      .sort((a, b) => a - b);
    const walked: number[] = [];
    let last = 0;
    for (;;) {
      const page = await list(inv, `cluster_id=${cluster}&ordering=id&id__gt=${last}&limit=2`);
      assert.equal(
        page.count,
        expected.filter((id) => id > last).length,
        `${label}: keyset after ${last}`,
      );
      if (page.results.length === 0) break;
      walked.push(...page.results.map((r) => r.id));
      last = walked[walked.length - 1];
    }
    assert.deepEqual(walked, expected, `${label}: keyset walk of cluster ${cluster}`);
  }
  // Related counts read back on the parents' lists and detail views.
  const clusters = await inv.call("GET", "/api/virtualization/clusters/?limit=0");
  for (const c of clusters.body.results) {
    const n = [...m.vms.values()].filter((v) => v.cluster === c.id).length;
    assert.equal(c.virtualmachine_count, n, `${label}: cluster ${c.id} count`);
  }
  const tenants = await inv.call("GET", "/api/tenancy/tenants/?limit=0");
  for (const t of tenants.body.results) {
    const n = [...m.vms.values()].filter((v) => v.tenant === t.id).length;
    assert.equal(t.virtualmachine_count, n, `${label}: tenant ${t.id} count`);
  }
  for (const [slug, id] of m.tags) {
    const tag = await inv.call("GET", `/api/extras/tags/${id}/`);
    const n = [...m.vms.values()].filter((v) => v.tags.has(slug)).length;
    assert.equal(tag.body.tagged_items, n, `${label}: tag ${slug} tagged_items`);
  }
  const vms = await list(inv, "limit=0");
  for (const vm of vms.results as Array<{ id: number; interface_count: number }>) {
    const n = [...m.ifaces.values()].filter((owner) => owner === vm.id).length;
    assert.equal(vm.interface_count, n, `${label}: VM ${vm.id} interface_count`);
  }
  const ifaces = await inv.call("GET", `${IFACES}?limit=0`);
  assert.deepEqual(
    ifaces.body.results.map((i: { id: number; virtual_machine: { id: number } }) => [
      i.id,
      i.virtual_machine.id,
    ]).sort((a: number[], b: number[]) => a[0] - b[0]),
    [...m.ifaces].sort((a, b) => a[0] - b[0]),
    `${label}: interfaces (a deleted VM's are gone)`,
  );
  // Each VM read back whole matches the model.
  for (const vm of m.vms.values()) {
    const r = await inv.call("GET", `${VMS}${vm.id}/`);
    assert.deepEqual(plain(readBack(r.body)), plain(vm), `${label}: VM ${vm.id}`);
  }
}

for (const seed of [1, 2, 3]) {
  Deno.test(`lists match a model of the data after seeded random writes (seed ${seed})`, async () => {
    const inv = await setup();
    try {
      const m = await world(inv);
      const rng = random(seed);
      const names = { next: 1 };
      for (let round = 0; round < 6; round++) {
        for (let i = 0; i < 6; i++) await step(inv, m, rng, names, `seed ${seed} round ${round}`);
        await check(inv, m, rng, `seed ${seed} round ${round}`);
      }
    } finally {
      inv.close();
    }
  });
}
