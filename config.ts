/**
 * Pure parse of the environment (README, Configuration) into a typed Config. No I/O: main.ts reads
 * the environment and hands the plain record in, so tests can build any configuration.
 */

export const SURFACES = ["backend", "plugin", "hypervisor", "host-agent"] as const;
export type Surface = typeof SURFACES[number];

export type HypervisorMode = "mock" | "real";
export type HypervisorVersion = "9.2" | "9.1.11";

export interface MockSeedSize {
  nodes: number;
  vms: number;
  cts: number;
  storages: number;
}

export interface Config {
  port: number;
  /**
   * SERVICE_LISTEN_HOST: the address to listen on. Unset: every interface for `task start` (a
   * server), loopback only for `task demo` (a laptop demo holds a superuser token and the mock's
   * default login).
   */
  listenHost: string | undefined;
  /**
   * SERVICE_REUSE_PORT: several processes on one machine listen on one PORT and the kernel
   * spreads the connections between them (SO_REUSEPORT; Linux). README "Several processes".
   */
  reusePort: boolean;
  /** File path, ":memory:", a KV Connect URL, or undefined for the platform default (Deploy). */
  kvPath: string | undefined;
  surfaces: ReadonlySet<Surface>;
  encryptionKey: string | undefined;
  trustedProxies: ReadonlySet<string>;
  allowLoopbackTargets: boolean;
  hypervisor: {
    mode: HypervisorMode;
    schema: string | undefined;
    version: HypervisorVersion;
    seed: MockSeedSize;
    mockUser: string;
    mockPassword: string;
    url: string | undefined;
    username: string | undefined;
    password: string | undefined;
    tokenId: string | undefined;
    tokenSecret: string | undefined;
    verifyTls: boolean;
    caFile: string | undefined;
    /**
     * Real mode: let requests without their own Proxmox credentials use the configured identity.
     * Off by default, because it hands that identity to anyone who can reach the port.
     */
    proxySharedIdentity: boolean;
    /** Real mode: how long one upstream call may take. */
    timeoutMs: number;
    /** Mock mode: how long a task runs before it finishes with exitstatus "OK". */
    taskDelayMs: number;
  };
  inventoryBootstrapToken: string | undefined;
  /**
   * INVENTORY_ANONYMOUS_API_ROOT: answer `GET /api/` without a token (the section links), for
   * pynetbox 7.0.0's tokenless version probe. Default false: 403, as NetBox answers.
   */
  inventoryAnonymousApiRoot: boolean;
  /**
   * The inventory's change log (docs/api-behaviour.md, Inventory: change log): entries older
   * than `retentionDays` (INVENTORY_CHANGELOG_RETENTION_DAYS, default 90 as NetBox's
   * CHANGELOG_RETENTION; 0 keeps them by age) or beyond the newest `maxEntries`
   * (INVENTORY_CHANGELOG_MAX_ENTRIES, default 100000) are deleted.
   */
  changelog: { retentionDays: number; maxEntries: number };
  /**
   * The inventory's read cache (docs/sync.md, "Re-runs"): records kept per model
   * (INVENTORY_CACHE_RECORDS_PER_MODEL, default 40000) and over all models
   * (INVENTORY_CACHE_RECORDS, default 120000). More memory, fewer KV reads for estates past them.
   */
  inventoryCache: { recordsPerModel: number; records: number };
  /**
   * INVENTORY_ENFORCE_GLOBAL_UNIQUE (NetBox's ENFORCE_GLOBAL_UNIQUE, default true): IP addresses
   * and prefixes outside a VRF are unique (docs/netbox-rules.md).
   */
  inventoryEnforceGlobalUnique: boolean;
  /**
   * HTTPS on PORT: PEM certificate (chain) and private key files. Both or neither; main.ts reads
   * them (a file it cannot read is a configuration error too).
   */
  tls?: { certFile: string; keyFile: string };
  hostAgentMock: {
    /** When set, the host-agent mock wants `Authorization: Bearer <token>` on every call. */
    token: string | undefined;
  };
  /**
   * `GET /metrics` (docs/metrics.md): METRICS_ACCESS `key` (default: a bearer METRICS_TOKEN or
   * the backend API key), `open` (anyone who reaches the port) or `off` (no such route).
   */
  metrics: { access: MetricsAccess; token: string | undefined };
  /** Sync jobs (docs/jobs.md). */
  jobs: {
    /** SERVICE_JOB_LEASE_MS: how long a run's ownership lasts without renewal. */
    leaseMs: number;
    /** SERVICE_JOB_RETENTION: finished jobs kept per kind (sync, repair). */
    retention: number;
  };
}

