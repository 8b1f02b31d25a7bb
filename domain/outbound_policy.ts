/**
 * Which addresses an outbound request to an endpoint may reach (SECURITY.md "Outbound
 * requests"). Endpoints are usually private hosts (Proxmox clusters, an inventory on the LAN),
 * so RFC 1918 addresses are allowed; what is refused is the machine itself (loopback, the
 * unspecified address), link-local addresses and the cloud metadata services, multicast and
 * broadcast. `SERVICE_ALLOW_LOOPBACK_TARGETS=true` lifts the refusal (local demos and tests).
 * Codegen schema sources add their own stricter rule (domain/schema_sources.ts).
 */
import { METADATA_HOSTS, parseIpv4, parseIpv6 } from "./schema_sources.ts";

function ipv4Reason([a, b, c, d]: number[]): string | null {
  if (a === 127) return "a loopback address";
  if (a === 0) return "the unspecified address (0.0.0.0/8)";
  if (a === 169 && b === 254) return "a link-local or metadata address";
  // Alibaba Cloud's metadata service sits in the shared (CGNAT) range.
  if (a === 100 && b === 100 && c === 100 && d === 200) return "a metadata address";
  if (a >= 224) return "a multicast, reserved or broadcast address";
  return null;
}

/** Why an outbound request must not reach `address`, or null when it may. */
export function endpointAddressReason(address: string): string | null {
  const v4 = parseIpv4(address);
  if (v4) return ipv4Reason(v4);
  const g = parseIpv6(address);
  if (!g) return "not an IP address";
  if (g.every((x) => x === 0)) return "the unspecified address";
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return "a loopback address";
  const embedded = [g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff];
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::/96).
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0)) {
    return ipv4Reason(embedded);
  }
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    return ipv4Reason(embedded);
  }
  if ((g[0] & 0xffc0) === 0xfe80) return "a link-local address";
  // AWS's IPv6 metadata service.
  if (g[0] === 0xfd00 && g[1] === 0x0ec2 && g.slice(2, 7).every((x) => x === 0) && g[7] === 0x254) {
    return "a metadata address";
  }
  if ((g[0] & 0xff00) === 0xff00) return "a multicast address";
  return null;
}

/** Why a host *name* is refused before any lookup (loopback and metadata names). */
export function endpointNameReason(host: string): string | null {
  if (host === "localhost" || host.endsWith(".localhost")) return "a loopback name";
  if (METADATA_HOSTS.has(host)) return "a metadata service name";
  return null;
}

export function isIpAddress(host: string): boolean {
  return parseIpv4(host) !== null || parseIpv6(host) !== null;
}

/**
 * True for every spelling of "this machine": `localhost`, 127.0.0.0/8, 0.0.0.0, ::1, ::, and
 * their IPv4-mapped forms. URL parsing already turns `127.1`, `2130706433` and `0x7f000001`
 * into `127.0.0.1`.
 */
export function isLocalHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase().replace(/\.$/, "");
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (!isIpAddress(h)) return false;
  const reason = endpointAddressReason(h);
  return reason === "a loopback address" || (reason?.startsWith("the unspecified") ?? false);
}
