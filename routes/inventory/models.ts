/**
 * Generic REST handlers for every model registered in the engine (core and plugin), NetBox
 * style: list/get/create/PUT/PATCH/DELETE plus bulk create (POST a list), bulk update
 * (PUT/PATCH a list of objects with ids) and bulk delete (DELETE a list of {id}).
 */
import type { Context } from "hono";
import { parseChangelogMessage, QueryError } from "../../domain/netbox/engine.ts";
import { etagOf, parseIfMatch } from "../../domain/netbox/etag.ts";
import { permissionFor } from "../../domain/netbox/tokens.ts";
import type {
  AuthInfo,
  FieldErrors,
  ModelDef,
  StoredObject,
  WriteResult,
} from "../../domain/netbox/types.ts";
import type { InventoryContext, InventoryEnv } from "./context.ts";
import {
  ApiError,
  bulkTooLarge,
  MAX_BULK_ITEMS,
  methodNotAllowed,
  noObject,
  notFound,
  readJsonBody,
  requirePermission,
  WRITE_REFUSAL_STATUS,
} from "./errors.ts";
import { nameRoute } from "../_lib/route_pattern.ts";

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

function truthy(value: string | undefined | null): boolean {
  return value !== undefined && value !== null &&
    ["1", "true", "yes", "on"].includes(value.toLowerCase());
}

function csv(value: string | undefined | null): string[] | undefined {
  if (!value) return undefined;
  return value.split(",").map((s) => s.trim()).filter(Boolean);
}

/** Maps a failed engine write to the error model; returns the value when ok. */
export function unwrap<T>(result: WriteResult<T>): { value: T; extras?: Record<string, unknown> } {
  if (result.ok) return { value: result.value, extras: result.extras };
  if (result.reason === "invalid") throw new ApiError(400, result.errors);
  throw new ApiError(WRITE_REFUSAL_STATUS[result.reason], { detail: result.detail });
}

/**
 * unwrap for a single-object write that sent If-Match: a 412 carries the object's current
 * ETag, as NetBox 4.6 answers, so the client can re-read and retry.
 */
async function unwrapGuarded<T>(
  ctx: InventoryContext,
  model: string,
  id: number,
  result: WriteResult<T>,
): Promise<{ value: T; extras?: Record<string, unknown> }> {
  if (!result.ok && result.reason === "not_found") throw noObject(ctx.engine.definition(model));
  if (!result.ok && result.reason === "precondition_failed") {
    const current = await ctx.engine.get(model, id);
    const etag = current ? etagOf(current) : null;
    throw new ApiError(412, { detail: result.detail }, etag ? { ETag: etag } : {});
  }
  return unwrap(result);
}

/** The change log's `user_name` for a request: the inventory has tokens, not user accounts. */
function userNameOf(auth: AuthInfo | undefined): string {
  return auth ? `token #${auth.tokenId}` : "anonymous";
}

/** The `changelog_message` of a DELETE body (single: the object; bulk: each item). */
function deleteMessage(item: unknown): string {
  if (!item || typeof item !== "object" || Array.isArray(item)) return "";
  const parsed = parseChangelogMessage((item as Record<string, unknown>).changelog_message);
  if (!parsed.ok) throw new ApiError(400, { changelog_message: [parsed.error] });
  return parsed.value;
}

/** The origin absolute URLs use: set per request by createInventoryApp, else the request's. */
export function originOf(c: Context): string {
  return (c.get("origin") as string | undefined) ?? new URL(c.req.url).origin;
}

function pageUrl(c: Context, raw: URL, limit: number, offset: number): string {
  const url = new URL(raw.pathname + raw.search, originOf(c));
  url.searchParams.set("limit", String(limit));
  if (offset > 0) url.searchParams.set("offset", String(offset));
  else url.searchParams.delete("offset");
  return url.toString();
}

