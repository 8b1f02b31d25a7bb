/**
 * The hypervisor mock engine: one dispatcher over the loaded schema, a stateful cluster
 * behind it, and the same answers for both mounts (routes/hypervisor formats them).
 *
 * Request flow: settle due tasks → route (trie) → 501 if the schema has no such operation →
 * authenticate (401) → validate every parameter (400) → check the addressed resources exist
 * (404) → handler: a specific one (guests, storage, tasks, users, pools, ...), else generic
 * collection behaviour, else schema-shaped sample data → page arrays with limit/start.
 */
import {
  type HttpMethod,
  indexSchema,
  type Operation,
  type SchemaIndex,
  type SchemaTree,
} from "../domain/hypervisor_schema/schema.ts";
import {
  type Route,
  type RouteMatch,
  Router,
  splitPath,
} from "../domain/hypervisor_schema/router.ts";
import { type RawParams, validateParams } from "../domain/hypervisor_schema/validate.ts";
import { buildSeed, type SeedOptions } from "./seed.ts";
import { type MockState } from "./state.ts";
import { TaskRunner } from "./tasks.ts";
import { authenticate, AuthError, type Principal, Sessions } from "./auth.ts";
import { sample } from "./sample.ts";
import {
  firstNode,
  type HandlerContext,
  HANDLERS,
  looksLikeTask,
  startTask,
} from "./handlers/mod.ts";
import { missing, MockError } from "./errors.ts";

export { failed, fieldError, missing, MockError } from "./errors.ts";
import { GenericCollections } from "./generic.ts";
import type {
  EngineFailure,
  EngineRequest,
  EngineResult,
  EngineSuccess,
} from "../domain/hypervisor_schema/exchange.ts";

export type { EngineFailure, EngineRequest, EngineResult, EngineSuccess };

export interface Authorized {
  ok: true;
  method: HttpMethod;
  match: RouteMatch;
  op: Operation;
  principal: Principal | undefined;
  nowMs: number;
}

export interface EngineOptions {
  schema: SchemaTree;
  seed: SeedOptions;
  /** Epoch milliseconds. */
  now: () => number;
  /** How long a task runs before it finishes (ms). Default 1000. */
  taskDelayMs?: number;
  /** The PVE version GET /version reports (`9.2`, `9.1.11`); default 9.2. */
  version?: string;
  /** Finished tasks kept per node (older ones are dropped). Default 10,000. */
  maxTasksPerNode?: number;
}

/** Operations that need no authentication besides the schema's `user: "world"` ones. */
/**
 * The login itself is public (`user: "world"` in Proxmox's schema; named here for schemas that
 * lack permissions). Everything else, `GET /version` included, needs a ticket or a token.
 */
const PUBLIC_OPERATIONS = new Set(["POST /access/ticket", "GET /access/ticket"]);

export class HypervisorEngine {
  readonly schema: SchemaTree;
  readonly index: SchemaIndex;
  readonly router: Router;
  readonly sessions: Sessions;
  readonly tasks: TaskRunner;
  readonly generic: GenericCollections;
  readonly now: () => number;
  /** GET /version's answer. */
  readonly versionInfo: { version: string; release: string; repoid: string };
  #state: MockState;
  #version = 0;
  readonly #seed: SeedOptions;
  /** Child segment names per template (index endpoints list them). */
  readonly #children = new Map<string, string[]>();

