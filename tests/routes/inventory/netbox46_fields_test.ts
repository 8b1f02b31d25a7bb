/**
 * Every model renders NetBox 4.6's complete field set and brief form, and the shapes clients
 * index: counts, content types as plain strings, choices as {value, label}, nested brief
 * objects, nulls where empty. The tables are NetBox 4.6.8's serializer field lists
 * (Meta.fields, Meta.brief_fields), written as data.
 */
import assert from "node:assert/strict";
import { type Inv, setup } from "./_setup.ts";

const COMMON = [
  "id",
  "url",
  "display_url",
  "display",
  "tags",
  "custom_fields",
  "created",
  "last_updated",
];

/** path → NetBox 4.6.8's serializer fields (Meta.fields), without COMMON where it has them all. */
const NETBOX_46: Record<string, string[]> = {
  "tenancy/tenant-groups/": [
    "name",
    "slug",
    "parent",
    "description",
    "tenant_count",
    "owner",
    "comments",
    "_depth",
  ],
  "tenancy/tenants/": [
    "name",
    "slug",
    "group",
    "description",
    "owner",
    "comments",
    "circuit_count",
    "device_count",
    "ipaddress_count",
    "prefix_count",
    "rack_count",
    "site_count",
    "virtualmachine_count",
    "vlan_count",
    "vrf_count",
    "cluster_count",
  ],
  "tenancy/contact-groups/": [
    "name",
    "slug",
    "parent",
    "description",
    "contact_count",
    "owner",
    "comments",
    "_depth",
  ],
  "tenancy/contact-roles/": ["name", "slug", "description", "owner", "comments"],
  "tenancy/contacts/": [
    "groups",
    "name",
    "title",
    "phone",
    "email",
    "address",
    "link",
    "description",
    "owner",
    "comments",
  ],
  "dcim/regions/": [
    "name",
    "slug",
    "parent",
    "description",
    "site_count",
    "prefix_count",
    "owner",
    "comments",
    "_depth",
  ],
  "dcim/site-groups/": [
    "name",
    "slug",
    "parent",
    "description",
    "site_count",
    "prefix_count",
    "owner",
    "comments",
    "_depth",
  ],
  "dcim/sites/": [
    "name",
    "slug",
    "status",
    "region",
    "group",
    "tenant",
    "facility",
    "time_zone",
    "description",
    "physical_address",
    "shipping_address",
    "latitude",
    "longitude",
    "owner",
    "comments",
    "asns",
    "circuit_count",
    "device_count",
    "prefix_count",
    "rack_count",
    "virtualmachine_count",
    "vlan_count",
  ],
  "dcim/locations/": [
    "name",
    "slug",
    "site",
    "parent",
    "status",
    "tenant",
    "facility",
    "description",
    "rack_count",
    "device_count",
    "prefix_count",
    "owner",
    "comments",
    "_depth",
  ],
  "dcim/rack-roles/": ["name", "slug", "color", "description", "owner", "comments", "rack_count"],
  "dcim/racks/": [
    "name",
    "facility_id",
    "site",
    "location",
    "group",
    "tenant",
    "status",
    "role",
    "serial",
    "asset_tag",
    "rack_type",
    "form_factor",
    "width",
    "u_height",
    "starting_unit",
    "weight",
    "max_weight",
    "weight_unit",
    "desc_units",
    "outer_width",
    "outer_height",
    "outer_depth",
    "outer_unit",
    "mounting_depth",
    "airflow",
    "description",
    "owner",
    "comments",
    "device_count",
    "powerfeed_count",
  ],
  "dcim/manufacturers/": [
    "name",
    "slug",
    "description",
    "owner",
    "comments",
    "devicetype_count",
    "moduletype_count",
    "inventoryitem_count",
    "platform_count",
  ],
  "dcim/device-types/": [
    "manufacturer",
    "default_platform",
    "model",
    "slug",
    "part_number",
    "u_height",
    "exclude_from_utilization",
    "is_full_depth",
    "subdevice_role",
    "airflow",
    "weight",
    "weight_unit",
    "front_image",
    "rear_image",
    "description",
    "owner",
    "comments",
    "device_count",
    "console_port_template_count",
    "console_server_port_template_count",
    "power_port_template_count",
    "power_outlet_template_count",
    "interface_template_count",
    "front_port_template_count",
    "rear_port_template_count",
    "device_bay_template_count",
    "module_bay_template_count",
    "inventory_item_template_count",
  ],
  "dcim/device-roles/": [
    "name",
    "slug",
    "color",
    "vm_role",
    "config_template",
    "parent",
    "description",
    "device_count",
    "virtualmachine_count",
    "owner",
    "comments",
    "_depth",
  ],
  "dcim/platforms/": [
    "parent",
    "name",
    "slug",
    "manufacturer",
    "config_template",
    "description",
    "owner",
    "comments",
    "device_count",
    "virtualmachine_count",
    "_depth",
  ],
  "dcim/devices/": [
    "name",
    "device_type",
    "role",
    "tenant",
    "platform",
    "serial",
    "asset_tag",
    "site",
    "location",
    "rack",
    "position",
    "face",
    "latitude",
    "longitude",
    "parent_device",
    "status",
    "airflow",
    "primary_ip",
    "primary_ip4",
    "primary_ip6",
    "oob_ip",
    "cluster",
    "virtual_chassis",
    "vc_position",
    "vc_priority",
    "description",
    "owner",
    "comments",
    "config_template",
    "config_context",
    "local_context_data",
    "console_port_count",
    "console_server_port_count",
    "power_port_count",
    "power_outlet_count",
    "interface_count",
    "front_port_count",
    "rear_port_count",
    "device_bay_count",
    "module_bay_count",
    "inventory_item_count",
  ],
  "dcim/virtual-chassis/": [
    "name",
    "domain",
    "master",
    "description",
    "owner",
    "comments",
    "member_count",
    "members",
  ],
  "dcim/interfaces/": [
    "device",
    "vdcs",
    "module",
    "name",
    "label",
    "type",
    "enabled",
    "parent",
    "bridge",
    "bridge_interfaces",
    "lag",
    "mtu",
    "mac_address",
    "primary_mac_address",
    "mac_addresses",
    "speed",
    "duplex",
    "wwn",
    "mgmt_only",
    "description",
    "mode",
    "rf_role",
    "rf_channel",
    "poe_mode",
    "poe_type",
    "rf_channel_frequency",
    "rf_channel_width",
    "tx_power",
    "untagged_vlan",
    "tagged_vlans",
    "qinq_svlan",
    "vlan_translation_policy",
    "mark_connected",
    "cable",
    "cable_end",
    "wireless_link",
    "link_peers",
    "link_peers_type",
    "wireless_lans",
    "vrf",
    "l2vpn_termination",
    "connected_endpoints",
    "connected_endpoints_type",
    "connected_endpoints_reachable",
    "owner",
    "count_ipaddresses",
    "count_fhrp_groups",
    "_occupied",
  ],
  "dcim/mac-addresses/": [
    "mac_address",
    "assigned_object_type",
    "assigned_object_id",
    "assigned_object",
    "description",
    "owner",
    "comments",
  ],
  "virtualization/cluster-types/": [
    "name",
    "slug",
    "description",
    "owner",
    "comments",
    "cluster_count",
  ],
  "virtualization/cluster-groups/": [
    "name",
    "slug",
    "description",
    "owner",
    "comments",
    "cluster_count",
  ],
  "virtualization/clusters/": [
    "name",
    "type",
    "group",
    "status",
    "tenant",
    "scope_type",
    "scope_id",
    "scope",
    "description",
    "owner",
    "comments",
    "device_count",
    "virtualmachine_count",
    "allocated_vcpus",
    "allocated_memory",
    "allocated_disk",
  ],
  "virtualization/virtual-machines/": [
    "name",
    "virtual_machine_type",
    "role",
    "status",
    "start_on_boot",
    "site",
    "cluster",
    "device",
    "platform",
    "primary_ip",
    "primary_ip4",
    "primary_ip6",
    "vcpus",
    "memory",
    "disk",
    "description",
    "serial",
    "tenant",
    "owner",
    "comments",
    "local_context_data",
    "config_template",
    "interface_count",
    "virtual_disk_count",
    "config_context",
  ],
  "virtualization/interfaces/": [
    "virtual_machine",
    "name",
    "enabled",
    "parent",
    "bridge",
    "mtu",
    "mac_address",
    "primary_mac_address",
    "mac_addresses",
    "description",
    "mode",
    "untagged_vlan",
    "tagged_vlans",
    "qinq_svlan",
    "vlan_translation_policy",
    "vrf",
    "l2vpn_termination",
    "owner",
    "count_ipaddresses",
    "count_fhrp_groups",
  ],
  "virtualization/virtual-disks/": ["virtual_machine", "name", "description", "size", "owner"],
  "ipam/vrfs/": [
    "name",
    "rd",
    "tenant",
    "enforce_unique",
    "description",
    "owner",
    "comments",
    "import_targets",
    "export_targets",
    "ipaddress_count",
    "prefix_count",
  ],
  "ipam/roles/": [
    "name",
    "slug",
    "weight",
    "description",
    "owner",
    "comments",
    "prefix_count",
    "vlan_count",
    "asn_count",
  ],
  "ipam/vlan-groups/": [
    "name",
    "slug",
    "scope_type",
    "scope_id",
    "scope",
    "vid_ranges",
    "total_vlan_ids",
    "tenant",
    "description",
    "owner",
    "comments",
    "vlan_count",
    "utilization",
  ],
  "ipam/vlans/": [
    "site",
    "group",
    "vid",
    "name",
    "tenant",
    "status",
    "role",
    "description",
    "qinq_role",
    "qinq_svlan",
    "owner",
    "comments",
    "l2vpn_termination",
    "prefix_count",
  ],
  "ipam/prefixes/": [
    "family",
    "prefix",
    "vrf",
    "scope_type",
    "scope_id",
    "scope",
    "tenant",
    "vlan",
    "status",
    "role",
    "is_pool",
    "mark_utilized",
    "description",
    "owner",
    "comments",
    "children",
    "_depth",
  ],
  "ipam/ip-addresses/": [
    "family",
    "address",
    "vrf",
    "tenant",
    "status",
    "role",
    "assigned_object_type",
    "assigned_object_id",
    "assigned_object",
    "nat_inside",
    "nat_outside",
    "dns_name",
    "description",
    "owner",
    "comments",
  ],
  "ipam/services/": [
    "parent_object_type",
    "parent_object_id",
    "parent",
    "name",
    "protocol",
    "ports",
    "ipaddresses",
    "description",
    "owner",
    "comments",
  ],
  "virtualization/virtual-machine-types/": [
    "name",
    "slug",
    "default_platform",
    "default_vcpus",
    "default_memory",
    "description",
    "owner",
    "comments",
    "virtual_machine_count",
  ],
};

