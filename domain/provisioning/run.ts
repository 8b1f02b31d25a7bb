/**
 * One provisioning run: the five steps in order, each reported as it starts and ends, the
 * first failure ending the run with that step's name. Pure: the host-agent is a port and the
 * events go to a callback (the SSE stream, or nowhere for the JSON route).
 */
import { redactSecrets } from "../redaction.ts";
import {
  type AgentMicrovm,
  type HostAgentPort,
  type ProvisionEvent,
  type ProvisionOutcome,
  type ProvisionRequest,
  type ProvisionStep,
  STEP_LABELS,
} from "./types.ts";

export interface RunOptions {
  /** Who asked (X-Service-Actor), forwarded in the metadata. */
  actor: string;
  emit?: (event: ProvisionEvent) => void | Promise<void>;
  /** Ends the run (client gone): no further call is made. */
  signal?: AbortSignal;
}

/** A step that cannot go on; the message is shown to the caller as is. */
class StepFailure extends Error {}

/** Removes every spelling of the secrets (domain/redaction.ts) from a text shown to the caller. */
export function redact(text: string, secrets: readonly (string | null | undefined)[]): string {
  return redactSecrets(text, secrets);
}

export function instanceRef(request: ProvisionRequest): string | undefined {
  return request.inventory_microvm_id == null
    ? undefined
    : `microvm:${request.inventory_microvm_id}`;
}

export async function provisionMicrovm(
  request: ProvisionRequest,
  agent: HostAgentPort,
  options: RunOptions,
): Promise<ProvisionOutcome> {
  const emit = options.emit ?? (() => {});
  const signal = options.signal;
  const secrets = [request.host_agent_token];
  const line = (text: string) => emit({ type: "terminal_line", line: redact(text, secrets) });

  async function step<T>(name: ProvisionStep, work: () => Promise<T>): Promise<T> {
    await emit({ type: "provision_step", step: name, label: STEP_LABELS[name], status: "started" });
    try {
      signal?.throwIfAborted();
      const value = await work();
      await emit({ type: "provision_step", step: name, label: STEP_LABELS[name], status: "done" });
      return value;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw Object.assign(new StepFailure(redact(message, secrets)), { step: name });
    }
  }

  let current: ProvisionStep = "host_agent_health";
  try {
    await step(current, async () => {
      const health = await agent.health(signal);
      if (!health.ok) {
        throw new StepFailure(`the host-agent reports it is not ready (status: ${health.status})`);
      }
    });

    current = "capabilities";
    const capabilities = await step(current, async () => {
      const caps = await agent.capabilities(signal);
      const refusal = capacityProblem(request, caps);
      if (refusal) throw new StepFailure(refusal);
      return caps;
    });
    await line(
      `host-agent has ${capabilities.available_vcpus} vCPUs, ` +
        `${capabilities.available_memory_mib} MiB memory and ` +
        `${capabilities.available_disk_mib} MiB disk free`,
    );

    current = "prepare_assets";
    const assets = await step(current, () => agent.prepareAssets(request.image, signal));
    await line(`kernel: ${assets.kernel_image_path}`);
    await line(`rootfs: ${assets.rootfs_image_path}`);

    current = "create_microvm";
    const metadata: Record<string, unknown> = {
      ...request.metadata,
      // Set by the service after the caller's own keys, so a caller cannot forge them.
      actor: options.actor,
      tenant_id: request.tenant_id ?? null,
      inventory_microvm_id: request.inventory_microvm_id ?? null,
      instance_ref: instanceRef(request) ?? null,
    };
    let vm: AgentMicrovm = await step(current, () =>
      agent.createMicrovm({
        microvm_id: request.microvm_id,
        name: request.name,
        vcpus: request.vcpus,
        memory_mib: request.memory_mib,
        disk_mib: request.disk_mib,
        kernel_image_path: assets.kernel_image_path,
        rootfs_image_path: assets.rootfs_image_path,
        architecture: request.image.architecture,
        default_user: request.image.default_user,
        network: request.network,
        ssh_authorized_keys: request.ssh_authorized_keys,
        metadata,
      }, signal));
    await line(`micro-VM ${vm.microvm_id ?? request.microvm_id} created (${vm.status})`);

    current = "start_microvm";
    let detail: string | null = null;
    if (request.start_after_provision) {
      const started = await step(current, () => agent.startMicrovm(request.microvm_id, signal));
      vm = { ...vm, ...started };
      await line(`micro-VM ${request.microvm_id} ${vm.status}`);
    } else {
      await emit({
        type: "provision_step",
        step: current,
        label: STEP_LABELS[current],
        status: "skipped",
      });
      detail = "created but not started (start_after_provision is false)";
    }
    return {
      ok: true,
      microvm_id: request.microvm_id,
      ...(instanceRef(request) ? { instance_ref: instanceRef(request) } : {}),
      host_id: request.host_id ?? null,
      host_pool_id: request.host_pool_id ?? null,
      image_id: request.image.image_id ?? null,
      status: String(vm.status),
      guest_ip: typeof vm.guest_ip === "string" ? vm.guest_ip : null,
      detail,
    };
  } catch (error) {
    const failedStep = (error as { step?: ProvisionStep }).step ?? current;
    const message = error instanceof Error ? error.message : String(error);
    if (!signal?.aborted) {
      await emit({
        type: "provision_step",
        step: failedStep,
        label: STEP_LABELS[failedStep],
        status: "failed",
      });
    }
    return { ok: false, step: failedStep, error: redact(message, secrets) };
  }
}

/** Why the host cannot take this micro-VM now, or null. */
function capacityProblem(
  request: ProvisionRequest,
  caps: {
    supports_nat: boolean;
    supports_bridge: boolean;
    available_vcpus: number;
    available_memory_mib: number;
    available_disk_mib: number;
  },
): string | null {
  const mode = request.network.mode;
  if (mode === "nat" && !caps.supports_nat) return "the host-agent does not support NAT networking";
  if (mode === "bridge" && !caps.supports_bridge) {
    return "the host-agent does not support bridged networking";
  }
  if (request.vcpus > caps.available_vcpus) {
    return `${request.vcpus} vCPUs requested, ${caps.available_vcpus} available`;
  }
  if (request.memory_mib > caps.available_memory_mib) {
    return `${request.memory_mib} MiB memory requested, ${caps.available_memory_mib} MiB available`;
  }
  if (request.disk_mib > caps.available_disk_mib) {
    return `${request.disk_mib} MiB disk requested, ${caps.available_disk_mib} MiB available`;
  }
  return null;
}
