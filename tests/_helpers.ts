import type { AppDeps } from "../routes/_lib/deps.ts";
import { type Config, parseConfig } from "../config.ts";
import { MemoryLogger } from "../domain/logger.ts";
import { outboundForConfig } from "../clients/outbound.ts";

/**
 * Deps for a test: in-memory KV, a configuration parsed from `env` (as main.ts would), a
 * logger whose lines can be read back. Close `deps.kv` at the end of the test.
 */
export async function testDeps(
  env: Record<string, string> = {},
  overrides: Partial<AppDeps> = {},
): Promise<AppDeps & { logger: MemoryLogger }> {
  const config: Config = parseConfig({ SERVICE_KV_PATH: ":memory:", ...env });
  const deps = {
    config,
    kv: await Deno.openKv(":memory:"),
    // The production transport: loopback targets need SERVICE_ALLOW_LOOPBACK_TARGETS=true, and
    // a test that sets `deps.self` (as main.ts does) has its own port answered in-process.
    fetch: outboundForConfig(config, () => deps.self),
    now: Date.now,
    logger: new MemoryLogger(),
    ...overrides,
  } as AppDeps & { logger: MemoryLogger };
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
