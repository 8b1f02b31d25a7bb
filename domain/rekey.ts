/**
 * Re-key: every stored secret of the backend's endpoint copies sealed again under the key a save
 * would use now (`POST /credentials/rekey`, `deno task rekey`). Secrets saved before any key
 * existed stop being plaintext; secrets under an older key move to the current one.
 *
 * Each record is one compare-and-set on the version that was read, so an edit made meanwhile is
 * never overwritten: the record is read again and re-sealed from its new state.
 */
import { CredentialError, type CredentialVault, KeyUnavailableError } from "./credentials.ts";
import { endpointLabel } from "./endpoints.ts";
import type {
  HypervisorEndpointRecord,
  InventoryEndpointRecord,
  KeySource,
  VersionedRecords,
} from "../storage/ports.ts";

export interface RekeyReport {
  resealed: number;
  unchanged: number;
  failed: { endpoint: string; reason: string }[];
}

const ATTEMPTS = 5;

interface Kind<R extends { id: number; name: string; key_source: KeySource }> {
  kind: "inventory" | "hypervisor";
  store: VersionedRecords<R> & { list(): Promise<R[]> };
  secrets(record: R): Record<string, string | null>;
}

async function rekeyKind<R extends { id: number; name: string; key_source: KeySource }>(
  vault: CredentialVault,
  { kind, store, secrets }: Kind<R>,
  report: RekeyReport,
) {
  for (const { id } of await store.list()) {
    let label = `${kind} endpoint ${id}`;
    try {
      let done = false;
      for (let attempt = 0; attempt < ATTEMPTS && !done; attempt++) {
        const current = await store.getVersioned(id);
        if (!current) {
          done = true; // deleted meanwhile: nothing left to protect
          break;
        }
        label = `${kind} ${endpointLabel(current.record)}`;
        const { record, version } = current;
        const next = await vault.reseal(kind, secrets(record), record.key_source, label);
        if (!next.changed) {
          report.unchanged++;
          done = true;
        } else if (
          await store.replaceIfUnchanged(id, version, {
            ...record,
            ...next.secrets,
            key_source: next.source,
          })
        ) {
          report.resealed++;
          done = true;
        }
      }
      if (!done) {
        report.failed.push({
          endpoint: label,
          reason: `changed by other writers ${ATTEMPTS} times while re-sealing; run rekey again`,
        });
      }
    } catch (error) {
      if (error instanceof CredentialError || error instanceof KeyUnavailableError) {
        report.failed.push({ endpoint: label, reason: error.message });
      } else {
        throw error;
      }
    }
  }
}

export async function rekeyAll(
  vault: CredentialVault,
  inventory: VersionedRecords<InventoryEndpointRecord> & {
    list(): Promise<InventoryEndpointRecord[]>;
  },
  hypervisors: VersionedRecords<HypervisorEndpointRecord> & {
    list(): Promise<HypervisorEndpointRecord[]>;
  },
): Promise<RekeyReport> {
  const report: RekeyReport = { resealed: 0, unchanged: 0, failed: [] };
  await rekeyKind(vault, {
    kind: "inventory",
    store: inventory,
    secrets: (r) => ({ token: r.token || null }),
  }, report);
  await rekeyKind(vault, {
    kind: "hypervisor",
    store: hypervisors,
    secrets: (r) => ({ password: r.password, token_value: r.token_value }),
  }, report);
  return report;
}
