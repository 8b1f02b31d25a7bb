/**
 * Roles and tenants of synced VMs (domain/sync/vm_policy.ts, docs/sync.md "Roles and tenants"):
 * which device role each guest type gets, and which tenant the endpoint's rules give each guest
 * (first match wins, case-insensitive; a missing tenant or role reported once, its guests left
 * as they are). Over the in-memory inventory fake.
 */
import assert from "node:assert/strict";
import { mergeOptions, type TenantRule } from "../../../domain/sync/options.ts";
import type { Guest } from "../../../domain/sync/guests.ts";
import { RULE_WORK_PER_GUEST, tenantAssignment, vmRole } from "../../../domain/sync/vm_policy.ts";
import { FakeInventory, stageContext } from "./_fakes.ts";

const ROLES = "dcim/device-roles/";
const TENANTS = "tenancy/tenants/";

function context(
  inv: FakeInventory,
  patch: Parameters<typeof mergeOptions>[0] = {},
) {
  const failed: [string, string][] = [];
  const ctx = stageContext(inv, {
    options: mergeOptions(patch),
    itemFailed: (object, error) => failed.push([object, (error as Error).message]),
  });
  return { ctx, failed };
}

const guest = (vmid: number, tags = ""): Guest => ({
  vmid,
  node: "n1",
  type: "qemu",
  config: { name: `g${vmid}`, tags },
});

Deno.test("vm policy: the sync's own roles are made once and reused; a named role is used as it is", async () => {
  const inv = new FakeInventory();
  const { ctx, failed } = context(inv);
  const qemu = await vmRole(ctx, "qemu");
  const lxc = await vmRole(ctx, "lxc");
  assert.equal(await vmRole(ctx, "qemu"), qemu);
  const roles = inv.all(ROLES);
  assert.deepEqual(roles.map((r) => [r.id, r.slug, r.vm_role]), [
    [qemu, "virtual-machine", true],
    [lxc, "container", true],
  ]);
  // The two roles, and the sync's tags they carry.
  assert.equal(ctx.result.created, 2 + inv.all("extras/tags/").length);
  assert.ok(roles.every((r) => Array.isArray(r.tags) && r.tags.length === 1));
  assert.deepEqual(failed, []);

  // A policy naming the sync's own slug is the same role; another slug is looked up, not made.
  inv.table(ROLES).set(50, { id: 50, slug: "app-server", vm_role: true });
  const named = context(inv, { roles: { qemu: "virtual-machine", lxc: "app-server" } });
  assert.equal(await vmRole(named.ctx, "qemu"), qemu);
  assert.equal(await vmRole(named.ctx, "lxc"), 50);
  assert.equal(inv.all(ROLES).length, 3);
  assert.deepEqual(named.failed, []);
});

Deno.test("vm policy: a named role that is missing or not a VM role is reported once and gives no role", async () => {
  const inv = new FakeInventory();
  inv.table(ROLES).set(60, { id: 60, slug: "switch", vm_role: false });
  const { ctx, failed } = context(inv, { roles: { qemu: "nope", lxc: "switch" } });
  assert.equal(await vmRole(ctx, "qemu"), null);
  assert.equal(await vmRole(ctx, "qemu"), null);
  assert.equal(await vmRole(ctx, "lxc"), null);
  assert.deepEqual(failed, [
    [
      "device role nope",
      'the sync policy\'s qemu_role "nope" is not a device role in the inventory: create it ' +
      '(with "VM role" on) or change qemu_role; qemu guests keep the role they have',
    ],
    [
      "device role switch",
      'the sync policy\'s lxc_role "switch" cannot be given to virtual machines (its "VM role" ' +
      "is off): turn it on or change lxc_role; lxc guests keep the role they have",
    ],
  ]);
  assert.equal(inv.all(ROLES).length, 1, "the sync makes no role a policy names");
});

Deno.test("vm policy: without tenant rules the tenant is not the sync's; with them the first matching rule wins, case-insensitively", async () => {
  const inv = new FakeInventory();
  inv.table(TENANTS).set(1, { id: 1, slug: "web" });
  inv.table(TENANTS).set(2, { id: 2, slug: "ops" });
  inv.table(TENANTS).set(3, { id: 3, slug: "lab" });
  const names = new Map([[1, "web-01"], [2, "WEB-02"], [3, "db"], [4, "db2"], [5, "other"]]);
  const guests = [[guest(1), guest(2, "Ops")], [guest(3, "ops;x"), guest(4)], [guest(5)]];

  const none = context(inv);
  const unset = await tenantAssignment(none.ctx, guests, names, "Lab");
  assert.deepEqual([1, 2, 3, 4, 5].map(unset), [
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
  ]);

  const rules: TenantRule[] = [
    { match: "name", pattern: "^web-\\d+$", tenant: "web" },
    { match: "tag", pattern: "OPS", tenant: "ops" },
    { match: "name", pattern: "^db2$", tenant: "lab" },
  ];
  const { ctx, failed } = context(inv, { tenantRules: rules });
  const tenantOf = await tenantAssignment(ctx, guests, names, "Lab");
  // 2's name is upper case: the name rule is case-sensitive as written; its tag matches "OPS".
  assert.deepEqual([1, 2, 3, 4, 5].map(tenantOf), [1, 2, 2, 3, null]);
  assert.deepEqual(failed, []);

  // A cluster rule matches the cluster's name whatever its case, for every guest.
  const byCluster = context(inv, {
    tenantRules: [
      { match: "cluster", pattern: "LAB", tenant: "lab" },
      { match: "name", pattern: ".*", tenant: "web" },
    ],
  });
  const all = await tenantAssignment(byCluster.ctx, guests, names, "Lab");
  assert.deepEqual([1, 2, 3, 4, 5].map(all), [3, 3, 3, 3, 3]);
  const other = await tenantAssignment(byCluster.ctx, guests, names, "lab2");
  assert.deepEqual([1, 2, 3, 4, 5].map(other), [1, 1, 1, 1, 1]);
});

