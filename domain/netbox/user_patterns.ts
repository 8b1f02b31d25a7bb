/**
 * Patterns users supply (`__regex` / `__iregex` filters, custom-field `validation_regex`) run
 * in the linear-time matcher of domain/hypervisor_schema/pattern.ts, never in JavaScript's
 * backtracking engine: one request must not be able to stall the process that serves every
 * surface. Search semantics, as NetBox's `re.search`: the pattern may match anywhere unless it
 * anchors itself with `^` / `$`.
 */
import { compileSafePattern, type WorkMeter } from "../hypervisor_schema/pattern.ts";

export { WorkBudgetExceeded, type WorkMeter } from "../hypervisor_schema/pattern.ts";

export const MAX_USER_PATTERN_LENGTH = 256;

/** `__regex` / `__iregex` values one list request may carry, all parameters together. */
export const MAX_PATTERN_FILTERS = 5;

/**
 * Matching steps (one NFA state visited per input character) all the pattern filters of one
 * request may take together: about 0.1–0.2 s of one core (30–45 ns a step measured on a
 * loaded 2-core machine). Linear time alone is not enough: thousands of records times long
 * values times several long patterns held the event loop for minutes (SECURITY.md "Patterns").
 */
export const PATTERN_WORK_BUDGET = 5_000_000;

/** A fresh budget for one request's pattern filters. */
export function patternMeter(): WorkMeter {
  return { remaining: PATTERN_WORK_BUDGET };
}

export const PATTERN_BUDGET_MESSAGE =
  `Pattern filters may take at most ${PATTERN_WORK_BUDGET.toLocaleString("en")} matching ` +
  "steps per request (pattern states × characters examined) and this query needs more. " +
  "Narrow the list with other filters (they run before patterns), or use shorter patterns " +
  "or __ic / __isw lookups.";

export const PATTERN_COUNT_MESSAGE =
  `At most ${MAX_PATTERN_FILTERS} __regex / __iregex filter values per request.`;

export type UserPattern =
  | { ok: true; test: (value: string, meter?: WorkMeter) => boolean }
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
  return { ok: true, test: (value, meter) => safe.test(value, meter) };
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
