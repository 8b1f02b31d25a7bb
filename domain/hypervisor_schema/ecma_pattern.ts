/**
 * Proxmox schema patterns (Perl regular expressions, matched against the whole value) as
 * anchored ECMA-262 patterns for the OpenAPI documents, when a faithful conversion exists.
 * Validation does not use these: it matches the Perl patterns in linear time (pattern.ts).
 */

const patternCache = new Map<string, string | null>();

/**
 * A Proxmox (Perl) pattern as an anchored ECMA-262 pattern valid with the `u` flag, or null.
 * Perl's `(?^:...)`/`(?^u:...)` stringified groups become plain non-capturing groups.
 */
export function ecmaPattern(perl: string): string | null {
  const hit = patternCache.get(perl);
  if (hit !== undefined) return hit;
  let result: string | null = null;
  for (const candidate of [perl, perlToEcma(perl)]) {
    const anchored = `^(?:${candidate})$`;
    try {
      new RegExp(anchored, "u");
      result = anchored;
      break;
    } catch {
      // try the next candidate
    }
  }
  if (patternCache.size > 10_000) patternCache.clear();
  patternCache.set(perl, result);
  return result;
}

const SYNTAX = new Set([..."^$\\.*+?()[]{}|/"]);

/** Rewrites the Perl-only constructs Proxmox uses into their ECMA-262 (`u` flag) equivalents. */
function perlToEcma(perl: string): string {
  let out = "";
  let inClass = false;
  for (let i = 0; i < perl.length; i++) {
    const ch = perl[i];
    if (ch === "\\" && i + 1 < perl.length) {
      const next = perl[++i];
      const punct = !/[A-Za-z0-9]/.test(next);
      if (punct && !SYNTAX.has(next) && !(inClass && next === "-")) out += next;
      else out += ch + next;
      continue;
    }
    if (inClass) {
      if (ch === "]") inClass = false;
      out += ch;
      continue;
    }
    if (ch === "[") {
      inClass = true;
      out += ch;
      if (perl[i + 1] === "^") out += perl[++i];
      if (perl[i + 1] === "]") out += "\\" + perl[++i];
      continue;
    }
    if (ch === "(" && perl[i + 1] === "?") {
      const flags = /^\(\?\^?[a-z]*:/.exec(perl.slice(i));
      if (flags) {
        out += "(?:";
        i += flags[0].length - 1;
        continue;
      }
      if (perl[i + 2] === ">") {
        out += "(?:";
        i += 2;
        continue;
      }
    }
    if (ch === "{" && perl[i + 1] === ",") {
      out += "{0";
      continue;
    }
    out += ch;
  }
  return out;
}
