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
import { classifyAddress, isIpAddress, METADATA_HOSTS } from "./outbound_policy.ts";

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

export async function defaultResolve(host: string): Promise<string[]> {
  const settled = await Promise.allSettled([
    Deno.resolveDns(host, "A"),
    Deno.resolveDns(host, "AAAA"),
  ]);
  return settled.flatMap((r) => r.status === "fulfilled" ? r.value : []);
}

/** Why an address is not public (codegen's policy), or null when it is a public unicast address. */
export function blockedAddressReason(address: string): string | null {
  return classifyAddress(address)?.reason ?? null;
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
  const addresses = isIpAddress(host) ? [host] : await policy.resolve(host);
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