/** Models without the whole COMMON set: their complete NetBox 4.6.8 field list. */
const WHOLE: Record<string, string[]> = {
  "tenancy/contact-assignments/": [
    "id",
    "url",
    "display",
    "object_type",
    "object_id",
    "object",
    "contact",
    "role",
    "priority",
    "tags",
    "custom_fields",
    "created",
    "last_updated",
  ],
  "extras/tags/": [
    "id",
    "url",
    "display_url",
    "display",
    "name",
    "slug",
    "color",
    "description",
    "weight",
    "object_types",
    "tagged_items",
    "created",
    "last_updated",
  ],
  "extras/config-contexts/": [
    "id",
    "url",
    "display_url",
    "display",
    "name",
    "weight",
    "profile",
    "description",
    "is_active",
    "regions",
    "site_groups",
    "sites",
    "locations",
    "device_types",
    "roles",
    "platforms",
    "cluster_types",
    "cluster_groups",
    "clusters",
    "tenant_groups",
    "tenants",
    "owner",
    "tags",
    "data_source",
    "data_path",
    "data_file",
    "data_synced",
    "data",
    "created",
    "last_updated",
  ],
};

/** path → NetBox 4.6.8's brief fields (Meta.brief_fields). */
const BRIEF_46: Record<string, string[]> = {
  "tenancy/tenant-groups/": [
    "id",
    "url",
    "display",
    "name",
    "slug",
    "description",
    "tenant_count",
    "_depth",
  ],
  "tenancy/tenants/": ["id", "url", "display", "name", "slug", "description"],
  "tenancy/contact-groups/": [
    "id",
    "url",
    "display",
    "name",
    "slug",
    "description",
    "contact_count",
    "_depth",
  ],
  "tenancy/contact-roles/": ["id", "url", "display", "name", "slug", "description"],
  "tenancy/contacts/": ["id", "url", "display", "name", "description"],
  "tenancy/contact-assignments/": ["id", "url", "display", "contact", "role", "priority"],
  "dcim/regions/": ["id", "url", "display", "name", "slug", "description", "site_count", "_depth"],
  "dcim/site-groups/": [
    "id",
    "url",
    "display",
    "name",
    "slug",
    "description",
    "site_count",
    "_depth",
  ],
  "dcim/sites/": ["id", "url", "display", "name", "description", "slug"],
  "dcim/locations/": [
    "id",
    "url",
    "display",
    "name",
    "slug",
    "description",
    "rack_count",
    "_depth",
  ],
  "dcim/rack-roles/": ["id", "url", "display", "name", "slug", "description", "rack_count"],
  "dcim/racks/": ["id", "url", "display", "name", "description", "device_count"],
  "dcim/manufacturers/": ["id", "url", "display", "name", "slug", "description"],
  "dcim/device-types/": [
    "id",
    "url",
    "display",
    "manufacturer",
    "model",
    "slug",
    "description",
    "device_count",
  ],
  "dcim/device-roles/": [
    "id",
    "url",
    "display",
    "name",
    "slug",
    "description",
    "device_count",
    "virtualmachine_count",
    "_depth",
  ],
  "dcim/platforms/": [
    "id",
    "url",
    "display",
    "name",
    "slug",
    "description",
    "device_count",
    "virtualmachine_count",
    "_depth",
  ],
  "dcim/virtual-chassis/": [
    "id",
    "url",
    "display",
    "name",
    "master",
    "description",
    "member_count",
  ],
  "dcim/interfaces/": [
    "id",
    "url",
    "display",
    "device",
    "name",
    "description",
    "cable",
    "_occupied",
  ],
  "dcim/mac-addresses/": ["id", "url", "display", "mac_address", "description"],
  "virtualization/cluster-types/": [
    "id",
    "url",
    "display",
    "name",
    "slug",
    "description",
    "cluster_count",
  ],
  "virtualization/cluster-groups/": [
    "id",
    "url",
    "display",
    "name",
    "slug",
    "description",
    "cluster_count",
  ],
  "virtualization/clusters/": [
    "id",
    "url",
    "display",
    "name",
    "description",
    "virtualmachine_count",
  ],
  "virtualization/interfaces/": ["id", "url", "display", "virtual_machine", "name", "description"],
  "virtualization/virtual-disks/": [
    "id",
    "url",
    "display",
    "virtual_machine",
    "name",
    "description",
    "size",
  ],
  "ipam/vrfs/": ["id", "url", "display", "name", "rd", "description", "prefix_count"],
  "ipam/roles/": [
    "id",
    "url",
    "display",
    "name",
    "slug",
    "description",
    "prefix_count",
    "vlan_count",
    "asn_count",
  ],
  "ipam/vlan-groups/": ["id", "url", "display", "name", "slug", "description", "vlan_count"],
  "ipam/vlans/": ["id", "url", "display", "vid", "name", "description"],
  "ipam/prefixes/": ["id", "url", "display", "family", "prefix", "description", "_depth"],
  "ipam/ip-addresses/": ["id", "url", "display", "family", "address", "description"],
  "ipam/services/": ["id", "url", "display", "name", "protocol", "ports", "description"],
  "extras/tags/": ["id", "url", "display", "name", "slug", "color", "description"],
  "extras/config-contexts/": ["id", "url", "display", "name", "description"],
  "virtualization/virtual-machine-types/": ["id", "url", "display", "name", "slug", "description"],
};

