/**
 * One process vs two on one KV file (issue 25 "Beyond one process"; docs/jobs.md, "Several
 * processes"): the same estate — two hypervisor endpoints, each a mock in a process of its own as
 * a real cluster would be — synced by one plugin sync job, first with one `main.ts`, then with two
 * `main.ts` processes on one port (SERVICE_REUSE_PORT) and one KV file, where each process takes
 * one endpoint. Each configuration starts on an empty KV file. Figures: the job's own run time
 * (its `started` → `completed`), first run and unchanged re-run, and the speed-up.
 *
 *   npx -y deno@2.9.6 task bench:multiproc   # two endpoints × 5,000 guests (long; not a *_bench.ts,
 *                                             # so neither `task bench` nor CI runs it)
 *
 * BENCH_MULTIPROC_SEED overrides each endpoint's estate (e.g. nodes=2,vms=400,cts=100,storages=2
 * for a quick look). A machine with fewer than two free cores shows no speed-up: run it idle.
 */
import { type Child, hostEnv, startMain } from "../tests/_process.ts";

const SEED = Deno.env.get("BENCH_MULTIPROC_SEED") ?? "nodes=4,vms=4000,cts=1000,storages=2";
const TOKEN = "multiprocbench0123456789abcdef0123456789";
const P = "/api/plugins/service/";

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

async function call(base: string, method: string, path: string, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Token ${TOKEN}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

interface Run {
  seconds: number;
  status: string;
  error: string;
  /** Endpoint id → process ids that took it. */
  takenBy: Map<number, string[]>;
}

/** Queues a full sync and reads the job back until it ends; its own timestamps give the time. */
async function syncJob(base: string): Promise<Run> {
  const { job_id } = await call(base, "POST", P + "sync/", { sync_types: ["all"] });
  for (;;) {
    const job = await call(base, "GET", `/api/core/jobs/${job_id}/`);
    const status = job.status?.value ?? job.status;
    if (["completed", "failed", "errored"].includes(status)) {
      const takenBy = new Map<number, string[]>();
      for (const line of job.log as { message: string }[]) {
        const m = line.message.match(/^Endpoint (\d+): taken by process (\d+)-/);
        if (m) takenBy.set(Number(m[1]), [...(takenBy.get(Number(m[1])) ?? []), m[2]]);
      }
      return {
        seconds: (Date.parse(job.completed) - Date.parse(job.started)) / 1000,
        status,
        error: String(job.error ?? ""),
        takenBy,
      };
    }
    // A bench may poll: the figure is the job's own started → completed, not this loop's.
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function configuration(processes: number, mocks: Child[]) {
  const dir = await Deno.makeTempDir({ prefix: "bridgebox-multiproc-bench-" });
  const port = freePort();
  const env = {
    ...hostEnv(dir),
    PORT: String(port),
    SERVICE_LISTEN_HOST: "127.0.0.1",
    SERVICE_REUSE_PORT: "true",
    SERVICE_KV_PATH: `${dir}/bridgebox.kv`,
    SERVICE_ALLOW_LOOPBACK_TARGETS: "true",
    SERVICE_ENCRYPTION_KEY: "multiproc-bench-encryption-key-0123456789",
    INVENTORY_BOOTSTRAP_TOKEN: TOKEN,
  };
  const apps: Child[] = [];
  try {
    for (let i = 0; i < processes; i++) apps.push(await startMain(env));
    const base = `http://127.0.0.1:${port}`;
    await call(base, "POST", P + "endpoints/backend/", {
      name: "backend",
      domain: "127.0.0.1",
      port,
      use_https: false,
    });
    const token = await call(base, "POST", "/api/users/tokens/", {
      version: 1,
      is_superuser: true,
      write_enabled: true,
      description: "the backend writes the inventory with this",
    });
    await call(base, "POST", P + "endpoints/inventory/", {
      name: "self",
      domain: "127.0.0.1",
      port,
      use_https: false,
      token: token.id,
    });
    for (const [i, mock] of mocks.entries()) {
      await call(base, "POST", P + "endpoints/hypervisor/", {
        name: `cluster-${i + 1}`,
        domain: "127.0.0.1",
        port: mock.port,
        use_https: false,
        username: "root@pam",
        password: "bridgebox",
      });
    }
    const first = await syncJob(base);
    const again = await syncJob(base);
    const vms = (await call(base, "GET", "/api/virtualization/virtual-machines/?limit=1")).count;
    return { first, again, vms, pids: apps.map((a) => String(a.pid)) };
  } finally {
    for (const app of apps) await app.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

const mockDir = await Deno.makeTempDir({ prefix: "bridgebox-multiproc-mocks-" });
const mocks: Child[] = [];
try {
  for (let i = 0; i < 2; i++) {
    mocks.push(
      await startMain({
        ...hostEnv(mockDir),
        SERVICE_LISTEN_HOST: "127.0.0.1",
        SERVICE_SURFACES: "hypervisor",
        SERVICE_KV_PATH: `${mockDir}/mock-${i}.kv`,
        HYPERVISOR_MOCK_SEED: SEED,
        HYPERVISOR_MOCK_TASK_DELAY_MS: "0",
      }),
    );
  }
  console.log(
    `multi-process bench: two endpoints, each ${SEED}; mocks pids ${
      mocks.map((m) => m.pid).join(", ")
    }`,
  );
  const one = await configuration(1, mocks);
  const two = await configuration(2, mocks);
  const line = (label: string, run: Run) =>
    `  ${label.padEnd(34)} ${run.seconds.toFixed(1).padStart(7)} s  ${run.status}${
      run.error ? ` (${run.error.slice(0, 200)})` : ""
    }`;
  const who = (run: Run) =>
    [...run.takenBy].map(([endpoint, pids]) => `endpoint ${endpoint} → ${pids.join(", ")}`)
      .join("; ");
  console.log(line("1 process, first run", one.first));
  console.log(line("1 process, unchanged re-run", one.again));
  console.log(line("2 processes, first run", two.first));
  console.log(line("2 processes, unchanged re-run", two.again));
  console.log(`  parts, 2 processes (pids ${two.pids.join(", ")}): ${who(two.first)}`);
  console.log(`  virtual machines in the inventory: 1 process ${one.vms}, 2 processes ${two.vms}`);
  console.log(
    `  speed-up, first run: ${(one.first.seconds / two.first.seconds).toFixed(2)}x; ` +
      `unchanged re-run: ${(one.again.seconds / two.again.seconds).toFixed(2)}x`,
  );
  const split = new Set([...two.first.takenBy.values()].flat()).size === 2;
  const ok = [one.first, one.again, two.first, two.again].every((r) => r.status === "completed");
  if (!ok || !split || one.vms !== two.vms) {
    console.log(
      `NOT as expected: ${!ok ? "a run did not complete; " : ""}${
        !split ? "the two processes did not each take an endpoint; " : ""
      }${one.vms !== two.vms ? "the inventories differ" : ""}`,
    );
    Deno.exitCode = 1;
  }
} finally {
  for (const mock of mocks) await mock.stop();
  await Deno.remove(mockDir, { recursive: true }).catch(() => {});
}
