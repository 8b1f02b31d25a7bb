/**
 * Run options and the dry-run plan end to end (docs/sync.md, "Run options", "Dry run and
 * plan"): the mock changed by hand, a dry run that writes nothing and says what a real run
 * will do, then the real run doing exactly that; ownership of names per run; unknown options.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import {
  addInventoryCopy,
  inventoryWrites,
  KEY,
  type SseFrame,
  syncWorld,
} from "./_sync_harness.ts";
import { type SyncIo, syncMain } from "../../scripts/sync/run.ts";

const FAST_TASKS = { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" };
type World = Awaited<ReturnType<typeof syncWorld>>;

const errorsOf = (frames: SseFrame[]) =>
  frames.filter((f) => f.event === "error").map((f) => f.data);

/** Fields that point at other objects, and where those live (by the writing path). */
function refPath(field: string, item: any, o: Record<string, unknown>): string | null {
  switch (field) {
    case "virtual_machine":
      return "virtualization/virtual-machines/";
    case "assigned_object_id":
      return o.assigned_object_type === "dcim.interface"
        ? "dcim/interfaces/"
        : "virtualization/interfaces/";
    case "primary_ip4":
    case "primary_ip6":
      return "ipam/ip-addresses/";
    case "primary_mac_address":
      return "dcim/mac-addresses/";
    case "tags":
    case "add_tags":
    case "remove_tags":
      return "extras/tags/";
    case "device":
      return "dcim/devices/";
    case "untagged_vlan":
    case "vlan":
      return "ipam/vlans/";
    case "cluster":
      return item.path.startsWith("plugins/")
        ? "plugins/service/clusters/"
        : "virtualization/clusters/";
    case "node":
      return "plugins/service/nodes/";
    case "site":
    case "scope_id":
      return "dcim/sites/";
    default:
      return null;
  }
}
/** When it ran, not what it wrote. */
const CLOCK = /^(last_seen|last_synced)$/;

/**
 * A plan made comparable across two runs: objects created in a run are named by what they are
 * (their ids differ: negative in a dry run, real in the real one), timestamps dropped.
 */
function comparable(plan: any[]): string[] {
  const made = new Map<string, string>();
  for (const item of plan) {
    if (item.action === "create") made.set(`${item.path}#${item.id}`, item.object);
  }
  const ref = (path: string | null, v: unknown): unknown =>
    Array.isArray(v)
      ? v.map((x) => ref(path, x)).map(String).sort()
      : path && typeof v === "number" && made.has(`${path}#${v}`)
      ? `new:${made.get(`${path}#${v}`)}`
      : v;
  const fields = (item: any, o: Record<string, any> = {}, change = false) =>
    Object.fromEntries(
      Object.entries(o).filter(([k]) => !CLOCK.test(k)).sort(([a], [b]) => a < b ? -1 : 1)
        .map(([k, v]) => {
          const path = refPath(k, item, change ? {} : o);
          return [k, change ? { old: ref(path, v.old), new: ref(path, v.new) } : ref(path, v)];
        }),
    );
  return plan.map((item) =>
    JSON.stringify({
      step: item.step,
      action: item.action,
      path: item.path,
      object: item.object,
      id: item.action === "create" ? "new" : ref(item.path, item.id),
      fields: fields(item, item.fields),
      changes: fields(item, item.changes, true),
    })
  ).sort();
}

async function changeByHand(world: World) {
  const guests = (await world.hypervisor("GET", "/cluster/resources", { type: "vm" }))
    .sort((a: any, b: any) => a.vmid - b.vmid);
  const qemu = guests.filter((g: any) => g.type === "qemu");
  const [renamed, resized, destroyed] = qemu;
  await world.hypervisor("PUT", `/nodes/${renamed.node}/qemu/${renamed.vmid}/config`, {
    name: "renamed-upstream",
  });
  await world.hypervisor("PUT", `/nodes/${resized.node}/qemu/${resized.vmid}/config`, {
    memory: "3072",
    tags: "blue",
  });
  if (destroyed.status === "running") {
    await world.hypervisor("POST", `/nodes/${destroyed.node}/qemu/${destroyed.vmid}/status/stop`);
  }
  await world.hypervisor("DELETE", `/nodes/${destroyed.node}/qemu/${destroyed.vmid}`);
  await world.hypervisor("POST", `/nodes/${renamed.node}/qemu`, {
    vmid: "990",
    name: "brand-new",
    memory: "1024",
    net0: "virtio=BC:24:11:99:00:01,bridge=vmbr0",
    ipconfig0: "ip=10.9.0.5/24",
  });
  return { renamed, resized, destroyed };
}

