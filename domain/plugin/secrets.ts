/**
 * Write-only secrets of the plugin records (hypervisor `password`, `token_value`,
 * `ssh_password`, `ssh_private_key`; inventory `token_secret`) at rest.
 *
 * With the plugin setting `encryption_key` set, a secret is stored as `enc:<fernet token>`
 * under `urlsafe_base64(SHA-256(utf8(trimmed key)))`, the same derivation the backend uses
 * (docs/api-behaviour.md, Secrets), so both sides and Python's `cryptography.fernet` read each
 * other's values.
 *
 * Without the key, connection secrets (the ones pushed to the backend) are kept in plaintext
 * and one CRITICAL line is logged per write, mirroring the backend's own rule; the dedicated
 * SSH secrets are refused (docs/api-behaviour.md, SSH secrets: dedicated mode needs the plugin
 * encryption key).
 */
import { deriveFernetKey, fernetDecrypt, fernetEncrypt, importFernetKey } from "../fernet.ts";

export const ENC_PREFIX = "enc:";

export type Opened =
  | { ok: true; value: string }
  | { ok: false; reason: "missing_key" | "undecryptable"; detail: string };

export function isEncrypted(stored: string): boolean {
  return stored.startsWith(ENC_PREFIX);
}

export async function sealSecret(plaintext: string, encryptionKey: string | null): Promise<string> {
  if (!encryptionKey?.trim()) return plaintext;
  const key = await importFernetKey(await deriveFernetKey(encryptionKey));
  return ENC_PREFIX + await fernetEncrypt(key, plaintext);
}

export async function openSecret(stored: string, encryptionKey: string | null): Promise<Opened> {
  if (!isEncrypted(stored)) return { ok: true, value: stored };
  if (!encryptionKey?.trim()) {
    return {
      ok: false,
      reason: "missing_key",
      detail: "the value is encrypted but the plugin setting encryption_key is not set",
    };
  }
  try {
    const key = await importFernetKey(await deriveFernetKey(encryptionKey));
    return { ok: true, value: await fernetDecrypt(key, stored.slice(ENC_PREFIX.length)) };
  } catch (error) {
    return {
      ok: false,
      reason: "undecryptable",
      detail: `the value cannot be decrypted with the configured encryption_key (${
        error instanceof Error ? error.message : String(error)
      })`,
    };
  }
}

/**
 * Opens with the first key of a keyring that works (current key first, then keys replaced by
 * a rotation), so a rotation interrupted half-way never strands a secret.
 */
export async function openWithKeyring(stored: string, keyring: readonly string[]): Promise<Opened> {
  if (!isEncrypted(stored)) return { ok: true, value: stored };
  if (keyring.length === 0) return openSecret(stored, null);
  let last: Opened = await openSecret(stored, keyring[0]);
  for (const key of keyring.slice(1)) {
    if (last.ok) break;
    last = await openSecret(stored, key);
  }
  return last;
}

/**
 * 48 random bytes as URL-safe base64: 64 characters (docs/api-behaviour.md, Plugin: endpoints and
 * validation rules).
 */
export function generateBackendToken(): string {
  return crypto.getRandomValues(new Uint8Array(48)).toBase64({ alphabet: "base64url" });
}
