/**
 * Validation rules of the plugin endpoint records (docs/api-behaviour.md, Plugin: endpoints and
 * validation rules), as pure functions returning NetBox-style field errors `{field: [message]}`
 * (empty when valid).
 */

export type FieldErrors = Record<string, string[]>;

export const DOMAIN_OR_IP_MESSAGE = "Either a domain or an IP address must be provided.";
export const DOMAIN_INVALID_MESSAGE =
  "Enter a valid FQDN, hostname or localhost (letters, digits and hyphens, dot-separated).";
export const V1_TOKEN_REQUIRED = "A v1 inventory endpoint needs a token reference.";
export const V1_NO_KEY = "Clear token_key for a v1 token; it is used with v2 only.";
export const V1_NO_SECRET = "Clear token_secret for a v1 token; it is used with v2 only.";
export const V2_KEY_REQUIRED = "A v2 token needs token_key.";
export const V2_SECRET_REQUIRED = "A v2 token needs token_secret.";
export const V2_NO_TOKEN =
  "Do not use the token reference with a v2 token; set token_key and token_secret.";
export const FINGERPRINT_INVALID =
  "Enter an SSH host key fingerprint as SHA256:<base64> (as printed by ssh-keygen -lf).";
export const FINGERPRINT_REQUIRED_FOR_REUSE =
  "A pinned SHA256 host key fingerprint is required when ssh_credential_source is reuse_endpoint.";

function add(errors: FieldErrors, field: string, message: string): void {
  (errors[field] ??= []).push(message);
}

function blank(value: unknown): boolean {
  return value === null || value === undefined ||
    (typeof value === "string" && value.trim() === "");
}

/** FQDN, hostname or `localhost`; a trailing dot is accepted. */
export function isValidDomain(value: string): boolean {
  const name = value.endsWith(".") ? value.slice(0, -1) : value;
  if (name.length === 0 || name.length > 253) return false;
  return name.split(".").every((label) =>
    /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(label)
  );
}

/** Rule 1: at least one of domain or ip_address, error on both fields otherwise. */
export function checkDomainOrIp(
  record: { domain?: unknown; ip_address?: unknown; [field: string]: unknown },
): FieldErrors {
  const errors: FieldErrors = {};
  if (blank(record.domain) && blank(record.ip_address)) {
    add(errors, "domain", DOMAIN_OR_IP_MESSAGE);
    add(errors, "ip_address", DOMAIN_OR_IP_MESSAGE);
  } else if (
    typeof record.domain === "string" && !blank(record.domain) &&
    !isValidDomain(record.domain.trim())
  ) {
    add(errors, "domain", DOMAIN_INVALID_MESSAGE);
  }
  return errors;
}

/**
 * Rules 2 and 3 on the inventory endpoint. `hasSecret` says whether a token_secret is
 * supplied in this write or already stored (write-only fields are never echoed back, so a
 * PATCH that leaves the secret alone keeps the stored one).
 */
export function checkInventoryToken(record: {
  token_version?: unknown;
  token?: unknown;
  token_key?: unknown;
  hasSecret: boolean;
}): FieldErrors {
  const errors: FieldErrors = {};
  if (record.token_version === "v2") {
    if (blank(record.token_key)) add(errors, "token_key", V2_KEY_REQUIRED);
    if (!record.hasSecret) add(errors, "token_secret", V2_SECRET_REQUIRED);
    if (!blank(record.token)) add(errors, "token", V2_NO_TOKEN);
  } else {
    if (blank(record.token)) add(errors, "token", V1_TOKEN_REQUIRED);
    if (!blank(record.token_key)) add(errors, "token_key", V1_NO_KEY);
    if (record.hasSecret) add(errors, "token_secret", V1_NO_SECRET);
  }
  return errors;
}

const FINGERPRINT = /^SHA256:[A-Za-z0-9+/]{43}=?$/;

export function isValidFingerprint(value: string): boolean {
  return FINGERPRINT.test(value.trim());
}

/** A Proxmox VE node name (a host name label); the key of a per-node pinned host key. */
const NODE_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
export const MAX_NODE_FINGERPRINTS = 512;

/**
 * `ssh_node_host_fingerprints`: the pinned host key of each cluster node the browser terminal
 * may open (README "Browser terminal", per node): `{"<node name>": "SHA256:<base64>"}`.
 * Normalised (values trimmed; an empty object is null).
 */
export function checkNodeFingerprints(
  raw: unknown,
): { ok: true; value: Record<string, string> | null } | { ok: false; messages: string[] } {
  if (raw === undefined || raw === null) return { ok: true, value: null };
  if (typeof raw !== "object" || Array.isArray(raw)) {
    return {
      ok: false,
      messages: ['An object of node name → pinned key, e.g. {"pve2": "SHA256:…"}.'],
    };
  }
  const entries = Object.entries(raw as Record<string, unknown>);
  if (entries.length > MAX_NODE_FINGERPRINTS) {
    return { ok: false, messages: [`At most ${MAX_NODE_FINGERPRINTS} nodes.`] };
  }
  const out: Record<string, string> = {};
  const messages: string[] = [];
  for (const [node, value] of entries) {
    const name = JSON.stringify(node.slice(0, 70));
    if (!NODE_NAME.test(node)) {
      messages.push(`${name}: not a node name (letters, digits and '-', at most 63).`);
    } else if (typeof value !== "string" || !isValidFingerprint(value)) {
      messages.push(`${name}: ${FINGERPRINT_INVALID}`);
    } else out[node] = value.trim();
  }
  if (messages.length) return { ok: false, messages };
  return { ok: true, value: Object.keys(out).length ? out : null };
}

export function checkSsh(record: {
  ssh_credential_source?: unknown;
  ssh_known_host_fingerprint?: unknown;
  [field: string]: unknown;
}): FieldErrors {
  const errors: FieldErrors = {};
  const fp = record.ssh_known_host_fingerprint;
  if (typeof fp === "string" && !blank(fp) && !isValidFingerprint(fp)) {
    add(errors, "ssh_known_host_fingerprint", FINGERPRINT_INVALID);
  } else if (record.ssh_credential_source === "reuse_endpoint" && blank(fp)) {
    add(errors, "ssh_known_host_fingerprint", FINGERPRINT_REQUIRED_FOR_REUSE);
  }
  return errors;
}

export function mergeErrors(...all: FieldErrors[]): FieldErrors {
  const out: FieldErrors = {};
  for (const errors of all) {
    for (const [field, messages] of Object.entries(errors)) (out[field] ??= []).push(...messages);
  }
  return out;
}