/** Resolves `/api/<path>` to a model and an optional id. */
export function resolveModelPath(
  ctx: InventoryContext,
  pathname: string,
): { def: ModelDef; id: number | null; path: string } | null {
  let path = pathname.replace(/^\/api\//, "");
  if (!path.endsWith("/")) path += "/";
  const list = ctx.engine.byPath(path);
  if (list) return { def: list, id: null, path };
  const m = /^(.*\/)([^/]+)\/$/.exec(path);
  if (!m) return null;
  const def = ctx.engine.byPath(m[1]);
  if (!def) return null;
  if (!/^\d{1,15}$/.test(m[2])) throw notFound();
  return { def, id: Number(m[2]), path: m[1] };
}

/** GET on an /api/ prefix that holds models: NetBox's API root views ({name: url}). */
export function apiRootListing(
  ctx: InventoryContext,
  c: Context,
  pathname: string,
): Record<string, string> | null {
  let prefix = pathname.replace(/^\/api\/?/, "");
  if (prefix !== "" && !prefix.endsWith("/")) prefix += "/";
  const origin = originOf(c);
  const out: Record<string, string> = {};
  for (const def of ctx.engine.models()) {
    if (!def.path.startsWith(prefix)) continue;
    const next = def.path.slice(prefix.length).split("/")[0];
    if (next) out[next] = `${origin}/api/${prefix}${next}/`;
  }
  if (prefix === "") out.status = `${origin}/api/status/`;
  if (Object.keys(out).length === 0) return null;
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

function excluded(url: URL): string[] {
  return url.searchParams.getAll("exclude").flatMap((v) => csv(v) ?? []).includes("config_context")
    ? ["config_context"]
    : [];
}

function renderOptions(c: Context, url: URL) {
  const query = (name: string) => url.searchParams.get(name) ?? undefined;
  return {
    origin: originOf(c),
    brief: truthy(query("brief")),
    fields: csv(query("fields")),
    // NetBox's `?exclude=config_context` (devices and VMs): the merged context is the costliest
    // part of a list, and a client walking thousands of objects rarely wants it.
    omit: [...csv(query("omit")) ?? [], ...excluded(url)],
  };
}

async function respondRecords(
  ctx: InventoryContext,
  c: Context,
  url: URL,
  model: string,
  records: StoredObject[],
  status: 200 | 201,
  extras?: Record<string, unknown>,
  many = false,
): Promise<Response> {
  const rendered = await redacted(
    ctx,
    c,
    model,
    await ctx.engine.render(model, records, renderOptions(c, url)),
  );
  if (!many && extras) Object.assign(rendered[0], extras);
  // NetBox 4.6 tags single-object answers (GET, POST, PUT, PATCH) with a weak ETag.
  const etag = many ? null : etagOf(records[0]);
  return c.json(many ? rendered : rendered[0], status, etag ? { ETag: etag } : {});
}

/** Applies the model's per-reader redaction (e.g. the backend key) to rendered records. */
async function redacted<T>(
  ctx: InventoryContext,
  c: Context,
  model: string,
  rendered: T[],
): Promise<T[]> {
  const redact = ctx.engine.definition(model).redact;
  if (redact) {
    const auth = c.get("auth") ?? null;
    for (const r of rendered) await redact(r as Record<string, unknown>, auth);
  }
  return rendered;
}

/**
 * A write's body as NetBox reads it under `?fields=` or `?omit=`: those shape the serializer that
 * reads the body as well as the one that renders the answer (`BaseModelSerializer.fields`), so a
 * field they leave out is ignored, as an unknown one is. A bulk update's `id` is read apart from
 * the serializer and stays. A client asking for a short answer must name what it writes
 * (docs/api-behaviour.md, Inventory: NetBox 4.6 writes).
 */
function readByFields(body: unknown, url: URL): unknown {
  const fields = csv(url.searchParams.get("fields"));
  const omit = fields ? undefined : csv(url.searchParams.get("omit"));
  if (!fields && !omit) return body;
  const keep = (key: string) =>
    key === "id" || (fields ? fields.includes(key) : !omit!.includes(key));
  const shape = (item: unknown) =>
    item && typeof item === "object" && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).filter(([key]) => keep(key)))
      : item;
  return Array.isArray(body) ? body.map(shape) : shape(body);
}

function listItems(body: unknown, requireId: boolean): Array<{ id: number; data: unknown }> {
  if (!Array.isArray(body)) {
    throw new ApiError(400, {
      non_field_errors: [
        `Expected a list of items but got type "${
          body === null ? "null" : typeof body === "object" ? "dict" : typeof body
        }".`,
      ],
    });
  }
  const errors: FieldErrors[] = [];
  const items: Array<{ id: number; data: unknown }> = [];
  let failed = false;
  for (const item of body) {
    const id = item && typeof item === "object" && !Array.isArray(item)
      ? (item as { id?: unknown }).id
      : undefined;
    const n = typeof id === "number"
      ? id
      : typeof id === "string" && /^\d+$/.test(id)
      ? Number(id)
      : NaN;
    if (!Number.isSafeInteger(n) || n < 1) {
      failed = true;
      errors.push({
        id: [id === undefined ? "This field is required." : "A valid integer is required."],
      });
      continue;
    }
    errors.push({});
    items.push({ id: n, data: item });
  }
  if (failed && requireId) throw new ApiError(400, errors);
  return items;
}

