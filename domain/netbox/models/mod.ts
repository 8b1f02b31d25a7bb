/** Every NetBox model the inventory serves (tokens aside: they need the TokenService hooks). */
import type { ModelDef } from "../types.ts";
import { OBJECT_CHANGE } from "./changes.ts";
import { CONTACT_MODELS } from "./contacts.ts";
import { CORE_MODELS } from "./core.ts";
import { DCIM_EXTRA_MODELS } from "./dcim_extra.ts";
import { IPAM_EXTRA_MODELS } from "./ipam_extra.ts";
import { ORG_EXTRA_MODELS } from "./org_extra.ts";
import { netbox46Shapes } from "./netbox46.ts";
import { treeFilters } from "./tree_filters.ts";

export const INVENTORY_MODELS: ModelDef[] = treeFilters(netbox46Shapes([
  ...CORE_MODELS,
  ...DCIM_EXTRA_MODELS,
  ...IPAM_EXTRA_MODELS,
  ...ORG_EXTRA_MODELS,
  ...CONTACT_MODELS,
  OBJECT_CHANGE,
]));
