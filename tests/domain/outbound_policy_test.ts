/**
 * The address classification behind every outbound guard (SECURITY.md "Outbound requests"), at
 * the edges of each range: the reason is what a refused request's error says, and `forbidden`
 * decides whether an endpoint may be reached at all (codegen schema sources refuse every
 * non-public class). Each range is checked on both sides of each boundary.
 */
import assert from "node:assert/strict";
import {
  classifyAddress,
  endpointAddressReason,
  endpointNameReason,
  isIpAddress,
  isLocalHost,
} from "../../domain/outbound_policy.ts";

const LOOPBACK = "a loopback address";
const UNSPECIFIED4 = "the unspecified address (0.0.0.0/8)";
const PRIVATE = "a private address";
const CGNAT = "a shared (CGNAT) address";
const RESERVED = "a reserved (192.0.0.0/24) address";
const BENCH = "a benchmarking (198.18.0.0/15) address";
const MULTICAST4 = "a multicast, reserved or broadcast address";
const NOT_IP = "not an IP address";

/** [address, reason or null (public unicast), forbidden] */
const CASES: [string, string | null, boolean][] = [
  ["127.0.0.1", LOOPBACK, true],
  ["126.255.255.255", null, false],
  ["128.0.0.1", null, false],
  ["0.0.0.0", UNSPECIFIED4, true],
  ["0.1.2.3", UNSPECIFIED4, true],
  ["1.0.0.0", null, false],
  ["169.254.0.1", "a link-local or metadata address", true],
  ["169.253.0.1", null, false],
  ["169.255.0.1", null, false],
  ["100.100.100.200", "a metadata address", true],
  ["100.100.100.201", CGNAT, false],
  ["100.100.1.200", CGNAT, false],
  ["100.1.100.200", null, false],
  ["1.100.100.200", null, false],
  ["1.2.100.200", null, false],
  ["224.0.0.1", MULTICAST4, true],
  ["255.255.255.255", MULTICAST4, true],
  ["223.255.255.255", null, false],
  ["10.0.0.1", PRIVATE, false],
  ["9.255.255.255", null, false],
  ["11.0.0.0", null, false],
  ["172.16.0.0", PRIVATE, false],
  ["172.31.255.255", PRIVATE, false],
  ["172.15.255.255", null, false],
  ["172.32.0.0", null, false],
  ["192.168.0.1", PRIVATE, false],
  ["192.169.0.1", null, false],
  ["193.168.0.1", null, false],
  ["100.64.0.0", CGNAT, false],
  ["100.127.255.255", CGNAT, false],
  ["100.63.255.255", null, false],
  ["100.128.0.0", null, false],
  ["192.0.0.8", RESERVED, false],
  ["192.0.1.8", null, false],
  ["192.1.0.8", null, false],
  ["193.0.0.8", null, false],
  ["198.18.0.0", BENCH, false],
  ["198.19.255.255", BENCH, false],
  ["198.17.255.255", null, false],
  ["198.20.0.0", null, false],
  ["199.18.0.0", null, false],
  // Octets: 255 is one, 256 is not; three parts is no address.
  ["8.8.8.255", null, false],
  ["8.8.8.256", NOT_IP, true],
  ["8.8.8", NOT_IP, true],
  // IPv6.
  ["::", "the unspecified address", true],
  ["::1", LOOPBACK, true],
  ["[::1]", LOOPBACK, true],
  ["::2", UNSPECIFIED4, true],
  ["::ffff:10.0.0.1", PRIVATE, false],
  ["::ffff:8.8.8.8", null, false],
  ["::ffff:100.100.100.200", "a metadata address", true],
  ["64:ff9b::a00:1", PRIVATE, false],
  ["64:ff9b::808:808", null, false],
  ["64:ff9b:1:1:1:1:a00:1", null, false],
  ["fe80::1", "a link-local address", true],
  ["fe80::1%eth0", "a link-local address", true],
  ["febf::1", "a link-local address", true],
  ["fd00:ec2::254", "a metadata address", true],
  ["fd00:ec2::255", "a unique-local (private) address", false],
  ["ff02::1", "a multicast address", true],
  ["fc00::1", "a unique-local (private) address", false],
  ["fdff::1", "a unique-local (private) address", false],
  ["fbff::1", null, false],
  ["fe00::1", null, false],
  ["fec0::1", "a site-local address", false],
  ["feff::1", "a site-local address", false],
  ["2001:db8::1", "a documentation address", false],
  ["2001:db9::1", null, false],
  ["2606:4700:4700::1111", null, false],
  // Two "::" are no address (read as one, 1::2::3 would be the public 1::2).
  ["1::2::3", NOT_IP, true],
  ["1:2:3:4:5:6::8", null, false],
  ["1::g", NOT_IP, true],
  ["1:2:3:4:5:6:7", NOT_IP, true],
  ["1:2:3:4:5:6:7:8:9", NOT_IP, true],
  ["example.org", NOT_IP, true],
];

Deno.test("outbound policy: each range's edges are classified with the reason a refusal names", () => {
  const wrong: string[] = [];
  for (const [address, reason, forbidden] of CASES) {
    const got = classifyAddress(address);
    const seen = got ? `${got.reason} (${got.forbidden ? "forbidden" : "allowed"})` : "public";
    const want = reason ? `${reason} (${forbidden ? "forbidden" : "allowed"})` : "public";
    if (seen !== want) wrong.push(`${address}: ${seen}, want ${want}`);
    // Endpoints are refused exactly the forbidden classes, with the same words.
    if (endpointAddressReason(address) !== (forbidden ? reason : null)) {
      wrong.push(`${address}: endpoint reason ${endpointAddressReason(address)}`);
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test("outbound policy: every spelling of this machine, and nothing else, is local", () => {
  for (const host of ["localhost", "LOCALHOST.", "a.localhost", "127.0.0.1", "0.0.0.0", "[::1]"]) {
    assert.equal(isLocalHost(host), true, host);
  }
  for (const host of ["::", "::ffff:127.0.0.1"]) assert.equal(isLocalHost(host), true, host);
  for (const host of ["10.0.0.1", "169.254.169.254", "localhost.example", "2606::1", "example"]) {
    assert.equal(isLocalHost(host), false, host);
  }
  assert.equal(isIpAddress("8.8.8.255"), true);
  for (const text of ["1::2::3", "1:2:3:4:5:6:7", "1::g", "example.org"]) {
    assert.equal(isIpAddress(text), false, text);
  }
  assert.equal(isIpAddress("1:2:3:4:5:6::8"), true);
  // Names refused before any lookup; any other name is looked up (then its addresses checked).
  for (
    const [host, reason] of [
      ["localhost", "a loopback name"],
      ["pve.localhost", "a loopback name"],
      ["metadata.google.internal", "a metadata service name"],
      ["instance-data", "a metadata service name"],
      ["pve.lan", null],
      ["localhost.lan", null],
    ]
  ) assert.equal(endpointNameReason(host!) ?? null, reason, host!);
});
