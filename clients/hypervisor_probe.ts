/**
 * Keepalive probe of a hypervisor endpoint straight from the plugin (no backend involved):
 * `GET <http[s]://host:port>/api2/json/version`, authenticated with the endpoint's API token
 * (`Authorization: PVEAPIToken=<user@realm!id>=<secret>`) or a ticket from its password.
 * Never throws; the answer says what happened.
 *
 * `verifySsl: false` (the endpoint default: Proxmox hosts usually carry a self-signed
 * certificate) really skips certificate verification. Deno's fetch cannot, so those HTTPS
 * requests go through node:https with `rejectUnauthorized: false`.
 */
import https from "node:https";

export const PROBE_TIMEOUT_MS = 10_000;

export interface ProbeTarget {
  baseUrl: string;
  username: string | null;
  password: string | null;
  tokenName: string | null;
  tokenValue: string | null;
  /** false: accept any certificate (HTTPS only). Default true. */
  verifySsl?: boolean;
}

type ProbeInit = {
  method?: string;
  headers?: Record<string, string>;
  body?: URLSearchParams | string;
  signal?: AbortSignal;
};

/**
 * The part of fetch the plugin's clients use (method, string body, headers, signal), over
 * node:https without certificate verification: for endpoints saved with verify_ssl false.
 */
export function insecureFetch(url: string, init: ProbeInit = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const body = init.body === undefined ? undefined : String(init.body);
    const headers: Record<string, string> = { ...init.headers };
    if (body !== undefined) {
      headers["content-length"] = String(new TextEncoder().encode(body).length);
    }
    const signal = init.signal;
    const req = https.request(
      url,
      { method: init.method ?? "GET", headers, rejectUnauthorized: false },
      (res) => {
        const chunks: Uint8Array[] = [];
        res.on("data", (c: Uint8Array) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => {
          const all = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
          let at = 0;
          for (const c of chunks) {
            all.set(c, at);
            at += c.length;
          }
          resolve(new Response(all, { status: res.statusCode ?? 502 }));
        });
      },
    );
    const onAbort = () => {
      req.destroy();
      reject(signal?.reason ?? new DOMException("timed out", "TimeoutError"));
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    req.on("error", (err: Error) => reject(err));
    req.on("close", () => signal?.removeEventListener("abort", onAbort));
    req.end(body);
  });
}

/**
 * The fetch for `url`: `fetchFn` normally; node:https without certificate checks when the
 * endpoint is saved with verify_ssl false and the URL is https (Deno's fetch cannot skip them
 * per request).
 */
export function fetchFor(url: string, verifySsl: boolean, fetchFn: typeof fetch): typeof fetch {
  return !verifySsl && url.startsWith("https:")
    ? insecureFetch as unknown as typeof fetch
    : fetchFn;
}

export type ProbeResult =
  | { status: "online"; version: string | null; release: string | null; repoid: string | null }
  | { status: "unauthorized" | "offline" | "error"; detail: string; http_status: number | null };

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
