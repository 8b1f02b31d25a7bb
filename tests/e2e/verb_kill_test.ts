/**
 * A process killed in the middle of a verb: the real main.ts is started, a verb is sent to a
 * hypervisor that takes the call and never answers, the process is killed (SIGKILL, no chance
 * to clean up), and a second start on the same KV file lists the verb as unfinished.
 */
import assert from "node:assert/strict";
import { hostEnv, startMain } from "../_process.ts";
import { hangingHypervisor } from "../_hanging_hypervisor.ts";

const KEY = "k".repeat(48);

Deno.test("e2e: a verb cut short by a killed process stays in_progress in the audit trail", async () => {
  // A hypervisor that logs in, knows guest 100, and never answers the start itself.
  const hypervisor = hangingHypervisor();
  const dir = await Deno.makeTempDir({ prefix: "verb-kill-" });
  const env = {
    SERVICE_KV_PATH: `${dir}/kv`,
    SERVICE_ALLOW_LOOPBACK_TARGETS: "true",
    SERVICE_SURFACES: "backend",
    ...hostEnv(dir),
  };
  const call = (port: number, path: string, init: RequestInit = {}) =>
    fetch(`http://127.0.0.1:${port}${path}`, {
      ...init,
      headers: { "X-Service-API-Key": KEY, "content-type": "application/json", ...init.headers },
    });
  try {
    const first = await startMain(env);
    await (await call(first.port, "/auth/register-key", {
      method: "POST",
      body: JSON.stringify({ api_key: KEY }),
    })).body?.cancel();
    const created = await call(first.port, "/hypervisor/endpoints", {
      method: "POST",
      body: JSON.stringify({
        name: "hangs",
        ip: "127.0.0.1",
        port: hypervisor.port,
        use_https: false,
        username: "root@pam",
        password: "secret-password",
        allow_writes: true,
      }),
    });
    const { id } = await created.json();
    const pending = call(first.port, `/hypervisor/qemu/100/start?endpoint_id=${id}`, {
      method: "POST",
      headers: { "X-Service-Actor": "night-shift" },
    }).catch((error) => error);
    await hypervisor.reached;
    await first.kill();
    await pending;

    const second = await startMain(env);
    try {
      const listed = await (await call(second.port, "/hypervisor/actions")).json();
      assert.equal(listed.count, 1);
      const record = listed.results[0];
      assert.equal(record.status, "in_progress");
      assert.equal(record.result, null);
      assert.equal(record.finished_at, null);
      assert.equal(record.actor, "night-shift");
      assert.equal(record.verb, "start");
      assert.equal(record.vmid, 100);
    } finally {
      await second.stop();
    }
  } finally {
    await hypervisor.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
