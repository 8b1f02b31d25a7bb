/**
 * The sync's client of the inventory's REST API (NetBox 4.x conventions, this app's own
 * inventory or a real NetBox): paged filtered lists (`limit=1000`), bulk create, bulk PATCH
 * and bulk DELETE with list bodies. The token is asked for at call time (v1 `Token <t>`, v2
 * `Bearer nbt_<key>.<secret>`). Failures name the request, what the inventory answered and,
 * for a bulk write NetBox rejects item by item, which item (`itemIndex`).
 */
import { baseUrl } from "./backend.ts";
import { fetchFor } from "./hypervisor_probe.ts";
import { UpstreamCallError } from "./upstream_error.ts";
import { redactSecrets } from "../domain/redaction.ts";
import {
  type ChangeEntry,
  type InventoryApi,
  type InventoryBody,
  type InventoryObject,
  versionAtLeast,
} from "../domain/sync/ports.ts";

export const PAGE_SIZE = 1000;
const CHANGES_PATH = "core/object-changes/";
const CHANGE_FIELDS = "id,request_id,action,changed_object_type,changed_object_id";
/** Consecutive change-log ids read as one range rather than listed by id. */
const RANGE_MIN = 10;
const CONTEXT_PATHS = new Set(["dcim/devices/", "virtualization/virtual-machines/"]);
const EXCERPT_CHARS = 400;

export interface InventoryConnection {
  ip: string;
  port: number;
  use_https: boolean;
  verify_ssl: boolean;
  token_version: "v1" | "v2";
  token_key: string | null;
}

export interface InventoryApiOptions {
  fetch: typeof fetch;
  /** Opens the stored token (v1 the token, v2 the secret). */
  token: () => Promise<string>;
  timeoutMs?: number;
}

export class InventoryApiError extends UpstreamCallError {
  itemIndex?: number;
  /** A bulk write NetBox refused item by item: one error object per item (`{}` = fine). */
  itemErrors?: Record<string, unknown>[];
  /**
   * A refusal answered as one error object although a list was sent: NetBox's bulk update (and
   * its sequential device create) stops at the first refused object and names no position.
   */
  fieldErrors?: Record<string, unknown>;
  object?: string;
  /** The inventory answered and refused the data (validation, "already exists"): 400/409. */
  refused?: boolean;
  constructor(
    operation: string,
    url: string,
    status: number | null,
    bodyExcerpt: string,
    hint: string,
  ) {
    super(
      operation,
      url,
      status,
      bodyExcerpt,
      hint,
      (excerpt) => `, the inventory answered ${excerpt}`,
    );
  }
}

function hintFor(status: number | null, cause = ""): string {
  if (status === null) {
    return cause.includes("timed out")
      ? "The inventory did not answer in time."
      : "Check the inventory endpoint's ip, port and use_https, and that it is reachable.";
  }
  if (status === 401 || status === 403) {
    return "The inventory rejected the stored token: save a valid token on the inventory " +
      "endpoint (it needs write permission on the synced models).";
  }
  if (status === 404) return "The inventory lacks this API path (is the plugin installed?).";
  if (status === 400) return "The inventory refused the data; the answer says which field.";
  if (status >= 300 && status < 400) {
    return "Redirects are not followed: point the inventory endpoint at the API host directly.";
  }
  if (status >= 500) return "The inventory failed; look at its logs and retry.";
  return "The inventory refused the request.";
}

/** Any spelling of the token is removed before the text is cut (no prefix of it survives). */
function excerpt(text: string, token: string): string {
  const window = text.slice(0, EXCERPT_CHARS * 16);
  return redactSecrets(window, [token]).replace(/\s+/g, " ").trim().slice(0, EXCERPT_CHARS);
}

function causeOf(error: unknown): string {
  if (error instanceof DOMException && error.name === "TimeoutError") return "timed out";
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message;
  }
  return String(error);
}

/**
 * An object as the sync keeps it for a run: the API's links (`url`, `display_url`, on the object
 * and on the objects nested in it) dropped, the rest untouched (`display` stays: nested objects
 * are told from plain values by it): 28% of a rendered VM, held for every object of a stage.
 */
