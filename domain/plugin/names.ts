/**
 * The plugin's model names and which of their fields hold secrets. Apart from the model
 * declarations (models.ts) so the services the declarations call (service.ts) can name models
 * without importing them back.
 */

export const APP = "service";

export const MODELS = {
  hypervisor: "service.hypervisorendpoint",
  inventory: "service.inventoryendpoint",
  backend: "service.backendendpoint",
  backupRoutine: "service.backuproutine",
  replication: "service.replication",
  deletionRequest: "service.deletionrequest",
  applyJob: "service.applyjob",
  node: "service.node",
  storage: "service.storage",
  cluster: "service.cluster",
  snapshot: "service.snapshot",
  backup: "service.backup",
  taskHistory: "service.taskhistory",
  vmSyncState: "service.vmsyncstate",
} as const;

// Core models this plugin references (defined by the core engine models).
export const CORE = {
  ipAddress: "ipam.ipaddress",
  tenant: "tenancy.tenant",
  token: "users.token",
  virtualMachine: "virtualization.virtualmachine",
  cluster: "virtualization.cluster",
  device: "dcim.device",
} as const;

export const SECRET_FIELDS = {
  [MODELS.hypervisor]: ["password", "token_value", "ssh_password", "ssh_private_key"],
  [MODELS.inventory]: ["token_secret"],
} as const;
/** Dedicated SSH secrets need the encryption key; connection secrets fall back to plaintext. */
export const SSH_SECRET_FIELDS = ["ssh_password", "ssh_private_key"];
