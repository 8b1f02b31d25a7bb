/**
 * Mutation testing, one module at a time: `deno task mutate <module.ts> [test files...]`.
 *
 * Copies the committed tree (git archive HEAD, or the working tree with --worktree) into a
 * temporary directory, then for each one-line mutation of the module (comparison and boolean
 * operator swaps, flipped literals, removed guards and KV checks) writes the mutant, runs the
 * module's tests there and restores the line. A mutant no test notices "survives": either a
 * missing test or code that does not matter. The repository itself is never modified.
 *
 * Options: --worktree (copy uncommitted files too), --line <n> or <n-m> (only those lines),
 * --max <n> (stop after n mutants), --list (print the mutants without running anything).
 */

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
  ],
  "domain/netbox/tokens.ts": ["tests/routes/inventory/"],
  "domain/plugin/push.ts": ["tests/domain/plugin/push_test.ts", "tests/routes/plugin/"],
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
  [/\bif \(!/g, "if (", "drop ! in if"],
  [/\breturn null;/g, "return undefined as never;", "return null → undefined"],
];

/** Lines whose removal is a meaningful mutant (guards, checks, writes). */
const REMOVABLE = [
  /^\s*if \(.*\) (return|throw|continue|break)\b.*;\s*$/,
  /^\s*\.?check\(.*\)[;,]?\s*$/,
  /^\s*op\.(check|set|delete|sum)\(.*\);\s*$/,
  /^\s*await [\w.#]+\(.*\);\s*$/,
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
  return out;
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
  return { code: result.code, signal: result.signal, out: new TextDecoder().decode(result.stdout) };
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

async function main(args: string[]) {
  const flags = new Set(args.filter((a) => a.startsWith("--")));
  const value = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const positional = args.filter((a, i) =>
    !a.startsWith("--") && !["--line", "--max"].includes(args[i - 1])
  );
  const [module, ...explicitTests] = positional;
  if (!module) {
    console.error("usage: deno task mutate <module.ts> [test files...] [--worktree] [--list]");
    Deno.exit(2);
  }
  const source = await Deno.readTextFile(module);
  let mutants = mutantsOf(source);
  const onlyLine = value("--line");
  if (onlyLine) {
    const [from, to = from] = onlyLine.split("-").map(Number);
    mutants = mutants.filter((m) => m.line >= from && m.line <= to);
  }
  const max = value("--max");
  if (max) mutants = mutants.slice(0, Number(max));
  const lines = source.split("\n");
  if (flags.has("--list")) {
    for (const m of mutants) console.log(`${module}:${m.line}  ${m.what}\n    ${m.text.trim()}`);
    console.log(`${mutants.length} mutants`);
    return;
  }
  const tests = explicitTests.length > 0 ? explicitTests : await relatedTests(module);
  const dir = await copyTree(flags.has("--worktree"));
  const testCmd = ["deno", "test", "-A", "--no-check", "--fail-fast", "--quiet", ...tests];
  console.log(`mutating ${module} (${mutants.length} mutants) against: ${tests.join(" ")}`);
  console.log(`copy: ${dir}`);
  try {
    const baseline = await run(testCmd, dir, 300_000);
    if (baseline.code !== 0) {
      console.error("the tests fail before any mutation; fix them first:\n" + baseline.out);
      Deno.exit(1);
    }
    const survivors: Mutant[] = [];
    let killed = 0;
    for (const m of mutants) {
      const mutated = [...lines];
      mutated[m.line - 1] = m.text;
      await Deno.writeTextFile(`${dir}/${module}`, mutated.join("\n"));
      const r = await run(testCmd, dir, 180_000);
      if (r.code === 0) {
        survivors.push(m);
        console.log(
          `SURVIVED ${module}:${m.line} ${m.what}\n    ${lines[m.line - 1].trim()}\n ->  ${
            m.text.trim() || "(removed)"
          }`,
        );
      } else {
        killed++;
      }
    }
    await Deno.writeTextFile(`${dir}/${module}`, source);
    console.log(
      `\n${module}: ${mutants.length} mutants, ${killed} killed, ${survivors.length} survived`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) await main(Deno.args);