Deno.test("e2e sync plan: a dry run writes nothing and its plan is exactly what the real run then writes", async () => {
  const world = await syncWorld("nodes=1,vms=4,cts=1,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    assert.deepEqual(errorsOf(await world.stream("/full-update/stream")), []);
    const { renamed, resized, destroyed } = await changeByHand(world);
    // The new guest's address is already in the inventory, unassigned (reserved by hand): the
    // real run adopts it (docs/sync.md, "Addresses already in the inventory"), so must the plan.
    const reserved = await world.inventoryCall("POST", "ipam/ip-addresses/", {
      address: "10.9.0.5/24",
      status: "reserved",
      description: "kept for brand-new",
    });
    assert.equal(reserved.status, 201, JSON.stringify(reserved.body));

    // The plan, as SSE frames: nothing written.
    const before = inventoryWrites(world.seen).length;
    const frames = await world.stream("/full-update/stream?dry_run=true");
    assert.deepEqual(errorsOf(frames), []);
    assert.deepEqual(inventoryWrites(world.seen).slice(before), [], "a dry run writes nothing");
    const planFrames = frames.filter((f) => f.event === "plan").map((f) => f.data);
    const done = frames.at(-1)!.data;
    assert.equal(done.dry_run, true);
    assert.match(done.message, /^Dry run, nothing written/);
    assert.deepEqual(done.plan, planFrames, "the complete frame carries the same plan");

    const vmPlan = planFrames.filter((p) => p.path === "virtualization/virtual-machines/");
    const rename = vmPlan.find((p) => p.changes?.name);
    assert.equal(rename.changes.name.old, renamed.name);
    assert.equal(rename.changes.name.new, "renamed-upstream");
    assert.equal(rename.step, "virtual-machines");
    const memory = vmPlan.find((p) => p.changes?.memory);
    assert.deepEqual(memory.changes.memory.new, 3072);
    assert.match(memory.object, new RegExp(resized.name));
    const mark = vmPlan.find((p) => p.action === "mark");
    assert.equal(mark.object, `virtual machines ${destroyed.name}`);
    assert.equal(mark.changes.status.new, "decommissioning");
    const created = vmPlan.find((p) => p.action === "create");
    assert.equal(created.fields.name, "brand-new");
    assert.ok(created.id < 0, "an object the dry run would make has a negative id");
    const addressPlan = planFrames.filter((p) =>
      p.path === "ipam/ip-addresses/" &&
      (p.fields?.address === "10.9.0.5/24" || p.id === reserved.body.id)
    );
    assert.equal(addressPlan.length, 1, JSON.stringify(addressPlan));
    const adopt = addressPlan[0];
    assert.equal(adopt.action, "update", "an unassigned address is adopted, not created");
    assert.equal(adopt.id, reserved.body.id);
    assert.ok(
      adopt.changes.assigned_object_id.new < 0,
      "children of a planned VM are planned too: the address goes to its planned interface",
    );
    assert.deepEqual(adopt.changes.status, { old: "reserved", new: "active" });

    // The same as JSON.
    const json = await world.backend("GET", "/full-update?dry_run=true");
    assert.equal(json.status, 200, JSON.stringify(json.body));
    assert.deepEqual(comparable(json.body.plan), comparable(planFrames));

    // The real run, reporting what it wrote: exactly the plan.
    const real = await world.backend("GET", "/full-update?plan=true");
    assert.equal(real.status, 200, JSON.stringify(real.body));
    assert.equal(real.body.dry_run, undefined);
    assert.deepEqual(comparable(real.body.plan), comparable(planFrames));
    // And the inventory holds it.
    const vms = await world.inventory("virtualization/virtual-machines/");
    assert.ok(vms.some((v: any) => v.name === "renamed-upstream"));
    assert.ok(vms.some((v: any) => v.name === "brand-new"));
    const addresses = (await world.inventory("ipam/ip-addresses/"))
      .filter((a: any) => a.address === "10.9.0.5/24");
    assert.deepEqual(addresses.map((a: any) => a.id), [reserved.body.id], "adopted, not doubled");
    assert.equal(addresses[0].assigned_object.virtual_machine.name, "brand-new");
    assert.equal(addresses[0].description, "kept for brand-new");
    // Nothing left to do: the next plan is empty.
    const after = await world.backend("GET", "/full-update?dry_run=true");
    assert.deepEqual(after.body.plan, []);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync options: names owned by the admin survive a run; unknown options are a 422 naming them; stages switch off; orphans deleted on request", async () => {
  const world = await syncWorld("nodes=1,vms=3,cts=1,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    assert.deepEqual(errorsOf(await world.stream("/full-update/stream")), []);
    const [vm] = await world.inventory("virtualization/virtual-machines/?ordering=id");
    const renamed = await world.inventoryCall(
      "PATCH",
      `virtualization/virtual-machines/${vm.id}/`,
      { name: "named-by-the-admin" },
    );
    assert.equal(renamed.status, 200);

    const kept = await world.backend(
      "GET",
      "/virtualization/virtual-machines/create?overwrite_names=false",
    );
    assert.equal(kept.status, 200, JSON.stringify(kept.body));
    const read = async () =>
      (await world.inventoryCall("GET", `virtualization/virtual-machines/${vm.id}/`)).body;
    assert.equal((await read()).name, "named-by-the-admin", "the admin owns names");
    // By default the hypervisor owns names (docs/sync.md): the next run puts it back.
    await world.backend("GET", "/virtualization/virtual-machines/create");
    assert.equal((await read()).name, vm.name);

    const bad = await world.backend("GET", "/full-update?dry_runn=true&overwrite_names=maybe");
    assert.equal(bad.status, 422, JSON.stringify(bad.body));
    const text = JSON.stringify(bad.body);
    assert.match(text, /dry_runn/);
    assert.match(text, /overwrite_names/);

    const noSdn = await world.stream("/full-update/stream?stage_sdn=false&stage_task_history=0");
    const sdn = noSdn.find((f) =>
      f.event === "step" && f.data.step === "sdn" &&
      f.data.status === "completed"
    );
    assert.match(sdn!.data.message, /skipped \(stage_sdn=false\)/);

    // A destroyed guest: deleted on request instead of marked.
    const guests = await world.hypervisor("GET", "/cluster/resources", { type: "vm" });
    const gone = guests.find((g: any) => g.type === "qemu" && g.status !== "running") ??
      guests.find((g: any) => g.type === "qemu");
    if (gone.status === "running") {
      await world.hypervisor("POST", `/nodes/${gone.node}/qemu/${gone.vmid}/status/stop`);
    }
    await world.hypervisor("DELETE", `/nodes/${gone.node}/qemu/${gone.vmid}`);
    const states = await world.inventory("plugins/service/vm-sync-state/");
    const goneVm = states.find((s: any) => s.vmid === gone.vmid).virtual_machine.id;
    const del = await world.backend(
      "GET",
      "/virtualization/virtual-machines/create?delete_orphans=true",
    );
    assert.equal(del.status, 200, JSON.stringify(del.body));
    assert.equal(del.body.result.deleted, 1);
    const lookup = await world.inventoryCall("GET", `virtualization/virtual-machines/${goneVm}/`);
    assert.equal(lookup.status, 404);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync plan: `deno task sync --dry-run` prints the plan and writes nothing", async () => {
  const world = await syncWorld("nodes=1,vms=4,cts=1,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    assert.deepEqual(errorsOf(await world.stream("/full-update/stream")), []);
    const { renamed } = await changeByHand(world);
    let out = "";
    let err = "";
    const io: SyncIo = {
      fetch: globalThis.fetch,
      out: (t) => void (out += t),
      err: (t) => void (err += t),
      columns: () => 160,
      color: false,
      now: () => 0,
      isTerminal: false,
    };
    const before = inventoryWrites(world.seen).length;
    const code = await syncMain(["--url", world.base, "--dry-run"], { BRIDGEBOX_API_KEY: KEY }, io);
    assert.equal(code, 0, err);
    assert.deepEqual(inventoryWrites(world.seen).slice(before), []);
    assert.match(out, /as a dry run \(nothing is written\)/);
    assert.match(out, /Plan \(dry run, nothing written\): \d+ write\(s\)/);
    assert.match(
      out,
      new RegExp(
        `virtual-machines +update +virtual machines ${renamed.name}: name "${renamed.name}" → "renamed-upstream"`,
      ),
    );
    assert.match(out, /virtual-machines +create +virtual machines brand-new: name="brand-new"/);
    assert.match(out, /virtual-machines +mark +virtual machines /);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync options: an endpoint's sync policy is the default of its runs, a run's query wins; a bad policy is a 422", async () => {
  const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    const bad = await world.backend("POST", "/hypervisor/endpoints", {
      name: "bad",
      ip: "127.0.0.1",
      port: world.port,
      password: "x",
      sync_policy: { overwrite_nams: false },
    });
    assert.equal(bad.status, 422);
    assert.match(JSON.stringify(bad.body), /overwrite_nams/);
    const id = await world.addHypervisorCopy("lab", {
      sync_policy: { overwrite_names: false, stage_sdn: "false" },
    });
    const copy = (await world.backend("GET", "/hypervisor/endpoints")).body
      .find((e: any) => e.id === id);
    // Read back as JSON booleans, whether sent as false or "false".
    assert.deepEqual(copy.sync_policy, { overwrite_names: false, stage_sdn: false });
    const first = await world.stream("/full-update/stream");
    assert.deepEqual(errorsOf(first), []);
    assert.deepEqual(await world.inventory("ipam/prefixes/"), [], "sdn left out by the policy");
    const [vm] = await world.inventory("virtualization/virtual-machines/?ordering=id");
    await world.inventoryCall("PATCH", `virtualization/virtual-machines/${vm.id}/`, {
      name: "named-by-the-admin",
    });
    const read = async () =>
      (await world.inventoryCall("GET", `virtualization/virtual-machines/${vm.id}/`)).body.name;
    await world.backend("GET", "/virtualization/virtual-machines/create");
    assert.equal(await read(), "named-by-the-admin", "the policy gives names to the admin");
    await world.backend("GET", "/virtualization/virtual-machines/create?overwrite_names=true");
    assert.equal(await read(), vm.name, "the run's query wins over the policy");
  } finally {
    await world.close();
  }
});
