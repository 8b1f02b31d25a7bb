/**
 * Allow-list for schema sources given to `POST /pve/codegen/generate`.
 *
 * - File paths: only `.json` / `.js` files whose real path (symlinks and `..` resolved) lies
 *   inside one of the allowed directories. Default directories: the directory of the configured
 *   `HYPERVISOR_SCHEMA` file, and `../shared/hypervisor-schema` (next to the checkout) when it
 *   exists.
 * - URLs: `http:` / `https:` only, no userinfo. The host, and every address it resolves to, must
 *   be public: loopback, private (RFC 1918, CGNAT, ULA), link-local, cloud metadata, multicast
 *   and reserved ranges are refused unless `allowPrivate` (SERVICE_ALLOW_LOOPBACK_TARGETS) is
 *   set. Origins the operator configured (the HYPERVISOR_SCHEMA URL, HYPERVISOR_URL) are trusted.
 */

import { resolve as resolvePath } from "node:path";

export interface SourcePolicy {
  /** Absolute directories files may be read from. */
  allowedDirs: readonly string[];
  allowPrivate: boolean;
  /** Origins (`https://host:port`) allowed even when their address is private. */
  trustedOrigins: readonly string[];
  /** Resolves a host name to its addresses (A and AAAA). */
  resolve: (host: string) => Promise<string[]>;
}

export type SourceCheck =
  | { ok: true; kind: "file"; path: string }
  | { ok: true; kind: "url"; url: URL }
  | { ok: false; message: string };

const FILE_EXTENSIONS = [".json", ".js"];
export const METADATA_HOSTS: ReadonlySet<string> = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "instance-data",
  "instance-data.ec2.internal",
]);

export async function defaultResolve(host: string): Promise<string[]> {
  const settled = await Promise.allSettled([
    Deno.resolveDns(host, "A"),
    Deno.resolveDns(host, "AAAA"),
  ]);
  return settled.flatMap((r) => r.status === "fulfilled" ? r.value : []);
}

export function parseIpv4(text: string): number[] | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const nums = parts.map((p) => /^\d{1,3}$/.test(p) ? Number(p) : NaN);
  return nums.every((n) => n >= 0 && n <= 255) ? nums : null;
}

function ipv4Reason([a, b, c]: number[]): string | null {
  if (a === 0) return "a reserved (0.0.0.0/8) address";
  if (a === 127) return "a loopback address";
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) {
    return "a private address";
  }
  if (a === 100 && b >= 64 && b <= 127) return "a shared (CGNAT) address";
  if (a === 169 && b === 254) return "a link-local or metadata address";
  if (a === 192 && b === 0 && c === 0) return "a reserved (192.0.0.0/24) address";
  if (a === 198 && (b === 18 || b === 19)) return "a benchmarking (198.18.0.0/15) address";
  if (a >= 224) return "a multicast or reserved address";
  return null;
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

/** Why an address is not public, or null when it is a public unicast address. */
export function blockedAddressReason(address: string): string | null {
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
  if ((g[0] & 0xfe00) === 0xfc00) return "a unique-local (private) address";
  if ((g[0] & 0xffc0) === 0xfe80) return "a link-local address";
  if ((g[0] & 0xffc0) === 0xfec0) return "a site-local address";
  if ((g[0] & 0xff00) === 0xff00) return "a multicast address";
  if (g[0] === 0x2001 && g[1] === 0x0db8) return "a documentation address";
  return null;
}

function isIpLiteral(host: string): boolean {
  return parseIpv4(host) !== null || parseIpv6(host) !== null;
}

function within(dir: string, path: string): boolean {
  const d = dir.endsWith("/") ? dir : `${dir}/`;
  return path.startsWith(d);
}

async function realDir(dir: string): Promise<string | null> {
  try {
    const real = await Deno.realPath(dir);
    return (await Deno.stat(real)).isDirectory ? real : null;
  } catch {
    return null;
  }
}

/** The directories that exist, as real paths, deduplicated. */
export async function existingDirs(candidates: readonly string[]): Promise<string[]> {
  const out = new Set<string>();
  for (const c of candidates) {
    const real = await realDir(c);
    if (real) out.add(real);
  }
  return [...out];
}

async function checkFile(source: string, policy: SourcePolicy): Promise<SourceCheck> {
  let path = source;
  if (source.startsWith("file:")) {
    try {
      path = decodeURIComponent(new URL(source).pathname);
    } catch {
      return { ok: false, message: "source is not a valid file: URL" };
    }
  }
  if (path.includes("\0")) return { ok: false, message: "source is not a valid path" };
  if (!FILE_EXTENSIONS.some((ext) => path.toLowerCase().endsWith(ext))) {
    return { ok: false, message: "a schema file must end in .json or .js" };
  }
  const dirs = await existingDirs(policy.allowedDirs);
  if (!dirs.length) {
    return { ok: false, message: "no schema directory is configured; file sources are disabled" };
  }
  const outside = {
    ok: false as const,
    message: `file sources must be inside an allowed directory (${dirs.join(", ")})`,
  };
  // Lexically first: nothing outside the allowed directories is even looked at (no oracle
  // for which files exist elsewhere). The real path is checked again below (symlinks).
  const lexical = resolvePath(path);
  const lexicalDirs = [...dirs, ...policy.allowedDirs.map((d) => resolvePath(d))];
  if (!lexicalDirs.some((d) => within(d, lexical))) return outside;
  let real: string;
  try {
    real = await Deno.realPath(path);
  } catch {
    return { ok: false, message: `file not found: ${source}` };
  }
  if (!dirs.some((d) => within(d, real))) return outside;
  const info = await Deno.stat(real);
  if (!info.isFile) return { ok: false, message: "source is not a regular file" };
  return { ok: true, kind: "file", path: real };
}

async function checkUrl(source: string, policy: SourcePolicy): Promise<SourceCheck> {
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    return { ok: false, message: "source is not a valid URL" };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return { ok: false, message: "only http and https URLs are allowed" };
  }
  if (url.username || url.password) {
    return { ok: false, message: "URLs with credentials are not allowed" };
  }
  if (policy.allowPrivate || policy.trustedOrigins.includes(url.origin)) {
    return { ok: true, kind: "url", url };
  }
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) {
    return { ok: false, message: "source host is a loopback address" };
  }
  if (METADATA_HOSTS.has(host)) return { ok: false, message: "source host is a metadata service" };
  const addresses = isIpLiteral(host) ? [host] : await policy.resolve(host);
  if (!addresses.length) return { ok: false, message: `cannot resolve host ${host}` };
  for (const address of addresses) {
    const reason = blockedAddressReason(address);
    if (reason) {
      return {
        ok: false,
        message: `source host ${host} is ${reason}; set SERVICE_ALLOW_LOOPBACK_TARGETS=true ` +
          "to allow private targets",
      };
    }
  }
  return { ok: true, kind: "url", url };
}

/** Decides whether a schema source may be loaded. */
export function checkSchemaSource(source: string, policy: SourcePolicy): Promise<SourceCheck> {
  const s = source.trim();
  if (!s) return Promise.resolve({ ok: false, message: "source must not be empty" });
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(s) && !/^file:/i.test(s)) return checkUrl(s, policy);
  return checkFile(s, policy);
}