export type MetricsAccess = "key" | "open" | "off";
/** As long as the backend's API keys (domain/api_keys.ts MIN_KEY_LENGTH). */
export const MIN_METRICS_TOKEN_LENGTH = 32;

export const DEFAULT_PORT = 8800;
export const DEFAULT_KV_PATH = "./data/bridgebox.kv";
export const DEFAULT_SEED: MockSeedSize = { nodes: 3, vms: 12, cts: 4, storages: 2 };
export const DEFAULT_MOCK_USER = "root@pam";
export const DEFAULT_MOCK_PASSWORD = "bridgebox";

export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.name = "ConfigError";
  }
}

type Env = Readonly<Record<string, string | undefined>>;

function text(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const value = text(env, name)?.toLowerCase();
  if (value === undefined) return fallback;
  if (["1", "true", "yes", "on"].includes(value)) return true;
  if (["0", "false", "no", "off"].includes(value)) return false;
  throw new ConfigError(name, `expected true or false, got "${env[name]}"`);
}

function jobRetention(env: Env): number {
  const value = text(env, "SERVICE_JOB_RETENTION");
  if (value === undefined) return 100;
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 100_000) {
    throw new ConfigError("SERVICE_JOB_RETENTION", `expected 1-100000, got "${value}"`);
  }
  return Number(value);
}

function boundedInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = text(env, name);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new ConfigError(name, `expected ${min}-${max}, got "${value}"`);
  }
  return Number(value);
}

function millis(env: Env, name: string, fallback: number): number {
  const value = text(env, name);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) > 3_600_000) {
    throw new ConfigError(name, `expected milliseconds 0-3600000, got "${value}"`);
  }
  return Number(value);
}

function port(env: Env): number {
  const value = text(env, "PORT");
  if (value === undefined) return DEFAULT_PORT;
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || parsed < 0 || parsed > 65535) {
    throw new ConfigError("PORT", `expected a port number 0-65535, got "${value}"`);
  }
  return parsed;
}

function list(env: Env, name: string): string[] {
  return (text(env, name) ?? "").split(",").map((s) => s.trim()).filter(Boolean);
}

function surfaces(env: Env): Set<Surface> {
  const names = list(env, "SERVICE_SURFACES");
  if (names.length === 0) return new Set(SURFACES);
  for (const name of names) {
    if (!(SURFACES as readonly string[]).includes(name)) {
      throw new ConfigError(
        "SERVICE_SURFACES",
        `unknown surface "${name}" (known: ${SURFACES.join(", ")})`,
      );
    }
  }
  return new Set(names as Surface[]);
}

export function parseSeed(value: string | undefined): MockSeedSize {
  const seed = { ...DEFAULT_SEED };
  if (!value) return seed;
  for (const part of value.split(",").map((s) => s.trim()).filter(Boolean)) {
    const [key, raw] = part.split("=").map((s) => s.trim());
    if (!(key in seed) || raw === undefined || !/^\d+$/.test(raw)) {
      throw new ConfigError(
        "HYPERVISOR_MOCK_SEED",
        `expected e.g. nodes=3,vms=50,cts=10,storages=2, got "${part}"`,
      );
    }
    const count = Number(raw);
    if (key === "nodes" && (count < 1 || count > 64)) {
      throw new ConfigError("HYPERVISOR_MOCK_SEED", "nodes must be between 1 and 64");
    }
    if (count > 100_000) {
      throw new ConfigError("HYPERVISOR_MOCK_SEED", `${key} must be at most 100000`);
    }
    seed[key as keyof MockSeedSize] = count;
  }
  return seed;
}

function tls(env: Env): Config["tls"] {
  const certFile = text(env, "SERVICE_TLS_CERT_FILE");
  const keyFile = text(env, "SERVICE_TLS_KEY_FILE");
  if (certFile && keyFile) return { certFile, keyFile };
  if (certFile) {
    throw new ConfigError("SERVICE_TLS_KEY_FILE", "required when SERVICE_TLS_CERT_FILE is set");
  }
  if (keyFile) {
    throw new ConfigError("SERVICE_TLS_CERT_FILE", "required when SERVICE_TLS_KEY_FILE is set");
  }
  return undefined;
}

function metrics(env: Env): Config["metrics"] {
  const access = text(env, "METRICS_ACCESS")?.toLowerCase() ?? "key";
  if (access !== "key" && access !== "open" && access !== "off") {
    throw new ConfigError(
      "METRICS_ACCESS",
      `expected key, open or off, got "${env.METRICS_ACCESS}"`,
    );
  }
  const token = text(env, "METRICS_TOKEN");
  if (token !== undefined && access !== "key") {
    throw new ConfigError(
      "METRICS_TOKEN",
      `is only checked with METRICS_ACCESS=key (METRICS_ACCESS is ${access}): unset one of them`,
    );
  }
  if (token !== undefined && token.length < MIN_METRICS_TOKEN_LENGTH) {
    throw new ConfigError(
      "METRICS_TOKEN",
      `must be at least ${MIN_METRICS_TOKEN_LENGTH} characters (e.g. openssl rand -hex 32)`,
    );
  }
  return { access, token };
}

