/**
 * Keepalive probe of a hypervisor endpoint straight from the plugin (no backend involved):
 * `GET <http[s]://host:port>/api2/json/version`, authenticated with the endpoint's API token
 * (`Authorization: PVEAPIToken=<user@realm!id>=<secret>`) or a ticket from its password.
 * Never throws; the answer says what happened.
 *
 * `verifySsl: false` (the endpoint default: Proxmox hosts usually carry a self-signed
 * certificate) really skips certificate verification, through the outbound transport
 * (clients/outbound.ts), which every request here goes through.
 */
import { createOutboundFetch, isOutboundFetch, type OutboundInit } from "./outbound.ts";
import type { ProbeResult, ProbeTarget } from "../domain/plugin/ports.ts";

export type { ProbeResult, ProbeTarget };

export const PROBE_TIMEOUT_MS = 10_000;

/**
 * The fetch for `url`: `fetchFn` normally; with verify_ssl false on an https URL, the outbound
 * transport without certificate checks (Deno's fetch cannot skip them per request). A plain
 * fetch passed in (a test's in-process router) gets the strict guard for that case, so no
 * certificate-skipping request ever leaves unguarded.
 */
export function fetchFor(url: string, verifySsl: boolean, fetchFn: typeof fetch): typeof fetch {
  if (verifySsl || !url.startsWith("https:")) return fetchFn;
  const guarded = isOutboundFetch(fetchFn)
    ? fetchFn
    : createOutboundFetch({ allowLoopbackTargets: false, keepAlive: false });
  return (input, init) => guarded(input, { ...init, verifyTls: false } as OutboundInit);
}

function describe(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && error.name === "TimeoutError") {
    return `timed out after ${timeoutMs / 1000} s`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** `user@realm!tokenid` as Proxmox wants it; a bare token id gets the endpoint's user. */
export function tokenId(username: string | null, tokenName: string): string {
  if (tokenName.includes("!")) return tokenName;
  return `${username || "root@pam"}!${tokenName}`;
}

export async function probeHypervisor(
  fetchFn: typeof fetch,
  target: ProbeTarget,
  timeoutMs = PROBE_TIMEOUT_MS,
): Promise<ProbeResult> {
  const api = `${target.baseUrl.replace(/\/+$/, "")}/api2/json`;
  const send = fetchFor(api, target.verifySsl !== false, fetchFn);
  const headers: Record<string, string> = { accept: "application/json" };
  try {
    if (target.tokenName && target.tokenValue) {
      headers.authorization = `PVEAPIToken=${
        tokenId(target.username, target.tokenName)
      }=${target.tokenValue}`;
    } else if (target.password) {
      const login = await send(`${api}/access/ticket`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          accept: "application/json",
        },
        body: new URLSearchParams({
          username: target.username || "root@pam",
          password: target.password,
        }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const body = await login.json().catch(() => null) as { data?: { ticket?: string } } | null;
      const ticket = body?.data?.ticket;
      if (!login.ok || !ticket) {
        return {
          status: login.status === 401 || login.ok ? "unauthorized" : "error",
          detail: `POST ${api}/access/ticket: login rejected (HTTP ${login.status})`,
          http_status: login.status,
        };
      }
      headers.cookie = `PVEAuthCookie=${ticket}`;
    } else {
      return {
        status: "unauthorized",
        detail: "the endpoint has neither a password nor an API token",
        http_status: null,
      };
    }
    const response = await send(`${api}/version`, {
      headers,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = await response.json().catch(() => null) as
      | { data?: { version?: string; release?: string; repoid?: string } }
      | null;
    if (response.status === 401 || response.status === 403) {
      return {
        status: "unauthorized",
        detail: `GET ${api}/version: credentials rejected (HTTP ${response.status})`,
        http_status: response.status,
      };
    }
    if (!response.ok || !body?.data) {
      return {
        status: "error",
        detail: `GET ${api}/version: unexpected answer (HTTP ${response.status})`,
        http_status: response.status,
      };
    }
    return {
      status: "online",
      version: body.data.version ?? null,
      release: body.data.release ?? null,
      repoid: body.data.repoid ?? null,
    };
  } catch (error) {
    return {
      status: "offline",
      detail: `${api}: unreachable (${describe(error, timeoutMs)})`,
      http_status: null,
    };
  }
}
