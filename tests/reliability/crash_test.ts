// deno-lint-ignore-file no-explicit-any
/**
 * Crash safety: the real main.ts on a KV file, killed with SIGKILL at points chosen by what it
 * says (a sync's progress frames, a bulk write's first answers, a re-key or a verb under way, a
 * job's stage frames), then started again on the same file. After each restart: no duplicate or
 * half-written object, counters that match the objects, no job left running, a verb whose outcome
 * is unknown listed as in_progress, and a new full sync that lands on the same inventory as an
 * uninterrupted one.
 */
import assert from "node:assert/strict";
import { baseEnv, call, type Child, readStream, startMain } from "./_process.ts";
import { addInventoryCopy, ROOT as REFERENCE_ROOT, syncWorld } from "../e2e/_sync_harness.ts";
import { hangingHypervisor } from "../_hanging_hypervisor.ts";

const KEY = "crash-key-0123456789abcdef0123456789abcdef0123";
const ROOT = "c0ffee0123456789abcdef0123456789abcdef01";
const SEED = "nodes=2,vms=90,cts=30,storages=2";
const ENCRYPTION_KEY = "reliability-encryption-key-0123456789";
const backendHeaders = { "x-service-api-key": KEY };
const inventoryHeaders = { authorization: `Token ${ROOT}` };
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}
const random = (n: number) => Math.floor(Math.random() * n);

/** Synced models compared between an interrupted and an uninterrupted history. */
const SYNCED = [
  "virtualization/virtual-machines",
  "virtualization/clusters",
  "virtualization/interfaces",
  "virtualization/virtual-disks",
  "dcim/devices",
  "ipam/ip-addresses",
];

async function listAll(base: string, model: string, headers = inventoryHeaders): Promise<any[]> {
  const out: any[] = [];
  for (let offset = 0;; offset += 1000) {
    const r = await call(base, "GET", `/api/${model}/?limit=1000&offset=${offset}`, headers);
    assert.equal(r.status, 200, `${model}: ${JSON.stringify(r.body)}`);
    out.push(...r.body.results);
    if (!r.body.next) return out;
  }
}

/** What the synced part of the inventory holds, as comparable text (no ids or times). */
async function inventoryShape(
  base: string,
  headers = inventoryHeaders,
): Promise<Record<string, string[]>> {
  const shape: Record<string, string[]> = {};
  for (const model of SYNCED) {
    const objects = await listAll(base, model, headers);
    shape[model] = objects.map((o) =>
      [o.name ?? o.address, o.virtual_machine?.name ?? o.cluster?.name ?? o.device?.name ?? ""]
        .join("@")
    ).sort();
  }
  return shape;
}

/** No object twice (by its natural name) and the list count equals what is listed. */
async function assertConsistent(base: string, label: string) {
  for (const model of [...SYNCED, "dcim/sites"]) {
    const objects = await listAll(base, model);
    const counted = (await call(base, "GET", `/api/${model}/?limit=1`, inventoryHeaders)).body;
    assert.equal(counted.count, objects.length, `${label}: ${model} count drifts from its list`);
    const names = objects.map((o) =>
      `${o.name ?? o.address}@${o.virtual_machine?.id ?? o.cluster?.id ?? o.device?.id ?? ""}`
    );
    const dupes = names.filter((n, i) => names.indexOf(n) !== i);
    assert.deepEqual(dupes, [], `${label}: ${model} duplicated`);
  }
}

/** The lease of a job and the hold of a sync run in the child (short, so a kill frees them). */
const RUN_HOLD_MS = 600;

async function fullSync(base: string) {
  let frames = await readStream(`${base}/full-update/stream`, backendHeaders);
  // Right after a kill the dead process's run still holds the endpoint (a 409, no frames)
  // until its hold expires: SERVICE_JOB_LEASE_MS below, renewed by no one.
  for (let i = 0; frames.length === 0 && i < 20; i++) {
    await new Promise((resolve) => setTimeout(resolve, RUN_HOLD_MS));
    frames = await readStream(`${base}/full-update/stream`, backendHeaders);
  }
  const last = frames.at(-1);
  assert.equal(last?.event, "complete", JSON.stringify(frames.slice(-3)));
  return last!.data;
}

