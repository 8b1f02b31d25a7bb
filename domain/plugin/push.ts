/**
 * Push-on-save (docs/api-behaviour.md, Push on save): the plugin copies its endpoint records into
 * the backend service. Best-effort: every function answers the (ok, error, status) triple and never
 * throws; the caller records it as `last_push` and the save itself never fails.
 */
import type { BackendApi, CallOutcome, HypervisorCopy, InventoryCopy } from "./ports.ts";

export interface PushOutcome {
  ok: boolean;
  error: string | null;
  status: number | null;
}

export interface LastPush extends PushOutcome {
  /** ISO 8601 UTC time of the attempt. */
  at: string;
}

export const KEY_LABEL = "inventory-plugin";

function outcome(call: CallOutcome): PushOutcome {
  return { ok: call.ok, error: call.error, status: call.status };
}

export function failed(error: string, status: number | null = null): PushOutcome {
  return { ok: false, error, status };
}

export const PUSHED_OK: PushOutcome = { ok: true, error: null, status: null };

/** How to recover when the backend holds keys that are not this endpoint's token. */
export const FOREIGN_KEY_HINT = "the backend already holds other API keys; create one there " +
  "(POST /auth/keys with any key it accepts, or on the backend's host, without any key: " +
  "npx -y deno@2.9.6 task key:create) and give it to this endpoint with " +
  "POST /api/plugins/service/endpoints/backend/{id}/token/";

/**
 * Backend endpoint save: `GET /auth/bootstrap-status`; when `needs_bootstrap`,
 * `POST /auth/register-key` with the token; otherwise registration is skipped and the token
 * is checked with one authenticated read, so `last_push` tells when it is not accepted.
 */
export async function registerBackendKey(
  client: BackendApi,
  token: string,
  options: { verify?: boolean } = {},
): Promise<PushOutcome> {
  const status = await client.bootstrapStatus();
  if (!status.ok) return outcome(status);
  if (!status.body!.needs_bootstrap) {
    if (!options.verify) return { ok: true, error: null, status: status.status };
    const check = await client.verifyKey();
    if (check.ok) return outcome(check);
    if (check.refused === "unauthorized") {
      return failed(`${check.error} (${FOREIGN_KEY_HINT})`, check.status);
    }
    return outcome(check);
  }
  const registered = await client.registerKey(token, KEY_LABEL);
  if (!registered.ok && registered.refused === "conflict") {
    return failed(`${registered.error} (${FOREIGN_KEY_HINT})`, registered.status);
  }
  return outcome(registered);
}

/** Inventory endpoint save: list the copies; POST when empty, else PUT to the first entry. */
export async function pushInventoryCopy(
  client: BackendApi,
  copy: InventoryCopy,
): Promise<PushOutcome> {
  const list = await client.listInventoryEndpoints();
  if (!list.ok) return outcome(list);
  let first = list.body![0];
  if (first === undefined) {
    const created = await client.createInventoryEndpoint(copy);
    // A conflict: a concurrent save created the singleton between our list and our POST.
    if (created.refused !== "conflict") return outcome(created);
    const again = await client.listInventoryEndpoints();
    if (!again.ok) return outcome(again);
    first = again.body![0];
    if (first === undefined) return outcome(created);
  }
  if (typeof first.id !== "number") {
    return failed(`${client.baseUrl}/inventory/endpoint: listed entry has no id`, list.status);
  }
  return outcome(await client.updateInventoryEndpoint(first.id, copy));
}

/** The backend copy's name: the same hypervisor under two plugin pks gives two entries. */
export function hypervisorCopyName(name: string, pk: number): string {
  return `${name} (inv:${pk})`;
}

/** Hypervisor endpoint save: list the copies; POST when no entry has the name, else PUT to it. */
export async function pushHypervisorCopy(
  client: BackendApi,
  copy: HypervisorCopy,
): Promise<PushOutcome> {
  const list = await client.listHypervisorEndpoints();
  if (!list.ok) return outcome(list);
  // The " (inv:<pk>)" suffix identifies the plugin record: after a rename no entry has the
  // new name yet, and the old copy is renamed instead of leaving two copies of one endpoint.
  const suffix = / \(inv:\d+\)$/.exec(copy.name)?.[0];
  let match = list.body!.find((entry) => entry.name === copy.name) ??
    (suffix
      ? list.body!.find((entry) => typeof entry.name === "string" && entry.name.endsWith(suffix))
      : undefined);
  if (match === undefined) {
    const created = await client.createHypervisorEndpoint(copy);
    // A conflict: a concurrent save of the same endpoint created the copy first; update it.
    if (created.refused !== "conflict") return outcome(created);
    const again = await client.listHypervisorEndpoints();
    if (!again.ok) return outcome(again);
    match = again.body!.find((entry) => entry.name === copy.name);
    if (match === undefined) return outcome(created);
  }
  return outcome(await client.updateHypervisorEndpoint(match.id, copy));
}
