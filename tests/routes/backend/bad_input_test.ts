import assert from "node:assert/strict";
import { KEY, registered } from "./_setup.ts";

const valid = { name: "pve", ip: "10.0.0.5", password: "pw" };

async function expectClean(res: Response, status: number) {
  assert.equal(res.status, status);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  const body = await res.json();
  assert.ok("detail" in body, JSON.stringify(body));
  assert.ok(!JSON.stringify(body).includes("    at "), "no stack trace");
  return body;
}

Deno.test("bad input: every malformed request is a 4xx JSON error and writes nothing", async () => {
  await using h = await registered();
  const post = (
    body: BodyInit | null,
    headers: Record<string, string> = { "content-type": "application/json" },
  ) => h.call("/hypervisor/endpoints", { method: "POST", key: KEY, body, headers });

  await expectClean(await post("{not json"), 400);
  // An empty body is no body: the missing fields are named.
  const empty = await expectClean(await post(""), 422);
  assert.deepEqual(empty.detail.map((d: { loc: string[] }) => d.loc[1]).sort(), ["ip", "name"]);
  await expectClean(await post("[]"), 422);
  await expectClean(await post("null"), 422);
  await expectClean(await post(JSON.stringify(valid), { "content-type": "text/plain" }), 415);
  await expectClean(
    await post("name=pve", { "content-type": "application/x-www-form-urlencoded" }),
    415,
  );

  const extra = await expectClean(await post(JSON.stringify({ ...valid, surprise: 1 })), 422);
  assert.ok(JSON.stringify(extra.detail).includes("surprise"));
  const missing = await expectClean(
    await post(JSON.stringify({ ip: "10.0.0.5", password: "pw" })),
    422,
  );
  assert.deepEqual(missing.detail[0].loc, ["body", "name"]);
  await expectClean(await post(JSON.stringify({ ...valid, port: "8006" })), 422);
  await expectClean(await post(JSON.stringify({ ...valid, port: 1e308 })), 422);
  await expectClean(await post(JSON.stringify({ ...valid, port: 99999999999999999999999 })), 422);
  await expectClean(await post(JSON.stringify({ ...valid, port: 8006.5 })), 422);
  await expectClean(await post(JSON.stringify({ ...valid, timeout: -1 })), 422);
  await expectClean(await post(JSON.stringify({ ...valid, allow_writes: "yes" })), 422);
  await expectClean(await post(JSON.stringify({ ...valid, ip: "https://10.0.0.5/" })), 422);
  await expectClean(await post(JSON.stringify({ ...valid, name: "" })), 422);
  await expectClean(await post(JSON.stringify({ ...valid, name: "x".repeat(5000) })), 422);

  const huge = JSON.stringify({ ...valid, name: "x".repeat(1024 * 1024 + 10) });
  const tooLarge = await expectClean(await post(huge), 413);
  assert.match(tooLarge.detail, /1 MiB/);

  await expectClean(
    await h.call("/auth/register-key", {
      method: "POST",
      body: "{",
      headers: { "content-type": "application/json" },
    }),
    400,
  );
  await expectClean(
    await h.call("/auth/keys", { method: "POST", key: KEY, json: { label: 5 } }),
    422,
  );
  await expectClean(
    await h.call("/inventory/endpoint", {
      method: "POST",
      key: KEY,
      json: { token_version: "v3" },
    }),
    422,
  );

  assert.deepEqual(await (await h.call("/hypervisor/endpoints", { key: KEY })).json(), []);
  assert.deepEqual(await (await h.call("/inventory/endpoint", { key: KEY })).json(), []);
  assert.equal((await (await h.call("/auth/keys", { key: KEY })).json()).keys.length, 1);
});

Deno.test("bad input: POST /auth/keys takes no body, whatever Content-Type comes with the nothing", async () => {
  await using h = await registered();
  for (const type of ["application/json", "text/plain", undefined]) {
    const res = await h.call("/auth/keys", {
      method: "POST",
      key: KEY,
      headers: type ? { "content-type": type } : {},
    });
    assert.equal(res.status, 201, String(type));
    await res.body?.cancel();
  }
  const wrongType = await h.call("/auth/keys", {
    method: "POST",
    key: KEY,
    body: "label=x",
    headers: { "content-type": "application/x-www-form-urlencoded" },
  });
  await expectClean(wrongType, 415);
});

Deno.test("bad input: a chunked body over 1 MiB is refused with 413 too", async () => {
  await using h = await registered();
  const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent++ >= 20) return controller.close();
      controller.enqueue(chunk);
    },
  });
  const res = await h.call("/hypervisor/endpoints", {
    method: "POST",
    key: KEY,
    body,
    headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
  });
  await expectClean(res, 413);
});
