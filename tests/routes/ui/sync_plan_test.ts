/**
 * The console's sync page: the plan (the backend's dry run) shown before the admin presses
 * Start, with the run options of the form; the options ride on the job it starts.
 */
import assert from "node:assert/strict";
import { consoleHarness, ROOT, wireAndSync } from "./_console.ts";

const KEY = "console-plan-encryption-key-0123456789abcdef";

Deno.test("console sync: the plan before Run shows an admin's rename being undone, unless the admin owns names; Start passes the options to the job", async () => {
  const h = await consoleHarness({ HYPERVISOR_MOCK_TASK_DELAY_MS: "0" });
  try {
    await wireAndSync(h, KEY);
    const vms = await h.api("GET", "/api/virtualization/virtual-machines/?ordering=id&limit=1");
    const vm = vms.body.results[0];
    const renamed = await h.api("PATCH", `/api/virtualization/virtual-machines/${vm.id}/`, {
      name: "named-by-hand",
    });
    assert.equal(renamed.status, 200);
    const c = h.client();
    await c.signIn(ROOT);
    const form = {
      sync_types: "all",
      options_form: "1",
      overwrite_names: "true",
      overwrite_tags: "true",
      overwrite_descriptions: "true",
      overwrite_roles: "true",
      overwrite_custom_fields: "true",
      overwrite_tenants: "true",
      stage_task_history: "true",
      stage_vm_backups: "true",
      stage_vm_snapshots: "true",
      stage_sdn: "true",
      primary_ip_preference: "both",
    };
    const planned = await c.submit("/ui/sync", "/ui/sync", { ...form, intent: "plan" });
    assert.equal(planned.status, 200, planned.text.slice(0, 500));
    assert.match(planned.text, /Plan \(dry run, nothing written\)/);
    assert.match(
      planned.text,
      new RegExp(
        `virtual-machines update virtual machines named-by-hand name: "named-by-hand" → "${vm.name}"`,
      ),
    );
    // Nothing was written: the hand-made name is still there.
    const still = await h.api("GET", `/api/virtualization/virtual-machines/${vm.id}/`);
    assert.equal(still.body.name, "named-by-hand");

    // The admin owns names: the plan no longer undoes the rename.
    const { overwrite_names: _, ...adminNames } = form;
    const kept = await c.submit("/ui/sync", "/ui/sync", { ...adminNames, intent: "plan" });
    assert.equal(kept.status, 200);
    assert.match(kept.text, /Plan \(dry run, nothing written\)/);
    assert.doesNotMatch(kept.text, /named-by-hand name:/);

    // Start: the job carries the options to every backend stream.
    const started = await c.submit("/ui/sync", "/ui/sync", adminNames);
    assert.equal(started.status, 303, started.text.slice(0, 300));
    const id = Number(/^\/ui\/jobs\/(\d+)$/.exec(started.location!)![1]);
    const spec = await h.deps.storage.jobs.spec(id);
    assert.deepEqual(spec?.sync_options, { overwrite_names: "false" });
  } finally {
    h.close();
  }
});

Deno.test("plugin: a hypervisor endpoint's sync_policy is checked and pushed to its backend copy", async () => {
  const h = await consoleHarness({ HYPERVISOR_MOCK_TASK_DELAY_MS: "0" });
  try {
    await wireAndSync(h, KEY);
    const [endpoint] = (await h.api("GET", "/api/plugins/service/endpoints/hypervisor/")).body
      .results;
    const bad = await h.api("PATCH", `/api/plugins/service/endpoints/hypervisor/${endpoint.id}/`, {
      sync_policy: { delete_orphans: "maybe" },
    });
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(bad.body.sync_policy), /delete_orphans: true or false/);
    const ok = await h.api("PATCH", `/api/plugins/service/endpoints/hypervisor/${endpoint.id}/`, {
      sync_policy: {
        overwrite_names: false,
        primary_ip_preference: "v4",
        lxc_role: "container",
        tenant_rules: [{ match: "name", pattern: "^web-", tenant: "web" }],
      },
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.last_push?.ok, true, JSON.stringify(ok.body.last_push));
    // The plugin reads the policy back as sent: a boolean stays a JSON boolean.
    assert.equal(ok.body.sync_policy.overwrite_names, false);
    const [backend] = (await h.api("GET", "/api/plugins/service/endpoints/backend/")).body.results;
    const copies = await h.app.request("http://console.test/hypervisor/endpoints", {
      headers: { "x-service-api-key": backend.token },
    });
    const copy = (await copies.json()).find((c: { name: string }) =>
      c.name.endsWith(`(inv:${endpoint.id})`)
    );
    assert.deepEqual(copy.sync_policy, {
      overwrite_names: false,
      primary_ip_preference: "v4",
      lxc_role: "container",
      tenant_rules: [{ match: "name", pattern: "^web-", tenant: "web" }],
    });
  } finally {
    h.close();
  }
});
