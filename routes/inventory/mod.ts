import { Hono } from "hono";
import type { AppDeps, ServeEnv } from "../../app.ts";

/** The inventory surface: NetBox-compatible core objects and the plugin REST API under /api. */
// deno-lint-ignore require-await
export async function createInventoryApp(_deps: AppDeps): Promise<Hono<{ Bindings: ServeEnv }>> {
  const app = new Hono<{ Bindings: ServeEnv }>();
  app.all("*", (c) => c.json({ detail: "Not found." }, 404));
  return app;
}
