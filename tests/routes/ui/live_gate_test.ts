/**
 * What the console's live parts accept and refuse before anything runs (routes/ui/live.ts,
 * docs/console.md "Live parts"): the keepalive stream's id list, the live run's permission check
 * as the page's JSON pre-check, the exact bad endpoint ids named in a 400, the pre-check's list
 * of streams for chosen stages, and a run that cannot reach any backend.
 */
import assert from "node:assert/strict";
import { consoleHarness, ROOT, wireBackend } from "./_console.ts";

const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1];
const asJson = { headers: { accept: "application/json" } };

/** The SSE frames of a whole (finished) stream body, as `[event, data]`. */
function framesOf(body: string): Array<[string, Record<string, unknown>]> {
  return body.trim().split("\n\n").map((frame) => {
    const [event, data] = frame.split("\n");
    return [event.replace(/^event: /, ""), JSON.parse(data.replace(/^data: /, ""))];
  });
}

Deno.test("console live: the keepalive stream asks only for positive whole ids, each once", async () => {
  const h = await consoleHarness();
  try {
    const made = await h.api("POST", "/api/plugins/service/endpoints/hypervisor/", {
      name: "off",
      domain: "10.0.0.1",
      password: "pw",
      enabled: false,
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const id = made.body.id;
    const c = h.client();
    await c.signIn(ROOT);
    const res = await c.get(`/ui/live/status?ids=0,-3,1.5,abc,,${id},${id}`);
    assert.equal(res.status, 200);
    // Zero, negatives, fractions and words are no endpoint ids: no status frame, not counted.
    assert.deepEqual(framesOf(res.html).map(([event, data]) => [event, data.id, data.status]), [
      ["status", id, "disabled"],
      ["done", undefined, undefined],
    ]);
    assert.deepEqual(framesOf(res.html).at(-1), ["done", { count: 1 }]);
  } finally {
    h.close();
  }
});

Deno.test("console live: a view-only token's pre-check is a 403 JSON refusal, and nothing runs", async () => {
  let app: Awaited<ReturnType<typeof consoleHarness>>["app"] | null = null;
  const streams: string[] = [];
  const recording: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    const path = new URL(request.url).pathname;
    if (path.endsWith("/stream")) streams.push(path);
    return Promise.resolve(app!.fetch(request, { remoteAddr: { hostname: "127.0.0.1" } }));
  };
  const h = await consoleHarness({}, recording);
  app = h.app;
  try {
    await wireBackend(h);
    const t = await h.token({ permissions: ["service.view_backendendpoint", "core.view_job"] });
    const viewer = h.client();
    await viewer.signIn(t.value);
    const csrf = csrfOf((await viewer.get("/ui/sync")).html);
    const check = await viewer.send(`/ui/live/stages?sync_types=all&_csrf=${csrf}`, asJson);
    assert.equal(check.status, 403, check.html.slice(0, 300));
    assert.match(check.headers.get("content-type") ?? "", /application\/json/);
    assert.deepEqual(JSON.parse(check.html), { detail: "Starting a sync needs core.add_job." });
    assert.deepEqual(streams, [], "no stage stream was opened");
  } finally {
    h.close();
  }
});

Deno.test("console live: the pre-check lists the chosen stages' streams, unscoped, and bad endpoint ids are named exactly", async () => {
  let app: Awaited<ReturnType<typeof consoleHarness>>["app"] | null = null;
  const asked: string[] = [];
  const recording: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    const path = new URL(request.url).pathname;
    // What the live route would ask: the copies of endpoints, or a stage stream.
    if (path === "/hypervisor/endpoints" || path.endsWith("/stream")) asked.push(path);
    return Promise.resolve(app!.fetch(request, { remoteAddr: { hostname: "127.0.0.1" } }));
  };
  const h = await consoleHarness({}, recording);
  app = h.app;
  try {
    await wireBackend(h);
    const c = h.client();
    await c.signIn(ROOT);
    const csrf = csrfOf((await c.get("/ui/sync")).html);
    const query = (pairs: string[][]) =>
      `/ui/live/stages?${new URLSearchParams([["_csrf", csrf], ...pairs])}`;

    // Two chosen stages, no endpoint, no run options: two bare stream paths (no "?").
    const check = await c.send(
      query([["sync_types", "devices"], ["sync_types", "storage"]]),
      asJson,
    );
    assert.equal(check.status, 200, check.html.slice(0, 300));
    const streams: string[] = JSON.parse(check.html).streams;
    assert.equal(streams.length, 2, check.html);
    assert.ok(streams.includes("/dcim/devices/create/stream"), check.html);
    assert.ok(streams.every((s) => s.endsWith("/stream")), check.html);
    assert.deepEqual(asked, [], "a pre-check without endpoints asks the backend nothing");

    // Only the values that are not endpoint ids are named (1 is one; 0, -2, 1.5 and abc are not).
    const bad = await c.send(
      query([
        ["sync_types", "all"],
        ...["1", "0", "-2", "1.5", "abc"].map((v) => [
          "endpoint_ids",
          v,
        ]),
      ]),
      asJson,
    );
    assert.equal(bad.status, 400, bad.html.slice(0, 300));
    assert.equal(
      JSON.parse(bad.html).detail,
      'endpoint_ids must be hypervisor endpoint ids (positive integers), not ["0","-2","1.5","abc"].',
    );
    assert.deepEqual(asked, [], "nothing was asked of the backend");
  } finally {
    h.close();
  }
});

Deno.test("console live: a run without a reachable backend ends at once with the reason, not ok", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    await c.signIn(ROOT);
    const csrf = csrfOf((await c.get("/ui/sync")).html);
    const run = await c.send(`/ui/live/stages?sync_types=all&_csrf=${csrf}`, {
      headers: { accept: "text/event-stream" },
    });
    assert.equal(run.status, 200, run.html.slice(0, 300));
    const reason = "No backend endpoint is configured; add one on the Endpoints page.";
    assert.deepEqual(framesOf(run.html), [
      ["complete", { ok: false, message: reason, errors: [{ detail: reason }] }],
    ]);
  } finally {
    h.close();
  }
});
