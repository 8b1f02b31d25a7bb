/**
 * Which methods a router serves at a path, from its own route table: the `Allow` header of a 405
 * (RFC 9110 §15.5.6). Middleware (method "ALL") does not count; routes added later (other
 * features) are seen because the table is read when asked.
 */
export interface RouteEntry {
  method: string;
  path: string;
}

function pattern(path: string): RegExp {
  const source = path.split("/").map((part) => {
    if (part === "*") return ".*";
    if (part.startsWith(":")) {
      const custom = part.match(/^:[^{]+\{(.+)\}\??$/);
      return custom ? `(?:${custom[1]})` : "[^/]+";
    }
    return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }).join("/");
  return new RegExp(`^${source}/?$`);
}

export function allowedMethods(routes: readonly RouteEntry[], path: string): string[] {
  const methods = new Set<string>();
  for (const route of routes) {
    if (route.method === "ALL" || route.path.endsWith("*")) continue;
    if (pattern(route.path).test(path)) methods.add(route.method.toUpperCase());
  }
  if (methods.has("GET")) methods.add("HEAD");
  return [...methods].sort();
}
