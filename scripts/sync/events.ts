/**
 * Opens one stage stream of the backend and turns its Server-Sent Events into typed frames:
 * `step` (started / progress / completed / failed), `error` (what went wrong, where, a hint)
 * and `complete` (sent last, exactly once). The SSE framing is eventsource-parser's job.
 */
import { EventSourceParserStream } from "eventsource-parser/stream";

export interface StageCounts {
  created: number;
  updated: number;
  unchanged: number;
  deleted: number;
  failed: number;
}

export const COUNT_FIELDS: readonly (keyof StageCounts)[] = [
  "created",
  "updated",
  "unchanged",
  "deleted",
  "failed",
];

export interface StepFrame {
  kind: "step";
  step: string;
  status: "started" | "progress" | "completed" | "failed";
  message?: string;
  progress?: { current: number; total: number };
  result?: Partial<StageCounts>;
}

export interface ErrorFrame {
  kind: "error";
  step?: string;
  error?: string;
  /** A sentence, or an object naming the operation, URL, upstream status, body and hint. */
  detail?: unknown;
  hint?: string;
  /** Where it happened, when the server says: operation, url, upstream_status, object, … */
  context: Record<string, string | number>;
}

/** Fields of an error frame that locate the failure, in the order an operator reads them. */
export const ERROR_CONTEXT_FIELDS = [
  "operation",
  "url",
  "upstream_status",
  "object",
  "endpoint_id",
  "reason",
] as const;

export interface CompleteFrame {
  kind: "complete";
  ok: boolean;
  message?: string;
  result?: unknown;
  /** Each stage's result, when the server sums them up here too. */
  stages?: { step: string; result: Partial<StageCounts> }[];
  errors?: { detail?: unknown }[];
}

/** A frame this client could not read (not JSON, or not the contract's shape). */
export interface UnreadableFrame {
  kind: "unreadable";
  event: string;
  data: string;
}

/** One item of a dry run's plan (docs/sync.md, "Dry run and plan"). */
export interface PlanFrame {
  kind: "plan";
  step: string;
  action: string;
  object: string;
  id: number;
  fields?: Record<string, unknown>;
  changes?: Record<string, { old: unknown; new: unknown }>;
}

export type SyncFrame = StepFrame | ErrorFrame | CompleteFrame | UnreadableFrame | PlanFrame;

/** Why a stream could not be opened: the server's answer, or no answer at all. */
export interface OpenFailure {
  /** HTTP status, or 0 when the server could not be reached. */
  status: number;
  /** The server's `detail` (string or object), or the network error. */
  detail: unknown;
  hint?: string;
}

export type OpenResult = { ok: true; frames: AsyncIterable<SyncFrame> } | {
  ok: false;
  failure: OpenFailure;
};