/** One of every model, linked the way a synced inventory links them; path → id. */
async function populate(inv: Inv): Promise<Record<string, number>> {
  const ids: Record<string, number> = {};
  const post = async (path: string, body: Record<string, unknown>) => {
    const r = await inv.call("POST", `/api/${path}`, body);
    assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
    ids[path] ??= r.body.id;
    return r.body.id as number;
  };
  const tg = await post("tenancy/tenant-groups/", { name: "Customers", slug: "customers" });
  const tenant = await post("tenancy/tenants/", { name: "Acme", slug: "acme", group: tg });
  const region = await post("dcim/regions/", { name: "Europe", slug: "eu" });
  const sg = await post("dcim/site-groups/", { name: "Edge", slug: "edge" });
  const site = await post("dcim/sites/", {
    name: "AMS1",
    slug: "ams1",
    region,
    group: sg,
    tenant,
  });
  const location = await post("dcim/locations/", { name: "Hall A", slug: "hall-a", site });
  const rackRole = await post("dcim/rack-roles/", { name: "Compute", slug: "compute" });
  const rack = await post("dcim/racks/", { name: "R1", site, location, role: rackRole });
  const mfr = await post("dcim/manufacturers/", { name: "Proxmox", slug: "proxmox" });
  const platform = await post("dcim/platforms/", {
    name: "Debian 12",
    slug: "debian-12",
    manufacturer: mfr,
  });
  const dt = await post("dcim/device-types/", { manufacturer: mfr, model: "Node", slug: "node" });
  const role = await post("dcim/device-roles/", { name: "Hypervisor", slug: "hypervisor" });
  const ctype = await post("virtualization/cluster-types/", { name: "Proxmox", slug: "pve" });
  const cgroup = await post("virtualization/cluster-groups/", { name: "Prod", slug: "prod" });
  const cluster = await post("virtualization/clusters/", {
    name: "pve1",
    type: ctype,
    group: cgroup,
    scope_type: "dcim.site",
    scope_id: site,
  });
  const vc = await post("dcim/virtual-chassis/", { name: "stack1" });
  const device = await post("dcim/devices/", {
    name: "node1",
    device_type: dt,
    role,
    site,
    location,
    rack,
    platform,
    cluster,
    virtual_chassis: vc,
    vc_position: 1,
  });
  const iface = await post("dcim/interfaces/", { device, name: "eno1", type: "1000base-t" });
  const vmType = await post("virtualization/virtual-machine-types/", {
    name: "QEMU virtual machine",
    slug: "qemu-virtual-machine",
  });
  const vm = await post("virtualization/virtual-machines/", {
    name: "web1",
    cluster,
    platform,
    virtual_machine_type: vmType,
  });
  const vmif = await post("virtualization/interfaces/", { virtual_machine: vm, name: "net0" });
  await post("virtualization/virtual-disks/", { virtual_machine: vm, name: "scsi0", size: 8 });
  await post("dcim/mac-addresses/", {
    mac_address: "BC:24:11:00:00:01",
    assigned_object_type: "virtualization.vminterface",
    assigned_object_id: vmif,
  });
  const vrf = await post("ipam/vrfs/", { name: "prod", rd: "65000:1", tenant });
  const ipRole = await post("ipam/roles/", { name: "Servers", slug: "servers" });
  const vg = await post("ipam/vlan-groups/", {
    name: "AMS1",
    slug: "ams1",
    scope_type: "dcim.site",
    scope_id: site,
  });
  const vlan = await post("ipam/vlans/", { vid: 10, name: "servers", group: vg, role: ipRole });
  await post("ipam/prefixes/", {
    prefix: "10.0.0.0/24",
    vrf,
    vlan,
    role: ipRole,
    scope_type: "dcim.site",
    scope_id: site,
    tenant,
  });
  const ip = await post("ipam/ip-addresses/", {
    address: "10.0.0.5/24",
    vrf,
    tenant,
    assigned_object_type: "virtualization.vminterface",
    assigned_object_id: vmif,
  });
  await post("ipam/ip-addresses/", {
    address: "10.0.0.6/24",
    assigned_object_type: "dcim.interface",
    assigned_object_id: iface,
  });
  await post("ipam/services/", {
    parent_object_type: "virtualization.virtualmachine",
    parent_object_id: vm,
    name: "ssh",
    protocol: "tcp",
    ports: [22],
    ipaddresses: [ip],
  });
  const cg = await post("tenancy/contact-groups/", { name: "Ops", slug: "ops" });
  const cr = await post("tenancy/contact-roles/", { name: "Owner", slug: "owner" });
  const contact = await post("tenancy/contacts/", {
    name: "Ada",
    email: "ada@example.com",
    groups: [cg],
  });
  await post("tenancy/contact-assignments/", {
    object_type: "virtualization.virtualmachine",
    object_id: vm,
    contact,
    role: cr,
    priority: "primary",
  });
  await post("extras/tags/", { name: "pve", slug: "pve" });
  await post("extras/config-contexts/", {
    name: "dns",
    data: { dns: ["10.0.0.53"] },
    sites: [site],
  });
  return ids;
}

