/**
 * The WebSocket variant of the sync streams (docs/sync.md "WebSocket streams", SECURITY.md
 * "WebSocket streams"): `GET <stage path>/ws` and `GET /full-update/ws` with
 * `Upgrade: websocket`. The frames are the SSE frames, one JSON text message each
 * (`{"event": …, "data": …}`); the API key is the first message the client sends
 * (`{"api_key": "<X-Service-API-Key value>"}`), never a header or the URL, because browsers
 * cannot set headers on a WebSocket and URLs end up in logs.
 *
 * A refusal is one `error` message whose data is the body the HTTP route would answer plus
 * `http_status`, then a close with code 4000 + that status (4401 bad or missing key, 4429
 * locked out, 4422 bad run options, 4400 no inventory copy or a key in the URL, 4404 unknown
 * endpoint, 4409 another run holds an endpoint or a secret does not decrypt); 4408 when no
 * authentication message came in time. A run ends with its `complete` message and close 1000.
 */
import { STAGES } from "../../domain/sync/runner.ts";
import type { AuthOutcome } from "../../domain/api_keys.ts";
import type { Logger } from "../../infra/logger.ts";
import { ApiError, authError } from "./errors.ts";

/** Every address a sync stream answers WebSockets at (the auth middleware lets them through). */
export const SOCKET_PATHS: ReadonlySet<string> = new Set([
  "/full-update/ws",
  ...STAGES.map((s) => `${s.path}/ws`),
]);

/**
 * Close codes (a server script may only use 1000 and 3000–4999): 1000 after `complete`, every
 * other one 4000 + the matching HTTP status.
 */
export const SOCKET_CLOSE = {
  complete: 1000,
  /** A second message from the client: the stream takes one, the authentication. */
  secondMessage: 4400,
  tooBig: 4413,
  authTimeout: 4408,
} as const;

/** Close code of a refusal: 4000 + the HTTP status the SSE route answers for the same case. */
export const refusalCode = (status: number): number => 4000 + status;

/** How long an opened socket may stay silent before its authentication message. */
export const AUTH_TIMEOUT_MS = 5_000;
/** The authentication message is small; anything larger is refused unread (close 4413). */
export const MAX_MESSAGE_BYTES = 4096;
/** Sockets still waiting for their authentication message, per client address and in all. */
export const MAX_PENDING_PER_CLIENT = 8;
export const MAX_PENDING = 256;

/** Query parameter names that look like a credential: refused, never read as one. */
const KEY_IN_URL = /(^|[^a-z])(api[_-]?key|key|token|secret|password|x-service-api-key)$/i;

export function isSocketUpgrade(method: string, upgrade: string | undefined): boolean {
  return method === "GET" && upgrade?.toLowerCase() === "websocket";
}

/** The first query parameter named like a credential, or null. */
export function credentialInQuery(query: Record<string, string>): string | null {
  return Object.keys(query).find((name) => KEY_IN_URL.test(name)) ?? null;
}

export interface StreamEvent {
  event: string;
  data: unknown;
}

/** A run that passed its checks and holds its endpoints: start it, or stop it. */
export interface AcceptedRun {
  /** Runs to the end, sending each frame; resolves once its hold is released. */
  run(emit: (event: StreamEvent) => void): Promise<void>;
  /** The client went away: the work stops (the run still ends through `run`). */
  stop(): void;
}

export interface SocketStream {
  socket: WebSocket;
  /** Client address for the lockout (null: never counted). */
  ip: string | null;
  /** A credential-looking query parameter, refused before anything else. */
  keyInUrl: string | null;
  authenticate(key: string): Promise<AuthOutcome>;
  /** Checks, options and hold, as the SSE route does them; throws ApiError to refuse. */
  accept(): Promise<AcceptedRun>;
  authTimeoutMs: number;
  keepaliveMs: number;
  logger: Logger;
  /** Called once the socket is authenticated or gone (the pending count drops). */
  settled(): void;
}

