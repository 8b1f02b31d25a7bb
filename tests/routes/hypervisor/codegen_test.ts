import assert from "node:assert/strict";
import { jsonRequest } from "../../_helpers.ts";
import { refusingListener } from "../../_net.ts";
import { countOperations, peer, SHARED_DIR, tooling } from "./_tooling.ts";
import { keys } from "../../../storage/kv/keys.ts";
import { NEEDS_SCHEMAS } from "../../_schemas.ts";

const HOUR_S = 3600;

async function drain(res: Response): Promise<Response> {
  await res.body?.cancel();
  return res;
}

Deno.test(
  "codegen: openapi and models allow 5 per hour per client, then 429 with Retry-After",
  NEEDS_SCHEMAS,
  async () => {
    const t = await tooling();
    try {
      for (
        const [path, route] of [["/pve/codegen/openapi", "openapi"], [
          "/pve/codegen/models",
          "models",
        ]]
      ) {
        for (let i = 1; i <= 5; i++) {
          const res = await t.app.request(path, {}, peer("198.51.100.7"));
          assert.equal(res.status, 200, `${route} request ${i}`);
          assert.equal(res.headers.get("ratelimit-remaining"), String(5 - i));
          await res.body?.cancel();
        }
        t.clock.now += 60_000;
        const over = await t.app.request(path, {}, peer("198.51.100.7"));
        assert.equal(over.status, 429);
        assert.equal(over.headers.get("retry-after"), String(HOUR_S - 60));
        const body = await over.json();
        assert.match(body.detail, /Rate limit exceeded/);
        assert.deepEqual(Object.keys(body), ["detail"]);
        // Another client is counted on its own.
        assert.equal(
          (await drain(await t.app.request(path, {}, peer("198.51.100.8")))).status,
          200,
        );
      }
      // The two routes count separately: models still had its own 5 above. The window closes after
      // an hour from the first request.
      t.clock.now += (HOUR_S - 60) * 1000;
      const open = await t.app.request("/pve/codegen/openapi", {}, peer("198.51.100.7"));
      assert.equal(open.status, 200);
      await open.body?.cancel();
    } finally {
      t.deps.kv.close();
    }
  },
);

Deno.test(
  "codegen: limits persist in KV across a new app (restart or another isolate)",
  NEEDS_SCHEMAS,
  async () => {
    const t = await tooling();
    try {
      for (let i = 0; i < 5; i++) {
        await drain(await t.app.request("/pve/codegen/models", {}, peer("203.0.113.5")));
      }
      const restarted = t.again();
      const res = await restarted.request("/pve/codegen/models", {}, peer("203.0.113.5"));
      assert.equal(res.status, 429);
      assert.ok(Number(res.headers.get("retry-after")) > 0);
      await res.body?.cancel();
      const entry = await t.deps.kv.get(keys.hypervisorRateLimit("models", "203.0.113.5"));
      assert.equal((entry.value as { count: number }).count, 5);
    } finally {
      t.deps.kv.close();
    }
  },
);

Deno.test(
  "codegen: forwarded addresses count only behind a trusted proxy",
  NEEDS_SCHEMAS,
  async () => {
    const t = await tooling({ SERVICE_TRUSTED_PROXIES: "10.0.0.1" });
    try {
      const via = (proxy: string, client: string) =>
        t.app.request(
          "/pve/codegen/openapi",
          { headers: { "x-forwarded-for": client } },
          peer(proxy),
        );
      for (let i = 0; i < 5; i++) {
        assert.equal((await drain(await via("10.0.0.1", "192.0.2.1"))).status, 200);
      }
      assert.equal((await drain(await via("10.0.0.1", "192.0.2.1"))).status, 429);
      // A different client behind the same proxy has its own budget.
      assert.equal((await drain(await via("10.0.0.1", "192.0.2.2"))).status, 200);
      // An untrusted peer cannot escape its limit by inventing X-Forwarded-For.
      for (let i = 0; i < 5; i++) {
        assert.equal((await drain(await via("192.0.2.50", `198.18.0.${i}`))).status, 200);
      }
      assert.equal((await drain(await via("192.0.2.50", "198.18.0.99"))).status, 429);
    } finally {
      t.deps.kv.close();
    }
  },
);

