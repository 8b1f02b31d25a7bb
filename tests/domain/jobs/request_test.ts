/**
 * The body of a sync request, field by field, at its edges (domain/jobs/request.ts; the HTTP
 * answers are tests/routes/plugin/sync_request_test.ts): what each field becomes, and what is
 * refused with which message.
 */
import assert from "node:assert/strict";
import { parseSyncRequest } from "../../../domain/jobs/request.ts";
import { SYNC_TYPES } from "../../../domain/jobs/stages.ts";

const NOW = Date.parse("2030-01-01T00:00:00.000Z");
const DAY = 24 * 3600 * 1000;
const endpoints = [
  { id: 1, name: "a", enabled: true, copyName: "a (inv:1)" },
  { id: 2, name: "b", enabled: true, copyName: "b (inv:2)" },
  { id: 3, name: "c", enabled: false, copyName: "c (inv:3)" },
];
const parse = (body: unknown) => parseSyncRequest(body, endpoints, NOW);

function value(body: unknown) {
  const r = parse(body);
  if (!r.ok) throw new Error(`refused: ${JSON.stringify(r.errors)}`);
  return r.value;
}

function errors(body: unknown) {
  const r = parse(body);
  if (r.ok) throw new Error(`accepted: ${JSON.stringify(r.value)}`);
  return r.errors;
}

Deno.test("sync request parse: an empty object is a full sync of every enabled endpoint, now, once", () => {
  assert.deepEqual(value({}), {
    sync_types: SYNC_TYPES,
    endpoint_ids: null,
    job_name: null,
    schedule_at: null,
    interval_minutes: null,
    sync_options: null,
  });
  assert.deepEqual(value({ sync_types: ["devices", "all"] }).sync_types, SYNC_TYPES);
  for (const body of [null, [], [{}], "{}", 1]) {
    assert.deepEqual(errors(body), { non_field_errors: ["Send a JSON object."] });
  }
});

Deno.test("sync request parse: sync types must be a non-empty list of known names", () => {
  const message = ['A non-empty list of sync types, e.g. ["all"] or ["devices"].'];
  // An empty text, 0 or false is a wrong value, not "not given": refused, never a full sync.
  for (const bad of ["all", "", 0, false, [], ["devices", 3], null]) {
    if (bad === null) {
      // null is "not given": the default, all stages.
      assert.deepEqual(value({ sync_types: bad }).sync_types, SYNC_TYPES);
      continue;
    }
    assert.deepEqual(errors({ sync_types: bad }).sync_types, message, JSON.stringify(bad));
  }
  const unknown = errors({ sync_types: ["devices", "vms", "x".repeat(80)] }).sync_types;
  assert.equal(unknown.length, 1);
  assert.ok(
    unknown[0].startsWith(`Unknown sync type(s): "vms", "${"x".repeat(60)}". Known: all, `),
  );
});

Deno.test("sync request parse: endpoint ids: numbers or numeric texts, once each, known and enabled", () => {
  assert.deepEqual(value({ hypervisor_endpoint_ids: [2, "1", 2] }).endpoint_ids, [2, 1]);
  assert.equal(value({ hypervisor_endpoint_ids: [] }).endpoint_ids, null, "none: every one");
  assert.equal(value({ hypervisor_endpoint_ids: null }).endpoint_ids, null);
  const shape = ["A list of hypervisor endpoint ids, e.g. [1, 2]."];
  for (const bad of [[0], [-1], [1.5], ["x"], "1", { 1: 1 }]) {
    assert.deepEqual(
      errors({ hypervisor_endpoint_ids: bad }).hypervisor_endpoint_ids,
      shape,
      JSON.stringify(bad),
    );
  }
  assert.deepEqual(errors({ hypervisor_endpoint_ids: [9, 3, 1, 8] }).hypervisor_endpoint_ids, [
    "Unknown hypervisor endpoint id(s): 9, 8.",
    "Disabled hypervisor endpoint id(s): 3.",
  ]);
  assert.deepEqual(errors({ hypervisor_endpoint_ids: [3] }).hypervisor_endpoint_ids, [
    "Disabled hypervisor endpoint id(s): 3.",
  ]);
});

Deno.test("sync request parse: a job name is trimmed, blank means the default, 200 characters at most", () => {
  assert.equal(value({ job_name: "  nightly " }).job_name, "nightly");
  assert.equal(value({ job_name: "   " }).job_name, null);
  assert.equal(value({ job_name: null }).job_name, null);
  assert.equal(value({ job_name: ` ${"n".repeat(200)} ` }).job_name, "n".repeat(200));
  for (const bad of ["n".repeat(201), 5, ["x"]]) {
    assert.deepEqual(errors({ job_name: bad }).job_name, ["A text of at most 200 characters."]);
  }
});