/**
 * Fields of NetBox 4.6.8 not rendered yet, each with its reason (the test fails if one appears
 * without being taken off this list, or if anything else differs).
 */
const NOT_YET: Record<string, { missing?: string[]; extra?: string[] }> = {};

Deno.test("every model renders NetBox 4.6's complete field set", async () => {
  const inv = await setup();
  try {
    const ids = await populate(inv);
    const paths = { ...Object.fromEntries(Object.keys(NETBOX_46).map((p) => [p, null])), ...WHOLE };
    const diffs: Array<{ path: string; missing: string[]; extra: string[] }> = [];
    for (const path of Object.keys(paths)) {
      const expected = WHOLE[path] ?? [...COMMON, ...NETBOX_46[path]];
      const got = await inv.call("GET", `/api/${path}${ids[path]}/`);
      assert.equal(got.status, 200, path);
      const keys = Object.keys(got.body);
      const missing = expected.filter((k) => !keys.includes(k));
      const extra = keys.filter((k) => !expected.includes(k));
      const known = NOT_YET[path] ?? {};
      if (
        JSON.stringify(missing) !== JSON.stringify(known.missing ?? []) ||
        JSON.stringify(extra) !== JSON.stringify(known.extra ?? [])
      ) diffs.push({ path, missing, extra });
    }
    assert.deepEqual(diffs, []);
  } finally {
    inv.close();
  }
});

