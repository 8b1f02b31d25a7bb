/**
 * Every console page: what it shows to a token that may, what it says to one that may not
 * (the API's own 403), and its error states (unknown ids, an unreachable backend, APIs this
 * server does not offer yet). Never a stack trace.
 */
import assert from "node:assert/strict";
import { consoleHarness, type Harness, ROOT, wireBackend } from "./_console.ts";

const PAGES = [
  "/ui/",
  "/ui/endpoints",
  "/ui/endpoints/hypervisor/new",
  "/ui/endpoints/inventory/new",
  "/ui/endpoints/backend/1",
  "/ui/settings",
  "/ui/vms",
  "/ui/nodes",
  "/ui/clusters",
  "/ui/storage",
  "/ui/backup-routines",
  "/ui/replications",
  "/ui/tasks",
  "/ui/sync",
  "/ui/jobs",
  "/ui/actions",
  "/ui/changes",
];

function noStack(text: string, where: string) {
  assert.ok(
    !/\bat [\w.<>]+ \(|file:\/\/|Error:|TypeError/.test(text),
    `${where}: ${text.slice(0, 300)}`,
  );
}

Deno.test("console pages: a superuser sees every page, in standards mode, with security headers", async () => {
  const h = await consoleHarness();
  try {
    await wireBackend(h);
    const c = h.client();
    await c.signIn(ROOT);
    for (const path of PAGES) {
      const page = await c.get(path);
      assert.equal(page.status, 200, `${path}: ${page.text.slice(0, 300)}`);
      assert.match(page.html, /^<!DOCTYPE html><html lang="en">/, path);
      assert.match(page.headers.get("content-security-policy") ?? "", /script-src 'self'/);
      assert.equal(page.headers.get("x-frame-options"), "DENY");
      assert.equal(page.headers.get("cache-control"), "no-store");
      noStack(page.text, path);
    }
  } finally {
    h.close();
  }
});

Deno.test("console pages: a view-only token sees its pages, and the API's refusal elsewhere", async () => {
  const h = await consoleHarness();
  try {
    await wireBackend(h);
    const t = await h.token({
      permissions: ["virtualization.view_virtualmachine"],
      write_enabled: false,
    });
    const c = h.client();
    await c.signIn(t.value);
    const home = await c.get("/ui/");
    assert.equal(home.status, 200);
    // Navigation lists what the token may view.
    assert.match(home.html, /href="\/ui\/vms"/);
    for (
      const hidden of ["/ui/endpoints", "/ui/nodes", "/ui/actions", "/ui/settings", "/ui/jobs"]
    ) {
      assert.ok(!home.html.includes(`href="${hidden}"`), hidden);
    }
    assert.match(home.text, /Your token may not view hypervisor endpoints/);
    assert.match(home.text, /Your token may not view the backend endpoint/);
    assert.equal((await c.get("/ui/vms")).status, 200);
    // The pages it may not see answer with the API's own refusal, in words.
    for (
      const [path, words] of [
        ["/ui/nodes", /Your token may not view nodes/],
        ["/ui/clusters", /Your token may not view clusters/],
        ["/ui/storage", /Your token may not view storage/],
        ["/ui/tasks", /Your token may not view the task history/],
        ["/ui/jobs", /Your token may not view jobs/],
        ["/ui/settings", /Your token may not view the plugin settings/],
        ["/ui/actions", /Your token may not view the backend endpoint/],
      ] as const
    ) {
      const page = await c.get(path);
      assert.equal(page.status, 403, path);
      assert.match(page.text, words, path);
      noStack(page.text, path);
    }
    const endpoints = await c.get("/ui/endpoints");
    assert.match(endpoints.text, /Your token may not view hypervisor endpoints/);
    assert.ok(!endpoints.html.includes("Add hypervisor endpoint"));
  } finally {
    h.close();
  }
});

Deno.test("console pages: a read-only token cannot change what it can see", async () => {
  const h = await consoleHarness();
  try {
    const created = await h.api("POST", "/api/plugins/service/endpoints/hypervisor/", {
      name: "lab",
      domain: "10.0.0.1",
      password: "pw",
    });
    const t = await h.token({
      permissions: [
        "service.view_hypervisorendpoint",
        "service.change_hypervisorendpoint",
        "service.view_pluginsettings",
      ],
      write_enabled: false,
    });
    const c = h.client();
    await c.signIn(t.value);
    const list = await c.get("/ui/endpoints");
    assert.match(list.text, /lab \(10\.0\.0\.1\)/);
    assert.ok(!list.html.includes('value="disable"'), "no bulk buttons");
    const form = await c.get(`/ui/endpoints/hypervisor/${created.body.id}`);
    assert.match(form.html, /<fieldset disabled="">/);
    assert.match(form.text, /may view this hypervisor endpoint but not change it/);
    // Sending the form anyway: the API refuses, the page says so, nothing changes.
    const sent = await c.submit(
      `/ui/endpoints/hypervisor/${created.body.id}`,
      `/ui/endpoints/hypervisor/${created.body.id}`,
      { name: "renamed", domain: "10.0.0.1" },
    );
    assert.equal(sent.status, 403);
    assert.match(sent.text, /You do not have permission to perform this action/);
    const bulk = await c.submit("/ui/", "/ui/endpoints/bulk", {
      action: "disable",
      ids: String(created.body.id),
    });
    assert.equal(bulk.status, 303);
    assert.match(bulk.location!, /failed=HTTP%20403/);
    const record = await h.api(
      "GET",
      `/api/plugins/service/endpoints/hypervisor/${created.body.id}/`,
    );
    assert.equal(record.body.name, "lab");
    assert.equal(record.body.enabled, true);
    const settings = await c.get("/ui/settings");
    assert.equal(settings.status, 200);
    assert.match(settings.text, /may view the settings but not change them/);
  } finally {
    h.close();
  }
});

Deno.test("console endpoints: inline validation errors, secrets write-only, create and edit", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    await c.signIn(ROOT);
    const bad = await c.submit("/ui/endpoints/hypervisor/new", "/ui/endpoints/hypervisor/new", {
      name: "lab",
      domain: "",
      password: "s3cret-password",
    });
    assert.equal(bad.status, 400);
    // The API's field messages sit next to their fields; what was typed stays (but no secret).
    const fieldHtml = (html: string, id: string) =>
      new RegExp(`<div class="field invalid"><label for="${id}">[\\s\\S]*?</div>`).exec(html)
        ?.[0] ?? "";
    assert.match(
      fieldHtml(bad.html, "f-domain"),
      /Either a domain or an IP address must be provided/,
    );
    const badPort = await c.submit("/ui/endpoints/hypervisor/new", "/ui/endpoints/hypervisor/new", {
      name: "lab",
      domain: "10.0.0.1",
      port: "99999",
    });
    assert.equal(badPort.status, 400);
    assert.match(fieldHtml(badPort.html, "f-port"), /less than or equal to 65535/);
    assert.match(fieldHtml(badPort.html, "f-port"), /value="99999"/);
    assert.match(bad.html, /id="f-name"[^>]*value="lab"/);
    assert.ok(!bad.html.includes("s3cret-password"), "a secret is never echoed");

    const ok = await c.submit("/ui/endpoints/hypervisor/new", "/ui/endpoints/hypervisor/new", {
      name: "lab",
      domain: "10.0.0.1",
      port: "8006",
      use_https: "on",
      enabled: "on",
      username: "root@pam",
      password: "s3cret-password",
    });
    assert.equal(ok.status, 303);
    const id = /^\/ui\/endpoints\/hypervisor\/(\d+)\?notice=created$/.exec(ok.location!)![1];
    const page = await c.get(ok.location!);
    assert.match(page.text, /The hypervisor endpoint was created|push to the backend failed/);
    assert.ok(!page.html.includes("s3cret-password"));
    // "set" next to the password, "not set" next to the token secret.
    assert.match(page.html, /Password<span class="secret-state set">set<\/span>/);
    assert.match(page.html, /API token secret<span class="secret-state ">not set<\/span>/);

    // Editing without typing the password keeps it; unchecked boxes are false.
    const saved = await c.submit(
      `/ui/endpoints/hypervisor/${id}`,
      `/ui/endpoints/hypervisor/${id}`,
      {
        name: "lab renamed",
        domain: "10.0.0.1",
        port: "8006",
        username: "root@pam",
        // What a browser sends for an unchecked box: only its hidden "off"; an empty
        // password field keeps the stored password.
        enabled: "off",
        password: "",
      },
    );
    assert.equal(saved.status, 303);
    const record = await h.api("GET", `/api/plugins/service/endpoints/hypervisor/${id}/`);
    assert.equal(record.body.name, "lab renamed");
    assert.equal(record.body.enabled, false);
    assert.equal(record.body.has_password, true);
  } finally {
    h.close();
  }
});

