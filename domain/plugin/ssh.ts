/**
 * SSH credentials of a hypervisor endpoint for browser terminal sessions (docs/api-behaviour.md,
 * SSH secrets).
 *
 * `dedicated` (default): the endpoint's own ssh_* fields; secrets stored encrypted.
 * `reuse_endpoint`: password authentication with the realm-stripped endpoint username and
 * the endpoint password; a pinned SHA256 host key fingerprint is required; a token-only
 * endpoint cannot be reused (there is no password to send), so that is a 4xx, never an
 * empty password.
 */
import { type Opened, openWithKeyring } from "./secrets.ts";
import { isValidFingerprint } from "./validation.ts";

/**
 * The permission that reads SSH secrets back (with `service.view_hypervisorendpoint`; the
 * original plugin's name): `…/ssh-secrets/` answers only to it, and a browser terminal opens
 * its sessions with it. Changing an endpoint is not enough (SECURITY.md).
 */
export const SSH_TERMINAL_PERMISSION = "service.open_ssh_terminal";

export type SshSource = "dedicated" | "reuse_endpoint";
export type SshAuthMethod = "password" | "key";

/** The stored facts the SSH rules need (secrets as stored: `enc:` or plaintext, or null). */
export interface SshEndpointFacts {
  domain: string | null;
  ip: string | null;
  username: string | null;
  password: string | null;
  ssh_credential_source: SshSource;
  ssh_username: string | null;
  ssh_auth_method: SshAuthMethod;
  ssh_known_host_fingerprint: string | null;
  ssh_password: string | null;
  ssh_private_key: string | null;
}

export interface SshReadiness {
  has_ssh_password: boolean;
  has_ssh_private_key: boolean;
  has_ssh_terminal_credentials: boolean;
}

export interface SshSecrets {
  auth_method: SshAuthMethod;
  username: string;
  password: string;
  private_key: string;
}

export type SshSecretsResult =
  | { ok: true; secrets: SshSecrets }
  | { ok: false; outcome: "conflict" | "unprocessable"; body: Record<string, unknown> };

/** `root@pam` → `root`; a token id suffix (`user@pve!tok`) goes too. */
export function stripRealm(username: string): string {
  const withoutToken = username.split("!")[0];
  const at = withoutToken.lastIndexOf("@");
  return (at > 0 ? withoutToken.slice(0, at) : withoutToken).trim();
}

function present(value: string | null | undefined): value is string {
  return typeof value === "string" && value.length > 0;
}

export function sshReadiness(e: SshEndpointFacts): SshReadiness {
  const host = present(e.domain) || present(e.ip);
  if (e.ssh_credential_source === "reuse_endpoint") {
    const hasPassword = present(e.password);
    const username = present(e.username) ? stripRealm(e.username) : "";
    const pinned = present(e.ssh_known_host_fingerprint) &&
      isValidFingerprint(e.ssh_known_host_fingerprint);
    return {
      has_ssh_password: hasPassword,
      has_ssh_private_key: false,
      has_ssh_terminal_credentials: host && pinned && username.length > 0 && hasPassword,
    };
  }
  const hasPassword = present(e.ssh_password);
  const hasKey = present(e.ssh_private_key);
  const secret = e.ssh_auth_method === "key" ? hasKey : hasPassword;
  return {
    has_ssh_password: hasPassword,
    has_ssh_private_key: hasKey,
    has_ssh_terminal_credentials: host && present(e.ssh_username) && secret,
  };
}

function undecryptable(field: string, opened: Extract<Opened, { ok: false }>): SshSecretsResult {
  return {
    ok: false,
    outcome: "conflict",
    body: {
      reason: opened.reason === "missing_key"
        ? "encryption_key_missing"
        : "credential_undecryptable",
      detail: `${field}: ${opened.detail}`,
    },
  };
}

function unprocessable(reason: string, detail: string): SshSecretsResult {
  return { ok: false, outcome: "unprocessable", body: { reason, detail } };
}

/**
 * Resolves the secrets the terminal needs. `keyring` is the plugin encryption key followed by
 * keys replaced by rotations (empty when no key is set).
 */
