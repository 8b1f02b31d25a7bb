/**
 * Every model renders NetBox 4.2's complete field set, and the shapes clients index: counts,
 * content types as plain strings, choices as {value, label}, nested brief objects, nulls where
 * empty. The table is NetBox 4.2's serializer field lists (Meta.fields), written as data.
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

/** path → NetBox 4.2's fields besides COMMON (ConfigContext and Tag have no custom fields). */
const NETBOX_42: Record<string, string[]> = {
  "tenancy/tenant-groups/": ["name", "slug", "parent", "description", "tenant_count", "_depth"],
  "tenancy/tenants/": [
    "name",
    "slug",
    "group",
    "description",
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
  "tenancy/contact-groups/": ["name", "slug", "parent", "description", "contact_count", "_depth"],
  "tenancy/contact-roles/": ["name", "slug", "description"],
  "tenancy/contacts/": [
    "group",
    "name",
    "title",
    "phone",
    "email",
    "address",
    "link",
    "description",
    "comments",
  ],
  "tenancy/contact-assignments/": [
    "object_type",
    "object_id",
    "object",
    "contact",
    "role",
    "priority",
  ],
  "dcim/regions/": ["name", "slug", "parent", "description", "site_count", "_depth"],
  "dcim/site-groups/": ["name", "slug", "parent", "description", "site_count", "_depth"],
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
    "_depth",
  ],
  "dcim/rack-roles/": ["name", "slug", "color", "description", "rack_count"],
  "dcim/racks/": [
    "name",
    "facility_id",
    "site",
    "location",
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
    "comments",
    "device_count",
    "powerfeed_count",
  ],
  "dcim/manufacturers/": [
    "name",
    "slug",
    "description",
    "devicetype_count",
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
    "description",
    "device_count",
    "virtualmachine_count",
  ],
  "dcim/platforms/": [
    "name",
    "slug",
    "manufacturer",
    "config_template",
    "description",
    "device_count",
    "virtualmachine_count",
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
  "dcim/virtual-chassis/": ["name", "domain", "master", "description", "comments", "member_count"],
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
    "comments",
  ],
  "virtualization/cluster-types/": ["name", "slug", "description", "cluster_count"],
  "virtualization/cluster-groups/": ["name", "slug", "description", "cluster_count"],
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
    "comments",
    "device_count",
    "virtualmachine_count",
  ],
  "virtualization/virtual-machines/": [
    "name",
    "virtual_machine_type",
    "status",
    "start_on_boot",
    "site",
    "cluster",
    "device",
    "serial",
    "role",
    "tenant",
    "platform",
    "primary_ip",
    "primary_ip4",
    "primary_ip6",
    "vcpus",
    "memory",
    "disk",
    "description",
    "comments",
    "config_template",
    "local_context_data",
    "config_context",
    "interface_count",
    "virtual_disk_count",
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
    "count_ipaddresses",
    "count_fhrp_groups",
  ],
  "virtualization/virtual-disks/": ["virtual_machine", "name", "description", "size"],
  "ipam/vrfs/": [
    "name",
    "rd",
    "tenant",
    "enforce_unique",
    "description",
    "comments",
    "import_targets",
    "export_targets",
    "ipaddress_count",
    "prefix_count",
  ],
  "ipam/roles/": ["name", "slug", "weight", "description", "prefix_count", "vlan_count"],
  "ipam/vlan-groups/": [
    "name",
    "slug",
    "scope_type",
    "scope_id",
    "scope",
    "vid_ranges",
    "description",
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
    "comments",
  ],
  "ipam/services/": [
    "device",
    "virtual_machine",
    "name",
    "protocol",
    "ports",
    "ipaddresses",
    "description",
    "comments",
  ],
};

/** Models without tags/custom_fields in NetBox: their full field list. */
const WHOLE: Record<string, string[]> = {
  "extras/tags/": [
    "id",
    "url",
    "display_url",
    "display",
    "name",
    "slug",
    "color",
    "description",
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
  const vm = await post("virtualization/virtual-machines/", { name: "web1", cluster, platform });
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
    virtual_machine: vm,
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
    group: cg,
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

Deno.test("every model renders NetBox 4.2's complete field set", async () => {
  const inv = await setup();
  try {
    const ids = await populate(inv);
    const paths = { ...Object.fromEntries(Object.keys(NETBOX_42).map((p) => [p, null])), ...WHOLE };
    for (const path of Object.keys(paths)) {
      const expected = WHOLE[path] ?? [...COMMON, ...NETBOX_42[path]];
      const got = await inv.call("GET", `/api/${path}${ids[path]}/`);
      assert.equal(got.status, 200, path);
      const keys = Object.keys(got.body);
      const missing = expected.filter((k) => !keys.includes(k));
      const extra = keys.filter((k) => !expected.includes(k));
      assert.deepEqual({ path, missing, extra }, { path, missing: [], extra: [] });
    }
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
      non_field_errors: ["A service must be associated with either a device or a virtual machine."],
    });
  } finally {
    inv.close();
  }
});