const STEP_STATUSES = new Set(["started", "progress", "completed", "failed"]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function optionalText(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** One SSE message to a typed frame; unknown event names are skipped (undefined). */
export function toFrame(event: string | undefined, data: string): SyncFrame | undefined {
  if (event !== "step" && event !== "error" && event !== "complete" && event !== "plan") {
    return undefined;
  }
  let body: unknown;
  try {
    body = JSON.parse(data);
  } catch {
    return { kind: "unreadable", event, data };
  }
  if (!isRecord(body)) return { kind: "unreadable", event, data };
  if (event === "plan") {
    if (typeof body.step !== "string" || typeof body.action !== "string") {
      return { kind: "unreadable", event, data };
    }
    return {
      kind: "plan",
      step: body.step,
      action: body.action,
      object: String(body.object ?? ""),
      id: Number(body.id),
      fields: isRecord(body.fields) ? body.fields : undefined,
      changes: isRecord(body.changes)
        ? body.changes as Record<string, { old: unknown; new: unknown }>
        : undefined,
    };
  }
  if (event === "step") {
    if (typeof body.step !== "string" || !STEP_STATUSES.has(body.status as string)) {
      return { kind: "unreadable", event, data };
    }
    const frame: StepFrame = {
      kind: "step",
      step: body.step,
      status: body.status as StepFrame["status"],
      message: optionalText(body.message),
    };
    const progress = body.progress;
    if (
      isRecord(progress) && Number.isFinite(progress.current) && Number.isFinite(progress.total)
    ) {
      frame.progress = { current: progress.current as number, total: progress.total as number };
    }
    if (isRecord(body.result)) frame.result = counts(body.result);
    return frame;
  }
  if (event === "error") {
    const context: Record<string, string | number> = {};
    for (const field of ERROR_CONTEXT_FIELDS) {
      const value = body[field];
      if (typeof value === "string" && value || typeof value === "number") context[field] = value;
    }
    return {
      kind: "error",
      step: optionalText(body.step),
      error: optionalText(body.error),
      detail: body.detail,
      hint: optionalText(body.hint),
      context,
    };
  }
  if (typeof body.ok !== "boolean") return { kind: "unreadable", event, data };
  return {
    kind: "complete",
    ok: body.ok,
    message: optionalText(body.message),
    result: body.result,
    stages: Array.isArray(body.stages)
      ? body.stages.filter((e) => isRecord(e) && typeof e.step === "string" && isRecord(e.result))
        .map((e) => ({
          step: e.step as string,
          result: counts(e.result as Record<string, unknown>),
        }))
      : undefined,
    errors: Array.isArray(body.errors)
      ? body.errors.map((e) => (isRecord(e) ? e : { detail: e }))
      : undefined,
  };
}

function counts(raw: Record<string, unknown>): Partial<StageCounts> {
  const out: Partial<StageCounts> = {};
  for (const field of COUNT_FIELDS) {
    if (Number.isFinite(raw[field])) out[field] = raw[field] as number;
  }
  return out;
}

/** Typed frames of an SSE body; ends when the body ends (or is cancelled). */
export async function* readFrames(body: ReadableStream<Uint8Array>): AsyncIterable<SyncFrame> {
  const messages = body
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream());
  for await (const message of messages) {
    const frame = toFrame(message.event, message.data);
    if (frame) yield frame;
  }
}

export interface OpenOptions {
  fetch: typeof fetch;
  baseUrl: string;
  key: string;
  path: string;
  endpointIds: readonly number[];
  /** `dry_run=true`: the server writes nothing and streams the plan. */
  dryRun?: boolean;
  signal?: AbortSignal;
  /** With no byte (not even a keepalive comment) for this long, the stream counts as lost. */
  idleTimeoutMs?: number;
  client?: Deno.HttpClient;
}

/** The server sends a keepalive comment after 15 s of silence; four missed ones is a loss. */
export const DEFAULT_IDLE_TIMEOUT_MS = 60_000;

export function streamUrl(
  baseUrl: string,
  path: string,
  endpointIds: readonly number[],
  dryRun = false,
): string {
  const url = new URL(baseUrl.replace(/\/+$/, "") + path);
  if (endpointIds.length > 0) {
    url.searchParams.set("hypervisor_endpoint_ids", endpointIds.join(","));
  }
  if (dryRun) url.searchParams.set("dry_run", "true");
  return url.href;
}

/** One plan item as a line: `update  virtual machines web: name "web" → "web-01"`. */
export function planLine(item: PlanFrame): string {
  const show = (v: unknown) => JSON.stringify(v) ?? "null";
  const what = item.action === "create"
    ? Object.entries(item.fields ?? {}).filter(([k]) => k !== "tags").slice(0, 6)
      .map(([k, v]) => `${k}=${show(v)}`).join(", ")
    : Object.entries(item.changes ?? {}).map(([k, c]) => `${k} ${show(c.old)} → ${show(c.new)}`)
      .join(", ");
  return `${item.step.padEnd(18)} ${item.action.padEnd(6)} ${item.object}${
    what ? `: ${what}` : ""
  }`;
}

export async function openStageStream(options: OpenOptions): Promise<OpenResult> {
  const url = streamUrl(options.baseUrl, options.path, options.endpointIds, options.dryRun);
  const idle = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, idle.signal]) : idle.signal;
  let response: Response;
  try {
    response = await options.fetch(url, {
      headers: { "X-Service-API-Key": options.key, accept: "text/event-stream" },
      // The key must never follow a redirect to another host: a 3xx is reported instead.
      redirect: "manual",
      signal,
      ...(options.client ? { client: options.client } : {}),
    } as RequestInit);
  } catch (error) {
    if (options.signal?.aborted) throw error;
    return {
      ok: false,
      failure: {
        status: 0,
        // The message of a refused header may quote it: the key never reaches the output.
        detail: `cannot reach ${new URL(url).origin}: ${
          (error as Error).message.replaceAll(options.key, "<key>")
        }`,
        hint:
          "Is the server running? Start it with `npx -y deno@2.9.6 task start` (or `… task demo`), " +
          "or point --url / BRIDGEBOX_URL at it.",
      },
    };
  }
  if (response.status < 200 || response.status >= 300) {
    return { ok: false, failure: await describeAnswer(response, options.path) };
  }
  const type = response.headers.get("content-type") ?? "";
  if (!type.startsWith("text/event-stream") || !response.body) {
    await response.body?.cancel();
    return {
      ok: false,
      failure: {
        status: response.status,
        detail: `expected an event stream from GET ${options.path}, got "${type || "no body"}"`,
        hint: "Is --url a Bridgebox backend?",
      },
    };
  }
  return {
    ok: true,
    frames: readFrames(
      watchIdle(response.body, options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, idle),
    ),
  };
}

