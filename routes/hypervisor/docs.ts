/**
 * Docs of the hypervisor surface, served with no internet: `/pve/docs` (Scalar), `/pve/redoc`
 * (Redoc), their scripts under `/pve/static/`, and `/pve/openapi.json`, the OpenAPI 3.1 document
 * generated from the loaded schema (`?version=<label>` for another stored version,
 * `?mount=api2` for the `/api2/json` wire format). Not rate limited: the docs pages read it.
 */
import { Hono } from "hono";
import { docsRoutes } from "../_lib/docs.ts";
import { OpenApiCache, type OpenApiFlavour } from "../../domain/hypervisor_schema/openapi.ts";
import { BUILTIN_VERSIONS, type SchemaCatalog } from "./versions.ts";
import type { ServeEnv } from "../_lib/deps.ts";

export function parseMount(value: string | undefined): OpenApiFlavour | null {
  if (value === undefined || value === "" || value === "pve" || value === "/pve") return "pve";
  if (value === "api2" || value === "api2/json" || value === "/api2/json") return "api2";
  return null;
}

/** The OpenAPI JSON response for a request's `version` and `mount` query (400/404 otherwise). */
export async function openApiResponse(
  catalog: SchemaCatalog,
  cache: OpenApiCache,
  version: string | undefined,
  mount: string | undefined,
): Promise<Response> {
  const flavour = parseMount(mount);
  if (!flavour) {
    return Response.json({
      detail: "Invalid mount.",
      errors: [{ field: "mount", message: "expected pve or api2" }],
    }, { status: 400 });
  }
  let resolved;
  try {
    resolved = await catalog.resolve(version);
  } catch {
    return Response.json({ detail: `Schema version ${version} cannot be loaded.` }, {
      status: 500,
    });
  }
  if (!resolved) {
    return Response.json({ detail: `Unknown schema version ${version}.` }, { status: 404 });
  }
  const { json } = cache.get(resolved.tree, { flavour, version: resolved.version });
  return new Response(json, {
    headers: { "content-type": "application/json; charset=utf-8" },
  });
}

/** What `info.version` says to a caller without a hypervisor login. */
export const UNPUBLISHED_VERSION = "unspecified";

/**
 * The docs pages and `/pve/openapi.json` stay public (the pages load the document without a
 * login), but an anonymous caller is not told which schema version the server runs: the
 * default document says `info.version: "unspecified"`, and only the built-in labels may be
 * asked for by name (stored versions answer 404 as unknown ones do).
 */
export function hypervisorDocsRoutes(
  catalog: SchemaCatalog,
  cache: OpenApiCache = new OpenApiCache(),
  loggedIn?: (request: Request) => boolean | Promise<boolean>,
): Hono<{ Bindings: ServeEnv }> {
  const app = new Hono<{ Bindings: ServeEnv }>();
  app.get("/pve/openapi.json", async (c) => {
    const version = c.req.query("version");
    const mount = c.req.query("mount");
    if (await loggedIn?.(c.req.raw)) return openApiResponse(catalog, cache, version, mount);
    if (version !== undefined && !(BUILTIN_VERSIONS as readonly string[]).includes(version)) {
      return Response.json({ detail: `Unknown schema version ${version}.` }, { status: 404 });
    }
    const res = await openApiResponse(catalog, cache, version, mount);
    if (!res.ok || version !== undefined) return res;
    const doc = await res.json();
    const shown = String(doc.info?.version ?? "");
    doc.info = {
      ...doc.info,
      title: String(doc.info?.title ?? "").replace(` ${shown} `, " "),
      version: UNPUBLISHED_VERSION,
    };
    return Response.json(doc);
  });
  app.route(
    "/",
    docsRoutes({
      title: "Hypervisor API (Proxmox VE)",
      specUrl: "/pve/openapi.json",
      docsPath: "/pve/docs",
      redocPath: "/pve/redoc",
      staticBase: "/pve/static",
    }),
  );
  return app;
}