Deno.test("sync request parse: schedule_at: a time ahead (30 days at most); now or past runs now", () => {
  const at = (ms: number) => new Date(ms).toISOString();
  assert.equal(value({ schedule_at: at(NOW + 1) }).schedule_at, NOW + 1);
  assert.equal(value({ schedule_at: at(NOW + 30 * DAY) }).schedule_at, NOW + 30 * DAY);
  assert.equal(value({ schedule_at: at(NOW) }).schedule_at, null);
  assert.equal(value({ schedule_at: at(NOW - DAY) }).schedule_at, null);
  assert.equal(value({ schedule_at: "" }).schedule_at, null);
  assert.equal(value({ schedule_at: null }).schedule_at, null);
  assert.deepEqual(errors({ schedule_at: at(NOW + 30 * DAY + 1) }).schedule_at, [
    "At most 30 days ahead.",
  ]);
  for (const bad of ["soon", NOW + DAY, true]) {
    assert.deepEqual(errors({ schedule_at: bad }).schedule_at, [
      "An ISO 8601 date and time, e.g. 2030-01-01T02:00:00Z.",
    ]);
  }
});

Deno.test("sync request parse: an interval in minutes, hours or days (minutes by default), one year at most", () => {
  assert.equal(value({ interval_value: 5 }).interval_minutes, 5);
  assert.equal(value({ interval_value: "3", interval_unit: "hours" }).interval_minutes, 180);
  assert.equal(value({ interval_value: 2, interval_unit: "days" }).interval_minutes, 2880);
  assert.equal(value({ interval_value: 1, interval_unit: null }).interval_minutes, 1);
  assert.equal(value({ interval_value: 365, interval_unit: "days" }).interval_minutes, 525_600);
  assert.equal(value({ interval_value: 525_600 }).interval_minutes, 525_600);
  assert.equal(value({ interval_value: "" }).interval_minutes, null);
  assert.equal(value({ interval_value: null, interval_unit: "hours" }).interval_minutes, null);
  assert.deepEqual(errors({ interval_value: 525_601 }).interval_value, ["At most one year."]);
  for (const bad of [0, -1, 1.5, "two", true]) {
    assert.deepEqual(errors({ interval_value: bad }).interval_value, [
      "A whole number of at least 1.",
    ], JSON.stringify(bad));
  }
  const unit = ["One of minutes, hours, days."];
  for (const bad of ["weeks", 60, "toString", ""]) {
    assert.deepEqual(errors({ interval_value: 1, interval_unit: bad }).interval_unit, unit);
    assert.deepEqual(errors({ interval_unit: bad }).interval_unit, unit, "checked alone too");
  }
});

Deno.test("sync request parse: run options: known ones, normalised; the dry run is not a job's", () => {
  assert.deepEqual(
    value({ sync_options: { overwrite_names: false, primary_ip_preference: "v6" } }).sync_options,
    { overwrite_names: "false", primary_ip_preference: "v6" },
  );
  assert.equal(value({ sync_options: {} }).sync_options, null, "no options: none");
  assert.equal(value({ sync_options: null }).sync_options, null);
  const refused = errors({ sync_options: { dry_run: true } }).sync_options;
  assert.equal(refused.length, 1);
  assert.match(refused[0], /^Unknown run option "dry_run"\. Known: overwrite_/);
  assert.ok(!refused[0].includes("dry_run,"));
  assert.deepEqual(errors({ sync_options: "overwrite_names" }).sync_options, [
    'An object of run options, e.g. {"overwrite_names": false}.',
  ]);
  assert.deepEqual(errors({ sync_options: { primary_ip_preference: "v5" } }).sync_options, [
    "primary_ip_preference: one of both, v4, v6.",
  ]);
});

Deno.test("sync request parse: unknown fields are named (cut to 100 characters), with every other problem", () => {
  const long = "f".repeat(150);
  const e = errors({ [long]: 1, colour: "blue", interval_value: 0 });
  assert.deepEqual(Object.keys(e).sort(), ["colour", "f".repeat(100), "interval_value"]);
  assert.deepEqual(e.colour, ["Unknown field."]);
  // The errors object is a plain one (a field named like Object's own is just a name).
  assert.equal(Object.getPrototypeOf(e), Object.prototype);
});
