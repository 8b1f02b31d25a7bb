/** Shared setup for the hypervisor docs/codegen route tests. */
import { Hono } from "hono";
import type { ServeEnv } from "../../../routes/_lib/deps.ts";
import { loadSchema, type SchemaTree } from "../../../domain/hypervisor_schema/schema.ts";
import {
  type CodegenOptions,
  hypervisorToolingRoutes,
} from "../../../routes/hypervisor/codegen.ts";
import { type TestDeps, testDeps } from "../../_helpers.ts";

export { HAS_SCHEMAS, SCHEMA_DIR_PATH as SHARED_DIR } from "../../_schemas.ts";
import { SCHEMA_DIR_PATH as SHARED_DIR } from "../../_schemas.ts";

let tree92: Promise<SchemaTree> | undefined;
export function schema92(): Promise<SchemaTree> {
  return tree92 ??= loadSchema(`${SHARED_DIR}/pve-9.2.json`);
}

export const peer = (hostname: string): ServeEnv => ({ remoteAddr: { hostname } });

/** A fake DNS: names map to fixed addresses; anything else does not resolve. */
export function fakeDns(table: Record<string, string[]>) {
  return (host: string) => Promise.resolve(table[host] ?? []);
}

export interface Tooling {
  deps: TestDeps;
  app: Hono<{ Bindings: ServeEnv }>;
  /** Builds another app over the same KV (a restart or another isolate). */
  again(overrides?: Partial<CodegenOptions>): Hono<{ Bindings: ServeEnv }>;
  clock: { now: number };
}

export async function tooling(
  env: Record<string, string> = {},
  overrides: Partial<CodegenOptions> = {},
): Promise<Tooling> {
  const clock = { now: Date.UTC(2026, 0, 1) };
  const deps = await testDeps(env, { now: () => clock.now });
  const tree = await schema92();
  const build = (more: Partial<CodegenOptions> = {}) => {
    const app = new Hono<{ Bindings: ServeEnv }>();
    app.route(
      "/",
      hypervisorToolingRoutes(deps, {
        active: () => ({ tree, version: "9.2", source: `${SHARED_DIR}/pve-9.2.json` }),
        schemaDirs: [SHARED_DIR],
        resolve: fakeDns({ "schemas.example.com": ["93.184.216.34"] }),
        // These tests are about the tooling itself, as a logged-in caller sees it; what an
        // anonymous one sees is tests/security/disclosure_test.ts.
        loggedIn: () => true,
        ...overrides,
        ...more,
      }),
    );
    return app;
  };
  return { deps, app: build(), again: build, clock };
}

export function countOperations(doc: { paths: Record<string, Record<string, unknown>> }): number {
  let n = 0;
  for (const item of Object.values(doc.paths)) {
    for (const [m, op] of Object.entries(item)) {
      if (
        ["get", "post", "put", "delete"].includes(m) &&
        !(op as Record<string, unknown>)["x-bridgebox-service"]
      ) n++;
    }
  }
  return n;
}
