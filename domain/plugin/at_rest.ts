/**
 * Secrets the plugin keeps for itself (its own `encryption_key` and the keys a rotation
 * replaced, the backend endpoint's key) sealed with `SERVICE_ENCRYPTION_KEY` when it is set,
 * so a copy of the KV file alone opens nothing (SECURITY.md "Secrets at rest"). Values stored
 * before the key was configured stay readable and are sealed on their next write.
 */
import { isEncrypted, openSecret, sealSecret } from "./secrets.ts";

export class AtRestError extends Error {
  constructor(detail: string) {
    super(`a stored plugin secret cannot be opened with SERVICE_ENCRYPTION_KEY: ${detail}`);
    this.name = "AtRestError";
  }
}

/** Seals `value` with the at-rest key (unchanged without one, or when already sealed). */
export async function sealAtRest(value: string, key: string | undefined): Promise<string> {
  if (!key || isEncrypted(value)) return value;
  return await sealSecret(value, key);
}

/** Opens a value sealed with the at-rest key; plaintext (older) values pass through. */
export async function openAtRest(value: string, key: string | undefined): Promise<string> {
  if (!isEncrypted(value)) return value;
  const opened = await openSecret(value, key ?? null);
  if (!opened.ok) throw new AtRestError(opened.detail);
  return opened.value;
}
