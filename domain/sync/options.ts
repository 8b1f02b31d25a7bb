/**
 * What a run may be told (docs/sync.md, "Run options"): query parameters of `/full-update` and
 * every stage path, the plugin job's and the console's choices. Every option has a default that
 * keeps the sync as it always was; an endpoint's policy (its stored copy) comes between the two.
 */

/** Field families an admin may own instead of the hypervisor (docs/sync.md, "Who owns a field"). */
export const OVERWRITE_FAMILIES = [
  "names",
  "tags",
  "descriptions",
  "roles",
  "custom_fields",
] as const;
export type OverwriteFamily = typeof OVERWRITE_FAMILIES[number];

/** Stages a run may leave out; the others every run needs (they anchor the rest). */
export const OPTIONAL_STAGES = ["task-history", "vm-backups", "vm-snapshots", "sdn"] as const;
export type OptionalStage = typeof OPTIONAL_STAGES[number];

export type PrimaryIpPreference = "both" | "v4" | "v6";

export interface SyncOptions {
  /** Nothing is written: the run reports the plan (what it would create, update, mark, delete). */
  dryRun: boolean;
  /**
   * Per field family: true, the hypervisor owns it (each run writes it); false, the admin owns it
   * (written when the object is created, then left as the admin keeps it).
   */
  overwrite: Record<OverwriteFamily, boolean>;
  /** A guest gone upstream is deleted from the inventory instead of marked decommissioning. */
  deleteOrphans: boolean;
  /**
   * `both`: primary IPv4 and IPv6 (the first of each family). `v4`/`v6`: only that family's
   * primary, the other family's when the object has no address of the preferred one.
   */
  primaryIpPreference: PrimaryIpPreference;
  /** Optional stages this run includes. */
  stages: Record<OptionalStage, boolean>;
}

export const DEFAULT_SYNC_OPTIONS: SyncOptions = Object.freeze({
  dryRun: false,
  overwrite: Object.freeze({
    names: true,
    tags: true,
    descriptions: true,
    roles: true,
    custom_fields: true,
  }),
  deleteOrphans: false,
  primaryIpPreference: "both",
  stages: Object.freeze({
    "task-history": true,
    "vm-backups": true,
    "vm-snapshots": true,
    sdn: true,
  }),
}) as SyncOptions;

/** The query parameter of an optional stage's switch: `stage_task_history`, `stage_sdn`. */
export const stageParam = (stage: OptionalStage) => `stage_${stage.replace(/-/g, "_")}`;

/** Every run option as a query parameter (`hypervisor_endpoint_ids` is the scope, apart). */
export const OPTION_PARAMS: readonly string[] = [
  "dry_run",
  ...OVERWRITE_FAMILIES.map((f) => `overwrite_${f}`),
  "delete_orphans",
  "primary_ip_preference",
  ...OPTIONAL_STAGES.map(stageParam),
];

/** Options an endpoint's policy may set: every run option but the dry run and the report. */
export const POLICY_PARAMS: readonly string[] = OPTION_PARAMS.filter((o) => o !== "dry_run");

/**
 * An endpoint's sync policy (docs/sync.md, "Run options"): an object of run options, booleans
 * or "true"/"false", `primary_ip_preference` one of both/v4/v6. Normalised to query strings.
 */
export function checkPolicy(
  raw: unknown,
): { ok: true; value: Record<string, string> | null } | { ok: false; messages: string[] } {
  if (raw === undefined || raw === null) return { ok: true, value: null };
  if (typeof raw !== "object" || Array.isArray(raw)) {
    return { ok: false, messages: ['An object of run options, e.g. {"overwrite_names": false}.'] };
  }
  const out: Record<string, string> = {};
  const messages: string[] = [];
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (!POLICY_PARAMS.includes(key)) {
      messages.push(
        `Unknown run option ${JSON.stringify(key.slice(0, 60))}. Known: ${
          POLICY_PARAMS.join(", ")
        }.`,
      );
    } else if (key === "primary_ip_preference") {
      if (value === "both" || value === "v4" || value === "v6") out[key] = value;
      else messages.push("primary_ip_preference: one of both, v4, v6.");
    } else if (typeof value === "boolean") out[key] = String(value);
    else if (value === "true" || value === "false") out[key] = value;
    else messages.push(`${key}: true or false.`);
  }
  if (messages.length) return { ok: false, messages };
  return { ok: true, value: Object.keys(out).length ? out : null };
}

/** A partial set of options (an endpoint's policy, or what a run was asked for). */
export interface SyncOptionsPatch {
  dryRun?: boolean;
  overwrite?: Partial<Record<OverwriteFamily, boolean>>;
  deleteOrphans?: boolean;
  primaryIpPreference?: PrimaryIpPreference;
  stages?: Partial<Record<OptionalStage, boolean>>;
}

/** Later patches win: defaults, then the endpoint's policy, then the run's query. */
export function mergeOptions(...patches: (SyncOptionsPatch | null | undefined)[]): SyncOptions {
  const out: SyncOptions = {
    ...DEFAULT_SYNC_OPTIONS,
    overwrite: { ...DEFAULT_SYNC_OPTIONS.overwrite },
    stages: { ...DEFAULT_SYNC_OPTIONS.stages },
  };
  for (const p of patches) {
    if (!p) continue;
    if (p.dryRun !== undefined) out.dryRun = p.dryRun;
    if (p.deleteOrphans !== undefined) out.deleteOrphans = p.deleteOrphans;
    if (p.primaryIpPreference !== undefined) out.primaryIpPreference = p.primaryIpPreference;
    for (const [k, v] of Object.entries(p.overwrite ?? {})) {
      if (v !== undefined) out.overwrite[k as OverwriteFamily] = v;
    }
    for (const [k, v] of Object.entries(p.stages ?? {})) {
      if (v !== undefined) out.stages[k as OptionalStage] = v;
    }
  }
  return out;
}

/** Query values (already checked by the route's schema) → a patch. */
export function optionsFromQuery(query: Record<string, string | undefined>): SyncOptionsPatch {
  const flag = (name: string) => {
    const v = query[name];
    return v === undefined ? undefined : v === "true" || v === "1";
  };
  const patch: SyncOptionsPatch = { overwrite: {}, stages: {} };
  patch.dryRun = flag("dry_run");
  patch.deleteOrphans = flag("delete_orphans");
  const pref = query.primary_ip_preference;
  if (pref === "both" || pref === "v4" || pref === "v6") patch.primaryIpPreference = pref;
  for (const f of OVERWRITE_FAMILIES) patch.overwrite![f] = flag(`overwrite_${f}`);
  for (const s of OPTIONAL_STAGES) patch.stages![s] = flag(stageParam(s));
  return patch;
}

/**
 * The fields (of `families`: field → family) the admin owns in this run: written when the
 * object is created, never on an update.
 */
export function createOnlyFields(
  options: SyncOptions,
  families: Record<string, OverwriteFamily>,
): Set<string> {
  return new Set(Object.entries(families).filter(([, f]) => !options.overwrite[f]).map(([k]) => k));
}

/** Which primary IPs to set, given the first address of each family (ids or null). */
export function primaryIps<T>(
  preference: PrimaryIpPreference,
  v4: T | null,
  v6: T | null,
): { primary_ip4: T | null; primary_ip6: T | null } {
  if (preference === "v4") return { primary_ip4: v4, primary_ip6: v4 === null ? v6 : null };
  if (preference === "v6") return { primary_ip4: v6 === null ? v4 : null, primary_ip6: v6 };
  return { primary_ip4: v4, primary_ip6: v6 };
}
