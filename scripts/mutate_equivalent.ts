/**
 * Surviving mutants no user could tell apart from the original (scripts/mutate.ts counts them
 * apart from the kill rate). Each entry: the module, the mutation, a piece of the original
 * line, and why no test can or should notice. Keep it short: a survivor that a user could
 * notice needs a test, not an entry here.
 */
export interface Equivalent {
  module: string;
  what: string;
  /** A piece of the original line (trimmed) that identifies it. */
  line: string;
  why: string;
}

export const EQUIVALENT: Equivalent[] = [];
