import assert from "node:assert/strict";
import type { TerminalSessionRecord } from "../../../storage/ports.ts";
import { contract } from "./_backends.ts";

const record = (id: string, created: string): TerminalSessionRecord => ({
  id,
  endpoint_id: 1,
  endpoint_name: "lab",
  host: "10.0.0.1",
  port: 22,
  ssh_username: "root",
  token_id: 3,
  user: "token #3",
  console_session: "c1",
  created,
  attached: null,
  ended: null,
  duration_seconds: null,
  end_reason: null,
});

contract("terminal sessions", {
  "a ticket is taken exactly once, also by two racing takers in two processes": async (opened) => {
    const store = opened.storage.terminalSessions;
    const other = (await opened.reopen()).terminalSessions;
    const ticket = { session_id: "s1", console_session: "c1", endpoint_id: 1 };
    await store.putTicket("h1", ticket, 60_000);
    const taken = await Promise.all([store.takeTicket("h1"), other.takeTicket("h1")]);
    assert.deepEqual(taken.filter((t) => t !== null), [ticket]);
    assert.equal(await store.takeTicket("h1"), null);
  },
  "sessions are listed newest first and updated in place": async (opened) => {
    const store = opened.storage.terminalSessions;
    await store.put(record("a", "2026-01-01T00:00:00.000Z"));
    await store.put(record("b", "2026-01-02T00:00:00.000Z"));
    await store.put({ ...record("a", "2026-01-01T00:00:00.000Z"), end_reason: "ssh closed" });
    const listed = await store.list(10);
    assert.deepEqual(listed.map((r) => r.id), ["b", "a"]);
    assert.equal(listed[1].end_reason, "ssh closed");
    assert.equal((await store.list(1)).length, 1);
  },
});
