/**
 * Fernet (https://github.com/fernet/spec) with WebCrypto: AES-128-CBC + HMAC-SHA256.
 * Token = base64url(0x80 | timestamp(8, big-endian seconds) | iv(16) | ciphertext | hmac(32)).
 * Interoperable with Python's cryptography.fernet in both directions.
 */

const VERSION = 0x80;
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export class FernetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FernetError";
  }
}

export interface FernetKey {
  signing: CryptoKey;
  encryption: CryptoKey;
}

function fromBase64Url(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.fromBase64(text.trim(), { alphabet: "base64url" });
}

/** Imports a Fernet key given as 32 bytes in URL-safe base64 (the form every Fernet library uses). */
export async function importFernetKey(key: string): Promise<FernetKey> {
  let raw: Uint8Array<ArrayBuffer>;
  try {
    raw = fromBase64Url(key);
  } catch {
    throw new FernetError("Fernet key must be URL-safe base64");
  }
  if (raw.length !== 32) throw new FernetError("Fernet key must be 32 bytes");
  const signing = await crypto.subtle.importKey(
    "raw",
    raw.slice(0, 16),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign", "verify"],
  );
  const encryption = await crypto.subtle.importKey("raw", raw.slice(16), "AES-CBC", false, [
    "encrypt",
    "decrypt",
  ]);
  return { signing, encryption };
}

/**
 * The service's key derivation (docs/api-behaviour.md, Secrets):
 * urlsafe_base64(SHA-256(utf8(trimmed value))).
 */
export async function deriveFernetKey(configuredValue: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(configuredValue.trim()));
  return new Uint8Array(digest).toBase64({ alphabet: "base64url" });
}

export async function fernetEncrypt(
  key: FernetKey,
  plaintext: string,
  options: { now?: number; iv?: Uint8Array<ArrayBuffer> } = {},
): Promise<string> {
  const iv = options.iv ?? crypto.getRandomValues(new Uint8Array(16));
  const seconds = Math.floor((options.now ?? Date.now()) / 1000);
  const ciphertext = new Uint8Array(
    await crypto.subtle.encrypt({ name: "AES-CBC", iv }, key.encryption, encoder.encode(plaintext)),
  );
  const body = new Uint8Array(1 + 8 + 16 + ciphertext.length);
  body[0] = VERSION;
  new DataView(body.buffer).setBigUint64(1, BigInt(seconds));
  body.set(iv, 9);
  body.set(ciphertext, 25);
  const hmac = new Uint8Array(await crypto.subtle.sign("HMAC", key.signing, body));
  const token = new Uint8Array(body.length + 32);
  token.set(body);
  token.set(hmac, body.length);
  return token.toBase64({ alphabet: "base64url" });
}

/**
 * Verifies and decrypts a token. `ttlSeconds` is optional (the service stores credentials
 * without expiry); when given, tokens older than it, or from too far in the future, fail.
 */
export async function fernetDecrypt(
  key: FernetKey,
  token: string,
  options: { now?: number; ttlSeconds?: number } = {},
): Promise<string> {
  let data: Uint8Array<ArrayBuffer>;
  try {
    data = fromBase64Url(token);
  } catch {
    throw new FernetError("token is not URL-safe base64");
  }
  if (data.length < 1 + 8 + 16 + 16 + 32 || (data.length - 57) % 16 !== 0) {
    throw new FernetError("token has the wrong length");
  }
  if (data[0] !== VERSION) throw new FernetError("token has an unknown version");
  const body = data.subarray(0, data.length - 32);
  const mac = data.subarray(data.length - 32);
  if (!(await crypto.subtle.verify("HMAC", key.signing, mac, body))) {
    throw new FernetError("token signature does not match (wrong key or tampered value)");
  }
  if (options.ttlSeconds !== undefined) {
    const issued = Number(new DataView(data.buffer, data.byteOffset).getBigUint64(1));
    const now = Math.floor((options.now ?? Date.now()) / 1000);
    if (issued + options.ttlSeconds < now) throw new FernetError("token has expired");
    if (issued > now + 60) throw new FernetError("token is from the future");
  }
  let plaintext: ArrayBuffer;
  try {
    plaintext = await crypto.subtle.decrypt(
      { name: "AES-CBC", iv: data.subarray(9, 25) },
      key.encryption,
      data.subarray(25, data.length - 32),
    );
  } catch {
    throw new FernetError("token could not be decrypted");
  }
  try {
    return decoder.decode(plaintext);
  } catch {
    throw new FernetError("token does not hold UTF-8 text");
  }
}
