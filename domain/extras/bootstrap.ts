/**
 * What the sync needs to find in the inventory before it runs (docs/jobs.md, "Bootstrap"):
 * the ownership tags, the reference objects the stages hang records on, and the service's
 * custom-field definitions. `checkBootstrap` only reads; `reconcileBootstrap` creates what is
 * missing and updates definitions that drifted. Both talk through the sync's inventory port.
 */
import type { InventoryApi, InventoryObject } from "../sync/ports.ts";
import { MISSING_TAG, PATHS, SYNCED_TAG } from "../sync/base.ts";

export interface BootstrapObject {
  /** How a warning names it, e.g. `extras/tags/bridgebox-synced`. */
  label: string;
  path: string;
  slug: string;
  /** The create body (a device type's manufacturer is filled in by slug). */
  body: Record<string, unknown>;
}

export const BOOTSTRAP_OBJECTS: readonly BootstrapObject[] = [
  {
    label: `tag ${SYNCED_TAG}`,
    path: PATHS.tags,
    slug: SYNCED_TAG,
    body: {
      name: SYNCED_TAG,
      color: "2196f3",
      description: "Created and kept in step by the Bridgebox sync; hand-made objects lack it.",
    },
  },
  {
    label: `tag ${MISSING_TAG}`,
    path: PATHS.tags,
    slug: MISSING_TAG,
    body: {
      name: MISSING_TAG,
      color: "f44336",
      description: "Gone from the hypervisor at the last sync.",
    },
  },
  {
    label: "cluster type proxmox-ve",
    path: PATHS.clusterTypes,
    slug: "proxmox-ve",
    body: { name: "Proxmox VE", description: "Proxmox VE cluster" },
  },
  {
    label: "manufacturer proxmox",
    path: PATHS.manufacturers,
    slug: "proxmox",
    body: { name: "Proxmox" },
  },
  {
    label: "device type proxmox-ve-node",
    path: PATHS.deviceTypes,
    slug: "proxmox-ve-node",
    body: { model: "Proxmox VE node", manufacturer: { slug: "proxmox" } },
  },
  {
    label: "device role hypervisor",
    path: PATHS.deviceRoles,
    slug: "hypervisor",
    body: { name: "Hypervisor", color: "3f51b5", vm_role: false },
  },
  {
    label: "device role virtual-machine",
    path: PATHS.deviceRoles,
    slug: "virtual-machine",
    body: { name: "Virtual machine", color: "4caf50", vm_role: true },
  },
  {
    label: "device role container",
    path: PATHS.deviceRoles,
    slug: "container",
    body: { name: "Container", color: "ff9800", vm_role: true },
  },
];

export interface CustomFieldDef {
  name: string;
  type: string;
  label: string;
  object_types: string[];
  description: string;
}

const VM = "virtualization.virtualmachine";
const GROUP = "Hypervisor";

/** The service's custom fields (values are written only with `custom_fields_enabled`). */
export const CUSTOM_FIELDS: readonly CustomFieldDef[] = [
  {
    name: "hypervisor_vmid",
    type: "integer",
    label: "VMID",
    object_types: [VM],
    description: "The guest's VMID on its hypervisor.",
  },
  {
    name: "hypervisor_vm_type",
    type: "text",
    label: "Guest type",
    object_types: [VM],
    description: "qemu or lxc.",
  },
  {
    name: "hypervisor_start_at_boot",
    type: "boolean",
    label: "Start at boot",
    object_types: [VM],
    description: "The guest's onboot option.",
  },
  {
    name: "hypervisor_qemu_agent",
    type: "boolean",
    label: "QEMU agent",
    object_types: [VM],
    description: "The guest agent is enabled.",
  },
  {
    name: "hypervisor_unprivileged",
    type: "boolean",
    label: "Unprivileged container",
    object_types: [VM],
    description: "An LXC container without root mapping.",
  },
  {
    name: "hypervisor_last_synced",
    type: "datetime",
    label: "Last synced",
    object_types: [VM],
    description: "When the sync last wrote this guest.",
  },
];

