/**
 * The Sync and Jobs pages over the durable job API: start, schedule (the API's field errors
 * next to the fields), cancel a scheduled job, a job's page. The job API is part of this app:
 * a server without it fails these tests (never a silent pass).
 */
import assert from "node:assert/strict";
import { appendJobLog, MAX_LOG_ENTRIES } from "../../../domain/netbox/jobs.ts";
import { createInventoryCore } from "../../../routes/inventory/mod.ts";
import { consoleHarness, type Harness, ROOT, textOf } from "./_console.ts";

async function assertJobApi(h: Harness): Promise<void> {
  const answer = await h.api("GET", "/api/plugins/service/sync/");
  assert.notEqual(answer.status, 404, "the job API is mounted (GET /api/plugins/service/sync/)");
}

Deno.test("console jobs: schedule with the API's field errors, then cancel from the list", async () => {
  const h = await consoleHarness();
  try {
    await assertJobApi(h);
    const c = h.client();
    await c.signIn(ROOT);
    const bad = await c.submit("/ui/sync", "/ui/sync", {
      sync_types: "all",
      schedule_at: "2030-01-01T02:00",
      interval_value: "0",
      interval_unit: "minutes",
    });
    assert.equal(bad.status, 400);
    const field = /<div class="field invalid"><label for="f-interval_value">[\s\S]*?<\/div>/.exec(
      bad.html,
    )?.[0] ?? "";
    assert.match(field, /A whole number of at least 1/);
    assert.match(field, /value="0"/);

    const at = new Date(Date.now() + 3600_000).toISOString().slice(0, 16);
    const ok = await c.submit("/ui/sync", "/ui/sync", {
      sync_types: "devices",
      job_name: "nightly",
      schedule_at: at,
      interval_value: "1",
      interval_unit: "days",
    });
    assert.equal(ok.status, 303);
    const id = /^\/ui\/jobs\/(\d+)$/.exec(ok.location!)![1];
    const job = await h.api("GET", `/api/core/jobs/${id}/`);
    assert.equal(job.body.name, "nightly");
    assert.equal(job.body.status.value ?? job.body.status, "scheduled");
    assert.equal(job.body.interval, 1440);

    const list = await c.get("/ui/jobs");
    assert.match(list.text, new RegExp(`#${id} nightly scheduled`));
    assert.match(list.text, /every 1440 min/);
    assert.match(list.text, /token 1/);
    const cancelled = await c.submit("/ui/jobs", `/ui/jobs/${id}/cancel`, {});
    assert.equal(cancelled.location, "/ui/jobs?notice=cancelled");
    assert.equal((await h.api("GET", `/api/core/jobs/${id}/`)).status, 404);
  } finally {
    h.close();
  }
});

Deno.test("console jobs: a token without core.add_job cannot start one, nor core.delete_job cancel", async () => {
  const h = await consoleHarness();
  try {
    await assertJobApi(h);
    const t = await h.token({ permissions: ["core.view_job"] });
    const c = h.client();
    await c.signIn(t.value);
    const sent = await c.submit("/ui/jobs", "/ui/sync", { sync_types: "all" });
    assert.equal(sent.status, 403);
    assert.match(sent.text, /You do not have permission to perform this action/);
    const at = new Date(Date.now() + 3600_000).toISOString();
    const made = await h.api("POST", "/api/plugins/service/sync/", {
      sync_types: ["devices"],
      schedule_at: at,
    });
    assert.equal(made.status, 201);
    const list = await c.get("/ui/jobs");
    assert.ok(!list.html.includes(`/ui/jobs/${made.body.job_id}/cancel`), "no cancel button");
    const refused = await c.submit("/ui/jobs", `/ui/jobs/${made.body.job_id}/cancel`, {});
    assert.equal(refused.location, "/ui/jobs?notice=denied");
    assert.equal((await h.api("GET", `/api/core/jobs/${made.body.job_id}/`)).status, 200);
  } finally {
    h.close();
  }
});

Deno.test("console jobs: 'Started by' names the token from the job's user, even after the log is trimmed", async () => {
  const h = await consoleHarness();
  try {
    await assertJobApi(h);
    const token = await h.api("POST", "/api/users/tokens/", {
      version: 1,
      description: "ci runner",
      is_superuser: true,
      write_enabled: true,
    });
    assert.equal(token.status, 201);
    const made = await h.api(
      "POST",
      "/api/plugins/service/sync/",
      { sync_types: ["devices"], schedule_at: new Date(Date.now() + 3600_000).toISOString() },
      String(token.body.token),
    );
    assert.equal(made.status, 201);
    const id = made.body.job_id;
    const job = await h.api("GET", `/api/core/jobs/${id}/`);
    assert.deepEqual(job.body.user, {
      display: `token ${token.body.id} (ci runner)`,
      token_id: token.body.id,
      description: "ci runner",
    });
    // A long job's log keeps its newest lines only: the "Queued by" line goes.
    const { engine } = createInventoryCore(h.deps);
    for (let i = 0; i <= MAX_LOG_ENTRIES; i++) await appendJobLog(engine, id, "info", `line ${i}`);
    const log = (await h.api("GET", `/api/core/jobs/${id}/`)).body.log;
    assert.ok(!log.some((e: { message: string }) => e.message.includes("by token")));

    const c = h.client();
    await c.signIn(ROOT);
    const row = /<tr>(?:(?!<\/tr>)[\s\S])*?#\d+ Sync devices[\s\S]*?<\/tr>/.exec(
      (await c.get("/ui/jobs")).html,
    )?.[0] ?? "";
    assert.match(textOf(row), new RegExp(`token ${token.body.id} \\(ci runner\\)`));
    const page = await c.get(`/ui/jobs/${id}`);
    assert.match(textOf(page.html), /Started by\s*token \d+ \(ci runner\)/);
  } finally {
    h.close();
  }
});
