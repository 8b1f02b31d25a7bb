/**
 * One verb: the audit record first (no record, no call), then the guest's node and state from
 * the cluster, then the call, then the record finalised with the outcome. Starting a running
 * guest or stopping a stopped one sends nothing and says so.
 */
import type { VerbAuditStore } from "../../storage/ports.ts";
import type { Logger } from "../../infra/logger.ts";
import {
  GuestControlError,
  type GuestControlPort,
  type GuestLocation,
  type VerbAnswer,
  type VerbCall,
  type VerbOutcome,
  type VerbResult,
} from "./types.ts";

export interface VerbContext {
  audit: VerbAuditStore;
  guests: () => GuestControlPort;
  now: () => number;
  logger: Logger;
}

const ALREADY_RUNNING = /already running/i;
const NOT_RUNNING = /not running|already stopped/i;

export async function runVerb(call: VerbCall, ctx: VerbContext): Promise<VerbOutcome> {
  const createdAt = new Date(ctx.now()).toISOString();
  let auditId: number;
  try {
    const record = await ctx.audit.begin({
      verb: call.verb,
      vm_type: call.vm_type,
      vmid: call.vmid,
      endpoint_id: call.endpoint_id,
      actor: call.actor,
      api_key_id: call.api_key_id,
      idempotency_key: call.idempotency_key,
      created_at: createdAt,
    });
    auditId = record.id;
  } catch (error) {
    ctx.logger.log("error", "verb refused: the audit record could not be written", {
      verb: call.verb,
      vmid: call.vmid,
      endpoint_id: call.endpoint_id,
      error: error instanceof Error ? error.message : String(error),
    });
    return {
      kind: "audit_unavailable",
      detail: "The audit record could not be written, so nothing was sent to the hypervisor.",
    };
  }

  const answer = (result: VerbResult, upid: string | null = null): VerbAnswer => ({
    verb: call.verb,
    vm_type: call.vm_type,
    vmid: call.vmid,
    endpoint_id: call.endpoint_id,
    actor: call.actor,
    result,
    ...(upid ? { task_upid: upid } : {}),
    dispatched_at: createdAt,
    audit_id: auditId,
  });
  const finish = async (result: VerbResult, upid: string | null, detail: string | null) => {
    try {
      await ctx.audit.finish(auditId, {
        result,
        task_upid: upid,
        detail,
        finished_at: new Date(ctx.now()).toISOString(),
      });
    } catch (error) {
      // The verb happened; the record stays in_progress, which reads as "outcome unknown".
      ctx.logger.log("error", "verb audit record could not be finalised", {
        audit_id: auditId,
        result,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  };

  try {
    const guests = ctx.guests();
    const at = await guests.locate(call.vmid);
    if (!at || at.type !== call.vm_type) {
      const detail = at
        ? `Guest ${call.vmid} is ${at.type === "qemu" ? "a QEMU VM" : "an LXC container"}, ` +
          `not ${call.vm_type === "qemu" ? "a QEMU VM" : "an LXC container"}.`
        : `Guest ${call.vmid} does not exist on this hypervisor endpoint.`;
      await finish("failed", null, detail);
      return { kind: "guest_not_found", answer: answer("failed"), detail };
    }
    const idle = alreadyDone(call, at);
    if (idle) {
      await finish(idle, null, `nothing sent: the guest is ${at.status}`);
      return { kind: "done", answer: answer(idle) };
    }
    const upid = await dispatch(guests, call, at);
    const result: VerbResult = call.verb === "migrate" ? "accepted" : "ok";
    await finish(result, upid, null);
    return { kind: "done", answer: answer(result, upid) };
  } catch (error) {
    const failure = error instanceof GuestControlError
      ? error
      : new GuestControlError("hypervisor_error", String((error as Error)?.message ?? error));
    // Lost a race with another caller: the hypervisor says the state is already reached.
    if (failure.failure === "hypervisor_error") {
      const raced = call.verb === "start" && ALREADY_RUNNING.test(failure.message)
        ? "already_running"
        : call.verb === "stop" && NOT_RUNNING.test(failure.message)
        ? "already_stopped"
        : null;
      if (raced) {
        await finish(raced, null, failure.message);
        return { kind: "done", answer: answer(raced) };
      }
    }
    await finish("failed", null, failure.message);
    return {
      kind: "failed",
      answer: answer("failed"),
      failure: failure.failure,
      detail: failure.message,
      hypervisor_status: failure.status,
    };
  }
}

function alreadyDone(call: VerbCall, at: GuestLocation): VerbResult | null {
  if (call.verb === "start" && at.status === "running") return "already_running";
  if (call.verb === "stop" && at.status === "stopped") return "already_stopped";
  return null;
}

function dispatch(guests: GuestControlPort, call: VerbCall, at: GuestLocation) {
  switch (call.verb) {
    case "start":
      return guests.start(at, call.vmid);
    case "stop":
      return guests.stop(at, call.vmid);
    case "snapshot":
      return guests.snapshot(at, call.vmid, call.snapshot!);
    case "migrate":
      return guests.migrate(at, call.vmid, call.migrate!);
  }
}