Deno.test("vm policy: a rule naming a missing tenant is reported once; guests it matches keep theirs, later rules do not take them", async () => {
  const inv = new FakeInventory();
  inv.table(TENANTS).set(1, { id: 1, slug: "web" });
  const names = new Map([[1, "web-01"], [2, "db"]]);
  const { ctx, failed } = context(inv, {
    tenantRules: [
      { match: "name", pattern: "^web", tenant: "gone" },
      { match: "name", pattern: "^web", tenant: "gone" },
      { match: "name", pattern: "", tenant: "web" },
    ],
  });
  const tenantOf = await tenantAssignment(ctx, [[guest(1), guest(2)]], names, "lab");
  assert.equal(tenantOf(1), undefined);
  assert.equal(tenantOf(2), 1);
  assert.deepEqual(failed, [[
    "tenant gone",
    'the sync policy\'s tenant_rules name tenant "gone", which is not in the inventory: ' +
    "create it or change the rule; guests it matches keep the tenant they have",
  ]]);
});

Deno.test("vm policy: a guest whose name takes more than the matching budget keeps its tenant; reported for the first such guest only", async () => {
  const inv = new FakeInventory();
  inv.table(TENANTS).set(1, { id: 1, slug: "web" });
  // A long name and a pattern that walks it many times: past the per-guest budget.
  const long = "a".repeat(5000);
  const names = new Map([[1, long], [2, long], [3, "b"]]);
  const { ctx, failed } = context(inv, {
    tenantRules: [{ match: "name", pattern: "(a|aa)*c", tenant: "web" }, {
      match: "name",
      pattern: "^b$",
      tenant: "web",
    }],
  });
  const tenantOf = await tenantAssignment(ctx, [[guest(1), guest(2), guest(3)]], names, "lab");
  assert.deepEqual([1, 2, 3].map(tenantOf), [undefined, undefined, 1]);
  assert.deepEqual(failed.map(([object]) => object), ["virtual machine " + long + " (vmid 1)"]);
  assert.match(failed[0][1], new RegExp(`more than ${RULE_WORK_PER_GUEST} matching steps`));
});

Deno.test("vm policy: every guest of many slices gets its answer (the matcher yields between batches)", async () => {
  const inv = new FakeInventory();
  inv.table(TENANTS).set(1, { id: 1, slug: "web" });
  const count = 1201;
  const guests = Array.from(
    { length: 3 },
    (_, s) =>
      Array.from(
        { length: s === 2 ? count - 1000 : 500 },
        (_, i) => guest(s * 500 + i + 1, (s * 500 + i) % 2 ? "" : "web"),
      ),
  );
  const { ctx } = context(inv, { tenantRules: [{ match: "tag", pattern: "web", tenant: "web" }] });
  const tenantOf = await tenantAssignment(ctx, guests, new Map(), "lab");
  for (let vmid = 1; vmid <= count; vmid++) {
    assert.equal(tenantOf(vmid), (vmid - 1) % 2 ? null : 1, `vmid ${vmid}`);
  }
});

Deno.test("vm policy: matching many guests gives the event loop a turn (a timer set before it runs before it ends), and an abort stops it there", async () => {
  const inv = new FakeInventory();
  inv.table(TENANTS).set(1, { id: 1, slug: "web" });
  const many = [Array.from({ length: 1200 }, (_, i) => guest(i + 1, "web"))];
  const rules: TenantRule[] = [{ match: "tag", pattern: "web", tenant: "web" }];
  const { ctx } = context(inv, { tenantRules: rules });
  let turned = false;
  // Set before the match starts, due at once: it runs at the first turn the matcher gives back.
  setTimeout(() => turned = true, 0);
  const tenantOf = await tenantAssignment(ctx, many, new Map(), "lab");
  assert.equal(turned, true, "the matcher never yielded");
  assert.equal(tenantOf(1), 1);

  // One turn per 500 guests, not one per guest: each turn costs a timer (4 ms once nested), so
  // a turn per guest would add seconds to a run of thousands of guests.
  const realSetTimeout = globalThis.setTimeout;
  let turns = 0;
  globalThis.setTimeout = ((fn: () => void, ms?: number) => {
    if (!ms) turns++;
    return realSetTimeout(fn, ms);
  }) as typeof setTimeout;
  try {
    await tenantAssignment(context(inv, { tenantRules: rules }).ctx, many, new Map(), "lab");
  } finally {
    globalThis.setTimeout = realSetTimeout;
  }
  assert.equal(turns, 2, "1,200 guests: a turn after the 500th and the 1,000th");

  // Aborted before it starts: the first turn it gives back ends it.
  const aborted = new AbortController();
  aborted.abort();
  const { ctx: stopped } = context(inv, { tenantRules: rules });
  await assert.rejects(
    tenantAssignment({ ...stopped, signal: aborted.signal }, many, new Map(), "lab"),
    (e: Error) => e.name === "AbortError",
  );
});
