import assert from "node:assert/strict";
import { refusalOf } from "../../../routes/plugin/job_wiring.ts";

Deno.test("job wiring: the backend link classifies answers for the runner", () => {
  assert.equal(refusalOf(401), "unauthorized");
  assert.equal(refusalOf(null), "retryable");
  assert.equal(refusalOf(500), "retryable");
  assert.equal(refusalOf(502), "retryable");
  assert.equal(refusalOf(400), "refused");
  assert.equal(refusalOf(403), "refused");
  assert.equal(refusalOf(404), "refused");
  assert.equal(refusalOf(409), "refused");
});
