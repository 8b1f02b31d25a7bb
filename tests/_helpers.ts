import type { AppDeps } from "../routes/_lib/deps.ts";
import { type Config, parseConfig } from "../config.ts";
import { MemoryLogger } from "../domain/logger.ts";

/**
 * Deps for a test: in-memory KV, a configuration parsed from `env` (as main.ts would), a
 * logger whose lines can be read back. Close `deps.kv` at the end of the test.
 */
export async function testDeps(
  env: Record<string, string> = {},
  overrides: Partial<AppDeps> = {},
): Promise<AppDeps & { logger: MemoryLogger }> {
  const config: Config = parseConfig({ SERVICE_KV_PATH: ":memory:", ...env });
  return {
    config,
    kv: await Deno.openKv(":memory:"),
    fetch: globalThis.fetch,
    now: Date.now,
    logger: new MemoryLogger(),
    ...overrides,
  } as AppDeps & { logger: MemoryLogger };
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
