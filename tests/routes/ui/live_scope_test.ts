/**
 * The sync page's live run is scoped to the chosen endpoints through their backend copies. A
 * chosen endpoint without a copy (never pushed, or its push failed) is a 409 naming it before
 * anything runs, never a run of every endpoint (docs/console.md, "Live parts").
 */
import assert from "node:assert/strict";
import { type Client, consoleHarness, ORIGIN, ROOT } from "./_console.ts";

const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1];

Deno.test("console live: a chosen endpoint without a backend copy is a 409 naming it, and nothing runs; one with a copy runs on it alone", async () => {
  let app: Awaited<ReturnType<typeof consoleHarness>>["app"] | null = null;
  /** Every stage stream the console opened at the backend, with its query. */
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
    const here = { domain: "console.test", port: 80, use_https: false };
    const must = async (path: string, body: unknown) => {
      const r = await h.api("POST", `/api/plugins/service/${path}`, body);
      assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
      return r.body;
    };
    await h.api("PATCH", "/api/plugins/service/settings/", {
      encryption_key: "live-scope-encryption-key-0123456789",
    });
    const backend = await must("endpoints/backend/", { name: "self", ...here });
    await must("endpoints/inventory/", { name: "self", ...here, token_version: "v1", token: 1 });
    const hypervisor = {
      ...here,
      username: h.deps.config.hypervisor.mockUser,
      password: h.deps.config.hypervisor.mockPassword,
    };
    // Both are pushed on save; lab-b's copy is then removed at the backend (as a failed push
    // or a backend reset leaves it).
    const lab = await must("endpoints/hypervisor/", { name: "lab", ...hypervisor });
    const labB = await must("endpoints/hypervisor/", { name: "lab-b", ...hypervisor });
    const key = { "x-service-api-key": backend.token };
    const copies = await (await h.app.request(`${ORIGIN}/hypervisor/endpoints`, {
      headers: key,
    })).json();
    const copyOf = (id: number) =>
      copies.find((c: { name: string }) => c.name.endsWith(`(inv:${id})`));
    assert.ok(copyOf(lab.id) && copyOf(labB.id), JSON.stringify(copies));
    const removed = await h.app.request(`${ORIGIN}/hypervisor/endpoints/${copyOf(labB.id).id}`, {
      method: "DELETE",
      headers: key,
    });
    assert.equal(removed.status, 204, await removed.text());

    const client: Client = h.client();
    await client.signIn(ROOT);
    const csrf = csrfOf((await client.get("/ui/sync")).html);
    const url = (ids: (number | string)[]) =>
      `/ui/live/stages?${new URLSearchParams([
        ["sync_types", "all"],
        ["_csrf", csrf],
        ...ids.map((id) => ["endpoint_ids", String(id)]),
      ])}`;
    const asJson = { headers: { accept: "application/json" } };
    const asStream = { headers: { accept: "text/event-stream" } };

    // Alone, or beside one that has a copy: refused by name, as the stream and as the check.
    for (const ids of [[labB.id], [lab.id, labB.id]]) {
      for (const init of [asStream, asJson]) {
        const refused = await client.send(url(ids), init);
        assert.equal(refused.status, 409, refused.html.slice(0, 300));
        assert.match(refused.headers.get("content-type") ?? "", /application\/json/);
        const body = JSON.parse(refused.html);
        assert.equal(body.reason, "no_backend_copy");
        assert.deepEqual(body.endpoint_ids, [labB.id]);
        assert.equal(
          body.detail,
          `The chosen hypervisor endpoints have no backend copy: "lab-b" (id ${labB.id}). ` +
            "Push them first (save each endpoint, or start a durable sync job, which pushes " +
            "them), then run again.",
        );
      }
    }
    assert.deepEqual(streams.map(String), [], "no stage stream was opened");

    // Ids that are not endpoint ids are a 400, never an unscoped run.
    const bad = await client.send(url(["abc"]), asStream);
    assert.equal(bad.status, 400, bad.html.slice(0, 300));
    assert.match(JSON.parse(bad.html).detail, /endpoint_ids must be hypervisor endpoint ids.*abc/);
    assert.deepEqual(streams.map(String), []);

    // The check answers what would run, and runs nothing.
    const check = await client.send(url([lab.id]), asJson);
    assert.equal(check.status, 200, check.html.slice(0, 300));
    assert.deepEqual(JSON.parse(check.html).streams, [
      `/full-update/stream?hypervisor_endpoint_ids=${copyOf(lab.id).id}`,
    ]);
    assert.deepEqual(streams.map(String), []);

    // Pushed again (a save pushes), lab-b runs, on its own copy only.
    const saved = await h.api("PATCH", `/api/plugins/service/endpoints/hypervisor/${labB.id}/`, {
      description: "pushed again",
    });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    const again = await (await h.app.request(`${ORIGIN}/hypervisor/endpoints`, {
      headers: key,
    })).json();
    const labBCopy = again.find((c: { name: string }) => c.name.endsWith(`(inv:${labB.id})`));
    assert.ok(labBCopy, JSON.stringify(again));
    const run = await client.send(url([labB.id]), asStream);
    assert.equal(run.status, 200, run.html.slice(0, 300));
    const completes = [...run.html.matchAll(/event: complete\ndata: (.*)\n/g)];
    assert.equal(JSON.parse(completes.at(-1)![1]).ok, true, run.html.slice(-600));
    assert.deepEqual(
      streams.map((s) => `${s.pathname}?${s.searchParams}`),
      [`/full-update/stream?hypervisor_endpoint_ids=${labBCopy.id}`],
    );
  } finally {
    h.close();
  }
});
