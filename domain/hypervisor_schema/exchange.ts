/**
 * One exchange with the hypervisor API as both modes see it: the request a mount hands over
 * (method, path, merged parameters, the caller's credentials) and the answer it formats back.
 * The mock engine produces these answers from its state; real mode from the upstream cluster.
 */
import type { Operation } from "./schema.ts";
import type { FieldError, RawParams } from "./validate.ts";

/** What the caller presented; the mock checks it, real mode forwards it. */
export interface Credentials {
  /** Value of the PVEAuthCookie cookie. */
  ticket?: string;
  /** Value of the CSRFPreventionToken header. */
  csrf?: string;
  /** Value of the Authorization header. */
  authorization?: string;
}

export interface EngineRequest {
  method: string;
  /** Path relative to the mount, still percent-encoded (e.g. `/nodes/pve1/qemu`). */
  path: string;
  /** Query and body parameters merged (body wins). */
  params: RawParams;
  /** Files of a multipart body by field name (their parameter holds the file name). */
  files?: Record<string, { name: string; size: number }>;
  credentials: Credentials;
}

export interface EngineSuccess {
  ok: true;
  status: number;
  data: unknown;
  /** Total count before paging (lists only). */
  total?: number;
  /** The UPID when the operation started a task. */
  task?: string;
  /** The template and operation that answered. */
  template: string;
  operation: Operation;
}

export interface EngineFailure {
  ok: false;
  status: number;
  wireStatus: number;
  message: string;
  errors: FieldError[];
}

export type EngineResult = EngineSuccess | EngineFailure;
