/**
 * Where a browser terminal may connect (domain/terminal.ts): the outbound policy on SSH targets,
 * names resolved once, and the per-node address and pinned-key rules (README "Browser terminal").
 */
import assert from "node:assert/strict";
import { checkSshHost, nodeTarget } from "../../domain/terminal.ts";

const resolver = (table: Record<string, string[]>) => (host: string) =>
  Promise.resolve(table[host] ?? []);

Deno.test("checkSshHost: a name is resolved once and SSH goes to the checked address; loopback, metadata and their names are refused", async () => {
  const policy = {
    allowLoopback: false,
    resolve: resolver({
      "pve2.lab": ["10.0.0.2"],
      "evil.example": ["10.0.0.9", "169.254.169.254"],
      "sneaky.example": ["::1"],
    }),
  };
  assert.deepEqual(await checkSshHost("pve2.lab.", policy), { ok: true, address: "10.0.0.2" });
  assert.deepEqual(await checkSshHost("192.168.1.5", policy), { ok: true, address: "192.168.1.5" });
  for (
    const [host, reason] of [
      ["evil.example", /evil\.example \(169\.254\.169\.254\) refused: it is a link-local/],
      ["sneaky.example", /loopback/],
      ["127.0.0.1", /loopback/],
      ["[::ffff:127.0.0.1]", /loopback/],
      ["localhost", /loopback name/],
      ["metadata.google.internal", /metadata service name/],
      ["fe80::1%vmbr0", /link-local/],
      ["100.100.100.200", /metadata/],
    ] as const
  ) {
    const checked = await checkSshHost(host, policy);
    assert.equal(checked.ok, false, host);
    if (!checked.ok) {
      assert.match(checked.detail, reason, host);
      assert.match(checked.detail, /SERVICE_ALLOW_LOOPBACK_TARGETS/);
    }
  }
  assert.deepEqual(await checkSshHost("nowhere.example", policy), {
    ok: false,
    detail: "Host nowhere.example does not resolve.",
  });
  // Local demos and tests lift the refusal.
  assert.deepEqual(await checkSshHost("127.0.0.1", { ...policy, allowLoopback: true }), {
    ok: true,
    address: "127.0.0.1",
  });
});

Deno.test("nodeTarget: the node's reported address; the endpoint's host only for a sole node; the node's own pin, the endpoint's only for the endpoint's own address", () => {
  const endpoint = {
    host: "10.0.0.1",
    pinned: "SHA256:" + "E".repeat(43),
    nodePins: { pve2: "SHA256:" + "N".repeat(43) },
  };
  assert.deepEqual(nodeTarget(endpoint, { name: "pve2", ip_address: "10.0.0.2/24" }, 3), {
    ok: true,
    host: "10.0.0.2",
    pinned: endpoint.nodePins.pve2,
    pinnedBy: "node pve2",
  });
  assert.deepEqual(nodeTarget(endpoint, { name: "pve1", ip_address: "10.0.0.1" }, 3), {
    ok: true,
    host: "10.0.0.1",
    pinned: endpoint.pinned,
    pinnedBy: "the endpoint",
  });
  const unpinned = nodeTarget(endpoint, { name: "pve3", ip_address: "10.0.0.3" }, 3);
  assert.equal(unpinned.ok, false);
  assert.equal(!unpinned.ok && unpinned.reason, "ssh_fingerprint_required");
  // No reported address: the endpoint's host for a standalone node, nothing in a cluster.
  const sole = nodeTarget(endpoint, { name: "pve1", ip_address: null }, 1);
  assert.equal(sole.ok && sole.host, "10.0.0.1");
  const lost = nodeTarget(endpoint, { name: "pve1", ip_address: null }, 2);
  assert.equal(!lost.ok && lost.reason, "ssh_host_missing");
});
