/**
 * Linear-time matching of schema patterns (Proxmox's Perl regexes) for parameter validation.
 *
 * JavaScript's backtracking engine takes exponential time on patterns with ambiguous nested
 * repetition, and PVE's schema has such patterns (the OCI reference of `oci-registry-pull`:
 * `[a-z\d]+(?:(?:[._]|__|[-]*)[a-z\d]+)*` — 30 characters of `a` freeze the process for
 * seconds, 40 for ever). One request must never stall the server, so patterns are compiled
 * here into a Thompson NFA and simulated state-set by state-set: O(input × pattern), always.
 *
 * Supported: literals and escapes (`\d \w \s \D \W \S \xHH \uHHHH \0 \n \t ...`), classes
 * with ranges and negation, `.`, groups (capturing, `(?:`, `(?<name>`, Perl's `(?^flags:` and
 * `(?flags-flags:` with `i`/`s`), alternation, `* + ? {n} {n,} {n,m} {,m}` (lazy forms too), `^ $
 * \A \z \Z`. Anything else (backreferences, lookaround, `\b`) → `null`: the caller decides.
 */

type CharTest = (c: number) => boolean;

type Node =
  | { t: "char"; test: CharTest }
  | { t: "seq"; items: Node[] }
  | { t: "alt"; options: Node[] }
  | { t: "rep"; node: Node; min: number; max: number }
  | { t: "bol" }
  | { t: "eol" };

class Unsupported extends Error {}

interface Flags {
  i: boolean;
  s: boolean;
}

