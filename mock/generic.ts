/**
 * Generic collections: any schema path `P` with a POST and a child `P/{id}` behaves as a real
 * collection (create, list, get, update, delete, duplicate id → 400) without a hand-written
 * handler: backup and replication jobs, SDN zones/vnets/subnets, node networks, firewall rules
 * and groups, HA resources, ACME accounts, ... Records under a guest are keyed by vmid so they
 * follow the guest and vanish with it.
 */
import type { HttpMethod } from "../domain/hypervisor_schema/schema.ts";
import type { Router } from "../domain/hypervisor_schema/router.ts";
import { collection, type GenericRecord } from "./state.ts";
import { fieldError, missing } from "./errors.ts";
import { type HandlerContext, looksLikeTask, startTask } from "./handlers/mod.ts";

interface ItemInfo {
  collection: string;
  idParam: string;
}

/** Concrete storage key for a collection: guest-scoped paths become `vm:<vmid>/...`. */
export function collectionKey(template: string, path: Record<string, string>): string {
  const concrete = template.replace(/\{([^}]+)\}/g, (_, name) => path[name] ?? `{${name}}`);
  const m = /^\/nodes\/[^/]+\/(?:qemu|lxc)\/(\d+)(\/.*)?$/.exec(concrete);
  return m ? `vm:${m[1]}${m[2] ?? ""}` : concrete;
}

const SKIP_FIELDS = new Set(["digest", "delete", "limit", "start"]);

export class GenericCollections {
  /** Collection template → id parameter of its items. */
  readonly #collections = new Map<string, string>();
  /** Item template → its collection. */
  readonly #items = new Map<string, ItemInfo>();
  readonly #prefixCache = new Map<string, string[]>();

