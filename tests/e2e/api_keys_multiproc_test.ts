/**
 * Two real `main.ts` processes on one KV file (README "Several processes"): a backend key retired
 * through one process is refused by the other, which had it cached. Deno KV's watches do not see
 * another process's writes on a local file, so main.ts has the key store poll the file
 * (SECURITY.md, "Retiring a backend key").
 */
import assert from "node:assert/strict";
import { baseEnv, type Child, startMain } from "../_process.ts";

const KEY = "multiprockeys0123456789abcdef0123456789";

function call(child: Child, path: string, key?: string, method = "GET", body?: unknown) {
  const headers: Record<string, string> = {};
  if (key) headers["X-Service-API-Key"] = key;
  if (body !== undefined) headers["content-type"] = "application/json";
  return fetch(child.base + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function status(res: Promise<Response>): Promise<number> {
  const answer = await res;
  await answer.body?.cancel();
  return answer.status;
}

Deno.test("keys: a key retired through one process is refused by another on the same KV file", async () => {
  const dir = await Deno.makeTempDir();
  const env = { ...baseEnv(dir), SERVICE_SURFACES: "backend" };
  const children: Child[] = [];
  try {
    children.push(await startMain(env), await startMain(env));
    const [a, b] = children;
    assert.equal(
      await status(call(a, "/auth/register-key", undefined, "POST", { api_key: KEY })),
      201,
    );
    const second = await (await call(a, "/auth/keys", KEY, "POST")).json();
    // b verifies the second key and keeps it in its cache (30 s).
    assert.equal(await status(call(b, "/auth/keys", second.raw_key)), 200);
    assert.equal(await status(call(a, `/auth/keys/${second.id}/deactivate`, KEY, "POST")), 200);
    // b hears of it by its poll of the file (every 50 ms): within 5 s, far below the cache's 30.
    const started = Date.now();
    let seen = 200;
    while (seen === 200 && Date.now() - started < 5_000) {
      seen = await status(call(b, "/auth/keys", second.raw_key));
    }
    assert.equal(seen, 401, `b still accepted the retired key after ${Date.now() - started} ms`);
    assert.equal(await status(call(b, "/auth/keys", second.raw_key)), 401);
    assert.equal(await status(call(b, "/auth/keys", KEY)), 200);
  } finally {
    for (const child of children) await child.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