const METADATA_TYPES: Record<string, string> = {
  string: "string",
  int: "integer",
  float: "float",
  bool: "boolean",
  datetime: "datetime",
  date: "date",
  json: "json",
  choice: "choice",
  fk: "field",
  m2m: "field",
  list: "list",
  gfk: "field",
};

/** The per-field part of DRF's OPTIONS metadata (type, required, read_only, label, choices). */
function fieldMetadata(def: ModelDef): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {
    id: { type: "integer", required: false, read_only: true, label: "ID" },
  };
  for (const [name, f] of Object.entries(def.fields)) {
    if (f.hidden) continue;
    const readOnly = Boolean(f.readOnly || f.compute || f.type === "gfk");
    const label = name.replaceAll("_", " ").replace(/^./, (ch) => ch.toUpperCase());
    const entry: Record<string, unknown> = {
      type: METADATA_TYPES[f.type] ?? "field",
      required: Boolean(f.required) && f.default === undefined && !readOnly,
      read_only: readOnly,
      label,
    };
    if (f.writeOnly) entry.write_only = true;
    if (f.maxLength !== undefined) entry.max_length = f.maxLength;
    if (f.type === "choice" && f.choices) {
      entry.choices = f.choices.map(([value, display]) => ({ value, display_name: display }));
    }
    out[name] = entry;
  }
  if (def.tags !== false) {
    out.tags = { type: "field", required: false, read_only: false, label: "Tags" };
  }
  if (def.customFields !== false) {
    out.custom_fields = {
      type: "json",
      required: false,
      read_only: false,
      label: "Custom fields",
    };
  }
  return out;
}

/**
 * NetBox 4.6's cursor paging: `?start=<pk>` lists objects with id ≥ start in id order,
 * `count` and `previous` null, `next` (start = last id + 1) only after a full page. With
 * `offset` or `ordering` → 400, NetBox's texts (a bare list, as DRF renders them).
 */
async function cursorPage(
  ctx: InventoryContext,
  c: Context<InventoryEnv>,
  url: URL,
  model: string,
): Promise<Response> {
  const raw = url.searchParams.get("start")!.trim();
  if (!/^\d{1,15}$/.test(raw)) {
    throw new ApiError(400, ["Invalid 'start' parameter: must be a non-negative integer."]);
  }
  if (url.searchParams.has("offset")) {
    throw new ApiError(400, ["'start' and 'offset' are mutually exclusive."]);
  }
  if (url.searchParams.has("ordering")) {
    throw new ApiError(400, [
      "Ordering cannot be specified in conjunction with cursor-based pagination.",
    ]);
  }
  const params = new URLSearchParams(url.searchParams);
  params.delete("start");
  params.append("id__gte", raw);
  params.set("ordering", "id");
  let page;
  try {
    page = await ctx.engine.list(model, params);
  } catch (error) {
    if (error instanceof QueryError) throw new ApiError(400, error.errors);
    throw error;
  }
  const results = await redacted(
    ctx,
    c,
    model,
    await ctx.engine.render(model, page.records, renderOptions(c, url)),
  );
  let next: string | null = null;
  if (page.records.length === page.limit && page.records.length > 0) {
    const link = new URL(url.pathname + url.search, originOf(c));
    link.searchParams.set("start", String(page.records[page.records.length - 1].id + 1));
    link.searchParams.set("limit", String(page.limit));
    next = link.toString();
  }
  return c.json({ count: null, next, previous: null, results });
}

/**
 * Handles one request for a registered model; null when the path is not a model path.
 * `request` is the one to serve: the plugin may hand over a rewritten one (its query narrowed),
 * so the URL, query and body are read from it, never from `c.req`.
 */
