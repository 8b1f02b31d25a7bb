/** Outbound calls from the backend to the inventory (NetBox-style REST with the plugin). */
import { baseUrl } from "./backend.ts";
import { fetchFor } from "./hypervisor_probe.ts";

export interface InventoryTarget {
  ip: string;
  port: number;
  use_https: boolean;
  /** false: accept any certificate (a self-signed inventory), HTTPS only. */
  verify_ssl: boolean;
  token_version: "v1" | "v2";
  /** Plaintext: v1 the token, v2 the secret. */
  token: string;
  token_key: string | null;
}

export class InventoryCallError extends Error {
  constructor(readonly url: string, readonly status: number | null, message: string) {
    super(message);
    this.name = "InventoryCallError";
  }
}

export function inventoryAuthHeader(target: InventoryTarget): string {
  return target.token_version === "v2"
    ? `Bearer nbt_${target.token_key}.${target.token}`
    : `Token ${target.token}`;
}

export async function fetchPluginEncryptionKey(
  fetchFn: typeof fetch,
  target: InventoryTarget,
  timeoutMs = 10_000,
): Promise<string | null> {
  const url = `${
    baseUrl(target.use_https, target.ip, target.port)
  }/api/plugins/service/settings/runtime/`;
  const send = fetchFor(url, target.verify_ssl, fetchFn);
  let response: Response;
  try {
    response = await send(url, {
      headers: { authorization: inventoryAuthHeader(target), accept: "application/json" },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw new InventoryCallError(url, null, `inventory unreachable: ${(error as Error).message}`);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new InventoryCallError(url, response.status, `inventory answered ${response.status}`);
  }
  const body = await response.json().catch(() => null) as { encryption_key?: unknown } | null;
  const key = body?.encryption_key;
  return typeof key === "string" && key.trim() ? key : null;
}
