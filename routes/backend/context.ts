import type { AppDeps, ServeEnv } from "../_lib/deps.ts";
import type {
  ApiKeyStore,
  HypervisorEndpointRecord,
  HypervisorEndpointStore,
  IdempotencyStore,
  InventoryEndpointRecord,
  InventoryEndpointStore,
  VerbAuditStore,
  VersionedRecords,
} from "../../storage/ports.ts";
import type { Lockout } from "../../domain/lockout.ts";
import type { CredentialVault } from "../../domain/credentials.ts";
import type { AuthCache, PublicKeyRecord } from "../../domain/api_keys.ts";

/** What the backend's handlers are given: the app deps plus this surface's own services. */
export interface BackendServices {
  deps: AppDeps;
  keys: ApiKeyStore;
  inventoryEndpoints: InventoryEndpointStore & VersionedRecords<InventoryEndpointRecord>;
  hypervisorEndpoints: HypervisorEndpointStore & VersionedRecords<HypervisorEndpointRecord>;
  lockout: Lockout;
  authCache: AuthCache;
  vault: CredentialVault;
  verbAudit: VerbAuditStore;
  idempotency: IdempotencyStore;
}

export type BackendEnv = {
  Bindings: ServeEnv;
  Variables: { apiKey: PublicKeyRecord | null };
};
