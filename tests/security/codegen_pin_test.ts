/**
 * Codegen schema URLs: the connection goes to the address that passed the check, never to a
 * second lookup an attacker's DNS could answer differently (SECURITY.md "Outbound requests").
 */
import assert from "node:assert/strict";
import { jsonRequest } from "../_helpers.ts";
import { peer, SHARED_DIR, tooling } from "../routes/hypervisor/_tooling.ts";
import { NEEDS_SCHEMAS } from "../_schemas.ts";

function schemaServer() {
  const hits: string[] = [];
  const text = Deno.readTextFileSync(`${SHARED_DIR}/pve-9.1.11.json`);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    hits.push(new URL(req.url).pathname);
    return new Response(text, { headers: { "content-type": "application/json" } });
  });
  return { port: server.addr.port, hits, close: () => server.shutdown() };
}

Deno.test(
  "codegen: a name that rebinds to loopback after the check is refused, nothing is fetched",
  NEEDS_SCHEMAS,
  async () => {
    const server = schemaServer();
    let lookups = 0;
    // First answer public (passes the check), every later answer loopback (the rebinding).
    const rebinding = (host: string) =>
      Promise.resolve(
        host === "rebind.example.com" ? (lookups++ ? ["127.0.0.1"] : ["93.184.216.34"]) : [],
      );
    const t = await tooling({}, { resolve: rebinding });
    try {
      const res = await t.app.request(
        "/pve/codegen/generate",
        jsonRequest("POST", { source: `http://rebind.example.com:${server.port}/pve.json` }),
        peer("192.0.2.40"),
      );
      assert.equal(res.status, 502);
      assert.match((await res.json()).detail, /refused: a loopback address/);
      assert.deepEqual(server.hits, []);
    } finally {
      t.deps.kv.close();
      await server.close();
    }
  },
);

Deno.test(
  "codegen: the fetch connects to the checked address (the resolver's answer), not a new lookup",
  NEEDS_SCHEMAS,
  async () => {
    const server = schemaServer();
    const t = await tooling({ SERVICE_ALLOW_LOOPBACK_TARGETS: "true" }, {
      resolve: (host) => Promise.resolve(host === "schema.test" ? ["127.0.0.1"] : []),
    });
    try {
      const res = await t.app.request(
        "/pve/codegen/generate",
        jsonRequest("POST", {
          source: `http://schema.test:${server.port}/pve.json`,
          version: "pin1",
        }),
        peer("192.0.2.41"),
      );
      const body = await res.json();
      assert.equal(res.status, 201, JSON.stringify(body));
      assert.equal(body.operations, 649);
      assert.deepEqual(server.hits, ["/pve.json"]);
    } finally {
      t.deps.kv.close();
      await server.close();
    }
  },
);
