import { Hono } from "hono";
import type { AppDeps, ServeEnv } from "../_lib/deps.ts";

/** Host-agent mock (micro-VM provisioning without a real host); mounted at /host-agent. */
// deno-lint-ignore require-await
export async function createHostAgentApp(_deps: AppDeps): Promise<Hono<{ Bindings: ServeEnv }>> {
  const app = new Hono<{ Bindings: ServeEnv }>();
  app.get("/health", (c) => c.json({ ok: true, status: "ready" }));
  return app;
}
