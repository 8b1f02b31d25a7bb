/**
 * Operational verbs on hypervisor guests (docs/verbs.md): start, stop, snapshot and migrate
 * a QEMU VM or an LXC container through a port, with a write-ahead audit record.
 */
import type { GuestType, VerbName, VerbResult } from "../../storage/ports.ts";

export type { GuestType, VerbName, VerbResult };

export interface SnapshotOptions {
  snapname: string;
  description?: string;
}

export interface MigrateOptions {
  target: string;
  online: boolean;
}

export interface GuestLocation {
  node: string;
  type: GuestType;
  /** As the cluster reports it: running, stopped, paused... */
  status: string;
}

/** Why a hypervisor call failed, in words the caller can act on. */
export type GuestControlFailure =
  /** The hypervisor answered with an error status (kept as `status`). */
  | "hypervisor_error"
  /** No answer: down, unreachable, timed out, or not a hypervisor. */
  | "hypervisor_unreachable"
  /** The stored credentials cannot be decrypted with the configured key. */
  | "credential_undecryptable"
  /** The key protecting the credentials could not be read. */
  | "encryption_key_unavailable";

export class GuestControlError extends Error {
  constructor(
    readonly failure: GuestControlFailure,
    message: string,
    /** The hypervisor's HTTP status, when it answered. */
    readonly status: number | null = null,
  ) {
    super(message);
    this.name = "GuestControlError";
  }
}

/** One hypervisor endpoint's guests. Calls reject with GuestControlError. */
export interface GuestControlPort {
  locate(vmid: number): Promise<GuestLocation | null>;
  /** Each returns the task's UPID (null when the hypervisor started none). */
  start(at: GuestLocation, vmid: number): Promise<string | null>;
  stop(at: GuestLocation, vmid: number): Promise<string | null>;
  snapshot(at: GuestLocation, vmid: number, options: SnapshotOptions): Promise<string | null>;
  migrate(at: GuestLocation, vmid: number, options: MigrateOptions): Promise<string | null>;
}

export interface VerbCall {
  verb: VerbName;
  vm_type: GuestType;
  vmid: number;
  endpoint_id: number;
  actor: string;
  /** The API key that asked (recorded beside the free-text actor). */
  api_key_id: number | null;
  idempotency_key: string | null;
  snapshot?: SnapshotOptions;
  migrate?: MigrateOptions;
}

/** The answer body of a verb that reached the hypervisor (or found nothing to do). */
export interface VerbAnswer {
  verb: VerbName;
  vm_type: GuestType;
  vmid: number;
  endpoint_id: number;
  actor: string;
  result: VerbResult;
  task_upid?: string;
  dispatched_at: string;
  audit_id: number;
}

export type VerbOutcome =
  | { kind: "done"; answer: VerbAnswer }
  /** The audit record could not be written: nothing was sent. */
  | { kind: "audit_unavailable"; detail: string }
  | { kind: "guest_not_found"; answer: VerbAnswer; detail: string }
  | {
    kind: "failed";
    answer: VerbAnswer;
    failure: GuestControlFailure;
    detail: string;
    hypervisor_status: number | null;
  };