Deno.test({
  name: "crash safety: kill -9 during a sync, a bulk write, a re-key and a verb; restart converges",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "bridgebox-crash-" });
  // A hypervisor that takes a verb and never answers: the verb's outcome is unknown at the kill.
  const hanging = hangingHypervisor();
  const env: Record<string, string> = {
    ...baseEnv(dir),
    INVENTORY_BOOTSTRAP_TOKEN: ROOT,
    HYPERVISOR_MOCK_SEED: SEED,
    HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
    // One port for every start: the endpoint copies point at this process itself.
    PORT: String(freePort()),
    SERVICE_JOB_LEASE_MS: String(RUN_HOLD_MS),
  };
  let child: Child | undefined;
  const faults: string[] = [];
  const notes: string[] = [];
  try {
    // Uninterrupted reference: the same mock, one full sync, in-process.
    const reference = await syncWorld(SEED, { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" });
    let expected: Record<string, string[]>;
    try {
      await addInventoryCopy(reference);
      await reference.addHypervisorCopy("lab");
      const done = await reference.stream("/full-update/stream");
      assert.equal(done.at(-1)!.data.ok, true);
      expected = await inventoryShape(reference.base, {
        authorization: `Token ${REFERENCE_ROOT}`,
      });
    } finally {
      await reference.close();
    }
    assert.ok(expected["virtualization/virtual-machines"].length >= 120);

    child = await startMain(env);
    const base = () => child!.base;
    assert.equal(
      (await call(base(), "POST", "/auth/register-key", {}, { api_key: KEY })).status,
      201,
    );
    const inv = await call(base(), "POST", "/inventory/endpoint", backendHeaders, {
      name: "self",
      ip: "127.0.0.1",
      port: child.port,
      use_https: false,
      token_version: "v1",
      token: ROOT,
    });
    assert.equal(inv.status, 201, JSON.stringify(inv.body));
    const lab = await call(base(), "POST", "/hypervisor/endpoints", backendHeaders, {
      name: "lab",
      ip: "127.0.0.1",
      port: child.port,
      use_https: false,
      username: "root@pam",
      password: "bridgebox",
    });
    assert.equal(lab.status, 201, JSON.stringify(lab.body));
    const restart = async (label: string, extra: Record<string, string> = {}) => {
      await child!.kill();
      faults.push(label);
      child = await startMain({ ...env, ...extra });
      await assertConsistent(base(), `after kill during ${label}`);
    };

    // 1. A full sync, killed after a random number of frames (past the first VM writes).
    const cutAt = 3 + random(12);
    let seen = 0;
    await readStream(`${base()}/full-update/stream`, backendHeaders, () => {
      if (++seen === cutAt) void child!.kill();
    });
    await restart(`full sync (frame ${cutAt})`);

    // 2. Bulk inventory writes: 8 batches of 300 sites in flight, killed at the first answer.
    const batches = Array.from(
      { length: 8 },
      (_, b) =>
        Array.from({ length: 300 }, (_, i) => ({ name: `bulk-${b}-${i}`, slug: `bulk-${b}-${i}` })),
    );
    const sent = batches.map((items) =>
      call(base(), "POST", "/api/dcim/sites/", inventoryHeaders, items).catch(() => null)
    );
    await Promise.race(sent);
    await child.kill();
    const answers = await Promise.all(sent);
    await restart("bulk write");
    const sites = await listAll(base(), "dcim/sites");
    const landedPerRequest: number[] = [];
    for (const [b, items] of batches.entries()) {
      const landed = sites.filter((s) => s.name.startsWith(`bulk-${b}-`));
      landedPerRequest.push(landed.length);
      // A request is validated whole, then written in as few atomics as KV's limits allow: a
      // crash between two atomics leaves the whole objects of the committed ones, in order.
      const expectedPrefix = items.slice(0, landed.length).map((i) => i.slug).sort();
      assert.deepEqual(
        landed.map((s) => s.slug).sort(),
        expectedPrefix,
        `batch ${b}: not a prefix`,
      );
      for (const site of landed) {
        assert.equal(site.name, site.slug, `half-written site ${JSON.stringify(site)}`);
        assert.ok(site.status?.value && site.created && site.url, JSON.stringify(site));
      }
      if (answers[b]?.status === 201) assert.equal(landed.length, 300, `batch ${b} answered 201`);
    }
    notes.push(`sites landed per bulk request: ${landedPerRequest.join(",")}`);

    // 3. A re-key: secrets stored in plaintext, the key set, the re-key killed under way.
    for (let i = 0; i < 20; i++) {
      const r = await call(base(), "POST", "/hypervisor/endpoints", backendHeaders, {
        name: `rekey-${i}`,
        ip: "10.0.0.1",
        port: 8006,
        username: "root@pam",
        password: `secret-${i}`,
        enabled: false,
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
    }
    await restart("(setting the encryption key)", { SERVICE_ENCRYPTION_KEY: ENCRYPTION_KEY });
    faults.pop();
    env.SERVICE_ENCRYPTION_KEY = ENCRYPTION_KEY;
    const rekey = call(base(), "POST", "/credentials/rekey", backendHeaders).catch(() => null);
    await child.waitFor((l) => l.message === "request started" && l.path === "/credentials/rekey");
    await restart("re-key");
    await rekey;
    const endpoints = await call(base(), "GET", "/hypervisor/endpoints", backendHeaders);
    for (const e of endpoints.body) {
      const check = await call(
        base(),
        "GET",
        `/hypervisor/endpoints/${e.id}/credentials/check`,
        backendHeaders,
      );
      assert.equal(
        check.body.ok,
        true,
        `endpoint ${e.name} after a killed re-key: ${JSON.stringify(check.body)}`,
      );
    }
    const again = await call(base(), "POST", "/credentials/rekey", backendHeaders);
    assert.deepEqual(again.body.failed, [], JSON.stringify(again.body));

    // 4. A verb whose hypervisor never answers: its outcome is unknown when the process dies.
    const hung = await call(base(), "POST", "/hypervisor/endpoints", backendHeaders, {
      name: "hangs",
      ip: "127.0.0.1",
      port: hanging.port,
      use_https: false,
      username: "root@pam",
      password: "pw",
      allow_writes: true,
    });
    assert.equal(hung.status, 201, JSON.stringify(hung.body));
    const verb = call(base(), "POST", `/hypervisor/qemu/100/start?endpoint_id=${hung.body.id}`, {
      ...backendHeaders,
      "x-service-actor": "reliability",
    }).catch(() => null);
    await hanging.reached;
    await restart("verb");
    await verb;
    const unknown = await call(
      base(),
      "GET",
      "/hypervisor/actions?status=in_progress",
      backendHeaders,
    );
    assert.equal(unknown.status, 200, JSON.stringify(unknown.body));
    assert.equal(unknown.body.count, 1, JSON.stringify(unknown.body));
    assert.equal(unknown.body.results[0].actor, "reliability");
    assert.equal(unknown.body.results[0].finished_at, null);
    await call(base(), "DELETE", `/hypervisor/endpoints/${hung.body.id}`, backendHeaders);

    // 5. A new full sync converges on what an uninterrupted history holds.
    const result = await fullSync(base());
    assert.equal(result.ok, true, JSON.stringify(result).slice(0, 500));
    await assertConsistent(base(), "after the converging sync");
    assert.deepEqual(await inventoryShape(base()), expected);
    console.log(`crash safety: ${faults.length} kills (${faults.join("; ")}); ${notes.join("; ")}`);
  } finally {
    await child?.stop();
    await hanging.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

const P = "/api/plugins/service/";

Deno.test({
  name: "crash safety: kill -9 during a durable sync job; after restart no job is left running",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "bridgebox-crash-job-" });
  const env = {
    ...baseEnv(dir),
    INVENTORY_BOOTSTRAP_TOKEN: ROOT,
    HYPERVISOR_MOCK_SEED: SEED,
    HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
    SERVICE_JOB_LEASE_MS: "600",
  };
  let child = await startMain(env);
  const must = async (method: string, path: string, body?: unknown) => {
    const r = await call(child.base, method, path, inventoryHeaders, body);
    assert.ok(r.status === 200 || r.status === 201, `${method} ${path}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const jobStatus = async (id: number) => {
    const job = await must("GET", `/api/core/jobs/${id}/`);
    return { status: job.status?.value ?? job.status, error: job.error };
  };
  try {
    // Wired as the plugin is wired in production: backend endpoint, inventory copy with a token
    // of its own, the mock as hypervisor (this same process, pushed to its backend).
    await must("POST", P + "endpoints/backend/", {
      name: "backend",
      domain: "127.0.0.1",
      port: child.port,
      use_https: false,
    });
    const token = await must("POST", "/api/users/tokens/", {
      version: 1,
      is_superuser: true,
      write_enabled: true,
    });
    await must("POST", P + "endpoints/inventory/", {
      name: "self",
      domain: "127.0.0.1",
      port: child.port,
      use_https: false,
      token: token.id,
    });
    await must("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "127.0.0.1",
      port: child.port,
      use_https: false,
      username: "root@pam",
      password: "bridgebox",
    });
    const job = await must("POST", P + "sync/", { sync_types: ["all"] });
    const cut = 2 + random(6);
    let frames = 0;
    const read = await readStream(
      `${child.base}${P}jobs/${job.job_id}/stream`,
      inventoryHeaders,
      () => {
        if (++frames === cut) void child.kill();
      },
    );
    assert.ok(read.length >= cut || read.at(-1)?.event === "complete", `${read.length} frames`);
    await child.kill();
    child = await startMain(env);
    // Settled by the start-up check or the periodic one once its 600 ms lease has run out.
    const deadline = Date.now() + 20_000;
    let state = await jobStatus(job.job_id);
    while (["running", "pending"].includes(state.status) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      state = await jobStatus(job.job_id);
    }
    assert.ok(!["running", "pending"].includes(state.status), `job left ${state.status}`);
    const running = await must("GET", "/api/core/jobs/?status=running");
    assert.equal(running.count, 0, JSON.stringify(running.results));
    if (state.status === "errored" && read.at(-1)?.event !== "complete") {
      assert.match(state.error, /stopped before it finished|lease/, state.error);
    }
    console.log(`crash safety: job killed at frame ${cut}, found ${state.status} after restart`);
  } finally {
    await child.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