const CUSTOM_FIELDS_PATH = "extras/custom-fields/";

export interface BootstrapReport {
  warnings: { object: string; error: string }[];
  unchanged: number;
}

export interface ReconcileReport {
  created: number;
  updated: number;
  unchanged: number;
}

const valueOf = (v: unknown) =>
  v && typeof v === "object" && "value" in (v as Record<string, unknown>)
    ? (v as { value: unknown }).value
    : v;

/** The fields of a definition that differ from what the inventory holds. */
function drift(def: CustomFieldDef, found: InventoryObject): string[] {
  const out: string[] = [];
  if (valueOf(found.type) !== def.type) out.push("type");
  if ((found.label ?? "") !== def.label) out.push("label");
  if ((found.group_name ?? "") !== GROUP) out.push("group_name");
  if ((found.description ?? "") !== def.description) out.push("description");
  const types = Array.isArray(found.object_types) ? found.object_types.map(String) : [];
  if (def.object_types.some((t) => !types.includes(t))) out.push("object_types");
  return out;
}

async function customFields(inv: InventoryApi, signal?: AbortSignal) {
  const all = await inv.list(CUSTOM_FIELDS_PATH, {}, signal);
  return new Map(all.map((f) => [String(f.name), f]));
}

/** Reads what exists; a missing or drifted object is one warning. Throws on call failures. */
export async function checkBootstrap(
  inv: InventoryApi,
  signal?: AbortSignal,
): Promise<BootstrapReport> {
  const warnings: BootstrapReport["warnings"] = [];
  let unchanged = 0;
  for (const o of BOOTSTRAP_OBJECTS) {
    const [found] = await inv.list(o.path, { slug: o.slug }, signal);
    if (found && found.slug === o.slug) unchanged++;
    else {warnings.push({
        object: o.label,
        error: "missing: the sync needs it (run repair or a full sync)",
      });}
  }
  const fields = await customFields(inv, signal);
  for (const def of CUSTOM_FIELDS) {
    const found = fields.get(def.name);
    if (!found) {
      warnings.push({ object: `custom field ${def.name}`, error: "missing (run repair)" });
      continue;
    }
    const differs = drift(def, found);
    if (differs.length) {
      warnings.push({
        object: `custom field ${def.name}`,
        error: `differs in ${differs.join(", ")} (run repair)`,
      });
    } else unchanged++;
  }
  return { warnings, unchanged };
}

/** Creates what is missing and updates drifted definitions. Throws on call failures. */
export async function reconcileBootstrap(
  inv: InventoryApi,
  signal?: AbortSignal,
): Promise<ReconcileReport> {
  const report: ReconcileReport = { created: 0, updated: 0, unchanged: 0 };
  const ids = new Map<string, number>();
  for (const o of BOOTSTRAP_OBJECTS) {
    const [found] = await inv.list(o.path, { slug: o.slug }, signal);
    if (found && found.slug === o.slug) {
      ids.set(`${o.path}${o.slug}`, found.id);
      report.unchanged++;
      continue;
    }
    const body: Record<string, unknown> = { slug: o.slug, ...o.body };
    const ref = body.manufacturer as { slug?: string } | undefined;
    if (ref?.slug) body.manufacturer = ids.get(`${PATHS.manufacturers}${ref.slug}`);
    const [made] = await inv.create(o.path, [body], signal);
    ids.set(`${o.path}${o.slug}`, made.id);
    report.created++;
  }
  const fields = await customFields(inv, signal);
  for (const def of CUSTOM_FIELDS) {
    const body = { ...def, group_name: GROUP };
    const found = fields.get(def.name);
    if (!found) {
      await inv.create(CUSTOM_FIELDS_PATH, [body], signal);
      report.created++;
    } else if (drift(def, found).length) {
      const types = Array.isArray(found.object_types) ? found.object_types.map(String) : [];
      await inv.update(CUSTOM_FIELDS_PATH, [{
        id: found.id,
        ...body,
        object_types: [...new Set([...types, ...def.object_types])],
      }], signal);
      report.updated++;
    } else report.unchanged++;
  }
  return report;
}
