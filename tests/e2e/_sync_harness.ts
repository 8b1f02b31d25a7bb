// deno-lint-ignore-file no-explicit-any
/**
 * One real socket serving every surface (backend, inventory, hypervisor mock), wired to
 * itself: a backend key, the inventory copy (a real inventory token) and the mock as a
 * hypervisor copy. Helpers run sync routes and read the inventory as a NetBox client would.
 */
import assert from "node:assert/strict";
import type { TestDeps, TestOverrides } from "../_helpers.ts";
import { call } from "../_process.ts";
import { type Frame, readSse, serveApp } from "./_served_app.ts";
import { type LogLevel, type LogLine, MemoryLogger } from "../../infra/logger.ts";

export const ROOT = "e2esync0123456789abcdef0123456789abcdef";
export const KEY = "sync-e2e-key-0123456789abcdef0123456789abcdef";

export type SseFrame = Frame;

export interface SyncWorld {
  base: string;
  port: number;
  deps: TestDeps;
  /** Requests seen by the server, "METHOD /path" (query stripped), in order. */
  seen: string[];
  /** The same requests with their query strings, "METHOD /path?query", in order. */
  requests: string[];
  /** The inventory writes' requests (with their query) and the bytes each answer held. */
  writeAnswers: { request: string; bytes: number; objects: number }[];
  backend(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  inventory(path: string): Promise<any[]>;
  inventoryCall(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: any }>;
  hypervisor(method: string, path: string, params?: Record<string, string>): Promise<any>;
  /** Runs a stream route to its end (or until `until` says stop, then disconnects). */
  stream(path: string, until?: (frame: SseFrame) => boolean): Promise<SseFrame[]>;
  /** The raw text of a stream (for checks no secret travels). */
  streamText(path: string): Promise<string>;
  addHypervisorCopy(name: string, extra?: Record<string, unknown>): Promise<number>;
  close(): Promise<void>;
}

export async function syncWorld(
  seed = "nodes=2,vms=6,cts=3,storages=3",
  env: Record<string, string> = {},
  overrides: TestOverrides = {},
): Promise<SyncWorld> {
  const served = await serveApp({
    INVENTORY_BOOTSTRAP_TOKEN: ROOT,
    SERVICE_ALLOW_LOOPBACK_TARGETS: "true",
    HYPERVISOR_MOCK_SEED: seed,
    ...env,
  }, overrides);
  const { base, deps, port, seen, requests, writeAnswers } = served;
  const json = async (res: Response) => {
    const text = await res.text();
    try {
      return text ? JSON.parse(text) : null;
    } catch {
      return text;
    }
  };
  const backend: SyncWorld["backend"] = (method, path, body) =>
    call(base, method, path, { "x-service-api-key": KEY }, body);
  const inventoryCall: SyncWorld["inventoryCall"] = (method, path, body) =>
    call(base, method, `/api/${path}`, { authorization: `Token ${ROOT}` }, body);
  const inventory: SyncWorld["inventory"] = async (path) => {
    const out: any[] = [];
    const sep = path.includes("?") ? "&" : "?";
    for (let offset = 0;; offset += 1000) {
      const r = await inventoryCall("GET", `${path}${sep}limit=1000&offset=${offset}`);
      if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      out.push(...r.body.results);
      if (!r.body.next) return out;
    }
  };
  let ticket: { ticket: string; csrf: string } | null = null;
  const hypervisor: SyncWorld["hypervisor"] = async (method, path, params = {}) => {
    if (!ticket) {
      const res = await fetch(`${base}/api2/json/access/ticket`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ username: "root@pam", password: "bridgebox" }),
      });
      const data = (await res.json()).data;
      ticket = { ticket: data.ticket, csrf: data.CSRFPreventionToken };
    }
    const form = new URLSearchParams(params);
    const inQuery = method === "GET" || method === "DELETE";
    const res = await fetch(
      `${base}/api2/json${path}${inQuery && form.size ? `?${form}` : ""}`,
      {
        method,
        headers: {
          cookie: `PVEAuthCookie=${ticket.ticket}`,
          csrfpreventiontoken: ticket.csrf,
          ...(inQuery ? {} : { "content-type": "application/x-www-form-urlencoded" }),
        },
        body: inQuery ? undefined : form,
      },
    );
    const body = await json(res);
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(body)}`);
    return body?.data;
  };
  const stream: SyncWorld["stream"] = (path, until) =>
    readSse(base + path, { "x-service-api-key": KEY }, until);
  const streamText: SyncWorld["streamText"] = async (path) => {
    const res = await fetch(base + path, { headers: { "x-service-api-key": KEY } });
    return await res.text();
  };
  const addHypervisorCopy: SyncWorld["addHypervisorCopy"] = async (name, extra = {}) => {
    const r = await backend("POST", "/hypervisor/endpoints", {
      name,
      ip: "127.0.0.1",
      port,
      use_https: false,
      username: "root@pam",
      password: "bridgebox",
      ...extra,
    });
    if (r.status !== 201) throw new Error(`hypervisor copy: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.id;
  };

  // A second app on a store the first registered the key in (another process) uses that key.
  if (!(overrides.kv && await deps.storage.apiKeys.isClaimed())) {
    const registered = await backend("POST", "/auth/register-key", { api_key: KEY });
    if (registered.status !== 201) throw new Error(JSON.stringify(registered));
  }
  return {
    base,
    port,
    deps,
    seen,
    requests,
    writeAnswers,
    backend,
    inventory,
    inventoryCall,
    hypervisor,
    stream,
    streamText,
    addHypervisorCopy,
    close: served.close,
  };
}

/** Registers the inventory copy: this same app, with the bootstrap superuser token. */
export async function addInventoryCopy(world: SyncWorld, token = ROOT): Promise<number> {
  const r = await world.backend("POST", "/inventory/endpoint", {
    name: "self",
    ip: "127.0.0.1",
    port: world.port,
    use_https: false,
    token_version: "v1",
    token,
  });
  if (r.status !== 201) throw new Error(`inventory copy: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id;
}

/** Writes (POST/PUT/PATCH/DELETE) the server saw on the inventory API. */
export function inventoryWrites(seen: string[]): string[] {
  return seen.filter((s) => /^(POST|PUT|PATCH|DELETE) \/api\//.test(s));
}

/** A logger that also resolves waiters when a line with `message` is logged. */
export class WaitingLogger extends MemoryLogger {
  #waiters: { message: string; resolve: (line: LogLine) => void }[] = [];
  override log(level: LogLevel, message: string, fields: Record<string, unknown> = {}): void {
    super.log(level, message, fields);
    for (const w of this.#waiters.filter((w) => w.message === message)) {
      w.resolve({ level, message, ...fields });
    }
    this.#waiters = this.#waiters.filter((w) => w.message !== message);
  }
  next(message: string): Promise<LogLine> {
    return new Promise((resolve) => this.#waiters.push({ message, resolve }));
  }
}

/** A run's result wrote nothing and failed nothing: what a run right after a settled one sees. */
export function assertNothingWritten(result: Record<string, unknown>, message: string): void {
  const { created, updated, deleted, failed } = result;
  assert.deepEqual({ created, updated, deleted, failed }, {
    created: 0,
    updated: 0,
    deleted: 0,
    failed: 0,
  }, message);
}
