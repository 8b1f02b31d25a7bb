/**
 * Console test harness: the whole app in process (app.request), a superuser bootstrap token,
 * and a tiny browser: a cookie jar, form posts that carry the page's CSRF token, and the
 * page's text without tags. Outbound fetches (the console's backend calls, the plugin's
 * pushes) reach the same app in process.
 */
import { createApp } from "../../../app.ts";
import { type TestDeps, testDeps, type TestOverrides } from "../../_helpers.ts";

export const ROOT = "ui0123456789abcdef0123456789abcdef012345";
export const ORIGIN = "http://console.test";

export interface Page {
  status: number;
  location: string | null;
  html: string;
  text: string;
  headers: Headers;
}

export class Client {
  readonly cookies = new Map<string, string>();
  constructor(
    readonly app: { request: (url: string, init?: RequestInit) => Promise<Response> | Response },
  ) {}

  get cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  async send(path: string, init: RequestInit = {}): Promise<Page> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set("cookie", this.cookieHeader);
    const res = await this.app.request(ORIGIN + path, { ...init, headers, redirect: "manual" });
    for (const c of res.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(";");
      const [name, value] = [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)];
      if (value === "" || attrs.some((a) => /max-age=0/i.test(a.trim()))) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const html = await res.text();
    return {
      status: res.status,
      location: res.headers.get("location"),
      html,
      text: textOf(html),
      headers: res.headers,
    };
  }

  get(path: string): Promise<Page> {
    return this.send(path);
  }

  post(path: string, form: Record<string, string | string[]>, headers: HeadersInit = {}) {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) {
      for (const item of Array.isArray(v) ? v : [v]) body.append(k, item);
    }
    return this.send(path, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body,
    });
  }

  /** Posts a form with the CSRF token of the page at `from`. */
  async submit(from: string, action: string, form: Record<string, string | string[]>) {
    const page = await this.get(from);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.html)?.[1];
    if (!csrf) throw new Error(`no CSRF field on ${from} (${page.status})`);
    return this.post(action, { _csrf: csrf, ...form });
  }

  async signIn(token: string): Promise<Page> {
    const form = await this.get("/ui/login");
    const csrf = /name="_login_csrf" value="([^"]+)"/.exec(form.html)![1];
    return this.post("/ui/login", { _login_csrf: csrf, token, next: "/ui/" });
  }
}

export function textOf(html: string): string {
  return html.replace(/<(script|style)[\s\S]*?<\/\1>/g, " ").replace(/<[^>]+>/g, " ")
    .replace(/&amp;/g, "&").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'").replace(/\s+/g, " ").trim();
}

export interface Harness {
  deps: TestDeps;
  app: Awaited<ReturnType<typeof createApp>>;
  /** The inventory API with the superuser token. */
  api(
    method: string,
    path: string,
    body?: unknown,
    token?: string,
    // deno-lint-ignore no-explicit-any
  ): Promise<{ status: number; body: any }>;
  /** A token with these permissions (v1 unless `version: 2`), returned as typed in the form. */
  token(
    options: {
      permissions?: string[];
      write_enabled?: boolean;
      is_superuser?: boolean;
      version?: 1 | 2;
    },
  ): Promise<{ id: number; value: string }>;
  client(): Client;
  close(): void;
}

export async function consoleHarness(
  env: Record<string, string> = {},
  fetchOverride?: typeof fetch,
  overrides: TestOverrides = {},
): Promise<Harness> {
  let app: Awaited<ReturnType<typeof createApp>> | null = null;
  const inProcess: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    return Promise.resolve(app!.fetch(request, { remoteAddr: { hostname: "127.0.0.1" } }));
  };
  const deps = await testDeps(
    { INVENTORY_BOOTSTRAP_TOKEN: ROOT, SERVICE_ALLOW_LOOPBACK_TARGETS: "true", ...env },
    { fetch: fetchOverride ?? inProcess, ...overrides },
  );
  app = await createApp(deps);
  const built = app;
  const api: Harness["api"] = async (method, path, body, token = ROOT) => {
    const res = await built.request(ORIGIN + path, {
      method,
      headers: {
        authorization: token.startsWith("nbt_") ? `Bearer ${token}` : `Token ${token}`,
        "content-type": "application/json",
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  return {
    deps,
    app: built,
    api,
    async token(options) {
      const r = await api("POST", "/api/users/tokens/", {
        version: options.version ?? 1,
        write_enabled: options.write_enabled ?? true,
        is_superuser: options.is_superuser ?? false,
        permissions: options.permissions ?? [],
      });
      if (r.status !== 201) throw new Error(JSON.stringify(r.body));
      const value = options.version === 2
        ? String(r.body.header).replace(/^Bearer /, "")
        : String(r.body.token);
      return { id: r.body.id, value };
    },
    client: () => new Client(built),
    close: () => deps.kv.close(),
  };
}

/** Wires the backend endpoint (pointing at this app) so console backend calls work. */
export async function wireBackend(h: Harness): Promise<void> {
  const r = await h.api("POST", "/api/plugins/service/endpoints/backend/", {
    name: "self",
    domain: "console.test",
    port: 80,
    use_https: false,
  });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
}

/**
 * Wires the plugin to this very app (backend, inventory, and its hypervisor mock with writes
 * allowed) and runs a full sync in process: the state the inventory and VM pages need.
 */
export async function wireAndSync(h: Harness, encryptionKey: string): Promise<void> {
  const here = { domain: "console.test", port: 80, use_https: false };
  const must = async (path: string, body: unknown) => {
    const r = await h.api("POST", `/api/plugins/service/${path}`, body);
    if (r.status !== 201) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  await h.api("PATCH", "/api/plugins/service/settings/", { encryption_key: encryptionKey });
  const backend = await must("endpoints/backend/", { name: "self", ...here });
  await must("endpoints/inventory/", { name: "self", ...here, token_version: "v1", token: 1 });
  await must("endpoints/hypervisor/", {
    name: "lab",
    ...here,
    username: h.deps.config.hypervisor.mockUser,
    password: h.deps.config.hypervisor.mockPassword,
    allow_writes: true,
  });
  const sync = await h.app.request(`${ORIGIN}/full-update`, {
    headers: { "x-service-api-key": backend.token },
  });
  const result = await sync.json();
  if (result.ok !== true) throw new Error(`full update: ${JSON.stringify(result).slice(0, 500)}`);
}
