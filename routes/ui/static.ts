/**
 * The console's own assets, served from files in this directory (no build step, no CDN):
 * /ui/static/console.css, /ui/static/console.js and the icon.
 */
import { Hono } from "hono";
import type { ServeEnv } from "../_lib/deps.ts";
import { FAVICON_SVG } from "../_lib/favicon.ts";
import { readAsset } from "../_lib/docs.ts";

/** The terminal emulator, read from its npm packages (no CDN). */
const PACKAGED: Record<string, ["xterm.js" | "xterm.css" | "addon-fit.js", string]> = {
  "xterm.js": ["xterm.js", "text/javascript; charset=utf-8"],
  "xterm.css": ["xterm.css", "text/css; charset=utf-8"],
  "addon-fit.js": ["addon-fit.js", "text/javascript; charset=utf-8"],
};

const FILES: Record<string, string> = {
  "console.css": "text/css; charset=utf-8",
  "console.js": "text/javascript; charset=utf-8",
  "terminal.js": "text/javascript; charset=utf-8",
};

export function staticRoutes(): Hono<{ Bindings: ServeEnv }> {
  const app = new Hono<{ Bindings: ServeEnv }>();
  const cache = new Map<string, Promise<Uint8Array>>();
  const load = (name: string) => {
    let pending = cache.get(name);
    if (!pending) {
      pending = Deno.readFile(new URL(`./static/${name}`, import.meta.url));
      pending.catch(() => cache.delete(name));
      cache.set(name, pending);
    }
    return pending;
  };
  const icon = (): Response =>
    new Response(FAVICON_SVG, {
      headers: { "content-type": "image/svg+xml", "cache-control": "public, max-age=86400" },
    });
  app.get("/ui/favicon.svg", icon);
  app.get("/ui/static/favicon.svg", icon);
  app.get("/ui/static/:name", async (c) => {
    const name = c.req.param("name");
    const packaged = PACKAGED[name];
    if (packaged) {
      return new Response(await readAsset(packaged[0]) as BodyInit, {
        headers: { "content-type": packaged[1], "cache-control": "public, max-age=300" },
      });
    }
    const type = FILES[name];
    if (!type) return c.text("Not found", 404);
    return new Response(await load(name) as BodyInit, {
      headers: { "content-type": type, "cache-control": "public, max-age=300" },
    });
  });
  return app;
}
