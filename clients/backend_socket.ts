/**
 * The WebSocket variant of the backend's stage streams as the plugin's job runner reads them
 * (docs/sync.md "WebSocket streams"): the handshake goes through the guarded transport's
 * upgrade (clients/outbound.ts: the same address check and pinning as every request), the key
 * travels in the first message, and each message is one frame `{"event": …, "data": …}`.
 *
 * The framing (RFC 6455) is written here rather than with the runtime's WebSocket: that one
 * connects wherever the name resolves at that moment and cannot skip certificate checks for an
 * endpoint saved with verify_ssl false, so it would bypass the outbound rules.
 */
import type { Duplex } from "node:stream";
import type { StreamEvent, StreamOpen } from "../domain/plugin/ports.ts";
import type { OutboundUpgrade } from "./outbound.ts";

/** A single frame from the backend may be large (a `complete` with a big plan), not endless. */
export const MAX_INCOMING_MESSAGE_BYTES = 64 * 1024 * 1024;

const HANDSHAKE_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

const OP = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 } as const;

export interface SocketStreamOptions {
  signal?: AbortSignal;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  verifyTls: boolean;
}

/** One masked client frame (clients must mask every frame). */
export function encodeFrame(opcode: number, payload: Uint8Array): Uint8Array {
  const length = payload.length;
  const extra = length < 126 ? 0 : length < 65536 ? 2 : 8;
  const out = new Uint8Array(2 + extra + 4 + length);
  out[0] = 0x80 | opcode;
  const view = new DataView(out.buffer);
  if (extra === 0) out[1] = 0x80 | length;
  else if (extra === 2) {
    out[1] = 0x80 | 126;
    view.setUint16(2, length);
  } else {
    out[1] = 0x80 | 127;
    view.setBigUint64(2, BigInt(length));
  }
  const mask = crypto.getRandomValues(new Uint8Array(4));
  out.set(mask, 2 + extra);
  const start = 2 + extra + 4;
  for (let i = 0; i < length; i++) out[start + i] = payload[i] ^ mask[i & 3];
  return out;
}

type Incoming =
  | { kind: "text"; text: string }
  | { kind: "close"; code: number; reason: string }
  | { kind: "ping"; payload: Uint8Array };

/** Reassembles the server's frames into messages; throws on a protocol violation. */
export class FrameReader {
  #buffer = new Uint8Array(0);
  #parts: Uint8Array[] = [];
  #partsLength = 0;
  #partsOpcode = 0;
  constructor(private readonly maxMessageBytes: number) {}

