/**
 * Schema versions the hypervisor surface knows: the two built-in labels (`9.2`, latest, and
 * `9.1.11`), of which one is active (the schema the server runs on), plus versions stored by
 * `POST /pve/codegen/generate`. Resolves a label to a loaded tree for docs and code generation.
 */
import { dirname, resolve } from "node:path";
import { fileURLToPath as fromFileUrl } from "node:url";
import type { Config } from "../../config.ts";
import {
  indexSchema,
  loadSchema,
  parseSchemaText,
  type SchemaTree,
} from "../../domain/hypervisor_schema/schema.ts";
import type { SchemaVersionStore, StoredSchemaVersion } from "../../storage/ports.ts";
import { existingDirs } from "../../domain/schema_sources.ts";

/** The schema the server currently runs on. */
export interface ActiveSchema {
  tree: SchemaTree;
  /** Its label: `9.2`, `9.1.11`, or a stored version's label. */
  version: string;
  /** File path, URL, or `built-in catalogue`. */
  source: string;
}

export const BUILTIN_VERSIONS = ["9.2", "9.1.11"] as const;
export const LATEST_VERSION = "9.2";
export const VERSION_LABEL = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export interface VersionEntry {
  version: string;
  kind: "builtin" | "generated";
  latest: boolean;
  active: boolean;
  /** Whether docs and code generation can use it now. */
  available: boolean;
  source?: string;
  operations?: number;
  paths?: number;
  sha256?: string;
  bytes?: number;
  created_at?: string;
}

/**
 * Directories schema files may be read from (generate's allow-list, and where a non-active
 * built-in version's `pve-<version>.json` is looked up): the directory of a file
 * HYPERVISOR_SCHEMA, and `../shared/hypervisor-schema` beside the working directory and beside
 * the checkout.
 */
export function defaultSchemaDirs(config: Config): string[] {
  const dirs: string[] = [];
  const schema = config.hypervisor.schema;
  if (schema && !/^https?:\/\//i.test(schema)) {
    dirs.push(dirname(resolve(schema.startsWith("file:") ? fromFileUrl(schema) : schema)));
  }
  dirs.push(resolve(Deno.cwd(), "../shared/hypervisor-schema"));
  dirs.push(fromFileUrl(new URL("../../../shared/hypervisor-schema", import.meta.url)));
  return dirs;
}

const MAX_CACHED_TREES = 4;

export class SchemaCatalog {
  readonly #trees = new Map<string, Promise<SchemaTree | null>>();
  readonly #counts = new WeakMap<SchemaTree, { operations: number; paths: number }>();

  constructor(
    readonly active: () => ActiveSchema,
    readonly store: SchemaVersionStore,
    readonly schemaDirs: readonly string[],
  ) {}

  counts(tree: SchemaTree): { operations: number; paths: number } {
    let c = this.#counts.get(tree);
    if (!c) {
      const index = indexSchema(tree);
      c = { operations: index.operations.length, paths: index.pathCount };
      this.#counts.set(tree, c);
    }
    return c;
  }

  /** A label's tree (the active one by default); null when unknown or unavailable. */
  async resolve(version?: string): Promise<{ tree: SchemaTree; version: string } | null> {
    const active = this.active();
    if (!version || version === active.version) {
      return { tree: active.tree, version: active.version };
    }
    if (!VERSION_LABEL.test(version)) return null;
    let pending = this.#trees.get(version);
    if (!pending) {
      pending = this.#load(version);
      this.#trees.set(version, pending);
      pending.then((t) => t ?? this.#trees.delete(version), () => this.#trees.delete(version));
      while (this.#trees.size > MAX_CACHED_TREES) {
        this.#trees.delete(this.#trees.keys().next().value!);
      }
    }
    const tree = await pending;
    return tree ? { tree, version } : null;
  }

  async #load(version: string): Promise<SchemaTree | null> {
    if ((BUILTIN_VERSIONS as readonly string[]).includes(version)) {
      const file = await this.#builtinFile(version);
      return file ? await loadSchema(file) : null;
    }
    const text = await this.store.loadText(version);
    return text === null ? null : parseSchemaText(text, `stored version ${version}`);
  }

  async #builtinFile(version: string): Promise<string | null> {
    for (const dir of await existingDirs(this.schemaDirs)) {
      for (const name of [`pve-${version}.json`, `pve-${version}.js`]) {
        try {
          const path = `${dir}/${name}`;
          if ((await Deno.stat(path)).isFile) return path;
        } catch {
          // not there
        }
      }
    }
    return null;
  }

  async isTaken(version: string): Promise<boolean> {
    if ((BUILTIN_VERSIONS as readonly string[]).includes(version)) return true;
    if (version === this.active().version) return true;
    return (await this.store.get(version)) !== null;
  }

  async list(): Promise<{ latest: string; active: string; versions: VersionEntry[] }> {
    const active = this.active();
    const entries: VersionEntry[] = [];
    for (const version of BUILTIN_VERSIONS) {
      const isActive = version === active.version;
      const entry: VersionEntry = {
        version,
        kind: "builtin",
        latest: version === LATEST_VERSION,
        active: isActive,
        available: isActive || (await this.#builtinFile(version)) !== null,
      };
      if (isActive) {
        entry.source = active.source;
        Object.assign(entry, this.counts(active.tree));
      }
      entries.push(entry);
    }
    const stored: StoredSchemaVersion[] = await this.store.list();
    for (const s of stored) {
      entries.push({
        version: s.version,
        kind: "generated",
        latest: false,
        active: s.version === active.version,
        available: true,
        source: s.source,
        operations: s.operations,
        paths: s.paths,
        sha256: s.sha256,
        bytes: s.bytes,
        created_at: s.created_at,
      });
    }
    return { latest: LATEST_VERSION, active: active.version, versions: entries };
  }
}
