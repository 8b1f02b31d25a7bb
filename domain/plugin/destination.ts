/**
 * Secrets follow their destination (SECURITY.md "Secrets follow their destination").
 *
 * Every endpoint record remembers where its secrets were saved for (`_secrets_for`: scheme,
 * host, port and, for the inventory, the token version). A write that moves the endpoint
 * without sending the secrets again clears them (the response lists them in
 * `secrets_cleared` and `warnings`), and nothing is sent while the current address differs
 * from the remembered one (an edited IP address record moves an endpoint without a save).
 *
 * The backend endpoint also carries every other secret (inventory token, hypervisor
 * passwords) when the plugin pushes copies. Its address counts as confirmed (`_confirmed_for`)
 * only when a superuser (or the app itself) set it: a token that cannot read those secrets
 * cannot redirect them.
 */
import type { AuthInfo, HookContext, StoredObject } from "../netbox/types.ts";

const present = (value: unknown): value is string => typeof value === "string" && value !== "";

/**
 * Secrets (and secret references) of each endpoint kind that a move clears unless sent again.
 *
 * The backend endpoint's key is kept: whoever may move that endpoint (a superuser, or a
 * write-enabled token with `service.change_backendendpoint`) is shown the key anyway, so
 * clearing it protected nothing, and a fresh key is one an already bootstrapped backend refuses
 * (every push and job then failed with 401 until someone minted a key there). The key still
 * goes nowhere while the address differs from the one it was saved for (an edited IP address
 * record: moveSinceSaved), and the other secrets a push carries still need a superuser's
 * confirmation of the address (backendUnconfirmed).
 */
export const DESTINATION_SECRETS: Readonly<Record<string, readonly string[]>> = {
  hypervisorendpoint: ["password", "token_value", "ssh_password", "ssh_private_key"],
  inventoryendpoint: ["token", "token_key", "token_secret"],
  backendendpoint: [],
};

/** Where a record's secrets go: `<scheme>://<host>:<port>[#<token version>]`, or null. */
export function destinationOf(record: StoredObject, host: string | null): string | null {
  if (!host) return null;
  const scheme = record.use_https === false ? "http" : "https";
  const version = typeof record.token_version === "string" ? `#${record.token_version}` : "";
  return `${scheme}://${host.toLowerCase()}:${Number(record.port ?? 0)}${version}`;
}

function hostOf(record: StoredObject): string | null {
  if (present(record.domain)) return record.domain;
  return present(record._host) ? record._host : null;
}

/** The destination the stored secrets were saved for (older records: their saved address). */
export function savedDestination(record: StoredObject): string | null {
  if (typeof record._secrets_for === "string") return record._secrets_for;
  return destinationOf(record, hostOf(record));
}

function trusted(auth: AuthInfo | null): boolean {
  return auth === null || auth.isSuperuser;
}

/**
 * Runs in beforeSave once `_host` is resolved: clears secrets a move did not re-send, and
 * remembers the destination (and, for the backend, who confirmed it).
 */
export function followDestination(model: string, draft: StoredObject, ctx: HookContext): void {
  const secrets = DESTINATION_SECRETS[model] ?? [];
  const now = destinationOf(draft, hostOf(draft));
  const before = ctx.existing ? savedDestination(ctx.existing) : null;
  // Turning certificate verification off sends the secrets to whoever answers there: as good
  // as a new destination, so they must be sent again too.
  const unverified = Boolean(ctx.existing) && ctx.existing!.verify_ssl !== false &&
    draft.verify_ssl === false;
  if (ctx.existing && (before !== now || unverified)) {
    const cleared = secrets.filter((f) =>
      !(f in ctx.input) && draft[f] !== null && draft[f] !== undefined && draft[f] !== ""
    );
    for (const field of cleared) draft[field] = null;
    if (cleared.length) {
      ctx.responseExtras.secrets_cleared = cleared;
      const why = before !== now
        ? `The endpoint now points at ${now ?? "no host"} (was ${before ?? "no host"})`
        : "Certificate verification was turned off for this endpoint";
      ctx.responseExtras.warnings = [
        `${why}: ${cleared.join(", ")} cleared; send ${cleared.length > 1 ? "them" : "it"} ` +
        "again for the new destination.",
      ];
    }
  }
  draft._secrets_for = now;
  if (model === "backendendpoint") {
    if (trusted(ctx.auth)) draft._confirmed_for = now;
    else if (!ctx.existing) draft._confirmed_for = null;
    else if (ctx.existing._confirmed_for === undefined) {
      // Saved before this rule existed: its old address counts as confirmed.
      draft._confirmed_for = before;
    }
  }
}

/** Why the stored secrets of `record` must not go to `host` now, or null when they may. */
export function moveSinceSaved(record: StoredObject, host: string | null): string | null {
  const now = destinationOf(record, host);
  const saved = savedDestination(record);
  if (now === saved) return null;
  return `its address changed to ${now ?? "no host"} since its secrets were saved for ` +
    `${saved ?? "no host"}; save the secrets again`;
}

/** Why secrets other than its own key must not be pushed to this backend, or null. */
export function backendUnconfirmed(backend: StoredObject, host: string | null): string | null {
  const now = destinationOf(backend, host);
  const confirmed = backend._confirmed_for === undefined
    ? savedDestination(backend)
    : backend._confirmed_for;
  if (now !== null && now === confirmed) return null;
  return `the backend endpoint's address (${now ?? "no host"}) was set by a token that cannot ` +
    "read the secrets a push carries; a superuser must save the backend endpoint to confirm it";
}

/** Host part of a URL: IPv6 literals go in brackets, an address's prefix length is dropped. */
export function urlHost(host: string): string {
  const bare = host.trim().replace(/\/\d+$/, "");
  return bare.includes(":") && !bare.startsWith("[") ? `[${bare}]` : bare;
}

export function baseUrl(useHttps: boolean, host: string, port: number): string {
  return `${useHttps ? "https" : "http"}://${urlHost(host)}:${port}`;
}