  constructor(opts: EngineOptions) {
    this.schema = opts.schema;
    this.index = indexSchema(opts.schema);
    this.router = Router.fromIndex(this.index);
    this.now = opts.now;
    const v = opts.version ?? "9.2";
    const [major, minor = "0", patch = "0"] = v.split(".");
    this.versionInfo = {
      version: `${major}.${minor}.${patch}`,
      release: `${major}.${minor}`,
      repoid: "b1d9e5c3",
    };
    this.#seed = opts.seed;
    this.#state = buildSeed(opts.seed);
    this.sessions = new Sessions(opts.now);
    this.tasks = new TaskRunner(() => this.#state, opts.taskDelayMs ?? 1000, opts.maxTasksPerNode);
    this.generic = new GenericCollections(this.router, new Set(Object.keys(SPECIAL_ITEM_PARAMS)));
    for (const op of this.index.operations) {
      const segs = splitPath(op.path);
      if (!segs.length) continue;
      const parent = "/" + segs.slice(0, -1).join("/");
      const list = this.#children.get(parent === "/" ? "" : parent) ?? [];
      const last = segs[segs.length - 1];
      if (!last.startsWith("{") && !list.includes(last)) list.push(last);
      this.#children.set(parent === "/" ? "" : parent, list);
    }
  }

  get state(): MockState {
    return this.#state;
  }

  /** Restore the seed (POST /pve/mock/reset). Tickets stay valid if their user still exists. */
  reset(): void {
    this.#version++;
    this.tasks.reset();
    this.#state = buildSeed(this.#seed);
  }

  get operationCount(): number {
    return this.index.operations.length;
  }

  /**
   * Changes whenever state may have changed (writes, finished tasks, reset) and every second
   * (live figures such as uptime move). Equal tokens mean a GET answers the same: the wire layer
   * caches serialised GET bodies under it.
   */
  cacheToken(): string {
    return `${this.#version}:${Math.floor(this.now() / 1000)}`;
  }

  /**
   * The first half of handle(): settle tasks, route, authenticate. A failure (501, 401) or the
   * routing facts. Cheap; the wire layer calls it before serving a cached GET body.
   */
  authorize(req: EngineRequest): EngineFailure | Authorized {
    const nowMs = this.now();
    if (this.tasks.settle(nowMs) > 0) this.#version++;
    const method = req.method.toUpperCase() as HttpMethod;
    if (method !== "GET") this.#version++;
    const match = this.router.match(req.path);
    const op = match?.route.operations[method];
    if (!match || !op) {
      return fail(
        new MockError(501, `Method '${method} ${normalisePath(req.path)}' not implemented`),
      );
    }
    let principal: Principal | undefined;
    const key = `${method} ${match.route.template}`;
    const world = (op.permissions as { user?: string } | undefined)?.user === "world";
    if (!PUBLIC_OPERATIONS.has(key) && !world) {
      try {
        principal = authenticate(
          this.#state,
          this.sessions,
          req.credentials,
          method !== "GET",
          nowS(nowMs),
        );
      } catch (err) {
        if (err instanceof AuthError) return fail(new MockError(401, err.message));
        throw err;
      }
    }
    return { ok: true, method, match, op, principal, nowMs };
  }

  handle(req: EngineRequest): EngineResult {
    const pre = this.authorize(req);
    if (!pre.ok) return pre;
    const { method, match, op, principal, nowMs } = pre;
    try {
      const template = match.route.template;
      const key = `${method} ${template}`;
      const raw: RawParams = { ...req.params, ...match.params };
      const { values, errors } = validateParams(op, raw);
      if (errors.length) throw new MockError(400, "Parameter verification failed.", errors);
      const ctx: HandlerContext = {
        tasks: this.tasks,
        sessions: this.sessions,
        clock: this.now,
        versionInfo: this.versionInfo,
        state: this.#state,
        method,
        template,
        route: match.route,
        operation: op,
        path: match.params,
        values,
        principal,
        user: principal?.userid ?? "root@pam",
        nowMs,
        nowS: nowS(nowMs),
        task: undefined,
        files: req.files ?? {},
      };
      this.#checkExists(ctx);
      const handler = HANDLERS[key];
      let data: unknown;
      if (handler) data = handler(ctx);
      else if (this.generic.handles(method, template)) data = this.generic.handle(ctx);
      else data = this.#fallback(ctx);
      return this.#finish(ctx, data);
    } catch (err) {
      if (err instanceof MockError) return fail(err);
      throw err;
    }
  }

  #finish(ctx: HandlerContext, data: unknown): EngineSuccess {
    const result: EngineSuccess = {
      ok: true,
      status: 200,
      data,
      template: ctx.template,
      operation: ctx.operation,
      task: ctx.task,
    };
    if (Array.isArray(data) && ctx.method === "GET") {
      const props = ctx.operation.parameters?.properties ?? {};
      const start = Number(ctx.values.start ?? 0);
      const limitDefault = typeof props.limit?.default === "number" && props.limit.default > 0
        ? props.limit.default
        : undefined;
      const limit = ctx.values.limit !== undefined && Number(ctx.values.limit) > 0
        ? Number(ctx.values.limit)
        : limitDefault;
      result.total = data.length;
      if (start > 0 || limit !== undefined) {
        result.data = data.slice(start, limit !== undefined ? start + limit : undefined);
      }
    }
    return result;
  }

