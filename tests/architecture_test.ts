/**
 * The import graph keeps the shape docs/architecture.md draws: main → app → routes → domain →
 * ports, with clients/ and storage/kv/ implementing ports and no back-edges; domain/ knows no
 * HTTP. Every import of every module is read (static `from "…"`, `import("…")`, `export … from`).
 *
 * Known exceptions still being paid off are listed in PENDING with why; the test fails when one
 * is fixed and still listed, so the list only shrinks.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url).pathname;

/** Every .ts/.tsx file of the app (tests, benches and scripts are users of the app, not rooms). */
async function appFiles(): Promise<string[]> {
  const out: string[] = [];
  async function walk(dir: string) {
    for await (const entry of Deno.readDir(ROOT + dir)) {
      const path = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory) {
        if (dir === "" && !ROOMS.includes(entry.name)) continue;
        await walk(path);
      } else if (/\.tsx?$/.test(entry.name) && (dir !== "" || TOP_FILES.includes(entry.name))) {
        out.push(path);
      }
    }
  }
  await walk("");
  return out.sort();
}

const ROOMS = ["routes", "domain", "storage", "clients", "mock", "infra"];
const TOP_FILES = ["main.ts", "app.ts", "config.ts", "launcher_watch.ts"];

/** The room a repository path belongs to. */
function roomOf(path: string): string {
  if (path === "storage/ports.ts") return "ports";
  if (path.startsWith("storage/kv/")) return "storage/kv";
  if (TOP_FILES.includes(path)) return path.replace(/\.ts$/, "");
  if (path.startsWith("scripts/")) return "scripts";
  return path.split("/")[0];
}

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["']([^"']+)["']/g;

/** The repository paths a file imports (relative specifiers only; npm/bare ones are skipped). */
function importsOf(path: string, text: string): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(IMPORT)) {
    const spec = match[1];
    if (!spec.startsWith(".")) continue;
    const resolved = new URL(spec, `file:///${path}`).pathname.slice(1);
    out.push(resolved);
  }
  return out;
}

/** Which rooms each room may import (docs/architecture.md, The rooms). */
const ALLOWED: Record<string, string[]> = {
  main: [
    "app",
    "config",
    "launcher_watch",
    "routes",
    "domain",
    "ports",
    "storage/kv",
    "clients",
    "infra",
    "mock",
  ],
  app: ["config", "routes", "domain", "ports", "infra", "clients"],
  routes: ["config", "routes", "domain", "ports", "clients", "mock", "infra"],
  domain: ["config", "domain", "ports", "infra"],
  clients: ["config", "clients", "domain", "ports", "infra"],
  "storage/kv": ["storage/kv", "ports", "domain", "infra"],
  mock: ["config", "mock", "domain", "ports", "infra"],
  ports: ["ports"],
  infra: ["infra"],
  config: [],
  launcher_watch: [],
};

/**
 * Edges that break the rules today, each with its reason. Remove an entry once its edge is gone
 * (the test says when).
 */
const PENDING_EDGES: Record<string, string> = {};

/** Files of domain/ that still speak HTTP statuses, and why. */
const PENDING_STATUS: Record<string, string> = {};

/**
 * A domain line mentions an HTTP status when a 3-digit code follows `status`, `HTTP`, "answers"
 * and the like, or precedes a reason phrase (`404 Not Found`). Numbers elsewhere (limits, ports,
 * Proxmox schema bounds) are not statuses.
 */
const STATUS = new RegExp(
  [
    String.raw`\b(?:status(?:code)?|http)\b\s*(?:===?|!==?|:|=|<=?|>=?)?\s*[1-5]\d\d\b`,
    String
      .raw`\b[1-5]\d\d\s+(?:not found|conflict|bad request|forbidden|unauthorized|too many|unprocessable|method not allowed|bad gateway|service unavailable|gateway timeout)`,
    String.raw`\b(?:answers?|answered|returns?|→|else|with a|is a|gets? a)\s+[45]\d\d\b`,
  ].join("|"),
  "i",
);

