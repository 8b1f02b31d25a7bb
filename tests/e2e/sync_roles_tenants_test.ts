/**
 * Roles and tenants of synced VMs end to end (docs/sync.md, "Roles and tenants"): a policy's
 * role per guest type and tenant rules (name pattern, tag, cluster; first match wins) on guests
 * changed by hand, read back as a NetBox client would; who owns the tenant; missing or unusable
 * roles and tenants reported by name while the rest syncs; bounded rules.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { addInventoryCopy, type SseFrame, syncWorld } from "./_sync_harness.ts";

const FAST_TASKS = { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" };
const errorsOf = (frames: SseFrame[]) =>
  frames.filter((f) => f.event === "error").map((f) => f.data);

Deno.test("e2e sync roles and tenants: the policy's role per guest type, tenants by name, tag and cluster, first match wins; the admin may own tenants", async () => {
  const world = await syncWorld("nodes=1,vms=3,cts=2,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    const make = async (path: string, body: unknown) => {
      const r = await world.inventoryCall("POST", path, body);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body;
    };
    const server = await make("dcim/device-roles/", {
      name: "Server",
      slug: "server",
      vm_role: true,
    });
    const web = await make("tenancy/tenants/", { name: "Web", slug: "web" });
    const ops = await make("tenancy/tenants/", { name: "Ops", slug: "ops" });
    const lab = await make("tenancy/tenants/", { name: "Lab", slug: "lab-tenant" });

    const guests = (await world.hypervisor("GET", "/cluster/resources", { type: "vm" }))
      .sort((a: any, b: any) => a.vmid - b.vmid);
    const [q1, q2, q3] = guests.filter((g: any) => g.type === "qemu");
    const [c1, c2] = guests.filter((g: any) => g.type === "lxc");
    await world.hypervisor("PUT", `/nodes/${q1.node}/qemu/${q1.vmid}/config`, { name: "web-01" });
    // Matches the name rule and the tag rule: the name rule comes first.
    await world.hypervisor("PUT", `/nodes/${q2.node}/qemu/${q2.vmid}/config`, {
      name: "web-02",
      tags: "ops",
    });
    await world.hypervisor("PUT", `/nodes/${c1.node}/lxc/${c1.vmid}/config`, { tags: "OPS;x" });
    const status = await world.hypervisor("GET", "/cluster/status");
    const clusterName = status.find((s: any) => s.type === "cluster")?.name ?? "lab";

    await world.addHypervisorCopy("lab", {
      sync_policy: {
        qemu_role: "server",
        tenant_rules: [
          { match: "name", pattern: "^web-\\d+$", tenant: "web" },
          { match: "tag", pattern: "ops", tenant: "ops" },
          { match: "cluster", pattern: clusterName.toUpperCase(), tenant: "lab-tenant" },
        ],
      },
    });
    assert.deepEqual(errorsOf(await world.stream("/full-update/stream")), []);

    const states = await world.inventory("plugins/service/vm-sync-state/");
    const vmOf = async (vmid: number) => {
      const id = states.find((s: any) => s.vmid === vmid).virtual_machine.id;
      return (await world.inventoryCall("GET", `virtualization/virtual-machines/${id}/`)).body;
    };
    const read = async () => {
      const out: Record<number, { role: string | null; tenant: string | null; id: number }> = {};
      for (const g of [q1, q2, q3, c1, c2]) {
        const vm = await vmOf(g.vmid);
        out[g.vmid] = { id: vm.id, role: vm.role?.slug ?? null, tenant: vm.tenant?.slug ?? null };
      }
      return out;
    };
    const first = await read();
    assert.deepEqual(
      Object.fromEntries(Object.entries(first).map(([k, v]) => [k, [v.role, v.tenant]])),
      {
        [q1.vmid]: ["server", "web"],
        [q2.vmid]: ["server", "web"],
        [q3.vmid]: ["server", "lab-tenant"],
        [c1.vmid]: ["container", "ops"],
        [c2.vmid]: ["container", "lab-tenant"],
      },
    );
    assert.equal(server.vm_role, true);
    assert.ok(web.id && ops.id && lab.id);

    // The hypervisor owns tenants (the default): an admin's change is put back.
    const patch = (id: number, body: unknown) =>
      world.inventoryCall("PATCH", `virtualization/virtual-machines/${id}/`, body);
    assert.equal((await patch(first[q3.vmid].id, { tenant: ops.id })).status, 200);
    await world.backend("GET", "/virtualization/virtual-machines/create");
    assert.equal((await read())[q3.vmid].tenant, "lab-tenant");
    // The admin owns them on request: the hand-set tenant stays.
    await patch(first[q3.vmid].id, { tenant: ops.id });
    const kept = await world.backend(
      "GET",
      "/virtualization/virtual-machines/create?overwrite_tenants=false",
    );
    assert.equal(kept.status, 200, JSON.stringify(kept.body));
    assert.equal((await read())[q3.vmid].tenant, "ops");
    // A run's role option wins over the policy's; and a rerun writes nothing.
    const own = await world.backend(
      "GET",
      "/virtualization/virtual-machines/create?qemu_role=virtual-machine&overwrite_tenants=false",
    );
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.equal((await read())[q1.vmid].role, "virtual-machine");
    const again = await world.backend(
      "GET",
      "/virtualization/virtual-machines/create?qemu_role=virtual-machine&overwrite_tenants=false",
    );
    assert.equal(again.body.result.updated, 0, JSON.stringify(again.body.result));
    assert.equal(again.body.result.created, 0);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync roles and tenants: a missing tenant, a missing role or one without VM role is an error naming it; the rest syncs and nothing is cleared", async () => {
  const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    const gear = await world.inventoryCall("POST", "dcim/device-roles/", {
      name: "Rack gear",
      slug: "rack-gear",
      vm_role: false,
    });
    assert.equal(gear.status, 201, JSON.stringify(gear.body));
    await world.inventoryCall("POST", "tenancy/tenants/", { name: "Web", slug: "web" });
    await world.addHypervisorCopy("lab", {
      sync_policy: {
        tenant_rules: [
          { match: "name", pattern: "^nothing-matches$", tenant: "ghost" },
          { match: "name", pattern: ".", tenant: "web" },
        ],
      },
    });
    const first = await world.stream("/full-update/stream");
    const errors = errorsOf(first);
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.equal(errors[0].step, "virtual-machines");
    assert.equal(errors[0].object, "tenant ghost");
    assert.match(errors[0].detail, /tenant "ghost", which is not in the inventory/);
    const vms = await world.inventory("virtualization/virtual-machines/");
    assert.equal(vms.length, 3);
    assert.ok(vms.every((v: any) => v.tenant?.slug === "web"), "the other rules still apply");

    // A role without "VM role": named, and the guests keep the role they have.
    const frames = await world.stream("/full-update/stream?qemu_role=rack-gear");
    const roleErrors = errorsOf(frames).filter((e: any) => e.object === "device role rack-gear");
    assert.equal(roleErrors.length, 1, JSON.stringify(errorsOf(frames)));
    assert.match(roleErrors[0].detail, /"VM role" is off/);
    const missing = errorsOf(await world.stream("/full-update/stream?lxc_role=no-such-role"))
      .filter((e: any) => e.object === "device role no-such-role");
    assert.equal(missing.length, 1);
    const after = await world.inventory("virtualization/virtual-machines/");
    assert.deepEqual(
      after.map((v: any) => v.role?.slug).sort(),
      ["container", "virtual-machine", "virtual-machine"],
    );
    // The inventory itself refuses such a role on a VM, as NetBox does.
    const refused = await world.inventoryCall(
      "PATCH",
      `virtualization/virtual-machines/${after[0].id}/`,
      { role: gear.body.id },
    );
    assert.equal(refused.status, 400);
    assert.deepEqual(refused.body.role, [
      `device role instance with id ${gear.body.id} is not a valid choice.`,
    ]);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync roles and tenants: rules are bounded and checked on the backend copy and the plugin record; an over-long match is cut off per guest", async () => {
  const world = await syncWorld("nodes=1,vms=1,cts=0,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    const attempt = (rules: unknown) =>
      world.backend("POST", "/hypervisor/endpoints", {
        name: "x",
        ip: "127.0.0.1",
        port: world.port,
        password: "x",
        sync_policy: { tenant_rules: rules },
      });
    for (
      const [rules, message] of [
        [[{ match: "name", pattern: "(a)\\1", tenant: "web" }], /Unsupported regular expression/],
        [[{ match: "name", pattern: "a".repeat(129), tenant: "web" }], /1 to 128 characters/],
        [[{ match: "owner", pattern: "a", tenant: "web" }], /one of name, tag, cluster/],
        [[{ match: "tag", pattern: "a", tenant: "not a slug" }], /slug of a tenant/],
        [[{ match: "tag", pattern: "a", tenant: "web", extra: 1 }], /unknown key .{1,3}extra/],
        [Array(21).fill({ match: "tag", pattern: "a", tenant: "web" }), /at most 20 rules/],
        ["^web", /a list of/],
      ] as const
    ) {
      const r = await attempt(rules);
      assert.equal(r.status, 422, JSON.stringify(r.body));
      assert.match(JSON.stringify(r.body), message);
    }
    const plugin = await world.inventoryCall("POST", "plugins/service/endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
      sync_policy: {
        qemu_role: "Not A Slug!",
        tenant_rules: [{ match: "name", pattern: "(?=a)" }],
      },
    });
    assert.equal(plugin.status, 400, JSON.stringify(plugin.body));
    const said = plugin.body.sync_policy.join(" ");
    assert.match(said, /qemu_role: the slug of a device role/);
    assert.match(said, /tenant_rules\[0\]\.pattern: Unsupported regular expression/);
    assert.match(said, /tenant_rules\[0\]\.tenant/);

    // Twenty long rules that never match a long name: the matcher stops at its budget for that
    // guest, says so, and leaves its tenant alone.
    await world.inventoryCall("POST", "tenancy/tenants/", { name: "Web", slug: "web" });
    const [guest] = await world.hypervisor("GET", "/cluster/resources", { type: "vm" });
    const longName = `n${"a".repeat(62)}`;
    await world.hypervisor("PUT", `/nodes/${guest.node}/qemu/${guest.vmid}/config`, {
      name: longName,
    });
    const heavy = `(${Array(20).fill("a?").join("")})*${"a".repeat(60)}z`.slice(0, 128);
    await world.addHypervisorCopy("lab", {
      sync_policy: {
        tenant_rules: Array(20).fill({ match: "name", pattern: heavy, tenant: "web" }),
      },
    });
    const frames = await world.stream("/full-update/stream");
    const errors = errorsOf(frames);
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.equal(errors[0].object, `virtual machine ${longName} (vmid ${guest.vmid})`);
    assert.match(errors[0].detail, /more than 20000 matching steps/);
    const [vm] = await world.inventory("virtualization/virtual-machines/");
    assert.equal(vm.name, longName);
    assert.equal(vm.tenant, null);
  } finally {
    await world.close();
  }
});