Deno.test("console endpoints: enable, disable and delete several at once", async () => {
  const h = await consoleHarness();
  try {
    const ids: string[] = [];
    for (const name of ["a", "b", "c"]) {
      const r = await h.api("POST", "/api/plugins/service/endpoints/hypervisor/", {
        name,
        domain: `10.0.0.${ids.length + 1}`,
        password: "pw",
      });
      ids.push(String(r.body.id));
    }
    const c = h.client();
    await c.signIn(ROOT);
    const none = await c.submit("/ui/endpoints", "/ui/endpoints/bulk", { action: "disable" });
    assert.equal(none.location, "/ui/endpoints?notice=none");
    const off = await c.submit("/ui/endpoints", "/ui/endpoints/bulk", {
      action: "disable",
      ids: [ids[0], ids[1]],
    });
    assert.equal(off.location, "/ui/endpoints?notice=disabled");
    const states = await Promise.all(
      ids.map((id) => h.api("GET", `/api/plugins/service/endpoints/hypervisor/${id}/`)),
    );
    assert.deepEqual(states.map((s) => s.body.enabled), [false, false, true]);
    // Delete asks first (a page of its own), then deletes exactly the confirmed ones.
    const ask = await c.submit("/ui/endpoints", "/ui/endpoints/bulk", {
      action: "delete",
      ids: [ids[1], ids[2]],
    });
    assert.equal(ask.status, 200);
    assert.match(ask.text, /Delete endpoints\?/);
    assert.match(ask.text, /b \(10\.0\.0\.2\)/);
    assert.match(ask.text, /c \(10\.0\.0\.3\)/);
    assert.ok(!ask.text.includes("a (10.0.0.1)"));
    const csrf = /name="_csrf" value="([^"]+)"/.exec(ask.html)![1];
    const gone = await c.post("/ui/endpoints/delete", { _csrf: csrf, ids: [ids[1], ids[2]] });
    assert.equal(gone.location, "/ui/endpoints?notice=deleted");
    const left = await h.api("GET", "/api/plugins/service/endpoints/hypervisor/");
    assert.deepEqual(left.body.results.map((r: { name: string }) => r.name), ["a"]);
  } finally {
    h.close();
  }
});

