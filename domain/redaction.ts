/**
 * Removing secrets from text a caller may read (error excerpts, stream frames, job logs).
 *
 * An upstream that echoes what it was sent rarely echoes the secret as typed: a login form
 * arrives URL-encoded (`+` for space), a JSON body escaped, an Authorization header base64'd.
 * So every secret is searched in each of those spellings (SECURITY.md "Secrets in error text").
 */

const ENCODER = new TextEncoder();

/** Base64 needs at least this many characters of a secret before a fragment is worth hiding. */
const MIN_BASE64_FRAGMENT = 6;

function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

/**
 * The part of any base64 text that is fixed by the secret alone, for each of the three byte
 * alignments the secret can start at (base64 groups 3 bytes into 4 characters, so a secret
 * inside a longer value, as in `user:password`, encodes differently by its offset).
 */
function base64Fragments(secret: string): string[] {
  const raw = ENCODER.encode(secret);
  const out: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const padded = new Uint8Array(offset + raw.length);
    padded.set(raw, offset);
    const encoded = bytesToBase64(padded).replace(/=+$/, "");
    const total = padded.length;
    // Characters carrying only the secret's bits: skip those mixed with the leading bytes,
    // stop before the one mixed with whatever follows the secret.
    const start = [0, 2, 3][offset];
    const rest = total % 3;
    const end = Math.floor(total / 3) * 4 + (rest === 0 ? 0 : rest === 1 ? 1 : 2);
    const fragment = encoded.slice(start, end);
    if (fragment.length >= MIN_BASE64_FRAGMENT) {
      out.push(fragment, fragment.replace(/\+/g, "-").replace(/\//g, "_"));
    }
  }
  return out;
}

/** RFC 3986 strict: everything but unreserved characters percent-encoded. */
function strictPercent(secret: string): string {
  return encodeURIComponent(secret).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** JSON string escaping, plus the `\/` and `\uXXXX` spellings other encoders choose. */
function jsonSpellings(secret: string): string[] {
  const plain = JSON.stringify(secret).slice(1, -1);
  const hex = (c: string) => c.charCodeAt(0).toString(16).padStart(4, "0");
  const ascii = plain.replace(/[\u007f-\uffff]/g, (c) => `\\u${hex(c)}`);
  const asciiUpper = plain.replace(/[\u007f-\uffff]/g, (c) => `\\u${hex(c).toUpperCase()}`);
  return [plain, plain.replace(/\//g, "\\/"), ascii, asciiUpper];
}

/** Every spelling of one secret this module hides, longest first. */
export function spellingsOf(secret: string): string[] {
  if (!secret) return [];
  const percent = [
    encodeURIComponent(secret),
    strictPercent(secret),
    new URLSearchParams({ s: secret }).toString().slice(2), // form: `+` for space
    strictPercent(secret).replace(/%20/g, "+"),
    encodeURI(secret),
  ];
  // Percent-escapes may come back in lower-case hex (`%2b`).
  const lower = percent.map((p) => p.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()));
  const all = new Set([secret, ...percent, ...lower, ...jsonSpellings(secret)]);
  for (const fragment of base64Fragments(secret)) all.add(fragment);
  return [...all].filter(Boolean).sort((a, b) => b.length - a.length);
}

/** Replaces every spelling of every secret in `text` with `mask`. */
export function redactSecrets(
  text: string,
  secrets: readonly (string | null | undefined)[],
  mask = "***",
): string {
  let out = text;
  for (const secret of secrets) {
    if (!secret) continue;
    for (const spelling of spellingsOf(secret)) {
      if (out.includes(spelling)) out = out.split(spelling).join(mask);
    }
  }
  return out;
}

/** The same, applied to every string inside a JSON-like value (keys left as they are). */
export function redactDeep<T>(
  value: T,
  secrets: readonly (string | null | undefined)[],
  mask = "***",
): T {
  if (!secrets.some(Boolean)) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return redactSecrets(v, secrets, mask);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object") {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    }
    return v;
  };
  return walk(value) as T;
}
