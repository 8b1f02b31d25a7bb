/**
 * Console figures, in process (app.request, no socket), with 10,000 synced VMs (and their
 * sync-state records) in the inventory:
 * - server render of the VM list (50 rows, type column and filters) vs the one API list call
 *   behind it (`GET /api/virtualization/virtual-machines/?limit=50`): p50 of each and their
 *   ratio (goal: p50 < 50 ms);
 * - server render of the overview (counts, endpoints, bootstrap card) vs the same API list
 *   call (goal: p50 < 200 ms);
 * - the containers-only list (1,000 of 10,000 guests, by the role the sync gives containers),
 *   against the same 50 ms goal;
 * - the bytes a first page load transfers (overview HTML + stylesheet + script + icon).
 * Run: deno bench -A bench/console_bench.ts
 */
import { consoleHarness, ROOT } from "../tests/routes/ui/_console.ts";

const VMS = 10_000;
const BATCH = 1_000;
const SAMPLES = 30;

async function seed(h: Awaited<ReturnType<typeof consoleHarness>>) {
  const must = async (method: string, path: string, body: unknown) => {
    const r = await h.api(method, path, body);
    if (r.status >= 300) {
      throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    }
    return r.body;
  };
  const type = await must("POST", "/api/virtualization/cluster-types/", {
    name: "Proxmox",
    slug: "proxmox",
  });
  const cluster = await must("POST", "/api/virtualization/clusters/", {
    name: "bench",
    type: type.id,
  });
  // The roles the sync gives guests of each type.
  const vmRole = await must("POST", "/api/dcim/device-roles/", {
    name: "Virtual machine",
    slug: "virtual-machine",
    vm_role: true,
  });
  const ctRole = await must("POST", "/api/dcim/device-roles/", {
    name: "Container",
    slug: "container",
    vm_role: true,
  });
  const endpoint = await must("POST", "/api/plugins/service/endpoints/hypervisor/", {
    name: "bench",
    domain: "10.0.0.1",
    password: "pw",
    enabled: false,
  });
  for (let start = 0; start < VMS; start += BATCH) {
    const vms = await must(
      "POST",
      "/api/virtualization/virtual-machines/",
      Array.from({ length: BATCH }, (_, i) => ({
        name: `vm-${start + i}`,
        cluster: cluster.id,
        status: (start + i) % 3 === 0 ? "offline" : "active",
        role: (start + i) % 10 === 0 ? ctRole.id : vmRole.id,
        vcpus: 2,
        memory: 2048,
        disk: 32768,
      })),
    );
    await must(
      "POST",
      "/api/plugins/service/vm-sync-state/",
      (vms as Array<{ id: number; name: string }>).map((vm, i) => ({
        endpoint: endpoint.id,
        vmid: 100 + start + i,
        vm_type: (start + i) % 10 === 0 ? "lxc" : "qemu",
        virtual_machine: vm.id,
        name: vm.name,
      })),
    );
  }
}

async function timed(run: () => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = performance.now();
    await run();
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b);
}

const p50 = (xs: number[]) => xs[Math.floor(xs.length / 2)];

const h = await consoleHarness();
const seedStart = performance.now();
await seed(h);
const seedMs = performance.now() - seedStart;
const c = h.client();
await c.signIn(ROOT);

const page = async (path: string) => {
  const res = await c.get(path);
  if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
  return res;
};
const apiList = () => h.api("GET", "/api/virtualization/virtual-machines/?limit=50");

// Warm up every path once (module and cache warm-up are not what we measure).
await page("/ui/vms");
await page("/ui/");
await apiList();

const api = await timed(apiList);
const list = await timed(() => page("/ui/vms"));
const overview = await timed(() => page("/ui/"));
const containers = await timed(() => page("/ui/vms?type=lxc"));

const first = await page("/ui/");
// The counts are real: 9,000 VMs and 1,000 containers, and the filter finds the containers.
if (!/9,000 Virtual machines 1,000 Containers/.test(first.text)) {
  throw new Error(`overview counts: ${first.text.slice(0, 600)}`);
}
if (!/1–50 of 1000\b/.test((await page("/ui/vms?type=lxc")).text)) {
  throw new Error("the containers filter");
}
let bytes = new TextEncoder().encode(first.html).length;
for (const asset of ["/ui/static/console.css", "/ui/static/console.js", "/ui/favicon.svg"]) {
  bytes += new TextEncoder().encode((await c.get(asset)).html).length;
}

const line = (name: string, xs: number[], goal: number) =>
  `${name.padEnd(46)} p50 ${p50(xs).toFixed(1).padStart(7)} ms  (goal < ${goal} ms: ${
    p50(xs) < goal ? "met" : "NOT met"
  }; ratio to the API list call ${(p50(api) / p50(xs)).toFixed(2)})`;
console.log(`seeded ${VMS} VMs with sync state in ${(seedMs / 1000).toFixed(1)} s`);
console.log(`${"API list call (50 VMs)".padEnd(46)} p50 ${p50(api).toFixed(1).padStart(7)} ms`);
console.log(line("console VM list, 50 rows (10,000 VMs)", list, 50));
console.log(line("console overview (10,000 VMs)", overview, 200));
console.log(line("console containers only (1,000 of 10,000)", containers, 50));
console.log(`first page load: ${bytes} bytes (HTML + CSS + JS + icon, uncompressed)`);

Deno.bench("console VM list, 50 rows of 10,000", async () => {
  await page("/ui/vms");
});
Deno.bench("console overview with 10,000 VMs", async () => {
  await page("/ui/");
});

globalThis.addEventListener("unload", () => h.close());
