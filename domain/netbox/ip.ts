/**
 * IP address arithmetic for the ipam models: parsing, the canonical text NetBox stores
 * (IPv4 dotted quad without leading zeros, IPv6 compressed lower case as RFC 5952), and
 * containment for the `parent` / `within` filters.
 */

export interface Cidr {
  family: 4 | 6;
  /** The address as an integer (32 or 128 bits). */
  value: bigint;
  /** Prefix length; null when the text had none. */
  length: number | null;
}

function parseV4(text: string): bigint | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  let out = 0n;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    out = (out << 8n) | BigInt(Number(p));
  }
  return out;
}

function parseV6(text: string): bigint | null {
  if (!/^[0-9a-f:.]+$/i.test(text) || !text.includes(":")) return null;
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (part: string): number[] | null => {
    if (part === "") return [];
    const out: number[] = [];
    const items = part.split(":");
    for (let i = 0; i < items.length; i++) {
      const g = items[i];
      if (i === items.length - 1 && g.includes(".")) {
        const v4 = parseV4(g);
        if (v4 === null) return null;
        out.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
        continue;
      }
      if (!/^[0-9a-f]{1,4}$/i.test(g)) return null;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (head === null || tail === null) return null;
  let all: number[];
  if (halves.length === 2) {
    const missing = 8 - head.length - tail.length;
    if (missing < 1) return null;
    all = [...head, ...new Array(missing).fill(0), ...tail];
  } else all = head;
  if (all.length !== 8) return null;
  return all.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
}

/** "10.0.0.1/24", "fd00::1" → parts; null when not an address (with a valid length). */
export function parseCidr(text: string): Cidr | null {
  const m = /^([^/\s]+)(?:\/(\d{1,3}))?$/.exec(text.trim());
  if (!m) return null;
  const length = m[2] === undefined ? null : Number(m[2]);
  const v4 = parseV4(m[1]);
  if (v4 !== null) return length !== null && length > 32 ? null : { family: 4, value: v4, length };
  const v6 = parseV6(m[1]);
  if (v6 !== null) {
    return length !== null && length > 128 ? null : { family: 6, value: v6, length };
  }
  return null;
}

/** The canonical text of an address alone. */
export function formatHost(family: 4 | 6, value: bigint): string {
  if (family === 4) {
    return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join(".");
  }
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((value >> BigInt(i * 16)) & 0xffffn));
  // IPv4-mapped addresses keep their dotted tail (::ffff:192.0.2.1).
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `::ffff:${formatHost(4, value & 0xffffffffn)}`;
  }
  // RFC 5952: compress the longest run (2+ groups, the first one on a tie) of zero groups.
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(":");
  return `${hex.slice(0, best).join(":")}::${hex.slice(best + bestLen).join(":")}`;
}

/** The canonical "address/length" text; a missing length is the full host length. */
export function canonicalCidr(text: string): string | null {
  const c = parseCidr(text);
  if (!c) return null;
  return `${formatHost(c.family, c.value)}/${c.length ?? (c.family === 4 ? 32 : 128)}`;
}

/** The canonical host part of an address, its length dropped. */
export function canonicalHost(text: string): string | null {
  const c = parseCidr(text);
  return c ? formatHost(c.family, c.value) : null;
}

function bitsOf(family: 4 | 6): number {
  return family === 4 ? 32 : 128;
}

/** The network address of a prefix (host bits cleared). */
export function networkOf(c: Cidr): bigint {
  const bits = bitsOf(c.family);
  const length = c.length ?? bits;
  const hostBits = BigInt(bits - length);
  return (c.value >> hostBits) << hostBits;
}

/** Does `inner` (an address or prefix) lie inside the prefix `outer`? */
export function within(inner: Cidr, outer: Cidr, includeEqual: boolean): boolean {
  if (inner.family !== outer.family) return false;
  const bits = bitsOf(outer.family);
  const outerLen = outer.length ?? bits;
  const innerLen = inner.length ?? bits;
  if (innerLen < outerLen || (!includeEqual && innerLen === outerLen)) return false;
  const hostBits = BigInt(bits - outerLen);
  return (inner.value >> hostBits) === (networkOf(outer) >> hostBits);
}
