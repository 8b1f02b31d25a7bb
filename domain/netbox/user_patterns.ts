/**
 * Patterns users supply (`__regex` / `__iregex` filters, custom-field `validation_regex`) run
 * in the linear-time matcher of domain/hypervisor_schema/pattern.ts, never in JavaScript's
 * backtracking engine: one request must not be able to stall the process that serves every
 * surface. Search semantics, as NetBox's `re.search`: the pattern may match anywhere unless it
 * anchors itself with `^` / `$`.
 */
import { compileSafePattern } from "../hypervisor_schema/pattern.ts";

export const MAX_USER_PATTERN_LENGTH = 256;

export type UserPattern =
  | { ok: true; test: (value: string) => boolean }
  | { ok: false; message: string };

const memo = new Map<string, UserPattern>();
const MEMO_LIMIT = 256;

function compile(pattern: string, caseInsensitive: boolean): UserPattern {
  if (pattern.length > MAX_USER_PATTERN_LENGTH) {
    return {
      ok: false,
      message: `Regular expression longer than ${MAX_USER_PATTERN_LENGTH} characters.`,
    };
  }
  const wrapped = `[\\s\\S]*(?${caseInsensitive ? "i" : ""}:${pattern})[\\s\\S]*`;
  let safe = null;
  try {
    safe = compileSafePattern(wrapped);
  } catch {
    safe = null;
  }
  if (!safe) {
    return {
      ok: false,
      message: "Unsupported regular expression: it must be valid and may not use " +
        "backreferences, lookaround or \\b (patterns run in a linear-time matcher).",
    };
  }
  return { ok: true, test: (value) => safe.test(value) };
}

/** A user pattern compiled once (small bounded memo: filters repeat per record). */
export function userPattern(pattern: string, caseInsensitive = false): UserPattern {
  const key = `${caseInsensitive ? "i" : "-"}${pattern}`;
  let found = memo.get(key);
  if (!found) {
    found = compile(pattern, caseInsensitive);
    if (memo.size >= MEMO_LIMIT) memo.delete(memo.keys().next().value as string);
    memo.set(key, found);
  }
  return found;
}

/** The reason a pattern cannot be used, or null. */
export function userPatternProblem(pattern: string): string | null {
  const compiled = userPattern(pattern);
  return compiled.ok ? null : compiled.message;
}