const isDigit: CharTest = (c) => c >= 48 && c <= 57;
const isWord: CharTest = (c) =>
  (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isSpace: CharTest = (c) => c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0xfeff;

function caseless(test: CharTest): CharTest {
  return (c) => {
    if (test(c)) return true;
    // ASCII without building strings: this runs once per active state per input character.
    if (c < 128) {
      if (c >= 65 && c <= 90) return test(c + 32);
      if (c >= 97 && c <= 122) return test(c - 32);
      return false;
    }
    const ch = String.fromCharCode(c);
    const lo = ch.toLowerCase().charCodeAt(0);
    const up = ch.toUpperCase().charCodeAt(0);
    return (lo !== c && test(lo)) || (up !== c && test(up));
  };
}

class Parser {
  pos = 0;
  constructor(readonly src: string) {}

  parse(): Node {
    const node = this.alternation({ i: false, s: false });
    if (this.pos < this.src.length) throw new Unsupported(`unexpected ${this.src[this.pos]}`);
    return node;
  }

  alternation(flags: Flags): Node {
    const options = [this.sequence(flags)];
    while (this.src[this.pos] === "|") {
      this.pos++;
      options.push(this.sequence(flags));
    }
    return options.length === 1 ? options[0] : { t: "alt", options };
  }

  sequence(flags: Flags): Node {
    const items: Node[] = [];
    while (this.pos < this.src.length) {
      const ch = this.src[this.pos];
      if (ch === "|" || ch === ")") break;
      const atom = this.atom(flags);
      items.push(this.quantified(atom));
    }
    return items.length === 1 ? items[0] : { t: "seq", items };
  }

  quantified(atom: Node): Node {
    let node = atom;
    while (this.pos < this.src.length) {
      const ch = this.src[this.pos];
      let min: number;
      let max: number;
      if (ch === "*") [min, max] = [0, Infinity];
      else if (ch === "+") [min, max] = [1, Infinity];
      else if (ch === "?") [min, max] = [0, 1];
      else if (ch === "{") {
        // Perl ≥ 5.34 (PVE 9) reads `{,n}` as `{0,n}` (the scsi vendor/product patterns).
        const m = /^\{(\d*)(,(\d*))?\}/.exec(this.src.slice(this.pos));
        if (!m || (m[1] === "" && !m[3])) return node; // a literal `{`, read as an atom next
        min = Number(m[1] || 0);
        max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
        if (max < min || min > 100_000 || (max !== Infinity && max > 100_000)) {
          throw new Unsupported("repetition bounds");
        }
        this.pos += m[0].length - 1;
      } else return node;
      this.pos++;
      if (this.src[this.pos] === "?") this.pos++; // lazy: same language
      else if (this.src[this.pos] === "+") throw new Unsupported("possessive quantifier");
      if (node.t === "bol" || node.t === "eol") throw new Unsupported("quantified anchor");
      node = { t: "rep", node, min, max };
    }
    return node;
  }

  atom(flags: Flags): Node {
    const ch = this.src[this.pos++];
    const lit = (test: CharTest): Node => ({ t: "char", test: flags.i ? caseless(test) : test });
    switch (ch) {
      case "(":
        return this.group(flags);
      case "[":
        return lit(this.charClass());
      case ".":
        return lit(flags.s ? () => true : (c) => c !== 10);
      case "^":
        return { t: "bol" };
      case "$":
        return { t: "eol" };
      case "\\":
        return this.escape(flags);
      case "*":
      case "+":
      case "?":
        throw new Unsupported("nothing to repeat");
      default: {
        const code = ch.charCodeAt(0);
        return lit((c) => c === code);
      }
    }
  }

  group(flags: Flags): Node {
    let inner: Flags = flags;
    if (this.src[this.pos] === "?") {
      this.pos++;
      const rest = this.src.slice(this.pos);
      const named = /^<([A-Za-z_]\w*)>/.exec(rest) ?? /^P<([A-Za-z_]\w*)>/.exec(rest);
      if (named) this.pos += named[0].length;
      else {
        const m = /^(\^)?([a-zA-Z]*)(?:-([a-zA-Z]*))?:/.exec(rest);
        if (!m) throw new Unsupported("group construct");
        this.pos += m[0].length;
        inner = m[1] ? { i: false, s: false } : { ...flags };
        for (const f of m[2]) {
          if (f === "i") inner.i = true;
          else if (f === "s") inner.s = true;
          else if (f === "x") throw new Unsupported("extended mode");
        }
        for (const f of m[3] ?? "") {
          if (f === "i") inner.i = false;
          else if (f === "s") inner.s = false;
        }
      }
    }
    const node = this.alternation(inner);
    if (this.src[this.pos] !== ")") throw new Unsupported("unclosed group");
    this.pos++;
    return node;
  }

  /** An escape outside a class. */
  escape(flags: Flags): Node {
    const ch = this.src[this.pos];
    if (ch === "A") {
      this.pos++;
      return { t: "bol" };
    }
    if (ch === "z" || ch === "Z") {
      this.pos++;
      return { t: "eol" };
    }
    const test = this.escapeTest();
    return { t: "char", test: flags.i ? caseless(test) : test };
  }

  /** The character test of an escape (the backslash is consumed). */
  escapeTest(): CharTest {
    const ch = this.src[this.pos++];
    if (ch === undefined) throw new Unsupported("trailing backslash");
    switch (ch) {
      case "d":
        return isDigit;
      case "D":
        return (c) => !isDigit(c);
      case "w":
        return isWord;
      case "W":
        return (c) => !isWord(c);
      case "s":
        return isSpace;
      case "S":
        return (c) => !isSpace(c);
      case "n":
        return (c) => c === 10;
      case "r":
        return (c) => c === 13;
      case "t":
        return (c) => c === 9;
      case "f":
        return (c) => c === 12;
      case "v":
        return (c) => c === 11;
      case "e":
        return (c) => c === 27;
      case "x": {
        const m = /^(?:\{([0-9a-fA-F]{1,4})\}|([0-9a-fA-F]{2}))/.exec(this.src.slice(this.pos));
        if (!m) throw new Unsupported("\\x escape");
        this.pos += m[0].length;
        const code = parseInt(m[1] ?? m[2], 16);
        return (c) => c === code;
      }
      case "u": {
        const m = /^[0-9a-fA-F]{4}/.exec(this.src.slice(this.pos));
        if (!m) throw new Unsupported("\\u escape");
        this.pos += 4;
        const code = parseInt(m[0], 16);
        return (c) => c === code;
      }
      case "0": {
        // \0 or an octal \0NN.
        const m = /^[0-7]{0,2}/.exec(this.src.slice(this.pos))!;
        this.pos += m[0].length;
        const code = m[0] ? parseInt(m[0], 8) : 0;
        return (c) => c === code;
      }
      default: {
        if (/[1-9bBkgpPXRhHvNKGcQE]/.test(ch)) throw new Unsupported(`\\${ch}`);
        const code = ch.charCodeAt(0);
        return (c) => c === code;
      }
    }
  }

  /** `[...]` after the opening bracket. */
  charClass(): CharTest {
    let negate = false;
    if (this.src[this.pos] === "^") {
      negate = true;
      this.pos++;
    }
    const tests: CharTest[] = [];
    let first = true;
    while (true) {
      if (this.pos >= this.src.length) throw new Unsupported("unclosed class");
      let ch = this.src[this.pos];
      if (ch === "]" && !first) {
        this.pos++;
        break;
      }
      first = false;
      if (ch === "[" && /^\[:[a-z]+:\]/.test(this.src.slice(this.pos))) {
        throw new Unsupported("POSIX class");
      }
      // One class item: an escape or a character, possibly the start of a range.
      let low: number | undefined;
      this.pos++;
      if (ch === "\\") {
        const before = this.pos;
        const next = this.src[this.pos];
        if (/[dDwWsS]/.test(next ?? "")) {
          tests.push(this.escapeTest());
          continue;
        }
        if (next === "b") {
          this.pos++;
          low = 8;
        } else {
          const test = this.escapeTest();
          // The code of a single-character escape: find it by probing (cheap, 0..0xffff once).
          low = singleCode(this.src.slice(before - 1, this.pos), test);
        }
      } else {
        low = ch.charCodeAt(0);
      }
      if (
        this.src[this.pos] === "-" && this.src[this.pos + 1] !== "]" &&
        this.pos + 1 < this.src.length
      ) {
        this.pos++;
        ch = this.src[this.pos++];
        let high: number;
        if (ch === "\\") {
          const before = this.pos;
          const test = this.escapeTest();
          high = singleCode(this.src.slice(before - 1, this.pos), test);
        } else high = ch.charCodeAt(0);
        if (high < low) throw new Unsupported("bad range");
        const lo = low;
        tests.push((c) => c >= lo && c <= high);
      } else {
        const code = low;
        tests.push((c) => c === code);
      }
    }
    const any: CharTest = tests.length === 1 ? tests[0] : (c) => tests.some((t) => t(c));
    return negate ? (c) => !any(c) : any;
  }
}

const singleCodes = new Map<string, number>();
function singleCode(escape: string, test: CharTest): number {
  let code = singleCodes.get(escape);
  if (code === undefined) {
    code = -1;
    for (let c = 0; c <= 0xffff; c++) {
      if (test(c)) {
        code = c;
        break;
      }
    }
    if (code < 0) throw new Unsupported("escape in range");
    singleCodes.set(escape, code);
  }
  return code;
}

// ---------------------------------------------------------------- NFA

const CHAR = 0;
const SPLIT = 1;
const BOL = 2;
const EOL = 3;
const MATCH = 4;

interface State {
  kind: number;
  test?: CharTest;
  out: number;
  out2: number;
}

/** Too many states means a pattern with huge bounded repetitions: not worth compiling. */
const MAX_STATES = 50_000;

class Builder {
  readonly states: State[] = [];

  add(kind: number, test?: CharTest): number {
    if (this.states.length >= MAX_STATES) throw new Unsupported("pattern too large");
    this.states.push({ kind, test, out: -1, out2: -1 });
    return this.states.length - 1;
  }

  /** Builds `node`, returning its entry state and the dangling exits to patch. */
  build(node: Node): { start: number; outs: Array<[number, 1 | 2]> } {
    switch (node.t) {
      case "char": {
        const s = this.add(CHAR, node.test);
        return { start: s, outs: [[s, 1]] };
      }
      case "bol":
      case "eol": {
        const s = this.add(node.t === "bol" ? BOL : EOL);
        return { start: s, outs: [[s, 1]] };
      }
      case "seq": {
        if (!node.items.length) return this.empty();
        let frag = this.build(node.items[0]);
        for (const item of node.items.slice(1)) {
          const next = this.build(item);
          this.patch(frag.outs, next.start);
          frag = { start: frag.start, outs: next.outs };
        }
        return frag;
      }
      case "alt": {
        let frag = this.build(node.options[0]);
        for (const option of node.options.slice(1)) {
          const other = this.build(option);
          const s = this.add(SPLIT);
          this.states[s].out = frag.start;
          this.states[s].out2 = other.start;
          frag = { start: s, outs: [...frag.outs, ...other.outs] };
        }
        return frag;
      }
      case "rep": {
        const parts: Array<{ start: number; outs: Array<[number, 1 | 2]> }> = [];
        for (let k = 0; k < node.min; k++) parts.push(this.build(node.node));
        if (node.max === Infinity) {
          // x* : split → x → back to split.
          const s = this.add(SPLIT);
          const body = this.build(node.node);
          this.states[s].out = body.start;
          this.patch(body.outs, s);
          parts.push({ start: s, outs: [[s, 2]] });
        } else {
          for (let k = node.min; k < node.max; k++) {
            const s = this.add(SPLIT);
            const body = this.build(node.node);
            this.states[s].out = body.start;
            parts.push({ start: s, outs: [[s, 2], ...body.outs] });
          }
        }
        if (!parts.length) return this.empty();
        let frag = parts[0];
        for (const p of parts.slice(1)) {
          this.patch(frag.outs, p.start);
          frag = { start: frag.start, outs: p.outs };
        }
        return frag;
      }
    }
  }

  empty(): { start: number; outs: Array<[number, 1 | 2]> } {
    const s = this.add(SPLIT);
    return { start: s, outs: [[s, 1], [s, 2]] };
  }

  patch(outs: Array<[number, 1 | 2]>, to: number): void {
    for (const [s, which] of outs) {
      if (which === 1) this.states[s].out = to;
      else this.states[s].out2 = to;
    }
  }
}

/**
 * A budget of matching steps shared by several tests (one request's pattern filters): each
 * NFA state visited costs one step, and a test that would go past the budget throws
 * WorkBudgetExceeded instead of finishing, so the work one caller can cause is bounded.
 */
export interface WorkMeter {
  remaining: number;
}

export class WorkBudgetExceeded extends Error {
  constructor() {
    super("pattern matching work budget exceeded");
  }
}

export interface SafePattern {
  /** Whether the whole string matches (the pattern is anchored at both ends). */
  test(s: string, meter?: WorkMeter): boolean;
}

class Nfa implements SafePattern {
  readonly #mark: Uint32Array;
  #gen = 0;

  constructor(readonly states: State[], readonly start: number) {
    this.#mark = new Uint32Array(states.length);
  }

  /**
   * Adds `from` and every state reachable from it without input (iteratively); answers how
   * many states it visited (the work, for a WorkMeter).
   */
  #add(list: number[], from: number, pos: number, len: number): number {
    const stack = [from];
    let visited = 0;
    while (stack.length) {
      const s = stack.pop()!;
      visited++;
      if (s < 0 || this.#mark[s] === this.#gen) continue;
      this.#mark[s] = this.#gen;
      const st = this.states[s];
      switch (st.kind) {
        case SPLIT:
          stack.push(st.out2, st.out);
          break;
        case BOL:
          if (pos === 0) stack.push(st.out);
          break;
        case EOL:
          if (pos === len) stack.push(st.out);
          break;
        default:
          list.push(s);
      }
    }
    return visited;
  }

  test(input: string, meter?: WorkMeter): boolean {
    const len = input.length;
    let current: number[] = [];
    this.#step();
    let work = this.#add(current, this.start, 0, len);
    for (let i = 0; i < len && current.length; i++) {
      if (meter) {
        meter.remaining -= work + current.length;
        if (meter.remaining < 0) throw new WorkBudgetExceeded();
        work = 0;
      }
      const c = input.charCodeAt(i);
      const next: number[] = [];
      this.#step();
      for (const s of current) {
        const st = this.states[s];
        if (st.kind === CHAR && st.test!(c)) work += this.#add(next, st.out, i + 1, len);
      }
      current = next;
    }
    if (meter) {
      meter.remaining -= work;
      if (meter.remaining < 0) throw new WorkBudgetExceeded();
    }
    return current.some((s) => this.states[s].kind === MATCH);
  }

  #step(): void {
    this.#gen++;
    if (this.#gen === 0xffffffff) {
      this.#mark.fill(0);
      this.#gen = 1;
    }
  }
}

/** The pattern as a linear-time whole-string matcher, or null when it uses unsupported syntax. */
export function compileSafePattern(pattern: string): SafePattern | null {
  try {
    const node = new Parser(pattern).parse();
    const b = new Builder();
    const frag = b.build(node);
    const match = b.add(MATCH);
    b.patch(frag.outs, match);
    return new Nfa(b.states, frag.start);
  } catch (err) {
    if (err instanceof Unsupported || err instanceof RangeError) return null;
    throw err;
  }
}
