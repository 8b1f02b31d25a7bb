/**
 * Mutation testing: `deno task mutate <module.ts> [test files...]` for one module, or
 * `deno task mutate --group <name>` / `--all` for the core module groups (GROUPS below), with a
 * kill rate per module.
 *
 * Copies the committed tree (git archive HEAD, or the working tree with --worktree) into a
 * temporary directory, then for each one-line mutation of a module (comparison, boolean and
 * arithmetic operator swaps, flipped literals, removed guards, writes and KV checks) writes the
 * mutant, runs the tests there and restores the line. A mutant no test notices "survives":
 * either a missing test or code no user could tell apart (then it belongs in
 * scripts/mutate_equivalent.ts, with the reason). The repository itself is never modified.
 *
 * Options: --worktree (copy uncommitted files too), --line <n> or <n-m> (only those lines),
 * --max <n> (stop after n mutants), --list (print the mutants without running anything),
 * --sample <n> (n mutants per group, drawn with --seed <text>), --budget <seconds> (per group,
 * after its unmutated run: start no mutant after that), --min-kill <percent> (exit 1 when a group kills fewer of its
 * non-equivalent mutants), --report <file.md> (write the table there too), --rotate (only one
 * of the groups, picked by the seed), --no-baseline (skip the unmutated run: the caller has just
 * run the tests green), --timeout <seconds> (a mutant whose tests run longer is stopped and
 * counted killed; default 3 × the unmutated run, at least 60 s, or 300 s with --no-baseline).
 */
import { EQUIVALENT } from "./mutate_equivalent.ts";

/** Tests that exercise each module (default: test files that import it by name). */
const AUTH_TESTS = [
  "tests/routes/backend/auth_test.ts",
  "tests/routes/backend/keys_test.ts",
  "tests/routes/backend/lockout_edges_test.ts",
  "tests/routes/backend/bad_input_test.ts",
];
const RELATED: Record<string, string[]> = {
  "domain/api_keys.ts": AUTH_TESTS,
  "domain/lockout.ts": ["tests/domain/lockout_test.ts", ...AUTH_TESTS],
  "domain/fernet.ts": [
    "tests/domain/fernet_test.ts",
    "tests/domain/plugin/rules_test.ts",
    "tests/routes/backend/encryption_test.ts",
    "tests/routes/backend/encryption_interop_test.ts",
    "tests/routes/plugin/push_test.ts",
  ],
  "domain/credentials.ts": [
    "tests/routes/backend/encryption_test.ts",
    "tests/routes/backend/encryption_interop_test.ts",
    "tests/routes/backend/endpoints_test.ts",
    "tests/routes/backend/rekey_test.ts",
    "tests/storage/durability_test.ts",
  ],
  "storage/kv/models.ts": [
    "tests/storage/",
    "tests/domain/netbox/engine_test.ts",
    "tests/routes/inventory/rules_test.ts",
    "tests/routes/inventory/crud_test.ts",
    "tests/security/list_cache_test.ts",
  ],
  "domain/netbox/tokens.ts": ["tests/routes/inventory/"],
  "domain/plugin/push.ts": ["tests/domain/plugin/push_test.ts", "tests/routes/plugin/"],
};

/**
 * The core module groups (README "Tests, benchmarks and mutation testing"): each group's modules
 * (files, or folders taken whole) and the tests that guard them. Faster files first: with
 * --fail-fast a killed mutant usually stops in the first one.
 */