export async function resolveSshSecrets(
  e: SshEndpointFacts,
  keyring: readonly string[],
): Promise<SshSecretsResult> {
  if (!present(e.domain) && !present(e.ip)) {
    return unprocessable(
      "ssh_host_missing",
      "The endpoint has neither a domain nor an IP address.",
    );
  }
  if (e.ssh_credential_source === "reuse_endpoint") {
    if (
      !present(e.ssh_known_host_fingerprint) || !isValidFingerprint(e.ssh_known_host_fingerprint)
    ) {
      return unprocessable(
        "ssh_fingerprint_required",
        "reuse_endpoint needs a pinned SHA256 host key fingerprint (ssh_known_host_fingerprint).",
      );
    }
    const username = present(e.username) ? stripRealm(e.username) : "";
    if (!username) {
      return unprocessable("ssh_username_missing", "The endpoint has no username to reuse.");
    }
    if (!present(e.password)) {
      return unprocessable(
        "ssh_password_unavailable",
        "This endpoint authenticates with an API token only; reuse_endpoint needs the endpoint " +
          "password. Set a password on the endpoint or use dedicated SSH credentials.",
      );
    }
    const opened = await openWithKeyring(e.password, keyring);
    if (!opened.ok) return undecryptable("password", opened);
    if (!opened.value) {
      return unprocessable("ssh_password_unavailable", "The endpoint password is empty.");
    }
    return {
      ok: true,
      secrets: { auth_method: "password", username, password: opened.value, private_key: "" },
    };
  }

  if (!present(e.ssh_username)) {
    return unprocessable("ssh_username_missing", "Set ssh_username for dedicated SSH credentials.");
  }
  if (keyring.length === 0) {
    return {
      ok: false,
      outcome: "conflict",
      body: {
        reason: "encryption_key_missing",
        detail: "Dedicated SSH secrets need the plugin setting encryption_key; set it in settings.",
      },
    };
  }
  let password = "";
  let privateKey = "";
  if (present(e.ssh_password)) {
    const opened = await openWithKeyring(e.ssh_password, keyring);
    if (!opened.ok) return undecryptable("ssh_password", opened);
    password = opened.value;
  }
  if (present(e.ssh_private_key)) {
    const opened = await openWithKeyring(e.ssh_private_key, keyring);
    if (!opened.ok) return undecryptable("ssh_private_key", opened);
    privateKey = opened.value;
  }
  if (e.ssh_auth_method === "key" ? !privateKey : !password) {
    return unprocessable(
      "ssh_secret_missing",
      e.ssh_auth_method === "key"
        ? "ssh_auth_method is key but no ssh_private_key is stored."
        : "ssh_auth_method is password but no ssh_password is stored.",
    );
  }
  return {
    ok: true,
    secrets: {
      auth_method: e.ssh_auth_method,
      username: e.ssh_username,
      password: e.ssh_auth_method === "key" ? "" : password,
      private_key: e.ssh_auth_method === "key" ? privateKey : "",
    },
  };
}

/**
 * Switching an endpoint to `reuse_endpoint` makes its stored password readable through
 * `…/ssh-secrets/` (to holders of SSH_TERMINAL_PERMISSION): a password nobody may read back
 * would become readable by whoever flips the switch. So a non-superuser may switch only while
 * sending `password` in the same write (it knows the secret it exposes); a superuser set the
 * password or could have.
 */
export function checkReuseSwitch(
  draft: Readonly<Record<string, unknown>>,
  ctx: {
    op: "create" | "update";
    existing: Readonly<Record<string, unknown>> | null;
    input: Record<string, unknown>;
    auth: { isSuperuser: boolean } | null;
  },
): Record<string, string[]> {
  if (draft.ssh_credential_source !== "reuse_endpoint") return {};
  if (ctx.op !== "update" || ctx.existing?.ssh_credential_source === "reuse_endpoint") return {};
  if (!ctx.auth || ctx.auth.isSuperuser || "password" in ctx.input) return {};
  if (typeof ctx.existing?.password !== "string" || ctx.existing.password === "") return {};
  return {
    ssh_credential_source: [
      "Switching to reuse_endpoint makes the endpoint password readable to SSH terminal " +
      "users: send the endpoint password again in the same request (or ask a superuser).",
    ],
  };
}