/** Modules that describe HTTP by their job: the OpenAPI generator of the hypervisor schema. */
const HTTP_DESCRIBERS = new Set(["domain/hypervisor_schema/openapi.ts"]);

const files = await appFiles();
const texts = new Map(
  await Promise.all(files.map(async (f) => [f, await Deno.readTextFile(ROOT + f)] as const)),
);

Deno.test("architecture: every import points down the rooms (no back-edges)", () => {
  const broken: string[] = [];
  for (const [file, text] of texts) {
    const from = roomOf(file);
    for (const target of importsOf(file, text)) {
      const to = roomOf(target);
      if (from === to || ALLOWED[from]?.includes(to)) continue;
      broken.push(`${file} → ${target}`);
    }
  }
  const unexpected = broken.filter((edge) => !(edge in PENDING_EDGES));
  assert.deepEqual(unexpected, [], "imports that break docs/architecture.md's rules");
  const gone = Object.keys(PENDING_EDGES).filter((edge) => !broken.includes(edge));
  assert.deepEqual(gone, [], "fixed edges still listed in PENDING_EDGES: remove them");
});

Deno.test("architecture: domain/ never imports clients/, storage/kv/, routes/, mock/ or the app", () => {
  const forbidden = ["clients", "storage/kv", "routes", "mock", "main", "app"];
  const found: string[] = [];
  for (const [file, text] of texts) {
    if (roomOf(file) !== "domain") continue;
    for (const target of importsOf(file, text)) {
      if (forbidden.includes(roomOf(target))) found.push(`${file} → ${target}`);
    }
  }
  assert.deepEqual(found.filter((edge) => !(edge in PENDING_EDGES)), []);
});

Deno.test("architecture: no file in domain/ mentions an HTTP status", () => {
  const found = new Map<string, string>();
  for (const [file, text] of texts) {
    if (roomOf(file) !== "domain" || HTTP_DESCRIBERS.has(file)) continue;
    const line = text.split("\n").find((l) => STATUS.test(l));
    if (line) found.set(file, line.trim());
  }
  const unexpected = [...found].filter(([file]) => !(file in PENDING_STATUS));
  assert.deepEqual(unexpected, [], "domain files that speak HTTP: return outcomes instead");
  const gone = Object.keys(PENDING_STATUS).filter((file) => !found.has(file));
  assert.deepEqual(gone, [], "files no longer speaking HTTP still listed in PENDING_STATUS");
});

Deno.test("architecture: the status check catches what it should (and not schema bounds)", () => {
  for (const line of ["return { status: 404 };", "if (r.status === 409) {", "// answers 409"]) {
    assert.ok(STATUS.test(line), line);
  }
  for (const line of ["maximum: 4094,", "const MAX_MESSAGE = 500;", "port: 8006"]) {
    assert.ok(!STATUS.test(line), line);
  }
});

Deno.test("architecture: ports and infra import nothing of the app", () => {
  for (const [file, text] of texts) {
    const room = roomOf(file);
    if (room !== "ports" && room !== "infra") continue;
    const outside = importsOf(file, text).filter((t) => roomOf(t) !== room);
    assert.deepEqual(outside, [], file);
  }
});

Deno.test("architecture: no import cycles between modules (type imports included)", () => {
  const graph = new Map<string, string[]>();
  for (const [file, text] of texts) {
    graph.set(file, importsOf(file, text).filter((t) => texts.has(t)));
  }
  // Depth-first search with colours: grey = on the current path, so reaching grey is a cycle.
  const colour = new Map<string, "grey" | "black">();
  const cycles: string[] = [];
  const visit = (file: string, path: string[]) => {
    colour.set(file, "grey");
    for (const next of graph.get(file) ?? []) {
      if (colour.get(next) === "grey") {
        cycles.push([...path.slice(path.indexOf(next)), file, next].join(" → "));
      } else if (!colour.has(next)) visit(next, [...path, file]);
    }
    colour.set(file, "black");
  };
  for (const file of graph.keys()) if (!colour.has(file)) visit(file, []);
  assert.deepEqual(cycles, []);
});
