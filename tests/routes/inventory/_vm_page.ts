/**
 * A representative inventory for rendering: VMs in clusters, each VM with a site, tenant,
 * role, two tags, custom fields (text, integer, and an object one pointing at a cluster),
 * an interface and a primary IPv4 address. Shared by the byte-for-byte render test and
 * bench/inventory_render_bench.ts. Timestamps come from a fixed clock, so answers are stable.
 */
import { createInventoryApp } from "../../../routes/inventory/mod.ts";
import { testDeps } from "../../_helpers.ts";

export const TOKEN = "0123456789abcdef0123456789abcdef01234567";
export const HEADERS = { authorization: `Token ${TOKEN}`, "content-type": "application/json" };
/** 2026-01-02T03:04:05.000Z */
const FIXED_NOW = Date.UTC(2026, 0, 2, 3, 4, 5);

export type InventoryApp = Awaited<ReturnType<typeof createInventoryApp>>;

export async function call(app: InventoryApp, method: string, path: string, body?: unknown) {
  const res = await app.request(`http://inv.test${path}`, {
    method,
    headers: HEADERS,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 300) {
    throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  }
  return json;
}

export interface VmStore {
  app: InventoryApp;
  deps: Awaited<ReturnType<typeof testDeps>>;
  /** The id of a cluster in the middle (holding `perCluster` VMs). */
  cluster: number;
  close(): void;
}

/**
 * `vms` virtual machines, `perCluster` in each cluster. `simple`: VMs with a name, cluster,
 * status and memory only (the page the performance issue measured, ~30 KB for 50 rows).
 */
export async function vmStore(
  vms: number,
  perCluster: number,
  shape: "rich" | "simple" = "rich",
): Promise<VmStore> {
  const deps = await testDeps({ INVENTORY_BOOTSTRAP_TOKEN: TOKEN }, { now: () => FIXED_NOW });
  const app = await createInventoryApp(deps);
  const post = (path: string, body: unknown) => call(app, "POST", `/api/${path}`, body);
  const site = await post("dcim/sites/", { name: "Amsterdam 1", slug: "ams1" });
  const tenant = await post("tenancy/tenants/", { name: "Platform team", slug: "platform" });
  const role = await post("dcim/device-roles/", {
    name: "Application server",
    slug: "app-server",
    color: "2196f3",
    vm_role: true,
  });
  const tags = await post("extras/tags/", [
    { name: "production", slug: "production", color: "f44336" },
    { name: "web", slug: "web", color: "4caf50" },
  ]);
  const type = await post("virtualization/cluster-types/", { name: "Proxmox VE", slug: "pve" });
  const clusterCount = Math.ceil(vms / perCluster);
  const clusters = await post(
    "virtualization/clusters/",
    Array.from({ length: clusterCount }, (_, i) => ({
      name: `pve-cluster-${i}`,
      type: type.id,
      scope_type: "dcim.site",
      scope_id: site.id,
      description: `Proxmox cluster ${i}`,
    })),
  );
  await post("extras/custom-fields/", [
    { name: "owner", type: "text", object_types: ["virtualization.virtualmachine"] },
    { name: "ticket", type: "integer", object_types: ["virtualization.virtualmachine"] },
    {
      name: "backup_cluster",
      type: "object",
      object_types: ["virtualization.virtualmachine"],
      related_object_type: "virtualization.cluster",
    },
  ]);
  for (let start = 0; start < vms; start += 500) {
    const count = Math.min(500, vms - start);
    if (shape === "simple") {
      await post(
        "virtualization/virtual-machines/",
        Array.from({ length: count }, (_, k) => ({
          name: `vm-${start + k}`,
          cluster: clusters[(start + k) % clusterCount].id,
          status: "active",
          memory: 1024,
        })),
      );
      continue;
    }
    const created = await post(
      "virtualization/virtual-machines/",
      Array.from({ length: count }, (_, k) => {
        const i = start + k;
        return {
          name: `vm-${String(i).padStart(5, "0")}`,
          cluster: clusters[i % clusterCount].id,
          tenant: tenant.id,
          role: role.id,
          status: i % 7 === 0 ? "offline" : "active",
          vcpus: 2,
          memory: 4096,
          disk: 32768,
          description: `Application server ${i}`,
          tags: [tags[0].id, tags[1].id],
          custom_fields: {
            owner: `team-${i % 5}`,
            ticket: 1000 + i,
            backup_cluster: clusters[(i + 1) % clusterCount].id,
          },
        };
      }),
    );
    const ifaces = await post(
      "virtualization/interfaces/",
      created.map((vm: { id: number }) => ({ virtual_machine: vm.id, name: "eth0" })),
    );
    const ips = await post(
      "ipam/ip-addresses/",
      ifaces.map((iface: { id: number }, k: number) => ({
        address: `10.${(start + k) >> 16 & 255}.${(start + k) >> 8 & 255}.${(start + k) & 255}/32`,
        assigned_object_type: "virtualization.vminterface",
        assigned_object_id: iface.id,
        status: "active",
      })),
    );
    await call(
      app,
      "PATCH",
      "/api/virtualization/virtual-machines/",
      created.map((vm: { id: number }, k: number) => ({ id: vm.id, primary_ip4: ips[k].id })),
    );
  }
  return {
    app,
    deps,
    cluster: clusters[Math.floor(clusterCount / 2)].id,
    close: () => deps.kv.close(),
  };
}

/** The pages the render test pins byte for byte (the first is the benchmarked one). */
export function pagePaths(cluster: number): string[] {
  const base = `/api/virtualization/virtual-machines/?cluster_id=${cluster}&limit=50`;
  return [
    base,
    `${base}&brief=1`,
    `${base}&fields=id,name,cluster,tags,custom_fields,primary_ip`,
    `${base}&omit=custom_fields,tags&offset=50`,
    `/api/virtualization/clusters/?limit=5`,
    `/api/ipam/ip-addresses/?limit=5`,
    `/api/virtualization/interfaces/?limit=5`,
  ];
}