export function parseConfig(env: Env): Config {
  const mode = text(env, "HYPERVISOR_MODE") ?? "mock";
  if (mode !== "mock" && mode !== "real") {
    throw new ConfigError("HYPERVISOR_MODE", `expected mock or real, got "${mode}"`);
  }
  const version = text(env, "HYPERVISOR_VERSION") ?? "9.2";
  if (version !== "9.2" && version !== "9.1.11") {
    throw new ConfigError("HYPERVISOR_VERSION", `expected 9.2 or 9.1.11, got "${version}"`);
  }
  const url = text(env, "HYPERVISOR_URL");
  if (mode === "real" && !url) {
    throw new ConfigError("HYPERVISOR_URL", "required when HYPERVISOR_MODE=real");
  }
  return {
    port: port(env),
    listenHost: text(env, "SERVICE_LISTEN_HOST"),
    reusePort: bool(env, "SERVICE_REUSE_PORT", false),
    kvPath: text(env, "SERVICE_KV_PATH") ?? (env.DENO_DEPLOYMENT_ID ? undefined : DEFAULT_KV_PATH),
    surfaces: surfaces(env),
    // The encryption key is used trimmed (docs/api-behaviour.md, Secrets), so trimming here loses
    // nothing.
    encryptionKey: text(env, "SERVICE_ENCRYPTION_KEY"),
    trustedProxies: new Set(list(env, "SERVICE_TRUSTED_PROXIES")),
    allowLoopbackTargets: bool(env, "SERVICE_ALLOW_LOOPBACK_TARGETS", false),
    hypervisor: {
      mode,
      schema: text(env, "HYPERVISOR_SCHEMA"),
      version,
      seed: parseSeed(text(env, "HYPERVISOR_MOCK_SEED")),
      mockUser: text(env, "HYPERVISOR_MOCK_USER") ?? DEFAULT_MOCK_USER,
      mockPassword: text(env, "HYPERVISOR_MOCK_PASSWORD") ?? DEFAULT_MOCK_PASSWORD,
      url,
      username: text(env, "HYPERVISOR_USERNAME"),
      password: text(env, "HYPERVISOR_PASSWORD"),
      tokenId: text(env, "HYPERVISOR_TOKEN_ID"),
      tokenSecret: text(env, "HYPERVISOR_TOKEN_SECRET"),
      verifyTls: bool(env, "HYPERVISOR_VERIFY_TLS", true),
      caFile: text(env, "HYPERVISOR_CA_FILE"),
      proxySharedIdentity: bool(env, "HYPERVISOR_PROXY_SHARED_IDENTITY", false),
      timeoutMs: millis(env, "HYPERVISOR_TIMEOUT_MS", 30_000),
      taskDelayMs: millis(env, "HYPERVISOR_MOCK_TASK_DELAY_MS", 1_000),
    },
    inventoryBootstrapToken: text(env, "INVENTORY_BOOTSTRAP_TOKEN"),
    inventoryAnonymousApiRoot: bool(env, "INVENTORY_ANONYMOUS_API_ROOT", false),
    changelog: {
      retentionDays: boundedInt(env, "INVENTORY_CHANGELOG_RETENTION_DAYS", 90, 0, 36_500),
      maxEntries: boundedInt(env, "INVENTORY_CHANGELOG_MAX_ENTRIES", 100_000, 1, 10_000_000),
    },
    inventoryCache: {
      recordsPerModel: boundedInt(env, "INVENTORY_CACHE_RECORDS_PER_MODEL", 40_000, 0, 10_000_000),
      records: boundedInt(env, "INVENTORY_CACHE_RECORDS", 120_000, 0, 30_000_000),
    },
    inventoryEnforceGlobalUnique: bool(env, "INVENTORY_ENFORCE_GLOBAL_UNIQUE", true),
    tls: tls(env),
    hostAgentMock: { token: text(env, "HOST_AGENT_MOCK_TOKEN") },
    metrics: metrics(env),
    jobs: {
      leaseMs: Math.max(100, millis(env, "SERVICE_JOB_LEASE_MS", 30_000)),
      retention: jobRetention(env),
    },
  };
}

export const APP_NAME = "Bridgebox";
export const APP_VERSION = "0.1.0";