Deno.test(
  "codegen: models are TypeScript for every operation of the requested version",
  NEEDS_SCHEMAS,
  async () => {
    const t = await tooling();
    try {
      const res = await t.app.request("/pve/codegen/models");
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
      const text = await res.text();
      assert.match(text, /export interface Operations \{/);
      assert.equal((text.match(/^ {2}"(GET|POST|PUT|DELETE) \//gm) ?? []).length, 675);
      const ts = await t.app.request("/pve/codegen/models?version=9.1.11", {
        headers: { accept: "application/typescript" },
      });
      assert.match(ts.headers.get("content-type") ?? "", /^application\/typescript/);
      assert.equal(((await ts.text()).match(/^ {2}"(GET|POST|PUT|DELETE) \//gm) ?? []).length, 649);
      const unknown = await t.app.request("/pve/codegen/models?version=nope");
      assert.equal(unknown.status, 404);
      await unknown.body?.cancel();
    } finally {
      t.deps.kv.close();
    }
  },
);

Deno.test(
  "codegen: generate refuses sources outside the allow-list without spending the limit",
  NEEDS_SCHEMAS,
  async () => {
    const t = await tooling();
    const outside = await Deno.makeTempFile({ suffix: ".json" });
    await Deno.writeTextFile(outside, "[]");
    const link = `${await Deno.makeTempDir()}/link.json`;
    try {
      const cases: [unknown, RegExp][] = [
        [{ source: "/etc/passwd" }, /\.json or \.js/],
        [{ source: outside }, /allowed directory/],
        [
          { source: `${SHARED_DIR}/../hypervisor-schema/../spec/nothing.json` },
          /not found|allowed/,
        ],
        [{ source: `${SHARED_DIR}/missing.json` }, /not found/],
        [{ source: "ftp://schemas.example.com/apidata.json" }, /http and https/],
        [{ source: "file:///etc/passwd.js" }, /not found|allowed/],
        [{ source: "http://127.0.0.1:8006/apidata.js" }, /loopback/],
        [{ source: "http://localhost/apidata.js" }, /loopback/],
        [{ source: "http://169.254.169.254/latest/meta-data" }, /metadata/],
        [{ source: "http://metadata.google.internal/x.json" }, /metadata/],
        [{ source: "http://10.1.2.3/x.json" }, /private/],
        [{ source: "http://[::1]/x.json" }, /loopback/],
        [{ source: "http://[fd00::1]/x.json" }, /private/],
        [{ source: "http://[::ffff:192.168.0.1]/x.json" }, /private/],
        [{ source: "http://0x7f.1/x.json" }, /loopback/],
        [{ source: "http://user:pw@schemas.example.com/x.json" }, /credentials/],
        [{ source: "http://unresolvable.example.net/x.json" }, /cannot resolve/],
        [{ source: "" }, /required/],
        [{}, /required/],
        [{ source: `${SHARED_DIR}/pve-9.2.json`, extra: 1 }, /unknown field/],
        [{ source: `${SHARED_DIR}/pve-9.2.json`, version: "../x" }, /letters, digits/],
        ["just a string", /expected an object/],
      ];
      Deno.symlinkSync("/etc/hostname", link);
      cases.push([{ source: link }, /allowed directory/]);
      for (const [body, message] of cases) {
        const res = await t.app.request(
          "/pve/codegen/generate",
          jsonRequest("POST", body),
          peer("192.0.2.44"),
        );
        const json = await res.json();
        assert.equal(res.status, 400, `${JSON.stringify(body)} → ${JSON.stringify(json)}`);
        assert.ok(json.detail);
        assert.match(json.errors.map((e: { message: string }) => e.message).join(" "), message);
      }
      const notJson = await t.app.request("/pve/codegen/generate", {
        method: "POST",
        body: "{",
        headers: { "content-type": "application/json" },
      }, peer("192.0.2.44"));
      assert.equal(notJson.status, 400);
      await notJson.body?.cancel();
      // Built-in labels are taken.
      const reserved = await t.app.request(
        "/pve/codegen/generate",
        jsonRequest("POST", { source: `${SHARED_DIR}/pve-9.2.json`, version: "9.1.11" }),
        peer("192.0.2.44"),
      );
      assert.equal(reserved.status, 409);
      await reserved.body?.cancel();
      // None of the refusals spent the hourly budget.
      const ok = await t.app.request(
        "/pve/codegen/generate",
        jsonRequest("POST", { source: `${SHARED_DIR}/pve-9.1.11.json`, version: "lab-1" }),
        peer("192.0.2.44"),
      );
      assert.equal(ok.status, 201, await ok.clone().text());
      await ok.body?.cancel();
    } finally {
      t.deps.kv.close();
      await Deno.remove(outside);
      await Deno.remove(link);
    }
  },
);

Deno.test(
  "codegen: generate stores a new version, listed by /pve/versions and usable by codegen",
  NEEDS_SCHEMAS,
  async () => {
    const t = await tooling();
    try {
      const before = await (await t.app.request("/pve/versions")).json();
      assert.equal(before.latest, "9.2");
      assert.equal(before.active, "9.2");
      assert.deepEqual(
        before.versions.map((
          v: { version: string; active: boolean; latest: boolean; kind: string },
        ) => [
          v.version,
          v.kind,
          v.active,
          v.latest,
        ]),
        [["9.2", "builtin", true, true], ["9.1.11", "builtin", false, false]],
      );
      assert.equal(before.versions[0].operations, 675);
      assert.equal(before.versions[1].available, true);

      const res = await t.app.request(
        "/pve/codegen/generate",
        jsonRequest("POST", { source: `${SHARED_DIR}/pve-9.1.11.json`, version: "site-9.1" }),
        peer("192.0.2.10"),
      );
      assert.equal(res.status, 201);
      const stored = await res.json();
      assert.equal(stored.version, "site-9.1");
      assert.equal(stored.kind, "generated");
      assert.equal(stored.operations, 649);
      assert.equal(stored.paths, 431);
      assert.match(stored.sha256, /^[0-9a-f]{64}$/);
      assert.ok(stored.chunks >= 2, "a 4 MB schema does not fit one KV value even compressed");
      assert.ok(stored.stored_bytes < stored.bytes);
      assert.equal(stored.openapi, "/pve/codegen/openapi?version=site-9.1");
      assert.equal(stored.blob, undefined);

      // Every chunk is under KV's 64 KiB value limit.
      const manifest = await t.deps.kv.get<{ blob: string }>(
        keys.hypervisorSchemaVersion("site-9.1"),
      );
      for await (
        const chunk of t.deps.kv.list<Uint8Array>({
          prefix: keys.hypervisorSchemaChunkPrefix(manifest.value!.blob),
        })
      ) {
        assert.ok(chunk.value.length <= 64 * 1024);
      }

      // Second generate from the same client inside the hour: 429 with Retry-After.
      const again = await t.app.request(
        "/pve/codegen/generate",
        jsonRequest("POST", { source: `${SHARED_DIR}/pve-9.2.json`, version: "site-9.2" }),
        peer("192.0.2.10"),
      );
      assert.equal(again.status, 429);
      assert.equal(again.headers.get("retry-after"), String(HOUR_S));
      assert.match((await again.json()).detail, /1 per hour/);
      // Another client re-using the label: 409.
      const dup = await t.app.request(
        "/pve/codegen/generate",
        jsonRequest("POST", { source: `${SHARED_DIR}/pve-9.2.json`, version: "site-9.1" }),
        peer("192.0.2.11"),
      );
      assert.equal(dup.status, 409);
      await dup.body?.cancel();

      // Listed, and usable by docs and codegen, also from a fresh app over the same KV.
      const fresh = t.again();
      const after = await (await fresh.request("/pve/versions")).json();
      const entry = after.versions.find((v: { version: string }) => v.version === "site-9.1");
      assert.equal(entry.kind, "generated");
      assert.equal(entry.active, false);
      assert.equal(entry.operations, 649);
      assert.equal(entry.source, Deno.realPathSync(`${SHARED_DIR}/pve-9.1.11.json`));
      const doc = await (await fresh.request("/pve/openapi.json?version=site-9.1")).json();
      assert.equal(doc.info.version, "site-9.1");
      assert.equal(countOperations(doc), 649);
      const models = await fresh.request(
        "/pve/codegen/models?version=site-9.1",
        {},
        peer("192.0.2.12"),
      );
      assert.match(await models.text(), /schema version site-9\.1\./);
    } finally {
      t.deps.kv.close();
    }
  },
);

Deno.test(
  "codegen: generate from a URL (JS form), with redirects, errors and non-schemas refused",
  NEEDS_SCHEMAS,
  async () => {
    const tree = await Deno.readTextFile(`${SHARED_DIR}/pve-9.1.11.json`);
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
      const path = new URL(req.url).pathname;
      if (path === "/apidata.js") {
        return new Response(`// API viewer\nconst apiSchema = ${tree};\nlet x = 1;\n`, {
          headers: { "content-type": "application/javascript" },
        });
      }
      if (path === "/moved.js") return Response.redirect("http://169.254.169.254/", 302);
      if (path === "/html.json") return new Response("<html>nope</html>");
      return new Response("not found", { status: 404 });
    });
    const base = `http://127.0.0.1:${server.addr.port}`;
    const strict = await tooling();
    const open = await tooling({ SERVICE_ALLOW_LOOPBACK_TARGETS: "true" });
    try {
      const refused = await strict.app.request(
        "/pve/codegen/generate",
        jsonRequest("POST", { source: `${base}/apidata.js` }),
        peer("192.0.2.1"),
      );
      assert.equal(refused.status, 400);
      assert.match((await refused.json()).detail, /loopback/);

      let ip = 0;
      const generate = (source: string, version?: string) =>
        open.app.request(
          "/pve/codegen/generate",
          jsonRequest("POST", version ? { source, version } : { source }),
          peer(`192.0.2.${++ip}`),
        );
      const ok = await generate(`${base}/apidata.js`);
      assert.equal(ok.status, 201);
      const body = await ok.json();
      assert.equal(body.operations, 649);
      assert.match(body.version, /^gen-[0-9a-f]{12}$/);
      assert.equal(body.source, `${base}/apidata.js`);
      // The same schema again without a label: already stored.
      const same = await generate(`${base}/apidata.js`);
      assert.equal(same.status, 409);
      assert.match((await same.json()).detail, /already stored/);

      const moved = await generate(`${base}/moved.js`, "m1");
      assert.equal(moved.status, 502);
      assert.match((await moved.json()).detail, /redirect/);
      const missing = await generate(`${base}/gone.json`, "m2");
      assert.equal(missing.status, 502);
      assert.match((await missing.json()).detail, /HTTP 404/);
      const html = await generate(`${base}/html.json`, "m3");
      assert.equal(html.status, 422);
      await html.body?.cancel();
      const refusing = refusingListener();
      const down = await generate(`http://127.0.0.1:${refusing.port}/apidata.js`, "m4");
      refusing.close();
      assert.equal(down.status, 502);
      await down.body?.cancel();
    } finally {
      strict.deps.kv.close();
      open.deps.kv.close();
      await server.shutdown();
    }
  },
);

Deno.test(
  "codegen: generate is no oracle for files outside the allowed directories",
  NEEDS_SCHEMAS,
  async () => {
    const t = await tooling();
    const existing = await Deno.makeTempFile({ suffix: ".json" });
    try {
      const answers: string[] = [];
      for (const source of [existing, `${existing}.missing.json`, "/etc/nothing-here.js"]) {
        const res = await t.app.request(
          "/pve/codegen/generate",
          jsonRequest("POST", { source }),
          peer("192.0.2.45"),
        );
        assert.equal(res.status, 400);
        const body = await res.json();
        answers.push(body.errors[0].message.replace(source, "<source>"));
      }
      // Same answer whether the file exists or not: nothing outside is even looked at.
      assert.equal(new Set(answers).size, 1, answers.join(" | "));
      assert.match(answers[0], /allowed directory/);
      // The request body itself is bounded.
      const huge = await t.app.request(
        "/pve/codegen/generate",
        jsonRequest("POST", { source: "x".repeat(200_000) }),
        peer("192.0.2.45"),
      );
      assert.equal(huge.status, 413);
      assert.match((await huge.json()).detail, /too large/);
    } finally {
      t.deps.kv.close();
      await Deno.remove(existing);
    }
  },
);