export async function handleModelRequest(
  ctx: InventoryContext,
  c: Context<InventoryEnv>,
  request: Request = c.req.raw,
): Promise<Response | null> {
  const url = new URL(request.url);
  const pathname = url.pathname;
  const target = resolveModelPath(ctx, pathname);
  if (!target) return null;
  const { def, id } = target;
  // The model's registered path, never the request's: one series per model (docs/metrics.md).
  nameRoute(c, `/api/${target.path}${id === null ? "" : ":id/"}`);
  const model = ctx.engine.nameOf(def);
  const method = request.method === "HEAD" ? "GET" : request.method;
  const auth = c.get("auth");

  if (method === "OPTIONS") {
    const allow = def.readOnly
      ? "GET, HEAD, OPTIONS"
      : id === null
      ? "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS"
      : "GET, PUT, PATCH, DELETE, HEAD, OPTIONS";
    // DRF's metadata: `actions` describes the writable fields, and pynetbox's
    // Endpoint.choices() reads the choice lists from actions.POST.
    const write = id === null ? "POST" : "PUT";
    const canWrite = !def.readOnly && auth !== null && auth.writeEnabled &&
      (auth.isSuperuser || auth.permissions.has(permissionFor(model, write)));
    return c.json(
      {
        name: def.verbose,
        description: "",
        renders: ["application/json"],
        parses: ["application/json"],
        ...(canWrite ? { actions: { [write]: fieldMetadata(def) } } : {}),
      },
      200,
      {
        Allow: allow,
      },
    );
  }
  if (!["GET", ...WRITE_METHODS].includes(method)) throw methodNotAllowed(method);
  if (def.readOnly && WRITE_METHODS.has(method)) throw methodNotAllowed(method);
  if (id !== null && method === "POST") throw methodNotAllowed(method);
  requirePermission(auth, permissionFor(model, method));

  // NetBox 4.5.9: an unsafe method without the trailing slash is a 404 (a redirect would lose
  // the body), never served as if the slash were there.
  if (WRITE_METHODS.has(method) && !pathname.endsWith("/")) throw notFound();

  if (method === "GET" && id === null && url.searchParams.has("start")) {
    return await cursorPage(ctx, c, url, model);
  }
  if (method === "GET" && id === null) {
    let page;
    try {
      page = await ctx.engine.list(model, url.searchParams);
    } catch (error) {
      if (error instanceof QueryError) throw new ApiError(400, error.errors);
      throw error;
    }
    const results = await redacted(
      ctx,
      c,
      model,
      await ctx.engine.render(model, page.records, { ...renderOptions(c, url), known: page.read }),
    );
    const next = page.offset + page.limit < page.count
      ? pageUrl(c, url, page.limit, page.offset + page.limit)
      : null;
    const previous = page.offset > 0
      ? pageUrl(c, url, page.limit, Math.max(0, page.offset - page.limit))
      : null;
    return c.json({ count: page.count, next, previous, results });
  }
  if (method === "GET") {
    const record = await ctx.engine.get(model, id!);
    if (!record) throw noObject(def);
    return respondRecords(ctx, c, url, model, [record], 200);
  }

  // If-Match (NetBox 4.6) guards single-object PUT, PATCH and DELETE; `*` matches anything.
  const ifMatch = parseIfMatch(request.headers.get("if-match"));
  // Every change this request makes is logged under one request id, answered as X-Request-ID
  // (docs/api-behaviour.md, Inventory: change log).
  const change = { requestId: crypto.randomUUID(), userName: userNameOf(auth) };
  c.header("X-Request-ID", change.requestId);
  const body = method === "DELETE"
    ? await readJsonBody(request)
    : readByFields(await readJsonBody(request), url);
  if (Array.isArray(body) && body.length > MAX_BULK_ITEMS) {
    throw new ApiError(400, bulkTooLarge(body.length));
  }
  if (method === "POST") {
    if (Array.isArray(body)) {
      const { value } = unwrap(await ctx.engine.createMany(model, body, auth, { change }));
      return respondRecords(ctx, c, url, model, value, 201, undefined, true);
    }
    const { value, extras } = unwrap(
      await ctx.engine.create(model, body ?? {}, auth, { change }),
    );
    return respondRecords(ctx, c, url, model, [value], 201, extras);
  }
  if (method === "PUT" || method === "PATCH") {
    const partial = method === "PATCH";
    if (id === null) {
      const items = listItems(body, true);
      const { value } = unwrap(
        await ctx.engine.updateMany(model, items, partial, auth, { change, bulkView: true }),
      );
      return respondRecords(ctx, c, url, model, value, 200, undefined, true);
    }
    const { value, extras } = await unwrapGuarded(
      ctx,
      model,
      id,
      await ctx.engine.updateOne(model, id, body ?? {}, partial, auth, { ifMatch, change }),
    );
    return respondRecords(ctx, c, url, model, [value], 200, extras);
  }
  // DELETE
  if (id === null) {
    const items = listItems(body, true);
    const messages = new Map(items.map((i) => [i.id, deleteMessage(i.data)]));
    unwrap(
      await ctx.engine.deleteMany(model, items.map((i) => i.id), auth, {
        change,
        messages,
        skipMissing: true,
      }),
    );
    return c.body(null, 204);
  }
  const messages = new Map([[id, deleteMessage(body)]]);
  await unwrapGuarded(
    ctx,
    model,
    id,
    await ctx.engine.deleteMany(model, [id], auth, { ifMatch, change, messages }),
  );
  return c.body(null, 204);
}