/** Wires one upgraded socket: authentication first, then the run's frames, then close. */
export function serveSocketStream(s: SocketStream): void {
  const { socket } = s;
  let state: "auth" | "checking" | "running" | "closed" = "auth";
  let run: AcceptedRun | null = null;
  let keepalive: ReturnType<typeof setInterval> | undefined;
  let last = Date.now();
  let settled = false;
  const settle = () => {
    if (settled) return;
    settled = true;
    s.settled();
  };

  const send = (message: StreamEvent) => {
    if (socket.readyState !== WebSocket.OPEN) return;
    try {
      socket.send(JSON.stringify(message));
      last = Date.now();
    } catch { /* closing */ }
  };
  const close = (code: number, reason: string) => {
    const wasRunning = state === "running";
    state = "closed";
    if (wasRunning) run?.stop();
    clearTimeout(authTimer);
    clearInterval(keepalive);
    settle();
    if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING) {
      try {
        // A close reason is at most 123 bytes.
        socket.close(code, reason.slice(0, 100));
      } catch { /* already closing */ }
    }
  };
  const refuse = (status: number, body: Record<string, unknown>) => {
    send({ event: "error", data: { ...body, http_status: status } });
    close(refusalCode(status), String(body.detail ?? `HTTP ${status}`).split(":")[0]);
  };

  // Counted from the upgrade. Should it run out before the socket is open (a loaded server
  // may take that long to finish the handshake), the refusal waits for the open: a close sent
  // while connecting reaches the client as a bare abnormal closure, without the 4408 and the
  // frame that says what to send.
  let timedOutConnecting = false;
  const timeOut = () => {
    if (state !== "auth") return;
    if (socket.readyState === WebSocket.CONNECTING) {
      timedOutConnecting = true;
      return;
    }
    send({
      event: "error",
      data: {
        detail: `No authentication message within ${s.authTimeoutMs / 1000} s: send ` +
          '{"api_key": "<X-Service-API-Key value>"} as the first message.',
        reason: "auth_timeout",
        http_status: 408,
      },
    });
    close(SOCKET_CLOSE.authTimeout, "no authentication message in time");
  };
  const authTimer = setTimeout(timeOut, s.authTimeoutMs);

  socket.onopen = () => {
    if (s.keyInUrl === null) {
      if (timedOutConnecting) timeOut();
      return;
    }
    refuse(400, {
      detail: `Query parameter "${s.keyInUrl}" looks like a credential and is refused: the ` +
        "API key goes in the first message, never in the URL (URLs end up in logs).",
      reason: "key_in_url",
    });
  };

  socket.onmessage = async (event) => {
    if (state !== "auth") {
      // The stream takes one message. Anything after it is refused and ends the run.
      if (state !== "closed") {
        refuse(400, {
          detail: "This stream takes one message, the authentication; the run was stopped.",
        });
      }
      return;
    }
    state = "checking";
    clearTimeout(authTimer);
    const text = typeof event.data === "string" ? event.data : null;
    if (text === null) return refuse(401, { detail: "The first message must be JSON text." });
    if (
      text.length > MAX_MESSAGE_BYTES || new TextEncoder().encode(text).length > MAX_MESSAGE_BYTES
    ) {
      return refuse(413, { detail: `Messages are limited to ${MAX_MESSAGE_BYTES} bytes.` });
    }
    let key: unknown = undefined;
    try {
      key = (JSON.parse(text) as Record<string, unknown> | null)?.api_key;
    } catch { /* not JSON: no key */ }
    if (typeof key !== "string" || key === "") {
      return refuse(401, {
        detail: 'The first message must be {"api_key": "<X-Service-API-Key value>"}.',
        reason: "invalid_key",
      });
    }
    try {
      const outcome = await s.authenticate(key);
      if (!outcome.ok) {
        const refused = authError(outcome);
        const retry = refused.headers["Retry-After"];
        return refuse(refused.status, {
          ...refused.body,
          reason: outcome.reason,
          ...(retry ? { retry_after: Number(retry) } : {}),
        });
      }
      settle();
      if (socket.readyState !== WebSocket.OPEN) return close(SOCKET_CLOSE.complete, "gone");
      run = await s.accept();
    } catch (error) {
      if (error instanceof ApiError) return refuse(error.status, error.body);
      s.logger.log("error", "sync socket refused on an internal error", {
        error: error instanceof Error ? error.message : String(error),
      });
      return refuse(500, { detail: "Internal error; see the server log." });
    }
    const accepted = run;
    // The client may have left while the checks ran: the run is stopped before it starts, and
    // still goes through `run` so its hold is released the one way.
    if (socket.readyState !== WebSocket.OPEN) accepted.stop();
    else state = "running";
    keepalive = setInterval(() => {
      if (Date.now() - last >= s.keepaliveMs) send({ event: "keepalive", data: null });
    }, Math.max(10, Math.min(1000, s.keepaliveMs / 3)));
    await accepted.run(send);
    if (state === "running") state = "checking"; // ended by itself: nothing left to stop
    close(SOCKET_CLOSE.complete, "complete");
  };

  socket.onclose = () => {
    const wasRunning = state === "running";
    state = "closed";
    clearTimeout(authTimer);
    clearInterval(keepalive);
    settle();
    if (wasRunning) run?.stop();
  };
  socket.onerror = () => {/* onclose follows */};
}