Deno.test("console pages: unknown ids and pages answer a human 404", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    await c.signIn(ROOT);
    for (
      const [path, words] of [
        ["/ui/vms/999999", /Virtual machine not found/],
        ["/ui/jobs/999999", /Job not found/],
        ["/ui/endpoints/hypervisor/999999", /There is no hypervisor endpoint with this id/],
        ["/ui/endpoints/toaster/new", /no such kind of endpoint/],
        ["/ui/no-such-page", /Page not found/],
      ] as const
    ) {
      const page = await c.get(path);
      assert.equal(page.status, 404, path);
      assert.match(page.text, words, path);
      noStack(page.text, path);
    }
    // Odd query strings are ignored, not errors.
    for (
      const path of [
        "/ui/vms?ordering=;drop&offset=-5",
        "/ui/tasks?offset=abc",
        "/ui/jobs?offset=1e99",
      ]
    ) {
      assert.equal((await c.get(path)).status, 200, path);
    }
  } finally {
    h.close();
  }
});

Deno.test("console: an unreachable backend is a sentence on the page, not a crash", async () => {
  const refusing: typeof fetch = () => Promise.reject(new TypeError("connection refused"));
  const h = await consoleHarness({}, refusing);
  try {
    await wireBackend(h);
    const c = h.client();
    await c.signIn(ROOT);
    const actions = await c.get("/ui/actions");
    assert.equal(actions.status, 502);
    assert.match(actions.text, /could not be reached \(connection refused\)/);
    const home = await c.get("/ui/");
    assert.equal(home.status, 200);
    assert.match(home.text, /needs repair/);
    noStack(home.text, "/ui/");
  } finally {
    h.close();
  }
});

