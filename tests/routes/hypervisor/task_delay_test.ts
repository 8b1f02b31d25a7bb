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