Deno.test("every model's brief form is NetBox 4.6's brief_fields", async () => {
  const inv = await setup();
  try {
    const ids = await populate(inv);
    const diffs: Array<{ path: string; got: string[] }> = [];
    for (const [path, expected] of Object.entries(BRIEF_46)) {
      const got = await inv.call("GET", `/api/${path}?id=${ids[path]}&brief=1`);
      assert.equal(got.status, 200, path);
      const keys = Object.keys(got.body.results[0]);
      if (JSON.stringify([...keys].sort()) !== JSON.stringify([...expected].sort())) {
        diffs.push({ path, got: keys });
      }
    }
    assert.deepEqual(diffs, []);
  } finally {
    inv.close();
  }
});

Deno.test("counts, content types, nested objects and nulls have NetBox's shapes", async () => {
  const inv = await setup();
  try {
    const ids = await populate(inv);
    const get = async (path: string) => (await inv.call("GET", `/api/${path}${ids[path]}/`)).body;
    const site = await get("dcim/sites/");
    assert.equal(site.region.display, "Europe");
    assert.equal(site.group.slug, "edge");
    assert.deepEqual(
      [site.device_count, site.prefix_count, site.rack_count, site.vlan_count, site.circuit_count],
      [1, 1, 1, 0, 0],
    );
    assert.deepEqual(site.asns, []);
    const cluster = await get("virtualization/clusters/");
    // Content types are plain strings: clients compare them to "dcim.site".
    assert.equal(cluster.scope_type, "dcim.site");
    assert.equal(cluster.scope.display, "AMS1");
    assert.equal(cluster.group.display, "Prod");
    assert.deepEqual([cluster.device_count, cluster.virtualmachine_count], [1, 1]);
    const ip = await get("ipam/ip-addresses/");
    assert.equal(ip.assigned_object_type, "virtualization.vminterface");
    assert.deepEqual(ip.status, { value: "active", label: "Active" });
    assert.equal(ip.vrf.display, "prod (65000:1)");
    const mac = await get("dcim/mac-addresses/");
    assert.equal(mac.assigned_object_type, "virtualization.vminterface");
    const device = await get("dcim/devices/");
    assert.equal(device.platform.slug, "debian-12");
    assert.equal(device.location.display, "Hall A");
    assert.equal(device.rack.display, "R1");
    assert.equal(device.virtual_chassis.display, "stack1");
    assert.deepEqual([device.oob_ip, device.parent_device, device.airflow, device.face], [
      null,
      null,
      null,
      null,
    ]);
    assert.equal(device.interface_count, 1);
    // The site's config context (created in populate) applies; local data wins on top.
    assert.deepEqual(device.config_context, { dns: ["10.0.0.53"] });
    const iface = await get("dcim/interfaces/");
    assert.deepEqual([iface.count_ipaddresses, iface.count_fhrp_groups], [1, 0]);
    assert.equal(iface.virtual_chassis, undefined);
    const vmif = await get("virtualization/interfaces/");
    assert.deepEqual([vmif.count_ipaddresses, vmif.count_fhrp_groups], [1, 0]);
    const vm = await get("virtualization/virtual-machines/");
    assert.deepEqual([vm.interface_count, vm.virtual_disk_count], [1, 1]);
    assert.equal(vm.platform.display, "Debian 12");
    const region = await get("dcim/regions/");
    assert.deepEqual([region.site_count, region._depth, region.parent], [1, 0, null]);
    const vc = await get("dcim/virtual-chassis/");
    assert.equal(vc.member_count, 1);
    // NetBox's NestedDeviceSerializer: display_url included, as 4.6 renders `members`.
    const devId = ids["dcim/devices/"];
    const origin = new URL(vc.url).origin;
    const nestedDevice = {
      id: devId,
      url: `${origin}/api/dcim/devices/${devId}/`,
      display_url: `${origin}/dcim/devices/${devId}/`,
      display: "node1",
      name: "node1",
    };
    assert.deepEqual(vc.members, [nestedDevice]);
    assert.deepEqual(iface.bridge_interfaces, []);
    // Two interfaces bridged to eno1 are listed on it in natural name order (eno10 after eno2).
    for (const name of ["eno10", "eno2"]) {
      const made = await inv.call("POST", "/api/dcim/interfaces/", {
        device: devId,
        name,
        type: "virtual",
        bridge: iface.id,
      });
      assert.equal(made.status, 201, JSON.stringify(made.body));
    }
    const bridged = (await get("dcim/interfaces/")).bridge_interfaces;
    assert.deepEqual(bridged.map((b: { name: string }) => b.name), ["eno2", "eno10"]);
    assert.deepEqual(Object.keys(bridged[0]), [
      "id",
      "url",
      "display_url",
      "display",
      "device",
      "name",
      "cable",
      "_occupied",
    ]);
    assert.deepEqual(bridged[0].device, nestedDevice);
    assert.equal(bridged[0].display_url, `${origin}/dcim/interfaces/${bridged[0].id}/`);
    // A page renders each row's own members (one batched read, split per parent).
    const list = await inv.call("GET", `/api/dcim/interfaces/?device_id=${devId}&ordering=name`);
    const counts = list.body.results.map((
      r: { name: string; bridge_interfaces: unknown[] },
    ) => [r.name, r.bridge_interfaces.length]);
    assert.deepEqual(counts, [["eno1", 2], ["eno2", 0], ["eno10", 0]]);
    const assignment = await get("tenancy/contact-assignments/");
    assert.equal(assignment.object_type, "virtualization.virtualmachine");
    assert.equal(assignment.object.display, "web1");
    assert.equal(assignment.contact.display, "Ada");
    assert.equal((await get("tenancy/contact-groups/")).contact_count, 1);
    const service = await get("ipam/services/");
    assert.equal(service.display, "ssh (TCP/22)");
    assert.deepEqual(service.ports, [22]);
    assert.equal(service.ipaddresses[0].address, "10.0.0.5/24");
    const tenant = await get("tenancy/tenants/");
    assert.deepEqual([tenant.site_count, tenant.vrf_count, tenant.prefix_count], [1, 1, 1]);
    assert.equal(tenant.group.display, "Customers");
    // Counts are left out of nested forms rather than shown wrong.
    assert.deepEqual(Object.keys(vm.cluster).sort(), [
      "description",
      "display",
      "id",
      "name",
      "url",
    ]);
    // A filter by content type takes the string.
    const vmIps = await inv.call(
      "GET",
      "/api/ipam/ip-addresses/?assigned_object_type=virtualization.vminterface",
    );
    assert.equal(vmIps.body.count, 1);
  } finally {
    inv.close();
  }
});

