/**
 * A verb that loses a race, seen from the hypervisor's words: Proxmox answers an LXC stop of a
 * container stopped meanwhile with "CT <id> not running" (a QEMU stop of a stopped VM is no
 * error; the mock behaves like that, so these cases are driven by a hypervisor port that answers
 * as Proxmox would). The audit store is the real KV one.
 */
import assert from "node:assert/strict";
import { runVerb } from "../../../domain/verbs/run.ts";
import {
  GuestControlError,
  type GuestControlPort,
  type VerbCall,
} from "../../../domain/verbs/types.ts";
import { createKvStorage } from "../../../storage/kv/mod.ts";
import { MemoryLogger } from "../../../infra/logger.ts";

/** A hypervisor where guest 101 is a running container whose every call fails with `words`. */
function refusing(words: string, sent: string[]): GuestControlPort {
  const fail = (verb: string) => () => {
    sent.push(verb);
    return Promise.reject(new GuestControlError("hypervisor_error", words, 500));
  };
  return {
    locate: (vmid) =>
      Promise.resolve(vmid === 101 ? { node: "pve1", type: "lxc", status: "running" } : null),
    start: fail("start"),
    stop: fail("stop"),
    snapshot: fail("snapshot"),
    migrate: fail("migrate"),
  };
}

async function verb(call: Partial<VerbCall> & Pick<VerbCall, "verb">, words: string) {
  const kv = await Deno.openKv(":memory:");
  try {
    const audit = createKvStorage(kv, { now: Date.now }).verbAudit;
    const sent: string[] = [];
    const outcome = await runVerb({
      vm_type: "lxc",
      vmid: 101,
      endpoint_id: 1,
      actor: "test",
      api_key_id: null,
      idempotency_key: null,
      ...call,
    }, { audit, guests: () => refusing(words, sent), now: Date.now, logger: new MemoryLogger() });
    const trail = await audit.list({}, { limit: 10, offset: 0 });
    return { outcome, sent, trail: trail.results };
  } finally {
    kv.close();
  }
}

Deno.test("verbs: a stop that finds the container stopped meanwhile is already_stopped, audited with the hypervisor's words", async () => {
  const { outcome, sent, trail } = await verb({ verb: "stop" }, "CT 101 not running");
  assert.equal(outcome.kind, "done");
  assert.equal(outcome.kind === "done" && outcome.answer.result, "already_stopped");
  assert.deepEqual(sent, ["stop"]);
  assert.deepEqual(trail.map((r) => [r.verb, r.status, r.result, r.detail]), [
    ["stop", "finalized", "already_stopped", "CT 101 not running"],
  ]);
});

Deno.test("verbs: 'not running' answering a snapshot or a migrate is a failure, not already_stopped", async () => {
  for (
    const call of [
      { verb: "snapshot" as const, snapshot: { snapname: "before" } },
      { verb: "migrate" as const, migrate: { target: "pve2", online: true } },
    ]
  ) {
    const { outcome, trail } = await verb(call, "CT 101 not running");
    assert.equal(outcome.kind, "failed", call.verb);
    assert.equal(outcome.kind === "failed" && outcome.answer.result, "failed");
    assert.equal(outcome.kind === "failed" && outcome.detail, "CT 101 not running");
    assert.deepEqual(trail.map((r) => [r.verb, r.result]), [[call.verb, "failed"]]);
  }
  // Nor does "already running" make a stop anything but a failure.
  const { outcome } = await verb({ verb: "stop" }, "CT 101 already running");
  assert.equal(outcome.kind, "failed");
});
