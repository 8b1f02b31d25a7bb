/**
 * The console's live run reports what the backend answered (routes/ui/live.ts): a stage whose
 * stream completes with `ok: false` makes the whole run end with errors, an unreadable list of
 * backend copies is a 502 before anything runs, and many endpoints without a copy are named
 * (the first five by name, the rest by id). The backend's list and stage stream are answered
 * here; everything else reaches the app in process.
 */
import assert from "node:assert/strict";
import { consoleHarness, ROOT } from "./_console.ts";
import { noopMetrics } from "../../../infra/metrics.ts";

const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1];

async function world() {
  let app: Awaited<ReturnType<typeof consoleHarness>>["app"] | null = null;
  /** What the backend's list of hypervisor endpoint copies answers (null: the app's own). */
  let copies: Response | null = null;
  const backend: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    const path = new URL(request.url).pathname;
    if (request.method === "GET" && path === "/hypervisor/endpoints" && copies) {
      return Promise.resolve(copies.clone());
    }
    if (path === "/dcim/devices/create/stream") {
      const frames = [
        'event: step\ndata: {"step":"devices","status":"started"}\n\n',
        'event: complete\ndata: {"ok":false,"errors":[{"step":"devices","detail":"HTTP 500"}]}\n\n',
      ].join("");
      return Promise.resolve(
        new Response(frames, { headers: { "content-type": "text/event-stream" } }),
      );
    }
    return Promise.resolve(app!.fetch(request, { remoteAddr: { hostname: "127.0.0.1" } }));
  };
  const h = await consoleHarness({}, backend);
  app = h.app;
  const here = { domain: "console.test", port: 80, use_https: false };
  await h.api("PATCH", "/api/plugins/service/settings/", {
    encryption_key: "live-answers-encryption-key-0123456789",
  });
  const made = await h.api("POST", "/api/plugins/service/endpoints/backend/", {
    name: "self",
    ...here,
  });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const client = h.client();
  await client.signIn(ROOT);
  const csrf = csrfOf((await client.get("/ui/sync")).html);
  const url = (types: string, ids: number[] = []) =>
    `/ui/live/stages?${new URLSearchParams([
      ["sync_types", types],
      ["_csrf", csrf],
      ...ids.map((id) => ["endpoint_ids", String(id)]),
    ])}`;
  return {
    h,
    client,
    url,
    here,
    answerCopies: (r: Response | null) => void (copies = r),
  };
}

Deno.test("console live: a stage that completes with ok:false ends the run with its errors", async () => {
  const w = await world();
  try {
    const run = await w.client.send(w.url("devices"), {
      headers: { accept: "text/event-stream" },
    });
    assert.equal(run.status, 200, run.html.slice(0, 300));
    const completes = [...run.html.matchAll(/event: complete\ndata: (.*)\n/g)].map((m) =>
      JSON.parse(m[1])
    );
    assert.deepEqual(completes, [{
      ok: false,
      message: "Sync finished with errors.",
      errors: [{ step: "devices", detail: "HTTP 500" }],
    }]);
  } finally {
    w.h.close();
  }
});

Deno.test("console live: chosen endpoints: an unreadable copy list is a 502; many without a copy are named, five by name", async () => {
  const w = await world();
  try {
    const ids: number[] = [];
    for (let i = 1; i <= 6; i++) {
      const made = await w.h.api("POST", "/api/plugins/service/endpoints/hypervisor/", {
        name: `lab-${i}`,
        ...w.here,
        username: w.h.deps.config.hypervisor.mockUser,
        password: w.h.deps.config.hypervisor.mockPassword,
      });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      ids.push(made.body.id);
    }
    const asJson = { headers: { accept: "application/json" } };

    w.answerCopies(Response.json({ detail: "not a list" }));
    const unreadable = await w.client.send(w.url("all", ids), asJson);
    assert.equal(unreadable.status, 502, unreadable.html.slice(0, 300));
    assert.match(
      JSON.parse(unreadable.html).detail,
      /^The backend's hypervisor endpoint copies could not be read, so the run cannot be scoped/,
    );

    w.answerCopies(Response.json([]));
    const missing = await w.client.send(w.url("all", ids), asJson);
    assert.equal(missing.status, 409, missing.html.slice(0, 300));
    const body = JSON.parse(missing.html);
    assert.deepEqual(body.endpoint_ids, ids);
    const named = ids.slice(0, 5).map((id, i) => `"lab-${i + 1}" (id ${id})`);
    assert.ok(
      body.detail.startsWith(
        `The chosen hypervisor endpoints have no backend copy: ${named.join(", ")}, id ${ids[5]}. `,
      ),
      body.detail,
    );
  } finally {
    w.h.close();
  }
});

Deno.test("console live: a page closed during a stage starts no further stage", async () => {
  let app: Awaited<ReturnType<typeof consoleHarness>>["app"] | null = null;
  let releaseFirst!: () => void;
  const firstHeld = new Promise<void>((resolve) => releaseFirst = resolve);
  let abortReached!: () => void;
  const abortSeen = new Promise<void>((resolve) => abortReached = resolve);
  const asked: string[] = [];
  const encoder = new TextEncoder();
  const backend: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    const path = new URL(request.url).pathname;
    if (path.endsWith("/stream")) {
      asked.push(path);
      init?.signal?.addEventListener("abort", () => abortReached(), { once: true });
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(encoder.encode('event: step\ndata: {"step":"devices"}\n\n'));
          await firstHeld;
          controller.enqueue(encoder.encode('event: complete\ndata: {"ok":true}\n\n'));
          controller.close();
        },
      });
      return Promise.resolve(
        new Response(body, { headers: { "content-type": "text/event-stream" } }),
      );
    }
    return Promise.resolve(app!.fetch(request, { remoteAddr: { hostname: "127.0.0.1" } }));
  };
  // The live stream's metric closes once when the page goes and once more when its run returns:
  // the second call says the run is over.
  let runEnded!: () => void;
  const ended = new Promise<void>((resolve) => runEnded = resolve);
  const metrics = {
    ...noopMetrics,
    streamOpened: () => {
      let calls = 0;
      return () => {
        if (++calls === 2) runEnded();
      };
    },
  };
  const h = await consoleHarness({}, backend, { metrics });
  app = h.app;
  try {
    const made = await h.api("POST", "/api/plugins/service/endpoints/backend/", {
      name: "self",
      domain: "console.test",
      port: 80,
      use_https: false,
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const client = h.client();
    await client.signIn(ROOT);
    const csrf = csrfOf((await client.get("/ui/sync")).html);
    const query = new URLSearchParams([
      ["sync_types", "devices"],
      ["sync_types", "storage"],
      ["_csrf", csrf],
    ]);
    const res = await h.app.request(`http://console.test/ui/live/stages?${query}`, {
      headers: { cookie: client.cookieHeader, accept: "text/event-stream" },
    });
    assert.equal(res.status, 200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    assert.match((await reader.read()).value ?? "", /"step":"devices"/);
    await reader.cancel();
    await abortSeen;
    // The first stage's stream ends after the page went: the run stops there.
    releaseFirst();
    await ended;
    assert.deepEqual(asked, ["/dcim/devices/create/stream"]);
  } finally {
    h.close();
  }
});
