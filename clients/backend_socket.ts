/**
 * The WebSocket variant of the backend's stage streams as the plugin's job runner reads them
 * (docs/sync.md "WebSocket streams"): the key travels in the first message, and each message is
 * one frame `{"event": …, "data": …}`.
 *
 * The protocol (handshake, framing, masking, UTF-8 and size checks, ping answers) is the `ws`
 * library's; what stays ours is where it may connect. The guarded transport checks the target
 * by the outbound rules and hands over a `createConnection` that dials the checked address only,
 * with the certificate check the endpoint's verify_ssl asks for (clients/outbound.ts,
 * SECURITY.md "Outbound requests"). The runtime's own WebSocket is not used: it resolves the
 * name again when it connects and cannot skip certificate checks for an endpoint saved with
 * verify_ssl false, so it would bypass those rules.
 */
import WebSocket from "ws";
import type { IncomingMessage } from "node:http";
import type { StreamEvent, StreamOpen } from "../domain/plugin/ports.ts";
import type { OutboundSocket } from "./outbound.ts";

/** A single frame from the backend may be large (a `complete` with a big plan), not endless. */
export const MAX_INCOMING_MESSAGE_BYTES = 64 * 1024 * 1024;

/** How much of a refused handshake's body is read for the error (a JSON error is small). */
const MAX_REFUSAL_BODY_BYTES = 64 * 1024;

/** After our close frame, how long the backend has to answer before the socket is cut. */
const CLOSE_GRACE_MS = 2_000;

/** Close codes ws uses when the connection ends without a close frame. */
const ABNORMAL_CLOSE = 1006;

export interface SocketStreamOptions {
  signal?: AbortSignal;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  verifyTls: boolean;
  /** The largest message accepted; default MAX_INCOMING_MESSAGE_BYTES. */
  maxMessageBytes?: number;
}

function describe(error: unknown): string {
  if (error instanceof DOMException && error.name === "TimeoutError") return "timed out";
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message;
  }
  return String(error);
}

/** `{"event": …, "data": …}` or, for anything else, the text as a `message` event. */
function parseMessage(text: string): StreamEvent {
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed === "object" && typeof parsed.event === "string") {
      return { event: parsed.event, data: parsed.data };
    }
  } catch { /* not JSON */ }
  return { event: "message", data: text };
}

/** The body of an answer that is not a 101, bounded; the connection is cut after it. */
function readRefusal(response: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    const done = () => {
      response.destroy();
      const whole = new Uint8Array(size);
      let at = 0;
      for (const chunk of chunks) {
        whole.set(chunk.subarray(0, size - at), at);
        at += Math.min(chunk.length, size - at);
      }
      resolve(new TextDecoder().decode(whole));
    };
    response.on("data", (chunk: Uint8Array) => {
      chunks.push(chunk);
      size = Math.min(size + chunk.length, MAX_REFUSAL_BODY_BYTES);
      if (size >= MAX_REFUSAL_BODY_BYTES) done();
    });
    response.on("end", done);
    response.on("error", done);
  });
}

type Handshake =
  | { kind: "open" }
  | { kind: "refused"; status: number; text: string }
  | { kind: "failed"; error: unknown };

/**
 * Opens `url` (ws:// or wss://), sends `{"api_key": key}` and reads the first message: a
 * refusal (`error` with `http_status`) answers ok=false with that status and body, as the SSE
 * route's HTTP status would; anything else opens the stream, the first frame included.
 */