export const GROUPS: Record<string, { modules: string[]; tests: string[] }> = {
  sync: {
    modules: ["domain/sync/"],
    // The field mapping of every stage first (one tiny world, about 10 s); then the owner
    // policy under concurrent edits, changes upstream, the whole loop, the routes, one run per
    // endpoint, run options and the plan, roles and tenants; then a first run's counts, the
    // fields of nodes, templates and custom fields, a strict (NetBox 4.2 and 4.6) inventory.
    tests: [
      "tests/domain/sync/",
      "tests/e2e/sync_mapping_test.ts",
      "tests/e2e/sync_edits_test.ts",
      "tests/e2e/sync_upstream_test.ts",
      "tests/e2e/sync_test.ts",
      "tests/routes/backend/sync_test.ts",
      "tests/e2e/sync_runs_test.ts",
      "tests/e2e/sync_plan_test.ts",
      "tests/e2e/sync_roles_tenants_test.ts",
      "tests/e2e/sync_writes_test.ts",
      "tests/e2e/sync_fields_test.ts",
      "tests/e2e/sync_strict_test.ts",
      // The ledger's skips on a real inventory: a hand edit put back, an upstream change written.
      "tests/e2e/sync_ledger_test.ts",
    ],
  },
  jobs: {
    modules: ["domain/jobs/"],
    tests: [
      "tests/domain/jobs/",
      "tests/storage/jobs_store_test.ts",
      "tests/routes/plugin/job_wiring_test.ts",
      "tests/routes/plugin/sync_request_test.ts",
      "tests/routes/ui/jobs_test.ts",
      "tests/security/job_bounds_test.ts",
      "tests/e2e/jobs_test.ts",
    ],
  },
  verbs: {
    modules: ["domain/verbs/"],
    tests: [
      "tests/domain/verbs/",
      "tests/storage/contract/idempotency_test.ts",
      "tests/routes/backend/verb_idempotency_test.ts",
      "tests/routes/backend/verbs_test.ts",
      "tests/routes/backend/verb_audit_test.ts",
    ],
  },
  engine: {
    modules: ["domain/netbox/engine/"],
    tests: [
      "tests/domain/netbox/",
      "tests/routes/inventory/query_test.ts",
      "tests/routes/inventory/lookups_table_test.ts",
      "tests/routes/inventory/filter_edges_test.ts",
      "tests/routes/inventory/falsy_values_test.ts",
      "tests/routes/inventory/delete_rules_test.ts",
      "tests/routes/inventory/list_oracle_test.ts",
      "tests/routes/inventory/netbox46_requests_test.ts",
      "tests/routes/inventory/client_compat_test.ts",
      "tests/routes/inventory/long_filter_values_test.ts",
      "tests/routes/inventory/write_mutations_test.ts",
      "tests/routes/inventory/sliced_reads_test.ts",
      "tests/routes/inventory/write_table_test.ts",
      "tests/routes/inventory/nested_refs_test.ts",
      "tests/routes/inventory/nested_ref_empty_test.ts",
      "tests/routes/inventory/crud_test.ts",
      "tests/routes/inventory/rules_test.ts",
      "tests/routes/inventory/object_rules_test.ts",
      "tests/routes/inventory/custom_fields_test.ts",
      "tests/routes/inventory/addressing_test.ts",
      "tests/routes/inventory/token_rules_test.ts",
      "tests/routes/inventory/changelog_test.ts",
      "tests/routes/inventory/concurrent_writes_test.ts",
      "tests/routes/inventory/netbox46_writes_test.ts",
      "tests/routes/inventory/netbox_rules_test.ts",
      "tests/routes/inventory/netbox46_fields_test.ts",
      "tests/routes/inventory/render_snapshot_test.ts",
      "tests/routes/inventory/list_detail_render_test.ts",
      "tests/routes/inventory/write_cost_test.ts",
      // Bulk updates as NetBox's bulk view (answer order, an id twice, the first refusal), bulk
      // writes passing over unknown ids, nested references among what a token may view, where
      // nulls sort on every list path, the change log's request_id index.
      "tests/routes/inventory/bulk_update_view_test.ts",
      "tests/routes/inventory/bulk_unknown_ids_test.ts",
      "tests/routes/inventory/nested_refs_permissions_test.ts",
      "tests/routes/inventory/null_ordering_test.ts",
      "tests/routes/inventory/changelog_requests_test.ts",
      // A bulk write's atomics committed while the next is handed over, all or nothing.
      "tests/routes/inventory/commit_overlap_test.ts",
      "tests/routes/inventory/bulk_null_items_test.ts",
      "tests/routes/inventory/reference_edges_test.ts",
      "tests/routes/plugin/long_unique_values_test.ts",
      // An update's answer re-read after a save hook changed the object (push-on-save).
      "tests/routes/plugin/save_answer_test.ts",
      // A list upsert's refusal at its item's place (updateMany outside the bulk view).
      "tests/routes/plugin/upsert_refusal_test.ts",
      "tests/security/patterns_test.ts",
    ],
  },
  outbound: {
    modules: ["clients/outbound.ts", "domain/outbound_policy.ts"],
    tests: [
      "tests/domain/outbound_policy_test.ts",
      "tests/clients/outbound_test.ts",
      "tests/clients/outbound_rules_test.ts",
      "tests/security/destination_test.ts",
      "tests/security/outbound_test.ts",
      "tests/reliability/ssrf_test.ts",
    ],
  },
  "ui-auth": {
    modules: [
      "routes/ui/login.tsx",
      "routes/ui/session.ts",
      "routes/ui/mod.ts",
      "routes/ui/live.ts",
      "domain/console_sessions.ts",
    ],
    tests: [
      "tests/storage/contract/console_sessions_test.ts",
      "tests/routes/ui/session_test.ts",
      "tests/routes/ui/session_lifetime_test.ts",
      "tests/routes/ui/pages_test.ts",
      // The live-run gate (live.ts): what the backend answered, then scoping to copies.
      "tests/routes/ui/live_answers_test.ts",
      "tests/routes/ui/live_scope_test.ts",
      // What the live parts accept and refuse before anything runs (ids, pre-check, no backend).
      "tests/routes/ui/live_gate_test.ts",
    ],
  },
};

