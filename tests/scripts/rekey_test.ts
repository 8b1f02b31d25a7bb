import assert from "node:assert/strict";
import { createApp } from "../../app.ts";
import { testDeps } from "../_helpers.ts";
import { rekeyUrl } from "../../scripts/rekey.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const KEY = "r".repeat(40);

Deno.test("rekey task: the URL comes from --url, BRIDGEBOX_URL, else localhost on PORT", () => {
  assert.equal(rekeyUrl([], {}), "http://localhost:8800/credentials/rekey");
  assert.equal(rekeyUrl([], { PORT: "9000" }), "http://localhost:9000/credentials/rekey");
  assert.equal(
    rekeyUrl(["--url", "https://bb.example/base"], { BRIDGEBOX_URL: "http://x" }),
    "https://bb.example/base/credentials/rekey",
  );
  assert.throws(() => rekeyUrl(["--url", "ftp://x"], {}), /not an http/);
});

async function run(args: string[], env: Record<string, string>) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "rekey", ...args],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

Deno.test("rekey task: asks the running server, prints the report, exits 1 on a refusal", async () => {
  const deps = await testDeps({ SERVICE_SURFACES: "backend", SERVICE_ENCRYPTION_KEY: "a key" });
  const app = await createApp(deps);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
  const url = `http://127.0.0.1:${server.addr.port}`;
  try {
    await app.request("/auth/register-key", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ api_key: KEY }),
    });
    const ok = await run(["--url", url], { BRIDGEBOX_API_KEY: KEY });
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /resealed 0, unchanged 0, failed 0/);

    const refused = await run(["--url", url], { BRIDGEBOX_API_KEY: "wrong".repeat(8) });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /answered 401/);

    const usage = await run(["--url", url], {});
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /BRIDGEBOX_API_KEY/);
  } finally {
    await server.shutdown();
    deps.kv.close();
  }
});
