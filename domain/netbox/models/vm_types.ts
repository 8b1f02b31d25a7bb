/**
 * NetBox 4.6's virtual machine types (`virtualization/virtual-machine-types/`): a named kind of
 * VM (the sync's qemu and lxc) whose default platform, vCPUs and memory fill a new VM's empty
 * fields on create only (docs/api-behaviour.md, Inventory: NetBox 4.6).
 */
import type { ModelDef, StoredObject } from "../types.ts";
import { countOf } from "./shapes.ts";

// Written out rather than taken from core.ts's helpers: core.ts imports this module (the VM's
// beforeSave), and a cycle would reach those helpers before they exist.
const SLUG = /^[-a-zA-Z0-9_]+$/;

export const VM_TYPE_MODEL = "virtualization.virtualmachinetype";

export const VIRTUAL_MACHINE_TYPE: ModelDef = {
  app: "virtualization",
  model: "virtualmachinetype",
  verbose: "virtual machine type",
  path: "virtualization/virtual-machine-types/",
  fields: {
    name: { type: "string", required: true, maxLength: 100, index: true },
    slug: {
      type: "string",
      required: true,
      maxLength: 100,
      pattern: SLUG,
      patternMessage:
        "Enter a valid “slug” consisting of letters, numbers, underscores or hyphens.",
    },
    default_platform: { type: "fk", model: "dcim.platform", nullable: true, onDelete: "set_null" },
    // decimal(6,2) ≥ 0.01, as the VM's own vcpus.
    default_vcpus: { type: "float", nullable: true, default: null, min: 0.01, max: 9999.99 },
    default_memory: { type: "int", nullable: true, default: null, min: 0 },
    description: { type: "string", maxLength: 200 },
    comments: { type: "string" },
    virtual_machine_count: countOf("virtualization.virtualmachine", "virtual_machine_type"),
  },
  brief: ["name", "slug", "description"],
  unique: [
    { fields: ["name"], ci: true, message: "Virtual machine type name must be unique." },
    { fields: ["slug"], ci: true },
  ],
  search: ["name", "slug", "description", "comments"],
  ordering: ["name"],
};

/** The VM fields a type fills on create when they are left null, and the type's field for each. */
const TYPE_DEFAULTS = [
  ["platform", "default_platform"],
  ["vcpus", "default_vcpus"],
  ["memory", "default_memory"],
] as const;

/** NetBox's VirtualMachine.apply_type_defaults: on create only; later type edits reach no VM. */
export async function applyTypeDefaults(
  draft: StoredObject,
  read: (model: string, id: number) => Promise<StoredObject | null>,
): Promise<void> {
  if (typeof draft.virtual_machine_type !== "number") return;
  const type = await read(VM_TYPE_MODEL, draft.virtual_machine_type);
  if (!type) return;
  for (const [field, source] of TYPE_DEFAULTS) {
    if ((draft[field] === null || draft[field] === undefined) && type[source] != null) {
      draft[field] = type[source];
    }
  }
}
