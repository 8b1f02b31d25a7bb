/**
 * Command line and environment of `deno task sync`. Flags win over the environment:
 * `--url` / BRIDGEBOX_URL, `--key` / BRIDGEBOX_API_KEY, `--ca-file` / BRIDGEBOX_CA_FILE.
 */
import { parseArgs } from "node:util";
import { selectStages, type StageRoute, SYNC_STAGES } from "./stages.ts";

export const DEFAULT_URL = "http://localhost:8800";

export interface SyncOptions {
  /** Backend base URL, no trailing slash. */
  url: string;
  key: string;
  /** Stages to run one by one; empty means one full update. */
  stages: StageRoute[];
  /** hypervisor_endpoint_ids scope; empty means every enabled endpoint. */
  endpointIds: number[];
  /**
   * What `--endpoints` named (ids as users see them, or names), resolved into `endpointIds`
   * before the run (scripts/sync/endpoints.ts).
   */
  endpointRefs?: string[];
  /** Plain lines even on a terminal. */
  plain: boolean;
  /** PEM file of an extra CA to trust for an https URL. */
  caFile: string | undefined;
  /** Write nothing; print the plan. */
  dryRun: boolean;
}

export type ParsedArgs =
  | { kind: "run"; options: SyncOptions }
  | { kind: "help" }
  | { kind: "list" }
  | { kind: "usage-error"; message: string };

export const USAGE = `Usage: npx -y deno@2.9.6 task sync [options]

Runs a full update (all 13 stages) or the chosen stages against a running Bridgebox backend
and shows their progress, then a result table.

Options:
  --url URL          backend base URL (env BRIDGEBOX_URL, default ${DEFAULT_URL})
  --key KEY          backend API key, sent as X-Service-API-Key (env BRIDGEBOX_API_KEY;
                     prefer the variable: flags are visible in the process list)
  --stages a,b       run only these stages, in pipeline order (see --list)
  --endpoints a,b    only these hypervisor endpoints: the id the console and the plugin API
                     show, the backend copy's id, or a name (e.g. --endpoints lab)
  --dry-run          write nothing: print the plan (what would be created, updated field
                     old → new, marked or deleted, per stage and object)
  --plain            plain lines even on a terminal (no redraw)
  --ca-file PATH     trust this PEM CA for an https URL (env BRIDGEBOX_CA_FILE)
  --list             print the stage names and exit
  -h, --help         this help

Exit status: 0 when every stage completed, 1 when the sync failed or the server answered an
error, 2 for a usage error, 130 when interrupted.`;

function text(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() ? value.trim() : undefined;
}

export function parseSyncArgs(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): ParsedArgs {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: {
        url: { type: "string" },
        key: { type: "string" },
        stages: { type: "string" },
        endpoints: { type: "string" },
        plain: { type: "boolean" },
        "dry-run": { type: "boolean" },
        "ca-file": { type: "string" },
        list: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    return { kind: "usage-error", message: (error as Error).message };
  }
  if (values.help) return { kind: "help" };
  if (values.list) return { kind: "list" };

  const rawUrl = text(values.url) ?? text(env.BRIDGEBOX_URL) ?? DEFAULT_URL;
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return { kind: "usage-error", message: `--url: not a URL: "${rawUrl}"` };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return { kind: "usage-error", message: `--url: expected http:// or https://, got "${rawUrl}"` };
  }
  if (url.search || url.hash || url.username || url.password) {
    return {
      kind: "usage-error",
      message: "--url: give the base URL only (no query, fragment or credentials)",
    };
  }

  const key = text(values.key) ?? text(env.BRIDGEBOX_API_KEY);
  if (!key) {
    return {
      kind: "usage-error",
      message: "no API key: set BRIDGEBOX_API_KEY (or pass --key)",
    };
  }

  if (!/^[\x21-\x7e]+$/.test(key)) {
    // Never echoed: it is a secret, and a pasted one may be nearly right.
    return {
      kind: "usage-error",
      message: "the API key holds spaces, line breaks or other characters a header cannot carry",
    };
  }

  let stages: StageRoute[] = [];
  if (values.stages !== undefined) {
    const selection = selectStages(values.stages.split(","));
    if (!selection.ok) {
      return {
        kind: "usage-error",
        message: `--stages: unknown stage ${
          selection.unknown.map((s) => `"${s}"`).join(", ")
        } (known: ${SYNC_STAGES.map((s) => s.type).join(", ")})`,
      };
    }
    if (selection.stages.length === 0) {
      return { kind: "usage-error", message: "--stages: name at least one stage" };
    }
    stages = selection.stages;
  }

  const endpointIds: number[] = [];
  const endpointRefs: string[] = [];
  if (values.endpoints !== undefined) {
    for (const part of values.endpoints.split(",").map((s) => s.trim()).filter(Boolean)) {
      if (part.length > 200) {
        return { kind: "usage-error", message: "--endpoints: a name is at most 200 characters" };
      }
      if (!endpointRefs.includes(part)) endpointRefs.push(part);
    }
    if (endpointRefs.length === 0) {
      return { kind: "usage-error", message: "--endpoints: name at least one endpoint" };
    }
  }

  return {
    kind: "run",
    options: {
      url: url.href.replace(/\/+$/, ""),
      key,
      stages,
      endpointIds,
      endpointRefs,
      plain: values.plain === true,
      dryRun: values["dry-run"] === true,
      caFile: text(values["ca-file"]) ?? text(env.BRIDGEBOX_CA_FILE),
    },
  };
}