/** Aborts `idle` when no chunk arrives for `ms`, so a silent, stuck stream ends. */
function watchIdle(
  body: ReadableStream<Uint8Array>,
  ms: number,
  idle: AbortController,
): ReadableStream<Uint8Array> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(
      () => idle.abort(new IdleTimeout(`no frame or keepalive for ${ms / 1000} s`)),
      ms,
    );
  };
  arm();
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        arm();
        controller.enqueue(chunk);
      },
      flush() {
        clearTimeout(timer);
      },
      cancel() {
        clearTimeout(timer);
      },
    }),
  );
}

export class IdleTimeout extends Error {
  override name = "IdleTimeout";
}

async function describeAnswer(response: Response, path: string): Promise<OpenFailure> {
  const raw = await response.text().catch(() => "");
  let detail: unknown = raw.slice(0, 500) || response.statusText;
  try {
    const body = JSON.parse(raw);
    if (isRecord(body) && "detail" in body) {
      detail = typeof body.reason === "string" && typeof body.detail === "string"
        ? `${body.reason}: ${body.detail}`
        : body.detail;
    }
  } catch {
    // Not JSON: the excerpt of the text is the detail.
  }
  const status = response.status;
  const location = response.headers.get("location");
  let hint: string | undefined;
  if (status >= 300 && status < 400) {
    detail = `redirected to ${location ?? "(no location)"}; not followed`;
    hint = "Point --url at the final address (the key is never sent to a redirect target).";
  } else if (status === 401) {
    hint = "Check the key: BRIDGEBOX_API_KEY or --key must be a key registered on this backend.";
  } else if (status === 404) {
    hint = `This server has no GET ${path}. Is --url a Bridgebox backend with the sync stages?`;
  } else if (status === 429) {
    const retry = response.headers.get("retry-after");
    hint = `Too many failed attempts from this address${
      retry ? `; retry in ${retry} s` : ""
    }, with the right key.`;
  } else if (
    status === 400 && typeof detail === "string" && detail.includes("inventory endpoint")
  ) {
    hint = "Register the inventory copy first: POST /inventory/endpoint (see the README tour).";
  } else if (status >= 500) {
    hint = "The server failed; its log has the cause.";
  }
  return { status, detail, hint };
}
