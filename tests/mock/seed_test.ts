/**
 * The seeded cluster is data a sync writes into an inventory that validates it: every guest
 * address must be a valid IPv4 address, however many guests are seeded.
 */
import assert from "node:assert/strict";
import { buildSeed } from "../../mock/seed.ts";

// 100,000 guests, the estate of `bench:user:100k`: past 60,960 guests the third octet of one
// /16 ran out (10.0.256.10), and every run of that bench failed at the ip-addresses stage.
Deno.test("mock seed: every guest address is valid IPv4, unique, with its gateway in its /16, with 100,000 guests", () => {
  const state = buildSeed({
    size: { nodes: 50, vms: 80_000, cts: 20_000, storages: 2 },
    mockUser: "root@pam",
    mockPassword: "x",
  });
  const addresses = new Set<string>();
  for (const guest of state.guests.values()) {
    const text = JSON.stringify(guest);
    const configured = [...text.matchAll(/ip=(\d+\.\d+\.\d+\.\d+)\/16,gw=(\d+\.\d+\.\d+\.\d+)/g)];
    assert.ok(configured.length > 0, `guest ${guest.vmid} has an address`);
    for (const [, address, gateway] of configured) {
      assert.ok(address.split(".").every((octet) => Number(octet) <= 255), address);
      assert.equal(
        gateway.split(".").slice(0, 2).join("."),
        address.split(".").slice(0, 2).join("."),
        `${address} via ${gateway}`,
      );
      addresses.add(address);
    }
  }
  assert.equal(addresses.size, 100_000);
});
