/**
 * Linear-time schema patterns: matching a pathological input twice as long must take about
 * twice as long (a backtracking engine takes exponentially longer). In-process, no HTTP.
 * Target: time(40,000 chars) / time(20,000 chars) <= 3.
 * Run: deno run -A bench/pattern_bench.ts
 */
import { compileSafePattern } from "../domain/hypervisor_schema/pattern.ts";

const pattern = compileSafePattern("[a-z\\d]+(?:(?:[._]|__|[-]*)[a-z\\d]+)*:\\w+")!;

function msFor(length: number): number {
  const input = "a".repeat(length);
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    pattern.test(input);
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b)[2];
}

msFor(2_000); // warm-up
const short = msFor(20_000);
const long = msFor(40_000);
const ratio = long / short;
const met = ratio <= 3;
console.log(
  `in-process: pathological input, 20,000 chars ${short.toFixed(1)} ms, 40,000 chars ${
    long.toFixed(1)
  } ms, ratio ${ratio.toFixed(2)} (target <= 3) ${met ? "met" : "NOT met"}`,
);
console.log(met ? "pattern bench: all 1 targets met" : "pattern bench: NOT met: linear time");