Deno.test("console: repair and sync from the console start jobs the API lists", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    await c.signIn(ROOT);
    const home = await c.get("/ui/");
    assert.match(home.text, /No backend endpoint is configured/);
    assert.match(home.html, /action="\/ui\/repair"/);
    // Repair: the overview's button queues a repair job and shows its page.
    const repair = await c.submit("/ui/", "/ui/repair", {});
    assert.equal(repair.status, 303);
    const repairJob = Number(/^\/ui\/jobs\/(\d+)$/.exec(repair.location ?? "")?.[1]);
    assert.ok(repairJob > 0, `redirected to ${repair.location}`);
    const made = await h.api("GET", `/api/core/jobs/${repairJob}/`);
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const page = await c.get(repair.location!);
    assert.equal(page.status, 200);
    assert.match(page.text, new RegExp(`#${repairJob}\\b`));
    // The repair's jobs run to their end (their streams close when they are final).
    const settle = async () => {
      for (const j of (await h.api("GET", "/api/core/jobs/")).body.results) {
        const res = await h.app.request(
          `http://console.test/api/plugins/service/jobs/${j.id}/stream`,
          { headers: { authorization: `Token ${ROOT}` } },
        );
        await res.text();
      }
    };
    await settle();
    // Sync: the page offers the form (no "not available" sentence); sending it makes a job.
    const sync = await c.get("/ui/sync");
    assert.equal(sync.status, 200);
    assert.doesNotMatch(sync.text, /not available on this server/);
    assert.match(sync.html, /name="sync_types"/);
    const before = (await h.api("GET", "/api/core/jobs/")).body.count;
    const sent = await c.submit("/ui/sync", "/ui/sync", { sync_types: "all" });
    assert.equal(sent.status, 303, sent.text.slice(300, 1200));
    const syncJob = Number(/^\/ui\/jobs\/(\d+)$/.exec(sent.location ?? "")?.[1]);
    const jobs = await h.api("GET", "/api/core/jobs/");
    assert.equal(jobs.body.count, before + 1);
    assert.ok(jobs.body.results.some((j: { id: number }) => j.id === syncJob));
    await settle();
  } finally {
    h.close();
  }
});

Deno.test("console: repair and sync need core.add_job, as in the API", async () => {
  const h = await consoleHarness();
  try {
    await wireBackend(h);
    const t = await h.token({ permissions: ["service.view_backendendpoint", "core.view_job"] });
    const c = h.client();
    await c.signIn(t.value);
    const home = await c.get("/ui/");
    assert.ok(!home.html.includes('action="/ui/repair"'));
    const sync = await c.get("/ui/sync");
    assert.match(sync.text, /Starting a sync needs a token with core\.add_job/);
    assert.match(sync.html, /<fieldset disabled="">/);
  } finally {
    h.close();
  }
});

Deno.test("console live: keepalive status as Server-Sent Events", async () => {
  const h = await consoleHarness();
  try {
    const r = await h.api("POST", "/api/plugins/service/endpoints/hypervisor/", {
      name: "off",
      domain: "10.0.0.1",
      password: "pw",
      enabled: false,
    });
    const c = h.client();
    await c.signIn(ROOT);
    const res = await c.get(`/ui/live/status?ids=${r.body.id},999999`);
    assert.equal(res.headers.get("content-type"), "text/event-stream");
    const events = res.html.trim().split("\n\n").map((frame) => {
      const [event, data] = frame.split("\n");
      return { event: event.slice(7), data: JSON.parse(data.slice(6)) };
    });
    const status = events.filter((e) => e.event === "status").map((e) => e.data);
    assert.deepEqual(
      status.map((s) => [s.id, s.status]).sort(),
      [[r.body.id, "disabled"], [999999, "error"]],
    );
    assert.match(res.html, /event: done\n/);
    // Without a session: 401 JSON (an EventSource cannot follow a redirect to a form).
    const anon = await h.app.request("http://console.test/ui/live/status?ids=1");
    assert.equal(anon.status, 401);
  } finally {
    h.close();
  }
});

