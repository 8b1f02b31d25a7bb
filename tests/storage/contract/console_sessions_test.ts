import assert from "node:assert/strict";
import type { ConsoleSessionRecord } from "../../../storage/ports.ts";
import { contract } from "./_backends.ts";

const record: ConsoleSessionRecord = {
  sealed: "c2VhbGVk",
  iv: "aXY=",
  csrf: "csrf-token",
  token_id: 7,
  created: 1,
  expires: 2,
};

contract("console sessions", {
  "a session is stored, read back whole, and deleted": async (opened) => {
    const sessions = opened.storage.consoleSessions;
    assert.equal(await sessions.get("s1"), null);
    await sessions.put("s1", record, 60_000);
    await sessions.put("s2", { ...record, token_id: 8 }, 60_000);
    assert.deepEqual(await sessions.get("s1"), record);
    assert.deepEqual(await (await opened.reopen()).consoleSessions.get("s2"), {
      ...record,
      token_id: 8,
    });
    await sessions.delete("s1");
    assert.equal(await sessions.get("s1"), null);
    assert.equal((await sessions.get("s2"))!.token_id, 8);
    await sessions.delete("never-there");
  },
});
