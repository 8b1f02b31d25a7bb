/**
 * Which addresses an outbound request to an endpoint may reach (SECURITY.md "Outbound
 * requests"). Endpoints are usually private hosts (Proxmox clusters, an inventory on the LAN),
 * so RFC 1918 addresses are allowed; what is refused is the machine itself (loopback, the
 * unspecified address), link-local addresses and the cloud metadata services, multicast and
 * broadcast. `SERVICE_ALLOW_LOOPBACK_TARGETS=true` lifts the refusal (local demos and tests).
 * Codegen schema sources apply a stricter policy to the same classification
 * (domain/schema_sources.ts refuses every non-public address).
 */
export const METADATA_HOSTS: ReadonlySet<string> = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "instance-data",
  "instance-data.ec2.internal",
]);

export function parseIpv4(text: string): number[] | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const nums = parts.map((p) => /^\d{1,3}$/.test(p) ? Number(p) : NaN);
  return nums.every((n) => n >= 0 && n <= 255) ? nums : null;
}

/** Expands an IPv6 text form into 8 groups; null when it is not IPv6. */
export function parseIpv6(text: string): number[] | null {
  let s = text.replace(/^\[|\]$/g, "").toLowerCase();
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  if (!s.includes(":")) return null;
  const lastColon = s.lastIndexOf(":");
  const v4 = parseIpv4(s.slice(lastColon + 1));
  if (v4) {
    const hex = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);
    s = `${s.slice(0, lastColon + 1)}${hex(v4[0], v4[1])}:${hex(v4[2], v4[3])}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const groups = (h: string) => h ? h.split(":") : [];
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  const fill = 8 - head.length - tail.length;
  if (halves.length === 1 ? fill !== 0 : fill < 1) return null;
  const all = [...head, ...new Array(halves.length === 2 ? fill : 0).fill("0"), ...tail];
  if (!all.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  return all.map((g) => parseInt(g, 16));
}

/**
 * Why an address is not public unicast. `forbidden` ones (this machine, link-local, metadata,
 * multicast) no outbound request may reach; the others (private, shared, reserved, benchmarking
 * and documentation ranges) are where endpoints usually live, and only codegen's public-only
 * policy refuses them.
 */
export interface AddressClass {
  reason: string;
  forbidden: boolean;
}

const forbidden = (reason: string): AddressClass => ({ reason, forbidden: true });
const nonPublic = (reason: string): AddressClass => ({ reason, forbidden: false });

function ipv4Class([a, b, c, d]: number[]): AddressClass | null {
  if (a === 127) return forbidden("a loopback address");
  if (a === 0) return forbidden("the unspecified address (0.0.0.0/8)");
  if (a === 169 && b === 254) return forbidden("a link-local or metadata address");
  // Alibaba Cloud's metadata service sits in the shared (CGNAT) range.
  if (a === 100 && b === 100 && c === 100 && d === 200) return forbidden("a metadata address");
  if (a >= 224) return forbidden("a multicast, reserved or broadcast address");
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) {
    return nonPublic("a private address");
  }
  if (a === 100 && b >= 64 && b <= 127) return nonPublic("a shared (CGNAT) address");
  if (a === 192 && b === 0 && c === 0) return nonPublic("a reserved (192.0.0.0/24) address");
  if (a === 198 && (b === 18 || b === 19)) {
    return nonPublic("a benchmarking (198.18.0.0/15) address");
  }
  return null;
}

/** How `address` falls short of public unicast, or null when it is a public unicast address. */
export function classifyAddress(address: string): AddressClass | null {
  const v4 = parseIpv4(address);
  if (v4) return ipv4Class(v4);
  const g = parseIpv6(address);
  if (!g) return forbidden("not an IP address");
  if (g.every((x) => x === 0)) return forbidden("the unspecified address");
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return forbidden("a loopback address");
  const embedded = [g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff];
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::/96).
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0)) {
    return ipv4Class(embedded);
  }
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    return ipv4Class(embedded);
  }
  if ((g[0] & 0xffc0) === 0xfe80) return forbidden("a link-local address");
  // AWS's IPv6 metadata service (inside the unique-local range).
  if (g[0] === 0xfd00 && g[1] === 0x0ec2 && g.slice(2, 7).every((x) => x === 0) && g[7] === 0x254) {
    return forbidden("a metadata address");
  }
  if ((g[0] & 0xff00) === 0xff00) return forbidden("a multicast address");
  if ((g[0] & 0xfe00) === 0xfc00) return nonPublic("a unique-local (private) address");
  if ((g[0] & 0xffc0) === 0xfec0) return nonPublic("a site-local address");
  if (g[0] === 0x2001 && g[1] === 0x0db8) return nonPublic("a documentation address");
  return null;
}

/** Why an outbound request must not reach `address`, or null when it may. */
export function endpointAddressReason(address: string): string | null {
  const found = classifyAddress(address);
  return found?.forbidden ? found.reason : null;
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