Deno.test("counts follow writes (read through the per-model cache, never stale)", async () => {
  const inv = await setup();
  try {
    const ids = await populate(inv);
    const vm = ids["virtualization/virtual-machines/"];
    const count = async () =>
      (await inv.call("GET", `/api/virtualization/virtual-machines/?id=${vm}`)).body.results[0]
        .interface_count;
    assert.equal(await count(), 1);
    assert.equal(await count(), 1);
    const added = await inv.call("POST", "/api/virtualization/interfaces/", {
      virtual_machine: vm,
      name: "net1",
    });
    assert.equal(await count(), 2);
    await inv.call("DELETE", `/api/virtualization/interfaces/${added.body.id}/`);
    assert.equal(await count(), 1);
    const site = ids["dcim/sites/"];
    const prefixes = async () =>
      (await inv.call("GET", `/api/dcim/sites/${site}/`)).body.prefix_count;
    assert.equal(await prefixes(), 1);
    await inv.call("POST", "/api/ipam/prefixes/", {
      prefix: "10.1.0.0/24",
      scope_type: "dcim.site",
      scope_id: site,
    });
    assert.equal(await prefixes(), 2);
  } finally {
    inv.close();
  }
});

Deno.test("config_context: active matching contexts merged by weight, then local_context_data", async () => {
  const inv = await setup();
  try {
    const ids = await populate(inv);
    const post = (path: string, body: unknown) => inv.call("POST", `/api/${path}`, body);
    const region = ids["dcim/regions/"];
    const site = ids["dcim/sites/"];
    const platform = ids["dcim/platforms/"];
    await post("extras/config-contexts/", {
      name: "ntp",
      weight: 100,
      data: { ntp: ["a"], dns: ["1.1.1.1"], deep: { a: 1, b: 1 } },
      regions: [region],
    });
    await post("extras/config-contexts/", {
      name: "other platform",
      data: { ntp: ["never"] },
      platforms: [platform + 1000],
    });
    await post("extras/config-contexts/", {
      name: "off",
      is_active: false,
      data: { off: true },
    });
    await post("extras/config-contexts/", {
      name: "heavy",
      weight: 2000,
      data: { deep: { b: 2 } },
      sites: [site],
      platforms: [platform],
    });
    const vm = ids["virtualization/virtual-machines/"];
    await inv.call("PATCH", `/api/virtualization/virtual-machines/${vm}/`, {
      local_context_data: { ntp: ["local"] },
    });
    const got = await inv.call("GET", `/api/virtualization/virtual-machines/${vm}/`);
    // ntp (weight 100) < dns (1000, the site's) < heavy (2000); local data last.
    assert.deepEqual(got.body.config_context, {
      ntp: ["local"],
      dns: ["10.0.0.53"],
      deep: { a: 1, b: 2 },
    });
    const list = await inv.call("GET", "/api/dcim/devices/?limit=10");
    assert.deepEqual(list.body.results[0].config_context, {
      ntp: ["a"],
      dns: ["10.0.0.53"],
      deep: { a: 1, b: 2 },
    });
    // ?exclude=config_context (NetBox's way to skip it in big lists): gone, the rest stays.
    const lean = await inv.call("GET", "/api/dcim/devices/?limit=10&exclude=config_context");
    assert.equal("config_context" in lean.body.results[0], false);
    assert.equal(lean.body.results[0].id, list.body.results[0].id);
    assert.equal(lean.body.results[0].name, list.body.results[0].name);
    const leanVms = await inv.call(
      "GET",
      "/api/virtualization/virtual-machines/?exclude=config_context",
    );
    assert.equal("config_context" in leanVms.body.results[0], false);
    assert.ok("local_context_data" in leanVms.body.results[0]);
  } finally {
    inv.close();
  }
});

