/**
 * Browser terminal sessions to a hypervisor endpoint over SSH (README "Browser terminal",
 * SECURITY.md "Browser terminal"). Pure: the SSH client and the store are ports.
 *
 * A session is created by a signed-in console user holding `service.open_ssh_terminal` with view
 * on the endpoint; it yields a one-time ticket the page sends as the first WebSocket frame
 * (never in a URL). The ticket is taken exactly once (an atomic check in the store), expires
 * after TICKET_TTL_MS, and is bound to the console session that asked for it.
 */
import type { TerminalSessionRecord, TerminalSessionStore } from "../storage/ports.ts";
import {
  endpointAddressReason,
  endpointNameReason,
  isIpAddress,
  parseIpv4,
  parseIpv6,
} from "./outbound_policy.ts";

export type { TerminalSessionRecord, TerminalSessionStore };

/** What the SSH side needs to open a shell; secrets never leave this object. */
export interface SshTarget {
  host: string;
  port: number;
  username: string;
  password: string;
  privateKey: string;
  /** `SHA256:<base64 without padding>`; checked during key exchange, before any secret. */
  pinnedFingerprint: string;
  /** Who pins the key, for messages: "the endpoint", "node pve2". */
  pinnedBy?: string;
}

export interface PtySize {
  cols: number;
  rows: number;
}

/** An open shell on the far side. */
export interface SshShell {
  write(data: Uint8Array | string): void;
  resize(size: PtySize): void;
  onData(listener: (chunk: Uint8Array) => void): void;
  /** Resolves once the SSH side is closed (either end). */
  readonly closed: Promise<void>;
  close(): void;
}

export type SshRefusal =
  | "fingerprint_mismatch"
  | "auth_failed"
  | "unreachable";

export type SshOpened =
  | { ok: true; shell: SshShell }
  | { ok: false; reason: SshRefusal; detail: string };

export type HostKeyRead =
  | { ok: true; fingerprint: string; algorithm: string }
  | { ok: false; detail: string };

/** The SSH client port (clients/ssh.ts implements it; tests inject the same one). */
export interface SshConnector {
  openShell(target: SshTarget, size: PtySize): Promise<SshOpened>;
  /** Reads the host key the server presents, sending no credential. */
  readHostKey(host: string, port: number): Promise<HostKeyRead>;
}

export const TICKET_TTL_MS = 60_000;
export const DEFAULT_IDLE_TIMEOUT_MS = 15 * 60_000;

export async function ticketHash(ticket: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(ticket));
  return new Uint8Array(digest).toHex();
}

/** `SHA256:` + base64 of the key's SHA-256 without padding (OpenSSH's form). */
export async function fingerprintOf(key: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", key as BufferSource));
  return `SHA256:${digest.toBase64({ omitPadding: true })}`;
}

/** Pinned fingerprints compare without their optional trailing `=`. */
export function sameFingerprint(a: string, b: string): boolean {
  const norm = (v: string) => v.trim().replace(/=+$/, "");
  return norm(a) === norm(b);
}

export function mismatchDetail(
  pinned: string,
  presented: string,
  pinnedBy = "the endpoint",
): string {
  return `Host key mismatch: ${pinnedBy} pins ${pinned} but the server presented ${presented}. ` +
    "Nothing was sent. If the host key really changed, read it with …/host-key-fingerprint/, " +
    "check it out of band, and pin the new one on the endpoint.";
}

/**
 * Where an SSH session may go (SECURITY.md "Outbound requests"): the same policy as every
 * outbound HTTP request. A node's address comes from the cluster (`/cluster/status`), which
 * may be hostile: loopback, link-local, metadata and multicast addresses are refused unless
 * `SERVICE_ALLOW_LOOPBACK_TARGETS`. A name is resolved here and the session goes to the address
 * that was checked, never to a second lookup of the name.
 */
export interface SshHostPolicy {
  allowLoopback: boolean;
  /** A and AAAA addresses of a host name (empty when it does not resolve). */
  resolve: (host: string) => Promise<string[]>;
}

export type SshHostCheck =
  | { ok: true; address: string }
  | { ok: false; detail: string };

export async function checkSshHost(host: string, policy: SshHostPolicy): Promise<SshHostCheck> {
  const name = host.trim().replace(/^\[|\]$/g, "").toLowerCase().replace(/\.$/, "");
  if (!name) return { ok: false, detail: "No address to connect to." };
  if (policy.allowLoopback) return { ok: true, address: name };
  const refused = (shown: string, reason: string): SshHostCheck => ({
    ok: false,
    detail: `SSH to ${shown} refused: it is ${reason}; such targets are refused unless ` +
      "SERVICE_ALLOW_LOOPBACK_TARGETS is true.",
  });
  if (isIpAddress(name)) {
    const reason = endpointAddressReason(name);
    return reason ? refused(name, reason) : { ok: true, address: name };
  }
  const nameReason = endpointNameReason(name);
  if (nameReason) return refused(name, nameReason);
  const addresses = await policy.resolve(name).catch(() => [] as string[]);
  if (addresses.length === 0) return { ok: false, detail: `Host ${name} does not resolve.` };
  for (const address of addresses) {
    const reason = endpointAddressReason(address);
    if (reason) return refused(`${name} (${address})`, reason);
  }
  return { ok: true, address: addresses[0] };
}

