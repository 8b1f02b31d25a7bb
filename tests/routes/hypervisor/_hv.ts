/** Shared setup for hypervisor surface tests: the shared schema files, a fake clock, login. */
import { createHypervisorApp, type HypervisorAppOptions } from "../../../routes/hypervisor/mod.ts";
import type { HypervisorEngine } from "../../../mock/engine.ts";
import { loadSchema, type SchemaTree } from "../../../domain/hypervisor_schema/schema.ts";
import { testDeps } from "../../_helpers.ts";

export { HAS_SCHEMAS, SCHEMA_9111, SCHEMA_92, SCHEMA_DIR } from "../../_schemas.ts";
import { SCHEMA_92 } from "../../_schemas.ts";

const trees = new Map<string, Promise<SchemaTree>>();
/** The shared schema files, loaded once per test process (read-only trees). */
export function sharedSchema(url: URL): Promise<SchemaTree> {
  let t = trees.get(url.href);
  if (!t) trees.set(url.href, t = loadSchema(url.href));
  return t;
}

export interface Harness {
  app: { request: (path: string, init?: RequestInit) => Response | Promise<Response> };
  engine: HypervisorEngine;
  clock: { now: number };
  close: () => void;
}

export async function harness(
  env: Record<string, string> = {},
  options: HypervisorAppOptions & { schemaUrl?: URL | null } = {},
): Promise<Harness> {
  const clock = { now: Date.UTC(2026, 2, 1, 12, 0, 0) };
  const deps = await testDeps(env, { now: () => clock.now });
  const schema = options.schemaUrl === null
    ? undefined
    : options.schema ?? await sharedSchema(options.schemaUrl ?? SCHEMA_92);
  let engine: HypervisorEngine | undefined;
  const app = await createHypervisorApp(deps, {
    taskDelayMs: 0,
    ...options,
    schema,
    onEngine: (e) => engine = e,
  });
  return { app, engine: engine!, clock, close: () => deps.kv.close() };
}

export interface Session {
  ticket: string;
  csrf: string;
  headers: Record<string, string>;
}

export async function login(
  h: Harness,
  username = "root@pam",
  password = "bridgebox",
): Promise<Session> {
  const res = await h.app.request("/api2/json/access/ticket", {
    method: "POST",
    body: new URLSearchParams({ username, password }),
  });
  if (res.status !== 200) throw new Error(`login failed: ${res.status}`);
  const { data } = await res.json();
  return {
    ticket: data.ticket,
    csrf: data.CSRFPreventionToken,
    headers: {
      cookie: `PVEAuthCookie=${encodeURIComponent(data.ticket)}`,
      CSRFPreventionToken: data.CSRFPreventionToken,
    },
  };
}

/** A request with the session's cookie and CSRF header; `form` is sent form-encoded. */
export async function call(
  h: Harness,
  s: Session | Record<string, string>,
  method: string,
  path: string,
  form?: Record<string, string | number>,
  // deno-lint-ignore no-explicit-any
): Promise<{ status: number; body: any; res: Response }> {
  const headers = "headers" in s ? (s as Session).headers : s as Record<string, string>;
  const res = await h.app.request(path, {
    method,
    headers,
    body: form
      ? new URLSearchParams(Object.entries(form).map(([k, v]) => [k, String(v)]))
      : undefined,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body, res };
}