Deno.test("console static: stylesheet, script and icon are served by the app", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    for (
      const [path, type] of [
        ["/ui/static/console.css", "text/css"],
        ["/ui/static/console.js", "text/javascript"],
        ["/ui/favicon.svg", "image/svg\\+xml"],
      ]
    ) {
      const res = await c.get(path);
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get("content-type")!, new RegExp(type));
      assert.ok(res.html.length > 100);
    }
    assert.notEqual((await c.get("/ui/static/../mod.ts")).status, 200);
    assert.equal((await c.get("/ui/static/mod.ts")).status, 404);
  } finally {
    h.close();
  }
});

Deno.test("console live: a live stage run needs the page's CSRF token; a missing job stream is said", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    await c.signIn(ROOT);
    const forged = await c.get("/ui/live/stages?sync_types=all");
    assert.equal(forged.status, 403);
    const wrong = await c.get(`/ui/live/stages?sync_types=all&_csrf=${"x".repeat(32)}`);
    assert.equal(wrong.status, 403);
    // A job that does not exist: the stream says why in an event the page shows.
    const stream = await c.get("/ui/live/jobs/999999");
    assert.equal(stream.headers.get("content-type"), "text/event-stream");
    assert.match(stream.html, /^event: unavailable\ndata: \{"status":404,/);
    assert.match(stream.html, /This job no longer exists/);
    // A token that may not read jobs: the stream's own refusal, by its status.
    const t = await h.token({ permissions: ["service.view_backendendpoint"] });
    const viewer = h.client();
    await viewer.signIn(t.value);
    const refused = await viewer.get("/ui/live/jobs/1");
    assert.match(refused.html, /^event: unavailable\ndata: \{"status":403,/);
    assert.match(refused.html, /The job stream could not be opened \(HTTP 403\)\./);
  } finally {
    h.close();
  }
});

Deno.test("console live: a live stage run needs core.add_job; a view-only token starts nothing", async () => {
  let app: Harness["app"] | null = null;
  const seen: string[] = [];
  const recording: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    seen.push(`${request.method} ${new URL(request.url).pathname}`);
    queries.push(new URL(request.url).search);
    return Promise.resolve(app!.fetch(request, { remoteAddr: { hostname: "127.0.0.1" } }));
  };
  const queries: string[] = [];
  const h = await consoleHarness({}, recording);
  app = h.app;
  try {
    await wireBackend(h);
    const runs = () =>
      seen.filter((s) => /\/(full-update|virtualization|dcim|ipam)\S*\/stream$/.test(s));
    const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1];
    const t = await h.token({ permissions: ["service.view_backendendpoint", "core.view_job"] });
    const viewer = h.client();
    await viewer.signIn(t.value);
    const csrf = csrfOf((await viewer.get("/ui/sync")).html);
    const refused = await viewer.get(`/ui/live/stages?sync_types=all&_csrf=${csrf}`);
    assert.equal(refused.headers.get("content-type"), "text/event-stream");
    assert.match(
      refused.html,
      /event: complete\ndata: \{"ok":false,"message":"Starting a sync needs core\.add_job\."/,
    );
    assert.deepEqual(runs(), [], "no sync stream was opened");
    // The same request from a token that may start jobs does open the run.
    const admin = h.client();
    await admin.signIn(ROOT);
    const adminCsrf = csrfOf((await admin.get("/ui/sync")).html);
    const run = await admin.get(`/ui/live/stages?sync_types=all&_csrf=${adminCsrf}`);
    assert.deepEqual(runs(), ["GET /full-update/stream"]);
    // No endpoint chosen: the run is not scoped (an empty hypervisor_endpoint_ids is a 400).
    assert.equal(queries[seen.indexOf("GET /full-update/stream")], "");
    // The backend refuses that run (no inventory copy yet): its words end the live stream.
    const complete = /event: complete\ndata: (.*)\n/.exec(run.html)?.[1];
    assert.ok(complete, run.html.slice(0, 500));
    const body = JSON.parse(complete);
    assert.equal(body.ok, false);
    assert.match(body.message, /inventory/i, complete);
  } finally {
    h.close();
  }
});