  push(chunk: Uint8Array): Incoming[] {
    const joined = new Uint8Array(this.#buffer.length + chunk.length);
    joined.set(this.#buffer);
    joined.set(chunk, this.#buffer.length);
    this.#buffer = joined;
    const out: Incoming[] = [];
    while (true) {
      const b = this.#buffer;
      if (b.length < 2) break;
      const fin = (b[0] & 0x80) !== 0;
      const opcode = b[0] & 0x0f;
      if (b[1] & 0x80) throw new Error("the server masked a frame");
      let length = b[1] & 0x7f;
      let offset = 2;
      const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
      if (length === 126) {
        if (b.length < 4) break;
        length = view.getUint16(2);
        offset = 4;
      } else if (length === 127) {
        if (b.length < 10) break;
        const big = view.getBigUint64(2);
        if (big > BigInt(this.maxMessageBytes)) throw new Error("a message too large");
        length = Number(big);
        offset = 10;
      }
      if (this.#partsLength + length > this.maxMessageBytes) {
        throw new Error("a message too large");
      }
      if (b.length < offset + length) break;
      const payload = b.slice(offset, offset + length);
      this.#buffer = b.slice(offset + length);
      if (opcode === OP.close) {
        const code = payload.length >= 2 ? (payload[0] << 8) | payload[1] : 1005;
        out.push({ kind: "close", code, reason: new TextDecoder().decode(payload.slice(2)) });
      } else if (opcode === OP.ping) {
        out.push({ kind: "ping", payload });
      } else if (opcode === OP.pong) {
        // nothing to do
      } else if (opcode === OP.text || opcode === OP.binary || opcode === OP.continuation) {
        if (opcode !== OP.continuation) {
          if (this.#parts.length) throw new Error("a new message inside a fragmented one");
          this.#partsOpcode = opcode;
        } else if (!this.#parts.length) {
          throw new Error("a continuation frame with nothing to continue");
        }
        this.#parts.push(payload);
        this.#partsLength += payload.length;
        if (fin) {
          const whole = new Uint8Array(this.#partsLength);
          let at = 0;
          for (const part of this.#parts) {
            whole.set(part, at);
            at += part.length;
          }
          this.#parts = [];
          this.#partsLength = 0;
          if (this.#partsOpcode !== OP.text) throw new Error("a binary message");
          out.push({ kind: "text", text: new TextDecoder("utf-8", { fatal: true }).decode(whole) });
        }
      } else {
        throw new Error(`an unknown opcode ${opcode}`);
      }
    }
    return out;
  }
}

async function acceptValue(key: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-1",
    new TextEncoder().encode(key + HANDSHAKE_GUID),
  );
  return new Uint8Array(digest).toBase64();
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

/**
 * Opens `url` (ws:// or wss://), sends `{"api_key": key}` and reads the first message: a
 * refusal (`error` with `http_status`) answers ok=false with that status and body, as the SSE
 * route's HTTP status would; anything else opens the stream, the first frame included.
 */
export async function openSocketStream(
  upgrade: OutboundUpgrade,
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

  const handshakeKey = crypto.getRandomValues(new Uint8Array(16)).toBase64();
  let socket: Duplex;
  let head: Uint8Array;
  try {
    const upgraded = await upgrade(url, {
      headers: {
        "sec-websocket-key": handshakeKey,
        "sec-websocket-version": "13",
      },
      verifyTls: options.verifyTls,
      signal: abort.signal,
    });
    if (!upgraded.ok) {
      detach();
      const text = await upgraded.response.text().catch(() => "");
      let body: unknown = undefined;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch { /* not JSON */ }
      const detail = (body as { detail?: unknown } | undefined)?.detail;
      return {
        ok: false,
        status: upgraded.response.status,
        error: `${where}: HTTP ${upgraded.response.status} instead of a WebSocket: ${
          typeof detail === "string" ? detail : text.slice(0, 300)
        }`,
        body,
      };
    }
    if (upgraded.headers.get("sec-websocket-accept") !== await acceptValue(handshakeKey)) {
      upgraded.socket.destroy();
      detach();
      return { ok: false, status: null, error: `${where}: not a WebSocket handshake answer` };
    }
    socket = upgraded.socket;
    head = upgraded.head;
  } catch (error) {
    detach();
    const why = timedOut
      ? `timed out after ${options.connectTimeoutMs / 1000} s`
      : `unreachable (${describe(error)})`;
    return { ok: false, status: null, error: `${where}: backend ${why}` };
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
    socket.destroy();
    notify();
  };
  const write = (opcode: number, payload: Uint8Array) => {
    if (!socket.destroyed) socket.write(encodeFrame(opcode, payload));
  };
  const closeFrame = (code: number) => {
    const payload = new Uint8Array(2);
    new DataView(payload.buffer).setUint16(0, code);
    return payload;
  };
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = true;
      finish(new Error(`${where}: the stream was silent for ${options.idleTimeoutMs / 1000} s`));
    }, options.idleTimeoutMs);
  };
  abort.signal.addEventListener("abort", () => {
    // Going away: the backend stops the run when the socket closes.
    write(OP.close, closeFrame(1001));
    finish(
      timedOut
        ? new Error(`${where}: backend timed out after ${options.connectTimeoutMs / 1000} s`)
        : new Error(`${where}: cancelled`),
    );
  }, { once: true });

  const reader = new FrameReader(MAX_INCOMING_MESSAGE_BYTES);
  let closeCode: number | null = null;
  // Until the first message the connect timeout runs; after it, any byte proves the stream alive.
  let streaming = false;
  const onData = (chunk: Uint8Array) => {
    if (ended) return;
    if (streaming) arm();
    let messages;
    try {
      messages = reader.push(new Uint8Array(chunk));
    } catch (error) {
      write(OP.close, closeFrame(1002));
      return finish(new Error(`${where}: the backend sent ${describe(error)}`));
    }
    for (const m of messages) {
      if (m.kind === "ping") write(OP.pong, m.payload);
      else if (m.kind === "text") queue.push(parseMessage(m.text));
      else {
        closeCode = m.code;
        write(OP.close, closeFrame(1000));
        const clean = m.code === 1000;
        finish(
          clean ? null : new Error(
            `${where}: the backend closed the stream (${m.code}${m.reason ? ` ${m.reason}` : ""})`,
          ),
        );
      }
    }
    notify();
  };
  socket.on("data", onData);
  socket.on(
    "error",
    (error: Error) => finish(new Error(`${where}: the stream broke (${describe(error)})`)),
  );
  socket.on("close", () => finish(new Error(`${where}: the stream broke (connection closed)`)));
  if (head.length) onData(head);
  write(OP.text, new TextEncoder().encode(JSON.stringify({ api_key: key ?? "" })));

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
    finish(null);
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
      if (!ended) write(OP.close, closeFrame(1001));
      finish(null);
    }
  };
  return { ok: true, status: 200, events: events() };
}
