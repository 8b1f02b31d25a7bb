/**
 * Rendering cost of an inventory list page, as a ratio against a ceiling taken in the same
 * run: req/s of `GET virtual-machines/?cluster_id=N&limit=50` (auth, filter, page, render,
 * JSON) ÷ req/s of the same bytes served static by the same server. Target: ≥ 10%.
 *
 * Two stores of 1,000 VMs in clusters of 100: "simple" VMs (name, cluster, status, memory:
 * the ~30 KB page the target is set for) and "rich" ones (site, tenant, role, two tags,
 * custom fields with an object one, a primary IP: three times the bytes, reported too).
 *
 * Run: `npx -y deno@2.9.6 run -A bench/inventory_render_bench.ts` (prints the figures), or
 * through `deno task bench` (Deno.bench cases, in-process).
 */
import { HEADERS, pagePaths, vmStore } from "../tests/routes/inventory/_vm_page.ts";
import { workerLoad } from "./http_load.ts";

const TARGET = 0.10;
const ROUNDS = 3;
const ROUND_MS = 2000;

interface Figure {
  label: string;
  bytes: number;
  rendered: number;
  ceiling: number;
}

async function measure(shape: "simple" | "rich"): Promise<Figure> {
  const s = await vmStore(1_000, 100, shape);
  const path = pagePaths(s.cluster)[0];
  const headers = { authorization: HEADERS.authorization };
  // The ceiling: the very bytes of the rendered page (same origin in its URLs), no work.
  let body = new Uint8Array(0);
  let contentType = "application/json";
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    (req) =>
      req.url.endsWith("/static")
        ? new Response(body, { headers: { "content-type": contentType } })
        : s.app.fetch(req),
  );
  const port = server.addr.port;
  const sample = await fetch(`http://127.0.0.1:${port}${path}`, { headers });
  if (sample.status !== 200) throw new Error(`${path}: ${sample.status}`);
  body = new Uint8Array(await sample.arrayBuffer());
  contentType = sample.headers.get("content-type") ?? contentType;
  try {
    await workerLoad(port, "/static", {}, 500);
    await workerLoad(port, path, headers, 500);
    const rendered: number[] = [];
    const ceiling: number[] = [];
    // Alternate the two so drift on a shared machine hits both alike.
    for (let round = 0; round < ROUNDS; round++) {
      const a = await workerLoad(port, path, headers, ROUND_MS);
      const b = await workerLoad(port, "/static", {}, ROUND_MS);
      if (Object.keys(a.statuses).some((k) => k !== "200")) {
        throw new Error(`rendered page answered ${JSON.stringify(a.statuses)}`);
      }
      if (Math.abs(a.bytes - body.length) > 1) throw new Error("rendered page size changed");
      rendered.push(a.rps);
      ceiling.push(b.rps);
    }
    const mid = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)];
    return { label: shape, bytes: body.length, rendered: mid(rendered), ceiling: mid(ceiling) };
  } finally {
    await server.shutdown();
    s.close();
  }
}

export async function report(): Promise<boolean> {
  let allMet = true;
  for (const shape of ["simple", "rich"] as const) {
    const f = await measure(shape);
    const ratio = f.rendered / f.ceiling;
    const met = ratio >= TARGET;
    allMet &&= met;
    console.log(
      `${f.label} VM page (50 rows, ${(f.bytes / 1024).toFixed(1)} KiB): rendered ${
        f.rendered.toFixed(0)
      } req/s, static ${f.ceiling.toFixed(0)} req/s, ratio ${(ratio * 100).toFixed(1)}% ` +
        `(target ≥ ${(TARGET * 100).toFixed(0)}%)  ${met ? "met" : "NOT met"}`,
    );
  }
  return allMet;
}

if (import.meta.main) await report();

// `deno bench` cases: the rendered page in-process, on both stores.
const benchStores = new Map<string, Awaited<ReturnType<typeof vmStore>>>();
for (const shape of ["simple", "rich"] as const) {
  Deno.bench({
    name: `virtual-machines/?cluster_id=N&limit=50, ${shape} VMs, in-process`,
    group: "rendered page",
    async fn(b) {
      let s = benchStores.get(shape);
      if (!s) benchStores.set(shape, s = await vmStore(1_000, 100, shape));
      b.start();
      const res = await s.app.request(`http://bench${pagePaths(s.cluster)[0]}`, {
        headers: { authorization: HEADERS.authorization },
      });
      await res.arrayBuffer();
      b.end();
    },
  });
}
