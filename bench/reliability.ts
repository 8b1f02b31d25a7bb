/**
 * The long reliability run (`deno task reliability`; README, Reliability):
 * 1. load: RELIABILITY_CLIENTS (200) clients for RELIABILITY_SECONDS (60) mixing backend reads,
 *    inventory lists and writes and hypervisor calls, while a full sync of a RELIABILITY_GUESTS
 *    (10,000) guest mock runs on the same server and must complete;
 * 2. hostile input and crash safety: the CI suites again, RELIABILITY_RUNS (5) times larger
 *    (hostile cases) and RELIABILITY_CRASH_ROUNDS (3) rounds of kills.
 * Prints the figures the README quotes.
 */
import { addInventoryCopy, KEY, ROOT, syncWorld } from "../tests/e2e/_sync_harness.ts";
import { runLoad } from "../tests/reliability/_load.ts";

const env = (name: string, fallback: number) => Number(Deno.env.get(name) ?? fallback);
const clients = env("RELIABILITY_CLIENTS", 200);
const seconds = env("RELIABILITY_SECONDS", 60);
const guests = env("RELIABILITY_GUESTS", 10_000);
const runs = env("RELIABILITY_RUNS", 5);
const crashRounds = env("RELIABILITY_CRASH_ROUNDS", 3);

const nodes = 8;
const cts = Math.floor(guests / 10);
const world = await syncWorld(
  `nodes=${nodes},vms=${guests - cts},cts=${cts},storages=2`,
  { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" },
);
let syncReport = "";
let loadFailed = false;
try {
  await addInventoryCopy(world);
  await world.addHypervisorCopy("lab");
  const syncStarted = performance.now();
  const sync = world.stream("/full-update/stream").then((frames) => {
    const last = frames.at(-1);
    syncReport = `full sync of ${guests} guests: ${last?.event} ok=${last?.data?.ok} in ${
      ((performance.now() - syncStarted) / 1000).toFixed(1)
    } s`;
    return last?.data?.ok === true;
  });
  const report = await runLoad({
    base: world.base,
    backendKey: KEY,
    inventoryToken: ROOT,
    hypervisorUser: "root@pam",
    hypervisorPassword: "bridgebox",
  }, { clients, durationMs: seconds * 1000, tag: "long" });
  const syncOk = await sync;
  const vms = await world.inventoryCall("GET", "virtualization/virtual-machines/?limit=1");
  console.log(JSON.stringify({ load: report }, null, 1));
  console.log(syncReport, `(inventory holds ${vms.body.count} VMs)`);
  loadFailed = report.fiveHundreds > 0 || report.lostWrites > 0 || report.duplicatedWrites > 0 ||
    report.transportErrors > 0 || !syncOk || vms.body.count !== guests;
} finally {
  await world.close();
}

const suite = async (files: string[], extra: Record<string, string>) => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["test", "-A", ...files],
    env: extra,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  for (const line of text.split("\n")) {
    const figure = /^(hostile input|crash safety|streams|scale-out|security): /.test(line) &&
      !line.includes(" ... ") && !line.includes("=>");
    if (figure) console.log(line);
  }
  if (!out.success) console.log(text.slice(-4000));
  return out.success;
};

const root = new URL("../", import.meta.url).pathname;
let suitesOk = await suite([`${root}tests/reliability/hostile_test.ts`], {
  RELIABILITY_RUNS: String(runs),
});
for (let round = 0; round < crashRounds; round++) {
  suitesOk = await suite([
    `${root}tests/reliability/crash_test.ts`,
    `${root}tests/reliability/scaleout_test.ts`,
  ], {}) && suitesOk;
}
if (loadFailed || !suitesOk) {
  console.error("reliability: FAILED");
  Deno.exit(1);
}
console.log("reliability: all figures within their goals (zero 5xx, zero lost or doubled)");
