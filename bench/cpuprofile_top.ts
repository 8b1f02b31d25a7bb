/**
 * The functions a V8 .cpuprofile (`deno run --cpu-prof`, e.g. the user-path bench's
 * BENCH_CPU_PROF) spent the most time in: self time (the function's own code) and total time
 * (with what it called), as a share of the profile, top 40 by self time.
 *
 *   npx -y deno@2.9.6 run -A bench/cpuprofile_top.ts <file.cpuprofile> [count] [--total]
 *
 * `--total` sorts by total time instead, and lists the app's own functions only (not the
 * runtime's or dependencies'): where a request's time goes, callee included. `--after=<s>`
 * counts only the samples taken that many seconds or more after the profile started (the
 * user-path bench's re-runs, without its first run).
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const byTotal = Deno.args.includes("--total");
const afterArg = Deno.args.find((a) => a.startsWith("--after="));
const afterUs = afterArg ? Number(afterArg.slice("--after=".length)) * 1e6 : 0;
const [file, count = "40"] = Deno.args.filter((a) => !a.startsWith("--"));
if (!file) throw new Error("usage: cpuprofile_top.ts <file.cpuprofile> [count]");
const profile: Profile = JSON.parse(await Deno.readTextFile(file));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (n: ProfileNode) => {
  const { functionName, url, lineNumber } = n.callFrame;
  const where = url
    ? `${url.replace(/^.*\/(speed|main|wt)\//, "").slice(-60)}:${lineNumber + 1}`
    : "";
  return `${functionName || "(anonymous)"} ${where}`.trim();
};
const self = new Map<string, number>();
const total = new Map<string, number>();
let all = 0;
let at = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  at += dt;
  if (at < afterUs) return;
  all += dt;
  const leaf = byId.get(id)!;
  self.set(name(leaf), (self.get(name(leaf)) ?? 0) + dt);
  // Each function once per sample, however deep it recurses.
  const seen = new Set<string>();
  for (let node: number | undefined = id; node !== undefined; node = parent.get(node)) {
    const k = name(byId.get(node)!);
    if (seen.has(k)) continue;
    seen.add(k);
    total.set(k, (total.get(k) ?? 0) + dt);
  }
});
const pct = (t: number) => `${(100 * t / all).toFixed(1).padStart(5)} %`;
console.log(`${(all / 1e6).toFixed(1)} s sampled; self, total, function`);
const own = (k: string) => !/ext:|node:|modules\/\.deno|^\(/.test(k) && / \S+\.ts:\d+$/.test(k);
const ranked = byTotal
  ? [...total].filter(([k]) => own(k)).sort((a, b) => b[1] - a[1])
  : [...self].sort((a, b) => b[1] - a[1]);
for (const [k] of ranked.slice(0, Number(count))) {
  const t = self.get(k) ?? 0;
  console.log(`${pct(t)} ${pct(total.get(k) ?? 0)}  ${k}`);
}
