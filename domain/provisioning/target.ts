/**
 * Where a provisioning request may send the host-agent calls: an http(s) base URL without
 * userinfo, query or fragment, whose host, and every address the host resolves to, is not a
 * loopback, link-local or metadata address (unless the configuration allows local targets).
 * Checked before the first call, so a refused URL never receives a request (or a token).
 */
import { endpointAddressReason, endpointNameReason, isIpAddress } from "../outbound_policy.ts";

export type TargetCheck =
  | { ok: true; url: URL }
  /** The URL breaks a rule: the caller's input is wrong. */
  | { ok: false; kind: "invalid"; message: string }
  /** The host name did not resolve: the host-agent cannot be reached. */
  | { ok: false; kind: "unresolved"; message: string };

export interface TargetPolicy {
  allowLoopback: boolean;
  /** A and AAAA addresses of a host name (empty when it does not resolve). */
  resolve: (host: string) => Promise<string[]>;
}

/** The syntax rules alone (no lookup). */
export function hostAgentUrlProblem(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "must be an absolute http:// or https:// URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return `must use http or https, not ${url.protocol.replace(/:$/, "")}`;
  }
  if (url.username || url.password || /^[a-z]+:\/\/[^/?#]*@/i.test(raw)) {
    return "must not carry a user name or password (send the token as host_agent_token)";
  }
  if (url.search || raw.includes("?")) return "must not have a query string";
  if (url.hash || raw.includes("#")) return "must not have a fragment";
  if (!url.hostname) return "must name a host";
  return null;
}

export async function checkHostAgentTarget(
  raw: string,
  policy: TargetPolicy,
): Promise<TargetCheck> {
  const problem = hostAgentUrlProblem(raw);
  if (problem) return { ok: false, kind: "invalid", message: problem };
  const url = new URL(raw);
  if (policy.allowLoopback) return { ok: true, url };
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase().replace(/\.$/, "");
  if (isIpAddress(host)) {
    const reason = endpointAddressReason(host);
    return reason ? refused(host, reason) : { ok: true, url };
  }
  const nameReason = endpointNameReason(host);
  if (nameReason) return refused(host, nameReason);
  const addresses = await policy.resolve(host).catch(() => [] as string[]);
  if (addresses.length === 0) {
    return { ok: false, kind: "unresolved", message: `host "${host}" does not resolve` };
  }
  for (const address of addresses) {
    const reason = endpointAddressReason(address);
    if (reason) return refused(`${host} (${address})`, reason);
  }
  return { ok: true, url };
}

function refused(host: string, reason: string): TargetCheck {
  return {
    ok: false,
    kind: "invalid",
    message: `host ${host} is ${reason}; such targets are refused unless ` +
      "SERVICE_ALLOW_LOOPBACK_TARGETS is true",
  };
}
