// deno-lint-ignore-file no-explicit-any
/**
 * Several processes, one KV file (docs/jobs.md, "Several processes"): two real `main.ts`
 * processes listen on one port (SERVICE_REUSE_PORT) and share one KV file; a hypervisor mock runs
 * as a third process behind two gates of this test (one per hypervisor endpoint). One sync job
 * covers both endpoints: each endpoint is a part, and each process takes one. The gates hold each
 * endpoint's first `cluster/status` read until both endpoints have asked, so the two parts are
 * seen running at the same time, in two processes (a process runs one part at a time), without
 * any timing assumed.
 *
 * Then: every stage ran once per endpoint, both processes took a part, and the inventory, read
 * back page by page as a NetBox client does, holds each guest once. Killed mid-part, a process's
 * claim lapses and the job's process takes the part over.
 */
import assert from "node:assert/strict";
import { type Child, hostEnv, readStream, startMain } from "../_process.ts";

const ROOT = "multiproc0123456789abcdef0123456789abcd";
const P = "/api/plugins/service/";
const SEED = { nodes: 2, vms: 24, cts: 8 };
const GUESTS = SEED.vms + SEED.cts;

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/**
 * A proxy per hypervisor endpoint in front of the mock. The first `cluster/status` read of each
 * endpoint waits at the gate until both endpoints have made one and the gate is opened.
 */
function gates(mockPort: number, names: string[]) {
  const arrived = new Set<string>();
  const both = Promise.withResolvers<void>();
  const open = Promise.withResolvers<void>();
  let autoOpen = true;
  const servers = names.map((name) =>
    Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
      const url = new URL(req.url);
      if (url.pathname.endsWith("/cluster/status") && !arrived.has(name)) {
        arrived.add(name);
        if (arrived.size === names.length) {
          both.resolve();
          if (autoOpen) open.resolve();
        }
        await open.promise;
      }
      const target = `http://127.0.0.1:${mockPort}${url.pathname}${url.search}`;
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.bytes();
      const headers = new Headers(req.headers);
      headers.delete("accept-encoding");
      const answer = await fetch(target, { method: req.method, headers, body });
      // fetch has decoded the body: its length and encoding headers no longer apply.
      const out = new Headers(answer.headers);
      out.delete("content-encoding");
      out.delete("content-length");
      return new Response(answer.body, { status: answer.status, headers: out });
    })
  );
  return {
    ports: servers.map((s) => s.addr.port),
    /** Both endpoints are being synced at once. */
    both: both.promise,
    holdUntilOpened() {
      autoOpen = false;
    },
    open: () => open.resolve(),
    close: () => Promise.all(servers.map((s) => s.shutdown())),
  };
}