export async function openSocketStream(
  connect: OutboundSocket,
  url: URL,
  key: string | null,
  options: SocketStreamOptions,
): Promise<StreamOpen> {
  const where = `GET ${url.href}`;
  const abort = new AbortController();
  const stop = () => abort.abort(options.signal?.reason);
  options.signal?.addEventListener("abort", stop, { once: true });
  let timedOut = false;
  let timer = setTimeout(() => {
    timedOut = true;
    abort.abort(new DOMException("timed out", "TimeoutError"));
  }, options.connectTimeoutMs);
  const detach = () => {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", stop);
  };
  const unreachable = (error: unknown): StreamOpen => {
    detach();
    const why = timedOut
      ? `timed out after ${options.connectTimeoutMs / 1000} s`
      : `unreachable (${describe(error)})`;
    return { ok: false, status: null, error: `${where}: backend ${why}` };
  };

  let socket: WebSocket;
  try {
    // Refused targets throw here, before anything is dialled.
    const pinned = await connect(url, { verifyTls: options.verifyTls });
    abort.signal.throwIfAborted();
    // closeTimeout is in ws 8.23 but not yet in its type package.
    const settings: WebSocket.ClientOptions & { closeTimeout: number } = {
      createConnection: pinned.createConnection as WebSocket.ClientOptions["createConnection"],
      rejectUnauthorized: options.verifyTls,
      maxPayload: options.maxMessageBytes ?? MAX_INCOMING_MESSAGE_BYTES,
      handshakeTimeout: options.connectTimeoutMs,
      closeTimeout: CLOSE_GRACE_MS,
      // No compression (nothing to inflate from a hostile peer), no redirects (rule 5).
      perMessageDeflate: false,
      followRedirects: false,
    };
    socket = new WebSocket(pinned.url.href, settings);
  } catch (error) {
    return unreachable(error);
  }

  const handshake = await new Promise<Handshake>((resolve) => {
    const onAbort = () => {
      socket.terminate();
      resolve({ kind: "failed", error: abort.signal.reason });
    };
    abort.signal.addEventListener("abort", onAbort, { once: true });
    const settle = (result: Handshake) => {
      abort.signal.removeEventListener("abort", onAbort);
      resolve(result);
    };
    socket.once("open", () => settle({ kind: "open" }));
    socket.once("unexpected-response", async (_request, response) => {
      const text = await readRefusal(response);
      settle({ kind: "refused", status: response.statusCode ?? 0, text });
    });
    socket.once("error", (error) => settle({ kind: "failed", error }));
  });
  if (handshake.kind !== "open") {
    socket.removeAllListeners();
    socket.on("error", () => {/* the answer is already given */});
    socket.terminate();
    if (handshake.kind === "failed") return unreachable(handshake.error);
    detach();
    let body: unknown = undefined;
    try {
      body = handshake.text ? JSON.parse(handshake.text) : undefined;
    } catch { /* not JSON */ }
    const detail = (body as { detail?: unknown } | undefined)?.detail;
    return {
      ok: false,
      status: handshake.status,
      error: `${where}: HTTP ${handshake.status} instead of a WebSocket: ${
        typeof detail === "string" ? detail : handshake.text.slice(0, 300)
      }`,
      body,
    };
  }

  // Messages in arrival order, then how the connection ended.
  const queue: StreamEvent[] = [];
  let ended = null as { error: Error | null } | null;
  let wake: (() => void) | null = null;
  const notify = () => {
    wake?.();
    wake = null;
  };
  const finish = (error: Error | null) => {
    if (ended) return;
    ended = { error };
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", stop);
    notify();
  };
  /** Going away: the backend stops the run when the socket closes. */
  const goAway = () => {
    if (socket.readyState === WebSocket.OPEN) socket.close(1001);
    else if (socket.readyState !== WebSocket.CLOSED) socket.terminate();
  };
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = true;
      socket.terminate();
      finish(new Error(`${where}: the stream was silent for ${options.idleTimeoutMs / 1000} s`));
    }, options.idleTimeoutMs);
  };
  abort.signal.addEventListener("abort", () => {
    goAway();
    finish(
      timedOut
        ? new Error(`${where}: backend timed out after ${options.connectTimeoutMs / 1000} s`)
        : new Error(`${where}: cancelled`),
    );
  }, { once: true });

  let closeCode: number | null = null;
  let broken: Error | null = null;
  // Until the first message the connect timeout runs; after it, any frame proves the stream alive.
  let streaming = false;
  socket.on("message", (data, isBinary) => {
    if (ended) return;
    if (streaming) arm();
    if (isBinary) {
      socket.close(1003);
      return finish(new Error(`${where}: the backend sent a binary message`));
    }
    queue.push(parseMessage(String(data)));
    notify();
  });
  socket.on("ping", () => {
    if (streaming && !ended) arm();
  });
  // A protocol violation (too large, masked, bad UTF-8…): ws closes with the matching code.
  socket.on("error", (error) => {
    broken = error;
    const protocol = String((error as { code?: unknown }).code ?? "").startsWith("WS_ERR_");
    finish(
      new Error(
        protocol
          ? `${where}: the backend sent ${describe(error)}`
          : `${where}: the stream broke (${describe(error)})`,
      ),
    );
  });
  socket.on("close", (code, reason) => {
    closeCode = code;
    if (broken) return finish(null);
    if (code === ABNORMAL_CLOSE) {
      return finish(new Error(`${where}: the stream broke (connection closed)`));
    }
    const text = reason.toString();
    finish(
      code === 1000
        ? null
        : new Error(`${where}: the backend closed the stream (${code}${text ? ` ${text}` : ""})`),
    );
  });
  socket.send(JSON.stringify({ api_key: key ?? "" }));

  const next = async (): Promise<StreamEvent | null> => {
    while (!queue.length && !ended) await new Promise<void>((r) => wake = r);
    if (queue.length) return queue.shift()!;
    if (ended?.error) throw ended.error;
    return null;
  };

  // The first message tells an accepted run from a refusal.
  let first: StreamEvent | null;
  try {
    first = await next();
  } catch (error) {
    goAway();
    const message = (error as Error).message;
    const refusedStatus = closeCode !== null && closeCode >= 4000 && closeCode < 5000
      ? closeCode - 4000
      : null;
    return { ok: false, status: refusedStatus, error: message };
  }
  const refusal = first?.event === "error" &&
    typeof (first.data as { http_status?: unknown })?.http_status === "number";
  if (refusal) {
    const { http_status: status, ...body } = first!.data as Record<string, unknown>;
    goAway();
    finish(null);
    const detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body);
    return {
      ok: false,
      status: status as number,
      error: `${where}: refused (${status}): ${detail}`,
      body,
    };
  }
  streaming = true;
  arm();
  const events = async function* (): AsyncGenerator<StreamEvent> {
    try {
      let message = first;
      while (message) {
        // The backend's keepalive (the SSE comment's twin) only proves the stream alive.
        if (message.event !== "keepalive") yield message;
        message = await next();
      }
    } finally {
      goAway();
      finish(null);
    }
  };
  return { ok: true, status: 200, events: events() };
}
