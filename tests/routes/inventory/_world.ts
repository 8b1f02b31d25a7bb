import type { Inv } from "./_setup.ts";

/** A cluster, two VMs with one interface each; returns their ids. */
export async function world(inv: Inv) {
  const post = async (path: string, body: unknown) => (await inv.created(path, body)).id as number;
  const type = await post("/api/virtualization/cluster-types/", { name: "PVE", slug: "pve" });
  const cluster = await post("/api/virtualization/clusters/", { name: "c1", type });
  const vm1 = await post("/api/virtualization/virtual-machines/", { name: "vm1", cluster });
  const vm2 = await post("/api/virtualization/virtual-machines/", { name: "vm2", cluster });
  const if1 = await post("/api/virtualization/interfaces/", { virtual_machine: vm1, name: "net0" });
  const if2 = await post("/api/virtualization/interfaces/", { virtual_machine: vm2, name: "net0" });
  const ip = (address: string, iface: number) =>
    post("/api/ipam/ip-addresses/", {
      address,
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: iface,
    });
  return { post, cluster, vm1, vm2, if1, if2, ip };
}