async function call(base: string, method: string, path: string, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Token ${ROOT}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function must(base: string, method: string, path: string, body?: unknown) {
  const r = await call(base, method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Every object of a list, following `next` as pynetbox does. */
async function all(base: string, path: string): Promise<any[]> {
  const out: any[] = [];
  let next: string | null = `${base}${path}?limit=50`;
  while (next) {
    const url: URL = new URL(next);
    const page = await must(base, "GET", url.pathname + url.search);
    out.push(...page.results);
    next = page.next;
  }
  return out;
}

interface World {
  base: string;
  apps: Child[];
  gate: ReturnType<typeof gates>;
  endpoints: number[];
  close(): Promise<void>;
}

async function world(leaseMs: number): Promise<World> {
  const dir = await Deno.makeTempDir({ prefix: "bridgebox-multiproc-" });
  const children: Child[] = [];
  let gate: ReturnType<typeof gates> | null = null;
  const close = async () => {
    await gate?.close();
    // SIGKILL: a failed run must not wait for a job that never ends (a graceful stop drains the
    // open job stream first); nothing of the processes is asserted after this.
    for (const child of children) await child.kill();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    const mock = await startMain({
      ...hostEnv(dir),
      SERVICE_LISTEN_HOST: "127.0.0.1",
      SERVICE_SURFACES: "hypervisor",
      SERVICE_KV_PATH: `${dir}/mock.kv`,
      HYPERVISOR_MOCK_SEED: `nodes=${SEED.nodes},vms=${SEED.vms},cts=${SEED.cts},storages=2`,
      HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
    });
    children.push(mock);
    gate = gates(mock.port, ["east", "west"]);
    const port = freePort();
    const env = {
      ...hostEnv(dir),
      PORT: String(port),
      SERVICE_LISTEN_HOST: "127.0.0.1",
      SERVICE_REUSE_PORT: "true",
      SERVICE_KV_PATH: `${dir}/bridgebox.kv`,
      SERVICE_ALLOW_LOOPBACK_TARGETS: "true",
      SERVICE_ENCRYPTION_KEY: "multiproc-encryption-key-0123456789abc",
      SERVICE_JOB_LEASE_MS: String(leaseMs),
      INVENTORY_BOOTSTRAP_TOKEN: ROOT,
    };
    const apps = [await startMain(env)];
    apps.push(await startMain(env));
    children.push(...apps);
    assert.deepEqual(apps.map((a) => a.port), [port, port], "both processes on one port");
    const base = `http://127.0.0.1:${port}`;

    await must(base, "POST", P + "endpoints/backend/", {
      name: "backend",
      domain: "127.0.0.1",
      port,
      use_https: false,
    });
    const token = await must(base, "POST", "/api/users/tokens/", {
      version: 1,
      is_superuser: true,
      write_enabled: true,
      description: "the backend writes the inventory with this",
    });
    await must(base, "POST", P + "endpoints/inventory/", {
      name: "self",
      domain: "127.0.0.1",
      port,
      use_https: false,
      token: token.id,
    });
    const endpoints: number[] = [];
    for (const [i, name] of ["east", "west"].entries()) {
      const hv = await must(base, "POST", P + "endpoints/hypervisor/", {
        name,
        domain: "127.0.0.1",
        port: gate.ports[i],
        use_https: false,
        username: "root@pam",
        password: "bridgebox",
      });
      endpoints.push(hv.id);
    }
    return { base, apps, gate, endpoints, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The job's end, from its live stream (a signal, not a poll of ours). */
async function finished(base: string, id: number): Promise<any> {
  const frames = await within(
    readStream(`${base}${P}jobs/${id}/stream`, {
      authorization: `Token ${ROOT}`,
    }, (f) => f.event === "complete"),
    120_000,
    `job ${id}'s end`,
  );
  const complete = frames.find((f) => f.event === "complete");
  assert.ok(complete, `job ${id}'s stream ended with complete`);
  return (await call(base, "GET", `/api/core/jobs/${id}/`)).body;
}

/**
 * A watchdog, so a process that never takes its part fails with this reason, not a hang (and
 * before the held hypervisor read times out, 30 s, which would fail the job instead).
 */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

const pidOf = (owner: string) => Number(owner.split("-")[0]);

function takenBy(job: any): Map<number, number[]> {
  const out = new Map<number, number[]>();
  for (const line of job.log as { message: string }[]) {
    const m = line.message.match(/^Endpoint (\d+): taken by process (\S+?)[ .]/);
    if (m) out.set(Number(m[1]), [...(out.get(Number(m[1])) ?? []), pidOf(m[2])]);
  }
  return out;
}

/** The inventory as a NetBox client reads it: each guest once, in its own cluster. */
async function assertNoDuplicates(base: string) {
  const clusters = await all(base, "/api/virtualization/clusters/");
  assert.equal(clusters.length, 2, JSON.stringify(clusters.map((c) => c.name)));
  const vms = await all(base, "/api/virtualization/virtual-machines/");
  assert.equal(vms.length, 2 * GUESTS);
  assert.equal(new Set(vms.map((v) => v.id)).size, vms.length, "no VM twice across pages");
  for (const cluster of clusters) {
    const mine = vms.filter((v) => v.cluster?.id === cluster.id);
    assert.equal(mine.length, GUESTS, `cluster ${cluster.name}`);
    assert.equal(new Set(mine.map((v) => v.name)).size, GUESTS, `names in ${cluster.name}`);
  }
  const devices = await all(base, "/api/dcim/devices/");
  assert.equal(devices.length, 2 * SEED.nodes, JSON.stringify(devices.map((d) => d.name)));
  const disks = await all(base, "/api/virtualization/virtual-disks/");
  const perVm = new Set(disks.map((d) => `${d.virtual_machine.id}/${d.name}`));
  assert.equal(perVm.size, disks.length, "no disk twice");
}

Deno.test({
  name:
    "several processes: one sync job over two endpoints runs one part in each process, once, without duplicates",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const w = await world(30_000);
  try {
    const job = await must(w.base, "POST", P + "sync/", { sync_types: ["all"] });
    await within(w.gate.both, 20_000, "both endpoints synced at once (one part per process)");
    const done = await finished(w.base, job.job_id);
    assert.equal(done.status.value, "completed", done.error);

    // Each endpoint was taken once, by a different process, and both are our two processes.
    const taken = takenBy(done);
    assert.deepEqual([...taken.keys()].sort(), [...w.endpoints].sort());
    const pids = w.endpoints.map((e) => taken.get(e)!);
    assert.ok(pids.every((p) => p.length === 1), JSON.stringify(pids));
    assert.deepEqual(pids.flat().sort(), w.apps.map((a) => a.pid).sort());

    // Every stage ran exactly once per endpoint.
    const records = (done.data as any[]).map((r) => `${r.endpoint_id}:${r.sync_type}`);
    assert.equal(records.length, 2 * 13, JSON.stringify(records));
    assert.equal(new Set(records).size, records.length, "no stage twice");
    for (const r of done.data as any[]) assert.equal(r.result_summary.failed, 0, r.sync_type);

    await assertNoDuplicates(w.base);
    // Each endpoint record shows its own last sync, ok.
    for (const id of w.endpoints) {
      const record = await must(w.base, "GET", `${P}endpoints/hypervisor/${id}/`);
      assert.deepEqual([record.last_sync?.ok, record.last_sync?.job_id], [true, job.job_id]);
    }
  } finally {
    await w.close();
  }
});

Deno.test({
  name:
    "several processes: a process killed in the middle of its part loses it when its claim lapses; the job's process takes it over",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const w = await world(2_000);
  try {
    w.gate.holdUntilOpened();
    const job = await must(w.base, "POST", P + "sync/", { sync_types: ["all"] });
    await within(w.gate.both, 20_000, "both endpoints synced at once (one part per process)");
    // Both parts wait at the gate: kill the process that took a part but does not run the job.
    const running = (await call(w.base, "GET", `/api/core/jobs/${job.job_id}/`)).body;
    const starter = running.log.map((l: any) =>
      l.message.match(/^Started \(sync\) by process (\S+)\./)
    )
      .find(Boolean);
    assert.ok(starter, JSON.stringify(running.log));
    const coordinator = pidOf(starter[1]);
    const helper = w.apps.find((a) => a.pid !== coordinator)!;
    const lost = [...takenBy(running)].find(([, pids]) => pids[0] === helper.pid)?.[0];
    assert.ok(lost, `process ${helper.pid} took a part: ${JSON.stringify(running.log)}`);
    await helper.kill();
    w.gate.open();

    const done = await finished(w.base, job.job_id);
    assert.equal(done.status.value, "completed", done.error);
    const taken = takenBy(done);
    assert.deepEqual(taken.get(lost), [helper.pid, coordinator], "taken over by the job's process");
    assert.ok(
      done.log.some((l: any) =>
        l.message.startsWith(`Endpoint ${lost}: taken by process`) && /taken over/.test(l.message)
      ),
      JSON.stringify(done.log),
    );
    const records = (done.data as any[]).filter((r) => r.endpoint_id === lost);
    assert.equal(records.length, 13, JSON.stringify(records.map((r) => r.sync_type)));
    await assertNoDuplicates(w.base);
  } finally {
    await w.close();
  }
});