Deno.test("nested groups: _depth follows the parent, a group cannot be its own parent", async () => {
  const inv = await setup();
  try {
    const eu = await inv.call("POST", "/api/dcim/regions/", { name: "Europe", slug: "eu" });
    const nl = await inv.call("POST", "/api/dcim/regions/", {
      name: "NL",
      slug: "nl",
      parent: eu.body.id,
    });
    assert.equal(nl.body._depth, 1);
    assert.equal(nl.body.parent.display, "Europe");
    const self = await inv.call("PATCH", `/api/dcim/regions/${eu.body.id}/`, {
      parent: eu.body.id,
    });
    assert.equal(self.status, 400);
    assert.deepEqual(self.body, { parent: ["Cannot assign self as parent."] });
    const orphan = await inv.call("POST", "/api/ipam/services/", {
      name: "ssh",
      protocol: "tcp",
      ports: [22],
    });
    assert.equal(orphan.status, 400);
    assert.deepEqual(orphan.body, {
      parent_object_type: ["This field is required."],
      parent_object_id: ["This field is required."],
    });
  } finally {
    inv.close();
  }
});

Deno.test("NetBox 4.5/4.6 relations: owners and their filters, a service's parent, a contact's groups, role and platform trees", async () => {
  const inv = await setup();
  try {
    const post = async (path: string, body: unknown) => {
      const r = await inv.call("POST", `/api/${path}`, body);
      assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
      return r.body;
    };
    const group = await post("users/owner-groups/", { name: "Platform team" });
    const owner = await post("users/owners/", { name: "infra", group: group.id });
    assert.deepEqual([owner.group.name, owner.users, owner.user_groups], ["Platform team", [], []]);
    const site = await post("dcim/sites/", { name: "AMS1", slug: "ams1", owner: owner.id });
    assert.deepEqual(Object.keys(site.owner).sort(), [
      "description",
      "display",
      "id",
      "name",
      "url",
    ]);
    await post("dcim/sites/", { name: "FRA1", slug: "fra1" });
    const slugs = async (q: string) =>
      (await inv.call("GET", `/api/dcim/sites/?${q}`)).body.results.map((s: { slug: string }) =>
        s.slug
      );
    assert.deepEqual(await slugs(`owner_id=${owner.id}`), ["ams1"]);
    assert.deepEqual(await slugs("owner=infra"), ["ams1"]);
    assert.deepEqual(await slugs(`owner_group_id=${group.id}`), ["ams1"]);
    assert.equal(
      (await inv.call("GET", `/api/users/owner-groups/${group.id}/`)).body.member_count,
      1,
    );
    const held = await inv.call("DELETE", `/api/users/owners/${owner.id}/`);
    assert.equal(held.status, 409);

    const parentRole = await post("dcim/device-roles/", { name: "Servers", slug: "servers" });
    const child = await post("dcim/device-roles/", {
      name: "Hypervisors",
      slug: "hypervisors",
      parent: parentRole.id,
    });
    assert.deepEqual([child._depth, child.parent.display, child.parent._depth], [1, "Servers", 0]);
    const platform = await post("dcim/platforms/", { name: "Linux", slug: "linux" });
    const debian = await post("dcim/platforms/", {
      name: "Debian",
      slug: "debian",
      parent: platform.id,
    });
    assert.equal(debian._depth, 1);

    const cg = await post("tenancy/contact-groups/", { name: "Ops", slug: "ops" });
    const contact = await post("tenancy/contacts/", { name: "Ada", groups: [cg.id] });
    assert.deepEqual(contact.groups.map((g: { slug: string }) => g.slug), ["ops"]);
    assert.equal(contact.group, undefined);
    assert.equal(
      (await inv.call("GET", `/api/tenancy/contact-groups/${cg.id}/`)).body.contact_count,
      1,
    );

    const vm = await post("virtualization/virtual-machines/", { name: "web1", site: site.id });
    const nic = await post("virtualization/interfaces/", { virtual_machine: vm.id, name: "net0" });
    const outside = await post("ipam/ip-addresses/", { address: "192.0.2.10/32" });
    const ip = await post("ipam/ip-addresses/", {
      address: "10.0.0.5/24",
      dns_name: "web1.example.com",
      nat_inside: null,
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: nic.id,
    });
    await inv.call("PATCH", `/api/ipam/ip-addresses/${outside.id}/`, { nat_inside: ip.id });
    await inv.call("PATCH", `/api/ipam/ip-addresses/${ip.id}/`, { nat_inside: outside.id });
    await inv.call("PATCH", `/api/virtualization/virtual-machines/${vm.id}/`, {
      primary_ip4: ip.id,
    });
    const withIp = (await inv.call("GET", `/api/virtualization/virtual-machines/${vm.id}/`)).body;
    // NetBox 4.6: the IP's brief plus dns_name, nat_inside and nat_outside.
    assert.deepEqual(Object.keys(withIp.primary_ip4).sort(), [
      "address",
      "description",
      "display",
      "dns_name",
      "family",
      "id",
      "nat_inside",
      "nat_outside",
      "url",
    ]);
    assert.equal(withIp.primary_ip4.dns_name, "web1.example.com");
    assert.equal(withIp.primary_ip4.nat_inside.display, "192.0.2.10/32");
    assert.deepEqual(withIp.primary_ip, withIp.primary_ip4);
    const list = await inv.call("GET", `/api/virtualization/virtual-machines/?id=${vm.id}`);
    assert.deepEqual(list.body.results[0].primary_ip4, withIp.primary_ip4);
    const ssh = await post("ipam/services/", {
      parent_object_type: "virtualization.virtualmachine",
      parent_object_id: vm.id,
      name: "ssh",
      protocol: "tcp",
      ports: [22],
    });
    assert.deepEqual([ssh.parent_object_type, ssh.parent.display], [
      "virtualization.virtualmachine",
      "web1",
    ]);
    assert.equal(ssh.virtual_machine, undefined);
    const byVm = await inv.call("GET", `/api/ipam/services/?virtual_machine_id=${vm.id}`);
    assert.deepEqual(byVm.body.results.map((s: { name: string }) => s.name), ["ssh"]);
    const wrongType = await inv.call("POST", "/api/ipam/services/", {
      parent_object_type: "dcim.site",
      parent_object_id: site.id,
      name: "x",
      protocol: "tcp",
      ports: [1],
    });
    assert.equal(wrongType.status, 400);
    assert.ok(wrongType.body.parent_object_type);
    // Deleting the parent takes its services along, as NetBox's GenericRelation does.
    await inv.call("DELETE", `/api/virtualization/virtual-machines/${vm.id}/`);
    assert.equal((await inv.call("GET", `/api/ipam/services/${ssh.id}/`)).status, 404);
  } finally {
    inv.close();
  }
});
