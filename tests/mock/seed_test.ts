/**
 * The seeded cluster is data a sync writes into an inventory that validates it: every guest
 * address must be a valid IPv4 address, however many guests are seeded.
 */
import assert from "node:assert/strict";
import { buildSeed } from "../../mock/seed.ts";

Deno.test("mock seed: every guest address is valid IPv4 with 10,000 guests", () => {
  const state = buildSeed({
    size: { nodes: 10, vms: 8000, cts: 2000, storages: 2 },
    mockUser: "root@pam",
    mockPassword: "x",
  });
  const addresses = new Set<string>();
  for (const guest of state.guests.values()) {
    const text = JSON.stringify(guest);
    for (const [, address] of text.matchAll(/ip=(\d+\.\d+\.\d+\.\d+)\//g)) {
      assert.ok(address.split(".").every((octet) => Number(octet) <= 255), address);
      addresses.add(address);
    }
  }
  assert.equal(addresses.size, 10_000);
});
