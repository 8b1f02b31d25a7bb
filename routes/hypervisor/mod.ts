import { Hono } from "hono";
import type { AppDeps, ServeEnv } from "../../app.ts";

/** The hypervisor API server: /pve (bare payloads) and /api2/json (Proxmox wire format). */
// deno-lint-ignore require-await
export async function createHypervisorApp(_deps: AppDeps): Promise<Hono<{ Bindings: ServeEnv }>> {
  const app = new Hono<{ Bindings: ServeEnv }>();
  app.all("*", (c) => c.json({ detail: "Not implemented" }, 501));
  return app;
}
