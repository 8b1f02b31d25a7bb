import assert from "node:assert/strict";
import { canonicalCidr, canonicalHost, parseCidr, within } from "../../../domain/netbox/ip.ts";

Deno.test("ip: canonical text as NetBox stores it (RFC 5952 for IPv6)", () => {
  const cases: Array<[string, string | null]> = [
    ["10.0.0.5", "10.0.0.5/32"],
    ["010.000.0.5/24", "10.0.0.5/24"],
    ["FD00:0:0::7/64", "fd00::7/64"],
    ["2001:db8:0:0:1:0:0:1/128", "2001:db8::1:0:0:1/128"],
    ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1/128"],
    ["2001:db8:0:1:1:1:1:1/64", "2001:db8:0:1:1:1:1:1/64"],
    ["::/0", "::/0"],
    ["::1", "::1/128"],
    ["::ffff:192.0.2.1/128", "::ffff:192.0.2.1/128"],
    ["1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0/128"],
    ["10.0.0.256/24", null],
    ["10.0.0.1/33", null],
    ["fd00::1/129", null],
    ["1::2::3", null],
    ["1:2:3:4:5:6:7:8:9", null],
    ["nonsense", null],
  ];
  for (const [input, want] of cases) assert.equal(canonicalCidr(input), want, input);
  assert.equal(canonicalHost("FD00::0:7/64"), "fd00::7");
});

Deno.test("ip: containment", () => {
  const p = (s: string) => parseCidr(s)!;
  assert.ok(within(p("10.1.2.3"), p("10.1.0.0/16"), true));
  assert.ok(!within(p("10.2.0.1"), p("10.1.0.0/16"), true));
  assert.ok(within(p("10.1.0.0/24"), p("10.1.0.0/24"), true));
  assert.ok(!within(p("10.1.0.0/24"), p("10.1.0.0/24"), false));
  assert.ok(!within(p("10.0.0.0/8"), p("10.1.0.0/16"), true));
  assert.ok(within(p("fd00::1"), p("fd00::/48"), true));
  assert.ok(!within(p("fd00::1"), p("10.0.0.0/8"), true));
});
