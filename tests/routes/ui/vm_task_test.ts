/**
 * The task a verb started, followed on the guest's page: "running" (with a self-refresh for
 * browsers without JavaScript and a poll URL for console.js) while the mock holds it, then
 * "OK" for the same UPID once the mock's clock passes its end, and the same through the JSON
 * route console.js polls.
 */
import assert from "node:assert/strict";
import { consoleHarness, wireAndSync } from "./_console.ts";

const DELAY_MS = 60_000;

Deno.test("console task: a started guest's task shows running, then OK", async () => {
  let clock = Date.now();
  const h = await consoleHarness(
    {
      HYPERVISOR_MOCK_SEED: "nodes=1,vms=2,cts=0,storages=1",
      HYPERVISOR_MOCK_TASK_DELAY_MS: String(DELAY_MS),
    },
    undefined,
    { now: () => clock },
  );
  try {
    await wireAndSync(h, "console task key");

    const c = h.client();
    await c.signIn("ui0123456789abcdef0123456789abcdef012345");
    const vms = await h.api("GET", "/api/virtualization/virtual-machines/?limit=100");
    const stopped = vms.body.results.find((v: { status: { value: string } }) =>
      v.status?.value === "offline"
    );
    assert.ok(stopped, "the seeded cluster has a stopped guest");
    const id = stopped.id;

    const sent = await c.submit(`/ui/vms/${id}/confirm?verb=start`, `/ui/vms/${id}/action`, {
      verb: "start",
    });
    assert.equal(sent.status, 303, sent.text.slice(0, 300));
    const location = new URL(sent.location!, "http://console.test");
    const upid = location.searchParams.get("task")!;
    assert.match(upid, /^UPID:[^:]+:/);
    assert.match(location.searchParams.get("endpoint") ?? "", /^\d+$/);

    const running = await c.get(location.pathname + location.search);
    assert.equal(running.status, 200);
    // Said plainly, with what the status on the page means; a stopped guest offers Start only.
    assert.match(running.text, /Start sent: the hypervisor is starting the guest\./);
    assert.match(running.text, /the next sync of this endpoint updates it/);
    assert.match(running.html, /verb=start/);
    assert.doesNotMatch(running.html, /verb=stop/);
    assert.match(running.text, new RegExp(`Hypervisor task Task ${escape(upid)} Status running`));
    assert.match(running.html, /<noscript><meta http-equiv="refresh" content="2"\/?><\/noscript>/);
    const poll = /data-task-poll="([^"]+)"/.exec(running.html)?.[1]?.replaceAll("&amp;", "&");
    assert.ok(poll, "the page names the poll URL while the task runs");
    assert.match(running.text, /Refresh/);
    const polled = await c.get(poll);
    assert.equal(JSON.parse(polled.html).status, "running");

    clock += DELAY_MS + 1_000;
    const done = await c.get(location.pathname + location.search);
    assert.match(done.text, new RegExp(`Task ${escape(upid)} Status finished Result succeeded`));
    assert.doesNotMatch(done.html, /http-equiv="refresh"|data-task-poll/);
    const after = JSON.parse((await c.get(poll)).html);
    assert.equal(after.upid, upid);
    assert.equal(after.status, "stopped");
    assert.equal(after.exitstatus, "OK");
  } finally {
    h.close();
  }
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
