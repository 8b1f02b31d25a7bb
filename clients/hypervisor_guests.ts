/**
 * The verbs' port onto one hypervisor endpoint (domain/verbs/types.ts), over the backend's
 * hypervisor client: the guest's node and state from `/cluster/resources`, then
 * `status/start`, `status/stop`, `snapshot` or `migrate` on that node. Failures become
 * GuestControlError with the hypervisor's status and its own message.
 */
import { CredentialError, KeyUnavailableError } from "../domain/credentials.ts";
import {
  GuestControlError,
  type GuestControlPort,
  type GuestLocation,
  type MigrateOptions,
  type SnapshotOptions,
} from "../domain/verbs/types.ts";
import {
  HypervisorApiClient,
  HypervisorApiError,
  type HypervisorParams,
} from "./hypervisor_api.ts";

interface Resource {
  vmid?: number;
  node?: string;
  type?: string;
  status?: string;
}

/** The hypervisor's own words: Proxmox puts them in `message` and per-field `errors`. */
function upstreamMessage(error: HypervisorApiError): string {
  try {
    const body = JSON.parse(error.bodyExcerpt);
    const parts: string[] = [];
    if (typeof body?.message === "string") parts.push(body.message.trim());
    if (body?.errors && typeof body.errors === "object") {
      for (const [field, text] of Object.entries(body.errors)) {
        parts.push(`${field}: ${String(text).trim()}`);
      }
    }
    if (parts.length) return parts.join("; ");
  } catch { /* not JSON (or cut short): the client's own description says it all */ }
  return error.message;
}

export function toGuestControlError(error: unknown): GuestControlError {
  if (error instanceof GuestControlError) return error;
  if (error instanceof HypervisorApiError) {
    return error.status === null
      ? new GuestControlError("hypervisor_unreachable", error.message)
      : new GuestControlError("hypervisor_error", upstreamMessage(error), error.status);
  }
  if (error instanceof CredentialError) {
    return new GuestControlError("credential_undecryptable", error.message);
  }
  if (error instanceof KeyUnavailableError) {
    return new GuestControlError("encryption_key_unavailable", error.message);
  }
  return new GuestControlError(
    "hypervisor_unreachable",
    error instanceof Error ? error.message : String(error),
  );
}

export class HypervisorGuests implements GuestControlPort {
  constructor(private readonly client: HypervisorApiClient) {}

  async locate(vmid: number): Promise<GuestLocation | null> {
    const resources = await this.#call(() =>
      this.client.get<Resource[]>("/cluster/resources", { type: "vm" })
    );
    const found = (resources ?? []).find((r) => Number(r.vmid) === vmid);
    if (!found?.node || (found.type !== "qemu" && found.type !== "lxc")) return null;
    return { node: found.node, type: found.type, status: found.status ?? "unknown" };
  }

  start(at: GuestLocation, vmid: number) {
    return this.#post(at, vmid, "status/start");
  }

  stop(at: GuestLocation, vmid: number) {
    return this.#post(at, vmid, "status/stop");
  }

  snapshot(at: GuestLocation, vmid: number, options: SnapshotOptions) {
    return this.#post(at, vmid, "snapshot", {
      snapname: options.snapname,
      description: options.description,
    });
  }

  migrate(at: GuestLocation, vmid: number, options: MigrateOptions) {
    // A running container cannot move live: its equivalent is a restart migration.
    const mode = at.type === "lxc" ? { restart: options.online } : { online: options.online };
    return this.#post(at, vmid, "migrate", { target: options.target, ...mode });
  }

  async #post(at: GuestLocation, vmid: number, action: string, params?: HypervisorParams) {
    const path = `/nodes/${encodeURIComponent(at.node)}/${at.type}/${vmid}/${action}`;
    const data = await this.#call(() => this.client.request<unknown>("POST", path, params));
    return typeof data === "string" && data ? data : null;
  }

  async #call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw toGuestControlError(error);
    }
  }
}
