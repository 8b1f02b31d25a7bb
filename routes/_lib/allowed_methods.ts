/**
 * Which methods a router serves at a path, from its own route table: the `Allow` header of a 405
 * (RFC 9110 §15.5.6). Middleware (method "ALL") does not count; routes added later (other
 * features) are seen because the table is read when asked.
 */
export interface RouteEntry {
  method: string;
  path: string;
}

interface Compiled {
  method: string;
  pattern: RegExp;
}

/** A route table's patterns, grouped by their first path segment (null: a parameter). */
interface Table {
  size: number;
  bySegment: Map<string, Compiled[]>;
  anySegment: Compiled[];
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

function firstSegment(path: string): string {
  const end = path.indexOf("/", 1);
  return end < 0 ? path.slice(1) : path.slice(1, end);
}

/**
 * Compiled once per table (and again when it grew): every unknown path used to build one
 * RegExp per route, which made an authenticated 404 sixteen times dearer than /health.
 */
const tables = new WeakMap<readonly RouteEntry[], Table>();

function tableOf(routes: readonly RouteEntry[]): Table {
  const known = tables.get(routes);
  if (known && known.size === routes.length) return known;
  const table: Table = { size: routes.length, bySegment: new Map(), anySegment: [] };
  for (const route of routes) {
    if (route.method === "ALL" || route.path.endsWith("*")) continue;
    const compiled = { method: route.method.toUpperCase(), pattern: pattern(route.path) };
    const first = firstSegment(route.path);
    if (first.startsWith(":") || first.includes("*")) table.anySegment.push(compiled);
    else {
      const list = table.bySegment.get(first) ?? [];
      list.push(compiled);
      table.bySegment.set(first, list);
    }
  }
  tables.set(routes, table);
  return table;
}

export function allowedMethods(routes: readonly RouteEntry[], path: string): string[] {
  const table = tableOf(routes);
  const named = table.bySegment.get(firstSegment(path));
  // The common 404: no route starts with this segment, none with a parameter. Answered without
  // building anything (an unknown path costs what /health costs: issue 25's ratio, bench/).
  if (!named && table.anySegment.length === 0) return [];
  const methods = new Set<string>();
  for (const list of [named ?? [], table.anySegment]) {
    for (const { method, pattern } of list) if (pattern.test(path)) methods.add(method);
  }
  if (methods.has("GET")) methods.add("HEAD");
  return [...methods].sort();
}
