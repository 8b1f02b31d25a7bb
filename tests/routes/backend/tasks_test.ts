/**
 * `GET /hypervisor/tasks/{upid}`: a verb's task followed against the app's own mock hypervisor
 * (an endpoint copy pointing at the app), running while the mock holds it and stopped/OK once
 * the mock's clock passes its end; a malformed UPID and an unknown endpoint answer 4xx.
 */
import assert from "node:assert/strict";
import { wholeApp } from "./_whole_app.ts";
import { endpoint, guest, mock } from "./_verbs.ts";

const DELAY_MS = 60_000;

Deno.test("tasks: a started guest's task is running, then stopped with OK", async () => {
  let clock = Date.now();
  await using h = await wholeApp({
    env: { HYPERVISOR_MOCK_TASK_DELAY_MS: String(DELAY_MS) },
    deps: { now: () => clock },
  });
  const id = await endpoint(h);
  const stopped = await guest(h, "qemu", "stopped");
  const started = await h.call(`/hypervisor/qemu/${stopped.vmid}/start?endpoint_id=${id}`, {
    method: "POST",
  });
  assert.equal(started.status, 200);
  const upid = (await started.json()).task_upid as string;
  assert.match(upid, /^UPID:/);

  // deno-lint-ignore no-explicit-any
  const read = async (): Promise<any> => {
    const res = await h.call(`/hypervisor/tasks/${upid}?endpoint_id=${id}`);
    assert.equal(res.status, 200);
    return await res.json();
  };
  const running = await read();
  assert.deepEqual(running, {
    upid,
    node: stopped.node,
    status: "running",
    exitstatus: null,
    type: "qmstart",
    id: String(stopped.vmid),
    starttime: running.starttime,
  });
  assert.ok(Number.isInteger(running.starttime) && running.starttime > 0);

  // The mock finishes the task once its clock passes the delay; the route sees it on a poll.
  clock += DELAY_MS + 1_000;
  let last = await read();
  for (let i = 0; i < 5 && last.status === "running"; i++) last = await read();
  assert.equal(last.status, "stopped");
  assert.equal(last.exitstatus, "OK");
  assert.equal(last.upid, upid);
  assert.equal(last.node, stopped.node);
  assert.ok(last.endtime >= last.starttime);
  // The task's effect was applied when it stopped: the guest now runs.
  const now = await mock(h, "/cluster/resources?type=vm") as { vmid: number; status: string }[];
  assert.equal(now.find((g) => g.vmid === stopped.vmid)?.status, "running");
});

Deno.test("tasks: a malformed upid is a 422 naming upid; an unknown endpoint is a 404", async () => {
  await using h = await wholeApp();
  const id = await endpoint(h);
  for (const bad of ["nope", "UPID:pve1:zz:00:00:qmstart:100:root@pam:", "UPID:..%2F:1"]) {
    const res = await h.call(`/hypervisor/tasks/${bad}?endpoint_id=${id}`);
    assert.equal(res.status, 422, bad);
    const body = await res.json();
    assert.deepEqual(body.detail[0].loc, ["path", "upid"], bad);
  }
  const upid = "UPID:pve1:0000A1B2:00C0FFEE:6560A000:qmstart:100:root@pam:";
  const unknown = await h.call(`/hypervisor/tasks/${upid}?endpoint_id=99`);
  assert.equal(unknown.status, 404);
  assert.deepEqual(await unknown.json(), {
    reason: "endpoint_not_found",
    detail: "Hypervisor endpoint 99 not found.",
    endpoint_id: 99,
  });
  const noKey = await h.call(`/hypervisor/tasks/${upid}?endpoint_id=${id}`, { key: null });
  assert.equal(noKey.status, 401);
  await noKey.body?.cancel();
});
