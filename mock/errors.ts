/** Errors the hypervisor mock answers; routes/hypervisor maps them to each mount's format. */
import type { FieldError } from "../domain/hypervisor_schema/validate.ts";

/** Error answered by the engine. `missing` marks "the addressed resource does not exist". */
export class MockError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: FieldError[] = [],
    /** Status on the Proxmox wire mount when it differs (Proxmox answers 500 for most failures). */
    readonly wireStatus: number = status,
  ) {
    super(message);
    this.name = "MockError";
  }
}

/** A resource addressed by the path does not exist: 404 on /pve, Proxmox's 500 on /api2/json. */
export function missing(message: string): MockError {
  return new MockError(404, message, [], 500);
}

/** An operation that cannot run in the current state (VM already running, ...). */
export function failed(message: string): MockError {
  return new MockError(400, message, [], 500);
}

export function fieldError(field: string, message: string): MockError {
  return new MockError(400, "Parameter verification failed.", [{ field, message }]);
}
