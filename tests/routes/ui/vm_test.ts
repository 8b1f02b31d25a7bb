/**
 * The inventory browser after a real sync (in process: the backend syncs the app's own mock
 * into the app's own inventory), a VM's page, and a verb sent from the console: confirmed
 * first, audited with the console token as actor, refused to tokens the API does not show the
 * backend key to.
 */
import assert from "node:assert/strict";
import { consoleHarness, type Harness, ROOT, wireAndSync } from "./_console.ts";

async function synced(): Promise<Harness> {
  const h = await consoleHarness({ HYPERVISOR_MOCK_SEED: "nodes=2,vms=4,cts=2,storages=1" });
  await wireAndSync(h, "console vm test key");
  return h;
}

Deno.test("console inventory: lists, filters, the VM page and a confirmed start", async () => {
  const h = await synced();
  try {
    const c = h.client();
    await c.signIn(ROOT);
    const all = await c.get("/ui/vms");
    assert.match(all.text, /6 items/);
    const containers = await c.get("/ui/vms?type=lxc");
    assert.match(containers.text, /2 items/);
    assert.ok(!containers.text.includes("vm-100"));
    const found = await c.get("/ui/vms?q=vm-100");
    const id = /href="\/ui\/vms\/(\d+)">vm-100</.exec(found.html)![1];
    const sorted = await c.get("/ui/vms?ordering=-name");
    assert.ok(sorted.text.indexOf("vm-103") < sorted.text.indexOf("vm-100"), "ordering=-name");
    for (const path of ["/ui/nodes", "/ui/clusters", "/ui/storage", "/ui/tasks"]) {
      const page = await c.get(path);
      assert.equal(page.status, 200, path);
      assert.ok(!/\b0 items\b/.test(page.text), `${path} lists what the sync wrote`);
    }

    const vm = await c.get(`/ui/vms/${id}`);
    assert.equal(vm.status, 200);
    assert.match(vm.text, /Interfaces \d/);
    assert.match(vm.text, /qemu\/100/);
    assert.match(
      vm.html,
      new RegExp(`href="http://console.test/api/virtualization/virtual-machines/${id}/"`),
    );
    assert.match(vm.html, new RegExp(`href="/ui/vms/${id}/confirm\\?verb=start"`));

    const confirm = await c.get(`/ui/vms/${id}/confirm?verb=start`);
    assert.match(confirm.text, /Start vm-100\?/);
    const sent = await c.submit(`/ui/vms/${id}/confirm?verb=start`, `/ui/vms/${id}/action`, {
      verb: "start",
    });
    assert.equal(sent.status, 303);
    assert.match(sent.location!, /done=start%3A(ok|already_running)/);
    assert.match(sent.location!, /task=UPID%3A/);
    const actions = await c.get("/ui/actions");
    // The endpoint by its name, not the backend copy's bare id.
    assert.match(actions.text, /start qemu\/100 \S.* \(inv:\d+\) console:token-1/);
    assert.doesNotMatch(actions.text, /qemu\/100 \d+ console/);
  } finally {
    h.close();
  }
});

Deno.test("console verbs: only a token the API shows the backend key to may act", async () => {
  const h = await synced();
  try {
    const t = await h.token({
      permissions: [
        "virtualization.view_virtualmachine",
        "service.view_vmsyncstate",
        "service.view_hypervisorendpoint",
        "service.view_backendendpoint",
      ],
    });
    const c = h.client();
    await c.signIn(t.value);
    const found = await c.get("/ui/vms?q=vm-100");
    const id = /href="\/ui\/vms\/(\d+)">vm-100</.exec(found.html)![1];
    const sent = await c.submit(`/ui/vms/${id}/confirm?verb=stop`, `/ui/vms/${id}/action`, {
      verb: "stop",
    });
    assert.equal(sent.status, 403);
    assert.match(sent.text, /needs a token that may change the backend endpoint/);
    const audit = await h.api("GET", "/api/plugins/service/endpoints/backend/");
    const key = audit.body.results[0].token;
    const list = await (await h.app.request("http://console.test/hypervisor/actions", {
      headers: { "x-service-api-key": key },
    })).json();
    assert.equal(list.count, 0, "nothing was sent");
  } finally {
    h.close();
  }
});
