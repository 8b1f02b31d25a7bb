/**
 * Micro-VM provisioning through a host-agent (docs/provisioning.md): the request once its
 * defaults are applied, the events a run reports, and the port the host-agent is reached by.
 */

export const PROVISION_STEPS = [
  "host_agent_health",
  "capabilities",
  "prepare_assets",
  "create_microvm",
  "start_microvm",
] as const;
export type ProvisionStep = typeof PROVISION_STEPS[number];

export const STEP_LABELS: Record<ProvisionStep, string> = {
  host_agent_health: "Checking host-agent health",
  capabilities: "Checking host capacity and network support",
  prepare_assets: "Preparing kernel and root filesystem",
  create_microvm: "Creating the micro-VM",
  start_microvm: "Starting the micro-VM",
};

export interface MicrovmImage {
  name: string;
  kernel_image_url: string;
  kernel_image_sha256: string;
  rootfs_image_url: string;
  rootfs_image_sha256: string;
  image_id?: number | null;
  architecture: string;
  default_user: string;
}

export interface MicrovmNetwork {
  mode: "nat" | "bridge";
  guest_ip?: string;
  gateway?: string;
  bridge_name?: string;
  tap_name?: string;
  nameservers?: string[];
}

/** A provisioning request with every default applied. */
export interface ProvisionRequest {
  host_agent_base_url: string;
  host_agent_token?: string | null;
  host_id?: number | null;
  host_pool_id?: number | null;
  image: MicrovmImage;
  inventory_microvm_id?: number | null;
  microvm_id: string;
  name: string;
  tenant_id?: number | null;
  network: MicrovmNetwork;
  vcpus: number;
  memory_mib: number;
  disk_mib: number;
  ssh_authorized_keys: string[];
  metadata: Record<string, unknown>;
  start_after_provision: boolean;
}

export interface ProvisionSuccess {
  ok: true;
  microvm_id: string;
  instance_ref?: string;
  host_id: number | null;
  host_pool_id: number | null;
  image_id: number | null;
  status: string;
  guest_ip: string | null;
  detail: string | null;
}

export interface ProvisionFailure {
  ok: false;
  error: string;
  step: ProvisionStep;
}

export type ProvisionOutcome = ProvisionSuccess | ProvisionFailure;

export type StepStatus = "started" | "done" | "skipped" | "failed";

export type ProvisionEvent =
  | { type: "provision_step"; step: ProvisionStep; label: string; status: StepStatus }
  | { type: "terminal_line"; line: string };

// ---------------------------------------------------------------- the host-agent port

export interface AgentHealth {
  ok: boolean;
  status: string;
}

export interface AgentCapabilities {
  supports_nat: boolean;
  supports_bridge: boolean;
  available_vcpus: number;
  available_memory_mib: number;
  available_disk_mib: number;
}

export interface AgentAssets {
  kernel_image_path: string;
  rootfs_image_path: string;
}

export interface AgentMicrovm {
  microvm_id: string;
  name?: string;
  status: string;
  guest_ip?: string | null;
  [field: string]: unknown;
}

export interface CreateMicrovmCall {
  microvm_id: string;
  name: string;
  vcpus: number;
  memory_mib: number;
  disk_mib: number;
  kernel_image_path: string;
  rootfs_image_path: string;
  architecture: string;
  default_user: string;
  network: MicrovmNetwork;
  ssh_authorized_keys: string[];
  metadata: Record<string, unknown>;
}

/**
 * One host-agent, already bound to its base URL and token. Each call rejects with an Error
 * whose message says what failed; it never carries the token.
 */
export interface HostAgentPort {
  health(signal?: AbortSignal): Promise<AgentHealth>;
  capabilities(signal?: AbortSignal): Promise<AgentCapabilities>;
  prepareAssets(image: MicrovmImage, signal?: AbortSignal): Promise<AgentAssets>;
  createMicrovm(call: CreateMicrovmCall, signal?: AbortSignal): Promise<AgentMicrovm>;
  startMicrovm(microvmId: string, signal?: AbortSignal): Promise<AgentMicrovm>;
}
