/**
 * Every Deno KV store behind its port, built once from one `Deno.Kv` handle.
 *
 * @module
 * @example
 * ```ts
 * const kv = await Deno.openKv(":memory:");
 * const storage = createKvStorage(kv, { atRestKey: undefined, now: Date.now });
 * await storage.apiKeys.isClaimed(); // false
 * ```
 */
import type { Storage } from "../ports.ts";
import { KvApiKeyStore } from "./api_keys.ts";
import { KvConsoleSessionStore } from "./console_sessions.ts";
import { KvHypervisorEndpointStore, KvInventoryEndpointStore } from "./endpoints.ts";
import { KvIdempotencyStore } from "./idempotency.ts";
import { KvJobStore } from "./jobs.ts";
import { KvModelStore } from "./models.ts";
import { KvPluginSettingsStore } from "./plugin_settings.ts";
import { KvRateLimiter } from "./rate_limits.ts";
import { KvSchemaVersionStore } from "./schema_versions.ts";
import { KvVerbAuditStore } from "./verb_audit.ts";
import { KvSyncRunLockStore } from "./sync_runs.ts";
import { KvSyncLedgerStore } from "./sync_ledgers.ts";
import { KvTerminalSessionStore } from "./terminal_sessions.ts";
import { retryWhenBusy } from "./busy_retry.ts";

export interface KvStorageOptions {
  /** SERVICE_ENCRYPTION_KEY: seals the plugin's encryption key at rest when set. */
  atRestKey?: string;
  /** Epoch milliseconds (request-limit windows). */
  now: () => number;
  /**
   * A local KV file other processes may share: Deno KV watches do not see their writes there,
   * so key changes are also polled this often (milliseconds). Unset: watches alone.
   */
  sharedFilePollMs?: number;
  /** The inventory's read cache bounds (records per model, over all models): defaults if unset. */
  inventoryCache?: { recordsPerModel: number; records: number };
}

export function createKvStorage(handle: Deno.Kv, options: KvStorageOptions): Storage {
  // Other processes may share the file: a write that meets their lock is retried, never a 500.
  const kv = retryWhenBusy(handle);
  return {
    apiKeys: new KvApiKeyStore(kv, options.sharedFilePollMs),
    inventoryEndpoints: new KvInventoryEndpointStore(kv),
    hypervisorEndpoints: new KvHypervisorEndpointStore(kv),
    models: new KvModelStore(kv, {
      maxCachedRecords: options.inventoryCache?.recordsPerModel,
      maxCachedRecordsTotal: options.inventoryCache?.records,
    }),
    verbAudit: new KvVerbAuditStore(kv),
    idempotency: new KvIdempotencyStore(kv),
    consoleSessions: new KvConsoleSessionStore(kv),
    pluginSettings: new KvPluginSettingsStore(kv, options.atRestKey),
    schemaVersions: new KvSchemaVersionStore(kv),
    rateLimits: new KvRateLimiter(kv, options.now),
    jobs: new KvJobStore(kv, options.now),
    syncRuns: new KvSyncRunLockStore(kv, options.now),
    terminalSessions: new KvTerminalSessionStore(kv),
    syncLedgers: new KvSyncLedgerStore(kv, options.now),
  };
}
