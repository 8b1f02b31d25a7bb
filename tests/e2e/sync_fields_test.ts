/**
 * What the sync writes, field by field (docs/sync.md, "Fields the sync writes"): the mock changed
 * by hand through its API, the inventory read back as a NetBox client would.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { addInventoryCopy, inventoryWrites, type SseFrame, syncWorld } from "./_sync_harness.ts";

const FAST_TASKS = { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" };
const errorsOf = (frames: SseFrame[]) =>
  frames.filter((f) => f.event === "error").map((f) => f.data);

async function guestList(world: Awaited<ReturnType<typeof syncWorld>>) {
  const list = await world.hypervisor("GET", "/cluster/resources", { type: "vm" });
  return list.sort((a: any, b: any) => a.vmid - b.vmid);
}

Deno.test("e2e sync fields: node primary IPs, description and VLAN interfaces; CD-ROMs, templates, the whole task archive, DNS names, netN interface names", async () => {
  const world = await syncWorld("nodes=1,vms=6,cts=2,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const guests = await guestList(world);
    const node = guests[0].node;
    const qemu = guests.filter((g: any) => g.type === "qemu");
    const running = qemu.find((g: any) => g.status === "running");
    const other = qemu.find((g: any) => g !== running);
    const ct = guests.find((g: any) => g.type === "lxc");
    assert.ok(running && other && ct, JSON.stringify(guests));
    // By hand: one QEMU guest becomes a template, a running one loses its static address (its
    // guest agent reports it, and its host name), a container gets a search domain.
    if (other.status === "running") {
      await world.hypervisor("POST", `/nodes/${node}/qemu/${other.vmid}/status/stop`);
    }
    await world.hypervisor("POST", `/nodes/${node}/qemu/${other.vmid}/template`);
    await world.hypervisor("PUT", `/nodes/${node}/qemu/${running.vmid}/config`, {
      ipconfig0: "ip=dhcp",
    });
    await world.hypervisor("PUT", `/nodes/${node}/lxc/${ct.vmid}/config`, {
      searchdomain: "lab.example",
    });
    // More tasks than Proxmox's first page of 50.
    const ctState = ct.status;
    for (let i = 0; i < 30; i++) {
      const [first, second] = ctState === "running" ? ["stop", "start"] : ["start", "stop"];
      await world.hypervisor("POST", `/nodes/${node}/lxc/${ct.vmid}/status/${first}`);
      await world.hypervisor("POST", `/nodes/${node}/lxc/${ct.vmid}/status/${second}`);
    }
    const upstreamTasks = await world.hypervisor("GET", `/nodes/${node}/tasks`, {
      limit: "100000",
    });
    assert.ok(upstreamTasks.length > 60, `${upstreamTasks.length} tasks`);

    const frames = await world.stream("/full-update/stream");
    assert.deepEqual(errorsOf(frames), []);

    // Node: primary IPv4 (the address the cluster knows it by), description, VLAN interface.
    const [device] = await world.inventory("dcim/devices/");
    const status = await world.hypervisor("GET", "/cluster/status");
    const nodeIp = status.find((s: any) => s.type === "node" && s.name === node)?.ip;
    const network = await world.hypervisor("GET", `/nodes/${node}/network`);
    const mgmt = network.find((n: any) => n.gateway);
    assert.ok(device.primary_ip4, "the node has a primary IPv4");
    assert.equal(device.primary_ip4.address, nodeIp ? `${nodeIp}/24` : mgmt.cidr);
    const version = (await world.hypervisor("GET", "/version")).version;
    assert.match(device.description, new RegExp(`^Proxmox VE ${version} node, \\d+ CPUs`));
    const ifaces = await world.inventory(`dcim/interfaces/?device_id=${device.id}`);
    const vlanIface = ifaces.find((i: any) => i.name === "vmbr1.10");
    assert.equal(vlanIface.mode?.value, "access");
    assert.equal(vlanIface.untagged_vlan?.vid, 10);
    assert.equal(ifaces.find((i: any) => i.name === "vmbr0").mode, null);

    // Guests, through their sync-state.
    const states = await world.inventory("plugins/service/vm-sync-state/");
    const vmOf = (vmid: number) => states.find((s: any) => s.vmid === vmid).virtual_machine.id;
    const vms = new Map(
      (await world.inventory("virtualization/virtual-machines/")).map((v: any) => [v.id, v]),
    );
    const tagsOf = (vmid: number) => vms.get(vmOf(vmid)).tags.map((t: any) => t.slug);
    assert.ok(tagsOf(other.vmid).includes("bridgebox-template"));
    assert.ok(!tagsOf(running.vmid).includes("bridgebox-template"));

    const disks = await world.inventory(
      `virtualization/virtual-disks/?virtual_machine_id=${vmOf(running.vmid)}`,
    );
    const cdrom = disks.find((d: any) => d.name === "ide2");
    assert.ok(cdrom, `CD-ROM recorded: ${JSON.stringify(disks.map((d: any) => d.name))}`);
    assert.equal(cdrom.size, 0);
    assert.equal(cdrom.description, "CD-ROM: none");

    const tasks = await world.inventory("plugins/service/task-history/");
    assert.equal(tasks.filter((t: any) => t.node_name === node).length, upstreamTasks.length);

    const ips = await world.inventory("ipam/ip-addresses/");
    const vmIfaces = await world.inventory("virtualization/interfaces/");
    const ipsOf = (vmid: number) => {
      const mine = new Set(
        vmIfaces.filter((i: any) => i.virtual_machine.id === vmOf(vmid)).map((i: any) => i.id),
      );
      return ips.filter((a: any) => mine.has(a.assigned_object_id));
    };
    const agentIps = ipsOf(running.vmid);
    assert.ok(agentIps.length > 0, "the agent's addresses arrived");
    assert.ok(agentIps.every((a: any) => a.dns_name === `vm-${running.vmid}`), "agent host name");
    const ctIps = ipsOf(ct.vmid);
    assert.ok(ctIps.length > 0);
    assert.ok(ctIps.every((a: any) => a.dns_name === `ct-${ct.vmid}.lab.example`));

    // Containers' interfaces are named by the Proxmox key, like QEMU's; `name=` is described.
    const ctIfaces = vmIfaces.filter((i: any) => i.virtual_machine.id === vmOf(ct.vmid));
    assert.deepEqual(
      ctIfaces.map((i: any) => i.name).sort(),
      ["net0", "net1"].slice(
        0,
        ctIfaces.length,
      ),
    );
    assert.match(ctIfaces.find((i: any) => i.name === "net0").description, /^eth0, bridge vmbr0/);

    // Nothing changed: a rerun writes nothing.
    const before = inventoryWrites(world.seen).length;
    const again = await world.stream("/full-update/stream");
    assert.deepEqual(errorsOf(again), []);
    assert.deepEqual(inventoryWrites(world.seen).slice(before), []);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync fields: with custom_fields_enabled the six Hypervisor custom fields are filled and kept current", async () => {
  const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const made = await world.backend("POST", "/extras/custom-fields/reconcile");
    assert.equal(made.status, 200, JSON.stringify(made.body));
    // Off by default (the plugin setting): the fields exist but stay empty.
    assert.deepEqual(errorsOf(await world.stream("/full-update/stream")), []);
    const vmsNow = async () => {
      const states = await world.inventory("plugins/service/vm-sync-state/");
      const vms = new Map(
        (await world.inventory("virtualization/virtual-machines/")).map((v: any) => [v.id, v]),
      );
      return new Map(states.map((s: any) => [s.vmid, vms.get(s.virtual_machine.id)]));
    };
    for (const vm of (await vmsNow()).values()) {
      assert.equal(vm.custom_fields.hypervisor_vmid, null);
    }

    const on = await world.inventoryCall("PATCH", "plugins/service/settings/", {
      custom_fields_enabled: true,
    });
    assert.equal(on.status, 200, JSON.stringify(on.body));
    assert.deepEqual(errorsOf(await world.stream("/full-update/stream")), []);
    const guests = await guestList(world);
    const filled = await vmsNow();
    for (const g of guests) {
      const config = await world.hypervisor("GET", `/nodes/${g.node}/${g.type}/${g.vmid}/config`);
      const cf = filled.get(g.vmid).custom_fields;
      assert.equal(cf.hypervisor_vmid, g.vmid);
      assert.equal(cf.hypervisor_vm_type, g.type);
      assert.equal(cf.hypervisor_start_at_boot, Number(config.onboot) === 1);
      assert.equal(cf.hypervisor_qemu_agent, g.type === "qemu" && String(config.agent) === "1");
      assert.equal(cf.hypervisor_unprivileged, g.type === "lxc" && config.unprivileged === 1);
      assert.ok(cf.hypervisor_last_synced, `last synced of ${g.vmid}`);
    }

    // Kept current: a changed guest is rewritten (and its last-synced moves), the others not.
    const [changed, other] = guests;
    const config = await world.hypervisor(
      "GET",
      `/nodes/${changed.node}/${changed.type}/${changed.vmid}/config`,
    );
    await world.hypervisor("PUT", `/nodes/${changed.node}/${changed.type}/${changed.vmid}/config`, {
      onboot: Number(config.onboot) === 1 ? "0" : "1",
    });
    assert.deepEqual(errorsOf(await world.stream("/full-update/stream")), []);
    const after = await vmsNow();
    assert.equal(
      after.get(changed.vmid).custom_fields.hypervisor_start_at_boot,
      Number(config.onboot) !== 1,
    );
    // Rewritten with the change (same second or later: the clock is not faked here).
    assert.ok(
      Date.parse(after.get(changed.vmid).custom_fields.hypervisor_last_synced) >=
        Date.parse(filled.get(changed.vmid).custom_fields.hypervisor_last_synced),
    );
    assert.equal(
      after.get(other.vmid).custom_fields.hypervisor_last_synced,
      filled.get(other.vmid).custom_fields.hypervisor_last_synced,
    );
    // Nothing changed: nothing written.
    const before = inventoryWrites(world.seen).length;
    await world.stream("/full-update/stream");
    assert.deepEqual(inventoryWrites(world.seen).slice(before), []);
  } finally {
    await world.close();
  }
});
