import assert from "node:assert/strict";
import { call, harness, login } from "./_hv.ts";

Deno.test("mock tasks run for HYPERVISOR_MOCK_TASK_DELAY_MS, then stop with exitstatus OK", async () => {
  const h = await harness({ HYPERVISOR_MOCK_TASK_DELAY_MS: "5000" }, {
    schemaUrl: null,
    taskDelayMs: undefined,
  });
  try {
    const s = await login(h);
    const started = await call(h, s, "POST", "/api2/json/nodes/pve1/qemu/100/status/start");
    assert.equal(started.status, 200);
    const upid = started.body.data as string;
    const status = (path: string) => call(h, s, "GET", path).then((r) => r.body.data);
    const path = `/api2/json/nodes/pve1/tasks/${encodeURIComponent(upid)}/status`;
    h.clock.now += 4_000;
    assert.equal((await status(path)).status, "running");
    h.clock.now += 1_500;
    const done = await status(path);
    assert.equal(done.status, "stopped");
    assert.equal(done.exitstatus, "OK");
  } finally {
    h.close();
  }
});

Deno.test("mock tasks: DELETE /tasks/{upid} interrupts a running task and its effect never applies", async () => {
  const h = await harness({ HYPERVISOR_MOCK_TASK_DELAY_MS: "5000" }, {
    schemaUrl: null,
    taskDelayMs: undefined,
  });
  try {
    const s = await login(h);
    const base = "/api2/json/nodes/pve1/qemu/100/status";
    const before = (await call(h, s, "GET", `${base}/current`)).body.data.status;
    const action = before === "running" ? "stop" : "start";
    const started = await call(h, s, "POST", `${base}/${action}`);
    assert.equal(started.status, 200);
    const upid = encodeURIComponent(started.body.data as string);
    const stopped = await call(h, s, "DELETE", `/api2/json/nodes/pve1/tasks/${upid}`);
    assert.equal(stopped.status, 200);
    h.clock.now += 10_000;
    const task = (await call(h, s, "GET", `/api2/json/nodes/pve1/tasks/${upid}/status`)).body.data;
    assert.deepEqual([task.status, task.exitstatus], ["stopped", "interrupted by signal"]);
    const log = (await call(h, s, "GET", `/api2/json/nodes/pve1/tasks/${upid}/log`)).body.data;
    assert.equal(log.at(-1).t, "TASK ERROR: interrupted by signal");
    const after = (await call(h, s, "GET", `${base}/current`)).body.data.status;
    assert.equal(after, before, `the interrupted ${action} changed nothing`);
  } finally {
    h.close();
  }
});

Deno.test("mock tasks: an effect that fails ends the task with TASK ERROR and its message", async () => {
  const h = await harness({}, { schemaUrl: null });
  try {
    const s = await login(h);
    const task = h.engine.tasks.start({
      node: "pve1",
      type: "qmstart",
      id: "100",
      user: "root@pam",
      effect: () => {
        throw new Error("storage 'local' is not online");
      },
    }, h.clock.now);
    const upid = encodeURIComponent(task.upid);
    const status = (await call(h, s, "GET", `/api2/json/nodes/pve1/tasks/${upid}/status`)).body
      .data;
    assert.deepEqual([status.status, status.exitstatus], [
      "stopped",
      "storage 'local' is not online",
    ]);
    const log = (await call(h, s, "GET", `/api2/json/nodes/pve1/tasks/${upid}/log`)).body.data;
    assert.equal(log.at(-1).t, "TASK ERROR: storage 'local' is not online");
  } finally {
    h.close();
  }
});
