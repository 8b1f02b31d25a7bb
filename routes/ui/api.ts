/**
 * How the console reads and writes: every call is an in-process request to the app's own
 * inventory REST API carrying the signed-in token, so authentication, permissions,
 * validation and every rule are the API's own, applied once (docs/console.md). Backend calls
 * (verbs, audit, stage streams) use the backend endpoint record the API returns to this token:
 * only a token the API shows the backend key to can act on the backend through the console.
 */
import type { ServeEnv } from "../_lib/deps.ts";
import { baseUrl } from "../../clients/backend.ts";
import { fetchFor } from "../../clients/hypervisor_probe.ts";

export interface SurfaceFetch {
  fetch: (request: Request, env?: ServeEnv) => Response | Promise<Response>;
}

// deno-lint-ignore no-explicit-any
export type Json = any;

export interface Answer {
  status: number;
  body: Json;
}

/** A backend the console may call, or why it may not. */
export type BackendAccess =
  | { ok: true; baseUrl: string; token: string; verifySsl: boolean }
  | { ok: false; status: number; reason: string };

const FORWARDED = ["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host"];
const BACKEND_TIMEOUT_MS = 20_000;

export class ConsoleApi {
  #backend: Promise<BackendAccess> | null = null;

  constructor(
    private readonly inventory: SurfaceFetch | undefined,
    private readonly authorization: string,
    private readonly incoming: Request,
    private readonly env: ServeEnv | undefined,
    private readonly fetchFn: typeof fetch,
    /** Recorded by the backend's audit trail as the actor of a verb. */
    readonly actor: string,
  ) {}

  /**
   * The same caller on a copy of the request: a WebSocket handler keeps calling after the
   * upgrade, when the original request can no longer be read.
   */
  detached(): ConsoleApi {
    const copy = new Request(this.incoming.url, { headers: new Headers(this.incoming.headers) });
    // Deno's handler info reads the closed request lazily: keep plain values.
    const remote = this.env?.remoteAddr;
    const env: ServeEnv = {
      remoteAddr: remote ? { hostname: remote.hostname, port: remote.port } : undefined,
      internal: this.env?.internal,
      origin: this.env?.origin,
    };
    return new ConsoleApi(
      this.inventory,
      this.authorization,
      copy,
      env,
      this.fetchFn,
      this.actor,
    );
  }

  /** The origin the browser used: absolute `url` fields in answers point there. */
  get origin(): string {
    return new URL(this.incoming.url).origin;
  }

  /** One inventory API request; the raw Response (streams are passed through). */
  async raw(method: string, path: string, body?: unknown): Promise<Response> {
    if (!this.inventory) {
      return Response.json({ detail: "The inventory is not served by this process." }, {
        status: 503,
      });
    }
    const headers = new Headers({ authorization: this.authorization, accept: "application/json" });
    for (const name of FORWARDED) {
      const value = this.incoming.headers.get(name);
      if (value !== null) headers.set(name, value);
    }
    if (body !== undefined) headers.set("content-type", "application/json");
    const request = new Request(new URL(path, this.origin), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return await this.inventory.fetch(request, this.env);
  }

  async call(method: string, path: string, body?: unknown): Promise<Answer> {
    const response = await this.raw(method, path, body);
    return { status: response.status, body: await parse(response) };
  }

  get(path: string): Promise<Answer> {
    return this.call("GET", path);
  }

  /** Several reads at once (a page's independent panels). */
  all(paths: string[]): Promise<Answer[]> {
    return Promise.all(paths.map((p) => this.get(p)));
  }

  backendAccess(): Promise<BackendAccess> {
    this.#backend ??= this.#resolveBackend();
    return this.#backend;
  }

  async #resolveBackend(): Promise<BackendAccess> {
    const answer = await this.get("/api/plugins/service/endpoints/backend/?limit=1");
    if (answer.status === 403) {
      return { ok: false, status: 403, reason: "Your token may not view the backend endpoint." };
    }
    if (answer.status !== 200) {
      return { ok: false, status: 502, reason: detailOf(answer) };
    }
    const record = answer.body?.results?.[0];
    if (!record) {
      return {
        ok: false,
        status: 409,
        reason: "No backend endpoint is configured; add one on the Endpoints page.",
      };
    }
    if (typeof record.token !== "string" || record.token === "") {
      return {
        ok: false,
        status: 403,
        reason:
          "Acting on the backend needs a token that may change the backend endpoint (the API shows it the backend key).",
      };
    }
    const host = typeof record.domain === "string" && record.domain !== ""
      ? record.domain
      : String(record.ip_address?.address ?? "").replace(/\/\d+$/, "");
    if (!host) return { ok: false, status: 409, reason: "The backend endpoint has no address." };
    return {
      ok: true,
      baseUrl: baseUrl(record.use_https !== false, host, Number(record.port ?? 8800)),
      token: record.token,
      verifySsl: record.verify_ssl !== false,
    };
  }

  /** A backend request with the backend key; unreachable → status 0 with the reason. */
  async backendRaw(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<Response | { status: number; reason: string }> {
    const access = await this.backendAccess();
    if (!access.ok) return { status: access.status, reason: access.reason };
    const url = access.baseUrl + path;
    const headers: Record<string, string> = {
      "x-service-api-key": access.token,
      "x-service-actor": this.actor,
      accept: "application/json",
    };
    if (body !== undefined) headers["content-type"] = "application/json";
    try {
      return await fetchFor(url, access.verifySsl, this.fetchFn)(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ?? AbortSignal.timeout(BACKEND_TIMEOUT_MS),
      });
    } catch (error) {
      return {
        status: 0,
        reason: `The backend at ${access.baseUrl} could not be reached (${
          error instanceof Error ? error.message : String(error)
        }).`,
      };
    }
  }

  async backend(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<Answer & { reason?: string }> {
    const response = await this.backendRaw(method, path, body);
    if (!(response instanceof Response)) {
      return { status: response.status, body: null, reason: response.reason };
    }
    return { status: response.status, body: await parse(response) };
  }
}

async function parse(response: Response): Promise<Json> {
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return { detail: text.slice(0, 500) };
  }
}

/** The human part of an API error body. */
export function detailOf(answer: { status: number; body: Json }): string {
  const body = answer.body;
  if (body && typeof body === "object") {
    if (typeof body.detail === "string") return body.detail;
    if (body.detail && typeof body.detail.message === "string") return body.detail.message;
    if (typeof body.error === "string") return body.error;
    if (typeof body.reason === "string") return body.reason.replaceAll("_", " ");
  }
  return `The server answered HTTP ${answer.status}.`;
}
