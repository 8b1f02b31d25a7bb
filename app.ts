import { Hono } from "hono";
import type { Config, Surface } from "./config.ts";
import type { Logger } from "./domain/logger.ts";
import { createBackendApp } from "./routes/backend/mod.ts";
import { createInventoryApp } from "./routes/inventory/mod.ts";
import { createHypervisorApp } from "./routes/hypervisor/mod.ts";
import { createHostAgentApp } from "./routes/host_agent/mod.ts";

/** Everything a surface may use. Built once in main.ts (or a test) and passed down. */
export interface AppDeps {
  config: Config;
  kv: Deno.Kv;
  /** Outbound HTTP for clients/*; tests inject one that reaches an in-process app. */
  fetch: typeof fetch;
  /** Epoch milliseconds. */
  now: () => number;
  logger: Logger;
}

/** Connection facts a surface needs from the server; Deno.serve's handler info fits. */
export interface ServeEnv {
  remoteAddr?: { hostname: string; port?: number };
}

export type SurfaceApp = {
  fetch: (request: Request, env?: ServeEnv) => Response | Promise<Response>;
};

/**
 * Where each surface answers when they share one port (spec 0 §0). The backend owns
 * everything no other surface claims, so unknown paths are authenticated, never leaked.
 */
const PREFIXES: ReadonlyArray<[prefix: string, surface: Surface, strip: boolean]> = [
  ["/api2/", "hypervisor", false],
  ["/pve", "hypervisor", false],
  ["/api", "plugin", false],
  ["/host-agent", "host-agent", true],
];

function claims(pathname: string, prefix: string): boolean {
  if (prefix.endsWith("/")) return pathname.startsWith(prefix);
  return pathname === prefix || pathname.startsWith(prefix + "/");
}

export async function createSurfaces(deps: AppDeps): Promise<Partial<Record<Surface, SurfaceApp>>> {
  const enabled = deps.config.surfaces;
  const apps: Partial<Record<Surface, SurfaceApp>> = {};
  if (enabled.has("backend")) apps.backend = await createBackendApp(deps);
  if (enabled.has("plugin")) apps.plugin = await createInventoryApp(deps);
  if (enabled.has("hypervisor")) apps.hypervisor = await createHypervisorApp(deps);
  if (enabled.has("host-agent")) apps["host-agent"] = await createHostAgentApp(deps);
  return apps;
}

export async function createApp(deps: AppDeps): Promise<Hono<{ Bindings: ServeEnv }>> {
  const surfaces = await createSurfaces(deps);
  const app = new Hono<{ Bindings: ServeEnv }>();
  const onlyOne = Object.keys(surfaces).length === 1;
  app.all("*", (c) => {
    const url = new URL(c.req.url);
    for (const [prefix, surface, strip] of PREFIXES) {
      const target = surfaces[surface];
      if (!target || !claims(url.pathname, prefix)) continue;
      if (!strip) return target.fetch(c.req.raw, c.env);
      url.pathname = url.pathname.slice(prefix.length) || "/";
      return target.fetch(new Request(url, c.req.raw), c.env);
    }
    // A surface served alone answers at "/" (e.g. the host-agent mock as a stand-alone agent).
    const fallback = surfaces.backend ?? (onlyOne ? Object.values(surfaces)[0] : undefined);
    if (fallback) return fallback.fetch(c.req.raw, c.env);
    return c.json({ detail: "Not Found" }, 404);
  });
  return app;
}