/** The facts of a hypervisor endpoint a node's terminal needs. */
export interface NodeEndpointFacts {
  /** The endpoint's own address (domain, else IP), or null. */
  host: string | null;
  pinned: string | null;
  nodePins: Record<string, string> | null;
}

/** A plugin node record's facts: its name and the address `/cluster/status` reported. */
export interface NodeFacts {
  name: string;
  ip_address: string | null;
}

export type NodeTarget =
  | { ok: true; host: string; pinned: string; pinnedBy: string }
  | { ok: false; reason: "ssh_host_missing" | "ssh_fingerprint_required"; detail: string };

/** Two spellings of one address (`10.0.0.1` and `10.0.0.1/24`, IPv6 forms) compare equal. */
function sameHost(a: string, b: string): boolean {
  const norm = (v: string) => {
    const h = v.trim().split("/")[0].replace(/^\[|\]$/g, "").toLowerCase().replace(/\.$/, "");
    return parseIpv4(h)?.join(".") ?? parseIpv6(h)?.join(":") ?? h;
  };
  return norm(a) === norm(b);
}

/**
 * Where a node's terminal connects and which key it expects (README "Browser terminal", per
 * node):
 * - the address: the node record's `ip_address` (the sync copies `/cluster/status`'s `ip`);
 *   a node without one falls back to the endpoint's own address only when it is the endpoint's
 *   sole node (a standalone host);
 * - the key: the endpoint's `ssh_node_host_fingerprints[<node>]`; without one, the endpoint's
 *   own pin applies only when the node's address is the endpoint's own address (the same host,
 *   the same key). Any other node is refused until its key is pinned: one pin never vouches for
 *   another machine.
 */
export function nodeTarget(
  endpoint: NodeEndpointFacts,
  node: NodeFacts,
  nodesOfEndpoint: number,
): NodeTarget {
  const own = node.ip_address?.trim().split("/")[0] || null;
  const host = own ?? (nodesOfEndpoint === 1 ? endpoint.host : null);
  if (!host) {
    return {
      ok: false,
      reason: "ssh_host_missing",
      detail: `Node ${node.name} has no address (the cluster reported no ip for it); run a ` +
        "sync, or use the endpoint's own terminal.",
    };
  }
  const pin = endpoint.nodePins?.[node.name];
  if (pin) return { ok: true, host, pinned: pin, pinnedBy: `node ${node.name}` };
  if (endpoint.pinned && endpoint.host && sameHost(host, endpoint.host)) {
    return { ok: true, host, pinned: endpoint.pinned, pinnedBy: "the endpoint" };
  }
  return {
    ok: false,
    reason: "ssh_fingerprint_required",
    detail: `Pin node ${node.name}'s host key first: read it with its host-key-fingerprint ` +
      "helper, compare it out of band, and add it to the endpoint's " +
      `ssh_node_host_fingerprints ({"${node.name}": "SHA256:…"}).`,
  };
}

/** Sizes a browser may ask for; anything else is clamped (a PTY of 10^9 columns is no size). */
export function clampSize(cols: unknown, rows: unknown): PtySize {
  const clamp = (v: unknown, max: number, fallback: number) =>
    typeof v === "number" && Number.isInteger(v) && v > 0 ? Math.min(v, max) : fallback;
  return { cols: clamp(cols, 1000, 80), rows: clamp(rows, 500, 24) };
}

export class TerminalSessions {
  constructor(private readonly store: TerminalSessionStore, private readonly now: () => number) {}

  async create(
    fields: Omit<
      TerminalSessionRecord,
      "id" | "created" | "attached" | "ended" | "duration_seconds" | "end_reason"
    >,
  ): Promise<{ ticket: string; record: TerminalSessionRecord }> {
    const record: TerminalSessionRecord = {
      ...fields,
      id: crypto.randomUUID(),
      created: new Date(this.now()).toISOString(),
      attached: null,
      ended: null,
      duration_seconds: null,
      end_reason: null,
    };
    const ticket = crypto.getRandomValues(new Uint8Array(32)).toBase64({
      alphabet: "base64url",
      omitPadding: true,
    });
    await this.store.put(record);
    await this.store.putTicket(
      await ticketHash(ticket),
      {
        session_id: record.id,
        console_session: fields.console_session,
        endpoint_id: fields.endpoint_id,
      },
      TICKET_TTL_MS,
    );
    return { ticket, record };
  }

  /** The ticket's session when the ticket is fresh, unused and from the same console session. */
  async redeem(ticket: unknown, consoleSession: string): Promise<TerminalSessionRecord | null> {
    if (typeof ticket !== "string" || ticket.length === 0 || ticket.length > 128) return null;
    const taken = await this.store.takeTicket(await ticketHash(ticket));
    if (!taken || taken.console_session !== consoleSession) return null;
    return await this.store.get(taken.session_id);
  }

  async attached(record: TerminalSessionRecord): Promise<TerminalSessionRecord> {
    const next = { ...record, attached: new Date(this.now()).toISOString() };
    await this.store.put(next);
    return next;
  }

  async ended(record: TerminalSessionRecord, reason: string): Promise<void> {
    const now = this.now();
    const from = Date.parse(record.attached ?? record.created);
    await this.store.put({
      ...record,
      ended: new Date(now).toISOString(),
      duration_seconds: Math.max(0, Math.round((now - from) / 1000)),
      end_reason: reason,
    });
  }

  list(limit = 200): Promise<TerminalSessionRecord[]> {
    return this.store.list(limit);
  }
}