function withoutLinks<T>(value: T, depth = 0): T {
  if (depth > 3 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    for (const item of value) withoutLinks(item, depth + 1);
    return value;
  }
  const record = value as Record<string, unknown>;
  if (typeof record.id === "number") {
    delete record.url;
    delete record.display_url;
  }
  for (const v of Object.values(record)) {
    if (v !== null && typeof v === "object") withoutLinks(v, depth + 1);
  }
  return value;
}

/**
 * A `last_updated` as one number (microseconds since the epoch) when it is an ISO time with at
 * most 6 decimals, exact below 2^53; any other text stays as it is.
 */
function versionKey(value: string): number | string {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?(Z|[+-]\d\d:\d\d)$/.exec(value);
  if (!m) return value;
  const ms = Date.parse(m[1] + m[3]);
  return Number.isNaN(ms) ? value : ms * 1000 + Number((m[2] ?? "").padEnd(6, "0"));
}

/** A conditional single-object call: what it sends (If-Match), what it read back. */
interface Guard {
  ifMatch?: string;
  /** Statuses answered as an outcome (`status` set, null returned) rather than thrown. */
  expected?: number[];
  status?: number;
  etag?: string | null;
}

/**
 * The `fields` of a bulk write that asks for `wanted` back. NetBox's `fields` shapes the
 * serializer that reads the body too (`BaseModelSerializer.fields`): a body field left out is
 * ignored, as an unknown one is. So every field the bodies send is named, and `custom_fields`
 * and `tags`, whose serializer fields do work on a create even when not sent (custom field
 * defaults); and `id` and `last_updated`, which noting the run's own writes needs. A body's
 * `changelog_message` is named too: left out, NetBox would not log it.
 */
export function answerFields(
  wanted: readonly string[],
  bodies: readonly InventoryBody[],
): string[] {
  const out = new Set(["id", "last_updated", ...wanted, "custom_fields", "tags"]);
  for (const body of bodies) for (const field of Object.keys(body)) out.add(field);
  return [...out];
}

export class InventoryApiClient implements InventoryApi {
  readonly api: string;
  readonly #send: typeof fetch;
  readonly #options: InventoryApiOptions;
  /** HTTP requests made (for the benchmark's requests-per-guest figure). */
  requests = 0;

  #apiVersion: string | null = null;
  /**
   * Sent as `changelog_message` with every write (NetBox 4.4+ records it in the change log), so
   * an admin sees which run made a change. Not sent to an inventory announcing an older API.
   */
  changelogMessage: string | null = null;

  /**
   * Told the `X-Request-ID` of each write this client makes: the sync's ledger tells its own
   * change-log entries from everyone else's by it (docs/sync.md, "Re-runs").
   */
  onWriteRequest: ((requestId: string) => void) | null = null;

  /** The `API-Version` the inventory announced, null until its first answer. */
  apiVersion(): string | null {
    return this.#apiVersion;
  }

  /**
   * path → id → `last_updated` of this client's latest write (see `isOwnWrite`), as a number
   * where it is an ISO time: a run of 100,000 guests writes over half a million objects, and a
   * pair of numbers is a fraction of a "path+id" key and a timestamp string.
   */
  #written = new Map<string, Map<number, number | string>>();

