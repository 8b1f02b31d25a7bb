/**
 * Where a first sync's KV mutations go (issue 25: mutations per object bound a first run's
 * commits). Runs one in-process first `/full-update` of a small seed on an in-memory KV that
 * counts every mutation its atomics carry (set, delete, sum) by the key's kind and, for the
 * inventory's keys, by model and field: records, value-index entries, ordered twins, value
 * counters, unique claims, per-model counts and generations, sequences, the change log. Prints
 * them ranked, with the objects each model holds after the run and the mutations per object.
 *
 *   npx -y deno@2.9.6 run -A bench/write_tally.ts                     # nodes=1,vms=240,cts=60
 *   BENCH_TALLY_SEED=nodes=2,vms=1200,cts=300 npx -y deno@2.9.6 run -A bench/write_tally.ts
 *
 * Counts, not times: the figures do not depend on the machine's load (docs/sync.md, "Writes:
 * round 5").
 */
import { reportingMutations } from "../tests/_kv_mutations.ts";
import { fullUpdate, startLoop } from "./sync_bench.ts";

const SEED = Deno.env.get("BENCH_TALLY_SEED") ?? "nodes=1,vms=240,cts=60";

/** The kind of a mutated key: ["inventory", kind, model, field or constraint, …]. */
function classify(key: Deno.KvKey): { model: string; what: string } {
  if (key[0] !== "inventory") return { model: "(other)", what: String(key[0]) };
  const kind = String(key[1]);
  const model = typeof key[2] === "string" ? key[2] : "(none)";
  switch (kind) {
    case "obj":
      return { model, what: "record" };
    case "idx":
      return { model, what: `index ${String(key[3])}` };
    case "ord":
      return { model, what: key[3] === "*" ? "ordered *" : `twin ${String(key[3])}` };
    case "idx_count":
      return { model, what: `counter ${String(key[3])}` };
    case "uniq":
      return { model, what: `unique ${String(key[3])}` };
    default:
      return { model, what: kind };
  }
}

/** A KV handle tallying the mutations its atomics carry by `classify`. */
function tallyingKv(kv: Deno.Kv) {
  const tally = new Map<string, { model: string; what: string; n: number }>();
  const count = (key: Deno.KvKey) => {
    const c = classify(key);
    const id = `${c.model}\u0000${c.what}`;
    const row = tally.get(id) ?? { ...c, n: 0 };
    row.n++;
    tally.set(id, row);
  };
  const counted = reportingMutations(kv, count);
  return { counted, tally };
}

const raw = await Deno.openKv(":memory:");
const { counted, tally } = tallyingKv(raw);
const loop = await startLoop("in-process", SEED, counted);
try {
  const run = await fullUpdate(loop);
  if (!run.ok) throw new Error(`the first run failed: ${run.problems[0]}`);
  const objects = new Map<string, number>();
  for await (const e of raw.list<Deno.KvU64>({ prefix: ["inventory", "count"] })) {
    objects.set(String(e.key[2]), Number(e.value.value));
  }
  const rows = [...tally.values()].sort((a, b) => b.n - a.n);
  const total = rows.reduce((n, r) => n + r.n, 0);
  const written = [...objects].filter(([m]) => m !== "core.objectchange")
    .reduce((n, [, c]) => n + c, 0);
  console.log(
    `first run of ${loop.guests} guests (${SEED}) in ${(run.ms / 1000).toFixed(1)} s: ` +
      `${total} mutations, ${written} objects (${(total / written).toFixed(2)} per object)`,
  );
  const byModel = new Map<string, number>();
  for (const r of rows) byModel.set(r.model, (byModel.get(r.model) ?? 0) + r.n);
  console.log("\nby model (mutations, objects held, per object):");
  for (const [model, n] of [...byModel].sort((a, b) => b[1] - a[1])) {
    const held = objects.get(model) ?? 0;
    const per = held ? (n / held).toFixed(2) : "";
    console.log(
      `  ${String(n).padStart(8)}  ${model.padEnd(36)} ${String(held).padStart(7)}  ${per}`,
    );
  }
  const byWhat = new Map<string, number>();
  for (const r of rows) {
    const kind = r.what.split(" ")[0];
    byWhat.set(kind, (byWhat.get(kind) ?? 0) + r.n);
  }
  console.log("\nby kind of key:");
  for (const [what, n] of [...byWhat].sort((a, b) => b[1] - a[1])) {
    console.log(`  ${String(n).padStart(8)}  ${what.padEnd(12)} ${(100 * n / total).toFixed(1)}%`);
  }
  console.log("\nranked (model, key):");
  for (const r of rows.slice(0, Number(Deno.env.get("BENCH_TALLY_ROWS") ?? 60))) {
    console.log(`  ${String(r.n).padStart(8)}  ${r.model.padEnd(36)} ${r.what}`);
  }
} finally {
  await loop.close();
}
