import type { ConsoleSessionRecord, ConsoleSessionStore } from "../ports.ts";
import { keys } from "./keys.ts";

/** Web console sessions: one KV entry per session, expiring with it (KV `expireIn`). */
export class KvConsoleSessionStore implements ConsoleSessionStore {
  constructor(private readonly kv: Deno.Kv) {}

  async put(id: string, record: ConsoleSessionRecord, ttlMs: number): Promise<void> {
    await this.kv.set(keys.consoleSession(id), record, { expireIn: ttlMs });
  }

  async get(id: string): Promise<ConsoleSessionRecord | null> {
    return (await this.kv.get<ConsoleSessionRecord>(keys.consoleSession(id))).value;
  }

  async delete(id: string): Promise<void> {
    await this.kv.delete(keys.consoleSession(id));
  }
}
