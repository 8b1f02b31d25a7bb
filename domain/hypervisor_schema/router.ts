/**
 * One dispatcher for the whole schema: a path-template trie. Each segment is matched against
 * the literal children first, then the `{param}` child, so lookup cost depends on the depth of
 * the path, never on the number of paths the schema has.
 */
import type { HttpMethod, IndexedOperation, Operation, SchemaIndex } from "./schema.ts";

interface TrieNode {
  literal: Map<string, TrieNode>;
  /**
   * Parameter children. Normally one; a schema that names the parameter differently under
   * one parent (`{id}` here, `{name}` there) gets one child per name, tried in order.
   */
  params: Array<{ name: string; node: TrieNode }>;
  /** Set on nodes that are the end of a templated path with operations. */
  route?: Route;
}

export interface Route {
  /** Templated path, e.g. `/nodes/{node}/qemu/{vmid}`. */
  template: string;
  operations: Partial<Record<HttpMethod, Operation>>;
}

export interface RouteMatch {
  route: Route;
  /** Decoded path parameters by name. */
  params: Record<string, string>;
}

/** Parameters that may contain `/` when they end a path (Proxmox volume ids). */
const GREEDY_PARAMS: ReadonlySet<string> = new Set(["volume"]);

function newNode(): TrieNode {
  return { literal: new Map(), params: [] };
}

/** Split `/a/b/c` into segments; tolerates one trailing slash. */
export function splitPath(path: string): string[] {
  let p = path;
  if (p.length > 1 && p.endsWith("/")) p = p.slice(0, -1);
  if (p === "/" || p === "") return [];
  return p.slice(p.startsWith("/") ? 1 : 0).split("/");
}

export class Router {
  readonly #root = newNode();
  readonly routes: Route[] = [];

  constructor(operations: Iterable<IndexedOperation>) {
    for (const op of operations) this.add(op.path, op.method, op.operation);
  }

  static fromIndex(index: SchemaIndex): Router {
    return new Router(index.operations);
  }

  add(template: string, method: HttpMethod, operation: Operation): void {
    let node = this.#root;
    for (const seg of splitPath(template)) {
      const m = /^\{([^}]+)\}$/.exec(seg);
      if (m) {
        let child = node.params.find((p) => p.name === m[1]);
        if (!child) node.params.push(child = { name: m[1], node: newNode() });
        node = child.node;
      } else {
        let next = node.literal.get(seg);
        if (!next) node.literal.set(seg, next = newNode());
        node = next;
      }
    }
    if (!node.route) {
      node.route = { template, operations: {} };
      this.routes.push(node.route);
    }
    node.route.operations[method] = operation;
  }

  /**
   * Match a concrete (still percent-encoded) pathname. Literal children win over parameters;
   * when a literal branch dead-ends the parameter branch is tried (bounded backtracking).
   */
  match(pathname: string): RouteMatch | undefined {
    const segs = splitPath(pathname);
    const values: string[] = [];
    const found = this.#walk(this.#root, segs, 0, values);
    if (!found) return undefined;
    const params: Record<string, string> = {};
    let i = 0;
    for (const m of found.template.matchAll(/\{([^}]+)\}/g)) params[m[1]] = values[i++];
    return { route: found, params };
  }

  #walk(node: TrieNode, segs: string[], at: number, values: string[]): Route | undefined {
    if (at === segs.length) return node.route;
    const raw = segs[at];
    if (raw === "") return undefined;
    const lit = node.literal.get(raw);
    if (lit) {
      const r = this.#walk(lit, segs, at + 1, values);
      if (r) return r;
    }
    if (node.params.length) {
      let value: string;
      try {
        value = decodeURIComponent(raw);
      } catch {
        return undefined;
      }
      for (const p of node.params) {
        values.push(value);
        const r = this.#walk(p.node, segs, at + 1, values);
        if (r) return r;
        values.pop();
      }
      // A volume id (`local:backup/vzdump-...`) sent unencoded, as clients that join path
      // segments do: the last parameter of a leaf path takes the rest of the path.
      for (const p of node.params) {
        const leaf = p.node.route && !p.node.literal.size && !p.node.params.length;
        if (!leaf || !GREEDY_PARAMS.has(p.name) || at === segs.length - 1) continue;
        try {
          values.push(segs.slice(at).map((x) => decodeURIComponent(x)).join("/"));
        } catch {
          return undefined;
        }
        return p.node.route;
      }
    }
    return undefined;
  }
}
