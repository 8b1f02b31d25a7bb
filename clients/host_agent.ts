/**
 * HTTP client of one host-agent (the provisioning port, domain/provisioning/types.ts):
 * `Authorization: Bearer <token>` when a token is given, 20 s per call, redirects never
 * followed. Every failure is an Error naming the call and what went wrong; the token is
 * never part of it, even when the host-agent echoes it back.
 */
import { z } from "zod";
import { redactSecrets } from "../domain/redaction.ts";
import type {
  AgentAssets,
  AgentCapabilities,
  AgentHealth,
  AgentMicrovm,
  CreateMicrovmCall,
  HostAgentPort,
  MicrovmImage,
} from "../domain/provisioning/types.ts";

export const HOST_AGENT_TIMEOUT_MS = 20_000;
const EXCERPT_CHARS = 300;

const Health = z.object({ ok: z.boolean(), status: z.string() });
const Capabilities = z.object({
  supports_nat: z.boolean(),
  supports_bridge: z.boolean(),
  available_vcpus: z.number(),
  available_memory_mib: z.number(),
  available_disk_mib: z.number(),
});
const Assets = z.object({ kernel_image_path: z.string(), rootfs_image_path: z.string() });
const Microvm = z.looseObject({
  microvm_id: z.string(),
  status: z.string(),
  guest_ip: z.string().nullable().optional(),
});

export class HostAgentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HostAgentError";
  }
}

export interface HostAgentClientOptions {
  baseUrl: string;
  token?: string | null;
  fetch: typeof fetch;
  timeoutMs?: number;
}

export class HostAgentClient implements HostAgentPort {
  readonly #base: string;
  readonly #token: string | null;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;

  constructor(options: HostAgentClientOptions) {
    this.#base = options.baseUrl.replace(/\/+$/, "");
    this.#token = options.token || null;
    this.#fetch = options.fetch;
    this.#timeoutMs = options.timeoutMs ?? HOST_AGENT_TIMEOUT_MS;
  }

  health(signal?: AbortSignal): Promise<AgentHealth> {
    return this.#call("GET", "/health", undefined, Health, signal);
  }

  capabilities(signal?: AbortSignal): Promise<AgentCapabilities> {
    return this.#call("GET", "/capabilities", undefined, Capabilities, signal);
  }

  prepareAssets(image: MicrovmImage, signal?: AbortSignal): Promise<AgentAssets> {
    return this.#call("POST", "/assets/prepare", { image }, Assets, signal);
  }

  createMicrovm(call: CreateMicrovmCall, signal?: AbortSignal): Promise<AgentMicrovm> {
    return this.#call("POST", "/microvms", call, Microvm, signal) as Promise<AgentMicrovm>;
  }

  startMicrovm(microvmId: string, signal?: AbortSignal): Promise<AgentMicrovm> {
    const path = `/microvms/${encodeURIComponent(microvmId)}/actions/start`;
    return this.#call("POST", path, undefined, Microvm, signal) as Promise<AgentMicrovm>;
  }

  async #call<T>(
    method: string,
    path: string,
    body: unknown,
    schema: z.ZodType<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    const url = `${this.#base}${path}`;
    const what = `${method} ${url}`;
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const signals = [AbortSignal.timeout(this.#timeoutMs)];
    if (signal) signals.push(signal);
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.any(signals),
        redirect: "manual",
      });
    } catch (error) {
      if (signal?.aborted) throw signal.reason ?? error;
      throw this.#error(`${what}: ${describe(error, this.#timeoutMs)}`);
    }
    const text = await response.text().catch(() => "");
    if (response.status >= 300 && response.status < 400) {
      const location = response.headers.get("location") ?? "(no location)";
      throw this.#error(`${what}: redirect to ${location} not followed (HTTP ${response.status})`);
    }
    if (!response.ok) {
      throw this.#error(
        `${what}: HTTP ${response.status}${excerptOf(text, this.#token)}${hint(response.status)}`,
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw this.#error(`${what}: the answer is not JSON${excerptOf(text, this.#token)}`);
    }
    const checked = schema.safeParse(parsed);
    if (!checked.success) {
      const first = checked.error.issues[0];
      throw this.#error(
        `${what}: unexpected answer (${first.path.join(".") || "body"}: ${first.message})`,
      );
    }
    return checked.data;
  }

  #error(message: string): HostAgentError {
    return new HostAgentError(redactSecrets(message, [this.#token]));
  }
}

function describe(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && error.name === "TimeoutError") {
    return `no answer: timed out after ${timeoutMs / 1000} s`;
  }
  const message = error instanceof Error ? error.message : String(error);
  return `unreachable (${message})`;
}

/** The host-agent's own error text (its `error` or `detail` field when JSON), shortened. */
function excerptOf(text: string, token: string | null | undefined): string {
  let shown = text;
  try {
    const body = JSON.parse(text);
    const field = body?.error ?? body?.detail;
    if (typeof field === "string") shown = field;
  } catch { /* not JSON: show the text */ }
  // The token goes before the cut, or a prefix of it could survive at the end.
  shown = redactSecrets(shown.slice(0, EXCERPT_CHARS * 16), [token]).replace(/\s+/g, " ").trim()
    .slice(0, EXCERPT_CHARS);
  return shown ? `: ${shown}` : "";
}

function hint(status: number): string {
  if (status === 401 || status === 403) return " (check host_agent_token)";
  return "";
}
