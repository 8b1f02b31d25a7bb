/** The console's relative times: recent ones as "… ago", older ones with date and time (UTC). */
import assert from "node:assert/strict";
import { ago } from "../../../routes/ui/layout.tsx";

const now = Date.parse("2026-01-10T12:00:00Z");

Deno.test("ago: recent times are relative", () => {
  assert.equal(ago(now - 5_000, now), "5 s ago");
  assert.equal(ago(now - 3 * 60_000, now), "3 min ago");
  assert.equal(ago(now - 2 * 3_600_000, now), "2 h ago");
});

Deno.test("ago: a time older than a day keeps its hour, so a day of tasks is told apart", () => {
  assert.equal(ago(Date.parse("2025-12-31T01:00:00Z"), now), "2025-12-31 01:00");
  assert.equal(ago(Date.parse("2025-12-31T23:15:00Z"), now), "2025-12-31 23:15");
});

Deno.test("ago: a future time is shown as it is", () => {
  assert.equal(ago(Date.parse("2026-01-11T08:30:00Z"), now), "2026-01-11 08:30");
});