  /** Existence of every resource the path names (guest, storage, user, pool, records, ...). */
  #checkExists(ctx: HandlerContext): void {
    const p = ctx.values;
    const t = ctx.template;
    const state = ctx.state;
    if ("node" in ctx.path && t.startsWith("/nodes/{node}") && !state.nodes.has(String(p.node))) {
      throw missing(`hostname lookup '${p.node}' failed - no such cluster node`);
    }
    const guestMatch = /^\/nodes\/\{node\}\/(qemu|lxc)\/\{vmid\}/.exec(t);
    if (guestMatch) {
      const type = guestMatch[1];
      const g = state.guests.get(Number(p.vmid));
      if (!g || g.type !== type || g.node !== p.node) {
        const dir = type === "qemu" ? "qemu-server" : "lxc";
        throw missing(`Configuration file 'nodes/${p.node}/${dir}/${p.vmid}.conf' does not exist`);
      }
      if (/\/snapshot\/\{snapname\}/.test(t) && !g.snapshots.some((s) => s.name === p.snapname)) {
        throw missing(`snapshot '${p.snapname}' does not exist`);
      }
    }
    if ("storage" in ctx.path) {
      const s = state.storages.get(String(p.storage));
      if (!s) throw missing(`storage '${p.storage}' does not exist`);
      if (
        t.startsWith("/nodes/{node}/storage/") && s.config.nodes &&
        !String(s.config.nodes).split(",").includes(String(p.node))
      ) {
        throw missing(`storage '${p.storage}' is not available on node '${p.node}'`);
      }
    }
    if (t.startsWith("/access/users/{userid}")) {
      const u = state.users.get(String(p.userid));
      if (!u) throw missing(`no such user ('${p.userid}')`);
      if ("tokenid" in ctx.path && ctx.method !== "POST" && !u.tokens.has(String(p.tokenid))) {
        throw missing(`no such token '${p.tokenid}' for user '${p.userid}'`);
      }
    }
    if (t.startsWith("/pools/{poolid}") && !state.pools.has(String(p.poolid))) {
      throw missing(`pool '${p.poolid}' does not exist`);
    }
    if ("upid" in ctx.path) {
      const task = state.tasks.get(String(p.upid));
      if (!task || task.node !== p.node) throw missing(`no such task '${p.upid}'`);
    }
    this.generic.checkExists(ctx);
  }

  /** Operations with neither a specific nor a collection handler: tasks or sample data. */
  #fallback(ctx: HandlerContext): unknown {
    const op = ctx.operation;
    const returns = op.returns;
    if (ctx.method !== "GET" && returns?.type === "string" && looksLikeTask(op)) {
      const node = String(ctx.values.node ?? firstNode(ctx.state));
      const id = String(ctx.values.vmid ?? ctx.values.storage ?? ctx.values.name ?? "");
      return startTask(ctx, {
        node,
        type: op.name ?? "task",
        id,
        log: [`${op.description ?? op.name}`],
      });
    }
    if (
      ctx.method === "GET" && returns?.type === "array" &&
      ctx.template.startsWith("/nodes/{node}") === false
    ) {
      // Collections without state are empty rather than invented (a list can be filled by POST).
      if (this.generic.isCollection(ctx.template)) return [];
    }
    const known: Record<string, unknown> = { ...ctx.values };
    return sample(
      returns,
      { known, children: this.#children.get(ctx.template) ?? [] },
      "",
      ctx.template,
    );
  }
}

/** The names of path parameters whose existence the engine checks itself. */
const SPECIAL_ITEM_PARAMS: Record<string, true> = {
  node: true,
  vmid: true,
  storage: true,
  userid: true,
  tokenid: true,
  poolid: true,
  snapname: true,
  upid: true,
  volume: true,
};

function nowS(ms: number): number {
  return Math.floor(ms / 1000);
}

function fail(err: MockError): EngineFailure {
  return {
    ok: false,
    status: err.status,
    wireStatus: err.wireStatus,
    message: err.message,
    errors: err.errors,
  };
}

function normalisePath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

export type { Route };
