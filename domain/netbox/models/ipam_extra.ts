/**
 * NetBox 4.2 ipam models beyond prefixes, VLANs and IP addresses: VRFs, VLAN groups, roles
 * and services (what a device or VM listens on; nb_inventory reads them).
 */
import type { FieldErrors, ModelDef, StoredObject } from "../types.ts";
import {
  bool,
  choice,
  comments,
  description,
  fk,
  name,
  NAME_SLUG_UNIQUE,
  str,
  withNameSlug,
} from "./core.ts";
import { alwaysEmpty, contentType, countOf } from "./shapes.ts";
import { rekeyVrfSpace } from "./rules.ts";

export const VRF: ModelDef = {
  app: "ipam",
  model: "vrf",
  verbose: "VRF",
  path: "ipam/vrfs/",
  fields: {
    name: name(100),
    rd: str(21, { nullable: true, default: null, index: true }),
    tenant: fk("tenancy.tenant", { onDelete: "protect" }),
    enforce_unique: bool(true),
    description: description(),
    comments: comments(),
    import_targets: alwaysEmpty(),
    export_targets: alwaysEmpty(),
    ipaddress_count: countOf("ipam.ipaddress", "vrf"),
    prefix_count: countOf("ipam.prefix", "vrf"),
  },
  brief: ["name", "rd", "description", "prefix_count"],
  display: (r) => r.rd ? `${r.name} (${r.rd})` : String(r.name),
  unique: [{ fields: ["rd"], message: "VRF with this Route distinguisher already exists." }],
  afterSave: rekeyVrfSpace,
  // NetBox's `vrf` filters name a VRF by its route distinguisher, not its name (`to_field_name`).
  naturalKey: "rd",
  search: ["name", "rd", "description", "comments"],
  ordering: ["name", "rd", "id"],
};

export const VLAN_GROUP_SCOPES = [
  ["dcim.region", "DCIM > Region"],
  ["dcim.sitegroup", "DCIM > Site Group"],
  ["dcim.site", "DCIM > Site"],
  ["dcim.location", "DCIM > Location"],
  ["dcim.rack", "DCIM > Rack"],
  ["virtualization.clustergroup", "Virtualization > Cluster Group"],
  ["virtualization.cluster", "Virtualization > Cluster"],
] as const;

/** "1-100,200-300" style ranges as NetBox stores them: [[1, 100], [200, 300]]. */
function vidRangesRule(draft: StoredObject) {
  const v = draft.vid_ranges;
  const ok = Array.isArray(v) &&
    v.every((r) =>
      Array.isArray(r) && r.length === 2 && r.every((n) => Number.isInteger(n)) &&
      r[0] >= 1 && r[1] <= 4094 && r[0] <= r[1]
    );
  return ok ? null : { vid_ranges: ["Enter ranges of VLAN IDs 1-4094, e.g. [[1, 4094]]."] };
}

export const VLAN_GROUP: ModelDef = {
  app: "ipam",
  model: "vlangroup",
  verbose: "VLAN group",
  path: "ipam/vlan-groups/",
  fields: {
    ...withNameSlug(),
    scope_type: contentType(VLAN_GROUP_SCOPES, { nullable: true, default: null }),
    scope_id: { type: "int", nullable: true, min: 1 },
    scope: {
      type: "gfk",
      models: VLAN_GROUP_SCOPES.map(([t]) => t),
      typeField: "scope_type",
      idField: "scope_id",
      onDelete: "cascade",
    },
    vid_ranges: { type: "json", default: () => [[1, 4094]] },
    description: description(),
    comments: comments(),
    vlan_count: countOf("ipam.vlan", "group"),
    utilization: { type: "json", compute: () => null },
  },
  brief: ["name", "slug", "description", "vlan_count"],
  unique: [
    {
      fields: ["scope_type", "scope_id", "name"],
      ci: true,
      message: "VLAN group name must be unique per scope.",
    },
    {
      fields: ["scope_type", "scope_id", "slug"],
      ci: true,
      message: "VLAN group slug must be unique per scope.",
    },
  ],
  validate: vidRangesRule,
  search: ["name", "slug", "description", "comments"],
  ordering: ["name", "id"],
};

export const IPAM_ROLE: ModelDef = {
  app: "ipam",
  model: "role",
  verbose: "role",
  path: "ipam/roles/",
  fields: {
    ...withNameSlug(),
    weight: { type: "int", default: 1000, min: 0, max: 32767 },
    description: description(),
    prefix_count: countOf("ipam.prefix", "role"),
    vlan_count: countOf("ipam.vlan", "role"),
  },
  brief: ["name", "slug", "description", "prefix_count", "vlan_count"],
  unique: NAME_SLUG_UNIQUE,
  search: ["name", "slug", "description"],
  ordering: ["weight", "name"],
};

export const SERVICE: ModelDef = {
  app: "ipam",
  model: "service",
  verbose: "service",
  path: "ipam/services/",
  fields: {
    device: fk("dcim.device", { onDelete: "cascade" }),
    virtual_machine: fk("virtualization.virtualmachine", { onDelete: "cascade" }),
    name: name(100),
    protocol: choice([["tcp", "TCP"], ["udp", "UDP"], ["sctp", "SCTP"]], { required: true }),
    ports: { type: "list", of: "int", required: true, min: 1, max: 65535 },
    ipaddresses: { type: "m2m", model: "ipam.ipaddress" },
    description: description(),
    comments: comments(),
  },
  brief: ["name", "protocol", "ports", "description"],
  display: (r) =>
    `${r.name} (${String(r.protocol).toUpperCase()}/${
      (Array.isArray(r.ports) ? r.ports : []).join(", ")
    })`,
  validate: (draft): FieldErrors | null => {
    const owners = [draft.device, draft.virtual_machine].filter((v) => typeof v === "number");
    if (owners.length !== 1) {
      return {
        non_field_errors: [
          "A service must be associated with either a device or a virtual machine.",
        ],
      };
    }
    if (!Array.isArray(draft.ports) || draft.ports.length === 0) {
      return { ports: ["This list may not be empty."] };
    }
    return null;
  },
  search: ["name", "description", "comments"],
  ordering: ["name", "id"],
};

export const IPAM_EXTRA_MODELS: ModelDef[] = [VRF, VLAN_GROUP, IPAM_ROLE, SERVICE];
