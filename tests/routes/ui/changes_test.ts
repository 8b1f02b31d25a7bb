/**
 * The console shows the change log: an object's history (who, when, message, the fields each
 * change touched) on the VM page and on its own page, the changes of one request, and a link
 * from every list row.
 */
import assert from "node:assert/strict";
import { consoleHarness, ROOT } from "./_console.ts";

Deno.test("the VM page and the history page show what each change touched, with its message", async () => {
  const h = await consoleHarness();
  try {
    const site = await h.api("POST", "/api/dcim/sites/", { name: "AMS1", slug: "ams1" });
    const vm = await h.api("POST", "/api/virtualization/virtual-machines/", {
      name: "web1",
      site: site.body.id,
      changelog_message: "made by the test",
    });
    assert.equal(vm.status, 201);
    await h.api("PATCH", `/api/virtualization/virtual-machines/${vm.body.id}/`, {
      comments: "edited",
      changelog_message: "admin fix",
    });
    await h.api("POST", "/api/virtualization/interfaces/", {
      virtual_machine: vm.body.id,
      name: "net0",
    });
    const c = h.client();
    await c.signIn(ROOT);
    const page = await c.get(`/ui/vms/${vm.body.id}`);
    assert.equal(page.status, 200);
    assert.match(page.text, /History 3 /);
    assert.match(page.text, /comments\s*: — → "edited"/);
    assert.match(page.text, /admin fix/);
    // The interface's creation belongs to the VM's history too.
    assert.match(page.text, /Created virtualization\.vminterface net0/);
    const history = await c.get(
      `/ui/changes?type=virtualization.virtualmachine&id=${vm.body.id}`,
    );
    assert.equal(history.status, 200);
    assert.match(history.text, /made by the test/);
    assert.match(history.text, /Updated virtualization\.virtualmachine web1 token #1 admin fix/);
    const requestId = /request_id=([0-9a-f-]{36})/.exec(history.html)![1];
    const one = await c.get(`/ui/changes?request_id=${requestId}`);
    assert.equal(one.status, 200);
    assert.match(one.text, /Changes of request/);
    const all = await c.get("/ui/changes");
    assert.match(all.text, /AMS1/);
  } finally {
    h.deps.kv.close();
  }
});