  #noteWritten(path: string, objects: unknown[]): void {
    let ofPath = this.#written.get(path);
    if (!ofPath) this.#written.set(path, ofPath = new Map());
    for (const o of objects) {
      const { id, last_updated } = (o ?? {}) as { id?: unknown; last_updated?: unknown };
      if (typeof id === "number" && typeof last_updated === "string") {
        ofPath.set(id, versionKey(last_updated));
      }
    }
  }

  isOwnWrite(path: string, id: number, lastUpdated: unknown): boolean {
    const mine = this.#written.get(path)?.get(id);
    return mine !== undefined && typeof lastUpdated === "string" &&
      mine === versionKey(lastUpdated);
  }

  #withMessage<T extends Record<string, unknown>>(bodies: T[]): T[] {
    const message = this.changelogMessage;
    if (!message || !versionAtLeast(this.#apiVersion, 4, 4)) return bodies;
    return bodies.map((b) => ({ ...b, changelog_message: message.slice(0, 200) }));
  }

  constructor(readonly connection: InventoryConnection, options: InventoryApiOptions) {
    this.api = `${baseUrl(connection.use_https, connection.ip, connection.port)}/api/`;
    this.#send = fetchFor(this.api, connection.verify_ssl, options.fetch);
    this.#options = options;
  }

  async #auth(): Promise<{ header: string; token: string }> {
    const token = await this.#options.token();
    const header = this.connection.token_version === "v2"
      ? `Bearer nbt_${this.connection.token_key}.${token}`
      : `Token ${token}`;
    return { header, token };
  }

  async #call(
    method: string,
    operation: string,
    url: string,
    body: unknown,
    signal?: AbortSignal,
    guard?: Guard,
  ): Promise<unknown> {
    const { header, token } = await this.#auth();
    const signals = [AbortSignal.timeout(this.#options.timeoutMs ?? 120_000)];
    if (signal) signals.push(signal);
    const shown = url.split("?")[0];
    let response: Response;
    this.requests++;
    try {
      response = await this.#send(url, {
        method,
        headers: {
          authorization: header,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...(guard?.ifMatch ? { "if-match": guard.ifMatch } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.any(signals),
        redirect: "manual",
      });
    } catch (error) {
      if (signal?.aborted) throw signal.reason ?? error;
      const cause = causeOf(error);
      throw new InventoryApiError(operation, shown, null, cause, hintFor(null, cause));
    }
    const text = await response.text().catch(() => "");
    this.#apiVersion = response.headers.get("api-version") ?? this.#apiVersion;
    const requestId = response.headers.get("x-request-id");
    if (method !== "GET" && requestId) this.onWriteRequest?.(requestId);
    if (guard) {
      guard.status = response.status;
      guard.etag = response.headers.get("etag");
      if (guard.expected?.includes(response.status)) return null;
    }
    if (!response.ok) {
      const location = response.headers.get("location");
      const error = new InventoryApiError(
        operation,
        shown,
        response.status,
        excerpt(location ? `redirect to ${location}` : text, token),
        hintFor(response.status),
      );
      error.refused = response.status === 400 || response.status === 409;
      // NetBox answers a bulk write with one error object per item: point at the first bad one.
      try {
        const parsed = JSON.parse(text);
        if (Array.isArray(parsed)) {
          const at = parsed.findIndex((e) => e && Object.keys(e).length > 0);
          if (at >= 0) error.itemIndex = at;
          if (Array.isArray(body) && parsed.length === body.length) error.itemErrors = parsed;
        } else if (parsed && typeof parsed === "object" && error.refused) {
          error.fieldErrors = parsed;
        }
      } catch { /* not JSON: the excerpt says what it was */ }
      throw error;
    }
    if (response.status === 204 || !text) return null;
    try {
      return JSON.parse(text);
    } catch {
      throw new InventoryApiError(
        operation,
        shown,
        response.status,
        excerpt(text, token),
        "The answer is not JSON: is this really a NetBox API (port, use_https)?",
      );
    }
  }

  /**
   * Every object matching `filters`, walked by id (`ordering=id&id__gt=<last id>`, which every
   * NetBox version and this app's inventory answer): a list written while it is read (another
   * run, a user) still yields each object present throughout exactly once, where offset pages
   * skip one object for every earlier one created, tagged or deleted meanwhile.
   */
  /** GET one document (a settings singleton); null when the inventory has no such path (404). */
  async read(path: string, signal?: AbortSignal): Promise<Record<string, unknown> | null> {
    try {
      const body = await this.#call("GET", `read ${path}`, `${this.api}${path}`, undefined, signal);
      return body && typeof body === "object" ? body as Record<string, unknown> : null;
    } catch (error) {
      if (error instanceof InventoryApiError && error.status === 404) return null;
      throw error;
    }
  }

  async list(
    path: string,
    filters: Record<string, string | string[]>,
    signal?: AbortSignal,
  ): Promise<InventoryObject[]> {
    const out: InventoryObject[] = [];
    for await (const page of this.pages(path, filters, signal)) out.push(...page);
    return out;
  }

  /**
   * The pages of `list`, one at a time: the sync keeps what it needs of a page (an id, a name)
   * and lets the page go, so a walk over 100,000 objects holds one page (docs/sync.md, Memory).
   */
  async *pages(
    path: string,
    filters: Record<string, string | string[]>,
    signal?: AbortSignal,
  ): AsyncGenerator<InventoryObject[]> {
    for (let after = 0;;) {
      const query = new URLSearchParams();
      for (const [k, v] of Object.entries(filters)) {
        for (const value of Array.isArray(v) ? v : [v]) query.append(k, value);
      }
      // Devices and VMs render their merged config context unless told not to (NetBox's
      // `exclude=config_context`): the sync never reads it, and it is most of a page's cost.
      if (CONTEXT_PATHS.has(path) && !query.has("exclude")) query.set("exclude", "config_context");
      query.set("ordering", "id");
      query.set("id__gt", String(after));
      query.set("limit", String(PAGE_SIZE));
      const url = `${this.api}${path}?${query}`;
      const page = await this.#call("GET", `list ${path}`, url, undefined, signal) as
        | { results?: InventoryObject[]; next?: string | null }
        | null;
      const results = page?.results ?? [];
      if (results.length === 0) return;
      let last = after;
      for (const o of results) if (typeof o.id === "number" && o.id > last) last = o.id;
      if (last <= after) {
        throw new InventoryApiError(
          `list ${path}`,
          url.split("?")[0],
          null,
          `a page after id ${after} held no higher id`,
          "The inventory ignored the id__gt filter: is this a NetBox API?",
        );
      }
      for (const o of results) withoutLinks(o);
      yield results;
      after = last;
      // A full page may have a successor even when `next` says otherwise (counted a moment
      // earlier); an empty page ends the walk.
      if (!page?.next && results.length < PAGE_SIZE) return;
    }
  }

  async changesById(ids: number[], signal?: AbortSignal): Promise<ChangeEntry[]> {
    // Runs of consecutive ids (the log since the ledger's cursor) are read as ranges a page wide
    // (`id__gte=a&id__lte=b`: one request per 1,000 entries, which NetBox and the engine answer
    // from those entries alone); the scattered rest (ids seen missing earlier) by id, 100 a
    // request (the URL stays under 4 KiB). The requests go at once.
    const sorted = [...new Set(ids)].sort((a, b) => a - b);
    const reads: Promise<InventoryObject[]>[] = [];
    let loose: string[] = [];
    const flush = () => {
      if (loose.length) {
        reads.push(this.list(CHANGES_PATH, { id: loose, fields: CHANGE_FIELDS }, signal));
      }
      loose = [];
    };
    for (let i = 0; i < sorted.length;) {
      let j = i;
      while (
        j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1 &&
        sorted[j + 1] - sorted[i] < PAGE_SIZE
      ) j++;
      if (j - i + 1 >= RANGE_MIN) reads.push(this.#changeRange(sorted[i], sorted[j], signal));
      else {
        for (let k = i; k <= j; k++) {
          loose.push(String(sorted[k]));
          if (loose.length === 100) flush();
        }
      }
      i = j + 1;
    }
    flush();
    return (await Promise.all(reads)).flat() as unknown as ChangeEntry[];
  }

  /** The change log's entries with ids from `low` to `high` (a page's worth), by id. */
  async #changeRange(low: number, high: number, signal?: AbortSignal): Promise<InventoryObject[]> {
    const out: InventoryObject[] = [];
    for (let after = low - 1; after < high;) {
      const query = new URLSearchParams({
        id__gt: String(after),
        id__lte: String(high),
        ordering: "id",
        limit: String(PAGE_SIZE),
        fields: CHANGE_FIELDS,
      });
      const url = `${this.api}${CHANGES_PATH}?${query}`;
      const page = await this.#call("GET", `list ${CHANGES_PATH}`, url, undefined, signal) as
        | { results?: InventoryObject[]; next?: string | null }
        | null;
      const results = page?.results ?? [];
      let last = after;
      for (const o of results) if (typeof o.id === "number" && o.id > last) last = o.id;
      for (const o of results) withoutLinks(o);
      out.push(...results);
      // A NetBox whose MAX_PAGE_SIZE is below the range's width says so with `next`.
      if (!page?.next || last <= after) break;
      after = last;
    }
    return out;
  }

  async changeEnd(end: "oldest" | "newest", signal?: AbortSignal): Promise<number | null> {
    const ordering = end === "oldest" ? "id" : "-id";
    const url = `${this.api}${CHANGES_PATH}?ordering=${ordering}&limit=1&fields=id`;
    const page = await this.#call("GET", `list ${CHANGES_PATH}`, url, undefined, signal) as
      | { results?: { id?: unknown }[] }
      | null;
    const id = page?.results?.[0]?.id;
    return typeof id === "number" ? id : null;
  }

  create(
    path: string,
    bodies: InventoryBody[],
    signal?: AbortSignal,
    answer?: readonly string[],
  ): Promise<InventoryObject[]> {
    return this.#bulk("POST", "create", path, bodies, signal, answer);
  }

  update(
    path: string,
    bodies: (InventoryBody & { id: number })[],
    signal?: AbortSignal,
    answer?: readonly string[],
  ): Promise<InventoryObject[]> {
    return this.#bulk("PATCH", "update", path, bodies, signal, answer);
  }

  /**
   * One bulk write; the objects it answered are noted as the run's own writes. With `fields`,
   * the inventory renders only those (answerFields): a 500-VM create answered whole objects
   * (counts, config context, primary IPs, site) that the sync then dropped (docs/sync.md,
   * "Writes: round 6").
   */
  async #bulk(
    method: "POST" | "PATCH",
    what: "create" | "update",
    path: string,
    bodies: InventoryBody[],
    signal?: AbortSignal,
    fields?: readonly string[],
  ): Promise<InventoryObject[]> {
    if (!bodies.length) return [];
    const sent = this.#withMessage(bodies);
    const query = fields?.length ? `?fields=${answerFields(fields, sent).join(",")}` : "";
    const answer = await this.#call(
      method,
      `bulk ${what} (${bodies.length}) on`,
      this.api + path + query,
      sent,
      signal,
    );
    const objects = Array.isArray(answer) ? answer : [answer as InventoryObject];
    this.#noteWritten(path, objects);
    return objects;
  }

  async readOne(
    path: string,
    id: number,
    signal?: AbortSignal,
  ): Promise<{ object: InventoryObject; etag: string | null } | null> {
    const guard: Guard = { expected: [404] };
    const url = `${this.api}${path}${id}/`;
    const body = await this.#call("GET", `read ${path}`, url, undefined, signal, guard);
    if (guard.status === 404 || !body || typeof body !== "object") return null;
    return { object: withoutLinks(body as InventoryObject), etag: guard.etag ?? null };
  }

  async updateGuarded(
    path: string,
    body: InventoryBody & { id: number },
    etag: string | null,
    signal?: AbortSignal,
  ): Promise<InventoryObject | "changed" | "gone"> {
    const guard: Guard = { expected: [404, 412], ifMatch: etag ?? undefined };
    const { id, ...fields } = body;
    const [sent] = this.#withMessage([fields]);
    const done = await this.#call(
      "PATCH",
      "update (If-Match) on",
      `${this.api}${path}${id}/`,
      sent,
      signal,
      guard,
    );
    if (guard.status === 412) return "changed";
    if (guard.status === 404) return "gone";
    this.#noteWritten(path, [done]);
    return done as InventoryObject;
  }

  async delete(path: string, ids: number[], signal?: AbortSignal): Promise<void> {
    if (!ids.length) return;
    await this.#call(
      "DELETE",
      `bulk delete (${ids.length}) on`,
      this.api + path,
      this.#withMessage(ids.map((id) => ({ id }))),
      signal,
    );
  }
}
