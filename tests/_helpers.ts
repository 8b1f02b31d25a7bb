import type { AppDeps } from "../routes/_lib/deps.ts";
import { type Config, parseConfig } from "../config.ts";
import { MemoryLogger } from "../infra/logger.ts";
import { outboundForConfig } from "../clients/outbound.ts";
import { createKvStorage } from "../storage/kv/mod.ts";
import { prometheusMetrics } from "../infra/prometheus.ts";
import { timedKv } from "../storage/kv/timed_kv.ts";

/** What a test may override: any dep, or the KV handle the stores are built on. */
export type TestOverrides = Partial<AppDeps> & { kv?: Deno.Kv };

/** Test deps: the app's deps plus the raw KV handle (to close it, or to inspect stored bytes). */
export type TestDeps = AppDeps & { kv: Deno.Kv; logger: MemoryLogger };

/**
 * Deps for a test: in-memory KV (or `overrides.kv`) wrapped in every store as main.ts does, a
 * configuration parsed from `env` (as main.ts would), a logger whose lines can be read back.
 * Close `deps.kv` at the end of the test.
 */
export async function testDeps(
  env: Record<string, string> = {},
  overrides: TestOverrides = {},
): Promise<TestDeps> {
  const config: Config = parseConfig({ SERVICE_KV_PATH: ":memory:", ...env });
  const kv = overrides.kv ?? await Deno.openKv(":memory:");
  // A registry of its own per test, as main.ts makes one per process.
  const metrics = overrides.metrics ?? prometheusMetrics();
  const deps = {
    config,
    kv,
    // Built from the test's config; `now` reads deps.now so a test's clock reaches the stores.
    // Every KV call timed, as main.ts wires it.
    storage: createKvStorage(timedKv(kv, metrics), {
      atRestKey: (overrides.config ?? config).encryptionKey,
      now: () => deps.now(),
      inventoryCache: (overrides.config ?? config).inventoryCache,
    }),
    // The production transport: loopback targets need SERVICE_ALLOW_LOOPBACK_TARGETS=true, and
    // a test that sets `deps.self` (as main.ts does) has its own port answered in-process.
    fetch: outboundForConfig(config, () => deps.self),
    now: Date.now,
    logger: new MemoryLogger(),
    metrics,
    ...overrides,
  } as TestDeps;
  return deps;
}

export function jsonRequest(
  method: string,
  body?: unknown,
  headers: Record<string, string> = {},
): RequestInit {
  return {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  };
}
