/**
 * The building blocks of the plugin's model declarations (models.ts): field constructors, the
 * common endpoint address fields, and the views of a stored endpoint record the hooks share.
 */
import type { FieldDef, FieldErrors, StoredObject } from "../netbox/types.ts";
import { CORE } from "./names.ts";
import type { SshEndpointFacts } from "./ssh.ts";

export const str = (extra: Partial<FieldDef> = {}): FieldDef => ({
  type: "string",
  maxLength: 255,
  ...extra,
});
export const optStr = (extra: Partial<FieldDef> = {}): FieldDef =>
  str({ allowBlank: true, ...extra });
export const nullStr = (extra: Partial<FieldDef> = {}): FieldDef =>
  str({ nullable: true, allowBlank: true, ...extra });
export const bool = (dflt: boolean, extra: Partial<FieldDef> = {}): FieldDef => ({
  type: "bool",
  default: dflt,
  ...extra,
});
export const nullInt = (extra: Partial<FieldDef> = {}): FieldDef => ({
  type: "int",
  nullable: true,
  ...extra,
});
export const port = (dflt: number): FieldDef => ({
  type: "int",
  default: dflt,
  min: 1,
  max: 65535,
});
export const fk = (model: string, extra: Partial<FieldDef> = {}): FieldDef => ({
  type: "fk",
  model,
  nullable: true,
  onDelete: "set_null",
  ...extra,
});
export const choice = (
  choices: ReadonlyArray<readonly [string, string]>,
  dflt: string | null,
  extra: Partial<FieldDef> = {},
): FieldDef => ({
  type: "choice",
  choices,
  default: dflt,
  nullable: dflt === null,
  index: true,
  // The plugin's serializers map a model's choices to DRF's own ChoiceField (its texts).
  drfChoice: true,
  ...extra,
});
/** Write-only secret. Stored as `json` so the engine does not trim it (a PEM key ends in \n). */
export const secret = (description: string): FieldDef => ({
  type: "json",
  writeOnly: true,
  nullable: true,
  filter: false,
  description,
});
export const lastPush: FieldDef = {
  type: "json",
  readOnly: true,
  nullable: true,
  filter: false,
  description: "Outcome of the last push to the backend: {ok, error, status, at}.",
};
export const lastSync: FieldDef = {
  type: "json",
  readOnly: true,
  nullable: true,
  filter: false,
  description: "The last sync job that covered this endpoint: {at, ok, job_id, status}.",
};
export const raw: FieldDef = { type: "json", default: () => ({}), filter: false };
export const datetime = (extra: Partial<FieldDef> = {}): FieldDef => ({
  type: "datetime",
  nullable: true,
  ...extra,
});

export const present = (value: unknown): value is string =>
  typeof value === "string" && value !== "";

/** The host part shown in display and used for URLs: the domain, else the IP's address. */
export function hostOf(record: StoredObject): string {
  if (present(record.domain)) return record.domain;
  if (present(record._host)) return record._host;
  return "";
}

export function endpointDisplay(record: StoredObject): string {
  const host = hostOf(record);
  return host ? `${record.name} (${host})` : String(record.name);
}

export function sshFacts(record: StoredObject): SshEndpointFacts {
  return {
    domain: present(record.domain) ? record.domain : null,
    ip: present(record._host)
      ? record._host
      : (record.ip_address ? String(record.ip_address) : null),
    username: present(record.username) ? record.username : null,
    password: present(record.password) ? record.password : null,
    ssh_credential_source: record.ssh_credential_source === "reuse_endpoint"
      ? "reuse_endpoint"
      : "dedicated",
    ssh_username: present(record.ssh_username) ? record.ssh_username : null,
    ssh_auth_method: record.ssh_auth_method === "key" ? "key" : "password",
    ssh_known_host_fingerprint: present(record.ssh_known_host_fingerprint)
      ? record.ssh_known_host_fingerprint
      : null,
    ssh_password: present(record.ssh_password) ? record.ssh_password : null,
    ssh_private_key: present(record.ssh_private_key) ? record.ssh_private_key : null,
  };
}

/** Common endpoint address fields. */
export function addressFields(defaultPort: number): Record<string, FieldDef> {
  return {
    name: str({ required: true, index: true }),
    ip_address: fk(CORE.ipAddress, { onDelete: "protect" }),
    domain: nullStr({ index: true }),
    port: port(defaultPort),
    /** Denormalised host of ip_address (its address without prefix length), for display. */
    _host: { type: "string", hidden: true, nullable: true, allowBlank: true },
    /** Where the stored secrets were saved for, and (backend) who confirmed the address. */
    _secrets_for: { type: "string", hidden: true, nullable: true, allowBlank: true },
    _confirmed_for: { type: "string", hidden: true, nullable: true, allowBlank: true },
  };
}

export function checkSecretsAreText(draft: StoredObject, fields: readonly string[]): FieldErrors {
  const errors: FieldErrors = {};
  for (const field of fields) {
    const value = draft[field];
    if (value !== null && value !== undefined && typeof value !== "string") {
      errors[field] = ["Not a valid string."];
    }
  }
  return errors;
}
