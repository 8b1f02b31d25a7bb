/**
 * The body of `POST /api/plugins/service/sync/`, checked field by field (NetBox-style
 * `{field: [message]}` errors): sync types, endpoint ids, name, schedule and interval.
 */
import type { JobEndpoint } from "./ports.ts";
import { SYNC_TYPES } from "./stages.ts";
import { checkOptionValue, OPTION_PARAMS } from "../sync/options.ts";

/** Run options a job may carry: all but the dry run (a job writes; the plan is asked directly). */
const JOB_OPTIONS = OPTION_PARAMS.filter((o) => o !== "dry_run");

export interface SyncRequest {
  sync_types: string[];
  endpoint_ids: number[] | null;
  job_name: string | null;
  /** Epoch ms, or null to run now. */
  schedule_at: number | null;
  interval_minutes: number | null;
  /** Run options for the backend (query parameter → value), or null. */
  sync_options?: Record<string, string> | null;
}

const UNITS: Record<string, number> = { minutes: 1, hours: 60, days: 1440 };
const KNOWN = new Set([
  "sync_types",
  "hypervisor_endpoint_ids",
  "job_name",
  "schedule_at",
  "interval_value",
  "interval_unit",
  "sync_options",
]);
/** Past this, a schedule is a typo (Deno KV delays go up to 30 days). */
const MAX_AHEAD_MS = 30 * 24 * 3600 * 1000;

export function parseSyncRequest(
  body: unknown,
  endpoints: readonly JobEndpoint[],
  now: number,
): { ok: true; value: SyncRequest } | { ok: false; errors: Record<string, string[]> } {
  // No prototype: a body field named "constructor" or "__proto__" is just a name here.
  const errors: Record<string, string[]> = Object.create(null);
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return { ok: false, errors: { non_field_errors: ["Send a JSON object."] } };
  }
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) {
    if (!KNOWN.has(key)) errors[key.slice(0, 100)] = ["Unknown field."];
  }

  let types: string[] = [];
  const raw = b.sync_types ?? ["all"];
  if (!Array.isArray(raw) || raw.length === 0 || raw.some((t) => typeof t !== "string")) {
    errors.sync_types = ['A non-empty list of sync types, e.g. ["all"] or ["devices"].'];
  } else {
    const unknown = (raw as string[]).filter((t) => t !== "all" && !SYNC_TYPES.includes(t));
    if (unknown.length) {
      errors.sync_types = [
        `Unknown sync type(s): ${unknown.map((t) => JSON.stringify(t.slice(0, 60))).join(", ")}. ` +
        `Known: all, ${SYNC_TYPES.join(", ")}.`,
      ];
    } else if (raw.includes("all")) {
      types = [...SYNC_TYPES];
    } else {
      // Table order, once each: later stages build on earlier ones.
      types = SYNC_TYPES.filter((t) => raw.includes(t));
    }
  }

  let ids: number[] | null = null;
  const rawIds = b.hypervisor_endpoint_ids;
  if (rawIds !== undefined && rawIds !== null) {
    if (
      !Array.isArray(rawIds) ||
      rawIds.some((v) => !Number.isInteger(typeof v === "string" ? Number(v) : v) || Number(v) < 1)
    ) {
      errors.hypervisor_endpoint_ids = ["A list of hypervisor endpoint ids, e.g. [1, 2]."];
    } else {
      ids = [...new Set(rawIds.map(Number))];
      const unknown = ids.filter((id) => !endpoints.some((e) => e.id === id));
      const disabled = ids.filter((id) => endpoints.some((e) => e.id === id && !e.enabled));
      const messages: string[] = [];
      if (unknown.length) {
        messages.push(`Unknown hypervisor endpoint id(s): ${unknown.join(", ")}.`);
      }
      if (disabled.length) {
        messages.push(`Disabled hypervisor endpoint id(s): ${disabled.join(", ")}.`);
      }
      if (messages.length) errors.hypervisor_endpoint_ids = messages;
      if (ids.length === 0) ids = null;
    }
  }

  let name: string | null = null;
  if (b.job_name !== undefined && b.job_name !== null) {
    if (typeof b.job_name !== "string" || b.job_name.trim().length > 200) {
      errors.job_name = ["A text of at most 200 characters."];
    } else if (b.job_name.trim()) name = b.job_name.trim();
  }

  let at: number | null = null;
  if (b.schedule_at !== undefined && b.schedule_at !== null && b.schedule_at !== "") {
    const t = typeof b.schedule_at === "string" ? Date.parse(b.schedule_at) : NaN;
    if (!Number.isFinite(t)) {
      errors.schedule_at = ["An ISO 8601 date and time, e.g. 2030-01-01T02:00:00Z."];
    } else if (t > now + MAX_AHEAD_MS) {
      errors.schedule_at = ["At most 30 days ahead."];
    } else if (t > now) at = t;
  }

  let interval: number | null = null;
  const value = b.interval_value;
  const unit = b.interval_unit ?? "minutes";
  if (value !== undefined && value !== null && value !== "") {
    const n = typeof value === "string" ? Number(value) : value;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1) {
      errors.interval_value = ["A whole number of at least 1."];
    } else if (typeof unit !== "string" || !Object.hasOwn(UNITS, unit)) {
      errors.interval_unit = ["One of minutes, hours, days."];
    } else if (n * UNITS[unit] > 365 * 1440) {
      errors.interval_value = ["At most one year."];
    } else interval = n * UNITS[unit];
  } else if (b.interval_unit !== undefined && b.interval_unit !== null) {
    if (typeof unit !== "string" || !Object.hasOwn(UNITS, unit)) {
      errors.interval_unit = ["One of minutes, hours, days."];
    }
  }

  let syncOptions: Record<string, string> | null = null;
  if (b.sync_options !== undefined && b.sync_options !== null) {
    const raw = b.sync_options;
    const messages: string[] = [];
    if (typeof raw !== "object" || Array.isArray(raw)) {
      messages.push('An object of run options, e.g. {"overwrite_names": false}.');
    } else {
      syncOptions = {};
      for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
        if (!JOB_OPTIONS.includes(key)) {
          messages.push(
            `Unknown run option ${JSON.stringify(key.slice(0, 60))}. Known: ${
              JOB_OPTIONS.join(", ")
            }.`,
          );
        } else {
          const checked = checkOptionValue(key, value);
          if (checked.ok) syncOptions[key] = checked.value;
          else messages.push(checked.message);
        }
      }
    }
    if (messages.length) errors.sync_options = messages;
  }

  if (Object.keys(errors).length) return { ok: false, errors: { ...errors } };
  return {
    ok: true,
    value: {
      sync_types: types,
      endpoint_ids: ids,
      job_name: name,
      schedule_at: at,
      interval_minutes: interval,
      sync_options: syncOptions && Object.keys(syncOptions).length ? syncOptions : null,
    },
  };
}
