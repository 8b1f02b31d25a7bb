/** The host-agent URL rules, including what a host name resolves to. */
import assert from "node:assert/strict";
import { checkHostAgentTarget } from "../../../domain/provisioning/target.ts";

const resolver = (table: Record<string, string[]>) => (host: string) =>
  Promise.resolve(table[host] ?? []);

Deno.test("host-agent target: a name is refused when any address it resolves to is local", async () => {
  const resolve = resolver({
    "agent.example": ["10.0.0.5"],
    "sneaky.example": ["10.0.0.6", "127.0.0.1"],
    "meta.example": ["169.254.169.254"],
    "v6.example": ["::1"],
  });
  const policy = { allowLoopback: false, resolve };
  assert.deepEqual(
    (await checkHostAgentTarget("http://agent.example:8080", policy)).ok,
    true,
  );
  for (
    const [host, reason] of [
      ["sneaky.example", /sneaky\.example \(127\.0\.0\.1\) is a loopback address/],
      ["meta.example", /link-local or metadata/],
      ["v6.example", /loopback/],
    ] as const
  ) {
    const check = await checkHostAgentTarget(`https://${host}/`, policy);
    assert.equal(check.ok, false);
    assert.equal(!check.ok && check.kind, "invalid");
    assert.match(!check.ok ? check.message : "", reason);
  }
  const missing = await checkHostAgentTarget("http://nowhere.example/", policy);
  assert.deepEqual(missing, {
    ok: false,
    kind: "unresolved",
    message: 'host "nowhere.example" does not resolve',
  });
});

Deno.test("host-agent target: SERVICE_ALLOW_LOOPBACK_TARGETS lifts the address rule, not the syntax", async () => {
  const policy = { allowLoopback: true, resolve: resolver({}) };
  assert.equal((await checkHostAgentTarget("http://127.0.0.1:8800/host-agent", policy)).ok, true);
  assert.equal((await checkHostAgentTarget("http://u:p@127.0.0.1/", policy)).ok, false);
  assert.equal((await checkHostAgentTarget("file:///etc/passwd", policy)).ok, false);
});
