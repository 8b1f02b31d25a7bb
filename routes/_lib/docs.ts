import { Hono } from "hono";
import { Scalar } from "@scalar/hono-api-reference";

/**
 * Docs pages that work with no internet: the browser bundles of Scalar and Redoc are read
 * from their npm packages and served by this app under `<base>/static/`.
 */

const ASSETS = {
  "scalar.js": { specifier: "@scalar/api-reference", path: "dist/browser/standalone.js" },
  "redoc.js": { specifier: "redoc", path: "bundles/redoc.standalone.js" },
  // The browser terminal's emulator (routes/ui/terminal.tsx).
  "xterm.js": { specifier: "@xterm/xterm", path: "lib/xterm.js" },
  "xterm.css": { specifier: "@xterm/xterm", path: "css/xterm.css" },
  "addon-fit.js": { specifier: "@xterm/addon-fit", path: "lib/addon-fit.js" },
} as const;

/**
 * Redoc's sidebar footer shows a logo fetched from its CDN on every page (no option turns it
 * off): offline that is a failed request and a console error. The bundle is served with that URL
 * replaced by an empty inline image, so the page makes no request outside this app.
 */
const REDOC_CDN_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg";
const EMPTY_IMAGE = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E";

function offline(name: AssetName, bytes: Uint8Array): Uint8Array {
  if (name !== "redoc.js") return bytes;
  const text = new TextDecoder().decode(bytes);
  return new TextEncoder().encode(text.replaceAll(REDOC_CDN_LOGO, EMPTY_IMAGE));
}

export type AssetName = keyof typeof ASSETS;
const cache = new Map<AssetName, Promise<Uint8Array>>();

function packageRoot(specifier: string): URL {
  // Resolves to <root>/node_modules/.../<pkg>/<main file>; walk up to the package folder.
  const main = new URL(import.meta.resolve(specifier));
  const marker = `/node_modules/${specifier}/`;
  const at = main.pathname.lastIndexOf(marker);
  if (at < 0) throw new Error(`cannot locate npm package ${specifier}`);
  return new URL(`file://${main.pathname.slice(0, at + marker.length)}`);
}

export function readAsset(name: AssetName): Promise<Uint8Array> {
  let pending = cache.get(name);
  if (!pending) {
    const { specifier, path } = ASSETS[name];
    pending = Deno.readFile(new URL(path, packageRoot(specifier))).then((b) => offline(name, b));
    pending.catch(() => cache.delete(name));
    cache.set(name, pending);
  }
  return pending;
}

export function redocPage(title: string, specUrl: string, scriptUrl: string): string {
  const esc = (s: string) => s.replace(/[&<>"]/g, (ch) => `&#${ch.charCodeAt(0)};`);
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${esc(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><redoc spec-url="${esc(specUrl)}"></redoc>
<script src="${esc(scriptUrl)}"></script></body></html>`;
}

/**
 * Mounts `<docsPath>` (Scalar), optionally `<redocPath>` (Redoc) and the static assets under
 * `<staticBase>` on the given app. The paths are absolute within that app.
 */
export function docsRoutes(options: {
  title: string;
  specUrl: string;
  docsPath: string;
  redocPath?: string;
  staticBase: string;
  /** How the pages refer to `staticBase` (a relative form for surfaces mounted under a prefix). */
  assetUrlBase?: string;
}): Hono {
  const app = new Hono();
  const { title, specUrl, docsPath, redocPath, staticBase } = options;
  const assetUrlBase = options.assetUrlBase ?? staticBase;
  app.get(
    docsPath,
    Scalar({
      url: specUrl,
      pageTitle: title,
      cdn: `${assetUrlBase}/scalar.js`,
      withDefaultFonts: false,
      // Nothing that phones home: this page must work, and stay quiet, with no internet.
      telemetry: false,
      showDeveloperTools: "never",
      agent: { disabled: true },
      mcp: { disabled: true },
    }),
  );
  if (redocPath) {
    app.get(redocPath, (c) => c.html(redocPage(title, specUrl, `${assetUrlBase}/redoc.js`)));
  }
  app.get(`${staticBase}/:asset`, async (c) => {
    const name = c.req.param("asset");
    // Own properties only: "constructor" or "toString" are not assets.
    if (
      !Object.hasOwn(ASSETS, name) || !name.endsWith(".js") || name === "xterm.js" ||
      name === "addon-fit.js"
    ) return c.json({ detail: "Not Found" }, 404);
    const body = await readAsset(name as AssetName);
    return c.body(body as Uint8Array<ArrayBuffer>, 200, {
      "content-type": "text/javascript; charset=utf-8",
      "cache-control": "public, max-age=86400",
    });
  });
  return app;
}
