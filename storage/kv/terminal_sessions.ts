import type { TerminalSessionRecord, TerminalSessionStore, TerminalTicket } from "../ports.ts";
import { keys } from "./keys.ts";

/** Sessions are kept this long for the admin's list (KV `expireIn`). */
const RECORD_TTL_MS = 90 * 24 * 3600_000;

function inverted(created: string): string {
  return String(Number.MAX_SAFE_INTEGER - Date.parse(created)).padStart(16, "0");
}

/** Browser terminal sessions (one entry plus a time index) and their one-time tickets. */
export class KvTerminalSessionStore implements TerminalSessionStore {
  constructor(private readonly kv: Deno.Kv) {}

  async putTicket(hash: string, ticket: TerminalTicket, ttlMs: number): Promise<void> {
    await this.kv.set(keys.terminalTicket(hash), ticket, { expireIn: ttlMs });
  }

  async takeTicket(hash: string): Promise<TerminalTicket | null> {
    const key = keys.terminalTicket(hash);
    for (;;) {
      const entry = await this.kv.get<TerminalTicket>(key);
      if (!entry.value) return null;
      // Checked delete: of two concurrent takes exactly one wins.
      const done = await this.kv.atomic().check(entry).delete(key).commit();
      if (done.ok) return entry.value;
    }
  }

  async put(record: TerminalSessionRecord): Promise<void> {
    await this.kv.atomic()
      .set(keys.terminalSession(record.id), record, { expireIn: RECORD_TTL_MS })
      .set(keys.terminalSessionOrder(inverted(record.created), record.id), record.id, {
        expireIn: RECORD_TTL_MS,
      })
      .commit();
  }

  async get(id: string): Promise<TerminalSessionRecord | null> {
    return (await this.kv.get<TerminalSessionRecord>(keys.terminalSession(id))).value;
  }

  async list(limit: number): Promise<TerminalSessionRecord[]> {
    const out: TerminalSessionRecord[] = [];
    for await (
      const entry of this.kv.list<string>({ prefix: ["terminal", "by_time"] }, { limit })
    ) {
      const record = await this.get(entry.value);
      if (record) out.push(record);
    }
    return out;
  }
}
