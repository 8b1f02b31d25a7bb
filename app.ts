import { AsyncLocalStorage } from "node:async_hooks";
import { Hono } from "hono";
import { clientIp } from "./routes/_lib/client_ip.ts";
import type { Surface } from "./config.ts";
import type { AppDeps, RouteNote, ServeEnv } from "./routes/_lib/deps.ts";
import { UNMATCHED } from "./routes/_lib/route_pattern.ts";
import { noopMetrics } from "./infra/metrics.ts";

export type { AppDeps, ServeEnv };

export type SurfaceApp = {
  fetch: (request: Request, env?: ServeEnv) => Response | Promise<Response>;
};

/**
 * Where each surface answers when they share one port (docs/api-behaviour.md, Mounts). The backend
 * owns everything no other surface claims, so unknown paths are authenticated, never leaked.
 */
/** A mounted sub-app: one of the configured surfaces, or the web console over the inventory. */
type Mount = Surface | "console" | "metrics";

const PREFIXES: ReadonlyArray<[prefix: string, surface: Mount, strip: boolean]> = [
  // Process-wide, whichever surfaces are served; absent when METRICS_ACCESS=off.
  ["/metrics", "metrics", false],
  // The web console: outside the backend key's authentication (people sign in with an
  // inventory token); it is served wherever the inventory surface is.
  ["/ui", "console", false],
  ["/api2/", "hypervisor", false],
  ["/pve", "hypervisor", false],
  ["/api", "plugin", false],
  ["/host-agent", "host-agent", true],
];

function claims(pathname: string, prefix: string): boolean {
  if (prefix.endsWith("/")) return pathname.startsWith(prefix);
  return pathname === prefix || pathname.startsWith(prefix + "/");
}

export async function createSurfaces(deps: AppDeps): Promise<Partial<Record<Mount, SurfaceApp>>> {
  const enabled = deps.config.surfaces;
  const apps: Partial<Record<Mount, SurfaceApp>> = {};
  if (deps.config.metrics.access !== "off") {
    apps.metrics = (await import("./routes/metrics/mod.ts")).createMetricsApp(deps);
  }
  // Loaded on demand: a process serving one surface never loads (or starts) the others.
  if (enabled.has("backend")) {
    apps.backend = await (await import("./routes/backend/mod.ts")).createBackendApp(deps);
  }
  if (enabled.has("plugin")) {
    apps.plugin = await (await import("./routes/inventory/mod.ts")).createInventoryApp(deps);
  }
  if (apps.plugin) {
    apps.console = (await import("./routes/ui/mod.ts")).createConsoleApp(deps, {
      inventory: apps.plugin,
    });
  }
  if (enabled.has("hypervisor")) {
    apps.hypervisor = await (await import("./routes/hypervisor/mod.ts")).createHypervisorApp(deps);
  }
  if (enabled.has("host-agent")) {
    apps["host-agent"] = await (await import("./routes/host_agent/mod.ts")).createHostAgentApp(
      deps,
    );
  }
  return apps;
}

export async function createApp(deps: AppDeps): Promise<Hono<{ Bindings: ServeEnv }>> {
  const surfaces = await createSurfaces(deps);
  const app = new Hono<{ Bindings: ServeEnv }>();
  const served = Object.keys(surfaces).filter((k) =>
    k !== "console" && k !== "metrics"
  ) as Surface[];
  const metrics = deps.metrics ?? noopMetrics;
  const onlyOne = served.length === 1;
  // The client behind each outside request, for the whole of its handling: a request the app
  // then sends to itself in-process (clients/outbound.ts) runs inside that context, so it
  // carries the originating client as `origin` (failed logins count against it: SECURITY.md).
  const origins = new AsyncLocalStorage<string>();
  app.all("*", async (c) => {
    const given: ServeEnv = c.env ?? {};
    // The answering surface names its route pattern here (routes/_lib/route_pattern.ts).
    const note: RouteNote = {};
    // Deno's handler info keeps remoteAddr behind a getter (a spread would lose it): copied by name.
    const env: ServeEnv = given.internal
      ? { ...given, origin: given.origin ?? origins.getStore(), route: note }
      : { remoteAddr: given.remoteAddr, route: note };
    const client = env.internal ? env.origin : clientIp(c, deps.config.trustedProxies);
    let mount = "none";
    const route = () => {
      const url = new URL(c.req.url);
      for (const [prefix, surface, strip] of PREFIXES) {
        const target = surfaces[surface];
        if (!target || !claims(url.pathname, prefix)) continue;
        mount = surface;
        if (!strip) return target.fetch(c.req.raw, env);
        url.pathname = url.pathname.slice(prefix.length) || "/";
        return target.fetch(new Request(url, c.req.raw), env);
      }
      // A surface served alone answers at "/" (e.g. the host-agent mock as a stand-alone agent).
      const fallback = surfaces.backend ?? (onlyOne ? surfaces[served[0]] : undefined);
      mount = surfaces.backend ? "backend" : onlyOne ? served[0] : "none";
      if (fallback) return fallback.fetch(c.req.raw, env);
      return c.json({ detail: "Not Found" }, 404);
    };
    const started = performance.now();
    let status = 500;
    try {
      const response = await (client === undefined ? route() : origins.run(client, route));
      status = response.status;
      return response;
    } finally {
      // Counted by route PATTERN, never the raw path: random paths add no series (docs/metrics.md).
      metrics.request(
        { surface: mount, method: c.req.method, route: note.pattern ?? UNMATCHED, status },
        (performance.now() - started) / 1000,
      );
    }
  });
  return app;
}