  constructor(router: Router, specialParams: ReadonlySet<string>) {
    const byTemplate = new Map(router.routes.map((r) => [r.template, r]));
    for (const route of router.routes) {
      const m = /^(.*)\/\{([^}]+)\}$/.exec(route.template);
      if (!m) continue;
      const [, parent, idParam] = m;
      const parentRoute = byTemplate.get(parent);
      if (!parentRoute?.operations.POST || specialParams.has(idParam)) continue;
      this.#collections.set(parent, idParam);
      this.#items.set(route.template, { collection: parent, idParam });
    }
  }

  isCollection(template: string): boolean {
    return this.#collections.has(template);
  }

  handles(method: HttpMethod, template: string): boolean {
    if (this.#collections.has(template) && (method === "GET" || method === "POST")) return true;
    return this.#items.has(template);
  }

  /** Item templates that are prefixes of `template` (outermost first). */
  #itemPrefixes(template: string): string[] {
    let list = this.#prefixCache.get(template);
    if (!list) {
      list = [];
      const segs = template.split("/");
      for (let i = 2; i <= segs.length; i++) {
        const prefix = segs.slice(0, i).join("/");
        if (this.#items.has(prefix)) list.push(prefix);
      }
      this.#prefixCache.set(template, list);
    }
    return list;
  }

  /** Every record the path addresses must exist. */
  checkExists(ctx: HandlerContext): void {
    for (const item of this.#itemPrefixes(ctx.template)) {
      const info = this.#items.get(item)!;
      const key = collectionKey(info.collection, ctx.path);
      const id = ctx.path[info.idParam];
      if (!ctx.state.collections.get(key)?.has(id)) {
        throw missing(`${info.idParam} '${id}' does not exist`);
      }
    }
  }

  handle(ctx: HandlerContext): unknown {
    const { method, template } = ctx;
    const idParam = this.#collections.get(template);
    if (idParam !== undefined && method === "GET" && ctx.operation.returns?.type === "array") {
      return this.#list(ctx, collectionKey(template, ctx.path), idParam);
    }
    if (idParam !== undefined && method === "POST") return this.#create(ctx, idParam);
    const item = this.#items.get(template);
    if (!item) return null;
    const coll = collection(ctx.state, collectionKey(item.collection, ctx.path));
    const id = ctx.path[item.idParam];
    const record = coll.get(id)!;
    if (method === "GET") {
      if (ctx.operation.returns?.type === "array") return [];
      return { ...record };
    }
    if (method === "DELETE") {
      coll.delete(id);
      if (item.idParam === "pos") reindex(coll);
      const nested = `${collectionKey(item.collection, ctx.path)}/${id}/`;
      for (const key of [...ctx.state.collections.keys()]) {
        if (key.startsWith(nested)) ctx.state.collections.delete(key);
      }
      return this.#answer(ctx, id);
    }
    // PUT, or POST on an item that is not itself a collection: update in place.
    if (item.idParam === "pos" && ctx.values.moveto !== undefined) {
      const list = [...coll.values()];
      const [moved] = list.splice(Number(id), 1);
      list.splice(Math.min(Number(ctx.values.moveto), list.length), 0, moved);
      coll.clear();
      list.forEach((r, i) => coll.set(String(i), { ...r, pos: i }));
      return this.#answer(ctx, id);
    }
    applyUpdate(record, ctx);
    return this.#answer(ctx, id);
  }

  #list(ctx: HandlerContext, key: string, idParam: string): unknown[] {
    const coll = ctx.state.collections.get(key);
    if (!coll) return [];
    const filters = Object.entries(ctx.values).filter(([k]) =>
      !(k in ctx.path) && !SKIP_FIELDS.has(k)
    );
    const out: unknown[] = [];
    for (const [id, record] of coll) {
      let keep = true;
      for (const [k, v] of filters) {
        if (!(k in record)) continue;
        const have = String(record[k]);
        if (k === "type" && v === "any_bridge") keep = have === "bridge" || have === "OVSBridge";
        else if (have !== String(v)) keep = false;
        if (!keep) break;
      }
      if (keep) out.push({ ...record, [idParam]: record[idParam] ?? parseMaybeInt(id, idParam) });
    }
    return out;
  }

  #create(ctx: HandlerContext, idParam: string): unknown {
    const key = collectionKey(ctx.template, ctx.path);
    const coll = collection(ctx.state, key);
    const record: GenericRecord = {};
    for (const [k, v] of Object.entries(ctx.values)) {
      if (k in ctx.path || SKIP_FIELDS.has(k)) continue;
      record[k] = v;
    }
    if (idParam === "pos") {
      // Firewall rules: a new rule goes to the top (or to `pos`) and the list is renumbered.
      const list = [...coll.values()];
      const at = ctx.values.pos !== undefined ? Math.min(Number(ctx.values.pos), list.length) : 0;
      list.splice(at, 0, record);
      coll.clear();
      list.forEach((r, i) => coll.set(String(i), { ...r, pos: i }));
      return this.#answer(ctx, String(at));
    }
    let id = ctx.values[idParam] !== undefined ? String(ctx.values[idParam]) : undefined;
    if (template(ctx) === "/cluster/sdn/vnets/{vnet}/subnets" && id) {
      // Proxmox names a subnet `<zone>-<cidr with - for />`.
      const vnet = ctx.state.collections.get("/cluster/sdn/vnets")?.get(ctx.path.vnet);
      const zone = String(vnet?.zone ?? "zone");
      record.cidr = id;
      record.network = id.split("/")[0];
      record.mask = id.split("/")[1];
      record.zone = zone;
      record.vnet = ctx.path.vnet;
      id = `${zone}-${id.replace("/", "-")}`;
    }
    if (id === undefined) {
      const seg = ctx.template.split("/").filter((s) => !s.startsWith("{")).pop() ?? "item";
      do {
        id = `${seg}-${(++ctx.state.counter).toString(16).padStart(8, "0")}`;
      } while (coll.has(id));
    }
    if (id.includes("/")) throw fieldError(idParam, `invalid ${idParam} '${id}'`);
    if (coll.has(id)) throw fieldError(idParam, `${idParam} '${id}' already exists`);
    record[idParam] = parseMaybeInt(id, idParam) ?? id;
    if (typeof record[idParam] !== "string" && record[idParam] !== Number(id)) record[idParam] = id;
    coll.set(id, record);
    return this.#answer(ctx, id);
  }

  /** The operation's answer after a write: null, a task UPID, or the record/id it names. */
  #answer(ctx: HandlerContext, id: string): unknown {
    const returns = ctx.operation.returns;
    if (!returns || returns.type === "null" || returns.type === undefined) return null;
    if (returns.type === "string") {
      if (looksLikeTask(ctx.operation)) {
        return startTask(ctx, {
          node: String(ctx.values.node ?? ctx.state.nodes.keys().next().value ?? "pve1"),
          type: ctx.operation.name ?? "task",
          id,
        });
      }
      return id;
    }
    if (returns.type === "object") return { ...ctx.values };
    if (returns.type === "integer") return Number(id) || 0;
    return null;
  }
}

function template(ctx: HandlerContext): string {
  return ctx.template;
}

function parseMaybeInt(id: string, idParam: string): string | number {
  return idParam === "pos" && /^\d+$/.test(id) ? Number(id) : id;
}

function reindex(coll: Map<string, GenericRecord>): void {
  const list = [...coll.values()];
  coll.clear();
  list.forEach((r, i) => coll.set(String(i), { ...r, pos: i }));
}

/** Merge validated values into a record; `delete=a,b` removes keys (Proxmox semantics). */
export function applyUpdate(record: GenericRecord, ctx: HandlerContext): void {
  for (const [k, v] of Object.entries(ctx.values)) {
    if (k in ctx.path || SKIP_FIELDS.has(k)) continue;
    record[k] = v;
  }
  const del = ctx.values.delete;
  if (typeof del === "string") {
    for (const k of del.split(/[,;\s]+/).filter(Boolean)) delete record[k];
  } else if (del === 1 && !("delete" in record)) {
    // `delete` as a boolean flag on some endpoints (e.g. pool members): nothing to remove here.
  }
}
