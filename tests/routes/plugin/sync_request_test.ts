/**
 * `POST /api/plugins/service/sync/` checks its body field by field before anything is queued
 * (docs/jobs.md): NetBox-style `{field: [message]}` 400s, every problem at once, and a valid
 * request becomes a job whose spec holds exactly what was asked. In-process app, no backend:
 * the valid requests here are scheduled an hour ahead, so no job runs during the test.
 */
import assert from "node:assert/strict";
import { createApp } from "../../../app.ts";
import { testDeps } from "../../_helpers.ts";

const ROOT = "0123456789abcdef0123456789abcdef01234567";
const SYNC = "/api/plugins/service/sync/";

async function harness() {
  const deps = await testDeps({ INVENTORY_BOOTSTRAP_TOKEN: ROOT });
  const app = await createApp(deps);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(`http://inv.test${path}`, {
      method,
      headers: { authorization: `Token ${ROOT}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const jobCount = async () => (await call("GET", "/api/core/jobs/")).body.count as number;
  return { deps, call, jobCount, close: () => deps.kv.close() };
}

const inAnHour = () => new Date(Date.now() + 3600_000).toISOString();

Deno.test("sync request: a body that is no JSON object is refused, and nothing is queued", async () => {
  const h = await harness();
  try {
    for (const body of [42, "all", ["all"], true]) {
      const r = await h.call("POST", SYNC, body);
      assert.deepEqual([r.status, r.body], [400, { non_field_errors: ["Send a JSON object."] }]);
    }
    assert.equal(await h.jobCount(), 0);
  } finally {
    h.close();
  }
});

Deno.test("sync request: every field's problem is named at once, and nothing is queued", async () => {
  const h = await harness();
  try {
    const r = await h.call("POST", SYNC, {
      sync_types: ["devices", "vms"],
      hypervisor_endpoint_ids: [0],
      job_name: "x".repeat(201),
      schedule_at: "tomorrow",
      interval_value: 0,
      sync_options: { overwrite_names: "perhaps", colour: "blue" },
      colour: "blue",
    });
    assert.equal(r.status, 400);
    assert.deepEqual(Object.keys(r.body).sort(), [
      "colour",
      "hypervisor_endpoint_ids",
      "interval_value",
      "job_name",
      "schedule_at",
      "sync_options",
      "sync_types",
    ]);
    assert.deepEqual(r.body.colour, ["Unknown field."]);
    assert.match(r.body.sync_types[0], /^Unknown sync type\(s\): "vms"\. Known: all, devices, /);
    assert.deepEqual(r.body.interval_value, ["A whole number of at least 1."]);
    assert.deepEqual(r.body.schedule_at, [
      "An ISO 8601 date and time, e.g. 2030-01-01T02:00:00Z.",
    ]);
    assert.equal(r.body.sync_options.length, 2);
    assert.match(r.body.sync_options[1], /^Unknown run option "colour"\. Known: /);
    const more = [
      [{ interval_value: 2, interval_unit: "weeks" }, {
        interval_unit: ["One of minutes, hours, days."],
      }],
      [{ interval_unit: "weeks" }, { interval_unit: ["One of minutes, hours, days."] }],
      [{ interval_value: 366, interval_unit: "days" }, { interval_value: ["At most one year."] }],
      [{ interval_value: 1.5 }, { interval_value: ["A whole number of at least 1."] }],
      [{ schedule_at: "2999-01-01T00:00:00Z" }, { schedule_at: ["At most 30 days ahead."] }],
      [{ sync_options: ["overwrite_names"] }, {
        sync_options: ['An object of run options, e.g. {"overwrite_names": false}.'],
      }],
      [{ sync_types: [] }, {
        sync_types: ['A non-empty list of sync types, e.g. ["all"] or ["devices"].'],
      }],
    ] as const;
    for (const [body, errors] of more) {
      const answer = await h.call("POST", SYNC, body);
      assert.deepEqual([answer.status, answer.body], [400, errors], JSON.stringify(body));
    }
    assert.equal(await h.jobCount(), 0);
  } finally {
    h.close();
  }
});

Deno.test("sync request: a valid request is queued as asked: types in table order, interval, options", async () => {
  const h = await harness();
  try {
    const at = inAnHour();
    const r = await h.call("POST", SYNC, {
      sync_types: ["vm-disks", "devices", "vm-disks"],
      job_name: "  nightly  ",
      schedule_at: at,
      interval_value: "2",
      interval_unit: "hours",
      sync_options: { overwrite_names: false },
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.ok, true);
    const job = await h.call("GET", `/api/core/jobs/${r.body.job_id}/`);
    assert.equal(job.body.name, "nightly");
    assert.equal(job.body.status.value ?? job.body.status, "scheduled");
    assert.equal(job.body.interval, 120);
    assert.equal(Date.parse(job.body.scheduled), Date.parse(at));
    const spec = await h.deps.storage.jobs.spec(r.body.job_id);
    assert.deepEqual(spec?.sync_types, ["devices", "vm-disks"]);
    assert.equal(spec?.interval_minutes, 120);
    assert.deepEqual(spec?.sync_options, { overwrite_names: "false" });
    // "all" is every stage; an empty schedule_at or interval is none; a unit alone is fine.
    const all = await h.call("POST", SYNC, {
      sync_types: ["all"],
      schedule_at: inAnHour(),
      interval_value: "",
      interval_unit: "days",
      sync_options: {},
    });
    assert.equal(all.status, 201, JSON.stringify(all.body));
    const allSpec = await h.deps.storage.jobs.spec(all.body.job_id);
    assert.equal(allSpec?.sync_types.length, 13);
    assert.equal(allSpec?.interval_minutes, null);
    assert.equal(allSpec?.sync_options, undefined);
  } finally {
    h.close();
  }
});
