/**
 * The sync page's live mode passes the run options (docs/sync.md, "Run options") the way a
 * durable job does: the form's fields reach every backend stream as query parameters, and the
 * run's effect reads back from the inventory.
 */
import assert from "node:assert/strict";
import { type Client, consoleHarness, type Harness, ROOT, wireAndSync } from "./_console.ts";

const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1];

/** The live run's last `complete` event. */
function completeOf(html: string): { ok: boolean; message: string; errors: unknown[] } {
  const all = [...html.matchAll(/event: complete\ndata: (.*)\n/g)];
  assert.ok(all.length > 0, html.slice(0, 500));
  return JSON.parse(all[all.length - 1][1]);
}

async function liveRun(client: Client, fields: Record<string, string>) {
  const csrf = csrfOf((await client.get("/ui/sync")).html);
  const query = new URLSearchParams({ sync_types: "all", _csrf: csrf, ...fields });
  return await client.get(`/ui/live/stages?${query}`);
}

Deno.test("console live: the run options of the sync form reach the backend streams and take effect (an admin's rename survives with names unchecked)", async () => {
  let app: Harness["app"] | null = null;
  const streams: URL[] = [];
  const recording: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    if (url.pathname.endsWith("/stream")) streams.push(url);
    return Promise.resolve(app!.fetch(request, { remoteAddr: { hostname: "127.0.0.1" } }));
  };
  const h = await consoleHarness({}, recording);
  app = h.app;
  try {
    await wireAndSync(h, "live-options-encryption-key-0123456789");
    const vms = await h.api("GET", "/api/virtualization/virtual-machines/?limit=1&ordering=id");
    const vm = vms.body.results[0];
    assert.ok(vm, JSON.stringify(vms.body).slice(0, 300));
    const synced = vm.name;
    const renamed = await h.api("PATCH", `/api/virtualization/virtual-machines/${vm.id}/`, {
      name: "renamed-by-the-admin",
    });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));

    const client = h.client();
    await client.signIn(ROOT);
    // The form as the browser sends it with "names" unchecked and SDN left out: every other
    // overwrite family and optional stage checked, as the page renders them.
    const run = await liveRun(client, {
      options_form: "1",
      overwrite_tags: "true",
      overwrite_descriptions: "true",
      overwrite_roles: "true",
      overwrite_custom_fields: "true",
      stage_task_history: "true",
      stage_vm_backups: "true",
      stage_vm_snapshots: "true",
      primary_ip_preference: "both",
    });
    const done = completeOf(run.html);
    assert.equal(done.ok, true, JSON.stringify(done).slice(0, 500));
    assert.deepEqual(streams.map((u) => u.pathname), ["/full-update/stream"]);
    assert.equal(streams[0].searchParams.get("overwrite_names"), "false");
    assert.equal(streams[0].searchParams.get("stage_sdn"), "false");
    assert.equal(streams[0].searchParams.get("overwrite_tags"), null, "defaults are not sent");
    const kept = await h.api("GET", `/api/virtualization/virtual-machines/${vm.id}/`);
    assert.equal(kept.body.name, "renamed-by-the-admin", "the admin owns names in this run");

    // The same run without the options: the hypervisor owns names again and restores it.
    streams.length = 0;
    const plain = await liveRun(client, {});
    assert.equal(completeOf(plain.html).ok, true);
    assert.equal(streams[0].search, "");
    const restored = await h.api("GET", `/api/virtualization/virtual-machines/${vm.id}/`);
    assert.equal(restored.body.name, synced);
  } finally {
    h.close();
  }
});
