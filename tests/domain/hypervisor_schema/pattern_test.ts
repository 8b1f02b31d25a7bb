/** The linear-time pattern matcher agrees with JavaScript's engine and never stalls. */
import assert from "node:assert/strict";
import { compileSafePattern } from "../../../domain/hypervisor_schema/pattern.ts";
import { ecmaPattern } from "../../../domain/hypervisor_schema/openapi.ts";
import { SCHEMA_9111, SCHEMA_92, sharedSchema } from "../../routes/hypervisor/_hv.ts";
import type { SchemaTree } from "../../../domain/hypervisor_schema/schema.ts";
import { NEEDS_SCHEMAS } from "../../_schemas.ts";

function patternsOf(tree: SchemaTree): Set<string> {
  const out = new Set<string>();
  // deno-lint-ignore no-explicit-any
  const visit = (v: any) => {
    if (!v || typeof v !== "object") return;
    if (typeof v.pattern === "string") out.add(v.pattern);
    if (v.items) visit(v.items);
    if (v.format && typeof v.format === "object") {
      for (const f of Object.values(v.format)) visit(f);
    }
  };
  // deno-lint-ignore no-explicit-any
  const walk = (nodes: any[]) => {
    for (const n of nodes) {
      for (const op of Object.values(n.info ?? {})) {
        // deno-lint-ignore no-explicit-any
        for (const p of Object.values((op as any).parameters?.properties ?? {})) visit(p);
      }
      walk(n.children ?? []);
    }
  };
  walk(tree as unknown[]);
  return out;
}

const EXAMPLES = [
  "",
  "a",
  "local",
  "vm-100-disk-0",
  "docker.io/library/debian:12",
  "ghcr.io/org/img:v1.2",
  "registry:5000/a/b__c:latest",
  "u:0:100000:65536",
  "g:0:100000:65536;u:1:2:3",
  "passthrough",
  "pc-q35-8.1+pve0",
  "pc-i440fx-9.0",
  "q35",
  "virt-9.2",
  "ceph.mon",
  "osd.12",
  "discard;noatime",
  "+tag;-other",
  "0x1234:0xabcd",
  "spice",
  "0000:01:00.0",
  "mapping-1",
  "foo=bar\0baz=qux",
  "root@pam",
  "root@pam!token",
  "user:ffffff:000000",
  "Abc_1.2-3",
  "1",
  "123",
  "a b",
  "-",
  "AAAA",
];

function mutations(seed: string, rng: () => number): string[] {
  const alphabet = "aZ09._-:;,/@!=+ \t\0xX";
  const out = [seed];
  for (let k = 0; k < 6; k++) {
    const chars = [...seed];
    const at = Math.floor(rng() * (chars.length + 1));
    const op = rng();
    const c = alphabet[Math.floor(rng() * alphabet.length)];
    if (op < 0.4) chars.splice(at, 0, c);
    else if (op < 0.7) chars.splice(at, 1);
    else chars[at] = c;
    out.push(chars.join(""));
  }
  return out;
}

Deno.test(
  "regex: the NFA matcher agrees with JavaScript on every pattern of both schemas",
  NEEDS_SCHEMAS,
  async () => {
    let seed = 42;
    const rng = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    for (const url of [SCHEMA_92, SCHEMA_9111]) {
      const patterns = patternsOf(await sharedSchema(url));
      assert.ok(patterns.size > 50);
      for (const pattern of patterns) {
        const safe = compileSafePattern(pattern);
        assert.ok(safe, `unsupported: ${pattern}`);
        // Perl's stringified groups as JavaScript modifiers: `(?^i:` is `(?i:`.
        const translated = pattern.replace(/\(\?\^([a-z]*):/g, (_, f: string) => {
          const keep = f.replace(/[^is]/g, "");
          return keep ? `(?${keep}:` : "(?:";
        });
        // JavaScript reads `{,n}` literally, Perl ≥ 5.34 as `{0,n}`: checked separately below.
        if (/\{,\d/.test(pattern)) continue;
        let native: RegExp;
        try {
          native = new RegExp(`^(?:${translated})$`, "u");
        } catch {
          const ecma = ecmaPattern(pattern);
          if (!ecma || /\(\?\^[a-z]*i/.test(pattern)) continue;
          native = new RegExp(ecma, "u");
        }
        for (const example of EXAMPLES) {
          for (const s of mutations(example, rng)) {
            if (s.length > 22) continue; // keep the native engine out of its slow cases
            assert.equal(safe.test(s), native.test(s), `${pattern} on ${JSON.stringify(s)}`);
          }
        }
      }
    }
  },
);

Deno.test("regex: constructs behave (classes, flags, anchors, bounds, alternation)", () => {
  const cases: [string, string, boolean][] = [
    ["[a-z]+", "abc", true],
    ["[a-z]+", "abC", false],
    ["(?^i:[a-z]+)", "abC", true],
    ["(?i:ab)c", "ABc", true],
    ["(?i:ab)c", "ABC", false],
    ["a{2,3}", "aaaa", false],
    ["a{2,}", "aaaa", true],
    ["a{2}", "aa", true],
    ["x{", "x{", true],
    ["(?:a|bc)*d", "abcad", true],
    ["[^\\s:/]+@pam", "root@pam", true],
    ["[^\\s:/]+@pam", "ro ot@pam", false],
    ["\\d+(\\.\\d+)*", "1.2.3", true],
    ["[\\-\\]]+", "-]-", true],
    ["[]a]+", "]a", true],
    ["a.c", "a\nc", false],
    ["(?s:a.c)", "a\nc", true],
    ["^abc$", "abc", true],
    ["\\x41\\u0042\\0", "AB\0", true],
    ["(?<name>a)b", "ab", true],
    ["a*?b", "aab", true],
    ["[A-Za-z0-9\\-_\\s]{,8}", "ACME Inc", true],
    ["[A-Za-z0-9\\-_\\s]{,8}", "ACME Inc.", false],
    ["[A-Za-z0-9\\-_\\s]{,8}", "", true],
    ["a{,}", "a{,}", true],
  ];
  for (const [pattern, input, expected] of cases) {
    const p = compileSafePattern(pattern);
    assert.ok(p, pattern);
    assert.equal(p.test(input), expected, `${pattern} on ${JSON.stringify(input)}`);
  }
  for (const unsupported of ["(a)\\1", "(?=a)a", "a\\b", "(?x: a )"]) {
    assert.equal(compileSafePattern(unsupported), null, unsupported);
  }
});

Deno.test("regex: pathological inputs are answered (the time it takes is bench/pattern_bench.ts)", () => {
  // A backtracking engine needs minutes on this pattern at 40 characters; ours answers 20,000.
  const p = compileSafePattern("[a-z\\d]+(?:(?:[._]|__|[-]*)[a-z\\d]+)*:\\w+")!;
  assert.equal(p.test("a".repeat(20_000)), false);
  assert.equal(p.test(`${"a".repeat(20_000)}:tag`), true);
});