Deno.test("console pages: the backend endpoint form sets the WebSocket streaming fields", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    await c.signIn(ROOT);
    const form = await c.get("/ui/endpoints/backend/new");
    assert.match(form.text, /Read the stage streams over WebSocket/);
    // A checkbox's help is shown too (the SSE default, the compatibility flag), and every
    // aria-describedby names an element of the page (it named a help never rendered).
    assert.match(form.text, /Off: Server-Sent Events on the connection above/);
    assert.match(form.text, /Kept for compatibility/);
    const ids = new Set([...form.html.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]));
    const described = [...form.html.matchAll(/aria-describedby="([^"]+)"/g)]
      .flatMap((m) => m[1].split(" "));
    assert.ok(described.includes("f-use_websocket-help"), described.join(" "));
    assert.deepEqual(described.filter((id) => !ids.has(id)), [], "dangling aria-describedby");
    const sent = await c.submit("/ui/endpoints/backend/new", "/ui/endpoints/backend/new", {
      name: "streams",
      domain: "10.0.0.9",
      port: "8800",
      use_https: ["off"],
      verify_ssl: ["off", "on"],
      use_websocket: ["off", "on"],
      websocket_domain: "ws.example.test",
      websocket_port: "9443",
      server_side_websocket: ["off"],
    });
    assert.equal(sent.status, 303, sent.text.slice(0, 300));
    const id = sent.location!.match(/backend\/(\d+)/)![1];
    const record = await h.api("GET", `/api/plugins/service/endpoints/backend/${id}/`);
    assert.equal(record.body.use_websocket, true);
    assert.equal(record.body.websocket_domain, "ws.example.test");
    assert.equal(record.body.websocket_port, 9443);
    assert.equal(record.body.server_side_websocket, false);
  } finally {
    h.close();
  }
});

Deno.test("console endpoints: a hypervisor endpoint's sync policy (roles, tenant rules) is edited as JSON", async () => {
  const h = await consoleHarness();
  try {
    const created = await h.api("POST", "/api/plugins/service/endpoints/hypervisor/", {
      name: "lab",
      domain: "10.0.0.1",
      password: "pw",
      sync_policy: { lxc_role: "container" },
    });
    const id = created.body.id;
    const c = h.client();
    await c.signIn(ROOT);
    const form = await c.get(`/ui/endpoints/hypervisor/${id}`);
    assert.match(form.html, /<textarea id="f-sync_policy"[^>]*>[^<]*&quot;lxc_role&quot;/);
    const policy = {
      qemu_role: "server",
      stage_sdn: false,
      tenant_rules: [{ match: "name", pattern: "^web-", tenant: "web" }],
    };
    const saved = await c.submit(
      `/ui/endpoints/hypervisor/${id}`,
      `/ui/endpoints/hypervisor/${id}`,
      {
        name: "lab",
        domain: "10.0.0.1",
        sync_policy: JSON.stringify(policy),
      },
    );
    assert.equal(saved.status, 303, saved.text.slice(0, 300));
    const record = await h.api("GET", `/api/plugins/service/endpoints/hypervisor/${id}/`);
    assert.deepEqual(record.body.sync_policy, policy);
    // Not JSON: the API's error shows at the field, the text is kept, nothing changes.
    const bad = await c.submit(`/ui/endpoints/hypervisor/${id}`, `/ui/endpoints/hypervisor/${id}`, {
      name: "lab",
      domain: "10.0.0.1",
      sync_policy: "{qemu_role: server",
    });
    assert.equal(bad.status, 400, bad.text.slice(0, 300));
    assert.match(bad.html, /<div class="field wide invalid">\s*<label for="f-sync_policy"/);
    assert.match(bad.html, /\{qemu_role: server<\/textarea>/);
    const after = await h.api("GET", `/api/plugins/service/endpoints/hypervisor/${id}/`);
    assert.deepEqual(after.body.sync_policy, policy);
    // Blank clears it.
    await c.submit(`/ui/endpoints/hypervisor/${id}`, `/ui/endpoints/hypervisor/${id}`, {
      name: "lab",
      domain: "10.0.0.1",
      sync_policy: "",
    });
    const cleared = await h.api("GET", `/api/plugins/service/endpoints/hypervisor/${id}/`);
    assert.equal(cleared.body.sync_policy, null);
  } finally {
    h.close();
  }
});
