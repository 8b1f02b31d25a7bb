/**
 * Secrets in error text (SECURITY.md "Secrets in error text"): a hypervisor that echoes the
 * login form it was sent returns the password form-encoded (`+` for space, `%40` for `@`), and
 * others echo JSON-escaped or base64 copies. None of those spellings may reach what a
 * `core.view_job` reader or the backend's stream caller sees.
 */
import assert from "node:assert/strict";
import { jobsWorld, P, statusOf } from "../e2e/_jobs_world.ts";

const PASSWORD = "S3cret Pass@word+1";
/** Spellings written out by hand (not computed with the code under test). */
const LEAKS = [
  "S3cret Pass@word+1",
  "S3cret+Pass%40word%2B1", // form-encoded, as the login body goes out
  "S3cret%20Pass%40word%2B1", // URL-encoded
  "S3cret+Pass%40word%2b1", // lower-case hex
  "UzNjcmV0IFBhc3NAd29yZCsx", // base64 of the password alone
  "VMzY3JldCBQYXNzQHdvcmQrM", // base64 of "root@pam:" + password (as in Basic auth)
  "Pass%40word",
  "Pass@word",
];

/** Answers the hypervisor login with everything it was sent, in three encodings. */
function echoingLogin(request: Request, next: () => Promise<Response>): Promise<Response> {
  if (!new URL(request.url).pathname.endsWith("/access/ticket")) return next();
  return request.text().then((form) => {
    const params = new URLSearchParams(form);
    const basic = btoa(`${params.get("username")}:${params.get("password")}`);
    return Response.json({
      data: null,
      message: `authentication failure (${form}; json ${JSON.stringify(form)}; basic ${basic}; ` +
        `raw ${params.get("password")})`,
    }, { status: 401 });
  });
}

function assertNoLeak(what: string, text: string) {
  for (const leak of LEAKS) {
    assert.ok(
      !text.includes(leak),
      `${what} carries the password as ${leak}: ${text.slice(0, 800)}`,
    );
  }
}

Deno.test("secrets: a hypervisor echoing the form-encoded password leaks it into no job, log or stream frame", async () => {
  const w = await jobsWorld({ HYPERVISOR_MOCK_PASSWORD: PASSWORD }, {}, echoingLogin);
  try {
    const { backend } = await w.wire();
    // A reader who may only view jobs.
    const viewer = await w.call("POST", "/api/users/tokens/", {
      version: 1,
      permissions: ["core.view_job"],
      description: "job watcher",
    });
    assert.equal(viewer.status, 201);
    const auth = `Token ${viewer.body.token}`;

    const started = await w.call("POST", P + "sync/", { sync_types: ["all"] });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const frames = await w.sse(`${P}jobs/${started.body.job_id}/stream`, undefined, auth);
    const job = (await w.call("GET", `/api/core/jobs/${started.body.job_id}/`, undefined, auth))
      .body;
    assert.ok(["errored", "failed"].includes(statusOf(job)), statusOf(job));
    const jobText = JSON.stringify(job);
    assertNoLeak("the job", jobText);
    // The echo did reach the job (so this test can fail): the 401 and the masked form are there.
    assert.match(jobText, /HTTP 401/);
    assert.match(jobText, /password=(\*\*\*|\[redacted\])/);
    assertNoLeak("the job stream", JSON.stringify(frames));

    // The backend's own stream, read with the plugin's key, and its JSON answer.
    const key = backend.token as string;
    assert.ok(key, "the superuser sees the backend key");
    const stream = await fetch(`${w.base}/full-update/stream`, {
      headers: { "x-service-api-key": key },
    });
    const streamText = await stream.text();
    assert.match(streamText, /event: error/);
    assert.match(streamText, /HTTP 401/);
    assertNoLeak("the backend stream", streamText);
    const json = await fetch(`${w.base}/virtualization/virtual-machines/create`, {
      headers: { "x-service-api-key": key },
    });
    const jsonText = await json.text();
    assert.equal(json.status, 502, jsonText);
    assert.match(jsonText, /HTTP 401/);
    assertNoLeak("the backend answer", jsonText);
  } finally {
    await w.close();
  }
});

Deno.test("secrets: a hypervisor echoing the API token header leaks the token value into no stream frame or read answer", async () => {
  const TOKEN_VALUE = "7f3c9a10-Tok+en/Val=ue 42";
  const w = await jobsWorld({}, {}, (request, next) => {
    const auth = request.headers.get("authorization") ?? "";
    if (!auth.startsWith("PVEAPIToken")) return next();
    return Promise.resolve(
      Response.json({
        data: null,
        message: `bad token ${auth} (${encodeURIComponent(auth)}; ${btoa(auth)})`,
      }, { status: 401 }),
    );
  });
  try {
    const { backend } = await w.wire();
    const hv = await w.call("POST", P + "endpoints/hypervisor/", {
      name: "pve-token",
      domain: "127.0.0.1",
      port: w.port,
      use_https: false,
      username: "root@pam",
      token_name: "sync",
      token_value: TOKEN_VALUE,
    });
    assert.equal(hv.status, 201, JSON.stringify(hv.body));
    const key = { "x-service-api-key": backend.token };
    const stream = await fetch(`${w.base}/virtualization/virtual-machines/create/stream`, {
      headers: key,
    });
    // A direct read through the client (no stream in between): its excerpt alone must hold.
    const copies = await (await fetch(`${w.base}/hypervisor/endpoints`, { headers: key })).json();
    const copy = copies.find((c: { name: string }) => c.name.startsWith("pve-token"));
    assert.ok(copy, JSON.stringify(copies));
    const read = await fetch(`${w.base}/hypervisor/version?endpoint_id=${copy.id}`, {
      headers: key,
    });
    assert.equal(read.status, 502);
    const text = (await stream.text()) + (await read.text());
    assert.match(text, /HTTP 401/);
    for (
      const leak of [
        TOKEN_VALUE,
        encodeURIComponent(TOKEN_VALUE),
        "Tok+en",
        "Tok%2Ben",
        "Val=ue",
        btoa("7f3c9a10-Tok+en"),
      ]
    ) {
      assert.ok(!text.includes(leak), `the stream carries the token value as ${leak}`);
    }
    assert.ok(!text.includes(JSON.stringify(TOKEN_VALUE).slice(1, -1)));
  } finally {
    await w.close();
  }
});