interface Mutant {
  line: number;
  what: string;
  text: string;
}

/** Operator swaps: [pattern, replacement, label]. Each applies once per match on a line. */
const SWAPS: Array<[RegExp, string, string]> = [
  [/===/g, "!==", "=== → !=="],
  [/!==/g, "===", "!== → ==="],
  [/ <= /g, " < ", "<= → <"],
  [/ >= /g, " > ", ">= → >"],
  [/ < /g, " <= ", "< → <="],
  [/ > /g, " >= ", "> → >="],
  [/&&/g, "||", "&& → ||"],
  [/\|\|/g, "&&", "|| → &&"],
  [/\?\?/g, "||", "?? → ||"],
  [/\btrue\b/g, "false", "true → false"],
  [/\bfalse\b/g, "true", "false → true"],
  [/ \+ 1\b/g, " - 1", "+ 1 → - 1"],
  [/ - 1\b/g, " + 1", "- 1 → + 1"],
  [/ \+ (?!1\b)/g, " - ", "+ → -"],
  [/ - (?!1\b)/g, " + ", "- → +"],
  [/\bif \(!/g, "if (", "drop ! in if"],
  [/\breturn null;/g, "return undefined as never;", "return null → undefined"],
];

/** Lines whose removal is a meaningful mutant (guards, checks, writes). */
const REMOVABLE = [
  /^\s*if \(.*\) (return|throw|continue|break)\b.*;\s*$/,
  /^\s*\.?check\(.*\)[;,]?\s*$/,
  /^\s*op\.(check|set|delete|sum)\(.*\);\s*$/,
  /^\s*await [\w.#]+\(.*\);\s*$/,
  /^\s*[\w.#\[\]]+\.(push|add|set|delete)\(.*\);\s*$/,
  /^\s*[\w.#\[\]]+(\+\+|--);\s*$/,
];

/** Type-only lines: union members and property declarations (types vanish at run time). */
const TYPE_ONLY = [/^\|/, /^(readonly\s+)?[\w#]+\??:\s[^=()]*;$/];

function isCode(line: string): boolean {
  const t = line.trim();
  return t !== "" && !t.startsWith("//") && !t.startsWith("*") && !t.startsWith("/*") &&
    !t.startsWith("import ") && !t.startsWith("export type") && !t.startsWith("type ") &&
    !TYPE_ONLY.some((re) => re.test(t));
}

export function mutantsOf(source: string): Mutant[] {
  const out: Mutant[] = [];
  const lines = source.split("\n");
  lines.forEach((line, i) => {
    if (!isCode(line)) return;
    // Leave string contents alone: mutate only the code around them.
    const code = line.replace(/(["'`])(?:\\.|(?!\1).)*\1/g, (m) => " ".repeat(m.length));
    for (const [re, to, what] of SWAPS) {
      for (const m of code.matchAll(re)) {
        const at = m.index!;
        out.push({
          line: i + 1,
          what,
          text: line.slice(0, at) + m[0].replace(re, to) + line.slice(at + m[0].length),
        });
      }
    }
    if (REMOVABLE.some((re) => re.test(line))) {
      out.push({ line: i + 1, what: "remove line", text: "" });
    }
  });
  // Two rules can make the same line (e.g. `+ 1`): keep one.
  const seen = new Set<string>();
  return out.filter((m) => {
    const id = `${m.line}\n${m.text}`;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

async function run(cmd: string[], cwd: string, timeoutMs: number) {
  const child = new Deno.Command(cmd[0], {
    args: cmd.slice(1),
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const result = await child.output();
  clearTimeout(timer);
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return {
    code: result.code,
    signal: result.signal,
    out: decode(result.stdout),
    err: decode(result.stderr),
  };
}

/**
 * Runs a group's test entries one `deno test` after another, in the order given, and stops at
 * the first that fails. One `deno test` of them all does not keep that order (it runs a folder's
 * files after the files named one by one, so `tests/domain/sync/`, listed first for its speed,
 * ran last: every mutant the fast tests kill waited for the end-to-end ones). `timeoutMs` is
 * for all of them together.
 */
export async function runInOrder(cmd: string[], tests: string[], cwd: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  let last: Awaited<ReturnType<typeof run>> = { code: 0, signal: null, out: "", err: "" };
  for (const test of tests) {
    const left = deadline - Date.now();
    if (left <= 0) return { ...last, code: 1, signal: "SIGKILL" as Deno.Signal };
    last = await run([...cmd, test], cwd, left);
    if (last.code !== 0) return last;
  }
  return last;
}

async function copyTree(worktree: boolean): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "bridgebox-mutate-" });
  const src = Deno.cwd();
  const pack = worktree
    ? `tar --exclude=.git --exclude=node_modules -cf - . | tar -xf - -C '${dir}'`
    // Committed files, plus new source files not yet committed (a commit may import one).
    : `git archive HEAD | tar -xf - -C '${dir}' && ` +
      `git ls-files -z --others --exclude-standard -- . ':(exclude)tests' ':(exclude)bench' | xargs -0 -r cp --parents -t '${dir}'`;
  const r = await run(["bash", "-c", pack], src, 120_000);
  if (r.code !== 0) throw new Error(`could not copy the tree into ${dir}`);
  // Reuse the installed npm packages instead of installing them again.
  try {
    await Deno.symlink(`${src}/node_modules`, `${dir}/node_modules`);
  } catch { /* no node_modules yet: deno installs them */ }
  return dir;
}

async function relatedTests(module: string): Promise<string[]> {
  if (RELATED[module]) return RELATED[module];
  const base = module.split("/").pop()!;
  const r = await run(["bash", "-c", `grep -rl '${base}' tests || true`], Deno.cwd(), 30_000);
  return r.out.split("\n").filter((f) => f.endsWith("_test.ts"));
}

/** A seeded shuffle (mulberry32 over a string hash): one seed, one sample, on any machine. */
export function shuffled<T>(items: T[], seed: string): T[] {
  let h = 1779033703 ^ seed.length;
  for (let i = 0; i < seed.length; i++) {
    h = Math.imul(h ^ seed.charCodeAt(i), 3432918353);
    h = (h << 13) | (h >>> 19);
  }
  let state = h >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** A signature's last line, its return type only (`): { ok: true; … } {`): types vanish. */
const RETURN_TYPE_LINE = /^\): [^=()]*\{$/;

/** Whether a surviving mutant is listed as one no user could tell apart. */
export function isEquivalent(module: string, original: string, m: Mutant): boolean {
  if (RETURN_TYPE_LINE.test(original.trim())) return true;
  return EQUIVALENT.some((e) =>
    e.module === module && e.what === m.what && original.trim().includes(e.line) &&
    (e.mutant === undefined || m.text.includes(e.mutant))
  );
}

interface Planned extends Mutant {
  module: string;
  original: string;
}

interface Tally {
  mutants: number;
  run: number;
  killed: number;
  timedOut: number;
  survived: Planned[];
  equivalent: number;
}

/** The .ts/.tsx files of a group (folders taken whole, tests excluded). */
async function modulesOf(entries: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const entry of entries) {
    if (!entry.endsWith("/")) {
      out.push(entry);
      continue;
    }
    // A walk of the folder, not git: CI may run in a copy without .git.
    const walk = async (dir: string) => {
      const found: string[] = [];
      for await (const e of Deno.readDir(dir)) {
        const path = `${dir}${e.name}`;
        if (e.isDirectory) found.push(...await walk(`${path}/`));
        else if (/\.tsx?$/.test(e.name) && !e.name.endsWith("_test.ts")) found.push(path);
      }
      return found;
    };
    out.push(...(await walk(entry)).sort());
  }
  return out;
}

function rate(t: { run: number; killed: number; equivalent: number }): string {
  const counted = t.run - t.equivalent;
  return counted === 0 ? "-" : `${(100 * t.killed / counted).toFixed(1)}%`;
}

function table(group: string, tallies: Map<string, Tally>): string {
  const rows = [
    `| ${group} module | mutants | run | killed (timeouts) | survived | equivalent | kill rate |`,
    "|---|---:|---:|---:|---:|---:|---:|",
  ];
  const total: Tally = { mutants: 0, run: 0, killed: 0, timedOut: 0, survived: [], equivalent: 0 };
  for (const [module, t] of tallies) {
    rows.push(
      `| ${module} | ${t.mutants} | ${t.run} | ${t.killed} (${t.timedOut}) | ${
        t.survived.length - t.equivalent
      } | ${t.equivalent} | ${rate(t)} |`,
    );
    total.mutants += t.mutants;
    total.run += t.run;
    total.killed += t.killed;
    total.timedOut += t.timedOut;
    total.equivalent += t.equivalent;
    total.survived.push(...t.survived);
  }
  rows.push(
    `| **${group}** | ${total.mutants} | ${total.run} | ${total.killed} (${total.timedOut}) | ${
      total.survived.length - total.equivalent
    } | ${total.equivalent} | **${rate(total)}** |`,
  );
  return rows.join("\n");
}

async function main(args: string[]) {
  const flags = new Set(args.filter((a) => a.startsWith("--")));
  const VALUED = [
    "--line",
    "--max",
    "--group",
    "--sample",
    "--seed",
    "--budget",
    "--min-kill",
    "--timeout",
  ];
  const value = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const positional = args.filter((a, i) =>
    !a.startsWith("--") && ![...VALUED, "--report"].includes(args[i - 1])
  );
  const seed = value("--seed") ?? new Date().toISOString().slice(0, 10);
  let groupNames = flags.has("--all")
    ? Object.keys(GROUPS)
    : (value("--group")?.split(",").filter(Boolean) ?? []);
  // CI: one group a run, a different one as the seed (the date) changes.
  if (flags.has("--rotate")) groupNames = shuffled(groupNames, `${seed}:rotate`).slice(0, 1);
  for (const g of groupNames) {
    if (!GROUPS[g]) {
      console.error(`no group ${g}; groups: ${Object.keys(GROUPS).join(", ")}`);
      Deno.exit(2);
    }
  }
  const [module, ...explicitTests] = positional;
  if (!module && groupNames.length === 0) {
    console.error(
      "usage: npx -y deno@2.9.6 task mutate <module.ts> [test files...] [--worktree] [--list]\n" +
        `       npx -y deno@2.9.6 task mutate --group <${
          Object.keys(GROUPS).join("|")
        }> | --all\n` +
        "         [--sample n] [--seed text] [--budget seconds] [--min-kill percent] [--report f]",
    );
    Deno.exit(2);
  }
  const plans: { name: string; modules: string[]; tests: string[] }[] = groupNames.length
    ? await Promise.all(groupNames.map(async (name) => ({
      name,
      modules: await modulesOf(GROUPS[name].modules),
      tests: GROUPS[name].tests,
    })))
    : [{
      name: module,
      modules: [module],
      tests: explicitTests.length > 0 ? explicitTests : await relatedTests(module),
    }];

  const sample = value("--sample") ? Number(value("--sample")) : undefined;
  const budgetMs = value("--budget") ? Number(value("--budget")) * 1000 : Infinity;
  let started = Date.now();

  const sources = new Map<string, string>();
  const work = [];
  for (const plan of plans) {
    let mutants: Planned[] = [];
    for (const m of plan.modules) {
      const source = await Deno.readTextFile(m);
      sources.set(m, source);
      const lines = source.split("\n");
      mutants.push(
        ...mutantsOf(source).map((x) => ({ ...x, module: m, original: lines[x.line - 1] })),
      );
    }
    const onlyLine = value("--line");
    if (onlyLine) {
      const [from, to = from] = onlyLine.split("-").map(Number);
      mutants = mutants.filter((m) => m.line >= from && m.line <= to);
    }
    const all = new Map(plan.modules.map((m) => [m, mutants.filter((x) => x.module === m).length]));
    if (sample !== undefined) {
      mutants = shuffled(mutants, `${seed}:${plan.name}`).slice(0, sample);
    } else if (budgetMs !== Infinity) mutants = shuffled(mutants, `${seed}:${plan.name}`);
    const max = value("--max");
    if (max) mutants = mutants.slice(0, Number(max));
    work.push({ ...plan, mutants, all });
  }
  if (flags.has("--list")) {
    for (const plan of work) {
      for (const m of plan.mutants) {
        console.log(`${m.module}:${m.line}  ${m.what}\n    ${m.text.trim() || "(removed)"}`);
      }
      console.log(`${plan.name}: ${plan.mutants.length} mutants`);
    }
    return;
  }

  const dir = await copyTree(flags.has("--worktree"));
  console.log(`copy: ${dir} (seed ${seed})`);
  const report: string[] = [];
  let short = false;
  try {
    for (const plan of work) {
      const testCmd = ["deno", "test", "-A", "--no-check", "--fail-fast", "--quiet"];
      console.log(
        `\n${plan.name}: ${plan.mutants.length} mutants of ${plan.modules.length} module(s) ` +
          `against: ${plan.tests.join(" ")}`,
      );
      const t0 = Date.now();
      // --no-baseline: the caller has just run these tests green (CI runs the suite first).
      const baseline = flags.has("--no-baseline")
        ? { code: 0, out: "", err: "" }
        : await runInOrder(testCmd, plan.tests, dir, 600_000);
      if (baseline.code !== 0) {
        console.error(
          `${plan.name}: the tests fail before any mutation; fix them first:\n` +
            (baseline.out + baseline.err).slice(-4000),
        );
        report.push(`${plan.name}: not measured, its tests fail without any mutation`, "");
        short = true;
        continue;
      }
      // A mutant that makes the tests hang is killed by the clock (and counts as killed).
      const baselineMs = Date.now() - t0;
      started = Date.now(); // the budget is for mutants: the unmutated run is not counted
      const timeoutMs = value("--timeout")
        ? Number(value("--timeout")) * 1000
        : flags.has("--no-baseline")
        ? 300_000
        : Math.max(60_000, 3 * baselineMs);
      const tallies = new Map<string, Tally>();
      for (const m of plan.modules) {
        tallies.set(m, {
          mutants: plan.all.get(m) ?? 0,
          run: 0,
          killed: 0,
          timedOut: 0,
          survived: [],
          equivalent: 0,
        });
      }
      for (const m of plan.mutants) {
        if (Date.now() - started > budgetMs) {
          console.log(`budget spent: ${plan.name} stops here`);
          break;
        }
        const source = sources.get(m.module)!;
        const mutated = source.split("\n");
        mutated[m.line - 1] = m.text;
        await Deno.writeTextFile(`${dir}/${m.module}`, mutated.join("\n"));
        const began = Date.now();
        const r = await runInOrder(testCmd, plan.tests, dir, timeoutMs);
        await Deno.writeTextFile(`${dir}/${m.module}`, source);
        const tally = tallies.get(m.module)!;
        tally.run++;
        if (r.code !== 0) {
          tally.killed++;
          // Each outcome is printed: a kill by the clock on a loaded machine is worth a rerun
          // with --line and a longer --timeout before it is counted as a test's.
          const clock = r.signal === "SIGKILL";
          if (clock) tally.timedOut++;
          console.log(
            `${clock ? "TIMED OUT" : "killed"} ${m.module}:${m.line} ${m.what} (${
              Math.round((Date.now() - began) / 1000)
            } s)`,
          );
          continue;
        }
        tally.survived.push(m);
        const equivalent = isEquivalent(m.module, m.original, m);
        if (equivalent) tally.equivalent++;
        console.log(
          `SURVIVED${
            equivalent ? " (equivalent)" : ""
          } ${m.module}:${m.line} ${m.what}\n    ${m.original.trim()}\n ->  ${
            m.text.trim() || "(removed)"
          }`,
        );
      }
      const text = table(plan.name, tallies) +
        `\n\n${plan.name}: ${Math.round((Date.now() - t0) / 1000)} s (unmutated tests ${
          Math.round(baselineMs / 1000)
        } s)`;
      console.log("\n" + text);
      const survivors = [...tallies.values()].flatMap((t) => t.survived)
        .filter((m) => !isEquivalent(m.module, m.original, m));
      report.push(
        text,
        ...survivors.map((m) =>
          `- survived ${m.module}:${m.line} ${m.what}: \`${m.original.trim()}\``
        ),
        "",
      );
      const counted = [...tallies.values()].reduce(
        (a, t) => ({
          run: a.run + t.run,
          killed: a.killed + t.killed,
          equivalent: a.equivalent + t.equivalent,
        }),
        { run: 0, killed: 0, equivalent: 0 },
      );
      const minKill = value("--min-kill");
      if (
        minKill && counted.run > counted.equivalent &&
        100 * counted.killed / (counted.run - counted.equivalent) < Number(minKill)
      ) short = true;
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  const file = value("--report");
  if (file) await Deno.writeTextFile(file, report.join("\n") + "\n");
  if (short) {
    console.error("a group was not measured, or kills fewer than --min-kill of its mutants");
    Deno.exit(1);
  }
}

if (import.meta.main) await main(Deno.args);
