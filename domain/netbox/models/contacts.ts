/** NetBox 4.2 contacts (tenancy): groups, roles, contacts and their assignments to objects. */
import type { ModelDef } from "../types.ts";
import {
  choice,
  comments,
  description,
  fk,
  name,
  NAME_SLUG_UNIQUE,
  reqFk,
  str,
  withNameSlug,
} from "./core.ts";
import { depthField, treeHooks } from "./dcim_extra.ts";
import { contentType, countOf } from "./shapes.ts";

export const CONTACT_GROUP: ModelDef = {
  app: "tenancy",
  model: "contactgroup",
  verbose: "contact group",
  path: "tenancy/contact-groups/",
  fields: {
    ...withNameSlug(),
    parent: fk("tenancy.contactgroup", { onDelete: "cascade" }),
    description: description(),
    contact_count: countOf("tenancy.contact", "group"),
    _depth: depthField(),
  },
  brief: ["name", "slug", "description", "contact_count", "_depth"],
  unique: NAME_SLUG_UNIQUE,
  ...treeHooks("tenancy.contactgroup"),
  search: ["name", "slug", "description"],
  ordering: ["name"],
};

export const CONTACT_ROLE: ModelDef = {
  app: "tenancy",
  model: "contactrole",
  verbose: "contact role",
  path: "tenancy/contact-roles/",
  fields: { ...withNameSlug(), description: description() },
  brief: ["name", "slug", "description"],
  unique: NAME_SLUG_UNIQUE,
  search: ["name", "slug", "description"],
  ordering: ["name"],
};

export const CONTACT: ModelDef = {
  app: "tenancy",
  model: "contact",
  verbose: "contact",
  path: "tenancy/contacts/",
  fields: {
    group: fk("tenancy.contactgroup", { onDelete: "set_null" }),
    name: name(100),
    title: str(100),
    phone: str(50),
    email: str(254, {
      pattern: /^$|^[^@\s]+@[^@\s]+\.[^@\s]+$/,
      patternMessage: "Enter a valid email address.",
    }),
    address: str(200),
    link: str(200),
    description: description(),
    comments: comments(),
  },
  brief: ["name", "description"],
  search: ["name", "title", "phone", "email", "address", "link", "description", "comments"],
  ordering: ["name"],
};

const CONTACT_OBJECTS = [
  ["dcim.region", "DCIM > Region"],
  ["dcim.sitegroup", "DCIM > Site Group"],
  ["dcim.site", "DCIM > Site"],
  ["dcim.location", "DCIM > Location"],
  ["dcim.rack", "DCIM > Rack"],
  ["dcim.manufacturer", "DCIM > Manufacturer"],
  ["dcim.devicetype", "DCIM > Device Type"],
  ["dcim.device", "DCIM > Device"],
  ["dcim.platform", "DCIM > Platform"],
  ["tenancy.tenant", "Tenancy > Tenant"],
  ["virtualization.clustergroup", "Virtualization > Cluster Group"],
  ["virtualization.cluster", "Virtualization > Cluster"],
  ["virtualization.virtualmachine", "Virtualization > Virtual Machine"],
] as const;

export const CONTACT_ASSIGNMENT: ModelDef = {
  app: "tenancy",
  model: "contactassignment",
  verbose: "contact assignment",
  path: "tenancy/contact-assignments/",
  fields: {
    object_type: contentType(CONTACT_OBJECTS, { required: true }),
    object_id: { type: "int", required: true, min: 1, index: true },
    object: {
      type: "gfk",
      models: CONTACT_OBJECTS.map(([t]) => t),
      typeField: "object_type",
      idField: "object_id",
      onDelete: "cascade",
    },
    // NetBox's ContactAssignment.contact is PROTECT: a contact still assigned is not deleted.
    contact: reqFk("tenancy.contact", "protect"),
    role: fk("tenancy.contactrole", { onDelete: "protect" }),
    priority: choice([
      ["primary", "Primary"],
      ["secondary", "Secondary"],
      ["tertiary", "Tertiary"],
      ["inactive", "Inactive"],
    ], { nullable: true, default: null, allowBlank: true }),
  },
  brief: ["contact", "role", "priority"],
  display: (r) => `contact assignment ${r.id}`,
  unique: [{
    fields: ["object_type", "object_id", "contact", "role"],
    errorField: "contact",
    message:
      "Contact assignment with this Object type, Object id, Contact and Role already exists.",
  }],
  ordering: ["priority", "id"],
};

export const CONTACT_MODELS: ModelDef[] = [
  CONTACT_GROUP,
  CONTACT_ROLE,
  CONTACT,
  CONTACT_ASSIGNMENT,
];
