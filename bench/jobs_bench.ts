/**
 * Sync job figures (docs/jobs.md): a mock cluster of 10,000 guests
 * (HYPERVISOR_MOCK_SEED=nodes=10,vms=8000,cts=2000,storages=2) synced into the embedded
 * inventory, once through a durable job (`POST /api/plugins/service/sync/`, the plugin drives
 * the backend's stream over HTTP) and once by calling `/full-update/stream` directly, in two
 * fresh apps wired the same way (plugin endpoint records, pushed copies):
 *
 * - app A: direct first run, then a job for the second (unchanged) run;
 * - app B: a job for the first run, then a direct second run;
 *
 * so each kind of run is measured both ways. Reported: job overhead (from the POST to the
 * backend receiving the stage call), and the job's time over the direct time for the first
 * and the second run (goal: under 1.10, the ceiling being the direct run in the same process).
 *
 * Wall time on a shared machine swings with its load; the process's CPU time (user + system,
 * everything in this one process: backend, inventory, mock, plugin) is reported beside it and
 * is the steadier measure of what a job adds.
 *
 * Run: `deno run -A bench/jobs_bench.ts` (figures), or `deno task bench` (one Deno.bench case).
 * BENCH_JOBS_SEED overrides the seed for a quick look.
 */
import process from "node:process";
import { createParser } from "eventsource-parser";
import { type JobsWorld, jobsWorld, P } from "../tests/e2e/_jobs_world.ts";

const SEED = Deno.env.get("BENCH_JOBS_SEED") ?? "nodes=10,vms=8000,cts=2000,storages=2";
const GOAL = 1.10;

interface World {
  w: JobsWorld;
  /** When the backend received the last stage call (ms, performance.now()). */
  stageCallAt: () => number;
  key: string;
}

async function start(): Promise<World> {
  let stageCall = 0;
  const w = await jobsWorld({ HYPERVISOR_MOCK_SEED: SEED }, {}, (request, next) => {
    if (new URL(request.url).pathname === "/full-update/stream") stageCall = performance.now();
    return next();
  });
  const { backend } = await w.wire();
  const key = (await w.call("GET", `${P}endpoints/backend/${backend.id}/`)).body.token;
  return { w, stageCallAt: () => stageCall, key };
}

/** Reads an SSE response to its end; the `complete` frame's data. */
async function drain(res: Response): Promise<Record<string, unknown>> {
  let complete: Record<string, unknown> = {};
  const parser = createParser({
    onEvent(m) {
      if (m.event === "complete") complete = JSON.parse(m.data);
    },
  });
  for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) parser.feed(chunk);
  return complete;
}

interface Timed {
  ms: number;
  cpuMs: number;
}

/** Wall and CPU milliseconds of `work`. */
async function timed<T>(work: () => Promise<T>): Promise<Timed & { value: T }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await work();
  const c = process.cpuUsage(c0);
  return { value, ms: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 };
}

async function direct(world: World): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${world.w.base}/full-update/stream`, {
    headers: { "x-service-api-key": world.key },
  });
  const complete = await drain(res);
  if (complete.ok !== true) throw new Error(`direct run failed: ${JSON.stringify(complete)}`);
  return performance.now() - t0;
}

async function viaJob(world: World): Promise<{ ms: number; overheadMs: number }> {
  const t0 = performance.now();
  const r = await world.w.call("POST", P + "sync/", { sync_types: ["all"] });
  if (r.status !== 201) throw new Error(`POST sync/: ${r.status} ${JSON.stringify(r.body)}`);
  const res = await fetch(`${world.w.base}${P}jobs/${r.body.job_id}/stream`, {
    headers: { authorization: "Token jobs0123456789abcdef0123456789abcdef0123" },
  });
  const complete = await drain(res);
  const ms = performance.now() - t0;
  if (complete.ok !== true) throw new Error(`job failed: ${JSON.stringify(complete)}`);
  return { ms, overheadMs: world.stageCallAt() - t0 };
}

export async function measure() {
  const a = await start();
  let directFirst: Timed, jobSecond: Timed & { overheadMs: number };
  try {
    directFirst = await timed(() => direct(a));
    const t = await timed(() => viaJob(a));
    jobSecond = { ...t, overheadMs: t.value.overheadMs };
  } finally {
    await a.w.close();
  }
  const b = await start();
  let jobFirst: Timed & { overheadMs: number }, directSecond: Timed;
  try {
    const t = await timed(() => viaJob(b));
    jobFirst = { ...t, overheadMs: t.value.overheadMs };
    directSecond = await timed(() => direct(b));
  } finally {
    await b.w.close();
  }
  return { directFirst, jobFirst, directSecond, jobSecond };
}

function report(f: Awaited<ReturnType<typeof measure>>) {
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const first = f.jobFirst.ms / f.directFirst.ms;
  const second = f.jobSecond.ms / f.directSecond.ms;
  const cpuFirst = f.jobFirst.cpuMs / f.directFirst.cpuMs;
  const cpuSecond = f.jobSecond.cpuMs / f.directSecond.cpuMs;
  console.log(`seed ${SEED}`);
  console.log(
    `job overhead (POST sync/ → backend receives the stage call): first ${
      f.jobFirst.overheadMs.toFixed(0)
    } ms, second ${f.jobSecond.overheadMs.toFixed(0)} ms`,
  );
  console.log(
    `first full update:  wall direct ${s(f.directFirst.ms)}, job ${s(f.jobFirst.ms)}, ratio ${
      first.toFixed(3)
    }; CPU direct ${s(f.directFirst.cpuMs)}, job ${s(f.jobFirst.cpuMs)}, ratio ${
      cpuFirst.toFixed(3)
    }`,
  );
  console.log(
    `second (unchanged): wall direct ${s(f.directSecond.ms)}, job ${s(f.jobSecond.ms)}, ratio ${
      second.toFixed(3)
    }; CPU direct ${s(f.directSecond.cpuMs)}, job ${s(f.jobSecond.cpuMs)}, ratio ${
      cpuSecond.toFixed(3)
    }`,
  );
  const met = cpuFirst < GOAL && cpuSecond < GOAL;
  console.log(
    `${met ? "met" : "NOT met"}: job / direct CPU time under ${GOAL} for both runs` +
      ` (wall: ${first < GOAL && second < GOAL ? "met" : "not met"} on this machine's load)`,
  );
}

if (import.meta.main) {
  report(await measure());
} else {
  Deno.bench({
    name: "sync job vs /full-update/stream (10,000 guests)",
    n: 1,
    warmup: 0,
    async fn() {
      report(await measure());
    },
  });
}
